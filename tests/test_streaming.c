/* Parameter streaming and microbatches, on the CPU backend (plain, and with its copy engine):
   - stages read their weights from args->params (a device copy of host_params) and add their
     weight gradients into args->param_grads, which the library adds into host_grads: on random
     chains, for every policy (offload included) and budget, host_grads and the input gradient
     are bit-identical to a run that keeps its weights itself under store-all;
   - parameters are loaded once per op, for all k microbatches, and not again when the next op
     runs the same stage; a sweep starts with empty slots;
   - k microbatches: every policy gives the same outputs, input gradients and host_grads as
     store-all with k lanes, and each lane's output equals a single-lane run's when no stage
     draws random numbers;
   - host_grads goes through the device: a streamed B op's param_grads holds its stage's
     host_grads on entry (non-zero before the step), the final host_grads is bit-identical to
     callbacks that keep their own gradients starting from the same values, and during the
     backward the host never waits on an event, no pinned memory is allocated and no memset
     is issued (a wrapped backend counts them; the old pinned staging did all three);
   - after a failed backward (a callback, or an injected copy failure) each stage's host_grads
     holds either its old value or old + gradient: old for the failed stage and those after it
     in backward order;
   - stream_grads_overwrite: host_grads that held other values end as the step's gradients alone,
     with no copy from host_grads and one memset per streamed B op (also after a failed
     callback, for the stages whose B op completed);
   - bad descs, ckpt_forward on a k-lane chain, an injected failure of a parameter load. */
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"
#include "../backends/ckpt_cpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 3
#define MAXN 8
#define MAXW 10
#define MAXK 3

#define TEST_XORSHIFT64_SEED 0x2545F4914F6CDD1Dull
#include "test_util.h"

/* One stage: y = dropout(tanh(x W^T + b)); params = W (wout x win) then b (wout). */
typedef struct layer {
    int win, wout;
    float p_drop;
    float params[MAXW * MAXW + MAXW];       /* host: what streaming loads */
    float grads[MAXW * MAXW + MAXW];        /* host: host_grads, or the callback's own */
    int streamed, index;
} layer;

/* Gradients before a step (NULL: zero); with check_entry, a streamed B op of lane 0 counts in
   entry_bad a param_grads that differs from them. fail_stage: that stage's backward fails. */
static float (*init_grads)[MAXW * MAXW + MAXW];
static int check_entry, entry_bad, fail_stage = -1;
/* ckpt_chain_desc.stream_lookahead of the chains run() makes. With order_log, each forward
   callback of lane 0 logs, per stage, how many parameter loads were issued before it ran
   (counted by the wrapped backend's copy_async). */
static int lookahead, order_log, loads_issued, loads_at_fwd[MAXN];
/* ckpt_chain_desc.stream_grads_early and stream_grads_overwrite of the chains run() makes */
static int grads_early, grads_overwrite;
/* The lookahead a chain made with stream_lookahead L runs with (0 means 1). */
static int eff_lookahead(int L) { return L ? L : 1; }
/* regrads: run() fills host_grads with 1e6 before the forward and sets them (init_grads or
   zero) only between the forward and the backward, as a host that zeroes gradients there does */
static int regrads;

static void tape_layout(const layer *L, ckpt_layout_entry e[2], size_t *total) {
    e[0].bytes = sizeof(float) * ROWS * (size_t)L->wout; e[0].align = 16;
    e[1].bytes = (size_t)ROWS * (size_t)L->wout; e[1].align = 16;
    ckpt_layout_compute(e, 2, total);
}

static ckpt_result fwd(const ckpt_fwd_args *a) {
    layer *L = (layer *)a->ctx->user;
    const float *x = (const float *)a->in, *P = L->streamed ? (const float *)a->params : L->params;
    float *y = (float *)a->out, *h;
    uint8_t *mask;
    ckpt_layout_entry e[2];
    size_t total;
    ckpt_philox ph;
    int r, o, i, n = ROWS * L->wout;
    if (L->streamed != (a->params != NULL)) return CKPT_ERR_CALLBACK;   /* params iff streamed */
    if (order_log && a->ctx->microbatch == 0) loads_at_fwd[L->index] = loads_issued;
    tape_layout(L, e, &total);
    h = (float *)ckpt_layout_ptr(a->tape, e, 0);
    mask = (uint8_t *)ckpt_layout_ptr(a->tape, e, 1);
    if (L->p_drop > 0 && ckpt_ctx_rng(a->ctx, (uint64_t)(n + 3) / 4, &ph) != CKPT_OK) return CKPT_ERR_RNG_REPLAY;
    for (r = 0; r < ROWS; r++)
        for (o = 0; o < L->wout; o++) {
            float s = P[L->win * L->wout + o];
            for (i = 0; i < L->win; i++) s += x[r * L->win + i] * P[o * L->win + i];
            h[r * L->wout + o] = s;
            y[r * L->wout + o] = tanhf(s);
        }
    if (L->p_drop > 0) ckpt_philox_dropout(&ph, L->p_drop, y, y, mask, (size_t)n);
    else memset(mask, 1, (size_t)n);
    return CKPT_OK;
}

static ckpt_result bwd(const ckpt_bwd_args *a) {
    layer *L = (layer *)a->ctx->user;
    const float *x = (const float *)a->in, *g = (const float *)a->grad_out, *P = L->streamed ? (const float *)a->params : L->params;
    float *G = L->streamed ? (float *)a->param_grads : L->grads, *gx = (float *)a->grad_in;
    float dh[ROWS * MAXW], scale = ckpt_dropout_scale(L->p_drop);
    const float *h;
    const uint8_t *mask;
    ckpt_layout_entry e[2];
    size_t total;
    int r, o, i;
    if (L->streamed && (!a->params || !a->param_grads)) return CKPT_ERR_CALLBACK;
    if (L->index == fail_stage) return CKPT_ERR_CALLBACK;
    if (check_entry && L->streamed && a->ctx->microbatch == 0) {
        static const float zero[MAXW * MAXW + MAXW];
        entry_bad += memcmp(G, init_grads && !grads_overwrite ? init_grads[L->index] : zero,
                            sizeof(float) * (size_t)(L->win * L->wout + L->wout)) != 0;
    }
    tape_layout(L, e, &total);
    h = (const float *)ckpt_layout_ptr(a->tape, e, 0);
    mask = (const uint8_t *)ckpt_layout_ptr(a->tape, e, 1);
    for (i = 0; i < ROWS * L->wout; i++) {
        float t = tanhf(h[i]);
        dh[i] = mask[i] ? g[i] * (L->p_drop > 0 ? scale : 1.0f) * (1.0f - t * t) : 0.0f;
    }
    for (r = 0; r < ROWS; r++)
        for (o = 0; o < L->wout; o++) {
            G[L->win * L->wout + o] += dh[r * L->wout + o];
            for (i = 0; i < L->win; i++) G[o * L->win + i] += dh[r * L->wout + o] * x[r * L->win + i];
        }
    if (gx)
        for (r = 0; r < ROWS; r++)
            for (i = 0; i < L->win; i++) {
                float s = 0;
                for (o = 0; o < L->wout; o++) s += dh[r * L->wout + o] * P[o * L->win + i];
                gx[r * L->win + i] = s;
            }
    return CKPT_OK;
}

