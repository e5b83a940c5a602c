/* Planning time of the optimal policy on chains of 50, 100, 200 and 400 stages at a budget of a
   third of store-all's peak. Sizes are multiples of 512 bytes (random multiples, so the budget is
   far above 65,536 such units). For each size it plans with max_units = 500 (rotor's setting in
   its own benchmarks), 4096, and 0 (exact, the default), and prints the median wall time and CPU
   time of several runs of ckpt_plan_create (the whole call: the program, the arena layout and
   min_budget's plan), the unit used, the number of memory units (budget / unit), the predicted
   step time relative to store-all, the peak relative to the budget, and, at 500 units, rotor's
   figure for the same length.
   Chains: "hetero", every stage drawn at random; "repeat", a transformer's shape: an embedding
   stage, copies of a block of 4 random stages, a head stage.
   rotor's figures are its C dynamic program (persistent_compute_table) at 500 units on random
   chains, CPU time, measured on this project's 2-core VM for issue 9 (its time does not depend on
   the sizes: it fills every (stage, stage, unit) entry). They are anchors, not measured here.
   With a third argument "small", sizes are small multiples of 512 bytes so that every budget is
   under 65,536 units: the case where optimal must be exact; only max_units = 0 runs.
   Usage: plan_bench [reps] [max_stages] [small|hetero|repeat] */
#define _POSIX_C_SOURCE 199309L
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
/* rotor's C program at 500 units, ms of CPU time (issue 9's table: low and high of its runs) */
static const char *rotor_ms(int n) {
    return n == 100 ? "222-241" : n == 200 ? "1600" : n == 400 ? "8700-9900" : "-";
}
static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void run(const char *kind, const ckpt_cost *c, int n, uint64_t budget, uint32_t max_units, int reps) {
    ckpt_plan_desc pd = {0};
    ckpt_plan_info info;
    double t[32], u[32];
    int r;
    memset(&info, 0, sizeof info);      /* (reps >= 1; gcc -O3 cannot tell) */
    pd.policy = CKPT_POLICY_OPTIMAL;
    pd.budget = budget;
    pd.max_units = max_units;
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
    printf("%-7s %-7d %-10u %-9.1f %-9.1f %-10s %-10llu %-10llu %-9.4f %-11.4f %s\n", kind, n, max_units, t[reps / 2] * 1e3,
           u[reps / 2] * 1e3, max_units == 500 ? rotor_ms(n) : "-",
           (unsigned long long)info.unit, (unsigned long long)(budget / info.unit), info.time / info.store_all_time,
           (double)info.peak / (double)budget, info.guarantee == CKPT_GUARANTEE_ALL_SCHEDULES ? "all schedules" : "persistent");
    fflush(stdout);
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

int main(int argc, char **argv) {
    static const int sizes[] = {50, 100, 200, 400};
    static const uint32_t units[] = {500, 4096, 0};
    int reps = argc > 1 ? atoi(argv[1]) : 3, max_n = argc > 2 ? atoi(argv[2]) : 400, si, ui, kind;
    const char *only = argc > 3 ? argv[3] : "";
    int small = strcmp(only, "small") == 0;
    if (reps < 1) reps = 1;
    if (reps > 32) reps = 32;
    printf("%-7s %-7s %-10s %-9s %-9s %-10s %-10s %-10s %-9s %-11s %s\n", "chain", "stages", "max_units", "wall_ms",
           "cpu_ms", "rotor_ms", "unit", "units", "time/sa", "peak/budget", "guarantee");
    for (kind = 0; kind < 2; kind++) {
        const char *name = kind ? "repeat" : "hetero";
        if (small ? kind : *only && strcmp(only, name)) continue;
        for (si = 0; si < 4 && sizes[si] <= max_n; si++) {
            int n = sizes[si], i;
            ckpt_cost *c = (ckpt_cost *)calloc((size_t)n, sizeof *c), block[4];
            ckpt_plan *p;
            ckpt_plan_desc pd = {0};
            ckpt_plan_info info;
            if (!c) return 1;
            memset(block, 0, sizeof block);
            for (i = 0; i < 4; i++) random_stage(&block[i], 0);
            for (i = 0; i < n; i++) {
                if (!kind || i == 0 || i == n - 1) random_stage(&c[i], small);
                else c[i] = block[(i - 1) % 4];
            }
            pd.policy = CKPT_POLICY_STORE_ALL;
            if (ckpt_plan_create(c, n, &pd, &p, &info) != CKPT_OK) return 1;
            ckpt_plan_destroy(p);
            for (ui = small ? 2 : 0; ui < 3; ui++) run(name, c, n, info.store_all_peak / 3, units[ui], reps);
            free(c);
        }
    }
    return 0;
}
