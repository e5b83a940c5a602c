/* Error paths: every invalid argument gets its own code and a message naming what is wrong;
   infeasible budgets; failing callbacks in forward and backward followed by a clean step; every
   injected host or backend allocation failure returns an error and leaks nothing. */
/* Every allocation the library makes without a desc allocator is counted: with one, none may. */
#include <stdlib.h>
static long default_allocs = 0;
#define CKPT_MALLOC(sz, u) ((void)(u), default_allocs++, malloc(sz))
#define CKPT_FREE(p, u) ((void)(u), free(p))
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"
#include "../backends/ckpt_cpu.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_XORSHIFT64_SEED 0x9e3779b97f4a7c15ull
#include "test_util.h"

/* A logger that keeps the last item and message. */
static ckpt_result last_item;
static char last_msg[512];
static int log_count;
static void capture(const char *tag, ckpt_log_level level, ckpt_result item, const char *message, const char *file,
                    int line, void *user) {
    (void)tag; (void)level; (void)file; (void)line; (void)user;
    last_item = item;
    snprintf(last_msg, sizeof last_msg, "%s", message);
    log_count++;
}
static void clear_log(void) { last_item = CKPT_OK; last_msg[0] = 0; log_count = 0; }

/* A counting host allocator that can fail its n-th allocation. */
static long live_host = 0, host_calls = 0, fail_host_at = 0;
static size_t max_host_request = 0;     /* larger requests fail (0: none do) */
static void *count_alloc(size_t n, void *u) {
    (void)u;
    if (++host_calls == fail_host_at || (max_host_request && n > max_host_request)) return NULL;
    live_host++;
    return malloc(n);
}
static void count_free(void *p, void *u) { (void)u; if (p) { live_host--; free(p); } }

/* stages: y = 2x (+ step-dependent offset when told to fail) over 4 floats; a parameter gradient
   accumulates sum(g * x) */
static int fail_fwd_stage = -1, fail_bwd_stage = -1;
static float pgrad[8];
static ckpt_result fwd(const ckpt_fwd_args *a) {
    const float *x = (const float *)a->in;
    float *y = (float *)a->out, *t = (float *)a->tape;
    int i;
    if (a->ctx->stage == fail_fwd_stage) return CKPT_ERR_BACKEND;
    for (i = 0; i < 4; i++) { y[i] = 2.0f * x[i] + 0.5f; t[i] = x[i]; }
    return CKPT_OK;
}
static ckpt_result bwd(const ckpt_bwd_args *a) {
    const float *g = (const float *)a->grad_out, *t = (const float *)a->tape;
    float *gi = (float *)a->grad_in;
    int i;
    if (a->ctx->stage == fail_bwd_stage) return (ckpt_result)-12345;
    for (i = 0; i < 4; i++) { pgrad[a->ctx->stage] += g[i] * t[i]; if (gi) gi[i] = 2.0f * g[i]; }
    return CKPT_OK;
}

#define N 6
static ckpt_stage_desc st[N];
static void init_stages(void) {
    int i;
    memset(st, 0, sizeof st);
    for (i = 0; i < N; i++) {
        st[i].forward = fwd; st[i].backward = bwd; st[i].out_bytes = 16; st[i].tape_bytes = 16;
        st[i].fwd_time = 1; st[i].bwd_time = 2;
    }
}
static void base_desc(ckpt_chain_desc *cd, ckpt_backend *be) {
    memset(cd, 0, sizeof *cd);
    cd->stages = st; cd->n_stages = N; cd->backend = be; cd->logger.fn = capture;
}

#define EXPECT_CREATE(code, needle) do { \
        ckpt_chain *ch_ = (ckpt_chain *)&ch_; clear_log(); \
        r = ckpt_chain_create(&cd, &ch_); \
        CHECK(r == (code) && ch_ == NULL, "create: want %s got %s", ckpt_result_string(code), ckpt_result_string(r)); \
        CHECK((needle)[0] == 0 || strstr(last_msg, (needle)) != NULL, "message '%s' lacks '%s'", last_msg, (needle)); \
        ckpt_chain_destroy(ch_); } while (0)