typedef struct chain_case {
    int n;
    layer layers[MAXN];
    ckpt_stage_desc st[MAXN];
    float x[MAXK][ROWS * MAXW], gy[MAXK][ROWS * MAXW];
} chain_case;

typedef struct result {
    float grads[MAXN][MAXW * MAXW + MAXW];
    float dx[MAXK][ROWS * MAXW], y[MAXK][ROWS * MAXW];
    uint64_t loads;
    int loads_lo, loads_hi;
} result;

static void make_case(chain_case *c, int dropout) {
    int i, j, w[MAXN + 1], k;
    memset(c, 0, sizeof *c);
    c->n = rnd_int(1, MAXN);
    for (i = 0; i <= c->n; i++) w[i] = rnd_int(1, MAXW);
    for (i = 0; i < c->n; i++) {
        layer *L = &c->layers[i];
        ckpt_layout_entry e[2];
        size_t tape = 0;
        L->win = w[i]; L->wout = w[i + 1]; L->index = i;
        L->p_drop = dropout && rnd() % 2 ? 0.25f : 0.0f;
        for (j = 0; j < L->win * L->wout + L->wout; j++) L->params[j] = rnd_float();
        tape_layout(L, e, &tape);
        c->st[i].forward = fwd; c->st[i].backward = bwd; c->st[i].user = L;
        c->st[i].out_bytes = sizeof(float) * ROWS * (size_t)L->wout;
        c->st[i].tape_bytes = tape;
        c->st[i].fwd_time = rnd_int(1, 4);
        c->st[i].bwd_time = rnd_int(2, 8);
    }
    for (k = 0; k < MAXK; k++) {
        for (j = 0; j < ROWS * w[0]; j++) c->x[k][j] = rnd_float();
        for (j = 0; j < ROWS * w[c->n]; j++) c->gy[k][j] = rnd_float();
    }
}

/* The fewest parameter loads a step can make: every stage the forward (ops up to F(n)) runs,
   once, and every stage the backward runs but the n_slots the forward may leave in its slots;
   and the most, one per F or B op whose stage differs from the previous op's (more slots may
   save some of those). */
static void load_bounds(const ckpt_plan *plan, int n, int n_slots, int *lo, int *hi) {
    int n_ops, k, prev = -1, fn = -1, per[2] = {0, 0};
    unsigned char seen[2][MAXN + 1];
    const ckpt_op *ops = ckpt_plan_ops(plan, &n_ops);
    memset(seen, 0, sizeof seen);
    *lo = *hi = 0;
    for (k = 0; k < n_ops; k++) if (ops[k].kind == CKPT_OP_F && ops[k].stage == n) fn = k;
    for (k = 0; k < n_ops; k++) {
        int sweep = k > fn;
        if (ops[k].kind != CKPT_OP_F && ops[k].kind != CKPT_OP_B) continue;
        if (ops[k].stage != prev) (*hi)++;
        if (!seen[sweep][ops[k].stage]) { seen[sweep][ops[k].stage] = 1; per[sweep]++; }
        prev = k == fn ? -1 : ops[k].stage;
    }
    *lo = per[0] + (per[1] > n_slots ? per[1] - n_slots : 0);
}

/* Store-all's parameter loads: n in the forward, and in the backward n less the stages of the
   forward's last L + 1 ops, still in the L + 1 slots. */
static uint64_t store_all_loads(int n, int L) {
    int slots = eff_lookahead(L) + 1;
    return 2 * (uint64_t)n - (uint64_t)(n < slots ? n : slots);
}

/* A backend that wraps another and counts, during ckpt_backward (in_backward), the host's
   event waits, memsets and copies from and into the case's gradient arrays; the copies from
   them outside it; and every pinned allocation. */
static int in_backward;
static struct {
    ckpt_backend inner;
    const chain_case *c;
    int ev_syncs, memsets, pinned, grads_in, grads_out, all_ev_syncs, grads_in_fwd;
} wrap;

static int is_grads(const void *p) {
    int i;
    for (i = 0; wrap.c && i < wrap.c->n; i++) if (p == (const void *)wrap.c->layers[i].grads) return 1;
    return 0;
}
static int is_params(const void *p) {
    int i;
    for (i = 0; wrap.c && i < wrap.c->n; i++) if (p == (const void *)wrap.c->layers[i].params) return 1;
    return 0;
}
static ckpt_result w_copy(void *st, void *dst, const void *src, size_t bytes, ckpt_copy_kind kind, void *stream) {
    loads_issued += kind == CKPT_COPY_HOST_TO_DEVICE && is_params(src);
    if (in_backward) {
        wrap.grads_in += kind == CKPT_COPY_HOST_TO_DEVICE && is_grads(src);
        wrap.grads_out += kind == CKPT_COPY_DEVICE_TO_HOST && is_grads(dst);
    } else
        wrap.grads_in_fwd += kind == CKPT_COPY_HOST_TO_DEVICE && is_grads(src);
    return wrap.inner.copy_async(st, dst, src, bytes, kind, stream);
}
static ckpt_result w_memset(void *st, void *dst, int v, size_t bytes, void *stream) {
    wrap.memsets += in_backward;
    return wrap.inner.memset_async(st, dst, v, bytes, stream);
}
static ckpt_result w_ev_sync(void *st, void *ev) {
    wrap.ev_syncs += in_backward;
    wrap.all_ev_syncs++;
    return wrap.inner.event_synchronize(st, ev);
}
static ckpt_result w_alloc_pinned(void *st, size_t bytes, void **out) {
    wrap.pinned++;
    return wrap.inner.alloc_pinned(st, bytes, out);
}
/* The backend contract: the core records and waits only on events it created. */
static int null_events;
static ckpt_result (*inner_record)(void *, void *, void *);
static ckpt_result w_ev_record(void *st, void *ev, void *stream) {
    null_events += ev == NULL;
    return inner_record(st, ev, stream);
}

