/* Tape options (TAPE OPTIONS in the manual), end to end.

   1. The cost model on a hand-made chain: a kept tape counts its option's bytes, B(i) its
      option's extra time, and F without tape the scratch option (the smallest tape); options out
      of range are rejected.
   2. Bad input: n_tape_options out of 0..3, a negative or NaN bwd_extra, a ckpt_chain_set_times
      bwd_option the stage does not have.
   3. The executor on random chains of real arithmetic layers with dropout, whose four options
      keep (0) the pre-activation and the dropout mask, (1) the mask alone, recomputing the
      pre-activation from the input in backward, (2) the activation and the mask, (3) the mask
      and the activation (option 2's pieces in the other order, so that a backward handed
      another option's layout reads the wrong bytes). For every
      policy at random budgets, and for store-all schedules with each option (and random ones) on
      every kept tape: parameter and input gradients bit-identical to store-all in option 0;
      every backward sees the option its tape was kept in; the tape handed to a callback is as
      large as its option's (the arena's high-water mark within the arena).
   4. ckpt_chain_measure reports the option the B ops ran with, and ckpt_chain_set_times takes
      that option's bwd_extra off the measured backward. */
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"
#include "../backends/ckpt_cpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 48   /* tapes of several CKPT_ALIGN units, so that options 0, 1 and 2 differ in size */
#define MAXN 8
#define MAXW 10

#define TEST_XORSHIFT64_SEED 0x51ED2701A3B2C4D5ull
#include "test_util.h"

/* 1. The cost model by hand. Stage 1: a 256, t 1024, option 1 t 256 (+3 backward), option 2
   t 512 (+1). Stage 2: a 256, t 256. Times f 1, b 2. */
