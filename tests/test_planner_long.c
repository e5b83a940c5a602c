/* The optimal policy on chains longer than the exact search covers (the persistent program):
   - its schedules replay validly within budget, with the reported time and peak;
   - it is never slower than every-k, sqrt or greedy, whose schedules are persistent too;
   - its smallest feasible budget is exact: planning at it works, one byte below does not;
   - its dense table and its sparse frontiers agree; with a coarse max_units it stays in budget;
   - on chains of up to 10 stages it is never faster than the exact search over all schedules;
   - huge budgets and coarse units neither overflow nor abort; with max_units the reported
     smallest budget still plans in that unit (it can differ from the exact unit's only where
     the floor plan's arena, not the smallest peak, sets it); budget 0 is no limit;
   - min_budget is the arena of the >>floor plan (each sub-problem at its smallest peak), which
     replays at the smallest peak and plans for optimal and offload; where the fastest plan at
     the smallest peak needs a larger arena, the floor plan is returned (guarantee NONE); that
     fastest plan runs the sparse frontiers first, not a dense table of hundreds of MiB;
   - at 500 units, on sizes that are not multiples of the unit, its plan is never predicted
     slower than rotor's rounding (a + t rounded once, rotor's options) where that plan fits;
   - on chains that repeat a block of stages, it computes about (block + 2) * n rows, not
     n * (n + 1) / 2, and plans as fast a step as on the same chain with every stage made
     distinct (a forward time changed in its last bits), where nothing is shared;
   - the dense table, which skips the values its row summaries prove cannot win, holds in every
     cell exactly the minimum over the sub-problem's options of their values (each computed), on
     chains with and without repeats, flags and tape options, at every level; >>packed, it holds
     the same bits in fewer cells (with times that sum exactly, and times that round);
   - bounded by an incumbent's time (>>bound), the dense table holds in every cell the minimum of
     its row's start value and its options' values, differs from the unbounded table only near
     or above that start value, and gives the unbounded table's plan, or none when the incumbent
     is faster, as the sparse frontiers do; optimal returns every-k's plan when every plan of the
     program is slower;
   - every-k's search for its best k and greedy's trajectory, which analyse one schedule per
     candidate, reuse one block for those analyses: fewer than 8 host allocations per stage
     (one analysis in its own allocations makes 18); the plans replay, and are the ones planned with
     the default allocator.
   CMake also builds it with gcc's -mfpmath=387 on x86 (test_planner_long_x87, CKPT_TEST_X87):
   x87 maths keeps sums in registers at more than double's precision (FLT_EVAL_METHOD 2, as
   32-bit x86 builds do), where a value the program computes two ways rounds two ways unless
   both are the same expression. */
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(CKPT_TEST_X87) && FLT_EVAL_METHOD != 2
#error "CKPT_TEST_X87: this build does not evaluate in x87 precision (FLT_EVAL_METHOD is not 2)"
#endif

#define TEST_XORSHIFT64_SEED 0x1234567887654321ull
#include "test_util.h"

static void random_chain(ckpt_cost *c, int n, uint64_t unit) {
    int i;
    for (i = 0; i < n; i++) {
        c[i].a = unit * (1 + rnd() % 16);
        c[i].t = unit * (rnd() % 32);
        c[i].wf = unit * (rnd() % 4);
        c[i].wb = unit * (rnd() % 6);
        c[i].f = (double)(1 + rnd() % 8) * 0.25;
        c[i].b = (double)(1 + rnd() % 16) * 0.25;
        c[i].flags = rnd() % 9 == 0 ? CKPT_STAGE_NO_CHECKPOINT : 0;
    }
}

static int plan(const ckpt_cost *c, int n, ckpt_policy p, uint64_t budget, uint32_t max_units, ckpt_plan_info *info, ckpt_plan **out) {
    ckpt_plan_desc d;
    memset(&d, 0, sizeof d);
    d.policy = p; d.budget = budget; d.max_units = max_units;
    return ckpt_plan_create(c, n, &d, out, info);
}

static void replay_ok(const ckpt_cost *c, int n, const ckpt_plan *pl, uint64_t budget) {
    int n_ops;
    const ckpt_op *ops = ckpt_plan_ops(pl, &n_ops);
    double t = 0;
    uint64_t p = 0;
    ckpt_result r = ckpt_schedule_simulate(c, n, ops, n_ops, &t, &p, NULL);
    CHECK(r == CKPT_OK && p <= budget && t == ckpt_plan_get_info(pl)->time && p == ckpt_plan_get_info(pl)->peak,
          "replay: %s time %g peak %llu budget %llu", ckpt_result_string(r), t, (unsigned long long)p, (unsigned long long)budget);
}

/* Sanitizer builds: 6 of the 40 long chains and 3 of the 30 rounding chains, to keep CI's time. */
#if !TEST_REDUCED
#define LONG_CHAINS 40
#define ROUNDING_CHAINS 30
#else
#define ROUNDING_CHAINS 3
#define LONG_CHAINS 6
#endif

static uint64_t program_min_peak(const ckpt_cost *c, int n);

static void long_chains(void) {
    int ci, plans = 0;
    for (ci = 0; ci < LONG_CHAINS; ci++) {
        int n = 11 + (int)(rnd() % 40), bi;
        uint64_t unit = 256u << (rnd() % 4);   /* the model counts sizes in CKPT_ALIGN steps */
        ckpt_cost *c = (ckpt_cost *)calloc((size_t)n, sizeof *c);
        ckpt_plan_info sa, info, other;
        ckpt_plan *pl = NULL, *po = NULL;
        random_chain(c, n, unit);
        if (plan(c, n, CKPT_POLICY_OPTIMAL, 1, 0, &info, &pl) != CKPT_ERR_INFEASIBLE) { CHECK(0, "budget 1 feasible"); continue; }
        CHECK(info.guarantee == CKPT_GUARANTEE_PERSISTENT || info.min_budget == 0, "guarantee for %d stages", n);
        /* min budget exact */
        CHECK(plan(c, n, CKPT_POLICY_OPTIMAL, info.min_budget, 0, &sa, &pl) == CKPT_OK, "plan at min_budget %llu",
              (unsigned long long)info.min_budget);
        ckpt_plan_destroy(pl); pl = NULL;
        /* min_budget is the program's smallest peak when that plan's arena fits in it; else it is
           the arena that plan needs, and a plan with a smaller arena may exist below it (a
           layout gap: checked only where min_budget is the smallest peak) */
        if (sa.peak == info.min_budget && info.min_budget == program_min_peak(c, n))
            CHECK(plan(c, n, CKPT_POLICY_OPTIMAL, info.min_budget - 1, 0, &other, &pl) == CKPT_ERR_INFEASIBLE,
                  "min_budget - 1 feasible");
        for (bi = 0; bi < 6; bi++) {
            uint64_t budget = info.min_budget + rnd() % (info.store_all_peak - info.min_budget + 1);
            int pi;
            CHECK(plan(c, n, CKPT_POLICY_OPTIMAL, budget, 0, &sa, &pl) == CKPT_OK, "optimal at %llu", (unsigned long long)budget);
            if (!pl) continue;
            plans++;
            replay_ok(c, n, pl, budget);
            CHECK(unit % sa.unit == 0, "unit %llu does not divide %llu: not exact", (unsigned long long)sa.unit, (unsigned long long)unit);
            CHECK(sa.time >= sa.store_all_time - 1e-9, "faster than store-all");
            for (pi = 1; pi < CKPT_POLICY_COUNT_ && sa.fit_budget == budget; pi++) {   /* optimal at budget */
                if (plan(c, n, (ckpt_policy)pi, budget, 0, &other, &po) == CKPT_OK) {
                    CHECK(sa.time <= other.time * (1 + 1e-12), "%d stages, budget %llu: %s is faster (%g < %g)", n,
                          (unsigned long long)budget, ckpt_policy_name((ckpt_policy)pi), other.time, sa.time);
                    replay_ok(c, n, po, budget);
                }
                ckpt_plan_destroy(po); po = NULL;
            }
            /* coarse units: still within budget, never faster than the exact plan */
            if (plan(c, n, CKPT_POLICY_OPTIMAL, budget, 50, &other, &po) == CKPT_OK) {
                replay_ok(c, n, po, budget);
                /* the coarse unit, or the exact one when the coarse unit found nothing */
                CHECK((other.time >= sa.time - 1e-9 || sa.fit_budget < budget) &&
                      (other.unit >= other.fit_budget / 50 || unit % other.unit == 0),
                      "coarse plan: time %g vs %g, unit %llu", other.time, sa.time, (unsigned long long)other.unit);
                /* min_budget comes from the >>floor plan, in the exact unit whatever max_units is;
                   it must plan in that unit */
                CHECK(other.min_budget == info.min_budget, "min_budget %llu with max_units, %llu without",
                      (unsigned long long)other.min_budget, (unsigned long long)info.min_budget);
                ckpt_plan_destroy(po); po = NULL;
                CHECK(plan(c, n, CKPT_POLICY_OPTIMAL, other.min_budget, 50, &other, &po) == CKPT_OK,
                      "min_budget %llu with max_units does not plan", (unsigned long long)other.min_budget);
            }
            ckpt_plan_destroy(po); po = NULL;
            /* the dense table and the sparse frontiers agree */
            {
                _ckpt_sched a = {NULL, 0, 0}, b = {NULL, 0, 0};
                uint64_t ma, mb;
                double ta = 0, tb = 0;
                uint64_t pa = 0, pb = 0;
                ckpt_result ra = _ckpt_persistent_in(NULL, c, n, budget, sa.unit, _ckpt_dp_level(n), 0, 1, 1, INFINITY,
                                                     &budget, 1, &a, &ma, NULL);
                ckpt_result rb = _ckpt_persistent_in(NULL, c, n, budget, sa.unit, _ckpt_dp_level(n), 0, 0, 1, INFINITY,
                                                     &budget, 1, &b, &mb, NULL);
                CHECK(ra == CKPT_OK && rb == CKPT_OK && ma == mb, "dense %s sparse %s", ckpt_result_string(ra), ckpt_result_string(rb));
                if (ra == CKPT_OK && rb == CKPT_OK) {
                    ckpt_schedule_simulate(c, n, a.ops, a.n_ops, &ta, &pa, NULL);
                    ckpt_schedule_simulate(c, n, b.ops, b.n_ops, &tb, &pb, NULL);
                    CHECK(fabs(ta - tb) <= 1e-9 * ta && pa <= budget && pb <= budget, "dense %g/%llu sparse %g/%llu", ta,
                          (unsigned long long)pa, tb, (unsigned long long)pb);
                }
                free(a.ops); free(b.ops);
            }
            ckpt_plan_destroy(pl); pl = NULL;
        }
        free(c);
    }
    printf("long chains: %d optimal plans checked\n", plans);
}

