/* The recompute check (ckpt_chain_desc.check_recompute; RECOMPUTE CHECK in the manual).

   1. Caught and named: a stage whose forward adds a global counter (as BatchNorm's running
      statistics or an unseeded RNG would) into its output, at every budget of the optimal policy
      between its smallest and store-all's peak, and with two microbatches: when the plan
      recomputes that stage, the step fails with CKPT_ERR_RECOMPUTE_MISMATCH and the log names the
      stage, X[i], the lane and both checksums (the first forward's and the recomputation's, as
      the callback saw its output); when it does not, the step succeeds. A variant whose counter
      goes into the tape alone is named as T[i] (in plans that keep the recomputed tape).
   2. No false alarm: random chains of real arithmetic layers with dropout and two tape options
      (0 keeps the pre-activation and the mask, 1 the mask alone), no-checkpoint flags, 1 to 3
      microbatches, every policy (offload with random links and host budgets) at random budgets:
      with the check on, two steps succeed, gradients are bit-identical to store-all's without
      it, and every recomputation of a boundary was compared (stats.recompute_checks).
   3. After a mismatch the chain is ready: once the counter stops changing, the next step
      succeeds with the gradients of a store-all step drawing the same random numbers (a failed
      step gives its random numbers back).
   (Bad combinations, graphs and a backend without checksum, are in test_errors.) */
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"
#include "../backends/ckpt_cpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 4
#define MAXN 8
#define MAXW 10
#define MAXLANES 3

#define TEST_XORSHIFT64_SEED 0x7C3E5A1B9D2F4E61ull
#include "test_util.h"

/* --- the log ---------------------------------------------------------------------------------- */
static char last_msg[512];
static ckpt_result last_item;
static int n_mismatch_logs;
static void capture_log(const char *tag, ckpt_log_level level, ckpt_result item, const char *message, const char *file,
                        int line, void *user) {
    (void)tag; (void)level; (void)file; (void)line; (void)user;
    last_item = item;
    snprintf(last_msg, sizeof last_msg, "%s", message);
    if (item == CKPT_ERR_RECOMPUTE_MISMATCH) n_mismatch_logs++;
}

/* --- a layer: y = dropout(tanh(x W^T + b)) ----------------------------------------------------
   Tape option 0: h (ROWS x wout floats) then the mask (ROWS x wout bytes); option 1: the mask
   alone, backward recomputes h from x. bad_x / bad_t: the forward adds the global counter into
   y[0] / h[0] of the tape (the output stays right), and counts. */
typedef struct layer {
    int win, wout, bad_x, bad_t;
    float p_drop;
    float W[MAXW * MAXW], b[MAXW];
    float dW[MAXW * MAXW], db[MAXW];
    uint64_t sum_first[MAXLANES], sum_recomp[MAXLANES];    /* checksums of what it wrote (bad_x: y, bad_t: tape) */
} layer;

static int g_counter, g_frozen;

static size_t tape_bytes(const layer *L, int opt) {
    size_t h = sizeof(float) * ROWS * (size_t)L->wout, m = (size_t)ROWS * (size_t)L->wout;
    return opt == 0 ? h + m : m;    /* h is a multiple of 4 floats' bytes: the mask follows it */
}

static void preact(const layer *L, const float *x, float *h) {
    int r, o, i;
    for (r = 0; r < ROWS; r++)
        for (o = 0; o < L->wout; o++) {
            float s = L->b[o];
            for (i = 0; i < L->win; i++) s += x[r * L->win + i] * L->W[o * L->win + i];
            h[r * L->wout + o] = s;
        }
}

static ckpt_result layer_fwd(const ckpt_fwd_args *a) {
    layer *L = (layer *)a->ctx->user;
    int n = ROWS * L->wout, opt = a->ctx->tape_option, i;
    float *y = (float *)a->out, *h = (float *)a->workspace;
    uint8_t *mask = (uint8_t *)a->tape + (opt == 0 ? sizeof(float) * (size_t)n : 0);
    ckpt_philox ph;
    ckpt_result res;
    if ((res = ckpt_ctx_rng(a->ctx, (uint64_t)(n + 3) / 4, &ph)) != CKPT_OK) return res;
    preact(L, (const float *)a->in, h);
    for (i = 0; i < n; i++) y[i] = tanhf(h[i]);
    ckpt_philox_dropout(&ph, L->p_drop, y, y, mask, (size_t)n);
    if (opt == 0) memcpy(a->tape, h, sizeof(float) * (size_t)n);
    if ((L->bad_x || L->bad_t) && !g_frozen) g_counter++;
    if (L->bad_x) y[0] += (float)g_counter;
    if (L->bad_t && opt == 0) ((float *)a->tape)[0] += (float)g_counter;
    if (L->bad_x || L->bad_t) {
        uint64_t s = L->bad_x ? ckpt_checksum(y, sizeof(float) * (size_t)n) : ckpt_checksum(a->tape, tape_bytes(L, opt));
        if (a->ctx->mode == CKPT_MODE_FORWARD) L->sum_first[a->ctx->microbatch] = s;
        else L->sum_recomp[a->ctx->microbatch] = s;
    }
    return CKPT_OK;
}

