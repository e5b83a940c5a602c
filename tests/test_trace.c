/* test_trace.c -- ckpt_chain_trace, ckpt_trace_predict, ckpt_trace_json (STEP TIMELINE).

   Measured traces, on arithmetic stages with dropout, for every combination of: the CPU backend
   with synchronous copies or with its copy engine (copies on worker threads, timed by events
   recorded on the copy streams); store-all, optimal at a third of store-all's peak, and offload at half
   of store-all's peak (copy engine only); parameter streaming off or on (one op of lookahead with
   1 lane, three with 2); 1 or 2 microbatch lanes.
   Each trace is checked against the schedule: the compute lane holds exactly the F, B and W ops
   in schedule order (F and B once per lane, lanes in order), every event is on its kind's lane
   and names its op's stage, tape and option, O and P appear once per op and lane, the streaming
   copies as often as the chain's stats count them; start <= end, no two events of one lane
   overlap (each lane runs one thing at a time), every P starts after its O's copy ended. The
   traced step is a real step: its gradients and G[0] are bit-identical to an ordinary step's on
   a twin chain, and so is the step after it. Predicted traces: the same structure, the compute
   lane's busy time is the plan's compute time and the last end its predicted time. The JSON: its
   length, truncation, one "X" event per trace event. Errors: bad arguments, no plan, a pending
   forward, injected copy failures, every host allocation and every event creation and record
   failing in turn (nothing leaks, the next step runs).

   With a directory argument, it also writes trace_<config>.json for a few configurations and
   trace_<config>.expect (the schedule's op counts per kind and lane) there, which
   tests/test_trace_json.sh checks with python3. */
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"
#include "../backends/ckpt_cpu.h"

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define NA 6
#define W 64

static float aw[NA][W], agrad[NA][W];

/* y = dropout(x * w), elementwise; tape: the mask (W bytes). Streamed stages read their weights
   from args->params and add into args->param_grads. */
static ckpt_result ar_fwd(const ckpt_fwd_args *a) {
    int i = a->ctx->stage, j;
    const float *x = (const float *)a->in, *w = a->params ? (const float *)a->params : aw[i];
    float *y = (float *)a->out;
    ckpt_philox ph;
    ckpt_result r = ckpt_ctx_rng(a->ctx, W / 4, &ph);
    if (r != CKPT_OK) return r;
    for (j = 0; j < W; j++) y[j] = x[j] * w[j];
    ckpt_philox_dropout(&ph, 0.25f, y, y, (uint8_t *)a->tape, W);
    return CKPT_OK;
}

static ckpt_result ar_bwd(const ckpt_bwd_args *a) {
    int i = a->ctx->stage, j;
    const float *x = (const float *)a->in, *g = (const float *)a->grad_out;
    const float *w = a->params ? (const float *)a->params : aw[i];
    float *pg = a->param_grads ? (float *)a->param_grads : agrad[i];
    const uint8_t *mask = (const uint8_t *)a->tape;
    float *gx = (float *)a->grad_in;
    for (j = 0; j < W; j++) {
        float d = mask[j] ? g[j] / 0.75f : 0.0f;
        pg[j] += d * x[j];
        if (gx) gx[j] = d * w[j];
    }
    return CKPT_OK;
}

static const char *const stage_names[NA] = { "in", "a\"b", "c\\d", "mid", "e f", "out" };

/* A host allocator that counts live blocks and can fail its nth call from now (0: never). */
static long live_blocks = 0;
static int fail_alloc_in = 0;
static void *count_alloc(size_t bytes, void *user) {
    void *p;
    (void)user;
    if (fail_alloc_in > 0 && --fail_alloc_in == 0) return NULL;
    p = malloc(bytes);
    if (p) live_blocks++;
    return p;
}
static void count_free(void *p, void *user) {
    (void)user;
    if (p) { live_blocks--; free(p); }
}

static ckpt_result last_item;
static void capture(const char *tag, ckpt_log_level level, ckpt_result item, const char *message, const char *file,
                    int line, void *user) {
    (void)tag; (void)level; (void)message; (void)file; (void)line; (void)user;
    last_item = item;
}

typedef struct config {
    int engine, policy, stream, lanes;  /* policy: 0 store-all, 1 optimal at a third, 2 offload */
    int wrap;                           /* 1: the backend's events go through the wrappers below */
} config;

/* Event wrappers: count live events; the nth create or record from now fails (0: none). */
static ckpt_result (*real_create)(void *, void **);
static void (*real_destroy)(void *, void *);
static ckpt_result (*real_record)(void *, void *, void *);
static long live_events = 0;
static int fail_create_in = 0, fail_record_in = 0;
static ckpt_result wrap_create(void *state, void **out) {
    ckpt_result r;
    if (fail_create_in > 0 && --fail_create_in == 0) { *out = NULL; return CKPT_ERR_BACKEND; }
    r = real_create(state, out);
    live_events += r == CKPT_OK;
    return r;
}
static void wrap_destroy(void *state, void *ev) {
    live_events -= ev != NULL;
    real_destroy(state, ev);
}
static ckpt_result wrap_record(void *state, void *ev, void *stream) {
    if (fail_record_in > 0 && --fail_record_in == 0) return CKPT_ERR_BACKEND;
    return real_record(state, ev, stream);
}