/* Persistent schedules are a subset of all schedules: never faster than the exact search. */
static void short_chains(void) {
    int ci, equal = 0, total = 0;
    for (ci = 0; ci < 150; ci++) {
        int n = 2 + (int)(rnd() % 7);
        ckpt_cost c[10] = {{0}};
        ckpt_plan_info info;
        ckpt_plan *pl = NULL;
        uint64_t budget;
        random_chain(c, n, CKPT_ALIGN);   /* _ckpt_persistent sees these sizes as they are */
        if (plan(c, n, CKPT_POLICY_OPTIMAL, 1, 0, &info, &pl) != CKPT_ERR_INFEASIBLE) continue;
        budget = info.min_budget + rnd() % (info.store_all_peak - info.min_budget + 1);
        if (plan(c, n, CKPT_POLICY_OPTIMAL, budget, 0, &info, &pl) != CKPT_OK) { CHECK(0, "exact plan"); continue; }
        CHECK(info.guarantee == CKPT_GUARANTEE_ALL_SCHEDULES, "exact search for %d stages", n);
        if (info.fit_budget < budget) { ckpt_plan_destroy(pl); continue; }   /* planned lower for its arena */
        {
            _ckpt_sched s = {NULL, 0, 0};
            uint64_t mp = 0, unit = 0;
            ckpt_result r = _ckpt_persistent(NULL, c, n, budget, 0, 1, INFINITY, &s, &mp, &unit);
            if (r == CKPT_OK) {
                double t = 0; uint64_t p = 0;
                CHECK(ckpt_schedule_simulate(c, n, s.ops, s.n_ops, &t, &p, NULL) == CKPT_OK && p <= budget, "persistent replay");
                CHECK(t >= info.time - 1e-9, "persistent %g beats the exact search %g", t, info.time);
                total++;
                equal += fabs(t - info.time) <= 1e-9;
            } else {
                CHECK(r == CKPT_ERR_INFEASIBLE && mp > budget, "persistent: %s", ckpt_result_string(r));
            }
            free(s.ops);
        }
        ckpt_plan_destroy(pl);
    }
    printf("short chains: persistent optimum equals the exact one in %d of %d\n", equal, total);
}

/* Budgets at the top of the range, with and without max_units: no overflow, no abort. */
static void huge_budgets(void) {
    static const uint64_t budgets[] = {UINT64_MAX, (uint64_t)1 << 63, (uint64_t)1 << 40};
    static const uint32_t units[] = {0, 2, 3, 500};
    ckpt_cost c[12] = {{0}};
    int bi, ui;
    random_chain(c, 12, 64);
    for (bi = 0; bi < 3; bi++)
        for (ui = 0; ui < 4; ui++) {
            ckpt_plan_info info;
            ckpt_plan *pl = NULL;
            ckpt_result r = plan(c, 12, CKPT_POLICY_OPTIMAL, budgets[bi], units[ui], &info, &pl);
            CHECK(r == CKPT_OK && info.time == info.store_all_time, "budget %llu max_units %u: %s time %g (store-all %g)",
                  (unsigned long long)budgets[bi], units[ui], ckpt_result_string(r), info.time, info.store_all_time);
            if (pl) replay_ok(c, 12, pl, budgets[bi]);
            ckpt_plan_destroy(pl);
        }
}

/* The smallest peak of the long-chain program's schedules, in bytes. */
static uint64_t program_min_peak(const ckpt_cost *c, int n) {
    ckpt_cost mc[96] = {{0}};       /* floor_plans: at most 94 stages */
    _ckpt_dp d;
    uint64_t mp = 0;
    _ckpt_costs_model(c, n, mc);
    if (_ckpt_dp_setup(&d, NULL, mc, n, UINT64_MAX >> 4, 1, _ckpt_dp_level(n), 0) == CKPT_OK) {
        _ckpt_dp_minpeak(&d);
        mp = d.minp[0][_CKPT_IDX(&d, 1, n)];
    }
    _ckpt_dp_free(&d);
    return mp;
}

/* With max_units, the reported smallest budget is one that plans. */
static void min_budget_with_units(void) {
    int ci;
    for (ci = 0; ci < 40; ci++) {
        int n = 11 + (int)(rnd() % 10);
        ckpt_cost c[32] = {{0}};
        ckpt_plan_info info, again;
        ckpt_plan *pl = NULL;
        uint32_t mu = 2 + (uint32_t)(rnd() % 50);
        random_chain(c, n, 1 + rnd() % 100);
        if (plan(c, n, CKPT_POLICY_OPTIMAL, 1, mu, &info, &pl) != CKPT_ERR_INFEASIBLE) { CHECK(0, "budget 1"); continue; }
        CHECK(plan(c, n, CKPT_POLICY_OPTIMAL, info.min_budget, mu, &again, &pl) == CKPT_OK, "%d stages, max_units %u: "
              "min_budget %llu does not plan", n, mu, (unsigned long long)info.min_budget);
        ckpt_plan_destroy(pl); pl = NULL;
        if (again.peak == info.min_budget && info.min_budget == program_min_peak(c, n))   /* not set by a layout */
            CHECK(plan(c, n, CKPT_POLICY_OPTIMAL, info.min_budget - 1, mu, &again, &pl) == CKPT_ERR_INFEASIBLE,
                  "below min_budget");
        ckpt_plan_destroy(pl);
    }
}

/* Budget 0 means no limit, even for a policy that peaks above store-all. */
static void budget_zero(void) {
    ckpt_cost c[4] = {{0}};
    ckpt_plan_info info;
    ckpt_plan *pl = NULL;
    int i;
    memset(c, 0, sizeof c);
    for (i = 0; i < 4; i++) { c[i].f = 1; c[i].b = 2; c[i].a = 1; c[i].t = 1; }
    c[1].a = 100; c[1].wf = 1000;   /* recomputing stage 2 overlaps a live gradient */
    CHECK(plan(c, 4, CKPT_POLICY_SQRT, 0, 0, &info, &pl) == CKPT_OK && info.peak > info.store_all_peak &&
          info.budget == info.peak, "sqrt with no limit: peak %llu budget %llu store-all %llu",
          (unsigned long long)info.peak, (unsigned long long)info.budget, (unsigned long long)info.store_all_peak);
    ckpt_plan_destroy(pl);
}

/* CKPT_LOG_WARN: one warning, and only when optimal rounded sizes without being asked to (the
   exact program outgrew its limits). 160 stages of sizes with no common unit above CKPT_ALIGN, at
   a third of their sum, fall back here (about 4 s); 20 such stages plan exactly. */
static int n_warn;
static void count_warn(const char *tag, ckpt_log_level level, ckpt_result item, const char *msg, const char *file,
                       int line, void *user) {
    (void)tag; (void)item; (void)msg; (void)file; (void)line; (void)user;
    n_warn += level == CKPT_LOG_WARN;
}
/* A chain of n stages from the LCG state *s: f in 1..fmax, b = 2f, out and tape bytes 1..amax and
   1..tmax times CKPT_ALIGN; then optimal at a third of its total bytes, with the warnings
   counted (n_warn). Returns what ckpt_plan_create returns. */