static ckpt_result layer_bwd(const ckpt_bwd_args *a) {
    layer *L = (layer *)a->ctx->user;
    const float *x = (const float *)a->in, *g = (const float *)a->grad_out;
    float *gx = (float *)a->grad_in, *dh = (float *)a->workspace;
    int n = ROWS * L->wout, opt = a->ctx->tape_option, r, o, i;
    const uint8_t *mask = (const uint8_t *)a->tape + (opt == 0 ? sizeof(float) * (size_t)n : 0);
    float scale = 1.0f / (1.0f - L->p_drop);
    if (opt == 0) memcpy(dh, a->tape, sizeof(float) * (size_t)n);
    else preact(L, x, dh);
    for (i = 0; i < n; i++) {
        float t = tanhf(dh[i]);
        dh[i] = mask[i] ? g[i] * scale * (1.0f - t * t) : 0.0f;
    }
    for (r = 0; r < ROWS; r++)
        for (o = 0; o < L->wout; o++) {
            L->db[o] += dh[r * L->wout + o];
            for (i = 0; i < L->win; i++) L->dW[o * L->win + i] += dh[r * L->wout + o] * x[r * L->win + i];
        }
    if (gx)
        for (r = 0; r < ROWS; r++)
            for (i = 0; i < L->win; i++) {
                float s = 0;
                for (o = 0; o < L->wout; o++) s += dh[r * L->wout + o] * L->W[o * L->win + i];
                gx[r * L->win + i] = s;
            }
    return CKPT_OK;
}

typedef struct chain_case {
    int n;
    layer layers[MAXN];
    ckpt_stage_desc st[MAXN];
    float x[MAXLANES][ROWS * MAXW], gy[MAXLANES][ROWS * MAXW];
} chain_case;

typedef struct grads { float dW[MAXN][MAXW * MAXW], db[MAXN][MAXW], dx[MAXLANES][ROWS * MAXW]; } grads;

static void make_case(chain_case *c, int n, int options) {
    int i, j, m, w[MAXN + 1];
    memset(c, 0, sizeof *c);
    c->n = n;
    for (i = 0; i <= n; i++) w[i] = rnd_int(2, MAXW);
    for (i = 0; i < n; i++) {
        layer *L = &c->layers[i];
        L->win = w[i]; L->wout = w[i + 1];
        L->p_drop = rnd() % 3 ? 0.25f : 0.0f;
        for (j = 0; j < L->win * L->wout; j++) L->W[j] = rnd_float();
        for (j = 0; j < L->wout; j++) L->b[j] = rnd_float() * 0.1f;
        c->st[i].forward = layer_fwd; c->st[i].backward = layer_bwd; c->st[i].user = L;
        c->st[i].out_bytes = sizeof(float) * ROWS * (size_t)L->wout;
        c->st[i].tape_bytes = tape_bytes(L, 0);
        if (options && rnd_chance(60)) {
            c->st[i].n_tape_options = 1;
            c->st[i].tape_options[0].tape_bytes = tape_bytes(L, 1);
            c->st[i].tape_options[0].bwd_extra = rnd_int(0, 2) * 0.5;
        }
        c->st[i].fwd_workspace_bytes = sizeof(float) * ROWS * (size_t)L->wout;
        c->st[i].bwd_workspace_bytes = sizeof(float) * ROWS * (size_t)L->wout;
        c->st[i].fwd_time = rnd_int(1, 4);
        c->st[i].bwd_time = rnd_int(1, 8) * 0.5;
        c->st[i].flags = options && rnd() % 6 == 0 ? CKPT_STAGE_NO_CHECKPOINT : 0;
    }
    for (m = 0; m < MAXLANES; m++) {
        for (j = 0; j < ROWS * w[0]; j++) c->x[m][j] = rnd_float();
        for (j = 0; j < ROWS * w[n]; j++) c->gy[m][j] = rnd_float();
    }
}