static ckpt_backend wrapped(const ckpt_backend *inner, const chain_case *c) {
    ckpt_backend b = *inner;
    memset(&wrap, 0, sizeof wrap);
    wrap.inner = *inner; wrap.c = c;
    b.copy_async = w_copy; b.memset_async = w_memset; b.alloc_pinned = w_alloc_pinned;
    if (inner->event_synchronize) b.event_synchronize = w_ev_sync;
    return b;
}

/* Half of the case's store-all peak, planned by the library itself. */
static uint64_t half_store_all(const chain_case *c) {
    ckpt_plan_info sa = {0};
    ckpt_plan *p = NULL;
    ckpt_cost cost[MAXN];
    ckpt_plan_desc sd;
    int i;
    memset(cost, 0, sizeof cost);
    memset(&sd, 0, sizeof sd);
    for (i = 0; i < c->n; i++) {
        cost[i].f = c->st[i].fwd_time; cost[i].b = c->st[i].bwd_time;
        cost[i].a = c->st[i].out_bytes; cost[i].t = c->st[i].tape_bytes;
    }
    ckpt_plan_create(cost, c->n, &sd, &p, &sa);
    ckpt_plan_destroy(p);
    return sa.store_all_peak / 2;
}

/* Runs one step with k lanes; streamed: weights through the library. Returns the plan result. */
static ckpt_result run(chain_case *c, int streamed, int k, const ckpt_plan_desc *pd, const ckpt_backend *be, result *out) {
    ckpt_chain_desc cd;
    ckpt_chain *ch = NULL;
    ckpt_plan_info info = {0};
    ckpt_chain_stats cs = {0};
    ckpt_result r;
    const void *in[MAXK], *outs[MAXK];
    const void *gy[MAXK];
    void *gx[MAXK];
    int i, m;
    memset(out, 0, sizeof *out);
    memset(&cs, 0, sizeof cs);
    for (i = 0; i < c->n; i++) {
        layer *L = &c->layers[i];
        L->streamed = streamed;
        if (regrads) for (m = 0; m < MAXW * MAXW + MAXW; m++) L->grads[m] = 1e6f;
        else if (init_grads) memcpy(L->grads, init_grads[i], sizeof L->grads);
        else memset(L->grads, 0, sizeof L->grads);
        c->st[i].host_params = streamed ? L->params : NULL;
        c->st[i].param_bytes = streamed ? sizeof(float) * (size_t)(L->win * L->wout + L->wout) : 0;
        c->st[i].host_grads = streamed ? L->grads : NULL;
    }
    memset(&cd, 0, sizeof cd);
    cd.stages = c->st; cd.n_stages = c->n; cd.backend = be; cd.seed = 77; cd.microbatches = k;
    cd.stream_lookahead = lookahead;
    cd.stream_grads_early = grads_early;
    cd.stream_grads_overwrite = grads_overwrite;
    cd.input_bytes = sizeof(float) * ROWS * (size_t)c->layers[0].win;
    r = ckpt_chain_create(&cd, &ch);
    CHECK(r == CKPT_OK, "chain_create: %s", ckpt_result_string(r));
    if (r != CKPT_OK) return r;
    r = ckpt_chain_plan(ch, pd, &info);
    if (r == CKPT_OK) {
        for (m = 0; m < k; m++) { in[m] = c->x[m]; gy[m] = c->gy[m]; gx[m] = out->dx[m]; }
        r = ckpt_forward_microbatches(ch, in, outs);
        for (i = 0; regrads && i < c->n; i++) {
            if (init_grads) memcpy(c->layers[i].grads, init_grads[i], sizeof c->layers[i].grads);
            else memset(c->layers[i].grads, 0, sizeof c->layers[i].grads);
        }
        for (m = 0; m < k && r == CKPT_OK; m++)
            memcpy(out->y[m], outs[m], sizeof(float) * ROWS * (size_t)c->layers[c->n - 1].wout);
        in_backward = 1;
        if (r == CKPT_OK) r = ckpt_backward_microbatches(ch, gy, gx);
        in_backward = 0;
        for (i = 0; i < c->n; i++) memcpy(out->grads[i], c->layers[i].grads, sizeof out->grads[i]);
        ckpt_chain_get_stats(ch, &cs);
        out->loads = cs.param_loads;
        if (streamed) load_bounds(ckpt_chain_get_plan(ch), c->n, eff_lookahead(lookahead) + 1, &out->loads_lo, &out->loads_hi);
        if (streamed) {
            size_t most = 0;
            for (i = 0; i < c->n; i++) if (c->st[i].param_bytes > most) most = c->st[i].param_bytes;
            CHECK(cs.slot_bytes == (uint64_t)(1 + eff_lookahead(lookahead)) * 2 * most,
                  "lookahead %d: %llu bytes of slots, want %d + 1 parameter and gradient slots of %zu bytes", lookahead,
                  (unsigned long long)cs.slot_bytes, eff_lookahead(lookahead), most);
        }
        if (streamed && r == CKPT_OK)
            CHECK(cs.grad_stores == (uint64_t)c->n && cs.grad_loads == (grads_overwrite ? 0 : (uint64_t)c->n),
                  "%llu gradient copies back and %llu loads for %d stages", (unsigned long long)cs.grad_stores,
                  (unsigned long long)cs.grad_loads, c->n);
    }
    ckpt_chain_destroy(ch);
    return r;
}

static int same(const result *a, const result *b, const chain_case *c, int k) {
    int i, m;
    for (i = 0; i < c->n; i++)
        if (memcmp(a->grads[i], b->grads[i], sizeof(float) * (size_t)(c->layers[i].win * c->layers[i].wout + c->layers[i].wout)))
            return 0;
    for (m = 0; m < k; m++) {
        if (memcmp(a->dx[m], b->dx[m], sizeof(float) * ROWS * (size_t)c->layers[0].win)) return 0;
        if (memcmp(a->y[m], b->y[m], sizeof(float) * ROWS * (size_t)c->layers[c->n - 1].wout)) return 0;
    }
    return 1;
}