static const char *policy_label(int p) { return p == 0 ? "store-all" : p == 1 ? "optimal" : p == 2 ? "offload" : "waiting"; }

/* policy 3: a schedule of our own with a W: T[1] goes to the host and its device copy is
   released at once; it comes back for B(1). */
static const ckpt_op waiting_ops[] = {
    { CKPT_OP_F, 1, 1, 0 }, { CKPT_OP_O, 1, 1, 0 }, { CKPT_OP_W, 1, 1, 0 }, { CKPT_OP_F, 2, 1, 0 },
    { CKPT_OP_F, 3, 1, 0 }, { CKPT_OP_F, 4, 1, 0 }, { CKPT_OP_F, 5, 1, 0 }, { CKPT_OP_F, 6, 1, 0 },
    { CKPT_OP_B, 6, 0, 0 }, { CKPT_OP_B, 5, 0, 0 }, { CKPT_OP_B, 4, 0, 0 }, { CKPT_OP_B, 3, 0, 0 },
    { CKPT_OP_B, 2, 0, 0 }, { CKPT_OP_P, 1, 1, 0 }, { CKPT_OP_B, 1, 0, 0 } };
#define N_WAITING ((int)(sizeof waiting_ops / sizeof waiting_ops[0]))

typedef struct rig {
    ckpt_backend be;
    ckpt_stage_desc st[NA];
    ckpt_chain *ch;
} rig;

/* A chain for cfg, planned; 0 when a step of the test cannot be set up. */
static int rig_make(rig *g, const config *cfg, int plan) {
    ckpt_cpu_desc bd;
    ckpt_chain_desc cd;
    ckpt_plan_desc pd;
    ckpt_plan_info info;
    ckpt_result r;
    int i, j;
    memset(g, 0, sizeof *g);
    for (i = 0; i < NA; i++)
        for (j = 0; j < W; j++) aw[i][j] = 0.5f + 0.01f * (float)((i * 31 + j * 7) % 97);
    memset(agrad, 0, sizeof agrad);
    memset(&bd, 0, sizeof bd);
    bd.copy_engine = cfg->engine;
    bd.copy_bandwidth = cfg->engine ? 200e6 : 0;    /* a 256-byte copy takes about 1.3 us */
    if ((r = ckpt_cpu_backend_create(&bd, &g->be)) != CKPT_OK) {
        CHECK(0, "backend: %s", ckpt_result_string(r));
        return 0;
    }
    if (cfg->wrap) {
        real_create = g->be.event_create; real_destroy = g->be.event_destroy; real_record = g->be.event_record;
        g->be.event_create = wrap_create; g->be.event_destroy = wrap_destroy; g->be.event_record = wrap_record;
    }
    for (i = 0; i < NA; i++) {
        g->st[i].name = stage_names[i];
        g->st[i].forward = ar_fwd; g->st[i].backward = ar_bwd;
        g->st[i].out_bytes = 4 * W; g->st[i].tape_bytes = W;
        if (cfg->stream) {
            g->st[i].host_params = aw[i]; g->st[i].param_bytes = sizeof aw[i];
            g->st[i].host_grads = agrad[i];
        }
    }
    memset(&cd, 0, sizeof cd);
    cd.stages = g->st; cd.n_stages = NA; cd.backend = &g->be; cd.seed = 1234; cd.microbatches = cfg->lanes;
    cd.stream_lookahead = cfg->lanes == 2 ? 3 : 0;  /* streaming: two lanes load three ops ahead, one lane one */
    cd.allocator.alloc = count_alloc; cd.allocator.free = count_free;
    cd.logger.fn = capture;
    if ((r = ckpt_chain_create(&cd, &g->ch)) != CKPT_OK) {
        CHECK(0, "chain_create: %s", ckpt_result_string(r));
        ckpt_cpu_backend_destroy(&g->be);
        return 0;
    }
    if (!plan) return 1;
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_STORE_ALL;
    r = ckpt_chain_plan(g->ch, &pd, &info);
    if (r == CKPT_OK && cfg->policy == 1) {
        pd.policy = CKPT_POLICY_OPTIMAL;
        pd.budget = info.peak / 3;
        r = ckpt_chain_plan(g->ch, &pd, &info);
        CHECK(r != CKPT_OK || info.n_recomputed > 0, "optimal at a third of store-all's peak recomputes nothing");
    } else if (r == CKPT_OK && cfg->policy == 3) {
        r = ckpt_chain_set_schedule(g->ch, waiting_ops, N_WAITING, &info);
    } else if (r == CKPT_OK && cfg->policy == 2) {
        pd.policy = CKPT_POLICY_OFFLOAD;
        pd.budget = info.peak / 2;
        pd.bandwidth = 1e6;     /* bytes per unit of the stage times (1 and 2): copies are cheap */
        r = ckpt_chain_plan(g->ch, &pd, &info);
        CHECK(r != CKPT_OK || info.n_offloaded > 0, "offload at half of store-all's peak offloads nothing");
    }
    CHECK(r == CKPT_OK, "plan %s: %s", policy_label(cfg->policy), ckpt_result_string(r));
    return r == CKPT_OK;
}