static void invalid_arguments(ckpt_backend *be) {
    ckpt_chain_desc cd;
    ckpt_backend bad;
    ckpt_result r;
    ckpt_chain *ch;
    double nan_v = nan("");
    CHECK(ckpt_chain_create(NULL, &ch) == CKPT_ERR_NULL_ARGUMENT, "NULL desc");
    base_desc(&cd, be);
    CHECK(ckpt_chain_create(&cd, NULL) == CKPT_ERR_NULL_ARGUMENT, "NULL out");
    cd.stages = NULL; EXPECT_CREATE(CKPT_ERR_NULL_ARGUMENT, "ckpt_chain_desc.stages");
    base_desc(&cd, be); cd.n_stages = 0; EXPECT_CREATE(CKPT_ERR_NO_STAGES, "n_stages");
    base_desc(&cd, be); cd.n_stages = CKPT_MAX_STAGES + 1; EXPECT_CREATE(CKPT_ERR_TOO_MANY_STAGES, "CKPT_MAX_STAGES");
    base_desc(&cd, be); cd.backend = NULL; EXPECT_CREATE(CKPT_ERR_NULL_ARGUMENT, "ckpt_chain_desc.backend");
    bad = *be; bad.alloc = NULL;
    base_desc(&cd, &bad); EXPECT_CREATE(CKPT_ERR_BAD_BACKEND, "alloc and free");
    base_desc(&cd, be); st[3].backward = NULL; EXPECT_CREATE(CKPT_ERR_MISSING_CALLBACK, "stages[3]"); init_stages();
    base_desc(&cd, be); st[2].fwd_time = -1; EXPECT_CREATE(CKPT_ERR_BAD_TIME, "stage 2"); init_stages();
    base_desc(&cd, be); st[1].bwd_time = nan_v; EXPECT_CREATE(CKPT_ERR_BAD_TIME, "stage 1"); init_stages();
    base_desc(&cd, be); st[4].flags = 0x80; EXPECT_CREATE(CKPT_ERR_BAD_FLAGS, "stage 4"); init_stages();
    base_desc(&cd, be); st[0].out_bytes = (size_t)1 << 60; EXPECT_CREATE(CKPT_ERR_SIZE_OVERFLOW, "2^56"); init_stages();
    base_desc(&cd, be); cd.rng_hooks.state_bytes = 8; EXPECT_CREATE(CKPT_ERR_BAD_RNG_HOOKS, "rng_hooks");
    base_desc(&cd, be); cd.allocator.alloc = count_alloc; EXPECT_CREATE(CKPT_ERR_NULL_ARGUMENT, "allocator");

    /* planning and calls out of order */
    base_desc(&cd, be);
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_OK, "valid create");
    {
        ckpt_plan_desc pd;
        float x[4] = {1, 2, 3, 4}, g[4] = {1, 1, 1, 1};
        ckpt_op ops[3];
        memset(&pd, 0, sizeof pd);
        clear_log();
        r = ckpt_forward(ch, x, NULL);
        CHECK(r == CKPT_ERR_NO_PLAN && strstr(last_msg, "ckpt_chain_plan"), "forward without plan: %s '%s'", ckpt_result_string(r), last_msg);
        CHECK(ckpt_backward(ch, g, NULL) == CKPT_ERR_NO_PLAN, "backward without plan");
        pd.policy = (ckpt_policy)42; clear_log();
        CHECK(ckpt_chain_plan(ch, &pd, NULL) == CKPT_ERR_BAD_POLICY && strstr(last_msg, "policy"), "bad policy '%s'", last_msg);
        pd.policy = CKPT_POLICY_EVERY_K; pd.k = -1; clear_log();
        CHECK(ckpt_chain_plan(ch, &pd, NULL) == CKPT_ERR_BAD_K && strstr(last_msg, "ckpt_plan_desc.k"), "k < 0 '%s'", last_msg);
        pd.k = N + 1;
        CHECK(ckpt_chain_plan(ch, &pd, NULL) == CKPT_ERR_BAD_K, "k > n");
        ops[0].kind = CKPT_OP_B; ops[0].stage = 1; ops[0].tape = 0; ops[0].option = 0;
        CHECK(ckpt_chain_set_schedule(ch, ops, 1, NULL) == CKPT_ERR_BAD_SCHEDULE, "invalid schedule");
        CHECK(ckpt_chain_set_schedule(ch, ops, -1, NULL) == CKPT_ERR_BAD_INDEX, "negative n_ops");
        /* over CKPT_MAX_OPS: CKPT_ERR_BAD_ARGUMENT before anything is allocated for the ops (op 0 is a
           bad op: a replay would stop there with CKPT_ERR_BAD_SCHEDULE) */
        clear_log();
        r = ckpt_chain_set_schedule(ch, ops, CKPT_MAX_OPS + 1, NULL);
        CHECK(r == CKPT_ERR_BAD_ARGUMENT && strstr(last_msg, "CKPT_MAX_OPS"), "n_ops over CKPT_MAX_OPS: %s '%s'",
              ckpt_result_string(r), last_msg);
        {   /* CKPT_MAX_OPS itself passes the count: then the analysis's arrays (GBs) are refused */
            ckpt_chain *ch2 = NULL;
            ckpt_chain_desc cd2;
            long live0 = live_host;
            base_desc(&cd2, be); cd2.allocator.alloc = count_alloc; cd2.allocator.free = count_free;
            CHECK(ckpt_chain_create(&cd2, &ch2) == CKPT_OK, "chain with a capped allocator");
            max_host_request = (size_t)1 << 28;
            r = ckpt_chain_set_schedule(ch2, ops, CKPT_MAX_OPS, NULL);
            max_host_request = 0;
            CHECK(r == CKPT_ERR_OUT_OF_HOST_MEMORY, "n_ops = CKPT_MAX_OPS: %s", ckpt_result_string(r));
            ckpt_chain_destroy(ch2);
            CHECK(live_host == live0, "n_ops = CKPT_MAX_OPS: %ld host blocks left", live_host - live0);
        }
        pd.policy = CKPT_POLICY_OPTIMAL; pd.k = 0;
        CHECK(ckpt_chain_plan(ch, &pd, NULL) == CKPT_OK, "valid plan");
        clear_log();
        r = ckpt_backward(ch, g, NULL);
        CHECK(r == CKPT_ERR_OUT_OF_ORDER && strstr(last_msg, "ckpt_forward"), "backward before forward: %s", ckpt_result_string(r));
        CHECK(ckpt_forward(ch, x, NULL) == CKPT_OK, "forward");
        clear_log();
        r = ckpt_forward(ch, x, NULL);
        CHECK(r == CKPT_ERR_OUT_OF_ORDER && strstr(last_msg, "ckpt_backward"), "forward twice: %s", ckpt_result_string(r));
        CHECK(ckpt_chain_plan(ch, &pd, NULL) == CKPT_ERR_OUT_OF_ORDER, "plan while a forward is pending");
        CHECK(ckpt_backward(ch, g, NULL) == CKPT_OK, "backward");
        CHECK(ckpt_backward(ch, g, NULL) == CKPT_ERR_OUT_OF_ORDER, "backward twice");
        ckpt_chain_reset_step(ch);
        /* NULL where a callback would read it: X[0] and G[n] */
        clear_log();
        r = ckpt_forward(ch, NULL, NULL);
        CHECK(r == CKPT_ERR_BAD_ARGUMENT && last_item == r && strstr(last_msg, "X[0]"), "NULL input: %s '%s'",
              ckpt_result_string(r), last_msg);
        CHECK(ckpt_forward(ch, x, NULL) == CKPT_OK, "forward after a NULL input");
        clear_log();
        r = ckpt_backward(ch, NULL, NULL);
        CHECK(r == CKPT_ERR_BAD_ARGUMENT && last_item == r && strstr(last_msg, "G[n]"), "NULL output gradient: %s '%s'",
              ckpt_result_string(r), last_msg);
        CHECK(ckpt_backward(ch, g, NULL) == CKPT_OK, "the forward is still pending after a NULL output gradient");
    }
    ckpt_chain_destroy(ch);
    /* microbatches: a NULL array, or a NULL entry a callback would read */
    base_desc(&cd, be);
    cd.microbatches = 2;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_OK && ckpt_chain_plan(ch, NULL, NULL) == CKPT_OK, "two lanes");
    {
        float x[4] = {1, 2, 3, 4}, g[4] = {1, 1, 1, 1};
        const void *ins[2], *gs[2];
        ins[0] = x; ins[1] = NULL; gs[0] = g; gs[1] = NULL;
        clear_log();
        r = ckpt_forward_microbatches(ch, NULL, NULL);
        CHECK(r == CKPT_ERR_NULL_ARGUMENT && strstr(last_msg, "inputs"), "NULL inputs: %s '%s'", ckpt_result_string(r), last_msg);
        clear_log();
        r = ckpt_forward_microbatches(ch, ins, NULL);
        CHECK(r == CKPT_ERR_BAD_ARGUMENT && strstr(last_msg, "microbatch 1"), "NULL inputs[1]: %s '%s'",
              ckpt_result_string(r), last_msg);
        ins[1] = x;
        CHECK(ckpt_forward_microbatches(ch, ins, NULL) == CKPT_OK, "forward, two lanes");
        clear_log();
        r = ckpt_backward_microbatches(ch, NULL, NULL);
        CHECK(r == CKPT_ERR_NULL_ARGUMENT && strstr(last_msg, "grad_outputs"), "NULL grad_outputs: %s '%s'",
              ckpt_result_string(r), last_msg);
        clear_log();
        r = ckpt_backward_microbatches(ch, gs, NULL);
        CHECK(r == CKPT_ERR_BAD_ARGUMENT && strstr(last_msg, "microbatch 1"), "NULL grad_outputs[1]: %s '%s'",
              ckpt_result_string(r), last_msg);
        gs[1] = g;
        CHECK(ckpt_backward_microbatches(ch, gs, NULL) == CKPT_OK, "backward, two lanes");
    }
    ckpt_chain_destroy(ch);

    /* the planner API on its own */
    {
        ckpt_cost c[2] = {{0}};
        ckpt_plan *plan = (ckpt_plan *)&plan;
        ckpt_plan_info info;
        memset(c, 0, sizeof c);
        CHECK(ckpt_plan_create(NULL, 2, NULL, &plan, NULL) == CKPT_ERR_NULL_ARGUMENT && plan == NULL, "NULL costs");
        CHECK(ckpt_plan_create(c, 0, NULL, &plan, NULL) == CKPT_ERR_NO_STAGES, "0 stages");
        CHECK(ckpt_plan_create(c, 2, NULL, NULL, NULL) == CKPT_ERR_NULL_ARGUMENT, "NULL out");
        memset(&info, 0xA5, sizeof info);
        CHECK(ckpt_plan_create(c, 2, NULL, NULL, &info) == CKPT_ERR_NULL_ARGUMENT && info.n_ops == 0 && info.time == 0 &&
              info.min_budget == 0, "NULL out: info zeroed");
        CHECK(ckpt_plan_create(c, 2, NULL, &plan, &info) == CKPT_OK && info.n_ops == 4, "trivial plan");
        ckpt_plan_destroy(plan);
        CHECK(ckpt_schedule_simulate(c, 2, NULL, 1, NULL, NULL, NULL) == CKPT_ERR_NULL_ARGUMENT, "simulate NULL ops");
        {
            double t = 1;
            uint64_t pk = 1;
            CHECK(ckpt_schedule_simulate(c, 2, NULL, 1, &t, &pk, NULL) == CKPT_ERR_NULL_ARGUMENT && t == 0 && pk == 0,
                  "simulate NULL ops: time %g, peak %llu, not zeroed", t, (unsigned long long)pk);
        }
        {
            ckpt_op one[1];
            ckpt_sim sim;
            ckpt_trace tr;
            memset(one, 0, sizeof one);
            one[0].kind = CKPT_OP_F; one[0].stage = 1;
            CHECK(ckpt_schedule_simulate(c, 2, one, CKPT_MAX_OPS + 1, NULL, NULL, NULL) == CKPT_ERR_BAD_ARGUMENT,
                  "simulate: n_ops over CKPT_MAX_OPS");
            CHECK(ckpt_schedule_simulate_offload(c, 2, one, CKPT_MAX_OPS + 1, 1, 0, &sim, NULL) == CKPT_ERR_BAD_ARGUMENT,
                  "simulate_offload: n_ops over CKPT_MAX_OPS");
            CHECK(ckpt_trace_predict(c, 2, one, CKPT_MAX_OPS + 1, 0, 0, 1, NULL, &tr) == CKPT_ERR_BAD_ARGUMENT &&
                  tr.events == NULL, "trace_predict: n_ops over CKPT_MAX_OPS");
        }
    }
    /* optimal and greedy refuse chains longer than CKPT_CUBIC_MAX_STAGES; every-k still plans */
    {
        int n = CKPT_CUBIC_MAX_STAGES + 1, i;
        ckpt_cost *c = (ckpt_cost *)calloc((size_t)n, sizeof *c);
        ckpt_plan *plan = NULL;
        ckpt_plan_desc pd;
        memset(&pd, 0, sizeof pd);
        pd.logger.fn = capture;
        for (i = 0; c && i < n; i++) { c[i].a = 8; c[i].t = 8; c[i].f = 1; c[i].b = 2; }
        clear_log();
        CHECK(c && ckpt_plan_create(c, n, &pd, &plan, NULL) == CKPT_ERR_TOO_COMPLEX && plan == NULL &&
              strstr(last_msg, "CKPT_CUBIC_MAX_STAGES"), "optimal on %d stages: '%s'", n, last_msg);
        pd.policy = CKPT_POLICY_GREEDY;
        CHECK(c && ckpt_plan_create(c, n, &pd, &plan, NULL) == CKPT_ERR_TOO_COMPLEX, "greedy on %d stages", n);
        pd.policy = CKPT_POLICY_SQRT;
        CHECK(c && ckpt_plan_create(c, n, &pd, &plan, NULL) == CKPT_OK, "sqrt on %d stages", n);
        ckpt_plan_destroy(plan);
        free(c);
    }
    /* layout */
    {
        ckpt_layout_entry e[2];
        size_t total = 99;
        e[0].bytes = 3; e[0].align = 3; e[1].bytes = 1; e[1].align = 0;
        CHECK(ckpt_layout_compute(e, 2, &total) == CKPT_ERR_BAD_LAYOUT && total == 0, "alignment 3 (total %zu)", total);
        e[0].align = 64;
        CHECK(ckpt_layout_compute(e, 2, &total) == CKPT_OK && e[1].offset == 16 && total == 17, "layout offsets %zu %zu",
              e[1].offset, total);
        CHECK(ckpt_layout_compute(NULL, 2, &total) == CKPT_ERR_NULL_ARGUMENT, "layout NULL");
    }
    /* policy names */
    {
        ckpt_policy p;
        CHECK(ckpt_policy_parse("every-k", &p) == CKPT_OK && p == CKPT_POLICY_EVERY_K, "parse every-k");
        CHECK(ckpt_policy_parse("everyk", &p) == CKPT_ERR_BAD_POLICY, "parse junk");
        CHECK(ckpt_policy_name((ckpt_policy)99) == NULL, "name of junk");
    }
}