static void random_chains(ckpt_backend *plain, ckpt_backend *engine) {
    const ckpt_policy policies[] = {CKPT_POLICY_STORE_ALL, CKPT_POLICY_OPTIMAL, CKPT_POLICY_EVERY_K,
                                    CKPT_POLICY_GREEDY, CKPT_POLICY_OFFLOAD};
    int ci, plans = 0;
    for (ci = 0; ci < 30; ci++) {
        static chain_case c;
        static result ref, ref_k, got;
        ckpt_plan_desc pd;
        ckpt_plan_info sa = {0};
        ckpt_plan *p;
        int k = 1 + ci % MAXK, bi, pi, m;
        lookahead = ci == 29 ? CKPT_MAX_STREAM_LOOKAHEAD : ci % 4;     /* 0 (one), 1, 2, 3 and the most */
        make_case(&c, 1);
        memset(&pd, 0, sizeof pd);
        pd.policy = CKPT_POLICY_STORE_ALL;
        /* references: weights kept by the callbacks, one lane; and streamed store-all with k lanes */
        if (run(&c, 0, 1, &pd, plain, &ref) != CKPT_OK) continue;
        if (run(&c, 1, k, &pd, plain, &ref_k) != CKPT_OK) continue;
        {
            static result s1;
            run(&c, 1, 1, &pd, plain, &s1);
            CHECK(same(&s1, &ref, &c, 1), "case %d: streamed store-all differs from weights kept by the callbacks", ci);
        }
        CHECK(ref_k.loads == store_all_loads(c.n, lookahead),
              "case %d: store-all with %d lanes, lookahead %d, loaded parameters %llu times (want %llu)", ci, k, lookahead,
              (unsigned long long)ref_k.loads, (unsigned long long)store_all_loads(c.n, lookahead));
        {
            ckpt_cost cost[MAXN] = {{0}};
            int i;
            for (i = 0; i < c.n; i++) {
                memset(&cost[i], 0, sizeof cost[i]);
                cost[i].f = c.st[i].fwd_time; cost[i].b = c.st[i].bwd_time;
                cost[i].a = c.st[i].out_bytes; cost[i].t = c.st[i].tape_bytes;
            }
            ckpt_plan_create(cost, c.n, &pd, &p, &sa);
            ckpt_plan_destroy(p);
        }
        for (bi = 0; bi < 3; bi++) {
            uint64_t lo = sa.store_all_peak / 3, budget = lo + rnd() % (sa.store_all_peak - lo + 1);
            for (pi = 0; pi < (int)(sizeof policies / sizeof policies[0]); pi++) {
                ckpt_backend *be = pi == 4 || bi == 1 ? engine : plain;
                ckpt_result r;
                memset(&pd, 0, sizeof pd);
                pd.policy = policies[pi];
                pd.budget = budget;
                pd.bandwidth = (double)(8 << rnd_int(0, 8));
                r = run(&c, 1, k, &pd, be, &got);
                if (r == CKPT_ERR_INFEASIBLE) continue;
                CHECK(r == CKPT_OK, "case %d %s: %s", ci, ckpt_policy_name(pd.policy), ckpt_result_string(r));
                if (r != CKPT_OK) continue;
                plans++;
                CHECK(same(&got, &ref_k, &c, k), "case %d, %d lanes, %s at %llu (%s backend): results differ from store-all's", ci, k,
                      ckpt_policy_name(pd.policy), (unsigned long long)budget, be == engine ? "copy-engine" : "plain");
                CHECK(got.loads >= (uint64_t)got.loads_lo && got.loads <= (uint64_t)got.loads_hi,
                      "case %d %s: %llu parameter loads, not within [%d, %d]", ci, ckpt_policy_name(pd.policy),
                      (unsigned long long)got.loads, got.loads_lo, got.loads_hi);
                if (k == 1) CHECK(same(&got, &ref, &c, 1), "case %d %s: one lane differs from the unstreamed reference", ci,
                                  ckpt_policy_name(pd.policy));
            }
        }
        /* without dropout, lane m of a k-lane run is exactly a one-lane run on microbatch m */
        if (k > 1) {
            static chain_case d;
            static result lanes, one;
            memcpy(&d, &c, sizeof d);
            for (m = 0; m < d.n; m++) { d.layers[m].p_drop = 0; d.st[m].user = &d.layers[m]; }
            memset(&pd, 0, sizeof pd);
            pd.policy = CKPT_POLICY_OPTIMAL;
            pd.budget = sa.store_all_peak / 2;
            if (run(&d, 1, k, &pd, engine, &lanes) == CKPT_OK) {
                for (m = 0; m < k; m++) {
                    memcpy(d.x[0], c.x[m], sizeof d.x[0]);
                    memcpy(d.gy[0], c.gy[m], sizeof d.gy[0]);
                    if (run(&d, 1, 1, &pd, plain, &one) != CKPT_OK) continue;
                    CHECK(memcmp(one.y[0], lanes.y[m], sizeof(float) * ROWS * (size_t)d.layers[d.n - 1].wout) == 0 &&
                          memcmp(one.dx[0], lanes.dx[m], sizeof(float) * ROWS * (size_t)d.layers[0].win) == 0,
                          "case %d: lane %d of %d differs from a one-lane run on its microbatch", ci, m, k);
                }
            }
        }
    }
    lookahead = 0;
    printf("streaming: %d plans compared\n", plans);
}

/* With lookahead L, the loads of the next L F or B ops are issued before an op's callback runs:
   in a store-all forward of n stages, min(n, i + 1 + L) loads before F(i+1) (i from 0). Both
   backends; gradients equal to the one-op lookahead's. */
static void lookahead_order(ckpt_backend *plain, ckpt_backend *engine) {
    static chain_case c;
    static result ref, got;
    ckpt_plan_desc pd;
    int L, i, e;
    make_case(&c, 1);
    while (c.n < 5) make_case(&c, 1);
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_STORE_ALL;
    CHECK(run(&c, 1, 1, &pd, plain, &ref) == CKPT_OK, "one-op lookahead");
    for (e = 0; e < 2; e++)
        for (L = 0; L <= CKPT_MAX_STREAM_LOOKAHEAD; L++) {
            ckpt_backend w = wrapped(e ? engine : plain, &c);
            int bad = -1, want = 0;
            lookahead = L;
            loads_issued = 0;
            order_log = 1;
            CHECK(run(&c, 1, 1, &pd, &w, &got) == CKPT_OK, "lookahead %d: the step failed", L);
            order_log = 0;
            for (i = 0; i < c.n && bad < 0; i++) {
                want = i + 1 + eff_lookahead(L) < c.n ? i + 1 + eff_lookahead(L) : c.n;
                if (loads_at_fwd[i] != want) bad = i;
            }
            CHECK(bad < 0, "lookahead %d (%s): %d parameter loads issued before F(%d), want %d", L, e ? "copy engine" : "plain",
                  bad < 0 ? 0 : loads_at_fwd[bad], bad + 1, want);
            CHECK(same(&got, &ref, &c, 1), "lookahead %d (%s): results differ", L, e ? "copy engine" : "plain");
            CHECK(got.loads == store_all_loads(c.n, L), "lookahead %d: %llu loads in store-all, want %llu", L,
                  (unsigned long long)got.loads, (unsigned long long)store_all_loads(c.n, L));
        }
    lookahead = 0;
}