static void rig_free(rig *g) {
    ckpt_chain_destroy(g->ch);
    ckpt_cpu_backend_destroy(&g->be);
}

static ckpt_trace_lane lane_of(ckpt_trace_kind k) {
    return k == CKPT_TRACE_O || k == CKPT_TRACE_GRAD_STORE ? CKPT_TRACE_D2H
         : k == CKPT_TRACE_P || k == CKPT_TRACE_PARAM_LOAD || k == CKPT_TRACE_GRAD_LOAD ? CKPT_TRACE_H2D
         : CKPT_TRACE_COMPUTE;
}

/* The structure every trace shares with its schedule. lanes: microbatches traced; stats (NULL
   for a prediction): the streaming copies the step made. */
static void check_trace(const char *what, const ckpt_trace *t, const ckpt_op *ops, int n_ops, int lanes,
                        const uint64_t *streamed) {
    int count[8] = {0}, want[8] = {0}, i, k, m, c = 0, bad_lane = 0, bad_op = 0, bad_time = 0, bad_order = 0;
    int overlap[3] = {0}, p_early = 0;
    double lane_end[3] = {-1.0, -1.0, -1.0};
    for (k = 0; k < n_ops; k++) want[ops[k].kind] += ops[k].kind == CKPT_OP_W ? 1 : lanes;
    if (streamed) { want[5] = (int)streamed[0]; want[6] = (int)streamed[1]; want[7] = (int)streamed[2]; }
    CHECK(t->microbatches == lanes && t->n_stages == NA, "%s: %d lanes, %d stages", what, t->microbatches, t->n_stages);
    for (i = 0; i < NA && t->names && t->n_stages == NA; i++)
        CHECK(strcmp(t->names[i], stage_names[i]) == 0, "%s: stage %d is named '%s'", what, i, t->names[i]);
    /* the compute lane's sequence: per op, F and B once per lane (in lane order), W once */
    k = 0; m = 0;
    for (i = 0; i < t->n_events; i++) {
        const ckpt_trace_event *e = &t->events[i];
        if ((unsigned)e->kind >= 8) { bad_op++; continue; }
        count[e->kind]++;
        bad_lane += e->lane != lane_of(e->kind);
        bad_time += !(e->start_ms >= 0.0 && e->end_ms >= e->start_ms);
        if (e->op < 0 || e->op >= n_ops) { bad_op++; continue; }
        if (e->kind <= CKPT_TRACE_W) {
            const ckpt_op *op = &ops[e->op];
            bad_op += (int)op->kind != (int)e->kind || op->stage - 1 != e->stage ||
                      (op->kind != CKPT_OP_B && op->tape != e->tape) ||
                      (op->kind == CKPT_OP_F && op->tape && op->option != e->option) ||
                      (op->kind == CKPT_OP_W ? e->microbatch != -1 : e->microbatch < 0 || e->microbatch >= lanes);
        } else {
            bad_op += e->stage < 0 || e->stage >= NA || e->microbatch != -1 || e->bytes != sizeof aw[0];
        }
        if (e->lane == CKPT_TRACE_COMPUTE) {
            while (k < n_ops && (ops[k].kind == CKPT_OP_O || ops[k].kind == CKPT_OP_P)) k++;
            if (k >= n_ops || e->op != k || (ops[k].kind != CKPT_OP_W && e->microbatch != m)) bad_order++;
            c++;
            if (k < n_ops && (ops[k].kind == CKPT_OP_W || ++m == lanes)) { k++; m = 0; }
        }
        if (e->lane <= CKPT_TRACE_D2H) {
            if (e->start_ms < lane_end[e->lane]) overlap[e->lane]++;
            lane_end[e->lane] = e->end_ms;
        }
        if (e->kind == CKPT_TRACE_P) {     /* its O: the last one before it of the same buffer and lane */
            int j;
            for (j = i - 1; j >= 0; j--) {
                const ckpt_trace_event *o = &t->events[j];
                if (o->kind == CKPT_TRACE_O && o->stage == e->stage && o->tape == e->tape && o->microbatch == e->microbatch) {
                    p_early += e->start_ms < o->end_ms;
                    break;
                }
            }
            p_early += j < 0;
        }
    }
    while (k < n_ops && (ops[k].kind == CKPT_OP_O || ops[k].kind == CKPT_OP_P)) k++;
    CHECK(k == n_ops && bad_order == 0, "%s: the compute lane is not the schedule's F, B and W ops in order "
          "(%d out of place, stopped at op %d of %d)", what, bad_order, k, n_ops);
    for (i = 0; i < 8; i++)
        CHECK(count[i] == want[i], "%s: %d events of kind %d, expected %d", what, count[i], i, want[i]);
    CHECK(bad_lane == 0, "%s: %d events on the wrong lane", what, bad_lane);
    CHECK(bad_op == 0, "%s: %d events do not match their op", what, bad_op);
    CHECK(bad_time == 0, "%s: %d events end before they start or start before the step", what, bad_time);
    for (i = 0; i < 3; i++) CHECK(overlap[i] == 0, "%s: %d overlapping events on lane %d", what, overlap[i], i);
    CHECK(p_early == 0, "%s: %d prefetches start before their offload's copy ends", what, p_early);
}