/* A desc allocator carries every host allocation; a stale k does not bother other policies;
   a failed replan leaves info alone. */
static void allocator_and_desc(void) {
    ckpt_backend backend, *be = &backend;   /* its arena memory goes through the allocator too */
    ckpt_cpu_desc bd;
    ckpt_cost c[6] = {{0}};
    ckpt_plan_desc pd;
    ckpt_plan_info info;
    ckpt_plan *plan = NULL;
    ckpt_chain_desc cd;
    ckpt_chain *ch = NULL;
    int i, p;
    long before;
    memset(c, 0, sizeof c);
    for (i = 0; i < 6; i++) { c[i].a = 16; c[i].t = 16; c[i].f = 1; c[i].b = 2; }
    memset(&pd, 0, sizeof pd);
    pd.allocator.alloc = count_alloc; pd.allocator.free = count_free;
    pd.budget = 0;   /* no limit: every policy plans */
    memset(&bd, 0, sizeof bd);
    bd.allocator = pd.allocator;
    before = default_allocs;
    CHECK(ckpt_cpu_backend_create(&bd, be) == CKPT_OK, "backend with an allocator");
    for (p = 0; p < CKPT_POLICY_COUNT_; p++) {
        pd.policy = (ckpt_policy)p;
        pd.k = 8;   /* out of range, but only every-k reads it */
        if (p == CKPT_POLICY_EVERY_K) {
            CHECK(ckpt_plan_create(c, 6, &pd, &plan, &info) == CKPT_ERR_BAD_K, "every-k with k 8 > n");
            pd.k = 0;
        }
        CHECK(ckpt_plan_create(c, 6, &pd, &plan, &info) == CKPT_OK, "policy %s with k %d",
              ckpt_policy_name((ckpt_policy)p), pd.k);
        ckpt_plan_destroy(plan); plan = NULL;
    }
    base_desc(&cd, be);
    cd.allocator = pd.allocator;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_OK, "create");
    pd.policy = CKPT_POLICY_GREEDY;
    CHECK(ckpt_chain_plan(ch, &pd, &info) == CKPT_OK, "chain plan");
    {
        int n_ops;
        const ckpt_op *ops = ckpt_plan_ops(ckpt_chain_get_plan(ch), &n_ops);
        ckpt_op copy[64];
        ckpt_plan_info before_info = info, after;
        memcpy(copy, ops, (size_t)n_ops * sizeof *ops);
        CHECK(ckpt_chain_set_schedule(ch, copy, n_ops, &info) == CKPT_OK, "set_schedule");
        /* the figures the planned schedule's info had; the budgets are its arena */
        CHECK(info.policy == CKPT_POLICY_CUSTOM && info.time == before_info.time && info.peak == before_info.peak &&
              info.arena == before_info.arena && info.arena >= info.peak && info.budget == info.arena &&
              info.fit_budget == info.arena && info.min_budget == info.arena &&
              info.store_all_time == before_info.store_all_time && info.store_all_peak == before_info.store_all_peak &&
              info.n_ops == before_info.n_ops && info.n_recomputed == before_info.n_recomputed &&
              info.host_peak == 0 && info.n_offloaded == 0,
              "set_schedule's info: arena %llu (planned %llu), budget %llu, store-all peak %llu (planned %llu)",
              (unsigned long long)info.arena, (unsigned long long)before_info.arena, (unsigned long long)info.budget,
              (unsigned long long)info.store_all_peak, (unsigned long long)before_info.store_all_peak);
        CHECK(default_allocs == before, "%ld allocations bypassed the desc allocator", default_allocs - before);
        /* failed replan: info untouched */
        after = before_info;
        ckpt_cpu_inject_fault(be, CKPT_CPU_FAULT_ALLOC, 1);
        pd.policy = CKPT_POLICY_STORE_ALL; pd.budget = 0;
        CHECK(ckpt_chain_plan(ch, &pd, &after) == CKPT_ERR_OUT_OF_DEVICE_MEMORY &&
              memcmp(&after, &before_info, sizeof after) == 0, "a failed replan changed info");
    }
    ckpt_chain_destroy(ch);
    ckpt_cpu_backend_destroy(be);
    CHECK(live_host == 0, "leak through the desc allocator");
}