/* A forward leaves loads for the backward in flight (a slow copy engine keeps them so); on a
   backend with copy streams but no synchronize, ckpt_chain_reset_step waits for them on an
   event (the host may then change host_params), and the chain's destroy leaves nothing. */
static void inflight_loads(void) {
    static chain_case c;
    ckpt_backend slow, w;
    ckpt_cpu_desc ed;
    ckpt_cpu_stats bs = {0};
    ckpt_chain_desc cd;
    ckpt_plan_desc pd;
    ckpt_plan_info info;
    const void *y;
    int i, tries, found, syncs = 0;
    memset(&ed, 0, sizeof ed);
    ed.copy_engine = 1;
    ed.copy_bandwidth = 2e5;    /* a 440-byte load takes 2.2 ms */
    if (ckpt_cpu_backend_create(&ed, &slow) != CKPT_OK) return;
    /* a chain whose forward loads parameters for its backward: more loads than stages */
    for (tries = 0, found = 0; tries < 100 && !found; tries++) {
        ckpt_chain *ch = NULL;
        make_case(&c, 0);
        for (i = 0; i < c.n; i++) {
            c.layers[i].streamed = 1;
            c.st[i].host_params = c.layers[i].params;
            c.st[i].param_bytes = sizeof(float) * (size_t)(c.layers[i].win * c.layers[i].wout + c.layers[i].wout);
            c.st[i].host_grads = c.layers[i].grads;
        }
        w = wrapped(&slow, &c);
        w.synchronize = NULL;
        memset(&cd, 0, sizeof cd);
        cd.stages = c.st; cd.n_stages = c.n; cd.backend = &w; cd.stream_lookahead = 4;
        if (ckpt_chain_create(&cd, &ch) != CKPT_OK) break;
        memset(&pd, 0, sizeof pd);
        pd.policy = CKPT_POLICY_STORE_ALL;
        if (ckpt_chain_plan(ch, &pd, &info) == CKPT_OK) {
            pd.policy = CKPT_POLICY_OPTIMAL;     /* at its smallest budget: long recomputations */
            pd.budget = 1;
            if (ckpt_chain_plan_dry(ch, &pd, &info) == CKPT_ERR_INFEASIBLE) pd.budget = info.min_budget;
            loads_issued = 0;
            if (ckpt_chain_plan(ch, &pd, &info) == CKPT_OK && ckpt_forward(ch, c.x[0], &y) == CKPT_OK)
                found = loads_issued > c.n;
        }
        wrap.all_ev_syncs = 0;
        ckpt_chain_reset_step(ch);
        syncs = wrap.all_ev_syncs;
        ckpt_chain_destroy(ch);
    }
    CHECK(found, "no chain's forward loaded parameters for its backward");
    CHECK(!found || syncs > 0, "ckpt_chain_reset_step waited on no event with the backward's loads in flight");
    ckpt_cpu_get_stats(&slow, &bs);
    CHECK(bs.live_allocations == 0, "%llu allocations left", (unsigned long long)bs.live_allocations);
    ckpt_cpu_backend_destroy(&slow);
    for (i = 0; i < c.n; i++) c.st[i].host_params = NULL;
}

/* Non-zero host_grads before the step: loaded into param_grads, added into on the device, copied
   back; no host wait, memset or pinned allocation on the way. */
static void host_grads_path(ckpt_backend *plain, ckpt_backend *engine) {
    static float init[MAXN][MAXW * MAXW + MAXW];
    int ci, bi, j, i;
    for (ci = 0; ci < 12; ci++) {
        static chain_case c;
        static result ref, got;
        int k = 1 + ci % MAXK, pi;
        make_case(&c, 1);
        for (i = 0; i < MAXN; i++)
            for (j = 0; j < MAXW * MAXW + MAXW; j++) init[i][j] = 4.0f * rnd_float() + 0.5f;
        init_grads = init;
        for (pi = 0; pi < 3; pi++) {
            ckpt_plan_desc pd;
            memset(&pd, 0, sizeof pd);
            pd.policy = pi == 0 ? CKPT_POLICY_STORE_ALL : pi == 1 ? CKPT_POLICY_OPTIMAL : CKPT_POLICY_OFFLOAD;
            if (pi) {
                pd.budget = half_store_all(&c);
                pd.bandwidth = 64;
            }
            if (run(&c, 0, k, &pd, plain, &ref) != CKPT_OK) continue;   /* callbacks keep their own, from init */
            /* plain, copy engine, copy engine with host_grads set between, and copy engine with
               stream_grads_early (host_grads set before the forward) */
            for (bi = 0; bi < 4; bi++) {
                ckpt_backend w = wrapped(bi ? engine : plain, &c);
                ckpt_result r;
                check_entry = 1; entry_bad = 0;
                regrads = bi == 2;
                grads_early = bi == 3;
                lookahead = bi >= 2 ? 3 : 0;   /* the forward's last ops prefetch for three backward ops */
                r = run(&c, 1, k, &pd, &w, &got);
                check_entry = 0; regrads = 0; lookahead = 0; grads_early = 0;
                CHECK(r == CKPT_OK, "case %d %s: %s", ci, ckpt_policy_name(pd.policy), ckpt_result_string(r));
                if (r != CKPT_OK) continue;
                CHECK(entry_bad == 0, "case %d %s, %d lanes (%s): %d B ops got a param_grads other than host_grads",
                      ci, ckpt_policy_name(pd.policy), k, bi ? "copy engine" : "plain", entry_bad);
                CHECK(same(&got, &ref, &c, k), "case %d %s, %d lanes (%s): host_grads (or outputs) differ from callbacks "
                      "adding into their own gradients", ci, ckpt_policy_name(pd.policy), k, bi ? "copy engine" : "plain");
                CHECK(wrap.ev_syncs == 0 && wrap.memsets == 0, "case %d %s (%s): %d event waits and %d memsets on the "
                      "host during the backward", ci, ckpt_policy_name(pd.policy), bi ? "copy engine" : "plain",
                      wrap.ev_syncs, wrap.memsets);
                CHECK(wrap.grads_in + wrap.grads_in_fwd == c.n && wrap.grads_out == c.n, "case %d %s: %d copies from "
                      "host_grads and %d into it for %d stages", ci, ckpt_policy_name(pd.policy),
                      wrap.grads_in + wrap.grads_in_fwd, wrap.grads_out, c.n);
                CHECK(bi == 3 ? wrap.grads_in_fwd > 0 : wrap.grads_in_fwd == 0, "case %d %s (%s): %d copies from host_grads "
                      "in the forward", ci, ckpt_policy_name(pd.policy), bi == 3 ? "stream_grads_early" : "default",
                      wrap.grads_in_fwd);
                CHECK(pi == 2 || wrap.pinned == 0, "case %d %s: %d pinned allocations", ci, ckpt_policy_name(pd.policy),
                      wrap.pinned);
            }
            if (pi < 2) {   /* copy streams but no synchronize: the copies back are waited for */
                ckpt_backend w = wrapped(engine, &c);
                w.synchronize = NULL;
                CHECK(run(&c, 1, k, &pd, &w, &got) == CKPT_OK && same(&got, &ref, &c, k),
                      "case %d %s, no synchronize: host_grads differ", ci, ckpt_policy_name(pd.policy));
            }
        }
        init_grads = NULL;
    }
}