/* The JSON: its length, a truncated copy, one "X" event per trace event. Written to dir. */
static void check_json(const char *what, const ckpt_trace *t, const char *dir, const ckpt_op *ops, int n_ops) {
    size_t len = 0, len2 = 0, n_x = 0;
    char small[16], *buf, *p;
    ckpt_result r = ckpt_trace_json(t, NULL, 0, &len);
    CHECK(r == CKPT_OK && len > 0, "%s: json size: %s", what, ckpt_result_string(r));
    if (r != CKPT_OK || !(buf = (char *)malloc(len + 1))) return;
    r = ckpt_trace_json(t, buf, len + 1, &len2);
    CHECK(r == CKPT_OK && len2 == len && strlen(buf) == len && strncmp(buf, "{\"traceEvents\":[", 16) == 0,
          "%s: json of %zu bytes (sized %zu), strlen %zu", what, len2, len, strlen(buf));
    for (p = buf; (p = strstr(p, "\"ph\":\"X\"")) != NULL; p++) n_x++;
    CHECK(n_x == (size_t)t->n_events, "%s: %zu X events in the json, %d in the trace", what, n_x, t->n_events);
    r = ckpt_trace_json(t, small, sizeof small, &len2);
    CHECK(r == CKPT_OK && len2 == len && strlen(small) == sizeof small - 1 && memcmp(small, buf, sizeof small - 1) == 0,
          "%s: truncated json", what);
    if (dir) {
        char path[512];
        FILE *f;
        int k, cnt[5] = {0};
        snprintf(path, sizeof path, "%s/trace_%s.json", dir, what);
        f = fopen(path, "wb");
        CHECK(f && fwrite(buf, 1, len, f) == len && fclose(f) == 0, "writing %s", path);
        for (k = 0; k < n_ops; k++) cnt[ops[k].kind]++;
        /* per kind: the schedule's ops, and how many lanes each runs on (W: one) */
        snprintf(path, sizeof path, "%s/trace_%s.expect", dir, what);
        f = fopen(path, "wb");
        CHECK(f && fprintf(f, "{\"F\": %d, \"B\": %d, \"O\": %d, \"P\": %d, \"W\": %d, \"lanes\": %d, \"pid\": %d}\n",
                           cnt[0], cnt[1], cnt[2], cnt[3], cnt[4], t->microbatches, t->predicted ? 2 : 1) > 0 &&
              fclose(f) == 0, "writing %s", path);
    }
    free(buf);
}

typedef struct result { float grad[NA][W], dx[W], next[NA][W]; } result;

/* One traced step on a chain for cfg (twin 0), or an ordinary step on its twin (twin 1); then an
   ordinary step on each. The two must agree bit for bit, and the trace must match the schedule. */
static void test_config(const config *cfg, const char *dir) {
    static result res[2];
    static float x[W], dy[W], dx[W];
    const void *ins[2] = { x, x }, *gouts[2] = { dy, dy };
    void *gins[2] = { dx, dx };
    char what[96];
    rig g;
    ckpt_trace t;
    ckpt_chain_stats s0, s1;
    const ckpt_op *ops;
    int n_ops = 0, twin, j;
    ckpt_result r;
    snprintf(what, sizeof what, "%s_%s%s_%dlane", cfg->engine ? "engine" : "sync", policy_label(cfg->policy),
             cfg->stream ? "_streamed" : "", cfg->lanes);
    for (j = 0; j < W; j++) { x[j] = 0.1f * (float)(j % 13) - 0.6f; dy[j] = 1.0f - 0.03f * (float)j; }
    for (twin = 0; twin < 2; twin++) {
        if (!rig_make(&g, cfg, 1)) return;
        memset(dx, 0, sizeof dx);
        if (twin) {
            r = ckpt_forward_microbatches(g.ch, ins, NULL);
            if (r == CKPT_OK) r = ckpt_backward_microbatches(g.ch, gouts, gins);
            CHECK(r == CKPT_OK, "%s: ordinary step: %s", what, ckpt_result_string(r));
        } else {
            memset(&s0, 0, sizeof s0);
            memset(&s1, 0, sizeof s1);
            ckpt_chain_get_stats(g.ch, &s0);
            r = ckpt_chain_trace(g.ch, x, dy, dx, &t);
            ckpt_chain_get_stats(g.ch, &s1);
            CHECK(r == CKPT_OK, "%s: trace: %s", what, ckpt_result_string(r));
            CHECK(s1.steps == s0.steps + 1, "%s: the traced step counts %llu steps", what,
                  (unsigned long long)(s1.steps - s0.steps));
            if (r == CKPT_OK) {
                uint64_t streamed[3];
                streamed[0] = s1.param_loads - s0.param_loads;
                streamed[1] = s1.grad_loads - s0.grad_loads;
                streamed[2] = s1.grad_stores - s0.grad_stores;
                CHECK(!cfg->stream || streamed[0] > 0, "%s: no parameter loads", what);
                CHECK(t.events_clock == 1, "%s: the CPU backend has events; the trace used the host clock", what);
                ops = ckpt_plan_ops(ckpt_chain_get_plan(g.ch), &n_ops);
                check_trace(what, &t, ops, n_ops, cfg->lanes, streamed);
                check_json(what, &t, cfg->lanes == 2 || cfg->policy == 2 ? dir : NULL, ops, n_ops);
            }
            ckpt_trace_free(&t);
            CHECK(t.events == NULL && t.n_events == 0, "%s: ckpt_trace_free leaves the trace zeroed", what);
        }
        memcpy(res[twin].grad, agrad, sizeof agrad);
        memcpy(res[twin].dx, dx, sizeof dx);
        memset(agrad, 0, sizeof agrad);
        r = ckpt_forward_microbatches(g.ch, ins, NULL);
        if (r == CKPT_OK) r = ckpt_backward_microbatches(g.ch, gouts, gins);
        CHECK(r == CKPT_OK, "%s: the step after: %s", what, ckpt_result_string(r));
        memcpy(res[twin].next, agrad, sizeof agrad);
        rig_free(&g);
    }
    CHECK(memcmp(res[0].grad, res[1].grad, sizeof res[0].grad) == 0, "%s: the traced step's parameter gradients "
          "differ from an ordinary step's", what);
    CHECK(memcmp(res[0].dx, res[1].dx, sizeof res[0].dx) == 0, "%s: the traced step's G[0] differs", what);
    CHECK(memcmp(res[0].next, res[1].next, sizeof res[0].next) == 0, "%s: the step after the traced one differs", what);
    /* the comparison can fail: the step after draws other dropout masks than the first */
    CHECK(memcmp(res[0].grad, res[0].next, sizeof res[0].grad) != 0, "%s: two steps drew the same masks", what);
}

