/* test_measure.c -- ckpt_chain_measure and ckpt_chain_set_times.

   Timing: stages whose callbacks spin on the monotonic clock, stage i's forward for (i+1) units
   and its backward for 2(i+1). Each callback also times itself; the library's median of a
   stage must enclose the callback's own median (it times the callback and nothing more): not
   below it, and not more than SLACK_MS above it. That holds on a loaded machine; the spin
   durations themselves are checked loosely (none below its spin, times 3x apart in order, the
   ratio of backward to forward sums), measuring again, up to 5 times, while a busy machine's
   time slices stretch the short spins. Run with the host clock (CPU backend), under a recomputing plan (a sample for
   every recomputation), with two microbatch lanes (samples per lane), through backend events
   (a CPU backend with a compute stream: every callback gets two event records), and with
   parameter streaming on a slow copy engine (the wait for a load is not counted).
   Re-planning: after ckpt_chain_set_times, ckpt_chain_plan's predicted time is ckpt_plan_create's
   for the measured costs. Bit-exactness: on arithmetic stages with dropout, measuring steps add
   the same gradients as ordinary steps, and the step after them is bit-identical to the same
   step of a chain that never measured. The error cases of both calls. */
#define _POSIX_C_SOURCE 200809L     /* CLOCK_MONOTONIC: the library's clock is then the test's */
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"
#include "../backends/ckpt_cpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"

#define NS 4            /* spin stages */
#define UNIT_MS 1.5     /* stage i: forward (i+1) units, backward 2(i+1) */
#define SLACK_MS 0.5    /* the library's median may exceed the callback's own by this much */
#define MAXS 256        /* self-timed samples kept per stage and kind */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- spin stages ------------------------------------------------------------------------------ */

static double self_ms[NS][2][MAXS];     /* [stage][backward]: each call's own duration */
static int n_self[NS][2];
static int fail_fwd_at = 0, fail_bwd_at = 0, calls = 0;    /* 1-based call that fails; 0: none */
static int recomputes_seen = 0;

static void self_reset(void) { memset(n_self, 0, sizeof n_self); calls = 0; recomputes_seen = 0; }

static void spin_record(int stage, int bwd, double units) {
    double t0 = now_ms();
    while (now_ms() - t0 < units * UNIT_MS) {}
    if (n_self[stage][bwd] < MAXS) self_ms[stage][bwd][n_self[stage][bwd]++] = now_ms() - t0;
}

static ckpt_result spin_fwd(const ckpt_fwd_args *a) {
    int i = a->ctx->stage;
    if (++calls == fail_fwd_at) return CKPT_ERR_BACKEND;
    recomputes_seen += a->ctx->mode == CKPT_MODE_RECOMPUTE;
    spin_record(i, 0, i + 1.0);
    return CKPT_OK;
}

static ckpt_result spin_bwd(const ckpt_bwd_args *a) {
    int i = a->ctx->stage;
    if (++calls == fail_bwd_at) return CKPT_ERR_BACKEND;
    spin_record(i, 1, 2.0 * (i + 1));
    return CKPT_OK;
}