static ckpt_result plan_lcg_chain(ckpt_cost *c, int n, uint32_t *s, int fmax, int amax, int tmax, ckpt_plan_desc *d,
                                  ckpt_plan **pl, ckpt_plan_info *info) {
    uint64_t total = 0;
    int i;
    for (i = 0; i < n; i++) {
        memset(&c[i], 0, sizeof c[i]);
        *s = *s * 1103515245u + 12345u; c[i].f = 1 + (*s >> 16) % (uint32_t)fmax; c[i].b = 2 * c[i].f;
        *s = *s * 1103515245u + 12345u; c[i].a = (uint64_t)(1 + (*s >> 8) % (uint32_t)amax) * CKPT_ALIGN;
        *s = *s * 1103515245u + 12345u; c[i].t = (uint64_t)(1 + (*s >> 8) % (uint32_t)tmax) * CKPT_ALIGN;
        total += c[i].a + c[i].t;
    }
    memset(d, 0, sizeof *d);
    d->policy = CKPT_POLICY_OPTIMAL;
    d->budget = total / 3;
    d->logger.fn = count_warn;
    n_warn = 0;
    return ckpt_plan_create(c, n, d, pl, info);
}

/* A counting allocator: the most host bytes live at once. */
static size_t cnt_live, cnt_peak;
static void *cnt_alloc(size_t bytes, void *u) {
    size_t *p = (size_t *)malloc(bytes + 16);
    (void)u;
    if (!p) return NULL;
    *p = bytes;
    if ((cnt_live += bytes) > cnt_peak) cnt_peak = cnt_live;
    return (char *)p + 16;
}
static void cnt_free(void *ptr, void *u) {
    (void)u;
    if (ptr) { size_t *p = (size_t *)((char *)ptr - 16); cnt_live -= *p; free(p); }
}

/* The fastest plan at the smallest peak runs the sparse frontiers before the dense table. On 50
   stages of a repeated block with sizes in 512-byte steps, the dense table in the exact unit
   would fit there (under 65,536 units) and take over 128 MiB; that plan, and planning at 500
   units (min_budget from the >>floor plan), each peak under 32 MiB of host memory. */
static void floor_plan_memory(void) {
    enum { N = 50 };
    ckpt_cost c[N], mc[N], block[4];
    ckpt_plan_desc d;
    ckpt_plan_info sa, info;
    ckpt_plan *pl = NULL;
    _ckpt_rep rp;
    uint64_t g, mp;
    double bytes;
    int i, tries, chosen = 0, level = _ckpt_dp_level(N);
    /* a chain whose smallest peak would get a large dense table */
    for (tries = 0; tries < 20 && !chosen; tries++) {
        memset(c, 0, sizeof c); memset(block, 0, sizeof block);
        for (i = 0; i < 6; i++) {     /* the block's 4 stages, then the first and the last */
            ckpt_cost *s = i < 4 ? &block[i] : i == 4 ? &c[0] : &c[N - 1];
            s->a = 512 * (256 + rnd() % 16384); s->t = 512 * (rnd() % 32768);
            s->wf = 512 * (rnd() % 2048); s->wb = 512 * (rnd() % 4096);
            s->f = 0.5 + (double)(rnd() % 8) * 0.5; s->b = s->f * (1.5 + (double)(rnd() % 3) * 0.5);
        }
        for (i = 1; i < N - 1; i++) c[i] = block[(i - 1) % 4];
        _ckpt_costs_model(c, N, mc);
        g = _ckpt_exact_unit(mc, N);
        mp = program_min_peak(c, N);
        CHECK(_ckpt_rep_make(NULL, mc, N, &rp) == CKPT_OK, "rows");
        bytes = (double)rp.n_rows * _ckpt_dp_families(level, 1, 0, NULL) * (double)(mp / g + 1) * 8.0;
        chosen = mp / g <= 65536 && _ckpt_dense_fits(&rp, mp / g, level, 1, 0) && bytes > 128.0 * 1048576.0;
        _ckpt_rep_free(NULL, &rp);
    }
    CHECK(chosen, "no chain in 20 whose smallest peak would get a dense table of over 128 MiB");
    CHECK(plan(c, N, CKPT_POLICY_STORE_ALL, 0, 0, &sa, &pl) == CKPT_OK, "store-all");
    ckpt_plan_destroy(pl); pl = NULL;
    memset(&d, 0, sizeof d);
    d.policy = CKPT_POLICY_OPTIMAL; d.budget = sa.store_all_peak / 3; d.max_units = 500;
    d.allocator.alloc = cnt_alloc; d.allocator.free = cnt_free;
    cnt_live = cnt_peak = 0;
    CHECK(ckpt_plan_create(c, N, &d, &pl, &info) == CKPT_OK && info.min_budget >= mp, "plan");
    ckpt_plan_destroy(pl);
    CHECK(cnt_live == 0 && cnt_peak < ((size_t)32 << 20), "planning peaked at %.1f MiB of host memory (%zu bytes left)",
          (double)cnt_peak / 1048576.0, cnt_live);
    printf("test_planner_long: planning at a third of store-all: %.1f MiB of host memory at most (the dense table at "
           "the smallest peak: %.0f MiB)\n", (double)cnt_peak / 1048576.0, bytes / 1048576.0);
    {   /* the fastest plan at the smallest peak (the plan returned when only that budget plans) */
        ckpt_allocator al;
        _ckpt_sched s = {NULL, 0, 0};
        uint64_t p, u;
        al.alloc = cnt_alloc; al.free = cnt_free; al.user = NULL;
        cnt_live = cnt_peak = 0;
        CHECK(_ckpt_persistent(&al, mc, N, mp, 500, 1, INFINITY, &s, &p, &u) == CKPT_OK && p == mp && u == g && s.n_ops,
              "the fastest plan at the smallest peak");
        _ckpt_free(&al, s.ops);
        CHECK(cnt_live == 0 && cnt_peak < ((size_t)32 << 20), "at the smallest peak: %.1f MiB of host memory (%zu bytes "
              "left)", (double)cnt_peak / 1048576.0, cnt_live);
        printf("test_planner_long: the fastest plan at the smallest peak: %.1f MiB of host memory at most\n",
               (double)cnt_peak / 1048576.0);
    }
}

/* >>floor: min_budget is the arena of a plan at the program's smallest peak that keeps each
   sub-problem at its own smallest peak (the smallest peak itself when the arena needs no more),
   whatever the budget and max_units. That plan replays at exactly the smallest peak; its budget
   plans, for optimal and for offload (with a link, on 21-64 stages); below the smallest peak,
   optimal and offload without a link say INFEASIBLE and name it. Where it is returned (only it
   fits), its guarantee is NONE. */