/* Predicted traces of the offload planner's schedules: the same structure, and the compute lane's
   busy time is the plan's compute time, the last end its time (both in ms_per_unit). */
static void test_predict(const char *dir) {
    ckpt_cost c[NA];
    ckpt_plan_desc pd;
    ckpt_plan *plan = NULL;
    ckpt_plan_info info;
    ckpt_trace t;
    ckpt_sim sim;
    const ckpt_op *ops = NULL;
    int n_ops = 0, i, round;
    ckpt_result r;
    memset(c, 0, sizeof c);
    for (i = 0; i < NA; i++) { c[i].f = 1.0 + i % 3; c[i].b = 2.0 + i % 2; c[i].a = 4 * W; c[i].t = 4096; }
    for (round = 1; round <= 3; round++) {     /* optimal, offload, the schedule with a W */
        double busy = 0, last = 0, bw = round == 1 ? 0.0 : 2048.0;  /* a tape in 2 units: partly hidden */
        char what[32];
        snprintf(what, sizeof what, "predicted_%s", policy_label(round));
        memset(&pd, 0, sizeof pd);
        pd.policy = CKPT_POLICY_STORE_ALL;
        r = ckpt_plan_create(c, NA, &pd, &plan, &info);
        ckpt_plan_destroy(plan);
        plan = NULL;
        if (r == CKPT_OK && round < 3) {
            pd.policy = round == 2 ? CKPT_POLICY_OFFLOAD : CKPT_POLICY_OPTIMAL;
            pd.budget = info.peak / 2;
            pd.bandwidth = bw;
            r = ckpt_plan_create(c, NA, &pd, &plan, &info);
            CHECK(r == CKPT_OK && (round == 1 || info.n_offloaded > 0), "%s: plan: %s", what, ckpt_result_string(r));
            if (r == CKPT_OK) ops = ckpt_plan_ops(plan, &n_ops);
        } else if (r == CKPT_OK) {
            r = ckpt_schedule_simulate_offload(c, NA, waiting_ops, N_WAITING, bw, 0, &sim, NULL);
            CHECK(r == CKPT_OK, "%s: simulate: %s", what, ckpt_result_string(r));
            info.time = sim.time; info.compute_time = sim.compute_time;
            ops = waiting_ops; n_ops = N_WAITING;
        }
        if (r != CKPT_OK) continue;
        r = ckpt_trace_predict(c, NA, ops, n_ops, bw, 0, 0.5, stage_names, &t);
        CHECK(r == CKPT_OK && t.predicted == 1, "%s: %s", what, ckpt_result_string(r));
        if (r == CKPT_OK) {
            check_trace(what, &t, ops, n_ops, 1, NULL);
            for (i = 0; i < t.n_events; i++) {
                if (t.events[i].lane == CKPT_TRACE_COMPUTE && t.events[i].kind != CKPT_TRACE_W)
                    busy += t.events[i].end_ms - t.events[i].start_ms;
                if (t.events[i].end_ms > last) last = t.events[i].end_ms;
            }
            CHECK(fabs(busy - 0.5 * info.compute_time) < 1e-9 * info.compute_time, "%s: compute busy %.6f ms, the plan's "
                  "compute time %.6f units", what, busy, info.compute_time);
            CHECK(fabs(last - 0.5 * info.time) < 1e-9 * info.time, "%s: the last event ends at %.6f ms, the plan "
                  "predicts %.6f units", what, last, info.time);
            if (round == 3)     /* W ends when O's copy does: 4096 bytes at 2048 a unit after F1 (1 unit) */
                CHECK(t.events[2].kind == CKPT_TRACE_W && fabs(t.events[2].end_ms - 0.5 * 3.0) < 1e-12 &&
                      fabs(t.events[2].start_ms - 0.5 * 1.0) < 1e-12, "%s: W from %.3f to %.3f ms", what,
                      t.events[2].start_ms, t.events[2].end_ms);
            check_json(what, &t, dir, ops, n_ops);
        }
        ckpt_trace_free(&t);
        ckpt_plan_destroy(plan);
        plan = NULL;
    }
}

