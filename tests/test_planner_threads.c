/* ckpt_plan_desc.threads: planning threads change nothing but the time it takes.
   - On random chains of 17 to 100 stages (some repeating a block of stages, some with
     no-checkpoint flags or tape options), at max_units 0 (exact), 500 and 4096, at a random
     budget and at min_budget (the sparse frontiers at the smallest peak), threads = 2, 3 and 8
     give the same result, info and ops as threads = 1; so does the offload policy, which plans
     optimal at several budgets. Sizes are multiples of 512 bytes (the dense table plans), or on
     some chains of 40 to 64 stages 512 k + 1..499 bytes: exact mode then plans in bytes with the
     sparse frontiers, which the threads run too.
   - The threads really run: a team for a 100-stage chain starts its threads (POSIX).
   - threads < 0 is CKPT_ERR_BAD_ARGUMENT.
   Every length of the sparse frontiers runs on the team here (_CKPT_TEAM_WORK 0), not only those
   after a length of much work. */
#define _CKPT_TEAM_WORK 0
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_XORSHIFT64_SEED 0x7468726561647321ull
#include "test_util.h"

static void random_stage(ckpt_cost *c, int opts, int odd) {
    int o;
    memset(c, 0, sizeof *c);
    c->a = 512 * (1 + rnd() % 64) + (odd ? 1 + rnd() % 499 : 0);
    c->t = 512 * (rnd() % 128);
    c->wf = 512 * (rnd() % 8);
    c->wb = 512 * (rnd() % 16);
    c->f = (double)(1 + rnd() % 8) * 0.25;
    c->b = (double)(1 + rnd() % 16) * 0.25;
    c->flags = rnd() % 12 == 0 ? CKPT_STAGE_NO_CHECKPOINT : 0;
    if (opts && rnd() % 2) {
        c->n_options = 1 + (int)(rnd() % 2);
        for (o = 0; o < c->n_options; o++) {
            c->option_t[o] = 512 * (rnd() % 64);
            c->option_extra[o] = 0.25 * (double)(rnd() % 8);
        }
    }
}

static ckpt_result plan(const ckpt_cost *c, int n, ckpt_policy policy, uint64_t budget, uint32_t units, int threads,
                        ckpt_plan **out, ckpt_plan_info *info) {
    ckpt_plan_desc d;
    memset(&d, 0, sizeof d);
    d.policy = policy; d.budget = budget; d.max_units = units; d.threads = threads;
    if (policy == CKPT_POLICY_OFFLOAD) d.bandwidth = 2048.0;
    return ckpt_plan_create(c, n, &d, out, info);
}

/* Every field of two infos equal (times bit for bit). */
static int info_eq(const ckpt_plan_info *x, const ckpt_plan_info *y) {
    return x->policy == y->policy && x->budget == y->budget && !memcmp(&x->time, &y->time, sizeof x->time) &&
           x->peak == y->peak && x->arena == y->arena && x->fit_budget == y->fit_budget &&
           x->min_budget == y->min_budget && !memcmp(&x->store_all_time, &y->store_all_time, sizeof x->time) &&
           x->store_all_peak == y->store_all_peak && x->k == y->k && x->unit == y->unit &&
           x->guarantee == y->guarantee && x->n_ops == y->n_ops && x->n_recomputed == y->n_recomputed &&
           !memcmp(&x->compute_time, &y->compute_time, sizeof x->time) && x->host_peak == y->host_peak &&
           x->n_offloaded == y->n_offloaded;
}

/* The plan with each thread count against threads = 1; returns the number of comparisons. */
static int same_plans(const ckpt_cost *c, int n, ckpt_policy policy, uint64_t budget, uint32_t units, const char *what) {
    static const int counts[] = {2, 3, 8};
    ckpt_plan *p1 = NULL;
    ckpt_plan_info i1;
    ckpt_result r1 = plan(c, n, policy, budget, units, 1, &p1, &i1);
    int k, done = 0;
    for (k = 0; k < 3; k++) {
        ckpt_plan *p = NULL;
        ckpt_plan_info i;
        ckpt_result r = plan(c, n, policy, budget, units, counts[k], &p, &i);
        int n1 = 0, nk = 0;
        const ckpt_op *o1 = p1 ? ckpt_plan_ops(p1, &n1) : NULL, *ok = p ? ckpt_plan_ops(p, &nk) : NULL;
        CHECK(r == r1, "%s, %d stages, budget %llu, %u units: %s with %d threads, %s with 1", what, n,
              (unsigned long long)budget, units, ckpt_result_string(r), counts[k], ckpt_result_string(r1));
        CHECK(r != r1 || info_eq(&i, &i1), "%s, %d stages, %u units, %d threads: info differs (time %.17g "
              "against %.17g, peak %llu against %llu)", what, n, units, counts[k], i.time, i1.time,
              (unsigned long long)i.peak, (unsigned long long)i1.peak);
        CHECK(r != CKPT_OK || r1 != CKPT_OK || (n1 == nk && memcmp(o1, ok, (size_t)nk * sizeof *ok) == 0),
              "%s, %d stages, %u units, %d threads: %d ops against %d", what, n, units, counts[k], nk, n1);
        ckpt_plan_destroy(p);
        done++;
    }
    ckpt_plan_destroy(p1);
    return done;
}