static void floor_plans(void) {
    int ci, gaps = 0, below = 0, returned = 0;
    for (ci = 0; ci < (TEST_REDUCED ? 12 : 48); ci++) {
        int n = ci % 3 == 0 ? 12 + (int)(rnd() % 9) : ci % 3 == 1 ? 21 + (int)(rnd() % 44) : 65 + (int)(rnd() % 30), i;
        ckpt_cost c[96], mc[96];
        ckpt_plan_info li, info, fi;
        ckpt_plan *pl = NULL;
        ckpt_plan_desc d;
        _ckpt_sched L = {NULL, 0, 0}, O = {NULL, 0, 0};
        uint64_t m, lw, pool = 0, p = 0, mp, u, oa = 0;
        double t = 0;
        memset(c, 0, sizeof c);
        random_chain(c, n, CKPT_ALIGN * (1 + rnd() % 4));
        for (i = 0; i < n && ci % 4 == 1; i++)      /* tape options on a quarter of the chains */
            if (rnd() % 3 == 0) {
                c[i].n_options = 1 + (int)(rnd() % 2);
                c[i].option_t[0] = c[i].t / 2; c[i].option_extra[0] = 0.25;
                c[i].option_t[1] = c[i].t / 4; c[i].option_extra[1] = 0.5;
            }
        _ckpt_costs_model(c, n, mc);
        m = program_min_peak(c, n);
        memset(&li, 0, sizeof li);
        CHECK(_ckpt_persistent_floor(NULL, mc, n, &L) == CKPT_OK && L.n_ops > 0, "%d stages: the floor plan", n);
        CHECK(ckpt_schedule_simulate(c, n, L.ops, L.n_ops, &t, &p, NULL) == CKPT_OK && p == m,
              "%d stages: the floor plan peaks at %llu, the smallest peak is %llu", n, (unsigned long long)p,
              (unsigned long long)m);
        CHECK(_ckpt_plan_measure(NULL, mc, n, &L, NULL, UINT64_MAX, UINT64_MAX, &li, &pool, NULL) == CKPT_OK, "measure");
        lw = li.arena > m ? li.arena : m;
        gaps += lw > m;
        CHECK(plan(c, n, CKPT_POLICY_OPTIMAL, m - 1, 0, &info, &pl) == CKPT_ERR_INFEASIBLE && info.min_budget == lw &&
              info.guarantee == CKPT_GUARANTEE_PERSISTENT, "%d stages: below the smallest peak: min_budget %llu, the "
              "floor's %llu", n, (unsigned long long)info.min_budget, (unsigned long long)lw);
        memset(&d, 0, sizeof d);
        d.policy = CKPT_POLICY_OFFLOAD; d.budget = m - 1;   /* no link: offload plans what optimal does */
        CHECK(ckpt_plan_create(c, n, &d, &pl, &fi) == CKPT_ERR_INFEASIBLE && fi.min_budget == lw,
              "%d stages: offload without a link below the smallest peak: min_budget %llu, the floor's %llu", n,
              (unsigned long long)fi.min_budget, (unsigned long long)lw);
        CHECK(plan(c, n, CKPT_POLICY_OPTIMAL, lw, 0, &info, &pl) == CKPT_OK && info.arena <= lw && info.min_budget == lw,
              "%d stages: optimal at min_budget %llu", n, (unsigned long long)lw);
        if (pl) replay_ok(c, n, pl, lw);
        ckpt_plan_destroy(pl); pl = NULL;
        if (ci % 3 == 1) {   /* offload with a link, on the chains of 21-64 stages (it takes seconds beyond) */
            d.budget = lw; d.bandwidth = 1e9;
            CHECK(ckpt_plan_create(c, n, &d, &pl, &fi) == CKPT_OK && fi.arena <= lw && fi.min_budget <= lw,
                  "%d stages: offload at optimal's min_budget %llu", n, (unsigned long long)lw);
            ckpt_plan_destroy(pl); pl = NULL;
        }
        /* the fastest plan at the smallest peak: where its arena is larger, a budget between the two
           is planned by the floor plan alone when optimal's descent ends at the floor */
        if (_ckpt_persistent(NULL, mc, n, m, 0, 1, INFINITY, &O, &mp, &u) == CKPT_OK && O.n_ops) {
            ckpt_plan_info oi;
            memset(&oi, 0, sizeof oi);
            if (_ckpt_plan_measure(NULL, mc, n, &O, NULL, lw, UINT64_MAX, &oi, &pool, NULL) == CKPT_OK) oa = oi.arena;
        }
        if (oa > lw) {
            below++;
            if (info.fit_budget == m) {   /* optimal's plan at lw above: the descent reached the floor */
                returned++;
                CHECK(info.guarantee == CKPT_GUARANTEE_NONE && info.peak == m && info.time == li.time,
                      "%d stages: at the floor, guarantee %d peak %llu time %g (the floor plan: %g)", n,
                      (int)info.guarantee, (unsigned long long)info.peak, info.time, li.time);
            }
        }
        free(L.ops); free(O.ops);
    }
    printf("test_planner_long: floor plans: %d chains, %d with an arena above the smallest peak, %d where the fastest "
           "plan there needs more, %d of them planned by the floor plan\n", TEST_REDUCED ? 12 : 48, gaps, below, returned);
    CHECK(returned > 0, "no chain planned with the floor plan");
}

static void warn_on_fallback(void) {
    enum { N = 300 };   /* 160 stages no longer fall back since the program prunes dominated points */
    static ckpt_cost c[N];
    int sizes[2] = {20, N}, j, fell_back = 0;
    uint32_t s = 1;
    for (j = 0; j < 2; j++) {
        int n = sizes[j];
        ckpt_plan_desc d;
        ckpt_plan_info info;
        ckpt_plan *pl = NULL;
        ckpt_result r = plan_lcg_chain(c, n, &s, 5, 40000, 80000, &d, &pl, &info);
        CHECK(r == CKPT_OK, "%d stages: %s", n, ckpt_result_string(r));
        if (r == CKPT_OK) {
            int rounded = info.unit > CKPT_ALIGN;   /* every size is a multiple of CKPT_ALIGN */
            fell_back |= rounded;
            CHECK(n_warn == rounded, "%d stages, unit %llu: %d warnings", n, (unsigned long long)info.unit, n_warn);
        }
        ckpt_plan_destroy(pl);
    }
    CHECK(fell_back, "no chain fell back to a coarser unit: the warning went unchecked");
}

/* Default mode (max_units 0) is exact up to 200 stages: a chain of 200 distinct stages whose
   sizes are multiples of CKPT_ALIGN, at a budget of millions of such units (far past the dense
   table's 65,536), plans in CKPT_ALIGN, with no fallback warning. Before the sparse program ran
   without a work allowance up to 200 stages it fell back to about 1,700 units here. About 15 s
   optimised; skipped in reduced runs (sanitizers), where it would take minutes. */
static void exact_to_200(void) {
    enum { N = 200 };
    static ckpt_cost c[N];
    ckpt_plan_desc d;
    ckpt_plan_info info;
    ckpt_plan *pl = NULL;
    ckpt_result r;
    uint32_t s = 7;     /* its own stream: the other tests' draws stay as they were */
    if (TEST_REDUCED) { printf("exact_to_200: skipped in a reduced run\n"); return; }
    r = plan_lcg_chain(c, N, &s, 10, 4000, 8000, &d, &pl, &info);
    CHECK(r == CKPT_OK && d.budget / CKPT_ALIGN > 65536, "200 stages: %s", ckpt_result_string(r));
    if (r == CKPT_OK) {
        CHECK(info.unit == CKPT_ALIGN && info.guarantee == CKPT_GUARANTEE_PERSISTENT && n_warn == 0,
              "200 stages: unit %llu (%llu units), %d warnings", (unsigned long long)info.unit,
              (unsigned long long)(d.budget / info.unit), n_warn);
        replay_ok(c, N, pl, d.budget);
    }
    ckpt_plan_destroy(pl);
}

/* Sizes in bytes, spread over 1..200 units of 4096 B with odd remainders, tapes often larger
   than outputs; at 500 units the unit is rarely a divisor, so rounding matters. */
static void odd_chain(ckpt_cost *c, int n) {
    int i;
    for (i = 0; i < n; i++) {
        c[i].a = 1 + rnd() % (200 * 4096);
        c[i].t = rnd() % 3 ? 1 + rnd() % (400 * 4096) : 0;
        c[i].wf = rnd() % 4 ? 0 : rnd() % (20 * 4096);
        c[i].wb = rnd() % 4 ? 0 : rnd() % (40 * 4096);
        c[i].f = 1 + (double)(rnd() % 10);
        c[i].b = 1 + (double)(rnd() % 20);
        c[i].flags = 0;
    }
}

/* The program's plan in one unit at an option level, a + t rounded once (sum_round) or apart:
   1 with its time in *t if it plans and its peak in bytes fits the budget. */
static int unit_plan(const ckpt_cost *c, int n, uint64_t budget, uint64_t unit, int level, int sum_round, double *t) {
    _ckpt_sched s = {NULL, 0, 0};
    uint64_t mp, p;
    _ckpt_rep rp;
    ckpt_result r = _ckpt_rep_make(NULL, c, n, &rp);
    CHECK(r == CKPT_OK, "rows: %s", ckpt_result_string(r));
    r = _ckpt_persistent_in(NULL, c, n, budget, unit, level, sum_round,
                            _ckpt_dense_fits(&rp, budget / unit, level, _ckpt_max_options(c, n), _ckpt_flagged(c, n)), 1,
                            INFINITY, &budget, 1, &s, &mp, NULL);
    _ckpt_rep_free(NULL, &rp);
    if (r == CKPT_OK) r = _ckpt_sched_eval_into(NULL, c, n, &s, NULL, t, &p);
    _ckpt_free(NULL, s.ops);
    return r == CKPT_OK && p <= budget;
}

/* Counts of rounding_vs_rotor: feasible cases, those where rotor's rounding fits, where ours is
   faster, where rounding a and t apart would be slower than rotor's; ckpt_plan_create's plans
   checked against the program's, and those where the program's plan needed an arena above the
   budget (not compared). */
typedef struct rounding_counts { int cases, rotor_fits, faster, apart_slower, public_calls, arena_over; } rounding_counts;

/* The program at 500 units on c (what: the sizes' name in messages): CKPT_ERR_INFEASIBLE, or its
   time *t, unit *unit and, when arena is not NULL, its arena; its peak must fit the budget. *t_rotor
   is the plan rotor's rounding gives (its options, level 0; a + t rounded once; ceil(budget /
   500)), or INFINITY when that does not fit; the program must be no slower. */