/* Each failure returns its code, leaves *out zeroed and leaks nothing. */
static void test_errors(void) {
    static float x[W], dy[W], dx[W];
    config cfg = { 1, 2, 1, 2, 0 };
    ckpt_trace t;
    rig g;
    const void *out;
    size_t len;
    int n, fails = 0, kind;
    long live0;
    ckpt_result r;
    memset(&t, 0, sizeof t);
    CHECK(ckpt_chain_trace(NULL, x, dy, dx, &t) == CKPT_ERR_NULL_ARGUMENT, "NULL chain");
    CHECK(ckpt_trace_json(NULL, NULL, 0, &len) == CKPT_ERR_NULL_ARGUMENT, "json of NULL");
    CHECK(ckpt_trace_json(&t, NULL, 4, &len) == CKPT_ERR_NULL_ARGUMENT, "json into NULL with a size");
    CHECK(ckpt_trace_json(&t, NULL, 0, NULL) == CKPT_ERR_NULL_ARGUMENT, "json without length");
    ckpt_trace_free(NULL);
    ckpt_trace_free(&t);
    if (!rig_make(&g, &cfg, 0)) return;
    t.n_events = 5;
    CHECK(ckpt_chain_trace(g.ch, x, dy, dx, &t) == CKPT_ERR_NO_PLAN && t.n_events == 0, "no plan");
    rig_free(&g);
    if (!rig_make(&g, &cfg, 1)) return;
    last_item = CKPT_OK;
    CHECK(ckpt_chain_trace(g.ch, NULL, dy, dx, &t) == CKPT_ERR_NULL_ARGUMENT && last_item == CKPT_ERR_NULL_ARGUMENT,
          "NULL input (logged %s)", ckpt_result_string(last_item));
    CHECK(ckpt_chain_trace(g.ch, x, NULL, dx, &t) == CKPT_ERR_NULL_ARGUMENT, "NULL grad_output");
    last_item = CKPT_OK;
    CHECK(ckpt_chain_trace(g.ch, x, dy, dx, NULL) == CKPT_ERR_NULL_ARGUMENT && last_item == CKPT_ERR_NULL_ARGUMENT,
          "NULL out (logged %s)", ckpt_result_string(last_item));
    rig_free(&g);
    /* a step of more spans than a trace counts (INT_MAX): 4,096 lanes of a schedule of 524,312 ops
       (F(1) without tape 524,300 times, then store-all) are refused before anything runs */
    {
        config big = { 0, 0, 0, 4096, 0 };
        int k, m = 0, K = 524300;
        ckpt_op *ops = (ckpt_op *)calloc((size_t)K + 2 * NA, sizeof *ops);
        if (ops && rig_make(&g, &big, 0)) {
            ckpt_chain_stats st;
            memset(&st, 0, sizeof st);
            st.steps = 1;
            for (k = 0; k < K; k++) { ops[m].kind = CKPT_OP_F; ops[m].stage = 1; m++; }
            for (k = 1; k <= NA; k++) { ops[m].kind = CKPT_OP_F; ops[m].stage = k; ops[m].tape = 1; m++; }
            for (k = NA; k >= 1; k--) { ops[m].kind = CKPT_OP_B; ops[m].stage = k; m++; }
            CHECK(ckpt_chain_set_schedule(g.ch, ops, m, NULL) == CKPT_OK, "set the long schedule");
            last_item = CKPT_OK;
            t.n_events = 5;
            r = ckpt_chain_trace(g.ch, x, dy, dx, &t);
            ckpt_chain_get_stats(g.ch, &st);
            CHECK(r == CKPT_ERR_BAD_ARGUMENT && last_item == CKPT_ERR_BAD_ARGUMENT && t.events == NULL && t.n_events == 0 &&
                  st.steps == 0, "%d ops x 4096 lanes: %s (logged %s), %llu steps", m, ckpt_result_string(r),
                  ckpt_result_string(last_item), (unsigned long long)st.steps);
            rig_free(&g);
        } else
            CHECK(0, "the long schedule's set-up");
        free(ops);
    }
    cfg.lanes = 1;
    if (!rig_make(&g, &cfg, 1)) return;
    CHECK(ckpt_forward(g.ch, x, &out) == CKPT_OK, "forward");
    CHECK(ckpt_chain_trace(g.ch, x, dy, dx, &t) == CKPT_ERR_OUT_OF_ORDER && t.events == NULL, "pending forward");
    CHECK(ckpt_backward(g.ch, dy, dx) == CKPT_OK, "backward");
    /* a copy failing at each copy of the step in turn: the step fails, the chain runs the next */
    for (n = 1; n < 200; n++) {
        ckpt_cpu_inject_fault(&g.be, CKPT_CPU_FAULT_COPY, n);
        r = ckpt_chain_trace(g.ch, x, dy, dx, &t);
        ckpt_cpu_inject_fault(&g.be, CKPT_CPU_FAULT_COPY, 0);
        if (r == CKPT_OK) { ckpt_trace_free(&t); break; }
        fails++;
        CHECK(r == CKPT_ERR_BACKEND && t.events == NULL && t.names == NULL, "copy %d failing: %s", n, ckpt_result_string(r));
    }
    CHECK(fails > 5 && n < 200, "copy faults: %d failed steps before one succeeded", fails);
    /* every host allocation of the call failing in turn */
    live0 = live_blocks;
    fails = 0;
    for (n = 1; n < 100; n++) {
        fail_alloc_in = n;
        r = ckpt_chain_trace(g.ch, x, dy, dx, &t);
        fail_alloc_in = 0;
        if (r == CKPT_OK) { ckpt_trace_free(&t); break; }
        fails++;
        CHECK(r == CKPT_ERR_OUT_OF_HOST_MEMORY && t.events == NULL, "allocation %d failing: %s", n, ckpt_result_string(r));
        CHECK(live_blocks == live0, "allocation %d failing: %ld blocks leaked", n, live_blocks - live0);
    }
    CHECK(fails >= 3 && n < 100, "allocation faults: %d failed calls before one succeeded", fails);
    CHECK(live_blocks == live0, "a trace freed leaves %ld blocks", live_blocks - live0);
    rig_free(&g);
    /* the backend's events failing: the nth created, then the nth recorded (the chain's own
       records for its copies included); every event the call created is destroyed */
    cfg.wrap = 1;
    if (!rig_make(&g, &cfg, 1)) return;
    live0 = live_events;
    for (kind = 0; kind < 2; kind++) {
        fails = 0;
        for (n = 1; n < 400; n++) {
            *(kind ? &fail_record_in : &fail_create_in) = n;
            r = ckpt_chain_trace(g.ch, x, dy, dx, &t);
            fail_create_in = fail_record_in = 0;
            if (r == CKPT_OK) { ckpt_trace_free(&t); break; }
            fails++;
            CHECK(r == CKPT_ERR_BACKEND && t.events == NULL && live_events == live0, "event %s %d failing: %s, %ld "
                  "events left", kind ? "record" : "create", n, ckpt_result_string(r), live_events - live0);
            r = ckpt_forward(g.ch, x, &out);
            if (r == CKPT_OK) r = ckpt_backward(g.ch, dy, dx);
            CHECK(r == CKPT_OK, "event %s %d failing: the next step: %s", kind ? "record" : "create", n,
                  ckpt_result_string(r));
        }
        CHECK(fails >= 10 && n < 400, "event %s faults: %d failed calls before one succeeded", kind ? "record" : "create",
              fails);
    }
    CHECK(live_events == live0, "traces left %ld events", live_events - live0);
    rig_free(&g);
    CHECK(live_events == 0, "the chain left %ld events", live_events);
}