/* Every code has a distinct name and a description. */
static void result_strings(void) {
    static const ckpt_result codes[] = {
#define X(name, value, text) name,
        CKPT_RESULT_LIST(X)
#undef X
    };
    int i, j, n = (int)(sizeof codes / sizeof codes[0]);
    for (i = 0; i < n; i++) {
        CHECK(strncmp(ckpt_result_string(codes[i]), "CKPT_", 5) == 0, "name of %d", codes[i]);
        CHECK(strlen(ckpt_result_description(codes[i])) > 5, "description of %d", codes[i]);
        for (j = 0; j < i; j++) CHECK(codes[i] != codes[j], "duplicate code value %d", codes[i]);
    }
    CHECK(strcmp(ckpt_result_string((ckpt_result)-999), "CKPT_ERR_UNKNOWN") == 0, "unknown code");
}

static void infeasible(ckpt_backend *be) {
    ckpt_chain_desc cd;
    ckpt_chain *ch;
    ckpt_plan_desc pd;
    ckpt_plan_info info;
    char want[64];
    base_desc(&cd, be);
    ckpt_chain_create(&cd, &ch);
    memset(&pd, 0, sizeof pd);
    pd.budget = 1;
    clear_log();
    CHECK(ckpt_chain_plan(ch, &pd, &info) == CKPT_ERR_INFEASIBLE, "budget 1 must be infeasible");
    CHECK(info.min_budget > 1 && info.store_all_peak >= info.min_budget, "min budget %llu", (unsigned long long)info.min_budget);
    snprintf(want, sizeof want, "%llu", (unsigned long long)info.min_budget);
    CHECK(last_item == CKPT_ERR_INFEASIBLE && strstr(last_msg, want), "message '%s' lacks the min budget", last_msg);
    pd.budget = info.min_budget;
    CHECK(ckpt_chain_plan(ch, &pd, &info) == CKPT_OK && info.peak <= pd.budget, "plan at exactly the min budget");
    pd.budget = info.min_budget - 1;
    CHECK(ckpt_chain_plan(ch, &pd, NULL) == CKPT_ERR_INFEASIBLE, "one byte below the min budget");
    ckpt_chain_destroy(ch);
}

/* One training step's parameter gradients and input gradient. */
static int step(ckpt_chain *ch, float out_grads[N + 4]) {
    float x[4] = {1, -2, 3, 0.25f}, g[4] = {0.5f, 1, -1, 2};
    int r;
    memset(pgrad, 0, sizeof pgrad);
    if ((r = ckpt_forward(ch, x, NULL)) != CKPT_OK) return r;
    if ((r = ckpt_backward(ch, g, out_grads + N)) != CKPT_OK) return r;
    memcpy(out_grads, pgrad, N * sizeof(float));
    return CKPT_OK;
}

