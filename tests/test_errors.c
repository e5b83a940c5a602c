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

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static void *count_alloc(size_t n, void *u) {
    (void)u;
    if (++host_calls == fail_host_at) return NULL;
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
        ops[0].kind = CKPT_OP_B; ops[0].stage = 1; ops[0].tape = 0;
        CHECK(ckpt_chain_set_schedule(ch, ops, 1, NULL) == CKPT_ERR_BAD_SCHEDULE, "invalid schedule");
        CHECK(ckpt_chain_set_schedule(ch, ops, -1, NULL) == CKPT_ERR_BAD_INDEX, "negative n_ops");
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
    }
    ckpt_chain_destroy(ch);

    /* the planner API on its own */
    {
        ckpt_cost c[2];
        ckpt_plan *plan = (ckpt_plan *)&plan;
        ckpt_plan_info info;
        memset(c, 0, sizeof c);
        CHECK(ckpt_plan_create(NULL, 2, NULL, &plan, NULL) == CKPT_ERR_NULL_ARGUMENT && plan == NULL, "NULL costs");
        CHECK(ckpt_plan_create(c, 0, NULL, &plan, NULL) == CKPT_ERR_NO_STAGES, "0 stages");
        CHECK(ckpt_plan_create(c, 2, NULL, NULL, NULL) == CKPT_ERR_NULL_ARGUMENT, "NULL out");
        CHECK(ckpt_plan_create(c, 2, NULL, &plan, &info) == CKPT_OK && info.n_ops == 4, "trivial plan");
        ckpt_plan_destroy(plan);
        CHECK(ckpt_schedule_simulate(c, 2, NULL, 1, NULL, NULL, NULL) == CKPT_ERR_NULL_ARGUMENT, "simulate NULL ops");
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
        size_t total = 0;
        e[0].bytes = 3; e[0].align = 3; e[1].bytes = 1; e[1].align = 0;
        CHECK(ckpt_layout_compute(e, 2, &total) == CKPT_ERR_BAD_LAYOUT, "alignment 3");
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
    ckpt_cost c[6];
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
    /* the backend's arena allocation fails: error, old plan kept, nothing leaked */
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
        CHECK(step(ch, got) == CKPT_OK && memcmp(got, ref, sizeof ref) == 0, "the old plan still runs");
        ckpt_chain_destroy(ch);
    }
    ckpt_cpu_get_stats(be, &bs);
    CHECK(bs.live_allocations == 0 && bs.faults == 2, "backend: %llu live, %llu faults",
          (unsigned long long)bs.live_allocations, (unsigned long long)bs.faults);
    CHECK(ckpt_cpu_inject_fault(be, CKPT_CPU_FAULT_ALLOC, -1) == CKPT_ERR_BAD_INDEX, "negative nth");
    {
        ckpt_backend other = *be;
        other.alloc = NULL;
        CHECK(ckpt_cpu_inject_fault(&other, CKPT_CPU_FAULT_ALLOC, 1) == CKPT_ERR_BAD_BACKEND, "not a cpu backend");
    }
    /* copies fail on demand too */
    {
        char a[8] = "abcdefg", b[8] = {0};
        ckpt_cpu_inject_fault(be, CKPT_CPU_FAULT_COPY, 2);
        CHECK(be->copy_async(be->state, b, a, 8, CKPT_COPY_DEVICE_TO_DEVICE, NULL) == CKPT_OK && memcmp(a, b, 8) == 0, "copy");
        CHECK(be->copy_async(be->state, b, a, 8, CKPT_COPY_DEVICE_TO_DEVICE, NULL) == CKPT_ERR_BACKEND, "injected copy failure");
    }
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
    ckpt_cpu_backend_destroy(&be);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