static void test_predict_errors(void) {
    ckpt_cost c[2];
    ckpt_op ops[4] = { { CKPT_OP_F, 1, 1, 0 }, { CKPT_OP_F, 2, 1, 0 }, { CKPT_OP_B, 2, 0, 0 }, { CKPT_OP_B, 1, 0, 0 } };
    ckpt_trace t;
    memset(c, 0, sizeof c);
    c[0].f = c[1].f = 1; c[0].b = c[1].b = 2;
    CHECK(ckpt_trace_predict(c, 2, ops, 4, 0, 0, 1, NULL, NULL) == CKPT_ERR_NULL_ARGUMENT, "predict: NULL out");
    CHECK(ckpt_trace_predict(c, 2, ops, 4, 0, 0, 0, NULL, &t) == CKPT_ERR_BAD_ARGUMENT && t.events == NULL,
          "predict: ms_per_unit 0");
    CHECK(ckpt_trace_predict(c, 2, ops, 4, -1, 0, 1, NULL, &t) == CKPT_ERR_BAD_ARGUMENT, "predict: negative bandwidth");
    CHECK(ckpt_trace_predict(c, 2, ops, 3, 0, 0, 1, NULL, &t) == CKPT_ERR_BAD_SCHEDULE && t.events == NULL,
          "predict: a schedule without B(1)");
    CHECK(ckpt_trace_predict(c, 2, ops, 4, 0, 0, 1, NULL, &t) == CKPT_OK && t.n_events == 4 &&
          strcmp(t.names[1], "stage 1") == 0 && t.events[3].end_ms == 6.0, "predict: default names and times");
    ckpt_trace_free(&t);
    /* times that are finite in the stages' unit but not in ms */
    CHECK(ckpt_trace_predict(c, 2, ops, 4, 0, 0, DBL_MAX / 4, NULL, &t) == CKPT_ERR_BAD_ARGUMENT && t.events == NULL,
          "predict: ms_per_unit that overflows the times");
    {   /* a link so slow that a copy's time overflows */
        ckpt_op oo[6] = { { CKPT_OP_F, 1, 1, 0 }, { CKPT_OP_O, 1, 0, 0 }, { CKPT_OP_F, 2, 1, 0 },
                          { CKPT_OP_P, 1, 0, 0 }, { CKPT_OP_B, 2, 0, 0 }, { CKPT_OP_B, 1, 0, 0 } };
        ckpt_sim sim;
        c[0].a = c[1].a = 1024;
        CHECK(ckpt_schedule_simulate_offload(c, 2, oo, 6, 1e-306, 0, &sim, NULL) == CKPT_ERR_BAD_ARGUMENT,
              "simulate_offload: bandwidth 1e-306");
        CHECK(ckpt_trace_predict(c, 2, oo, 6, 1e-306, 0, 1, NULL, &t) == CKPT_ERR_BAD_ARGUMENT && t.events == NULL,
              "predict: bandwidth 1e-306");
        CHECK(ckpt_schedule_simulate_offload(c, 2, oo, 6, 1e-300, 0, &sim, NULL) == CKPT_OK && sim.time < DBL_MAX &&
              sim.time > 1e302, "simulate_offload: bandwidth 1e-300 (time %g)", sim.time);
    }
}