int main(void) {
    int ci, cases = 0, n_chains = TEST_REDUCED ? 6 : 20;
    for (ci = 0; ci < n_chains; ci++) {
        int n = 17 + (int)(rnd() % 84), block = ci % 3 == 0 ? 1 + (int)(rnd() % 4) : 0, opts = ci % 4 == 1, i, u;
        int odd = ci % 3 == 2;
        if (odd) n = 40 + (int)(rnd() % 25);   /* exact mode in bytes, on every run */
        static const uint32_t units[] = {0, 500, 4096};
        ckpt_cost *c = (ckpt_cost *)calloc((size_t)n, sizeof *c), blk[4];
        ckpt_plan *p = NULL;
        ckpt_plan_info sa;
        if (!c) return 1;
        for (i = 0; i < 4; i++) random_stage(&blk[i], opts, odd);
        for (i = 0; i < n; i++) {
            if (block && i > 0 && i < n - 1) c[i] = blk[(i - 1) % block];
            else random_stage(&c[i], opts, odd);
        }
        if (plan(c, n, CKPT_POLICY_STORE_ALL, 0, 0, 1, &p, &sa) != CKPT_OK) { CHECK(0, "store-all"); free(c); continue; }
        ckpt_plan_destroy(p);
        for (u = 0; u < 3; u++) {
            /* exact mode beyond 64 stages only on some chains: it takes seconds there */
            uint64_t budget = sa.store_all_peak / (2 + rnd() % 3);
            ckpt_plan_info info;
            if (units[u] == 0 && n > 64 && (ci % 2 || TEST_REDUCED)) continue;
            cases += same_plans(c, n, CKPT_POLICY_OPTIMAL, budget, units[u], block ? "repeats" : odd ? "odd sizes" : "distinct");
            if (plan(c, n, CKPT_POLICY_OPTIMAL, budget, units[u], 1, &p, &info) == CKPT_OK) {
                ckpt_plan_destroy(p);
                cases += same_plans(c, n, CKPT_POLICY_OPTIMAL, info.min_budget, units[u], "min_budget");
            }
        }
        /* offload: 20 s on a 60-stage chain under ASan, so the reduced run takes the first chain alone */
        if (ci % 5 == 0 && (ci == 0 || !TEST_REDUCED))
            cases += same_plans(c, n, CKPT_POLICY_OFFLOAD, sa.store_all_peak / 3, 500, "offload");
        free(c);
    }
    printf("test_planner_threads: %d plans with 2, 3 and 8 threads equal to the plan with 1\n", cases);

    {   /* the threads start (where the system has them) */
        ckpt_cost c[100];
        _ckpt_dp d;
        _ckpt_team team;
        for (ci = 0; ci < 100; ci++) random_stage(&c[ci], 0, 0);
        CHECK(_ckpt_dp_setup(&d, NULL, c, 100, UINT64_MAX, 512, 0, 0) == CKPT_OK, "setup");
        CHECK(_ckpt_team_init(&team, &d, 3), "team");
        CHECK(team.workers == 3, "%d workers, 3 asked for", team.workers);
#if _CKPT_THREADS
        CHECK(team.started == 2, "%d threads started, 2 wanted", team.started);
#endif
        _ckpt_team_free(&team);
        CHECK(_ckpt_team_init(&team, &d, 64) && team.workers == 7, "a 100-stage chain: %d workers for 64 asked, "
              "7 wanted (one per 16 stages)", team.workers);
        _ckpt_team_free(&team);
        _ckpt_dp_free(&d);
    }
    {   /* a negative count */
        ckpt_cost c[3];
        ckpt_plan *p = NULL;
        ckpt_plan_info info;
        for (ci = 0; ci < 3; ci++) random_stage(&c[ci], 0, 0);
        CHECK(plan(c, 3, CKPT_POLICY_OPTIMAL, 0, 0, -1, &p, &info) == CKPT_ERR_BAD_ARGUMENT && !p,
              "threads = -1 accepted");
    }
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