static void failing_callbacks(ckpt_backend *be) {
    ckpt_chain_desc cd;
    ckpt_chain *ch;
    ckpt_plan_desc pd;
    ckpt_chain_stats cs;
    float ref[N + 4], got[N + 4];
    int r;
    base_desc(&cd, be);
    ckpt_chain_create(&cd, &ch);
    memset(&pd, 0, sizeof pd);
    pd.budget = CKPT_ALIGN * 5;   /* 16-byte buffers count CKPT_ALIGN bytes each */
    CHECK(ckpt_chain_plan(ch, &pd, NULL) == CKPT_OK, "plan");
    CHECK(step(ch, ref) == CKPT_OK, "reference step");
    fail_fwd_stage = 3; clear_log();
    r = step(ch, got);
    CHECK(r == CKPT_ERR_CALLBACK, "failing forward gave %s", ckpt_result_string(r));
    CHECK(strstr(last_msg, "stage 3") && strstr(last_msg, "CKPT_ERR_BACKEND"), "message '%s'", last_msg);
    ckpt_chain_get_stats(ch, &cs);
    CHECK(cs.failed_stage == 3 && cs.failed_result == CKPT_ERR_BACKEND, "stats name stage %d", cs.failed_stage);
    fail_fwd_stage = -1;
    CHECK(step(ch, got) == CKPT_OK && memcmp(got, ref, sizeof ref) == 0, "clean step after a failing forward");
    fail_bwd_stage = 1; clear_log();
    r = step(ch, got);
    CHECK(r == CKPT_ERR_CALLBACK && strstr(last_msg, "stage 1") && strstr(last_msg, "backward"),
          "failing backward gave %s '%s'", ckpt_result_string(r), last_msg);
    fail_bwd_stage = -1;
    CHECK(step(ch, got) == CKPT_OK && memcmp(got, ref, sizeof ref) == 0, "clean step after a failing backward");
    ckpt_chain_destroy(ch);
}

/* Fails each host allocation in turn, then each backend allocation; nothing may leak. */
static void injected_failures(ckpt_backend *be) {
    long n;
    int completed = 0;
    ckpt_cpu_stats bs;
    for (n = 1; n < 10000 && !completed; n++) {
        ckpt_chain_desc cd;
        ckpt_chain *ch = NULL;
        ckpt_plan_desc pd;
        float got[N + 4];
        ckpt_result r;
        host_calls = 0; fail_host_at = n;
        base_desc(&cd, be);
        cd.logger.fn = NULL;
        cd.allocator.alloc = count_alloc; cd.allocator.free = count_free;
        r = ckpt_chain_create(&cd, &ch);
        if (r == CKPT_OK) {
            memset(&pd, 0, sizeof pd);
            pd.budget = CKPT_ALIGN * 5;   /* 16-byte buffers count CKPT_ALIGN bytes each */
            r = ckpt_chain_plan(ch, &pd, NULL);
            if (r == CKPT_OK) {
                CHECK(step(ch, got) == CKPT_OK, "step after planning");
                completed = host_calls < n;   /* the n-th allocation was never reached: all paths walked */
            } else {
                CHECK(r == CKPT_ERR_OUT_OF_HOST_MEMORY, "host failure %ld in plan gave %s", n, ckpt_result_string(r));
                CHECK(ckpt_forward(ch, got, NULL) == CKPT_ERR_NO_PLAN, "a failed first plan leaves no plan");
            }
        } else {
            CHECK(r == CKPT_ERR_OUT_OF_HOST_MEMORY && ch == NULL, "host failure %ld in create gave %s", n, ckpt_result_string(r));
        }
        ckpt_chain_destroy(ch);
        CHECK(live_host == 0, "host failure %ld leaked %ld blocks", n, live_host);
    }
    CHECK(completed && n > 5, "walked %ld host allocation failures", n - 1);
    fail_host_at = 0;
    /* the backend's arena allocation fails: error and no plan (the old arena went first); with
       keep_old_on_failure the old plan is kept; nothing leaked */
    {
        ckpt_chain_desc cd;
        ckpt_chain *ch;
        ckpt_plan_desc pd;
        ckpt_plan_info info;
        float ref[N + 4], got[N + 4];
        base_desc(&cd, be);
        ckpt_chain_create(&cd, &ch);
        memset(&pd, 0, sizeof pd);
        ckpt_cpu_inject_fault(be, CKPT_CPU_FAULT_ALLOC, 1);
        clear_log();
        CHECK(ckpt_chain_plan(ch, &pd, NULL) == CKPT_ERR_OUT_OF_DEVICE_MEMORY && strstr(last_msg, "arena"),
              "failed arena: '%s'", last_msg);
        CHECK(ckpt_chain_plan(ch, &pd, &info) == CKPT_OK && step(ch, ref) == CKPT_OK, "plan after failure");
        pd.budget = info.min_budget;
        ckpt_cpu_inject_fault(be, CKPT_CPU_FAULT_ALLOC, 1);
        CHECK(ckpt_chain_plan(ch, &pd, NULL) == CKPT_ERR_OUT_OF_DEVICE_MEMORY, "failed replan");
        CHECK(ckpt_forward(ch, got, NULL) == CKPT_ERR_NO_PLAN && ckpt_chain_get_plan(ch) == NULL,
              "a failed replan leaves no plan");
        memset(&pd, 0, sizeof pd);
        CHECK(ckpt_chain_plan(ch, &pd, NULL) == CKPT_OK, "plan after the failed replan");
        pd.budget = info.min_budget; pd.keep_old_on_failure = 1;
        ckpt_cpu_inject_fault(be, CKPT_CPU_FAULT_ALLOC, 1);
        CHECK(ckpt_chain_plan(ch, &pd, NULL) == CKPT_ERR_OUT_OF_DEVICE_MEMORY, "failed replan, keeping the old");
        CHECK(step(ch, got) == CKPT_OK && memcmp(got, ref, sizeof ref) == 0, "the old plan still runs");
        ckpt_chain_destroy(ch);
    }
    ckpt_cpu_get_stats(be, &bs);
    CHECK(bs.live_allocations == 0 && bs.faults == 3, "backend: %llu live, %llu faults",
          (unsigned long long)bs.live_allocations, (unsigned long long)bs.faults);
    CHECK(ckpt_cpu_inject_fault(be, CKPT_CPU_FAULT_ALLOC, -1) == CKPT_ERR_BAD_INDEX, "negative nth");
    {
        ckpt_backend other = *be;
        other.alloc = NULL;
        CHECK(ckpt_cpu_inject_fault(&other, CKPT_CPU_FAULT_ALLOC, 1) == CKPT_ERR_BAD_BACKEND, "not a cpu backend");
        memset(&bs, 0xA5, sizeof bs);
        CHECK(ckpt_cpu_get_stats(&other, &bs) == CKPT_ERR_BAD_BACKEND && bs.allocs == 0 && bs.live_bytes == 0,
              "stats of a backend that is not the cpu's: zeroed");
    }
    /* copies fail on demand too */
    {
        char a[8] = "abcdefg", b[8] = {0};
        ckpt_cpu_inject_fault(be, CKPT_CPU_FAULT_COPY, 2);
        CHECK(be->copy_async(be->state, b, a, 8, CKPT_COPY_DEVICE_TO_DEVICE, NULL) == CKPT_OK && memcmp(a, b, 8) == 0, "copy");
        CHECK(be->copy_async(be->state, b, a, 8, CKPT_COPY_DEVICE_TO_DEVICE, NULL) == CKPT_ERR_BACKEND, "injected copy failure");
    }
}