static void cost_model(void) {
    ckpt_cost c[2];
    ckpt_op ops[8];
    double t;
    uint64_t p;
    int bad, k;
    ckpt_result r;
    memset(c, 0, sizeof c);
    c[0].a = 256; c[0].t = 1024; c[0].f = 1; c[0].b = 2;
    c[0].n_options = 2; c[0].option_t[0] = 256; c[0].option_extra[0] = 3; c[0].option_t[1] = 512; c[0].option_extra[1] = 1;
    c[1].a = 256; c[1].t = 256; c[1].f = 1; c[1].b = 2;
    memset(ops, 0, sizeof ops);
    /* store-all: F1+ F2+ B2 B1; the peak is during B2: X1 T1 T2 G1 (G2 is the caller's) */
    for (k = 0; k < 3; k++) {
        ops[0].kind = CKPT_OP_F; ops[0].stage = 1; ops[0].tape = 1; ops[0].option = k;
        ops[1].kind = CKPT_OP_F; ops[1].stage = 2; ops[1].tape = 1;
        ops[2].kind = CKPT_OP_B; ops[2].stage = 2;
        ops[3].kind = CKPT_OP_B; ops[3].stage = 1;
        r = ckpt_schedule_simulate(c, 2, ops, 4, &t, &p, &bad);
        CHECK(r == CKPT_OK, "option %d: %s (op %d)", k, ckpt_result_string(r), bad);
        {
            uint64_t t1 = k == 0 ? 1024 : k == 1 ? 256 : 512;
            double extra = k == 0 ? 0 : k == 1 ? 3 : 1;
            CHECK(p == 256 + t1 + 256 + 256, "option %d: peak %llu, expected %llu", k, (unsigned long long)p,
                  (unsigned long long)(256 + t1 + 256 + 256));
            CHECK(t == 1 + 1 + 2 + 2 + extra, "option %d: time %g, expected %g", k, t, 6 + extra);
        }
    }
    /* F1 without tape runs the scratch option (256 bytes), whatever op.option says; then F2+, and
       F1 again with its tape in option 2 before B1 (X0 is the caller's, so no checkpoint is held):
       F1 F2+ B2 F1+(2) B1. F1's peak: X1 + its scratch tape = 512; F2+: X1 X2 T2 = 768; B2: X1
       T2 G1 = 768; F1+(2): G1 X1 T1 = 256 + 256 + 512 = 1024; B1: T1 G1 = 768. Time 1+1+2+1+3. */
    memset(ops, 0, sizeof ops);
    ops[0].kind = CKPT_OP_F; ops[0].stage = 1; ops[0].option = 0;
    ops[1].kind = CKPT_OP_F; ops[1].stage = 2; ops[1].tape = 1;
    ops[2].kind = CKPT_OP_B; ops[2].stage = 2;
    ops[3].kind = CKPT_OP_F; ops[3].stage = 1; ops[3].tape = 1; ops[3].option = 2;
    ops[4].kind = CKPT_OP_B; ops[4].stage = 1;
    r = ckpt_schedule_simulate(c, 2, ops, 5, &t, &p, &bad);
    CHECK(r == CKPT_OK && p == 1024 && t == 8, "F without tape, then option 2: %s peak %llu time %g", ckpt_result_string(r),
          (unsigned long long)p, t);
    /* the scratch option is the smallest tape: make option 0's the smallest and F1 grows by 64 -> 256 */
    c[0].t = 64;
    ops[3].option = 0;
    r = ckpt_schedule_simulate(c, 2, ops, 5, &t, &p, &bad);
    CHECK(r == CKPT_OK && p == 768 && t == 7, "option 0 smallest: %s peak %llu time %g", ckpt_result_string(r),
          (unsigned long long)p, t);
    /* out of range options */
    ops[3].option = 3;
    r = ckpt_schedule_simulate(c, 2, ops, 5, &t, &p, &bad);
    CHECK(r == CKPT_ERR_BAD_SCHEDULE && bad == 3, "option 3 of a stage with 2: %s at op %d", ckpt_result_string(r), bad);
    ops[3].option = -1;
    r = ckpt_schedule_simulate(c, 2, ops, 5, &t, &p, &bad);
    CHECK(r == CKPT_ERR_BAD_SCHEDULE && bad == 3, "option -1: %s at op %d", ckpt_result_string(r), bad);
    ops[3].option = 2;
    ops[0].option = 7;   /* ignored without tape */
    r = ckpt_schedule_simulate(c, 2, ops, 5, &t, &p, &bad);
    CHECK(r == CKPT_OK, "F without tape ignores its option: %s", ckpt_result_string(r));
    /* 2. bad costs */
    c[0].n_options = 4;
    CHECK(ckpt_schedule_simulate(c, 2, ops, 5, &t, &p, &bad) == CKPT_ERR_BAD_ARGUMENT, "4 extra options accepted");
    c[0].n_options = -1;
    CHECK(ckpt_schedule_simulate(c, 2, ops, 5, &t, &p, &bad) == CKPT_ERR_BAD_ARGUMENT, "-1 options accepted");
    c[0].n_options = 2; c[0].option_extra[1] = -1;
    CHECK(ckpt_schedule_simulate(c, 2, ops, 5, &t, &p, &bad) == CKPT_ERR_BAD_TIME, "negative bwd_extra accepted");
    c[0].option_extra[1] = NAN;
    CHECK(ckpt_schedule_simulate(c, 2, ops, 5, &t, &p, &bad) == CKPT_ERR_BAD_TIME, "NaN bwd_extra accepted");
    c[0].option_extra[1] = 1e308;
    {
        ckpt_plan *plan = NULL;
        CHECK(ckpt_plan_create(c, 2, NULL, &plan, NULL) == CKPT_ERR_BAD_TIME, "bwd_extra 1e308 accepted");
        ckpt_plan_destroy(plan);
    }
}

/* 3. Layers: y = dropout(tanh(x W^T + b)). */
typedef struct layer {
    int win, wout;
    float p_drop;
    float W[MAXW * MAXW], b[MAXW];
    float dW[MAXW * MAXW], db[MAXW];
    int kept_option;            /* option of the last F that kept its tape */
    int option_mismatch;        /* backwards that saw another option than that */
    int runs[CKPT_MAX_TAPE_OPTIONS];   /* F ops that kept a tape in each option */
} layer;

