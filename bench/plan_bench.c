/* Planning time of the optimal policy (or offload's: --offload) on chains of 50, 100, 200 and 400
   stages at a budget of a third of store-all's peak. Sizes are multiples of 512 bytes (random
   multiples, so the budget is far above 65,536 such units). For each size it plans with
   max_units = 500 (rotor's setting in its own benchmarks), 4096, and 0 (exact, the default), and
   prints the median wall time and CPU time of several runs of ckpt_plan_create (the whole call:
   the program, the arena layout and min_budget's plan), the planning threads (--threads), the unit
   used, the number of memory units (budget / unit), the predicted step time relative to
   store-all, the peak relative to the budget, and, at 500 units, rotor's figure for the same chain
   (column rotor_ms).
   Chains: "hetero", every stage drawn at random; "repeat", a transformer's shape: an embedding
   stage, copies of a block of 4 random stages, a head stage.
   rotor_ms is not measured by this program: it is the median CPU time of rotor's C dynamic program
   (persistent_compute_table, at rotor's default 500 slots, the same budget) timed live on the
   chains of `plan_bench 3 400` by bench/rotor_plan_bench.py (which runs this program with --csv
   and --units 500) on dev-2c, 2026-11-24: bench/RESULTS.md, "rotor's planner timed live". The
   program prints that source, and issue 9's older figures labelled as the issue's, after the
   table.
   With a third argument "small", sizes are small multiples of 512 bytes so that every budget is
   under 65,536 units: the case where optimal must be exact; only max_units = 0 runs.
   With "short", chains of 6, 8 and 10 stages (four random "hetero" chains of each, sizes drawn as
   for "small") at the budget halfway from min_budget to store-all's peak: the default planner
   runs its exact search over all schedules there (CKPT_EXACT_SEARCH_MAX_STAGES), which max_units
   does not change; max_stages is ignored.
   Options (before the positional arguments):
     --csv DIR    write each chain it plans to DIR/<chain>_<stages>.csv in ckpt-plan's CSV format
                  (tools/ckpt-plan.c), with comment lines giving the budget and store-all's peak
                  and time; the directory must exist.
     --units N    plan only with max_units = N (default: 500, 4096 and 0; "small": 0).
     --threads N  ckpt_plan_desc.threads (default 1: the calling thread alone, as rotor runs).
     --chains K   plan K chains of each kind and size (default 1): the first is the one above,
                  the others (named <chain>.2 .. <chain>.K) are drawn the same way from a
                  generator seeded by their size and number, so the first stays the same.
     --offload X  plan the offload policy instead, with a link on which copying every stage's
                  output one way takes 1/X of the chain's compute time (f + b summed); the
                  guarantee column gives the plan's ("none" for a plan with offloads, whose
                  unit is 1, so that the units column is then the budget).
     --near-min   instead of a third of store-all's peak, plan at budgets near the smallest:
                  min_budget + x (store-all's peak - min_budget) for x = 0, 0.01, 0.03, 0.1
                  and 0.3 (min_budget: optimal's, at the same max_units), each named
                  <chain>+x. There the arena's layout search and descent cost most
                  (CKPT_LAYOUT_WORK in ckpt.h). Not with --csv or short.
   Usage: plan_bench [--csv DIR] [--units N] [--threads N] [--chains K] [--offload X] [--near-min]
                     [reps] [max_stages] [small|hetero|repeat|short] */
#define _DEFAULT_SOURCE     /* clock_gettime */
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t s = 88172645463325252ull;
static uint64_t rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
/* rotor's persistent_compute_table at 500 slots, median ms of CPU time, timed live by
   bench/rotor_plan_bench.py on these chains (bench/RESULTS.md, 2026-11-24); not measured here */
static const char *rotor_ms(const char *kind, int n) {
    if (!strcmp(kind, "hetero")) return n == 100 ? "986" : n == 200 ? "4523" : n == 400 ? "28691" : "-";
    if (strcmp(kind, "repeat")) return "-";     /* --chains: not timed with rotor */
    return n == 100 ? "983" : n == 200 ? "4636" : n == 400 ? "25976" : "-";
}
static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int threads = 1;
static double offload = 0.0;    /* --offload X (0: the optimal policy) */
static int near_min = 0;        /* --near-min */