/* The nth copy or memset of a streamed step (1 lane, init_grads and grads_overwrite as the
   caller set them) fails, for every n until none does. ref: the step's host_grads without a
   fault; old: what they held before. Each stage's host_grads is ref's or old; on the plain
   backend, where a failure stops the step at once, ref's exactly in the stages whose B ran (those
   above some stage); the last run succeeds, after at least two failed runs per stage. */
static void copy_faults(chain_case *c, const ckpt_plan_desc *pd, ckpt_backend *be, int plain, const result *ref,
                        float (*old)[MAXW * MAXW + MAXW], const char *what, int ci) {
    static result got;
    int nth, failed = 0, i;
    ckpt_result r = CKPT_OK;
    for (nth = 1; nth < 8 * MAXN; nth++) {
        int above = 0;      /* a stage below holds ref's */
        ckpt_cpu_inject_fault(be, CKPT_CPU_FAULT_COPY, nth);
        r = run(c, 1, 1, pd, be, &got);
        ckpt_cpu_inject_fault(be, CKPT_CPU_FAULT_COPY, 0);
        CHECK(r == CKPT_OK || r == CKPT_ERR_BACKEND, "%s copy fault %d: %s", what, nth, ckpt_result_string(r));
        for (i = 0; i < c->n; i++) {
            size_t nb = sizeof(float) * (size_t)(c->layers[i].win * c->layers[i].wout + c->layers[i].wout);
            int done = memcmp(got.grads[i], ref->grads[i], nb) == 0;
            CHECK(done || (r != CKPT_OK && memcmp(got.grads[i], old[i], nb) == 0),
                  "%s case %d (%s), copy fault %d (%s): stage %d's host_grads is neither old nor the step's", what, ci,
                  plain ? "plain" : "copy engine", nth, ckpt_result_string(r), i);
            CHECK(!plain || done || !above, "%s case %d (plain), copy fault %d: stage %d holds the old host_grads above a "
                  "stage with the step's", what, ci, nth, i);
            above |= done;
        }
        if (r == CKPT_OK) break;
        failed++;
    }
    CHECK(r == CKPT_OK && failed >= 2 * c->n, "%s case %d (%s): %d failed runs for %d stages, then %s", what, ci,
          plain ? "plain" : "copy engine", failed, c->n, ckpt_result_string(r));
}

/* After a failed backward each stage's host_grads is whole: its old value, or old + gradient. */
static void failed_backward(ckpt_backend *plain, ckpt_backend *engine) {
    static float init[MAXN][MAXW * MAXW + MAXW];
    int ci, bi, i, j;
    for (ci = 0; ci < 8; ci++) {
        static chain_case c;
        static result ref, got;
        ckpt_plan_desc pd;
        make_case(&c, 0);
        for (i = 0; i < MAXN; i++)
            for (j = 0; j < MAXW * MAXW + MAXW; j++) init[i][j] = rnd_float() + 1.0f;
        init_grads = init;
        memset(&pd, 0, sizeof pd);
        pd.policy = CKPT_POLICY_STORE_ALL;
        if (run(&c, 0, 1, &pd, plain, &ref) != CKPT_OK) { init_grads = NULL; continue; }
        for (bi = 0; bi < 2; bi++) {
            ckpt_backend *be = bi ? engine : plain;
            int f;
            /* a callback fails: the stages after it (B runs n..1) are done, it and those before are not */
            for (f = 0; f < c.n; f++) {
                fail_stage = f;
                CHECK(run(&c, 1, 1, &pd, be, &got) == CKPT_ERR_CALLBACK, "case %d: stage %d's backward should fail", ci, f);
                fail_stage = -1;
                for (i = 0; i < c.n; i++) {
                    size_t nb = sizeof(float) * (size_t)(c.layers[i].win * c.layers[i].wout + c.layers[i].wout);
                    CHECK(memcmp(got.grads[i], i > f ? ref.grads[i] : init[i], nb) == 0,
                          "case %d (%s), stage %d failed: stage %d's host_grads should be %s", ci,
                          bi ? "copy engine" : "plain", f, i, i > f ? "old + gradient" : "unchanged");
                }
            }
            /* any copy fails: each stage whole, one way or the other */
            copy_faults(&c, &pd, be, !bi, &ref, init, "added", ci);
        }
        init_grads = NULL;
    }
}

/* stream_grads_overwrite: host_grads start as garbage, and end as the step's gradients alone,
   bit-identical to callbacks adding into their own zeroed gradients; no copy from host_grads,
   one memset per streamed B op, each param_grads zero on entry; every policy, 1 to 3 lanes, the
   plain backend, the copy engine (lookahead 1 and 3) and a copy engine throttled to 200 kB/s
   (copies back queue up behind the B ops: a slot zeroed before its last copy back left would
   show). After a failed callback, the stages whose B op completed hold their gradients, the
   others their garbage; after a failed copy or memset, each stage one or the other. */