/* Option 0: h then the mask; 1: the mask; 2: tanh(h) then the mask; 3: the mask then tanh(h).
   MASK(option) is the mask's entry, VALS(option) the other's. */
#define MASK(option) ((option) == 3 ? 0 : 1)
#define VALS(option) (1 - MASK(option))
static size_t tape_layout(const layer *L, int option, ckpt_layout_entry e[2]) {
    size_t total = 0, n = (size_t)ROWS * (size_t)L->wout;
    e[VALS(option)].bytes = option == 1 ? 0 : sizeof(float) * n; e[VALS(option)].align = 16;
    e[MASK(option)].bytes = n; e[MASK(option)].align = 16;
    ckpt_layout_compute(e, 2, &total);
    return total;
}

static void pre_activation(const layer *L, const float *x, float *h) {
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
    float *y = (float *)a->out, *h = (float *)a->workspace;   /* workspace: ROWS * wout floats */
    int opt = a->ctx->tape_option, i, n = ROWS * L->wout;
    ckpt_layout_entry e[2];
    ckpt_philox ph;
    uint8_t *mask;
    ckpt_result res;
    tape_layout(L, opt, e);
    mask = (uint8_t *)ckpt_layout_ptr(a->tape, e, MASK(opt));
    if ((res = ckpt_ctx_rng(a->ctx, (uint64_t)(n + 3) / 4, &ph)) != CKPT_OK) return res;
    pre_activation(L, (const float *)a->in, h);
    for (i = 0; i < n; i++) y[i] = tanhf(h[i]);
    if (opt == 0) memcpy(ckpt_layout_ptr(a->tape, e, VALS(opt)), h, sizeof(float) * (size_t)n);
    if (opt >= 2) memcpy(ckpt_layout_ptr(a->tape, e, VALS(opt)), y, sizeof(float) * (size_t)n);
    ckpt_philox_dropout(&ph, L->p_drop, y, y, mask, (size_t)n);
    if (a->ctx->keep_tape) { L->kept_option = opt; L->runs[opt]++; }
    return CKPT_OK;
}