static ckpt_result program_vs_rotor(const ckpt_cost *c, int n, uint64_t budget, const char *what, double *t,
                                    uint64_t *unit, uint64_t *arena, double *t_rotor) {
    _ckpt_sched s = {NULL, 0, 0};
    uint64_t mp, p = 0, pool = 0;
    ckpt_plan_info pi;
    ckpt_result r = _ckpt_persistent(NULL, c, n, budget, 500, 1, INFINITY, &s, &mp, unit);
    memset(&pi, 0, sizeof pi);
    if (r == CKPT_OK) r = _ckpt_sched_eval_into(NULL, c, n, &s, NULL, t, &p);
    if (r == CKPT_OK && arena) r = _ckpt_plan_measure(NULL, c, n, &s, NULL, budget, UINT64_MAX, &pi, &pool, NULL);
    _ckpt_free(NULL, s.ops);
    if (r != CKPT_OK) return r;
    if (arena) *arena = pi.arena;
    CHECK(p <= budget, "n %d, %s: the plan's peak %llu exceeds its budget %llu", n, what, (unsigned long long)p,
          (unsigned long long)budget);
    if (!unit_plan(c, n, budget, budget / 500 + (budget % 500 != 0), 0, 1, t_rotor)) *t_rotor = INFINITY;
    CHECK(*t <= *t_rotor, "n %d budget %llu, %s: time %.17g, slower than rotor's rounding %.17g", n,
          (unsigned long long)budget, what, *t, *t_rotor);
    return CKPT_OK;
}

/* One budget: the program at 500 units against rotor's rounding on the same chain, then
   ckpt_plan_create at 500 units (what users get: the program or a faster incumbent). */
static void rounding_case(const ckpt_cost *c, int n, uint64_t budget, rounding_counts *k) {
    uint64_t unit, arena = 0;
    double t_rotor, t, t_apart, tm, tm_rotor;
    ckpt_cost cm[300];
    ckpt_plan_info info;
    ckpt_plan *pl = NULL;
    ckpt_result r = program_vs_rotor(c, n, budget, "sizes as given", &t, &unit, NULL, &t_rotor);
    if (r == CKPT_ERR_INFEASIBLE) return;
    k->cases++;
    CHECK(r == CKPT_OK, "n %d budget %llu: %s", n, (unsigned long long)budget, ckpt_result_string(r));
    if (r != CKPT_OK || t_rotor == INFINITY) return;
    k->rotor_fits++;
    if (t < t_rotor) k->faster++;
    /* what rounding a and t apart (the previous rule) gives at the same level */
    if (unit_plan(c, n, budget, unit, _ckpt_dp_level(n), 0, &t_apart) && t_apart > t_rotor) k->apart_slower++;
    /* ckpt_plan_create plans the sizes the executor allocates (each rounded up to CKPT_ALIGN,
       _ckpt_costs_model) and lays the plan out; where the program's plan needs an arena above the
       budget, it plans again below (>>fit) and may be slower: counted apart. So on those sizes:
       the program against rotor's rounding, then ckpt_plan_create against the program. */
    _ckpt_costs_model(c, n, cm);
    r = program_vs_rotor(cm, n, budget, "aligned sizes", &tm, &unit, &arena, &tm_rotor);
    CHECK(r == CKPT_OK, "n %d budget %llu, aligned sizes: the program: %s", n, (unsigned long long)budget,
          ckpt_result_string(r));
    if (r != CKPT_OK) return;
    r = (ckpt_result)plan(c, n, CKPT_POLICY_OPTIMAL, budget, 500, &info, &pl);
    CHECK(r == CKPT_OK && info.peak <= budget && info.arena <= budget, "n %d budget %llu: ckpt_plan_create %s", n,
          (unsigned long long)budget, ckpt_result_string(r));
    if (r == CKPT_OK && arena <= budget) {
        CHECK(info.time <= tm, "n %d budget %llu: ckpt_plan_create's time %.17g, the program's %.17g, whose arena "
              "%llu fits", n, (unsigned long long)budget, info.time, tm, (unsigned long long)arena);
        k->public_calls++;
    } else if (r == CKPT_OK) {
        k->arena_over++;
    }
    if (r == CKPT_OK) replay_ok(c, n, pl, budget);
    ckpt_plan_destroy(pl);
}

/* Chain c of n stages (odd_chain's sizes) at `budgets` random budgets between a fifth and seven
   tenths of store-all's peak, into k. */
static void rounding_chain(ckpt_cost *c, int n, int budgets, rounding_counts *k) {
    ckpt_plan_info sa;
    ckpt_plan *pl = NULL;
    int b, r0;
    odd_chain(c, n);
    r0 = plan(c, n, CKPT_POLICY_STORE_ALL, 0, 0, &sa, &pl);
    CHECK(r0 == CKPT_OK, "store-all: %s", ckpt_result_string((ckpt_result)r0));
    if (r0 != CKPT_OK) return;
    ckpt_plan_destroy(pl);
    for (b = 0; b < budgets; b++) rounding_case(c, n, sa.peak / 5 + rnd() % (sa.peak / 2), k);
}

static void rounding_vs_rotor(void) {
    int ci;
    uint64_t saved;
    rounding_counts k = {0, 0, 0, 0, 0, 0}, kl = {0, 0, 0, 0, 0, 0};
    for (ci = 0; ci < ROUNDING_CHAINS; ci++) {
        ckpt_cost c[120] = {{0}};
        rounding_chain(c, 20 + (int)(rnd() % 100), 3, &k);
    }
    printf("rounding at 500 units, %d chains of 20-119 stages: %d feasible cases, rotor's rounding fits in %d; "
           "ours faster in %d, slower in none; a and t rounded apart would be slower than rotor's in %d; "
           "ckpt_plan_create no slower than the program in %d; the program's arena over the budget in %d\n",
           ROUNDING_CHAINS, k.cases, k.rotor_fits, k.faster, k.apart_slower, k.public_calls, k.arena_over);
    CHECK(k.rotor_fits >= k.cases / 2, "rotor's rounding fit in only %d of %d cases: the comparison is empty",
          k.rotor_fits, k.cases);
    /* Longer chains (150-299 stages), one budget each, on their own stream so that the later
       tests draw what they drew before; not in reduced runs. */
    saved = rng_state;
    rng_state = 0x9E3779B97F4A7C15ull;
    for (ci = 0; ci < (TEST_REDUCED ? 0 : 4); ci++) {
        static ckpt_cost c[300];
        memset(c, 0, sizeof c);
        rounding_chain(c, 150 + (int)(rnd() % 150), 1, &kl);
    }
    rng_state = saved;
    if (!TEST_REDUCED) {
        printf("rounding at 500 units, 4 chains of 150-299 stages: %d feasible, rotor's rounding fits in %d; ours "
               "faster in %d, slower in none; ckpt_plan_create no slower than the program in %d; the program's arena "
               "over the budget in %d\n", kl.cases, kl.rotor_fits, kl.faster, kl.public_calls, kl.arena_over);
        CHECK(kl.rotor_fits >= 2, "long chains: rotor's rounding fit in only %d of %d cases", kl.rotor_fits, kl.cases);
    }
}

/* Repeated blocks: an embedding stage, copies of a block of p stages, a head stage. */
static void repeats(void) {
    int ci, cases = 0;
    for (ci = 0; ci < (TEST_REDUCED ? 4 : 24); ci++) {
        int p = 1 + (int)(rnd() % 5), n = 12 + (int)(rnd() % 60), i, b;
        ckpt_cost *c = (ckpt_cost *)calloc((size_t)n, sizeof *c), *d = (ckpt_cost *)calloc((size_t)n, sizeof *d);
        ckpt_cost block[5];
        ckpt_plan_info sa;
        ckpt_plan *pl;
        _ckpt_rep rp;
        memset(block, 0, sizeof block);
        random_chain(block, p, 512);
        random_chain(c, n, 512);
        for (i = 1; i < n - 1; i++) c[i] = block[(i - 1) % p];
        memcpy(d, c, (size_t)n * sizeof *c);
        for (i = 0; i < n; i++) d[i].f = nextafter(d[i].f, 1e9) * (1.0 + 1e-15 * i);
        CHECK(_ckpt_rep_make(NULL, c, n, &rp) == CKPT_OK, "rows");
        CHECK(rp.n_rows <= (p + 3) * (n + 1), "n %d, block %d: %d rows", n, p, rp.n_rows);
        _ckpt_rep_free(NULL, &rp);
        CHECK(_ckpt_rep_make(NULL, d, n, &rp) == CKPT_OK, "rows");
        CHECK(rp.n_rows == n * (n + 1) / 2, "distinct stages, n %d: %d rows", n, rp.n_rows);
        _ckpt_rep_free(NULL, &rp);
        if (plan(c, n, CKPT_POLICY_STORE_ALL, 0, 0, &sa, &pl) != CKPT_OK) { CHECK(0, "store-all"); continue; }
        ckpt_plan_destroy(pl);
        for (b = 0; b < 3; b++) {   /* the program's own optimum (the arena's fit is another matter) */
            uint64_t budget = sa.store_all_peak / (uint64_t)(2 + 2 * b), mc, md, uc, ud;
            uint32_t mu = b == 2 ? 0 : 500;
            _ckpt_sched sc = {NULL, 0, 0}, sd = {NULL, 0, 0};
            ckpt_result rc = _ckpt_persistent(NULL, c, n, budget, mu, 1, INFINITY, &sc, &mc, &uc);
            ckpt_result rd = _ckpt_persistent(NULL, d, n, budget, mu, 1, INFINITY, &sd, &md, &ud);
            CHECK(rc == rd && mc == md && uc == ud, "n %d block %d budget %llu: %s with repeats, %s without", n, p,
                  (unsigned long long)budget, ckpt_result_string(rc), ckpt_result_string(rd));
            if (rc == CKPT_OK && rd == CKPT_OK) {
                double tc = 0, td = 0;
                uint64_t pc, pd;
                CHECK(_ckpt_sched_eval_into(NULL, c, n, &sc, NULL, &tc, &pc) == CKPT_OK &&
                      _ckpt_sched_eval_into(NULL, d, n, &sd, NULL, &td, &pd) == CKPT_OK, "eval");
                cases++;
                CHECK(pc <= budget && fabs(tc - td) <= 1e-9 * td, "n %d block %d budget %llu: time %.17g with repeats, "
                      "%.17g without", n, p, (unsigned long long)budget, tc, td);
            }
            _ckpt_free(NULL, sc.ops); _ckpt_free(NULL, sd.ops);
        }
        free(c); free(d);
    }
    printf("test_planner_long: repeats: %d plans as fast as without sharing rows\n", cases);
}