static void run(const char *kind, const ckpt_cost *c, int n, uint64_t budget, uint32_t max_units, int reps) {
    ckpt_plan_desc pd = {0};
    ckpt_plan_info info;
    double t[32], u[32];
    int r;
    memset(&info, 0, sizeof info);      /* (reps >= 1; gcc -O3 cannot tell) */
    pd.policy = CKPT_POLICY_OPTIMAL;
    pd.budget = budget;
    pd.max_units = max_units;
    pd.threads = threads;
    if (offload > 0) {
        double bytes = 0, compute = 0;
        for (r = 0; r < n; r++) { bytes += (double)c[r].a; compute += c[r].f + c[r].b; }
        pd.policy = CKPT_POLICY_OFFLOAD;
        pd.bandwidth = offload * bytes / compute;
    }
    for (r = 0; r < reps; r++) {
        ckpt_plan *p = NULL;
        double t0 = now(), u0 = cpu_now();
        ckpt_result res = ckpt_plan_create(c, n, &pd, &p, &info);
        t[r] = now() - t0;
        u[r] = cpu_now() - u0;
        if (res != CKPT_OK) { printf("%d stages: %s\n", n, ckpt_result_string(res)); return; }
        ckpt_plan_destroy(p);
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_d);
    qsort(u, (size_t)reps, sizeof u[0], cmp_d);
    printf("%-9s %-7d %-10u %-9.1f %-9.1f %-8d %-10s %-10llu %-10llu %-9.4f %-11.4f %s\n", kind, n, max_units,
           t[reps / 2] * 1e3, u[reps / 2] * 1e3, threads, max_units == 500 ? rotor_ms(kind, n) : "-",
           (unsigned long long)info.unit, (unsigned long long)(budget / info.unit), info.time / info.store_all_time,
           (double)info.peak / (double)budget,
           info.guarantee == CKPT_GUARANTEE_ALL_SCHEDULES ? "all schedules"
           : info.guarantee == CKPT_GUARANTEE_PERSISTENT ? "persistent" : "none");
    fflush(stdout);
}

/* --near-min: budgets from min_budget (optimal's at max_units) up to store-all's peak */
static void run_near_min(const char *kind, const ckpt_cost *c, int n, uint64_t sa_peak, uint32_t max_units, int reps) {
    static const double x[] = {0.0, 0.01, 0.03, 0.1, 0.3};
    ckpt_plan_desc pd = {0};
    ckpt_plan_info info;
    ckpt_plan *p = NULL;
    char name[48];
    uint64_t range;
    int i;
    pd.budget = 1;     /* infeasible: its info names min_budget */
    pd.max_units = max_units;
    if (ckpt_plan_create(c, n, &pd, &p, &info) != CKPT_ERR_INFEASIBLE) { printf("%d stages: no min_budget\n", n); return; }
    range = sa_peak > info.min_budget ? sa_peak - info.min_budget : 0;
    for (i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "%s+%g", kind, x[i]);
        run(name, c, n, info.min_budget + (uint64_t)(x[i] * (double)range), max_units, reps);
    }
}

static void print_header(void) {
    printf("%-9s %-7s %-10s %-9s %-9s %-8s %-10s %-10s %-10s %-9s %-11s %s\n", "chain", "stages", "max_units", "wall_ms",
           "cpu_ms", "threads", "rotor_ms", "unit", "units", "time/sa", "peak/budget", "guarantee");
}

/* heterogeneous: every stage at random, all multiples of 512 bytes */
static void random_stage(ckpt_cost *c, int small) {
    uint64_t scale = small ? 1 : 256;
    c->a = 512 * (small ? 1 + rnd() % 64 : 256 + rnd() % 16384);
    c->t = 512 * (rnd() % (128 * scale));
    c->wf = 512 * (rnd() % (8 * scale));
    c->wb = 512 * (rnd() % (16 * scale));
    c->f = 0.5 + (double)(rnd() % 8) * 0.5;
    c->b = c->f * (1.5 + (double)(rnd() % 3) * 0.5);
}

/* --csv: the chain in ckpt-plan's CSV format, the budget and store-all's figures as comments */
static int write_csv(const char *dir, const char *kind, const ckpt_cost *c, int n, uint64_t budget,
                     const ckpt_plan_info *sa) {
    char path[4096];
    FILE *f;
    int i;
    snprintf(path, sizeof path, "%s/%s_%d.csv", dir, kind, n);
    if (!(f = fopen(path, "w"))) { fprintf(stderr, "plan_bench: cannot write %s\n", path); return 0; }
    fprintf(f, "# plan_bench chain %s, %d stages; budget = store-all's peak / 3\n", kind, n);
    fprintf(f, "# budget=%llu store_all_peak=%llu store_all_time=%.17g\n", (unsigned long long)budget,
            (unsigned long long)sa->store_all_peak, sa->store_all_time);
    fprintf(f, "name,fwd_time,bwd_time,out_bytes,tape_bytes,fwd_workspace,bwd_workspace\n");
    for (i = 0; i < n; i++)
        fprintf(f, "s%d,%.17g,%.17g,%llu,%llu,%llu,%llu\n", i + 1, c[i].f, c[i].b, (unsigned long long)c[i].a,
                (unsigned long long)c[i].t, (unsigned long long)c[i].wf, (unsigned long long)c[i].wb);
    return fclose(f) == 0;
}

/* "short": the exact search over all schedules on chains of 6 to 10 stages */
static int run_short(int reps) {
    static const int ns[] = {6, 8, 10};
    int si, k, i;
    print_header();
    for (si = 0; si < 3; si++)
        for (k = 0; k < 4; k++) {
            ckpt_cost c[10];
            ckpt_plan *p;
            ckpt_plan_desc pd = {0};
            ckpt_plan_info info;
            memset(c, 0, sizeof c);
            for (i = 0; i < ns[si]; i++) random_stage(&c[i], 1);
            pd.budget = 1;     /* infeasible: its info names min_budget and store-all's peak */
            if (ckpt_plan_create(c, ns[si], &pd, &p, &info) != CKPT_ERR_INFEASIBLE) return 1;
            run("short", c, ns[si], info.min_budget + (info.store_all_peak - info.min_budget) / 2, 0, reps);
        }
    return 0;
}