/* Times and sizes at the edges. The regression: f = b = 1e308 (their sum overflows) used to give
   INFEASIBLE with no limit and an assertion in the offload planner; now BAD_TIME naming the
   stage. Then a bounded fuzz of huge, tiny, denormal and zero times and sizes near the limits
   through ckpt_plan_create and ckpt_chain_plan for every policy: every result is OK with a plan
   the simulator agrees with, or a documented error (an assertion would abort the test). */
static ckpt_backend *fuzz_be;
static ckpt_result small_alloc(void *state, size_t bytes, void **out) {   /* no real 2^50-byte arenas */
    if (bytes > ((size_t)1 << 24)) { *out = NULL; return CKPT_ERR_OUT_OF_DEVICE_MEMORY; }
    return fuzz_be->alloc(state, bytes, out);
}
/* scale: 1, or large enough that the chain's times sum to near the limit */
static double fuzz_time(double scale) {
    switch (rnd_int(0, 9)) {
    case 0: return 0.0;
    case 1: return 4.9406564584124654e-324;     /* the smallest denormal */
    case 2: return 1e-300;
    case 3: return rnd_chance(10) ? 1e308 : 1.0;
    case 4: case 5: return (double)rnd_int(1, 5) * scale;
    default: return rnd_unit() * scale;
    }
}
static uint64_t fuzz_size(void) {
    switch (rnd_int(0, 19)) {
    case 0: case 1: return 0;
    case 2: return (uint64_t)1 << 56;
    case 3: return ((uint64_t)1 << 56) / (uint64_t)rnd_int(2, 40);
    case 4: return rnd_chance(20) ? UINT64_MAX - (uint64_t)rnd_int(0, 3) : (uint64_t)1 << 50;
    case 5: case 6: return (uint64_t)rnd_int(1, 3);
    default: return (uint64_t)rnd_int(1, 4096);
    }
}
static int documented(ckpt_result r) {
    return r == CKPT_OK || r == CKPT_ERR_BAD_TIME || r == CKPT_ERR_SIZE_OVERFLOW || r == CKPT_ERR_INFEASIBLE ||
           r == CKPT_ERR_TOO_COMPLEX || r == CKPT_ERR_BAD_K || r == CKPT_ERR_OUT_OF_DEVICE_MEMORY;
}
static void huge_times(ckpt_backend *be) {
    ckpt_cost c[8] = {{0}};
    ckpt_plan_desc pd;
    ckpt_plan *plan = NULL;
    ckpt_plan_info info;
    ckpt_result r;
    int n, pol, i, iter, ok = 0;
    uint64_t b;
    ckpt_backend small = *be;
    fuzz_be = be;
    small.alloc = small_alloc;
    for (n = 1; n <= 3; n++)
        for (pol = 0; pol < CKPT_POLICY_COUNT_; pol++)
            for (b = 0; b <= 400; b += b ? 50 : 250) {
                memset(c, 0, sizeof c);
                for (i = 0; i < n; i++) { c[i].f = c[i].b = 1e308; c[i].a = 100; c[i].t = 50; }
                memset(&pd, 0, sizeof pd);
                pd.policy = (ckpt_policy)pol; pd.budget = b; pd.bandwidth = 1e6; pd.logger.fn = capture;
                clear_log();
                r = ckpt_plan_create(c, n, &pd, &plan, &info);
                CHECK(r == CKPT_ERR_BAD_TIME && strstr(last_msg, "stage 0") && strstr(last_msg, "fwd_time"),
                      "f = b = 1e308, n %d, %s, budget %llu: %s '%s'", n, ckpt_policy_name((ckpt_policy)pol),
                      (unsigned long long)b, ckpt_result_string(r), last_msg);
                ckpt_plan_destroy(plan);
            }
    for (iter = 0; iter < 3000; iter++) {
        double bw[5] = {0, 1e-300, 1.0, 1e9, 1e300};
        double scale;
        n = rnd_int(1, 8);
        scale = rnd_chance(50) ? 1.0 : DBL_MAX / (4.0 * (n + 1)) / (5.0 * n) * (rnd_chance(80) ? 1.0 : 2.5);
        memset(c, 0, sizeof c);
        for (i = 0; i < n; i++) {
            c[i].f = fuzz_time(scale); c[i].b = fuzz_time(scale);
            c[i].a = fuzz_size(); c[i].t = fuzz_size();
            c[i].wf = rnd_chance(30) ? fuzz_size() : 0; c[i].wb = rnd_chance(30) ? fuzz_size() : 0;
            c[i].flags = rnd_chance(15) ? CKPT_STAGE_NO_CHECKPOINT : 0;
        }
        memset(&pd, 0, sizeof pd);
        pd.policy = (ckpt_policy)rnd_int(0, CKPT_POLICY_COUNT_ - 1);
        pd.k = pd.policy == CKPT_POLICY_EVERY_K ? rnd_int(0, n) : 0;
        pd.budget = rnd_chance(30) ? 0 : rnd_chance(30) ? fuzz_size() : (uint64_t)rnd_int(1, 20000);
        pd.max_units = rnd_chance(20) ? (uint32_t)rnd_int(1, 1000) : 0;
        pd.bandwidth = bw[rnd_int(0, 4)];
        pd.host_budget = rnd_chance(30) ? fuzz_size() : 0;
        r = ckpt_plan_create(c, n, &pd, &plan, &info);
        CHECK(documented(r) && r != CKPT_ERR_OUT_OF_DEVICE_MEMORY, "fuzz %d: %s", iter, ckpt_result_string(r));
        if (r == CKPT_OK) {
            int n_ops;
            const ckpt_op *ops = ckpt_plan_ops(plan, &n_ops);
            ckpt_sim sim = {-1, -1, 0, 0};
            double t = -1;
            uint64_t p = 0;
            ok++;
            if (pd.policy == CKPT_POLICY_OFFLOAD && pd.bandwidth > 0) {
                r = ckpt_schedule_simulate_offload(c, n, ops, n_ops, pd.bandwidth, 0, &sim, NULL);
                t = sim.time; p = sim.peak;
            } else {
                r = ckpt_schedule_simulate(c, n, ops, n_ops, &t, &p, NULL);
            }
            CHECK(r == CKPT_OK && t == info.time && p == info.peak && t <= DBL_MAX && (!pd.budget || p <= pd.budget),
                  "fuzz %d (%s): simulate %s time %g/%g peak %llu/%llu budget %llu", iter,
                  ckpt_policy_name(pd.policy), ckpt_result_string(r), t, info.time, (unsigned long long)p,
                  (unsigned long long)info.peak, (unsigned long long)pd.budget);
            ckpt_plan_destroy(plan);
        }
        if (iter % 10 == 0) {   /* the same through a chain, with an arena of at most 16 MiB */
            ckpt_chain_desc cd;
            ckpt_chain *ch = NULL;
            ckpt_stage_desc sd[8];
            memset(sd, 0, sizeof sd);
            for (i = 0; i < n; i++) {
                sd[i].forward = fwd; sd[i].backward = bwd;
                sd[i].out_bytes = (size_t)c[i].a; sd[i].tape_bytes = (size_t)c[i].t;
                sd[i].fwd_workspace_bytes = (size_t)c[i].wf; sd[i].bwd_workspace_bytes = (size_t)c[i].wb;
                sd[i].fwd_time = c[i].f; sd[i].bwd_time = c[i].b; sd[i].flags = c[i].flags;
            }
            memset(&cd, 0, sizeof cd);
            cd.stages = sd; cd.n_stages = n; cd.backend = &small;
            r = ckpt_chain_create(&cd, &ch);
            CHECK(r == CKPT_OK || r == CKPT_ERR_BAD_TIME || r == CKPT_ERR_SIZE_OVERFLOW, "fuzz chain %d: %s", iter,
                  ckpt_result_string(r));
            if (r == CKPT_OK) {
                pd.bandwidth = 0;   /* the CPU backend has no pinned memory */
                r = ckpt_chain_plan(ch, &pd, &info);
                CHECK(documented(r), "fuzz chain plan %d: %s", iter, ckpt_result_string(r));
            }
            ckpt_chain_destroy(ch);
        }
    }
    CHECK(ok > 100, "only %d of the fuzzed chains planned", ok);
}