/* The dense table cell by cell against every option's value (_ckpt_dense_at computes one); then
   >>packed, cell by cell and summary by summary against it, in fewer doubles. */
static void dense_exact(void) {
    int ci, cells = 0, bad = 0;
    double kept = 0.0, full = 0.0;
    for (ci = 0; ci < (TEST_REDUCED ? 4 : 30); ci++) {
        int n = 3 + (int)(rnd() % 40), p = 1 + (int)(rnd() % 3), i, s, t, q, k, o;
        int level = (int)(rnd() % 3), with_rep = ci % 2, okd, okp;
        ckpt_cost *c = (ckpt_cost *)calloc((size_t)n, sizeof *c);
        ckpt_cost block[3];
        ckpt_plan_info sa;
        ckpt_plan *pl;
        _ckpt_dp d;
        _ckpt_dense D, P;
        _ckpt_team team;
        uint64_t budget;
        memset(block, 0, sizeof block);
        random_chain(c, n, 512);
        random_chain(block, p, 512);
        if (ci % 4 >= 2)    /* times that round, so that sums depend on the order of their terms */
            for (i = 0; i < n + p; i++) {
                ckpt_cost *x = i < n ? &c[i] : &block[i - n];
                x->f = x->f * 0.3 / 7.0 + 1e-3 / (double)(i + 1);
                x->b = x->b * 0.1 + 0.3 * (double)(i % 5) / 7.0;   /* (no draw: later tests keep theirs) */
            }
        for (i = 1; with_rep && i < n - 1; i++) c[i] = block[(i - 1) % p];
        for (i = 0; i < n; i++)
            if (ci % 3 == 0 && rnd() % 2) {   /* tape options */
                c[i].n_options = 1 + (int)(rnd() % 2);
                for (o = 0; o < c[i].n_options; o++) {
                    c[i].option_t[o] = 512 * (rnd() % 32);
                    c[i].option_extra[o] = 0.25 * (double)(rnd() % 8);
                }
            }
        if (plan(c, n, CKPT_POLICY_STORE_ALL, 0, 0, &sa, &pl) != CKPT_OK) { CHECK(0, "store-all"); free(c); continue; }
        ckpt_plan_destroy(pl);
        budget = sa.store_all_peak / (uint64_t)(1 + rnd() % 4);
        if (_ckpt_dp_setup(&d, NULL, c, n, budget, 512 * (1 + rnd() % 4), level, 0) != CKPT_OK) {
            CHECK(0, "setup"); _ckpt_dp_free(&d); free(c); continue;
        }
        /* 1 to 3 workers (up to one per 16 stages or part of them) for the table */
        if (!_ckpt_team_init(&team, &d, 1 + ci % 3)) { CHECK(0, "team"); return; }
        _ckpt_dp_minpeak(&d);
        okd = _ckpt_dense_alloc(&D, &d, team.workers);
        okp = _ckpt_dense_alloc(&P, &d, team.workers);
        if (!okd || !okp) {
            CHECK(0, "memory");
            _ckpt_dense_free(&D); _ckpt_dense_free(&P); _ckpt_team_free(&team); _ckpt_dp_free(&d); free(c);
            return;
        }
        D.pack = 0; P.pack = 1;
        CHECK(_ckpt_dense_fill(&D, &team) == CKPT_OK && _ckpt_dense_fill(&P, &team) == CKPT_OK, "fill");
        for (s = 1; s <= n; s++)
            for (t = s; t <= n; t++)
                for (q = 0; q < d.nfam; q++) {
                    int f = d.fam[q], no = (int64_t)(d.minp[f][_CKPT_IDX(&d, s, t)] / d.unit) <= D.M ? _ckpt_dp_options(&d, s, t, f) : 0;
                    const double *sum = _ckpt_sum(&D, s, t, f), *psum = _ckpt_sum(&P, s, t, f);
                    int64_t m;
                    for (m = 0; m <= D.M; m++) {
                        double want = INFINITY, cell = _ckpt_cell(&D, s, t, f, m), pcell = _ckpt_cell(&P, s, t, f, m);
                        for (i = 0; i < no; i++) {
                            double v = _ckpt_dense_at(&D, &d.opts[i], m);
                            if (v < want) want = v;
                        }
                        cells++;
                        if (memcmp(&want, &cell, sizeof want) != 0 && bad++ < 5)
                            CHECK(0, "n %d level %d (%d,%d) family %d m %lld: table %.17g, options %.17g", n, level, s, t, f,
                                  (long long)m, cell, want);
                        if (memcmp(&pcell, &cell, sizeof cell) != 0 && bad++ < 5)
                            CHECK(0, "n %d level %d (%d,%d) family %d m %lld: packed %.17g, in place %.17g", n, level, s, t, f,
                                  (long long)m, pcell, cell);
                    }
                    for (k = 0; k <= D.K + 1; k++)
                        if ((sum[k] != _ckpt_cell(&D, s, t, f, k * _CKPT_SUM_STEP < D.M ? k * _CKPT_SUM_STEP : D.M) ||
                             memcmp(&sum[k], &psum[k], sizeof sum[k]) != 0) && bad++ < 5)
                            CHECK(0, "n %d (%d,%d) family %d: summary %d", n, s, t, f, k);
                }
        kept += (double)P.used;
        full += (double)d.nfam * d.rep.n_rows * (double)(D.M + 1);
        _ckpt_dense_free(&D);
        _ckpt_dense_free(&P);
        _ckpt_team_free(&team);
        _ckpt_dp_free(&d);
        free(c);
    }
    CHECK(bad == 0, "%d cells of the dense table differ from their options' minimum", bad);
    CHECK(kept < full, "packed: %.0f doubles of %.0f", kept, full);
    printf("test_planner_long: dense table: %d cells equal to their options' minimum, and packed in %.0f doubles of "
           "%.0f\n", cells, kept, full);
}

/* The heuristics' candidates: every-k over k = 1..n, greedy over its trajectory. */
static long ha_calls;
static void *ha_alloc(size_t bytes, void *u) { (void)u; ha_calls++; return malloc(bytes); }
static void ha_free(void *p, void *u) { (void)u; free(p); }
static void heuristic_allocations(void) {
    static const struct { ckpt_policy p; int n; } cases[] = {{CKPT_POLICY_EVERY_K, 600}, {CKPT_POLICY_GREEDY, 100}};
    int k;
    for (k = 0; k < 2; k++) {
        int n = cases[k].n, n1, n2;
        ckpt_cost *c = (ckpt_cost *)calloc((size_t)n, sizeof *c);
        ckpt_plan_desc d;
        ckpt_plan *p1 = NULL, *p2 = NULL;
        ckpt_plan_info i1, i2;
        ckpt_result r1, r2;
        random_chain(c, n, 256);
        memset(&d, 0, sizeof d);
        d.policy = cases[k].p;
        CHECK(ckpt_plan_create(c, n, &d, &p1, &i1) == CKPT_OK, "%s: store-all's figures", ckpt_policy_name(d.policy));
        ckpt_plan_destroy(p1);
        d.budget = i1.store_all_peak / 2;
        r1 = ckpt_plan_create(c, n, &d, &p1, &i1);     /* the default allocator */
        d.allocator.alloc = ha_alloc; d.allocator.free = ha_free;
        ha_calls = 0;
        r2 = ckpt_plan_create(c, n, &d, &p2, &i2);
        CHECK(r1 == CKPT_OK && r2 == CKPT_OK, "%s on %d stages at half store-all: %s, %s", ckpt_policy_name(d.policy), n,
              ckpt_result_string(r1), ckpt_result_string(r2));
        CHECK(ha_calls < 8L * n, "%s on %d stages: %ld host allocations, want fewer than %d", ckpt_policy_name(d.policy), n,
              ha_calls, 8 * n);
        if (r1 == CKPT_OK && r2 == CKPT_OK) {
            const ckpt_op *o1 = ckpt_plan_ops(p1, &n1), *o2 = ckpt_plan_ops(p2, &n2);
            CHECK(n1 == n2 && memcmp(o1, o2, (size_t)n1 * sizeof *o1) == 0 && i1.time == i2.time && i1.peak == i2.peak &&
                  i1.min_budget == i2.min_budget, "%s: the same plan with either allocator", ckpt_policy_name(d.policy));
            replay_ok(c, n, p2, d.budget);
        }
        printf("test_planner_long: %s on %d stages: %ld host allocations\n", ckpt_policy_name(d.policy), n, ha_calls);
        ckpt_plan_destroy(p1); ckpt_plan_destroy(p2);
        free(c);
    }
}