static void zero_grads(chain_case *c) {
    int i;
    for (i = 0; i < c->n; i++) { memset(c->layers[i].dW, 0, sizeof c->layers[i].dW); memset(c->layers[i].db, 0, sizeof c->layers[i].db); }
}

static void read_grads(const chain_case *c, grads *g, float dx[MAXLANES][ROWS * MAXW]) {
    int i;
    memset(g, 0, sizeof *g);
    for (i = 0; i < c->n; i++) {
        memcpy(g->dW[i], c->layers[i].dW, sizeof g->dW[i]);
        memcpy(g->db[i], c->layers[i].db, sizeof g->db[i]);
    }
    memcpy(g->dx, dx, sizeof g->dx);
}

static ckpt_chain *make_chain(chain_case *c, ckpt_backend *be, int lanes, int check) {
    ckpt_chain_desc cd;
    ckpt_chain *ch = NULL;
    ckpt_result r;
    memset(&cd, 0, sizeof cd);
    cd.stages = c->st; cd.n_stages = c->n; cd.backend = be; cd.seed = 99; cd.rng_offset = 5;
    cd.microbatches = lanes; cd.check_recompute = check;
    cd.logger.fn = capture_log;
    r = ckpt_chain_create(&cd, &ch);
    CHECK(r == CKPT_OK, "chain_create: %s", ckpt_result_string(r));
    return ch;
}

/* One step for every lane; grads in g (when non-NULL and the step succeeded). */
static ckpt_result step(ckpt_chain *ch, chain_case *c, int lanes, grads *g) {
    const void *in[MAXLANES], *gout[MAXLANES];
    void *gin[MAXLANES];
    float dx[MAXLANES][ROWS * MAXW];
    ckpt_result r;
    int m;
    memset(dx, 0, sizeof dx);
    for (m = 0; m < lanes; m++) { in[m] = c->x[m]; gout[m] = c->gy[m]; gin[m] = dx[m]; }
    r = ckpt_forward_microbatches(ch, in, NULL);
    if (r == CKPT_OK) r = ckpt_backward_microbatches(ch, gout, gin);
    if (r == CKPT_OK && g) read_grads(c, g, dx);
    return r;
}

/* How often the plan runs F(stage) beyond its first forward, and how often with the tape kept in
   the option of the first forward's (the scratch option when that F keeps no tape). */
static void recomputes(const ckpt_plan *plan, const chain_case *c, int stage, int *any, int *kept_same) {
    const ckpt_op *ops;
    int n_ops, k, seen = 0, first_opt = -1;
    const ckpt_stage_desc *s = &c->st[stage - 1];
    ops = ckpt_plan_ops(plan, &n_ops);
    *any = *kept_same = 0;
    for (k = 0; k < n_ops; k++) {
        int opt;
        if (ops[k].kind != CKPT_OP_F || ops[k].stage != stage) continue;
        opt = ops[k].tape ? ops[k].option : (s->n_tape_options ? 1 : 0);  /* option 1 is the smaller tape */
        if (!seen) { seen = 1; first_opt = opt; continue; }
        (*any)++;
        if (ops[k].tape && opt == first_opt) (*kept_same)++;
    }
}