static ckpt_result layer_bwd(const ckpt_bwd_args *a) {
    layer *L = (layer *)a->ctx->user;
    const float *x = (const float *)a->in, *g = (const float *)a->grad_out;
    float *gx = (float *)a->grad_in, *dh = (float *)a->workspace, *h = dh + ROWS * MAXW;
    int opt = a->ctx->tape_option, r, o, i;
    ckpt_layout_entry e[2];
    const uint8_t *mask;
    float scale = 1.0f / (1.0f - L->p_drop);
    void *tape = (void *)(uintptr_t)a->tape;
    if (opt != L->kept_option) L->option_mismatch++;
    tape_layout(L, opt, e);
    mask = (const uint8_t *)ckpt_layout_ptr(tape, e, MASK(opt));
    if (opt == 1) pre_activation(L, x, h);                 /* what option 1 left out */
    for (i = 0; i < ROWS * L->wout; i++) {
        const float *vals = (const float *)ckpt_layout_ptr(tape, e, VALS(opt));
        float t = opt >= 2 ? vals[i] : tanhf(opt == 1 ? h[i] : vals[i]);
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
    float x[ROWS * MAXW], gy[ROWS * MAXW];
} chain_case;

typedef struct grads { float dW[MAXN][MAXW * MAXW], db[MAXN][MAXW], dx[ROWS * MAXW]; } grads;

static void make_case(chain_case *c) {
    int i, j, w[MAXN + 1];
    memset(c, 0, sizeof *c);
    c->n = rnd_int(1, MAXN);
    for (i = 0; i <= c->n; i++) w[i] = rnd_int(1, MAXW);
    for (i = 0; i < c->n; i++) {
        layer *L = &c->layers[i];
        ckpt_layout_entry e[2];
        ckpt_stage_desc *s = &c->st[i];
        L->win = w[i]; L->wout = w[i + 1];
        L->p_drop = rnd_chance(60) ? 0.25f : 0.0f;
        for (j = 0; j < L->win * L->wout; j++) L->W[j] = rnd_float();
        for (j = 0; j < L->wout; j++) L->b[j] = rnd_float() * 0.1f;
        s->forward = layer_fwd; s->backward = layer_bwd; s->user = L;
        s->out_bytes = sizeof(float) * ROWS * (size_t)L->wout;
        s->tape_bytes = tape_layout(L, 0, e);
        s->n_tape_options = rnd_chance(80) ? rnd_int(2, 3) : rnd_int(0, 1);
        for (j = 1; j <= s->n_tape_options; j++) {   /* options 2 and 3: the same bytes; either may cost less */
            s->tape_options[j - 1].tape_bytes = tape_layout(L, j, e);
            s->tape_options[j - 1].bwd_extra = j == 1 ? rnd_int(0, 4) * 0.5 : rnd_int(0, 1) * 0.5;
        }
        s->fwd_workspace_bytes = sizeof(float) * ROWS * MAXW;
        s->bwd_workspace_bytes = 2 * sizeof(float) * ROWS * MAXW;
        s->fwd_time = rnd_int(1, 4);
        s->bwd_time = rnd_int(1, 8) * 0.5;
        s->flags = rnd_chance(15) ? CKPT_STAGE_NO_CHECKPOINT : 0;
    }
    for (j = 0; j < ROWS * w[0]; j++) c->x[j] = rnd_float();
    for (j = 0; j < ROWS * w[c->n]; j++) c->gy[j] = rnd_float();
}

static int option_plans, option_tapes;   /* plans that kept a tape in an option other than 0 */
static int option3_tapes;                /* tapes the plans kept in option 3 */
static int option3_schedules;            /* store-all schedules that kept some tape in option 3 */

/* The executor's profiler labels: "F3+/1 name" names a tape kept in option 1. */
static int label_options, label_option_sum;
static void label_push(void *state, const char *label) {
    const char *p = strstr(label, "+/");
    (void)state;
    if (label[0] == 'F' && p) { label_options++; label_option_sum += atoi(p + 2); }
}
static void label_pop(void *state) { (void)state; }

/* Two steps under a plan (pd) or a schedule (ops); 0 when planning was infeasible. */
static int run(chain_case *c, const ckpt_plan_desc *pd, const ckpt_op *ops, int n_ops, grads *g, ckpt_backend *be,
               const char *what) {
    ckpt_chain_desc cd;
    ckpt_chain *ch = NULL;
    ckpt_plan_info info;
    ckpt_chain_stats stats = {0};
    ckpt_result r;
    int i, o, step, mism = 0, ran[CKPT_MAX_TAPE_OPTIONS] = {0};
    memset(&cd, 0, sizeof cd);
    cd.stages = c->st; cd.n_stages = c->n; cd.backend = be; cd.seed = 99;
    for (i = 0; i < c->n; i++) {
        layer *L = &c->layers[i];
        memset(L->dW, 0, sizeof L->dW); memset(L->db, 0, sizeof L->db);
        L->kept_option = -1; L->option_mismatch = 0;
        memset(L->runs, 0, sizeof L->runs);
    }
    r = ckpt_chain_create(&cd, &ch);
    CHECK(r == CKPT_OK, "%s: chain_create: %s", what, ckpt_result_string(r));
    if (r != CKPT_OK) return 0;
    r = ops ? ckpt_chain_set_schedule(ch, ops, n_ops, &info) : ckpt_chain_plan(ch, pd, &info);
    if (r == CKPT_ERR_INFEASIBLE) { ckpt_chain_destroy(ch); return 0; }
    CHECK(r == CKPT_OK, "%s: plan: %s", what, ckpt_result_string(r));
    if (r != CKPT_OK) { ckpt_chain_destroy(ch); return 0; }
    memset(g, 0, sizeof *g);
    label_options = label_option_sum = 0;
    for (step = 0; step < 2; step++) {
        const void *out = NULL;
        r = ckpt_forward(ch, c->x, &out);
        CHECK(r == CKPT_OK, "%s: forward: %s", what, ckpt_result_string(r));
        r = ckpt_backward(ch, c->gy, g->dx);
        CHECK(r == CKPT_OK, "%s: backward: %s", what, ckpt_result_string(r));
    }
    for (i = 0; i < c->n; i++) {
        memcpy(g->dW[i], c->layers[i].dW, sizeof g->dW[i]);
        memcpy(g->db[i], c->layers[i].db, sizeof g->db[i]);
        mism += c->layers[i].option_mismatch;
        for (o = 0; o < CKPT_MAX_TAPE_OPTIONS; o++) ran[o] += c->layers[i].runs[o];
    }
    CHECK(mism == 0, "%s: %d backwards saw another option than their tape's", what, mism);
    ckpt_chain_get_stats(ch, &stats);
    CHECK(stats.arena_high_water <= stats.arena_bytes && (ops || stats.arena_bytes == info.arena) &&
          (!pd || !pd->budget || info.arena <= pd->budget),
          "%s: high water %llu, arena %llu (planned %llu)", what, (unsigned long long)stats.arena_high_water,
          (unsigned long long)stats.arena_bytes, (unsigned long long)info.arena);
    {   /* the plan's options, as its ops say, are what the callbacks ran */
        int n_plan_ops, k, nz = 0, sum = 0, planned[CKPT_MAX_TAPE_OPTIONS] = {0};
        const ckpt_op *po = ckpt_plan_ops(ckpt_chain_get_plan(ch), &n_plan_ops);
        for (k = 0; k < n_plan_ops; k++)
            if (po[k].kind == CKPT_OP_F && po[k].tape) {
                planned[po[k].option]++;
                if (po[k].option != 0) { nz++; sum += po[k].option; }
            }
        for (k = 0; k < CKPT_MAX_TAPE_OPTIONS; k++)   /* each option on its own: options 2 and 3 have one size */
            CHECK(2 * planned[k] == ran[k], "%s: %d kept tapes in option %d per step planned, %d run in 2 steps", what,
                  planned[k], k, ran[k]);
        if (pd) option3_tapes += planned[3];
        else option3_schedules += planned[3] > 0;
        CHECK(label_options == 2 * nz && label_option_sum == 2 * sum,
              "%s: profiler labels name %d option tapes (options summing to %d) in 2 steps, the plan %d per step (%d)",
              what, label_options, label_option_sum, nz, sum);
        if (pd && nz) { option_plans++; option_tapes += nz; }
    }
    ckpt_chain_destroy(ch);
    return 1;
}

static void executor(void) {
    ckpt_backend be;
    ckpt_cpu_stats bs = {0};
    int ci, cases = TEST_REDUCED ? 25 : 80, plans = 0, schedules = 0;
    const ckpt_policy policies[] = {CKPT_POLICY_OPTIMAL, CKPT_POLICY_STORE_ALL, CKPT_POLICY_EVERY_K,
                                    CKPT_POLICY_SQRT, CKPT_POLICY_GREEDY, CKPT_POLICY_OFFLOAD};
    if (ckpt_cpu_backend_create(NULL, &be) != CKPT_OK) { CHECK(0, "cpu backend"); return; }
    be.range_push = label_push;     /* the CPU backend has none */
    be.range_pop = label_pop;
    for (ci = 0; ci < cases; ci++) {
        static chain_case c;
        static grads ref, got;
        ckpt_op ops[2 * MAXN];
        ckpt_plan_desc pd;
        ckpt_plan_info info;
        int k, i, bi, pi;
        char what[96];
        make_case(&c);
        /* the reference: store-all, every tape in option 0 */
        memset(ops, 0, sizeof ops);
        for (i = 0; i < c.n; i++) { ops[i].kind = CKPT_OP_F; ops[i].stage = i + 1; ops[i].tape = 1; }
        for (i = 0; i < c.n; i++) { ops[c.n + i].kind = CKPT_OP_B; ops[c.n + i].stage = c.n - i; }
        if (!run(&c, NULL, ops, 2 * c.n, &ref, &be, "store-all option 0")) continue;
        /* store-all with option k on every stage that has it, then random options */
        for (k = 1; k <= 4; k++) {
            for (i = 0; i < c.n; i++)
                ops[i].option = k == 4 ? rnd_int(0, c.st[i].n_tape_options) : (k <= c.st[i].n_tape_options ? k : 0);
            if (k == 4) snprintf(what, sizeof what, "case %d: store-all, options random", ci);
            else snprintf(what, sizeof what, "case %d: store-all, option %d", ci, k);
            if (run(&c, NULL, ops, 2 * c.n, &got, &be, what)) {
                schedules++;
                CHECK(memcmp(&got, &ref, sizeof got) == 0, "%s: gradients differ from option 0's", what);
            }
        }
        /* every policy at random budgets */
        memset(&pd, 0, sizeof pd);
        pd.policy = CKPT_POLICY_STORE_ALL;
        {
            ckpt_chain_desc cd;
            ckpt_chain *ch = NULL;
            memset(&cd, 0, sizeof cd);
            cd.stages = c.st; cd.n_stages = c.n; cd.backend = &be;
            if (ckpt_chain_create(&cd, &ch) != CKPT_OK || ckpt_chain_plan_dry(ch, &pd, &info) != CKPT_OK) {
                CHECK(0, "case %d: dry store-all plan", ci);
                ckpt_chain_destroy(ch);
                continue;
            }
            ckpt_chain_destroy(ch);
        }
        for (bi = 0; bi < 3; bi++) {
            uint64_t lo = info.store_all_peak / 4, budget = lo + rnd() % (info.store_all_peak - lo + 1);
            for (pi = 0; pi < (int)(sizeof policies / sizeof policies[0]); pi++) {
                memset(&pd, 0, sizeof pd);
                pd.policy = policies[pi];
                pd.budget = budget;
                if (pd.policy == CKPT_POLICY_OFFLOAD) pd.bandwidth = (double)(64u << rnd_int(0, 8));
                snprintf(what, sizeof what, "case %d: %s at %llu", ci, ckpt_policy_name(pd.policy),
                         (unsigned long long)budget);
                if (run(&c, &pd, NULL, 0, &got, &be, what)) {
                    plans++;
                    CHECK(memcmp(&got, &ref, sizeof got) == 0, "%s: gradients differ from store-all's", what);
                }
            }
        }
    }
    ckpt_cpu_get_stats(&be, &bs);
    CHECK(bs.live_allocations == 0, "backend still holds %llu allocations", (unsigned long long)bs.live_allocations);
    ckpt_cpu_backend_destroy(&be);
    printf("test_options: %d chains: %d schedules with options 1, 2, 3 and random, %d plans (%d of them keep %d tapes "
           "in options 1..3; %d in option 3); %d schedules kept tapes in option 3\n", cases, schedules, plans, option_plans,
           option_tapes, option3_tapes, option3_schedules);
    CHECK(option3_tapes > 0 && option3_schedules > 0, "no plan (%d) or no schedule (%d) kept a tape in option 3",
          option3_tapes, option3_schedules);
    CHECK(option_plans * 20 >= plans, "only %d of %d plans use an option other than 0", option_plans, plans);
}

/* 2 and 4: chain-level errors, measure and set_times. */
static void chain_api(void) {
    static chain_case c;
    ckpt_backend be;
    ckpt_chain_desc cd;
    ckpt_chain *ch = NULL;
    ckpt_stage_time times[MAXN];
    ckpt_op ops[2 * MAXN];
    ckpt_plan_desc pd;
    ckpt_plan_info info;
    ckpt_result r;
    int i;
    if (ckpt_cpu_backend_create(NULL, &be) != CKPT_OK) { CHECK(0, "cpu backend"); return; }
    do make_case(&c); while (c.n < 2 || c.st[0].n_tape_options < 2);
    memset(&cd, 0, sizeof cd);
    cd.stages = c.st; cd.n_stages = c.n; cd.backend = &be;
    c.st[0].n_tape_options = 4;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_ERR_BAD_ARGUMENT && !ch, "n_tape_options 4 accepted");
    c.st[0].n_tape_options = -1;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_ERR_BAD_ARGUMENT && !ch, "n_tape_options -1 accepted");
    c.st[0].n_tape_options = 2;
    c.st[0].tape_options[1].bwd_extra = -0.5;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_ERR_BAD_TIME && !ch, "bwd_extra -0.5 accepted");
    c.st[0].tape_options[1].bwd_extra = 0;
    c.st[0].tape_options[0].bwd_extra = 3.0;
    r = ckpt_chain_create(&cd, &ch);
    CHECK(r == CKPT_OK, "chain_create: %s", ckpt_result_string(r));
    if (r != CKPT_OK) { ckpt_cpu_backend_destroy(&be); return; }
    /* a schedule naming an option stage 1 lacks */
    memset(ops, 0, sizeof ops);
    for (i = 0; i < c.n; i++) { ops[i].kind = CKPT_OP_F; ops[i].stage = i + 1; ops[i].tape = 1; }
    for (i = 0; i < c.n; i++) { ops[c.n + i].kind = CKPT_OP_B; ops[c.n + i].stage = c.n - i; }
    ops[0].option = 3;
    CHECK(ckpt_chain_set_schedule(ch, ops, 2 * c.n, &info) == CKPT_ERR_BAD_SCHEDULE, "option 3 of stage 1 accepted");
    /* measure under store-all with stage 1 in option 1: its B ran in option 1 */
    ops[0].option = 1;
    r = ckpt_chain_set_schedule(ch, ops, 2 * c.n, &info);
    CHECK(r == CKPT_OK, "set_schedule: %s", ckpt_result_string(r));
    r = ckpt_chain_measure(ch, c.x, c.gy, NULL, 2, times);
    CHECK(r == CKPT_OK, "measure: %s", ckpt_result_string(r));
    CHECK(times[0].bwd_option == 1 && (c.n < 2 || times[1].bwd_option == 0), "bwd_option %d, %d: expected 1, 0",
          times[0].bwd_option, c.n < 2 ? 0 : times[1].bwd_option);
    /* set_times: stage 1's backward of 10 in option 1 (extra 3) is a base of 7; store-all runs
       option 0, so its time is the sum of the forwards and the bases */
    for (i = 0; i < c.n; i++) { times[i].fwd_time = 1.0; times[i].bwd_time = 2.0; times[i].bwd_option = 0; }
    times[0].bwd_time = 10.0; times[0].bwd_option = 1;
    r = ckpt_chain_set_times(ch, times);
    CHECK(r == CKPT_OK, "set_times: %s", ckpt_result_string(r));
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_STORE_ALL;
    r = ckpt_chain_plan_dry(ch, &pd, &info);
    CHECK(r == CKPT_OK && info.store_all_time == c.n * 1.0 + 7.0 + (c.n - 1) * 2.0,
          "store-all time %g after set_times, expected %g", info.store_all_time, c.n * 1.0 + 7.0 + (c.n - 1) * 2.0);
    times[0].bwd_time = 2.0;   /* below the extra: a base of 0 */
    CHECK(ckpt_chain_set_times(ch, times) == CKPT_OK && ckpt_chain_plan_dry(ch, &pd, &info) == CKPT_OK &&
          info.store_all_time == c.n * 1.0 + (c.n - 1) * 2.0, "store-all time %g with a base of 0", info.store_all_time);
    times[0].bwd_option = 3;
    CHECK(ckpt_chain_set_times(ch, times) == CKPT_ERR_BAD_ARGUMENT, "bwd_option 3 accepted");
    times[0].bwd_option = -1;
    CHECK(ckpt_chain_set_times(ch, times) == CKPT_ERR_BAD_ARGUMENT, "bwd_option -1 accepted");
    /* evaluation runs the scratch option */
    {
        const void *out = NULL;
        r = ckpt_forward_eval(ch, c.x, &out, CKPT_EVAL_RNG);
        CHECK(r == CKPT_OK && out, "forward_eval: %s", ckpt_result_string(r));
    }
    ckpt_chain_destroy(ch);
    ckpt_cpu_backend_destroy(&be);
}