static void overwrite(ckpt_backend *plain, ckpt_backend *engine) {
    static float junk[MAXN][MAXW * MAXW + MAXW];
    const ckpt_policy policies[] = {CKPT_POLICY_STORE_ALL, CKPT_POLICY_OPTIMAL, CKPT_POLICY_OFFLOAD};
    int ci, pi, bi, i, j, k, plans = 0;
    ckpt_backend slow;
    ckpt_cpu_desc sd;
    memset(&sd, 0, sizeof sd);
    sd.copy_engine = 1;
    sd.copy_bandwidth = 2e5;
    if (ckpt_cpu_backend_create(&sd, &slow) != CKPT_OK) { CHECK(0, "throttled backend"); return; }
    for (i = 0; i < MAXN; i++)
        for (j = 0; j < MAXW * MAXW + MAXW; j++) junk[i][j] = 1e6f + rnd_float();
    for (ci = 0; ci < 12; ci++) {
        static chain_case c;
        static result ref, got;
        make_case(&c, 1);
        k = rnd_int(1, MAXK);
        for (pi = 0; pi < 3; pi++) {
            ckpt_plan_desc pd;
            memset(&pd, 0, sizeof pd);
            pd.policy = policies[pi];
            if (pi) {
                pd.budget = half_store_all(&c);
                pd.bandwidth = 64;
            }
            init_grads = NULL;
            if (run(&c, 0, k, &pd, plain, &ref) != CKPT_OK) continue;
            for (bi = 0; bi < 4; bi++) {
                ckpt_backend w = wrapped(bi == 3 ? &slow : bi ? engine : plain, &c);
                ckpt_result r;
                init_grads = junk;
                grads_overwrite = 1; check_entry = 1; entry_bad = 0;
                lookahead = bi == 2 ? 3 : 0;
                r = run(&c, 1, k, &pd, &w, &got);
                grads_overwrite = 0; check_entry = 0; lookahead = 0;
                init_grads = NULL;
                CHECK(r == CKPT_OK, "overwrite case %d %s: %s", ci, ckpt_policy_name(pd.policy), ckpt_result_string(r));
                if (r != CKPT_OK) continue;
                plans++;
                CHECK(same(&got, &ref, &c, k), "overwrite case %d %s, %d lanes, backend %d: host_grads differ from the "
                      "gradients alone", ci, ckpt_policy_name(pd.policy), k, bi);
                CHECK(entry_bad == 0, "overwrite case %d: %d B ops got a param_grads that was not zero", ci, entry_bad);
                CHECK(wrap.grads_in + wrap.grads_in_fwd == 0 && wrap.grads_out == c.n && wrap.memsets == c.n,
                      "overwrite case %d %s: %d copies from host_grads, %d into it, %d memsets for %d stages", ci,
                      ckpt_policy_name(pd.policy), wrap.grads_in + wrap.grads_in_fwd, wrap.grads_out, wrap.memsets, c.n);
            }
        }
        /* a failed callback: the stages after it in forward order (whose B ran) hold their
           gradients, it and those before it the junk */
        {
            ckpt_plan_desc pd;
            int f = rnd_int(0, c.n - 1);
            memset(&pd, 0, sizeof pd);
            pd.policy = CKPT_POLICY_STORE_ALL;
            if (run(&c, 0, 1, &pd, plain, &ref) != CKPT_OK) continue;
            init_grads = junk; grads_overwrite = 1; fail_stage = f;
            CHECK(run(&c, 1, 1, &pd, engine, &got) == CKPT_ERR_CALLBACK, "overwrite case %d: stage %d should fail", ci, f);
            init_grads = NULL; grads_overwrite = 0; fail_stage = -1;
            for (i = 0; i < c.n; i++) {
                size_t nb = sizeof(float) * (size_t)(c.layers[i].win * c.layers[i].wout + c.layers[i].wout);
                CHECK(memcmp(got.grads[i], i > f ? ref.grads[i] : junk[i], nb) == 0,
                      "overwrite case %d, stage %d failed: stage %d's host_grads should be %s", ci, f, i,
                      i > f ? "its gradient" : "unchanged");
            }
            /* the nth copy or memset fails: each stage its gradient or the junk */
            init_grads = junk; grads_overwrite = 1;
            copy_faults(&c, &pd, plain, 1, &ref, junk, "overwrite", ci);
            copy_faults(&c, &pd, engine, 0, &ref, junk, "overwrite", ci);
            init_grads = NULL; grads_overwrite = 0;
        }
    }
    ckpt_cpu_backend_destroy(&slow);
    printf("stream_grads_overwrite: %d runs\n", plans);
    CHECK(plans >= 30, "only %d overwrite runs", plans);
}