/* 1. A counter in X[bad] (or in T[bad] alone) at every budget; lanes 1 and 2. */
static void caught(ckpt_backend *be, int tape_only, int lanes) {
    chain_case c;
    ckpt_chain *ch;
    ckpt_plan_desc pd;
    ckpt_plan_info info, sa;
    int bad = 3, caught_plans = 0, clean_plans = 0;
    uint64_t budget;
    make_case(&c, 6, 0);
    c.layers[bad - 1].bad_x = !tape_only;
    c.layers[bad - 1].bad_t = tape_only;
    ch = make_chain(&c, be, lanes, 1);
    if (!ch) return;
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_STORE_ALL;
    CHECK(ckpt_chain_plan(ch, &pd, &sa) == CKPT_OK, "store-all");
    pd.policy = CKPT_POLICY_OPTIMAL;
    pd.budget = 1;
    (void)ckpt_chain_plan_dry(ch, &pd, &info);
    for (budget = info.min_budget; budget <= sa.store_all_peak; budget += CKPT_ALIGN) {
        int any, kept_same, expect;
        ckpt_result r;
        ckpt_chain_stats s0, s1;
        pd.budget = budget;
        if (ckpt_chain_plan(ch, &pd, &info) != CKPT_OK) continue;
        recomputes(ckpt_chain_get_plan(ch), &c, bad, &any, &kept_same);
        expect = tape_only ? kept_same > 0 : any > 0;
        ckpt_chain_get_stats(ch, &s0);
        n_mismatch_logs = 0;
        last_msg[0] = 0;
        zero_grads(&c);
        r = step(ch, &c, lanes, NULL);
        ckpt_chain_get_stats(ch, &s1);
        if (expect) {
            char want[160];
            const layer *L = &c.layers[bad - 1];
            caught_plans++;
            CHECK(r == CKPT_ERR_RECOMPUTE_MISMATCH, "budget %llu: %s, expected a mismatch", (unsigned long long)budget,
                  ckpt_result_string(r));
            CHECK(n_mismatch_logs == 1 && last_item == CKPT_ERR_RECOMPUTE_MISMATCH, "one mismatch logged, %d", n_mismatch_logs);
            snprintf(want, sizeof want, "stage %d (stage %d), microbatch 0: the recomputation wrote %c[%d] with checksum "
                     "0x%016llx, the first forward 0x%016llx", bad - 1, bad - 1, tape_only ? 'T' : 'X', bad,
                     (unsigned long long)L->sum_recomp[0], (unsigned long long)L->sum_first[0]);
            CHECK(strstr(last_msg, want) != NULL, "budget %llu: message '%s' lacks '%s'", (unsigned long long)budget,
                  last_msg, want);
            CHECK(L->sum_recomp[0] != L->sum_first[0], "the callback's checksums differ");
            CHECK(s1.steps == s0.steps && s1.recompute_checks > s0.recompute_checks, "a failed step, checks counted");
            CHECK(strcmp(ckpt_result_string(r), "CKPT_ERR_RECOMPUTE_MISMATCH") == 0 &&
                  strstr(ckpt_result_description(r), "recomputation") != NULL, "result string and description");
        } else {
            clean_plans++;
            CHECK(r == CKPT_OK, "budget %llu: %s (the bad stage is not recomputed%s)", (unsigned long long)budget,
                  ckpt_result_string(r), tape_only ? " with its tape" : "");
            CHECK(s1.steps == s0.steps + 1 && n_mismatch_logs == 0, "a step, no mismatch logged");
        }
    }
    CHECK(caught_plans >= 2 && clean_plans >= 1, "%s, %d lanes: %d plans caught, %d clean", tape_only ? "tape" : "output",
          lanes, caught_plans, clean_plans);
    printf("caught (%s, %d lane%s): %d plans recompute the stage%s and fail, %d do not and pass\n",
           tape_only ? "T[i]" : "X[i]", lanes, lanes > 1 ? "s" : "", caught_plans, tape_only ? " with its tape" : "", clean_plans);
    ckpt_chain_destroy(ch);
}