/* >>bound: the dense table at level 0 bounded by an incumbent's time ub. Every cell holds the
   minimum of its row's start value and its options' values; a cell that differs from the
   unbounded table's is, with that value, near its row's start value or above; some cells are
   bounded when ub is the optimum; the plan is the unbounded table's when ub is not below the
   optimum, and none when it is; the same for the sparse frontiers, which drop the points above
   the bound. */
static void fill_table(_ckpt_dense *D, _ckpt_dp *d, _ckpt_team *team, double ub, int pack) {
    _ckpt_free(NULL, d->thr);
    d->thr = NULL;
    if (ub < INFINITY) CHECK(_ckpt_dp_bounds(d, ub), "bounds: memory");
    CHECK(_ckpt_dense_alloc(D, d, team->workers), "memory");
    D->pack = pack;
    CHECK(_ckpt_dense_fill(D, team) == CKPT_OK, "fill");
}
static void bounded_table(void) {
    int ci, bad = 0, cells = 0, bounded = 0;
    for (ci = 0; ci < (TEST_REDUCED ? 3 : 16); ci++) {
        int n = rnd_int(20, TEST_REDUCED ? 40 : 60), p = rnd_int(1, 3), i, s, t, u;
        ckpt_cost *c = (ckpt_cost *)calloc((size_t)n, sizeof *c), block[3];
        ckpt_plan_info sa;
        ckpt_plan *pl;
        _ckpt_dp d;
        _ckpt_dense D0;
        _ckpt_team team;
        uint64_t budget, unit, mp;
        double top, ubs[4];
        memset(block, 0, sizeof block);
        random_chain(c, n, 512);
        random_chain(block, p, 512);
        for (i = 1; ci % 2 && i < n - 1; i++) c[i] = block[(i - 1) % p];
        for (i = 0; i < n && ci % 3 == 0; i++)
            if (rnd() % 2) { c[i].n_options = 1; c[i].option_t[0] = 512 * (rnd() % 32); c[i].option_extra[0] = 0.25 * (double)(rnd() % 8); }
        if (plan(c, n, CKPT_POLICY_STORE_ALL, 0, 0, &sa, &pl) != CKPT_OK) { CHECK(0, "store-all"); free(c); continue; }
        ckpt_plan_destroy(pl);
        budget = sa.store_all_peak / (uint64_t)rnd_int(1, 4);
        unit = budget / 300 > 512 ? budget / 300 : 512;
        if (_ckpt_dp_setup(&d, NULL, c, n, budget, unit, 0, 0) != CKPT_OK) { CHECK(0, "setup"); _ckpt_dp_free(&d); free(c); continue; }
        _ckpt_dp_minpeak(&d);
        if (d.minp[0][_CKPT_IDX(&d, 1, n)] > budget || !_ckpt_team_init(&team, &d, 1 + ci % 2)) { _ckpt_dp_free(&d); free(c); continue; }
        fill_table(&D0, &d, &team, INFINITY, 0);
        top = _ckpt_cell(&D0, 1, n, 0, D0.M);
        ubs[0] = top; ubs[1] = top * 1.03; ubs[2] = top * 1.5; ubs[3] = top * (1 - 1e-6);
        for (u = 0; u < 4; u++) {
            _ckpt_dense D1;
            _ckpt_sched a = {NULL, 0, 0}, b = {NULL, 0, 0};
            ckpt_result ra, rb;
            int pruned = 0, dense;
            fill_table(&D1, &d, &team, ubs[u], u % 2 == 0);     /* (>>packed, or in place) */
            for (s = 1; s <= n; s++)
                for (t = s; t <= n; t++) {
                    double thr = d.thr[d.rep.row[_CKPT_IDX(&d, s, t)]], near = thr - 1e-12 * ubs[u];
                    int no = u == 0 && (int64_t)(d.minp[0][_CKPT_IDX(&d, s, t)] / d.unit) <= D1.M ? _ckpt_dp_options(&d, s, t, 0) : 0;
                    int64_t m;
                    for (m = 0; m <= D1.M; m++) {
                        double r0 = _ckpt_cell(&D0, s, t, 0, m), r1 = _ckpt_cell(&D1, s, t, 0, m);
                        cells++;
                        if (r1 >= near && r0 > r1) pruned++;
                        if (r1 != r0 && !(r1 >= near && r0 >= near) && bad++ < 5)
                            CHECK(0, "n %d ub %.17g (%d,%d) m %lld: bounded %.17g, unbounded %.17g, start %.17g", n, ubs[u], s, t,
                                  (long long)m, r1, r0, thr);
                        if (u == 0 && ((int64_t)(d.minp[0][_CKPT_IDX(&d, s, t)] / d.unit) <= D1.M || r1 != thr)) {
                            double want = thr;    /* (a row whose smallest peak is above the table keeps its start) */
                            for (i = 0; i < no; i++) {
                                double v = _ckpt_dense_at(&D1, &d.opts[i], m);
                                if (v < want) want = v;
                            }
                            if (memcmp(&want, &r1, sizeof want) != 0 && bad++ < 5)
                                CHECK(0, "n %d (%d,%d) m %lld: bounded %.17g, its start and options %.17g", n, s, t, (long long)m,
                                      r1, want);
                        }
                    }
                }
            bounded += pruned;
            if (u == 0) CHECK(pruned > 0, "n %d: no cell bounded at the optimum", n);
            _ckpt_dense_free(&D1);
            for (dense = 0; dense < 2; dense++) {   /* the sparse frontiers drop points above the bound */
                ra = _ckpt_persistent_in(NULL, c, n, budget, unit, 0, 0, dense, 1 + ci % 2, INFINITY, &budget, 1, &a,
                                         &mp, NULL);
                rb = _ckpt_persistent_in(NULL, c, n, budget, unit, 0, 0, dense, 1 + ci % 2, ubs[u], &budget, 1, &b,
                                         &mp, NULL);
                CHECK(ra == CKPT_OK && rb == CKPT_OK, "n %d: %s, %s", n, ckpt_result_string(ra), ckpt_result_string(rb));
                if (u < 3)
                    CHECK(a.n_ops == b.n_ops && a.n_ops > 0 && !memcmp(a.ops, b.ops, (size_t)a.n_ops * sizeof *a.ops),
                          "n %d ub %.17g (optimum %.17g), %s: not the unbounded program's plan", n, ubs[u], top,
                          dense ? "dense" : "sparse");
                else
                    CHECK(b.n_ops == 0, "n %d, %s: a plan under ub %.17g, below the optimum %.17g", n, dense ? "dense" : "sparse",
                          ubs[u], top);
                _ckpt_free(NULL, a.ops); _ckpt_free(NULL, b.ops);
                memset(&a, 0, sizeof a); memset(&b, 0, sizeof b);
            }
        }
        _ckpt_dense_free(&D0);
        _ckpt_team_free(&team);
        _ckpt_dp_free(&d);
        free(c);
    }
    CHECK(bad == 0, "%d cells of the bounded table wrong", bad);
    printf("test_planner_long: bounded tables: %d cells checked, %d bounded\n", cells, bounded);
}

/* >>two-level: from every-k's best plan, a plan that fits and is no slower, the time and peak
   given being the plan's; faster on some chains; against every start of the last segment (a scan
   instead of the binary search): how often the search finds the scan's best. */