/* Graph mode (ckpt_chain_desc.graphs) without a GPU: refused on a backend without graph entries
   and with what it cannot replay; then the core's side of it on the CPU backend with pretend
   graph entries (a replay runs nothing): captures and replays counted, callbacks run only in
   capture steps, the random-number counter advanced on replay as a step that runs would, a new
   plan or input pointer captured again, and a failed capture or launch fails the step with the
   backend's error, leaving the chain ready for the next step (which captures again). */
static int g_begin_calls, g_launches, g_live, g_fail_begin, g_fail_launch, g_capturing, g_fwd_calls;
static uint64_t g_fake_delta, g_last_delta;
static uint64_t g_bases[N], g_rbases[N];    /* first forwards' and recomputations' ranges */
static const uint64_t *g_delta_seen[N];
static ckpt_result g_begin(void *s, const uint64_t **delta) {
    (void)s;
    g_begin_calls++;
    if (g_fail_begin) { g_fail_begin = 0; return CKPT_ERR_BACKEND; }
    g_capturing = 1;
    *delta = &g_fake_delta;
    return CKPT_OK;
}
static ckpt_result g_end(void *s, int keep, void **exec) {
    (void)s;
    g_capturing = 0;
    *exec = NULL;
    if (!keep) return CKPT_OK;
    *exec = malloc(1);
    g_live++;
    return CKPT_OK;
}
static ckpt_result g_launch(void *s, void *exec, uint64_t delta) {
    (void)s; (void)exec;
    if (g_fail_launch) { g_fail_launch = 0; return CKPT_ERR_BACKEND; }
    g_launches++;
    g_last_delta = delta;
    return CKPT_OK;
}
static void g_destroy(void *s, void *exec) { (void)s; free(exec); g_live--; }
static ckpt_result fwd_rng(const ckpt_fwd_args *a) {
    ckpt_philox p;
    ckpt_result r = ckpt_ctx_rng(a->ctx, (uint64_t)a->ctx->stage + 1, &p);
    if (r != CKPT_OK) return r;
    if (a->ctx->mode == CKPT_MODE_FORWARD) { g_bases[a->ctx->stage] = p.base; g_delta_seen[a->ctx->stage] = p.delta; g_fwd_calls++; }
    if (a->ctx->mode == CKPT_MODE_RECOMPUTE) g_rbases[a->ctx->stage] = p.base;
    return fwd(a);
}

static void hook_save(void *state, void *user) { (void)user; memset(state, 0, 8); }
static void hook_restore(const void *state, void *user) { (void)state; (void)user; }