/* ts and dur: microseconds with three decimals, rounded, digits only (no "%f": LC_NUMERIC),
   from a trace made by hand. Where a locale with a decimal comma is installed, also under it. */
static void test_json_numbers(void) {
    static const char *const locales[] = { "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8" };
    ckpt_trace_event ev[2];
    char *names[1];
    char name[] = "s";
    char buf[4096];
    ckpt_trace t;
    size_t len = 0;
    int i, k;
    memset(ev, 0, sizeof ev);
    memset(&t, 0, sizeof t);
    names[0] = name;
    ev[0].kind = CKPT_TRACE_F; ev[0].start_ms = 0.0015; ev[0].end_ms = 2.0;      /* 1.5 us, 1998.5 us */
    ev[1].kind = CKPT_TRACE_B; ev[1].start_ms = 1234.56789; ev[1].end_ms = 1234.5679004;   /* rounds to 0.500 us */
    t.events = ev; t.n_events = 2; t.n_stages = 1; t.microbatches = 1; t.names = names;
    for (k = 0; k <= (int)(sizeof locales / sizeof locales[0]); k++) {
        const char *lc = k == 0 ? "C" : setlocale(LC_NUMERIC, locales[k - 1]);
        if (!lc) continue;
        CHECK(ckpt_trace_json(&t, buf, sizeof buf, &len) == CKPT_OK && len < sizeof buf, "json (%s)", lc);
        CHECK(strstr(buf, "\"ts\":1.500,\"dur\":1998.500,") != NULL, "F's ts and dur (%s): %s", lc, buf);
        CHECK(strstr(buf, "\"ts\":1234567.890,\"dur\":0.010,") != NULL, "B's ts and dur (%s): %s", lc, buf);
        for (i = 0; buf[i]; i++)
            if (buf[i] == ',' && i > 0 && buf[i - 1] >= '0' && buf[i - 1] <= '9' && buf[i + 1] >= '0' && buf[i + 1] <= '9')
                break;
        CHECK(!buf[i], "a decimal comma in the JSON (%s) at %d", lc, i);
        if (k) printf("test_trace: JSON numbers also checked under LC_NUMERIC=%s\n", locales[k - 1]);
    }
    setlocale(LC_NUMERIC, "C");
    /* beyond a long long of ns: whole ms, then e3 */
    ev[0].start_ms = 1e13; ev[0].end_ms = 3e13; ev[1].start_ms = -DBL_MAX; ev[1].end_ms = -DBL_MAX / 2;
    CHECK(ckpt_trace_json(&t, buf, sizeof buf, &len) == CKPT_OK && len < sizeof buf, "json of large times");
    CHECK(strstr(buf, "\"ts\":10000000000000e3,\"dur\":20000000000000e3,") != NULL, "large ts and dur: %s", buf);
    CHECK(strstr(buf, "\"ts\":-1797693134862315") != NULL, "ts of -DBL_MAX: %s", buf);
    for (k = 0; k < 4; k++) {   /* JSON has no infinity or NaN */
        ev[1].start_ms = k == 0 ? INFINITY : k == 1 ? NAN : -DBL_MAX;
        ev[1].end_ms = k == 2 ? -INFINITY : DBL_MAX;     /* k == 3: the duration overflows */
        CHECK(ckpt_trace_json(&t, buf, sizeof buf, &len) == CKPT_ERR_BAD_ARGUMENT, "json of a non-finite time (%d)", k);
    }
}

int main(int argc, char **argv) {
    static const int policies[4] = { 0, 1, 2, 3 };
    const char *dir = argc > 1 ? argv[1] : NULL;
    config cfg;
    int e, p, s, l;
    memset(&cfg, 0, sizeof cfg);
    test_json_numbers();
    test_errors();
    test_predict_errors();
    test_predict(dir);
    for (e = 0; e < 2; e++)
        for (p = 0; p < 4; p++)
            for (s = 0; s < 2; s++)
                for (l = 1; l <= 2; l++) {
                    if (policies[p] == 2 && !e) continue;   /* offload's copies want the copy engine */
                    cfg.engine = e; cfg.policy = policies[p]; cfg.stream = s; cfg.lanes = l;
                    test_config(&cfg, dir);
                }
    CHECK(live_blocks == 0, "%ld host blocks leaked", live_blocks);
    printf("test_trace: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