static void two_level(void) {
    int ci, faster = 0, same_as_scan = 0, cases = 0;
    _ckpt_sched s = {NULL, 0, 0}, x = {NULL, 0, 0};
    for (ci = 0; ci < (TEST_REDUCED ? 10 : 40); ci++) {
        int n = rnd_int(12, TEST_REDUCED ? 60 : 160), k0, last;
        ckpt_cost *c = (ckpt_cost *)calloc((size_t)n, sizeof *c);
        ckpt_plan_info sa;
        ckpt_plan *pl;
        uint64_t budget, mp, p0, p1, p;
        double t0, t1, t, scan = INFINITY;
        random_chain(c, n, 1 + (uint64_t)(ci % 2) * 511);
        if (plan(c, n, CKPT_POLICY_STORE_ALL, 0, 0, &sa, &pl) != CKPT_OK) { CHECK(0, "store-all"); free(c); continue; }
        ckpt_plan_destroy(pl);
        budget = sa.store_all_peak / (uint64_t)rnd_int(2, 6);
        if (_ckpt_every_k_best(NULL, c, n, budget, &s, &k0, &mp) != CKPT_OK) { free(c); continue; }
        cases++;
        CHECK(_ckpt_sched_eval_into(NULL, c, n, &s, NULL, &t0, &p0) == CKPT_OK, "eval");
        t1 = t0; p1 = p0;
        CHECK(_ckpt_two_level(NULL, c, n, budget, k0, &s, &t1, &p1) == CKPT_OK, "two-level");
        CHECK(_ckpt_sched_eval_into(NULL, c, n, &s, NULL, &t, &p) == CKPT_OK && t == t1 && p == p1 && p <= budget,
              "n %d: the plan's time %.17g and peak %llu, given %.17g and %llu, budget %llu", n, t, (unsigned long long)p,
              t1, (unsigned long long)p1, (unsigned long long)budget);
        CHECK(t1 < t0 || (t1 == t0 && p1 <= p0), "n %d: %.17g after every-k's %.17g", n, t1, t0);
        faster += t1 < t0;
        for (last = 1; last <= _ckpt_every_k_last(n, k0); last++)
            if (_ckpt_segments_sched(NULL, c, n, k0, last, &x) == CKPT_OK &&
                _ckpt_sched_eval_into(NULL, c, n, &x, NULL, &t, &p) == CKPT_OK && p <= budget && t < scan)
                scan = t;
        CHECK(t1 >= scan, "n %d: %.17g, faster than every plan of the scan (%.17g)", n, t1, scan);
        same_as_scan += t1 == scan;
        free(c);
    }
    _ckpt_free(NULL, s.ops); _ckpt_free(NULL, x.ops);
    CHECK(faster > 0, "two-level: never faster than every-k (%d chains)", cases);
    printf("test_planner_long: two-level: faster than every-k on %d of %d chains, the scan's best on %d\n", faster,
           cases, same_as_scan);
}

/* When the incumbent (every-k's best plan, or >>two-level's) is faster than every plan of the
   program in the unit max_units asks for, optimal returns it (the program need not finish that
   table: >>bound). */
static void incumbent_wins(void) {
    int tries, found = 0;
    for (tries = 0; tries < 40 && found < (TEST_REDUCED ? 1 : 3); tries++) {
        int n = rnd_int(66, 90);
        uint32_t mu = (uint32_t)rnd_int(3, 12);
        ckpt_cost *c = (ckpt_cost *)calloc((size_t)n, sizeof *c);
        ckpt_plan_info sa, ek, op;
        ckpt_plan *pk = NULL, *po = NULL;
        _ckpt_sched s = {NULL, 0, 0};
        uint64_t budget, mp, unit, p;
        double t = 0;
        ckpt_result r;
        random_chain(c, n, 512);
        if (plan(c, n, CKPT_POLICY_STORE_ALL, 0, 0, &sa, &pk) != CKPT_OK) { CHECK(0, "store-all"); free(c); continue; }
        ckpt_plan_destroy(pk);
        budget = sa.store_all_peak / 3;
        r = _ckpt_persistent(NULL, c, n, budget, mu, 1, INFINITY, &s, &mp, &unit);   /* the program alone */
        if (r == CKPT_OK) r = _ckpt_sched_eval_into(NULL, c, n, &s, NULL, &t, &p);
        if (r == CKPT_OK && plan(c, n, CKPT_POLICY_EVERY_K, budget, 0, &ek, &pk) == CKPT_OK) {
            int n2 = 0;
            const ckpt_op *o2;
            double ti = INFINITY;
            uint64_t pi = 0;
            CHECK(_ckpt_incumbent(NULL, c, n, budget, &s, &ti, &pi) == CKPT_OK && s.n_ops > 0, "incumbent");
            CHECK(ti <= ek.time, "n %d: the incumbent %.17g, every-k %.17g", n, ti, ek.time);
            if (ti < t) {
                found++;
                CHECK(plan(c, n, CKPT_POLICY_OPTIMAL, budget, mu, &op, &po) == CKPT_OK && op.time == ti,
                      "n %d at %u units: optimal %.17g, the incumbent %.17g, the program %.17g", n, mu, op.time, ti, t);
                o2 = ckpt_plan_ops(po, &n2);
                CHECK(n2 == s.n_ops && n2 > 0 && !memcmp(s.ops, o2, (size_t)n2 * sizeof *o2),
                      "n %d at %u units: not the incumbent's plan", n, mu);
                if (po) replay_ok(c, n, po, budget);
            }
        }
        _ckpt_free(NULL, s.ops);
        ckpt_plan_destroy(pk); ckpt_plan_destroy(po);
        free(c);
    }
    CHECK(found > 0, "no chain where the incumbent beats the program in a coarse unit");
    printf("test_planner_long: the incumbent faster than the program's plans on %d chains: optimal returned it\n", found);
}

/* Several budgets from one table (at[] of _ckpt_persistent_in: the offload planner's starting
   points): each budget's plan is, op for op, the one the same unit plans for that budget alone,
   from the dense table and from the sparse frontiers; a budget below the smallest peak gets none. */
static void grid_plans(void) {
    int ci, same = 0, none = 0;
    _ckpt_sched one = {NULL, 0, 0};
    for (ci = 0; ci < (TEST_REDUCED ? 4 : 12); ci++) {
        ckpt_cost c[48];
        _ckpt_sched g[6];
        int n = rnd_int(12, 48), k, dense, sum_round = (int)(rnd() % 2), level = _ckpt_dp_level(n);
        uint64_t unit = 64 * (uint64_t)rnd_int(1, 3), at[6], top = 0, mp;
        memset(c, 0, sizeof c);
        random_chain(c, n, 64);
        for (k = 0; k < n; k++) top += c[k].a + c[k].t;
        top /= 3;
        for (k = 0; k < 6; k++) at[k] = top * (uint64_t)(k + 1) / 6 + (uint64_t)rnd_int(0, 63);
        at[5] = top;
        for (dense = 0; dense < 2; dense++) {
            ckpt_result r;
            memset(g, 0, sizeof g);
            r = _ckpt_persistent_in(NULL, c, n, top, unit, level, sum_round, dense, 1, INFINITY, at, 6, g, &mp, NULL);
            CHECK(r == CKPT_OK || r == CKPT_ERR_INFEASIBLE, "grid, n %d: %s", n, ckpt_result_string(r));
            for (k = 0; k < 6; k++) {
                uint64_t mp1;
                ckpt_result r1 = _ckpt_persistent_in(NULL, c, n, at[k], unit, level, sum_round, dense, 1, INFINITY,
                                                     &at[k], 1, &one, &mp1, NULL);
                if (r1 == CKPT_ERR_INFEASIBLE) {
                    CHECK(g[k].n_ops == 0, "n %d budget %llu: below the smallest peak, %d ops", n,
                          (unsigned long long)at[k], g[k].n_ops);
                    none++;
                    continue;
                }
                CHECK(r1 == CKPT_OK && one.n_ops > 0 && one.n_ops == g[k].n_ops &&
                      !memcmp(one.ops, g[k].ops, (size_t)one.n_ops * sizeof *one.ops),
                      "n %d budget %llu dense %d: %s, %d ops alone, %d from the grid", n, (unsigned long long)at[k],
                      dense, ckpt_result_string(r1), one.n_ops, g[k].n_ops);
                same++;
            }
            for (k = 0; k < 6; k++) _ckpt_free(NULL, g[k].ops);
        }
    }
    _ckpt_free(NULL, one.ops);
    CHECK(same > 0 && none > 0, "grid: %d plans compared, %d budgets below the smallest peak", same, none);
    printf("test_planner_long: grid plans: %d the same as planned alone, %d below the smallest peak\n", same, none);
}

int main(void) {
    heuristic_allocations();
    dense_exact();
    repeats();
    rounding_vs_rotor();
    warn_on_fallback();
    floor_plan_memory();
    floor_plans();
    exact_to_200();
    huge_budgets();
    min_budget_with_units();
    budget_zero();
    long_chains();
    short_chains();
    bounded_table();
    incumbent_wins();
    grid_plans();
    two_level();
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