static void graph_mode(ckpt_backend *cpu) {
    ckpt_chain_desc cd;
    ckpt_backend fake = *cpu;
    ckpt_stage_desc gst[N];
    ckpt_chain *ch = NULL, *ref = NULL;
    ckpt_chain_stats s = {0};
    ckpt_plan_desc pd;
    ckpt_result r;
    float x[4] = {1, 2, 3, 4}, x2[4] = {1, 2, 3, 4}, gy[4] = {1, 1, 1, 1}, gx[4];
    uint64_t ref_bases[9][N], ref_rbases[N] = {0};     /* (set at step 8 of the first run) */
    float gx2[4];
    int recomputes = 0;
    float hp[4];
    int i, step;
    base_desc(&cd, cpu); cd.graphs = 1;
    EXPECT_CREATE(CKPT_ERR_BAD_ARGUMENT, "cannot capture graphs");
    base_desc(&cd, cpu); cd.graphs = 2;
    EXPECT_CREATE(CKPT_ERR_BAD_ARGUMENT, "graphs is 2");
    fake.graph_begin = g_begin; fake.graph_end = g_end; fake.graph_launch = g_launch; fake.graph_destroy = g_destroy;
    memcpy(gst, st, sizeof gst);
    for (i = 0; i < N; i++) gst[i].forward = fwd_rng;
    base_desc(&cd, &fake); cd.stages = gst; cd.graphs = 1;
    gst[2].host_params = hp; gst[2].param_bytes = sizeof hp;
    EXPECT_CREATE(CKPT_ERR_BAD_ARGUMENT, "streams its parameters");
    gst[2].host_params = NULL; gst[2].param_bytes = 0;
    cd.rng_hooks.state_bytes = 8; cd.rng_hooks.save = hook_save; cd.rng_hooks.restore = hook_restore;
    EXPECT_CREATE(CKPT_ERR_BAD_ARGUMENT, "rng_hooks");
    memset(&cd.rng_hooks, 0, sizeof cd.rng_hooks);
    /* check_recompute: refused with graphs (a replay runs no callback), with a backend that has no
       checksum, and for values other than 0 and 1 */
    fake.checksum = cpu->checksum;
    cd.check_recompute = 1;
    EXPECT_CREATE(CKPT_ERR_BAD_ARGUMENT, "check_recompute cannot be used with graphs");
    cd.graphs = 0; cd.stages = st;
    fake.checksum = NULL;
    EXPECT_CREATE(CKPT_ERR_BAD_ARGUMENT, "has no checksum");
    fake.checksum = cpu->checksum;
    cd.check_recompute = 2;
    EXPECT_CREATE(CKPT_ERR_BAD_ARGUMENT, "check_recompute is 2");
    cd.check_recompute = 0; cd.graphs = 1; cd.stages = gst;

    /* the reference: the same chain without graphs, 8 steps (a new plan before step 4) */
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_OPTIMAL; pd.budget = 6 * 256;    /* recomputes */
    cd.graphs = 0;
    CHECK(ckpt_chain_create(&cd, &ref) == CKPT_OK && ckpt_chain_plan(ref, &pd, NULL) == CKPT_OK, "reference chain");
    for (step = 0; step < 9 && ref; step++) {
        if (step == 4) ckpt_chain_plan(ref, &pd, NULL);
        memset(g_rbases, 0xff, sizeof g_rbases);
        CHECK(ckpt_forward(ref, x, NULL) == CKPT_OK && ckpt_backward(ref, gy, gx) == CKPT_OK, "reference step");
        memcpy(ref_bases[step], g_bases, sizeof g_bases);
        if (step == 8) memcpy(ref_rbases, g_rbases, sizeof g_rbases);
        for (i = 0; i < N; i++) CHECK(g_delta_seen[i] == NULL, "no graphs: no counter offset");
    }
    cd.graphs = 1;
    r = ckpt_chain_create(&cd, &ch);
    CHECK(r == CKPT_OK, "graph chain: %s", ckpt_result_string(r));
    if (r != CKPT_OK) { ckpt_chain_destroy(ref); return; }
    CHECK(ckpt_chain_plan(ch, &pd, NULL) == CKPT_OK, "plan");
    g_fwd_calls = 0;
    for (step = 0; step < 9; step++) {
        int calls = g_fwd_calls;
        if (step == 4) CHECK(ckpt_chain_plan(ch, &pd, NULL) == CKPT_OK, "plan again");
        memset(g_rbases, 0xff, sizeof g_rbases);
        r = ckpt_forward(ch, step >= 6 ? x2 : x, NULL);
        CHECK(r == CKPT_OK, "step %d forward: %s", step, ckpt_result_string(r));
        r = ckpt_backward(ch, gy, step == 8 ? gx2 : gx);    /* step 8: the backward alone captured again */
        CHECK(r == CKPT_OK, "step %d backward: %s", step, ckpt_result_string(r));
        if (step == 0 || step == 4 || step == 6) {     /* captured: the callbacks ran, with this step's counters */
            CHECK(g_fwd_calls == calls + N, "step %d: %d first forwards", step, g_fwd_calls - calls);
            for (i = 0; i < N; i++)
                CHECK(g_bases[i] == ref_bases[step][i] && g_delta_seen[i] == &g_fake_delta,
                      "step %d stage %d: base %llu, without graphs %llu", step, i, (unsigned long long)g_bases[i],
                      (unsigned long long)ref_bases[step][i]);
        } else if (step == 8) {    /* the forward replayed; the backward's recomputations draw that step's ranges */
            CHECK(g_fwd_calls == calls, "step 8: a replayed forward ran %d callbacks", g_fwd_calls - calls);
            for (i = 0; i < N; i++) {
                CHECK(g_rbases[i] == ref_rbases[i], "step 8 stage %d: recomputation base %llu, without graphs %llu", i,
                      (unsigned long long)g_rbases[i], (unsigned long long)ref_rbases[i]);
                recomputes += ref_rbases[i] != UINT64_MAX;
            }
        } else {
            CHECK(g_fwd_calls == calls, "step %d: a replay ran %d callbacks", step, g_fwd_calls - calls);
            CHECK(g_last_delta == ref_bases[step][0] - ref_bases[step == 5 ? 4 : step == 7 ? 6 : 0][0],
                  "step %d: counter offset %llu", step, (unsigned long long)g_last_delta);
        }
    }
    ckpt_chain_get_stats(ch, &s);
    CHECK(recomputes > 0, "the plan recomputes nothing");
    CHECK(s.graph_captures == 7 && s.graph_replays == 11 && s.steps == 9, "%llu captures, %llu replays, %llu steps",
          (unsigned long long)s.graph_captures, (unsigned long long)s.graph_replays, (unsigned long long)s.steps);
    {
        ckpt_chain_stats rs = {0};
        ckpt_chain_get_stats(ref, &rs);
        CHECK(rs.ops_run == s.ops_run, "ops run: %llu with graphs, %llu without", (unsigned long long)s.ops_run,
              (unsigned long long)rs.ops_run);
    }
    /* failures: the step fails with the backend's error; the next one captures and runs */
    clear_log();
    g_fail_launch = 1;
    r = ckpt_forward(ch, x2, NULL);
    CHECK(r == CKPT_ERR_BACKEND && strstr(last_msg, "launching the forward graph"), "failed launch: %s (%s)",
          ckpt_result_string(r), last_msg);
    CHECK(g_live == 0, "a failed launch drops the graphs (%d live)", g_live);
    g_fail_begin = 1;
    r = ckpt_forward(ch, x2, NULL);
    CHECK(r == CKPT_ERR_BACKEND && strstr(last_msg, "could not begin capturing"), "failed capture: %s (%s)",
          ckpt_result_string(r), last_msg);
    fail_fwd_stage = 3;     /* a callback fails during the capture */
    r = ckpt_forward(ch, x2, NULL);
    CHECK(r == CKPT_ERR_CALLBACK && !g_capturing && g_live == 0, "a callback failing in a capture: %s, capturing %d, %d live",
          ckpt_result_string(r), g_capturing, g_live);
    fail_fwd_stage = -1;
    CHECK(ckpt_forward(ch, x2, NULL) == CKPT_OK && ckpt_backward(ch, gy, gx) == CKPT_OK, "a step after the failures");
    for (i = 0; i < N; i++)     /* the failed steps consumed nothing: these are the reference's step 8 */
        CHECK(g_bases[i] == ref_bases[8][i] + (ref_bases[8][N - 1] + N - ref_bases[8][0]), "stage %d after the failures: base %llu",
              i, (unsigned long long)g_bases[i]);
    ckpt_chain_get_stats(ch, &s);
    CHECK(s.graph_captures == 9 && s.steps == 10, "%llu captures after the failures", (unsigned long long)s.graph_captures);
    ckpt_chain_destroy(ch);
    ckpt_chain_destroy(ref);
    CHECK(g_live == 0, "%d graphs left", g_live);
}

int main(void) {
    ckpt_backend be;
    init_stages();
    if (ckpt_cpu_backend_create(NULL, &be) != CKPT_OK) return 1;
    result_strings();
    invalid_arguments(&be);
    allocator_and_desc();
    infeasible(&be);
    failing_callbacks(&be);
    injected_failures(&be);
    huge_times(&be);
    graph_mode(&be);
    ckpt_cpu_backend_destroy(&be);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