/* 5. Long chains (the long-chain program at each of its levels): with options, optimal plans
   within the budget, never slower than the same chain without options (whose schedules it can
   all run, each F without tape in a tape no larger), and feasible wherever it is without.
   (min_budget may be larger with options: it is the arena of the smallest-peak plan, and that
   plan's layout can need more than another's.) */
static void long_chains(void) {
    static const int lens[] = {12, 30, 70};
    int li, rep_, cases = 0, faster = 0;
    for (li = 0; li < 3; li++)
        for (rep_ = 0; rep_ < (TEST_REDUCED ? 1 : 3); rep_++) {
            static ckpt_cost c[70], c0[70];
            int n = lens[li], i, j, bi;
            ckpt_plan_info sa;
            ckpt_plan *plan = NULL;
            ckpt_plan_desc pd;
            memset(c, 0, sizeof c);
            for (i = 0; i < n; i++) {
                c[i].a = (uint64_t)rnd_int(1, 20) * CKPT_ALIGN;
                c[i].t = (uint64_t)rnd_int(1, 40) * CKPT_ALIGN;
                c[i].f = rnd_int(1, 10); c[i].b = rnd_int(1, 10);
                if (rnd_chance(60)) {
                    c[i].n_options = rnd_int(1, 3);
                    for (j = 0; j < c[i].n_options; j++) {
                        c[i].option_t[j] = (uint64_t)rnd_int(0, (int)(c[i].t / CKPT_ALIGN)) * CKPT_ALIGN;
                        c[i].option_extra[j] = rnd_int(0, 4);
                    }
                }
            }
            memcpy(c0, c, sizeof c);
            for (i = 0; i < n; i++) c0[i].n_options = 0;
            memset(&pd, 0, sizeof pd);
            pd.policy = CKPT_POLICY_STORE_ALL;
            if (ckpt_plan_create(c0, n, &pd, &plan, &sa) != CKPT_OK) { CHECK(0, "store-all of %d stages", n); continue; }
            ckpt_plan_destroy(plan);
            for (bi = 1; bi <= 3; bi++) {
                ckpt_plan_info w = {0}, wo = {0};
                ckpt_plan *p0 = NULL, *p1 = NULL;
                ckpt_result r0, r1;
                memset(&pd, 0, sizeof pd);
                pd.budget = sa.store_all_peak * (uint64_t)bi / 5;
                r0 = ckpt_plan_create(c0, n, &pd, &p0, &wo);
                r1 = ckpt_plan_create(c, n, &pd, &p1, &w);
                CHECK(r0 != CKPT_OK || r1 == CKPT_OK, "%d stages at %llu: %s with options, OK without", n,
                      (unsigned long long)pd.budget, ckpt_result_string(r1));
                if (r1 == CKPT_OK) {
                    const ckpt_op *ops;
                    int n_ops;
                    double t = -1;
                    uint64_t p = 0;
                    ops = ckpt_plan_ops(p1, &n_ops);
                    CHECK(ckpt_schedule_simulate(c, n, ops, n_ops, &t, &p, NULL) == CKPT_OK && t == w.time && p == w.peak &&
                          w.arena <= pd.budget, "%d stages: the plan replays as time %g peak %llu (info %g, %llu)", n, t,
                          (unsigned long long)p, w.time, (unsigned long long)w.peak);
                    cases++;
                }
                if (r0 == CKPT_OK && r1 == CKPT_OK) {
                    CHECK(w.time <= wo.time, "%d stages at %llu: %g with options, %g without", n,
                          (unsigned long long)pd.budget, w.time, wo.time);
                    faster += w.time < wo.time;
                }
                ckpt_plan_destroy(p0); ckpt_plan_destroy(p1);
            }
        }
    printf("test_options: long chains: %d plans, %d faster than without options\n", cases, faster);
    CHECK(faster > 0, "options never made a long chain faster");
}

int main(void) {
    cost_model();
    long_chains();
    chain_api();
    executor();
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