int main(int argc, char **argv) {
    static const int sizes[] = {50, 100, 200, 400};
    static const uint32_t units[] = {500, 4096, 0};
    const char *csv_dir = NULL;
    long only_units = -1;
    int reps, max_n, si, ui, kind, small, chains = 1, ci;
    const char *only;
    while ((argc > 1 && !strcmp(argv[1], "--near-min")) ||
           (argc > 2 && (!strcmp(argv[1], "--csv") || !strcmp(argv[1], "--units") || !strcmp(argv[1], "--threads") ||
                         !strcmp(argv[1], "--chains") || !strcmp(argv[1], "--offload")))) {
        if (!strcmp(argv[1], "--near-min")) { near_min = 1; argc--; argv++; continue; }
        if (!strcmp(argv[1], "--csv")) csv_dir = argv[2];
        else if (!strcmp(argv[1], "--offload")) {
            offload = atof(argv[2]);
            if (!(offload > 0)) { fprintf(stderr, "plan_bench: --offload must be above 0\n"); return 2; }
        }
        else if (!strcmp(argv[1], "--chains")) {
            chains = atoi(argv[2]);
            if (chains < 1) { fprintf(stderr, "plan_bench: --chains must be 1 or more\n"); return 2; }
        }
        else if (!strcmp(argv[1], "--threads")) {
            threads = atoi(argv[2]);
            if (threads < 0) { fprintf(stderr, "plan_bench: --threads must be 0 or more\n"); return 2; }
        }
        else {
            char *end;
            only_units = strtol(argv[2], &end, 10);
            if (*end || only_units < 0) { fprintf(stderr, "plan_bench: --units needs a number, 0 or more\n"); return 2; }
        }
        argc -= 2; argv += 2;
    }
    reps = argc > 1 ? atoi(argv[1]) : 3;
    max_n = argc > 2 ? atoi(argv[2]) : 400;
    only = argc > 3 ? argv[3] : "";
    small = strcmp(only, "small") == 0;
    if (reps < 1) reps = 1;
    if (reps > 32) reps = 32;
    if (near_min && (csv_dir || !strcmp(only, "short"))) {
        fprintf(stderr, "plan_bench: --near-min goes with neither --csv nor short\n");
        return 2;
    }
    if (strcmp(only, "short") == 0) return run_short(reps);
    print_header();
    for (kind = 0; kind < 2; kind++) {
        const char *name = kind ? "repeat" : "hetero";
        if (small ? kind : *only && strcmp(only, name)) continue;
        for (si = 0; si < 4 && sizes[si] <= max_n; si++) for (ci = 1; ci <= chains; ci++) {
            int n = sizes[si], i;
            ckpt_cost *c = (ckpt_cost *)calloc((size_t)n, sizeof *c), block[4];
            ckpt_plan *p;
            ckpt_plan_desc pd = {0};
            ckpt_plan_info info;
            uint64_t saved = s;
            char cname[32];
            if (!c) return 1;
            snprintf(cname, sizeof cname, ci == 1 ? "%s" : "%s.%d", name, ci);
            if (ci > 1) { s = 0x9e3779b97f4a7c15ull * (uint64_t)(n * 64 + ci); rnd(); }
            memset(block, 0, sizeof block);
            for (i = 0; i < 4; i++) random_stage(&block[i], 0);
            for (i = 0; i < n; i++) {
                if (!kind || i == 0 || i == n - 1) random_stage(&c[i], small);
                else c[i] = block[(i - 1) % 4];
            }
            if (ci > 1) s = saved;      /* (the first chains draw from s as they always did) */
            pd.policy = CKPT_POLICY_STORE_ALL;
            if (ckpt_plan_create(c, n, &pd, &p, &info) != CKPT_OK) return 1;
            ckpt_plan_destroy(p);
            if (csv_dir && !write_csv(csv_dir, cname, c, n, info.store_all_peak / 3, &info)) return 1;
            for (ui = small ? 2 : 0; ui < 3; ui++) {
                uint32_t u = only_units >= 0 ? (uint32_t)only_units : units[ui];
                if (near_min) run_near_min(cname, c, n, info.store_all_peak, u, reps);
                else run(cname, c, n, info.store_all_peak / 3, u, reps);
                if (only_units >= 0) break;
            }
            free(c);
        }
    }
    printf("rotor_ms: not measured by this run: rotor's persistent_compute_table at 500 slots, median CPU ms,\n"
           "  timed live on the chains of `plan_bench 3 400` by bench/rotor_plan_bench.py (dev-2c, 2026-11-24,\n"
           "  bench/RESULTS.md). Issue 9's figures, older: 222-241, 1600 and 8700-9900 ms at 100, 200, 400 stages.\n");
    return 0;
}
