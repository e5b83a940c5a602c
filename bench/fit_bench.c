/* How often the arena changes what optimal plans. Random chains of 3 to 8 stages (sizes random
   multiples of 128 bytes, workspaces on a third of the stages, times 1 to 8) are planned at every
   budget from min_budget to store-all's peak in steps of CKPT_ALIGN (the planner rounds sizes up
   to CKPT_ALIGN, so a budget plans as the multiple below it). Printed: the plans the arena's
   descent lowered (info.fit_budget < budget: COST MODEL in ckpt.h), the chains with any, the
   chains where a larger budget planned slower than a smaller one, budgets from min_budget that
   did not plan (there must be none), and the CPU time. Below min_budget (down to 64 steps), it
   counts the budgets that plan anyway (a layout the search found, or a plan of larger peak with a
   smaller arena), and those of them with a larger budget below min_budget that does not plan:
   a budget that plans reports itself as min_budget, so there must be none.
   Usage: fit_bench [chains] (default 300) */
#define _DEFAULT_SOURCE     /* clock_gettime */
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t s = 88172645463325252ull;
static uint64_t rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; }

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    int chains = argc > 1 ? atoi(argv[1]) : 300, k, slower = 0, with_lowered = 0, failed = 0;
    long plans = 0, lowered = 0, below = 0, below_gap = 0;
    double t0 = cpu_now();
    if (chains < 1) { fprintf(stderr, "usage: fit_bench [chains]\n"); return 2; }
    for (k = 0; k < chains; k++) {
        ckpt_cost c[8];
        ckpt_plan_desc pd;
        ckpt_plan_info info;
        ckpt_plan *plan = NULL;
        uint64_t b, lo, hi;
        int i, n = 3 + (int)(rnd() % 6), low = 0, bad = 0;
        double prev = -1.0;
        memset(c, 0, sizeof c);
        memset(&pd, 0, sizeof pd);
        for (i = 0; i < n; i++) {
            c[i].f = (double)(1 + rnd() % 8); c[i].b = (double)(1 + rnd() % 8);
            c[i].a = 128 * (1 + rnd() % 24); c[i].t = 128 * (rnd() % 48);
            if (rnd() % 3 == 0) c[i].wf = 256 * (1 + rnd() % 10);
            if (rnd() % 3 == 0) c[i].wb = 256 * (1 + rnd() % 10);
        }
        pd.budget = 1;
        if (ckpt_plan_create(c, n, &pd, &plan, &info) != CKPT_ERR_INFEASIBLE) { failed++; continue; }
        lo = info.min_budget; hi = info.store_all_peak;
        for (b = lo; b <= hi; b += CKPT_ALIGN) {
            pd.budget = b;
            if (ckpt_plan_create(c, n, &pd, &plan, &info) != CKPT_OK) { failed++; break; }
            ckpt_plan_destroy(plan); plan = NULL;
            plans++;
            if (info.fit_budget < b) { low++; lowered++; }
            if (prev >= 0 && info.time > prev) bad = 1;
            prev = info.time;
        }
        with_lowered += low > 0;
        slower += bad;
        {   /* below min_budget: a budget that plans, under one that does not */
            int gap = 0, step;
            for (step = 1; step <= 64 && (uint64_t)step * CKPT_ALIGN < lo; step++) {
                pd.budget = lo - (uint64_t)step * CKPT_ALIGN;
                if (ckpt_plan_create(c, n, &pd, &plan, &info) == CKPT_OK) { below++; below_gap += gap; }
                else gap = 1;
                ckpt_plan_destroy(plan); plan = NULL;
            }
        }
    }
    printf("fit_bench: %d chains of 3-8 stages, %ld plans: %ld lowered by the arena (in %d chains); %d chains where a "
           "larger budget planned slower; %d budgets from min_budget that did not plan; below min_budget, %ld budgets "
           "planned, %ld of them under one that did not; %.2f s CPU\n", chains, plans, lowered, with_lowered, slower,
           failed, below, below_gap, cpu_now() - t0);
    return failed || below_gap ? 1 : 0;
}