/* 2. No false alarm on random chains, every policy. */
static void no_false_alarm(ckpt_backend *be) {
    int cases = TEST_REDUCED ? 30 : 150, t, runs = 0, checked_runs = 0;
    uint64_t total_checks = 0;
    for (t = 0; t < cases; t++) {
        static chain_case c;
        grads ref, got;
        ckpt_chain *ch;
        ckpt_plan_desc pd;
        ckpt_plan_info ref_info, info;
        int lanes = rnd_int(1, MAXLANES), p, rep;
        make_case(&c, rnd_int(1, MAXN), 1);
        /* the reference: store-all without the check */
        ch = make_chain(&c, be, lanes, 0);
        if (!ch) return;
        memset(&pd, 0, sizeof pd);
        pd.policy = CKPT_POLICY_STORE_ALL;
        CHECK(ckpt_chain_plan(ch, &pd, &ref_info) == CKPT_OK, "store-all plan");
        zero_grads(&c);
        CHECK(step(ch, &c, lanes, NULL) == CKPT_OK, "reference step 1");
        CHECK(step(ch, &c, lanes, &ref) == CKPT_OK, "reference step 2");
        ckpt_chain_destroy(ch);
        for (p = 0; p < CKPT_POLICY_COUNT_; p++)
            for (rep = 0; rep < (p == CKPT_POLICY_OPTIMAL || p == CKPT_POLICY_OFFLOAD ? 3 : 1); rep++) {
                ckpt_chain_stats s;
                ckpt_result r;
                int recomputed;
                memset(&pd, 0, sizeof pd);
                pd.policy = (ckpt_policy)p;
                pd.budget = ref_info.store_all_peak / 4 + rnd() % (ref_info.store_all_peak + 1);
                if (p == CKPT_POLICY_OFFLOAD) {
                    pd.bandwidth = (double)(4u << rnd_int(0, 10));
                    pd.host_budget = rnd() % 2 ? 0 : ref_info.store_all_peak / (uint64_t)rnd_int(1, 4);
                }
                ch = make_chain(&c, be, lanes, 1);
                if (!ch) return;
                if (ckpt_chain_plan(ch, &pd, &info) != CKPT_OK) { ckpt_chain_destroy(ch); continue; }
                zero_grads(&c);
                r = step(ch, &c, lanes, NULL);
                CHECK(r == CKPT_OK, "case %d policy %s: step 1: %s (%s)", t, ckpt_policy_name(pd.policy),
                      ckpt_result_string(r), last_msg);
                r = step(ch, &c, lanes, &got);
                CHECK(r == CKPT_OK, "case %d policy %s: step 2: %s (%s)", t, ckpt_policy_name(pd.policy),
                      ckpt_result_string(r), last_msg);
                CHECK(memcmp(&got, &ref, sizeof got) == 0, "case %d policy %s budget %llu lanes %d: gradients differ from "
                      "store-all's", t, ckpt_policy_name(pd.policy), (unsigned long long)pd.budget, lanes);
                ckpt_chain_get_stats(ch, &s);
                recomputed = info.n_recomputed;
                CHECK(s.recompute_checks >= 2ull * (uint64_t)recomputed * (uint64_t)lanes,
                      "case %d: %llu checks for %d recomputations x %d lanes x 2 steps", t,
                      (unsigned long long)s.recompute_checks, recomputed, lanes);
                runs++;
                checked_runs += s.recompute_checks > 0;
                total_checks += s.recompute_checks;
                ckpt_chain_destroy(ch);
            }
    }
    CHECK(checked_runs > runs / 4, "%d of %d runs compared anything", checked_runs, runs);
    printf("no false alarm: %d runs (%d with recomputations), %llu buffers compared\n", runs, checked_runs,
           (unsigned long long)total_checks);
}

/* 3. The step after a mismatch. */
static void next_step(ckpt_backend *be) {
    chain_case c;
    ckpt_chain *ch, *ref;
    ckpt_plan_desc pd;
    ckpt_plan_info sa, info;
    grads want, got;
    int bad = 2, any = 0, kept;
    make_case(&c, 5, 0);
    c.layers[bad - 1].bad_x = 1;
    ch = make_chain(&c, be, 1, 1);
    ref = make_chain(&c, be, 1, 0);
    if (!ch || !ref) return;
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_STORE_ALL;
    CHECK(ckpt_chain_plan(ref, &pd, &sa) == CKPT_OK, "store-all");
    /* the plan with the fewest checkpoints that recomputes the bad stage */
    pd.policy = CKPT_POLICY_OPTIMAL;
    pd.budget = 1;
    (void)ckpt_chain_plan_dry(ch, &pd, &info);
    for (pd.budget = info.min_budget; pd.budget < sa.store_all_peak && !any; pd.budget += CKPT_ALIGN)
        if (ckpt_chain_plan(ch, &pd, &info) == CKPT_OK) recomputes(ckpt_chain_get_plan(ch), &c, bad, &any, &kept);
    CHECK(any, "a plan that recomputes stage %d", bad);
    g_frozen = 0;
    zero_grads(&c);
    CHECK(step(ch, &c, 1, NULL) == CKPT_ERR_RECOMPUTE_MISMATCH, "the counter moves: mismatch");
    g_frozen = 1;   /* the counter stops: both chains see the same value from now on */
    zero_grads(&c);
    CHECK(step(ref, &c, 1, &want) == CKPT_OK, "reference step");
    zero_grads(&c);
    CHECK(step(ch, &c, 1, &got) == CKPT_OK, "the step after the mismatch: %s", last_msg);
    CHECK(memcmp(&got, &want, sizeof got) == 0, "the step after the mismatch: gradients differ from store-all's");
    zero_grads(&c);
    CHECK(step(ch, &c, 1, NULL) == CKPT_OK, "and the one after");
    g_frozen = 0;
    ckpt_chain_destroy(ch);
    ckpt_chain_destroy(ref);
}

int main(void) {
    ckpt_backend be;
    if (ckpt_cpu_backend_create(NULL, &be) != CKPT_OK) return 1;
    caught(&be, 0, 1);
    caught(&be, 0, 2);
    caught(&be, 1, 1);
    next_step(&be);
    no_false_alarm(&be);
    ckpt_cpu_backend_destroy(&be);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