static int cmp_double(const void *pa, const void *pb) {
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static unsigned char host_params[NS][65536];
static float host_grads[NS][16384];

static void spin_stages(ckpt_stage_desc st[NS], int stream) {
    static const char *names[NS] = { "spin0", "spin1", "spin2", "spin3" };
    int i;
    memset(st, 0, NS * sizeof *st);
    for (i = 0; i < NS; i++) {
        st[i].name = names[i];
        st[i].forward = spin_fwd; st[i].backward = spin_bwd;
        st[i].out_bytes = 1024; st[i].tape_bytes = 16384;
        if (stream) {
            st[i].host_params = host_params[i]; st[i].param_bytes = sizeof host_params[i];
            st[i].host_grads = host_grads[i];
        }
    }
}

/* The library's medians against the callbacks' own (lo_tol: the event clock is the wall
   clock, which may run slower than the monotonic one by a few hundred ppm). */
static void check_encloses(const char *what, const ckpt_stage_time *t, double lo_tol) {
    int i, k;
    for (i = 0; i < NS; i++)
        for (k = 0; k < 2; k++) {
            double lib = k ? t[i].bwd_time : t[i].fwd_time;
            int count = k ? t[i].bwd_count : t[i].fwd_count;
            double own;
            CHECK(count == n_self[i][k], "%s: stage %d %s: %d samples, the callbacks ran %d times", what, i,
                  k ? "bwd" : "fwd", count, n_self[i][k]);
            if (n_self[i][k] == 0) continue;
            own = median(self_ms[i][k], n_self[i][k]);
            CHECK(lib >= own * (1.0 - lo_tol) - 1e-9 && lib <= own + SLACK_MS,
                  "%s: stage %d %s: library median %.4f ms, the callback's own %.4f ms", what, i, k ? "bwd" : "fwd",
                  lib, own);
        }
}

/* A chain of the spin stages, planned store-all (*store: that plan's figures; may be NULL). */
static ckpt_chain *spin_chain(ckpt_backend *be, int lanes, int stream, ckpt_stage_desc st[NS], ckpt_plan_info *store) {
    ckpt_chain_desc cd;
    ckpt_plan_desc pd;
    ckpt_chain *ch = NULL;
    ckpt_result r;
    spin_stages(st, stream);
    memset(&cd, 0, sizeof cd);
    cd.stages = st; cd.n_stages = NS; cd.backend = be; cd.microbatches = lanes; cd.input_bytes = 4096;
    r = ckpt_chain_create(&cd, &ch);
    CHECK(r == CKPT_OK, "chain_create: %s", ckpt_result_string(r));
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_STORE_ALL;
    if (r == CKPT_OK) r = ckpt_chain_plan(ch, &pd, store);
    CHECK(r == CKPT_OK, "store-all plan: %s", ckpt_result_string(r));
    return ch;
}

static float spin_x[1024], spin_dy[1024], spin_dx[1024];

/* ckpt_chain_measure's samples per stage: steps x lanes x its F (or B) ops in the plan. */
static void check_counts(const char *what, ckpt_chain *ch, int steps, int lanes, const ckpt_stage_time *t) {
    int n_ops, k, i, f[NS] = {0};
    const ckpt_op *ops = ckpt_plan_ops(ckpt_chain_get_plan(ch), &n_ops);
    for (k = 0; k < n_ops; k++) if (ops[k].kind == CKPT_OP_F) f[ops[k].stage - 1]++;
    for (i = 0; i < NS; i++)
        CHECK(t[i].fwd_count == steps * lanes * f[i] && t[i].bwd_count == steps * lanes,
              "%s: stage %d: %d and %d samples, expected %d and %d", what, i, t[i].fwd_count, t[i].bwd_count,
              steps * lanes * f[i], steps * lanes);
}

/* The spins' durations: none below its spin (checked), and loosely (returned, with why not):
   times 3x apart in the right order, backward about twice forward. A loaded machine stretches
   short spins by whole time slices, so the callers measure again when the loose part fails. */
static int spins_ok(const char *what, const ckpt_stage_time *t, char *why, size_t why_size) {
    double v[2 * NS], sf = 0, sb = 0;
    int i, j;
    for (i = 0; i < NS; i++) { v[2 * i] = t[i].fwd_time; v[2 * i + 1] = t[i].bwd_time; sf += v[2 * i]; sb += v[2 * i + 1]; }
    for (i = 0; i < NS; i++)
        CHECK(t[i].fwd_time >= (i + 1) * UNIT_MS * 0.999 && t[i].bwd_time >= 2 * (i + 1) * UNIT_MS * 0.999,
              "%s: stage %d: fwd %.3f ms, bwd %.3f ms, below the spin's %.3f and %.3f", what, i, t[i].fwd_time,
              t[i].bwd_time, (i + 1) * UNIT_MS, 2 * (i + 1) * UNIT_MS);
    for (i = 0; i < 2 * NS; i++)
        for (j = 0; j < 2 * NS; j++) {
            double ui = (i / 2 + 1) * (i % 2 ? 2.0 : 1.0), uj = (j / 2 + 1) * (j % 2 ? 2.0 : 1.0);
            if (uj >= 3 * ui && !(v[j] > v[i])) {
                snprintf(why, why_size, "%s: %.3f ms (%g units) is not above %.3f ms (%g units)", what, v[j], uj, v[i], ui);
                return 0;
            }
        }
    if (!(sb / sf > 1.4 && sb / sf < 2.8)) {
        snprintf(why, why_size, "%s: backward / forward %.3f, expected about 2", what, sb / sf);
        return 0;
    }
    return 1;
}

/* Measures `steps` steps into t, up to 5 times until spins_ok: every attempt's samples must
   enclose the callbacks' own times, and one attempt must show the spins' proportions. */
static void measure_spins(const char *what, ckpt_chain *ch, int steps, void *dx, ckpt_stage_time *t) {
    char why[256] = "";
    int attempt, ok = 0;
    for (attempt = 0; attempt < 5 && !ok; attempt++) {
        ckpt_result r;
        self_reset();
        r = ckpt_chain_measure(ch, spin_x, spin_dy, dx, steps, t);
        CHECK(r == CKPT_OK, "%s: measure: %s", what, ckpt_result_string(r));
        if (r != CKPT_OK) return;
        check_counts(what, ch, steps, 1, t);
        check_encloses(what, t, 0.0);
        ok = spins_ok(what, t, why, sizeof why);
        if (!ok) printf("%s: attempt %d: %s (a busy machine?)\n", what, attempt + 1, why);
    }
    CHECK(ok, "%s", why);
}

static void test_host_clock(void) {
    ckpt_backend be;
    ckpt_stage_desc st[NS];
    ckpt_stage_time t[NS];
    ckpt_chain_stats stats;
    ckpt_chain *ch;
    ckpt_result r;
    ckpt_cpu_backend_create(NULL, &be);
    ch = spin_chain(&be, 1, 0, st, NULL);
    r = ckpt_chain_measure(ch, spin_x, spin_dy, spin_dx, 1, NULL);     /* warm-up */
    CHECK(r == CKPT_OK, "warm-up: %s", ckpt_result_string(r));
    measure_spins("store-all", ch, 3, spin_dx, t);
    memset(&stats, 0, sizeof stats);
    ckpt_chain_get_stats(ch, &stats);
    CHECK(stats.steps >= 4 && (stats.steps - 1) % 3 == 0, "%llu steps counted, 1 + 3 per attempt run",
          (unsigned long long)stats.steps);
    printf("store-all, host clock: fwd %.3f %.3f %.3f %.3f, bwd %.3f %.3f %.3f %.3f ms\n", t[0].fwd_time, t[1].fwd_time,
           t[2].fwd_time, t[3].fwd_time, t[0].bwd_time, t[1].bwd_time, t[2].bwd_time, t[3].bwd_time);
    ckpt_chain_destroy(ch);
    ckpt_cpu_backend_destroy(&be);
}

/* Under a plan at 1/3 of store-all's peak; then re-planned with the measured times. */
static void test_recompute_and_replan(void) {
    ckpt_backend be;
    ckpt_stage_desc st[NS];
    ckpt_stage_time t[NS], bad[NS], zero[NS];
    ckpt_cost c[NS] = {{0}};
    ckpt_chain *ch;
    ckpt_plan_desc pd;
    ckpt_plan_info store, info, ref, unit;
    ckpt_plan *plan = NULL;
    ckpt_result r;
    int i;
    ckpt_cpu_backend_create(NULL, &be);
    ch = spin_chain(&be, 1, 0, st, &store);
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_OPTIMAL;
    pd.budget = store.peak / 3;
    r = ckpt_chain_plan(ch, &pd, &unit);
    CHECK(r == CKPT_OK && unit.n_recomputed > 0, "plan at 1/3: %s, %d recomputations", ckpt_result_string(r),
          unit.n_recomputed);
    measure_spins("recompute", ch, 3, NULL, t);
    CHECK(recomputes_seen == 3 * unit.n_recomputed, "%d recomputations run, %d planned a step (last attempt)",
          recomputes_seen, unit.n_recomputed);

    /* re-plan: the chain's plan is ckpt_plan_create's for the measured costs */
    CHECK(ckpt_chain_set_times(ch, t) == CKPT_OK, "set_times");
    r = ckpt_chain_plan(ch, &pd, &info);
    CHECK(r == CKPT_OK, "re-plan: %s", ckpt_result_string(r));
    memset(c, 0, sizeof c);
    for (i = 0; i < NS; i++) {
        c[i].f = t[i].fwd_time; c[i].b = t[i].bwd_time; c[i].a = st[i].out_bytes; c[i].t = st[i].tape_bytes;
    }
    r = ckpt_plan_create(c, NS, &pd, &plan, &ref);
    CHECK(r == CKPT_OK && info.time == ref.time && info.peak == ref.peak && info.n_ops == ref.n_ops,
          "re-planned time %.6f (peak %llu), ckpt_plan_create %.6f (peak %llu)", info.time,
          (unsigned long long)info.peak, ref.time, (unsigned long long)ref.peak);
    CHECK(info.time != unit.time, "the re-planned time %.6f is still the unit times' %.6f", info.time, unit.time);
    ckpt_plan_destroy(plan);

    /* bad times: refused, nothing changes */
    memcpy(bad, t, sizeof bad);
    bad[2].bwd_time = NAN;
    CHECK(ckpt_chain_set_times(ch, bad) == CKPT_ERR_BAD_TIME, "NaN accepted");
    bad[2].bwd_time = -1.0;
    CHECK(ckpt_chain_set_times(ch, bad) == CKPT_ERR_BAD_TIME, "negative accepted");
    bad[2].bwd_time = INFINITY;
    CHECK(ckpt_chain_set_times(ch, bad) == CKPT_ERR_BAD_TIME, "infinity accepted");
    for (i = 0; i < NS; i++) bad[i].fwd_time = bad[i].bwd_time = DBL_MAX / 4;
    CHECK(ckpt_chain_set_times(ch, bad) == CKPT_ERR_BAD_TIME, "times that overflow a schedule accepted");
    r = ckpt_chain_plan(ch, &pd, &ref);
    CHECK(r == CKPT_OK && ref.time == info.time, "after refused times: %.6f, before %.6f", ref.time, info.time);

    /* all zero: 1 and 2, as in a desc */
    memset(zero, 0, sizeof zero);
    CHECK(ckpt_chain_set_times(ch, zero) == CKPT_OK, "zero times");
    r = ckpt_chain_plan(ch, &pd, &ref);
    CHECK(r == CKPT_OK && ref.time == unit.time, "all-zero times plan %.6f, unit times %.6f", ref.time, unit.time);
    ckpt_chain_destroy(ch);
    ckpt_cpu_backend_destroy(&be);
}

static void test_lanes(void) {
    ckpt_backend be;
    ckpt_stage_desc st[NS];
    ckpt_stage_time t[NS];
    ckpt_chain *ch;
    ckpt_result r;
    ckpt_cpu_backend_create(NULL, &be);
    ch = spin_chain(&be, 2, 0, st, NULL);
    self_reset();
    r = ckpt_chain_measure(ch, spin_x, spin_dy, spin_dx, 2, t);
    CHECK(r == CKPT_OK, "measure, 2 lanes: %s", ckpt_result_string(r));
    check_counts("2 lanes", ch, 2, 2, t);
    check_encloses("2 lanes", t, 0.0);      /* per microbatch: an op's two calls summed would fail */
    ckpt_chain_destroy(ch);
    ckpt_cpu_backend_destroy(&be);
}

/* A CPU backend with a compute stream: ckpt_chain_measure times through its events. */
static ckpt_backend cpu_be;
static int records = 0, fail_event_create = 0, fail_record_at = 0;
static char fake_stream;
static void *ev_compute_stream(void *state) { (void)state; return &fake_stream; }
static ckpt_result ev_record(void *state, void *ev, void *stream) {
    if (++records == fail_record_at) return CKPT_ERR_BACKEND;
    return cpu_be.event_record(state, ev, stream);
}
static ckpt_result ev_create(void *state, void **out) {
    if (fail_event_create) { *out = NULL; return CKPT_ERR_BACKEND; }
    return cpu_be.event_create(state, out);
}

static void test_events(void) {
    ckpt_backend be;
    ckpt_stage_desc st[NS];
    ckpt_stage_time t[NS];
    ckpt_chain *ch;
    ckpt_result r;
    ckpt_cpu_backend_create(NULL, &cpu_be);
    be = cpu_be;
    be.compute_stream = ev_compute_stream;
    be.event_record = ev_record;
    be.event_create = ev_create;
    ch = spin_chain(&be, 1, 0, st, NULL);
    self_reset();
    records = 0;
    r = ckpt_chain_measure(ch, spin_x, spin_dy, NULL, 3, t);
    CHECK(r == CKPT_OK, "measure with events: %s", ckpt_result_string(r));
    CHECK(records == 3 * 2 * 2 * NS, "%d event records, expected %d (two per callback)", records, 3 * 2 * 2 * NS);
    check_counts("events", ch, 3, 1, t);
    check_encloses("events", t, 0.01);
    /* an event failure fails the call, after a complete step; the chain goes on */
    records = 0; fail_record_at = 5;
    r = ckpt_chain_measure(ch, spin_x, spin_dy, NULL, 2, t);
    CHECK(r == CKPT_ERR_BACKEND, "a failed event record: %s", ckpt_result_string(r));
    fail_record_at = 0;
    fail_event_create = 1;
    r = ckpt_chain_measure(ch, spin_x, spin_dy, NULL, 1, t);
    CHECK(r == CKPT_ERR_BACKEND, "no events: %s", ckpt_result_string(r));
    fail_event_create = 0;
    r = ckpt_chain_measure(ch, spin_x, spin_dy, NULL, 1, t);
    CHECK(r == CKPT_OK, "measure after event failures: %s", ckpt_result_string(r));
    ckpt_chain_destroy(ch);
    ckpt_cpu_backend_destroy(&cpu_be);
}

/* Streamed parameters through a copy engine slower than the stages: each 64 KiB load takes
   about 3.3 ms, longer than the op before it, so compute waits for it; that wait is not a
   callback's time. */
static void test_streaming_waits(void) {
    ckpt_backend be;
    ckpt_cpu_desc cd;
    ckpt_stage_desc st[NS];
    ckpt_stage_time t[NS];
    ckpt_chain_stats stats;
    ckpt_chain *ch;
    ckpt_result r;
    memset(&cd, 0, sizeof cd);
    cd.copy_engine = 1;
    cd.copy_bandwidth = 20e6;
    if (ckpt_cpu_backend_create(&cd, &be) != CKPT_OK) { printf("no copy engine: streaming case skipped\n"); return; }
    ch = spin_chain(&be, 1, 1, st, NULL);
    self_reset();
    r = ckpt_chain_measure(ch, spin_x, spin_dy, NULL, 2, t);
    CHECK(r == CKPT_OK, "measure, streaming: %s", ckpt_result_string(r));
    memset(&stats, 0, sizeof stats);
    ckpt_chain_get_stats(ch, &stats);
    /* store-all, two slots: every stage in the forward, all but the last two again in the backward */
    CHECK(stats.param_loads == 2 * (2 * NS - 2), "%llu parameter loads", (unsigned long long)stats.param_loads);
    check_encloses("streaming", t, 0.0);
    ckpt_chain_destroy(ch);
    ckpt_cpu_backend_destroy(&be);
}

/* ---- errors ----------------------------------------------------------------------------------- */

static ckpt_result last_item;
static char last_msg[512];
static void capture(const char *tag, ckpt_log_level level, ckpt_result item, const char *message, const char *file,
                    int line, void *user) {
    (void)tag; (void)level; (void)file; (void)line; (void)user;
    last_item = item;
    snprintf(last_msg, sizeof last_msg, "%s", message);
}

static void test_errors(void) {
    ckpt_backend be;
    ckpt_stage_desc st[NS];
    ckpt_stage_time t[NS];
    ckpt_chain_desc cd;
    ckpt_chain_stats stats;
    ckpt_chain *ch = NULL;
    ckpt_plan_desc pd;
    const void *out;
    ckpt_result r;
    ckpt_cpu_backend_create(NULL, &be);
    spin_stages(st, 0);
    memset(&cd, 0, sizeof cd);
    cd.stages = st; cd.n_stages = NS; cd.backend = &be; cd.logger.fn = capture;
    ckpt_chain_create(&cd, &ch);
    CHECK(ckpt_chain_measure(NULL, spin_x, spin_dy, NULL, 1, t) == CKPT_ERR_NULL_ARGUMENT, "NULL chain");
    CHECK(ckpt_chain_measure(ch, spin_x, spin_dy, NULL, 1, t) == CKPT_ERR_NO_PLAN, "no plan");
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_STORE_ALL;
    ckpt_chain_plan(ch, &pd, NULL);
    CHECK(ckpt_chain_measure(ch, NULL, spin_dy, NULL, 1, t) == CKPT_ERR_NULL_ARGUMENT, "NULL input");
    CHECK(ckpt_chain_measure(ch, spin_x, NULL, NULL, 1, t) == CKPT_ERR_NULL_ARGUMENT, "NULL grad_output");
    CHECK(ckpt_chain_measure(ch, spin_x, spin_dy, NULL, 0, t) == CKPT_ERR_BAD_ARGUMENT, "0 steps");
    CHECK(ckpt_chain_measure(ch, spin_x, spin_dy, NULL, -3, t) == CKPT_ERR_BAD_ARGUMENT, "-3 steps");
    CHECK(ckpt_forward(ch, spin_x, &out) == CKPT_OK, "forward");
    CHECK(ckpt_chain_measure(ch, spin_x, spin_dy, NULL, 1, t) == CKPT_ERR_OUT_OF_ORDER, "pending forward");
    ckpt_chain_reset_step(ch);

    /* a callback's error: the step is abandoned and the chain goes on */
    t[0].fwd_count = -7;
    calls = 0; fail_fwd_at = 11;    /* the second step's third forward (a step: 4 F, 4 B) */
    r = ckpt_chain_measure(ch, spin_x, spin_dy, NULL, 3, t);
    CHECK(r == CKPT_ERR_CALLBACK && t[0].fwd_count == -7, "a failing forward: %s", ckpt_result_string(r));
    memset(&stats, 0, sizeof stats);
    ckpt_chain_get_stats(ch, &stats);
    CHECK(stats.failed_stage == 2 && stats.steps == 1, "failed stage %d, %llu steps", stats.failed_stage,
          (unsigned long long)stats.steps);
    calls = 0; fail_fwd_at = 0; fail_bwd_at = 6;
    r = ckpt_chain_measure(ch, spin_x, spin_dy, NULL, 1, t);
    CHECK(r == CKPT_ERR_CALLBACK, "a failing backward: %s", ckpt_result_string(r));
    fail_bwd_at = 0;
    r = ckpt_chain_measure(ch, spin_x, spin_dy, NULL, 1, t);
    CHECK(r == CKPT_OK && t[1].fwd_count == 1, "measure after errors: %s", ckpt_result_string(r));
    CHECK(ckpt_forward(ch, spin_x, &out) == CKPT_OK && ckpt_backward(ch, spin_dy, NULL) == CKPT_OK,
          "a step after errors");

    /* ckpt_chain_set_times */
    CHECK(ckpt_chain_set_times(NULL, t) == CKPT_ERR_NULL_ARGUMENT, "set_times: NULL chain");
    CHECK(ckpt_chain_set_times(ch, NULL) == CKPT_ERR_NULL_ARGUMENT, "set_times: NULL times");
    t[3].fwd_time = -0.5;
    last_item = CKPT_OK; last_msg[0] = 0;
    CHECK(ckpt_chain_set_times(ch, t) == CKPT_ERR_BAD_TIME && last_item == CKPT_ERR_BAD_TIME &&
          strstr(last_msg, "stage 3 (spin3)") != NULL, "a negative time: %s", last_msg);
    t[3].fwd_time = 1.0; t[0].bwd_time = NAN;
    CHECK(ckpt_chain_set_times(ch, t) == CKPT_ERR_BAD_TIME && strstr(last_msg, "stage 0 (spin0)") != NULL,
          "a NaN time: %s", last_msg);
    ckpt_chain_destroy(ch);
    ckpt_cpu_backend_destroy(&be);
}

/* ---- bit-exactness: arithmetic stages with dropout -------------------------------------------- */

#define NA 6
#define W 64

static float aw[NA][W], agrad[NA][W];

/* y = dropout(x * w), elementwise; tape: x's mask (W bytes) */
static ckpt_result ar_fwd(const ckpt_fwd_args *a) {
    int i = a->ctx->stage, j;
    const float *x = (const float *)a->in;
    float *y = (float *)a->out;
    ckpt_philox ph;
    ckpt_result r = ckpt_ctx_rng(a->ctx, W / 4, &ph);
    if (r != CKPT_OK) return r;
    for (j = 0; j < W; j++) y[j] = x[j] * aw[i][j];
    ckpt_philox_dropout(&ph, 0.25f, y, y, (uint8_t *)a->tape, W);
    return CKPT_OK;
}

static ckpt_result ar_bwd(const ckpt_bwd_args *a) {
    int i = a->ctx->stage, j;
    const float *x = (const float *)a->in, *g = (const float *)a->grad_out;
    const uint8_t *mask = (const uint8_t *)a->tape;
    float *gx = (float *)a->grad_in;
    for (j = 0; j < W; j++) {
        float d = mask[j] ? g[j] / 0.75f : 0.0f;
        agrad[i][j] += d * x[j];
        if (gx) gx[j] = d * aw[i][j];
    }
    return CKPT_OK;
}

typedef struct snapshot { float grad[NA][W], dx[W]; } snapshot;

/* Steps on x (mode 0: two ordinary ones; 1: ckpt_chain_measure's warm-up and one timed; 2: one
   ordinary), then gradients zeroed and one ordinary step on x2. */
static void arith_run(int mode, int budget_third, snapshot *before, snapshot *after) {
    ckpt_backend be;
    ckpt_stage_desc st[NA];
    ckpt_chain_desc cd;
    ckpt_chain *ch = NULL;
    ckpt_plan_desc pd;
    ckpt_plan_info info;
    ckpt_stage_time t[NA];
    float x[W], x2[W], dy[W], dx[W];
    const void *out;
    int i, j;
    for (i = 0; i < NA; i++)
        for (j = 0; j < W; j++) aw[i][j] = 0.5f + 0.01f * (float)((i * 31 + j * 7) % 97);
    for (j = 0; j < W; j++) { x[j] = 0.1f * (float)(j % 13) - 0.6f; x2[j] = 0.05f * (float)(j % 7); dy[j] = 1.0f - 0.03f * (float)j; }
    memset(agrad, 0, sizeof agrad);
    memset(st, 0, sizeof st);
    for (i = 0; i < NA; i++) { st[i].forward = ar_fwd; st[i].backward = ar_bwd; st[i].out_bytes = 4 * W; st[i].tape_bytes = W; }
    ckpt_cpu_backend_create(NULL, &be);
    memset(&cd, 0, sizeof cd);
    cd.stages = st; cd.n_stages = NA; cd.backend = &be; cd.seed = 1234;
    ckpt_chain_create(&cd, &ch);
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_STORE_ALL;
    ckpt_chain_plan(ch, &pd, &info);
    if (budget_third) {
        pd.policy = CKPT_POLICY_OPTIMAL;
        pd.budget = info.peak / 3;
        CHECK(ckpt_chain_plan(ch, &pd, &info) == CKPT_OK && info.n_recomputed > 0, "arith plan at 1/3");
    }
    if (mode == 1) {
        CHECK(ckpt_chain_measure(ch, x, dy, dx, 1, NULL) == CKPT_OK, "arith warm-up");
        CHECK(ckpt_chain_measure(ch, x, dy, dx, 1, t) == CKPT_OK && t[NA - 1].fwd_count >= 1, "arith measure");
    } else {
        for (i = 0; i < (mode ? 1 : 2); i++)
            CHECK(ckpt_forward(ch, x, &out) == CKPT_OK && ckpt_backward(ch, dy, dx) == CKPT_OK, "arith step");
    }
    memcpy(before->grad, agrad, sizeof agrad);
    memcpy(before->dx, dx, sizeof dx);
    memset(agrad, 0, sizeof agrad);
    CHECK(ckpt_forward(ch, x2, &out) == CKPT_OK && ckpt_backward(ch, dy, dx) == CKPT_OK, "arith step after");
    memcpy(after->grad, agrad, sizeof agrad);
    memcpy(after->dx, dx, sizeof dx);
    ckpt_chain_destroy(ch);
    ckpt_cpu_backend_destroy(&be);
}

static void test_bit_exact(void) {
    static snapshot ref_b, ref_a, b, a;
    int k;
    arith_run(0, 0, &ref_b, &ref_a);    /* store-all, never measured */
    for (k = 0; k < 2; k++) {
        arith_run(1, k, &b, &a);
        CHECK(memcmp(&b, &ref_b, sizeof b) == 0, "%s: the measuring steps' gradients differ from two ordinary steps'",
              k ? "1/3 budget" : "store-all");
        CHECK(memcmp(&a, &ref_a, sizeof a) == 0, "%s: the step after measuring differs from a never-measured chain's",
              k ? "1/3 budget" : "store-all");
    }
    /* the comparison can fail: one step fewer before it, and the step draws other masks */
    arith_run(2, 0, &b, &a);
    CHECK(memcmp(&a, &ref_a, sizeof a) != 0, "a step after one step is the same as after two");
}

int main(void) {
    double t0 = now_ms();
    int j;
    for (j = 0; j < 1024; j++) { spin_x[j] = (float)j; spin_dy[j] = 1.0f; }
    test_errors();
    test_host_clock();
    test_recompute_and_replan();
    test_lanes();
    test_events();
    test_streaming_waits();
    test_bit_exact();
    printf("test_measure: %d checks, %d failures, %.2f s\n", checks, failures, (now_ms() - t0) / 1e3);
    return failures ? 1 : 0;
}
