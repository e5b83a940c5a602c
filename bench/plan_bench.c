/* Planning time of the optimal policy on heterogeneous chains of 50, 100, 200 and 400 stages at
   a budget of a third of store-all's peak. Prints, per size: the median wall time of several
   runs, the unit the program was exact in, the frontier-free memory units a rotor-style table
   would need at that unit (budget / unit), predicted time relative to store-all, and the peak.
   Usage: plan_bench [reps] */
#define _POSIX_C_SOURCE 199309L
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t s = 88172645463325252ull;
static uint64_t rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    static const int sizes[] = {50, 100, 200, 400};
    int reps = argc > 1 ? atoi(argv[1]) : 5, si;
    printf("%-7s %-12s %-10s %-12s %-10s %-14s %-8s %s\n", "stages", "plan_ms", "unit", "units", "time/sa", "peak/budget", "recomp", "guarantee");
    for (si = 0; si < 4; si++) {
        int n = sizes[si], i, r;
        ckpt_cost *c = (ckpt_cost *)calloc((size_t)n, sizeof *c);
        ckpt_plan_desc pd = {0};
        ckpt_plan_info info;
        double t[32];
        if (!c) return 1;
        /* heterogeneous: sizes 1..64 units of 512 KiB-ish with random jitter in bytes, times 0.5..4 */
        for (i = 0; i < n; i++) {
            c[i].a = (1 + rnd() % 64) * 524288 + rnd() % 4096;
            c[i].t = (1 + rnd() % 128) * 524288 + rnd() % 4096;
            c[i].wf = (rnd() % 8) * 524288;
            c[i].wb = (rnd() % 16) * 524288;
            c[i].f = 0.5 + (double)(rnd() % 8) * 0.5;
            c[i].b = c[i].f * (1.5 + (double)(rnd() % 3) * 0.5);
        }
        pd.policy = CKPT_POLICY_STORE_ALL;
        if (ckpt_plan_create(c, n, &pd, NULL, &info) != CKPT_ERR_NULL_ARGUMENT) return 1;
        {
            ckpt_plan *p;
            if (ckpt_plan_create(c, n, &pd, &p, &info) != CKPT_OK) return 1;
            ckpt_plan_destroy(p);
        }
        pd.policy = CKPT_POLICY_OPTIMAL;
        pd.budget = info.store_all_peak / 3;
        if (reps > 32) reps = 32;
        for (r = 0; r < reps; r++) {
            ckpt_plan *p = NULL;
            double t0 = now();
            ckpt_result res = ckpt_plan_create(c, n, &pd, &p, &info);
            t[r] = now() - t0;
            if (res != CKPT_OK) { printf("%d stages: %s (min budget %llu)\n", n, ckpt_result_string(res), (unsigned long long)info.min_budget); return 1; }
            ckpt_plan_destroy(p);
        }
        qsort(t, (size_t)reps, sizeof t[0], cmp_d);
        printf("%-7d %-12.2f %-10llu %-12llu %-10.4f %-14.4f %-8d %s\n", n, t[reps / 2] * 1e3, (unsigned long long)info.unit,
               (unsigned long long)(pd.budget / info.unit), info.time / info.store_all_time,
               (double)info.peak / (double)pd.budget, info.n_recomputed,
               info.guarantee == CKPT_GUARANTEE_ALL_SCHEDULES ? "all schedules" : "persistent");
        free(c);
    }
    return 0;
}