static void errors(ckpt_backend *engine) {
    static chain_case c;
    static result out;
    ckpt_chain_desc cd;
    ckpt_chain *ch = NULL;
    ckpt_plan_desc pd;
    const void *y;
    ckpt_cpu_stats bs = {0};
    int i;
    make_case(&c, 0);
    memset(&cd, 0, sizeof cd);
    cd.stages = c.st; cd.n_stages = c.n; cd.backend = engine;
    c.st[0].param_bytes = 8; c.st[0].host_params = NULL;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_ERR_NULL_ARGUMENT, "param_bytes without host_params");
    c.st[0].host_params = c.layers[0].params; c.st[0].param_bytes = 6; c.st[0].host_grads = c.layers[0].grads;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_ERR_BAD_ARGUMENT, "host_grads with param_bytes not a multiple of 4");
    {   /* host_grads of two stages may touch but not overlap (tied weights race there) */
        static float tied[8];
        c.st[0].host_params = c.st[1].host_params = c.layers[0].params;
        c.st[0].param_bytes = c.st[1].param_bytes = 4 * sizeof(float);
        c.st[0].host_grads = tied; c.st[1].host_grads = tied;
        CHECK(ckpt_chain_create(&cd, &ch) == CKPT_ERR_BAD_ARGUMENT, "two stages with one host_grads");
        c.st[1].host_grads = tied + 3;
        CHECK(ckpt_chain_create(&cd, &ch) == CKPT_ERR_BAD_ARGUMENT, "host_grads overlapping by one float");
        c.st[1].host_grads = tied + 4;
        CHECK(ckpt_chain_create(&cd, &ch) == CKPT_OK, "adjacent host_grads");
        ckpt_chain_destroy(ch);
        ch = NULL;
        c.st[1].host_params = NULL; c.st[1].param_bytes = 0; c.st[1].host_grads = NULL;
    }
    c.st[0].host_params = NULL; c.st[0].param_bytes = 0; c.st[0].host_grads = NULL;
    {   /* every allocation of the most slots failing in turn, on a backend without synchronize: an
           error each time, nothing left, no event used that was not created */
        ckpt_backend w = *engine;
        ckpt_cpu_stats before = {0}, after = {0};
        int nth, failed = 0;
        w.synchronize = NULL;
        inner_record = engine->event_record; w.event_record = w_ev_record; null_events = 0;
        cd.backend = &w; cd.stream_lookahead = CKPT_MAX_STREAM_LOOKAHEAD;
        for (i = 0; i < c.n; i++) {
            c.st[i].host_params = c.layers[i].params; c.st[i].param_bytes = 64; c.st[i].host_grads = c.layers[i].grads;
        }
        ckpt_cpu_get_stats(engine, &before);
        for (nth = 1; nth <= 2 * (CKPT_MAX_STREAM_LOOKAHEAD + 1); nth++) {
            ckpt_result r;
            ckpt_cpu_inject_fault(engine, CKPT_CPU_FAULT_ALLOC, nth);
            r = ckpt_chain_create(&cd, &ch);
            ckpt_cpu_inject_fault(engine, CKPT_CPU_FAULT_ALLOC, 0);
            failed += r == CKPT_ERR_OUT_OF_DEVICE_MEMORY || r == CKPT_ERR_BACKEND;
            CHECK(r != CKPT_OK || nth > 2 * (CKPT_MAX_STREAM_LOOKAHEAD + 1), "slot allocation %d failing: created", nth);
            if (r == CKPT_OK) ckpt_chain_destroy(ch);
            ch = NULL;
        }
        ckpt_cpu_get_stats(engine, &after);
        CHECK(failed == 2 * (CKPT_MAX_STREAM_LOOKAHEAD + 1), "%d of %d failed slot allocations reported", failed,
              2 * (CKPT_MAX_STREAM_LOOKAHEAD + 1));
        CHECK(null_events == 0, "%d events recorded that the chain never created", null_events);
        CHECK(after.live_allocations == before.live_allocations, "%llu allocations left by failed creates",
              (unsigned long long)(after.live_allocations - before.live_allocations));
        for (i = 0; i < c.n; i++) { c.st[i].host_params = NULL; c.st[i].param_bytes = 0; c.st[i].host_grads = NULL; }
        cd.backend = engine;
    }
    cd.stream_lookahead = -1;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_ERR_BAD_ARGUMENT, "negative stream_lookahead");
    cd.stream_lookahead = CKPT_MAX_STREAM_LOOKAHEAD + 1;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_ERR_BAD_ARGUMENT, "stream_lookahead above the most");
    cd.stream_lookahead = 0;
    cd.stream_grads_early = 2;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_ERR_BAD_ARGUMENT, "stream_grads_early neither 0 nor 1");
    cd.stream_grads_early = 0;
    cd.stream_grads_overwrite = 2;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_ERR_BAD_ARGUMENT, "stream_grads_overwrite neither 0 nor 1");
    cd.stream_grads_overwrite = 1;
    {
        ckpt_backend nomem = *engine;
        nomem.memset_async = NULL;
        cd.backend = &nomem;
        CHECK(ckpt_chain_create(&cd, &ch) == CKPT_ERR_BAD_ARGUMENT, "stream_grads_overwrite without memset_async");
        cd.backend = engine;
    }
    cd.stream_grads_overwrite = 0;
    cd.microbatches = -1;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_ERR_BAD_ARGUMENT, "negative microbatches");
    cd.microbatches = 2;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_OK, "two lanes");
    memset(&pd, 0, sizeof pd);
    CHECK(ckpt_chain_plan(ch, &pd, NULL) == CKPT_OK, "plan");
    CHECK(ckpt_forward(ch, c.x[0], &y) == CKPT_ERR_BAD_ARGUMENT, "ckpt_forward on a two-lane chain");
    CHECK(ckpt_forward_microbatches(ch, NULL, NULL) == CKPT_ERR_NULL_ARGUMENT, "NULL inputs");
    ckpt_chain_destroy(ch);
    /* an injected failure of a parameter load: the step fails, the next one is whole */
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_STORE_ALL;
    run(&c, 1, 1, &pd, engine, &out);
    {
        static result again;
        ckpt_result r;
        ckpt_cpu_inject_fault(engine, CKPT_CPU_FAULT_COPY, 2);
        r = run(&c, 1, 1, &pd, engine, &again);
        CHECK(r == CKPT_ERR_BACKEND, "a failed parameter load: %s", ckpt_result_string(r));
        ckpt_cpu_inject_fault(engine, CKPT_CPU_FAULT_COPY, 0);
        r = run(&c, 1, 1, &pd, engine, &again);
        CHECK(r == CKPT_OK && same(&again, &out, &c, 1), "the step after a failed load: %s", ckpt_result_string(r));
    }
    ckpt_cpu_get_stats(engine, &bs);
    CHECK(bs.live_allocations == 0, "%llu allocations left", (unsigned long long)bs.live_allocations);
    for (i = 0; i < c.n; i++) c.st[i].host_params = NULL;
}

int main(void) {
    ckpt_backend plain, engine;
    ckpt_cpu_desc ed;
    ckpt_cpu_stats bs = {0};
    memset(&ed, 0, sizeof ed);
    ed.copy_engine = 1;
    if (ckpt_cpu_backend_create(NULL, &plain) != CKPT_OK || ckpt_cpu_backend_create(&ed, &engine) != CKPT_OK) return 1;
    random_chains(&plain, &engine);
    lookahead_order(&plain, &engine);
    inflight_loads();
    host_grads_path(&plain, &engine);
    failed_backward(&plain, &engine);
    overwrite(&plain, &engine);
    errors(&engine);
    ckpt_cpu_get_stats(&plain, &bs);
    CHECK(bs.live_allocations == 0, "plain backend: %llu allocations left", (unsigned long long)bs.live_allocations);
    ckpt_cpu_backend_destroy(&plain);
    ckpt_cpu_backend_destroy(&engine);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
