/* test_arena.c -- the arena the backend allocates stays within the budget.

   Random chains (sizes of 1..5000 bytes, and multiples of 4 KiB), random budgets, every policy,
   planned through ckpt_chain_plan on the CPU backend. Whenever planning succeeds, the bytes the
   backend holds (ckpt_cpu_get_stats) must be within budget x lanes, the pinned pool within the
   host budget, and info.arena / info.peak within the budget; ckpt_plan_create must plan the same
   chain the same way. Whenever it is CKPT_ERR_INFEASIBLE, planning at the min_budget it reports
   must succeed. Also the planner entry-point regressions: microbatch lanes sharing the host
   budget, all-zero stage times, and ckpt_plan_desc.logger in ckpt_chain_plan. */
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"
#include "../backends/ckpt_cpu.h"
#include <string.h>

#define TEST_XORSHIFT64STAR_SEED 0x9E3779B97F4A7C15ull
#include "test_util.h"

#define MAXN 24

static ckpt_result fwd_nop(const ckpt_fwd_args *a) { (void)a; return CKPT_OK; }
static ckpt_result bwd_nop(const ckpt_bwd_args *a) { (void)a; return CKPT_OK; }

typedef struct case_t {
    int n, lanes;
    ckpt_stage_desc st[MAXN];
    ckpt_cost c[MAXN];
} case_t;

static uint64_t rnd_size(int kib4) {
    if (rnd_chance(10)) return 0;
    return kib4 ? 4096u * (uint64_t)rnd_int(1, 16) : (uint64_t)rnd_int(1, 5000);
}

static void random_case(case_t *k, int n, int kib4) {
    int i;
    memset(k, 0, sizeof *k);
    k->n = n;
    k->lanes = 1;
    for (i = 0; i < n; i++) {
        ckpt_stage_desc *s = &k->st[i];
        s->forward = fwd_nop; s->backward = bwd_nop;
        s->out_bytes = (size_t)rnd_size(kib4);
        s->tape_bytes = (size_t)rnd_size(kib4);
        s->fwd_workspace_bytes = rnd_chance(30) ? (size_t)rnd_size(kib4) : 0;
        s->bwd_workspace_bytes = rnd_chance(30) ? (size_t)rnd_size(kib4) : 0;
        s->fwd_time = (double)rnd_int(1, 8);
        s->bwd_time = (double)rnd_int(1, 16);
        k->c[i].a = s->out_bytes; k->c[i].t = s->tape_bytes;
        k->c[i].wf = s->fwd_workspace_bytes; k->c[i].wb = s->bwd_workspace_bytes;
        k->c[i].f = s->fwd_time; k->c[i].b = s->bwd_time;
    }
}

static int n_ok, n_infeasible, n_skipped;

/* Plans k at pd through a chain; checks what the backend holds. Returns the result. */
static ckpt_result plan_on_chain(const case_t *k, const ckpt_plan_desc *pd, ckpt_plan_info *info, int check_create) {
    ckpt_backend be;
    ckpt_chain_desc cd;
    ckpt_chain *ch = NULL;
    ckpt_cpu_stats cs;
    ckpt_result r;
    memset(&cd, 0, sizeof cd);
    memset(info, 0, sizeof *info);
    if (ckpt_cpu_backend_create(NULL, &be) != CKPT_OK) { CHECK(0, "cpu backend"); return CKPT_ERR_BACKEND; }
    cd.stages = k->st; cd.n_stages = k->n; cd.backend = &be; cd.microbatches = k->lanes;
    r = ckpt_chain_create(&cd, &ch);
    CHECK(r == CKPT_OK, "chain_create: %s", ckpt_result_string(r));
    if (r == CKPT_OK) r = ckpt_chain_plan(ch, pd, info);
    if (r == CKPT_OK) {
        ckpt_chain_stats st;
        uint64_t budget = pd->budget ? pd->budget : UINT64_MAX;
        memset(&st, 0, sizeof st);
        ckpt_cpu_get_stats(&be, &cs);
        ckpt_chain_get_stats(ch, &st);
        CHECK(cs.live_bytes - cs.pinned_live_bytes <= budget * (uint64_t)k->lanes,
              "%s n=%d: the backend holds %llu device bytes for %d lanes, budget %llu (peak %llu, arena %llu)",
              ckpt_policy_name(pd->policy), k->n, (unsigned long long)(cs.live_bytes - cs.pinned_live_bytes), k->lanes,
              (unsigned long long)budget, (unsigned long long)info->peak, (unsigned long long)info->arena);
        CHECK(info->peak <= info->arena && info->arena <= budget &&
              st.arena_bytes == info->arena * (uint64_t)k->lanes,
              "%s n=%d: peak %llu, arena %llu, arena_bytes %llu, budget %llu", ckpt_policy_name(pd->policy), k->n,
              (unsigned long long)info->peak, (unsigned long long)info->arena, (unsigned long long)st.arena_bytes,
              (unsigned long long)budget);
        if (pd->host_budget)
            CHECK(cs.pinned_live_bytes <= pd->host_budget, "%s: pinned pool of %llu bytes (%d lanes), host budget %llu",
                  ckpt_policy_name(pd->policy), (unsigned long long)cs.pinned_live_bytes, k->lanes,
                  (unsigned long long)pd->host_budget);
        n_ok++;
    } else if (r == CKPT_ERR_INFEASIBLE) {
        CHECK(info->min_budget > 0, "%s n=%d: INFEASIBLE at %llu without a min_budget", ckpt_policy_name(pd->policy),
              k->n, (unsigned long long)pd->budget);
        n_infeasible++;
    } else {
        n_skipped++;   /* e.g. CKPT_ERR_TOO_COMPLEX */
    }
    if (check_create && k->lanes == 1 && (r == CKPT_OK || r == CKPT_ERR_INFEASIBLE)) {
        ckpt_plan *p = NULL;
        ckpt_plan_info ci;
        ckpt_result rc = ckpt_plan_create(k->c, k->n, pd, &p, &ci);
        CHECK(rc == r && ci.peak == info->peak && ci.arena == info->arena && ci.time == info->time &&
              ci.min_budget == info->min_budget,
              "%s n=%d budget %llu: ckpt_plan_create gives %s peak %llu arena %llu min %llu, ckpt_chain_plan %s peak "
              "%llu arena %llu min %llu", ckpt_policy_name(pd->policy), k->n, (unsigned long long)pd->budget,
              ckpt_result_string(rc), (unsigned long long)ci.peak, (unsigned long long)ci.arena,
              (unsigned long long)ci.min_budget, ckpt_result_string(r), (unsigned long long)info->peak,
              (unsigned long long)info->arena, (unsigned long long)info->min_budget);
        ckpt_plan_destroy(p);
    }
    ckpt_chain_destroy(ch);
    ckpt_cpu_get_stats(&be, &cs);
    CHECK(cs.live_allocations == 0, "%llu allocations left", (unsigned long long)cs.live_allocations);
    ckpt_cpu_backend_destroy(&be);
    return r;
}

static void check_case(const case_t *k, ckpt_policy pol, int every_k, uint64_t budget, uint64_t host_budget) {
    ckpt_plan_desc pd;
    ckpt_plan_info info;
    ckpt_result r;
    memset(&pd, 0, sizeof pd);
    pd.policy = pol; pd.k = every_k; pd.budget = budget;
    if (pol == CKPT_POLICY_OFFLOAD) { pd.bandwidth = (double)rnd_int(100, 4000); pd.host_budget = host_budget; }
    r = plan_on_chain(k, &pd, &info, 1);
    if (r == CKPT_ERR_INFEASIBLE && info.min_budget > 0) {
        ckpt_plan_info again;
        ckpt_result r2;
        pd.budget = info.min_budget;
        r2 = plan_on_chain(k, &pd, &again, 0);
        CHECK(r2 == CKPT_OK, "%s n=%d: INFEASIBLE at %llu names min_budget %llu, where planning gives %s",
              ckpt_policy_name(pol), k->n, (unsigned long long)budget, (unsigned long long)info.min_budget,
              ckpt_result_string(r2));
    }
}

static void random_sweep(int rounds) {
    static const ckpt_policy pols[] = {CKPT_POLICY_OPTIMAL, CKPT_POLICY_GREEDY, CKPT_POLICY_EVERY_K, CKPT_POLICY_SQRT,
                                       CKPT_POLICY_STORE_ALL, CKPT_POLICY_OFFLOAD};
    int it, p;
    for (it = 0; it < rounds; it++) {
        case_t k;
        ckpt_plan_info sa;
        ckpt_plan *plan = NULL;
        ckpt_plan_desc pd;
        /* 1..7 stages: the exact search (seconds per plan at 9..10 under ASan); 11..18: the long-chain program */
        int n = rnd_chance(55) ? rnd_int(1, 7) : rnd_int(11, 18);
        random_case(&k, n, rnd_chance(30));
        if (rnd_chance(15)) k.lanes = rnd_int(2, 3);
        memset(&pd, 0, sizeof pd);
        pd.policy = CKPT_POLICY_STORE_ALL;
        if (ckpt_plan_create(k.c, n, &pd, &plan, &sa) != CKPT_OK) { CHECK(0, "store-all plan"); continue; }
        ckpt_plan_destroy(plan);
        for (p = 0; p < (int)(sizeof pols / sizeof pols[0]); p++) {
            /* budgets from well below the smallest feasible to store-all's arena and beyond */
            uint64_t budget = 1 + rnd_u64(sa.store_all_peak / 8, sa.store_all_peak + sa.store_all_peak / 4);
            uint64_t host = rnd_chance(50) ? 0 : rnd_u64(1, sa.store_all_peak ? sa.store_all_peak : 1);
            int kk = pols[p] == CKPT_POLICY_EVERY_K ? rnd_int(0, n) : 0;
            check_case(&k, pols[p], kk, budget, host);
        }
    }
}

/* 6a: two lanes share the host budget; the planner must plan each lane's pool to fit its share
   (the first version planned for one lane and then failed at install, with min_budget 0). */
static void check_lanes_host_budget(void) {
    case_t k;
    ckpt_plan_desc pd;
    ckpt_plan_info info;
    ckpt_result r;
    int i, lanes;
    memset(&k, 0, sizeof k);
    k.n = 8;
    for (i = 0; i < 8; i++) {
        k.st[i].forward = fwd_nop; k.st[i].backward = bwd_nop;
        k.st[i].out_bytes = 256; k.st[i].tape_bytes = 768; k.st[i].fwd_time = 4; k.st[i].bwd_time = 8;
        k.c[i].a = 256; k.c[i].t = 768; k.c[i].f = 4; k.c[i].b = 8;
    }
    for (lanes = 1; lanes <= 2; lanes++) {
        memset(&pd, 0, sizeof pd);
        pd.policy = CKPT_POLICY_OFFLOAD; pd.bandwidth = 1000; pd.budget = 1536; pd.host_budget = 13823;
        k.lanes = lanes;
        r = plan_on_chain(&k, &pd, &info, 1);
        CHECK(r == CKPT_OK || (r == CKPT_ERR_INFEASIBLE && info.min_budget > 0),
              "lanes %d: offload at 1536 with host budget 13823: %s, min_budget %llu", lanes, ckpt_result_string(r),
              (unsigned long long)info.min_budget);
        if (r == CKPT_OK)
            CHECK(info.host_peak * (uint64_t)lanes <= pd.host_budget, "lanes %d: host peak %llu per lane", lanes,
                  (unsigned long long)info.host_peak);
        printf("lanes %d: %s, peak %llu, arena %llu, host peak %llu, min_budget %llu\n", lanes, ckpt_result_string(r),
               (unsigned long long)info.peak, (unsigned long long)info.arena, (unsigned long long)info.host_peak,
               (unsigned long long)info.min_budget);
    }
}

/* 6b: all-zero times are taken as 1 and 2 by every entry point alike. */
static void check_zero_times(void) {
    case_t k, k12;
    ckpt_plan_desc pd;
    ckpt_plan_info a, b, c;
    ckpt_plan *p = NULL;
    int i;
    random_case(&k, 12, 0);
    for (i = 0; i < 12; i++) { k.st[i].fwd_time = k.st[i].bwd_time = 0; k.c[i].f = k.c[i].b = 0; }
    k12 = k;
    for (i = 0; i < 12; i++) { k12.st[i].fwd_time = k12.c[i].f = 1; k12.st[i].bwd_time = k12.c[i].b = 2; }
    memset(&pd, 0, sizeof pd);
    pd.budget = 0;
    {
        ckpt_plan_info sa;
        pd.policy = CKPT_POLICY_STORE_ALL;
        CHECK(ckpt_plan_create(k.c, 12, &pd, &p, &sa) == CKPT_OK, "store-all");
        ckpt_plan_destroy(p); p = NULL;
        pd.policy = CKPT_POLICY_OPTIMAL;
        pd.budget = sa.store_all_peak / 2;
    }
    CHECK(plan_on_chain(&k, &pd, &a, 0) == CKPT_OK, "chain plan, zero times");
    CHECK(ckpt_plan_create(k.c, 12, &pd, &p, &b) == CKPT_OK, "plan_create, zero times");
    ckpt_plan_destroy(p); p = NULL;
    CHECK(ckpt_plan_create(k12.c, 12, &pd, &p, &c) == CKPT_OK, "plan_create, times 1 and 2");
    ckpt_plan_destroy(p);
    CHECK(a.time == b.time && a.time == c.time && a.peak == b.peak && a.n_recomputed == b.n_recomputed &&
          a.store_all_time == b.store_all_time && b.store_all_time == 36.0,
          "zero times: chain plan time %g peak %llu, plan_create time %g peak %llu store-all time %g, with 1 and 2: %g",
          a.time, (unsigned long long)a.peak, b.time, (unsigned long long)b.peak, b.store_all_time, c.time);
}

/* 6c: ckpt_plan_desc.logger is what ckpt_chain_plan reports to (the chain's when it is unset). */
static int desc_msgs, chain_msgs;
static void log_desc(const char *tag, ckpt_log_level l, ckpt_result it, const char *m, const char *f, int ln, void *u) {
    (void)tag; (void)l; (void)it; (void)m; (void)f; (void)ln; (void)u;
    desc_msgs++;
}
static void log_chain(const char *tag, ckpt_log_level l, ckpt_result it, const char *m, const char *f, int ln, void *u) {
    (void)tag; (void)l; (void)it; (void)m; (void)f; (void)ln; (void)u;
    chain_msgs++;
}
static void check_plan_logger(void) {
    case_t k;
    ckpt_backend be;
    ckpt_chain_desc cd;
    ckpt_chain *ch = NULL;
    ckpt_plan_desc pd;
    ckpt_result r;
    random_case(&k, 5, 0);
    ckpt_cpu_backend_create(NULL, &be);
    memset(&cd, 0, sizeof cd);
    cd.stages = k.st; cd.n_stages = 5; cd.backend = &be; cd.logger.fn = log_chain;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_OK, "chain_create");
    memset(&pd, 0, sizeof pd);
    pd.budget = 1;
    pd.logger.fn = log_desc;
    r = ckpt_chain_plan(ch, &pd, NULL);
    CHECK(r == CKPT_ERR_INFEASIBLE && desc_msgs == 1 && chain_msgs == 0,
          "budget 1 with a desc logger: %s, %d messages to it, %d to the chain's", ckpt_result_string(r), desc_msgs,
          chain_msgs);
    pd.logger.fn = NULL;
    r = ckpt_chain_plan(ch, &pd, NULL);
    CHECK(r == CKPT_ERR_INFEASIBLE && desc_msgs == 1 && chain_msgs == 1,
          "budget 1 without one: %s, %d messages to the desc's logger, %d to the chain's", ckpt_result_string(r),
          desc_msgs, chain_msgs);
    ckpt_chain_destroy(ch);
    ckpt_cpu_backend_destroy(&be);
}

/* The layout's placement finds the placed buffers live at the same time through time buckets or
   a scan in offset order. Either must place exactly where a plain scan does (this reference):
   random lifetimes from one op to all of them, sizes that are and are not aligned. Given a limit
   below the extent, either must stop with a value above the limit. */
static void check_place_reference(int rounds) {
    int round;
    for (round = 0; round < rounds; round++) {
        int n_ops = 1 + (int)(rnd() % 3000), nb = 1 + (int)(rnd() % 600), i, j, mode;
        _ckpt_buf *b = (_ckpt_buf *)calloc((size_t)nb, sizeof *b);
        _ckpt_order_key *order = (_ckpt_order_key *)calloc((size_t)nb, sizeof *order);
        uint64_t *offs = (uint64_t *)calloc((size_t)nb, sizeof *offs), *ref = (uint64_t *)calloc((size_t)nb, sizeof *ref);
        uint64_t arena = 0, ref_extent = 0;
        for (i = 0; i < nb; i++) {
            int len = rnd() % 4 == 0 ? (int)(rnd() % (uint64_t)n_ops) : (int)(rnd() % 8);
            b[i].start = (int)(rnd() % (uint64_t)n_ops);
            b[i].end = b[i].start + len < n_ops ? b[i].start + len : n_ops - 1;
            b[i].bytes = rnd() % 5 == 0 ? 1 + rnd() % 100 : (1 + rnd() % 64) * CKPT_ALIGN;
        }
        CHECK(_ckpt_layout_bufs(NULL, b, nb, n_ops, 0, &arena, NULL) == CKPT_OK, "layout of %d buffers", nb);
        /* the first order the layout tries (largest first), placed by the reference scan */
        for (i = 0; i < nb; i++) {
            order[i].idx = i; order[i].k1 = _ckpt_align_up(b[i].bytes); order[i].k2 = (uint64_t)(b[i].end - b[i].start);
        }
        qsort(order, (size_t)nb, sizeof *order, _ckpt_key_cmp);
        for (i = 0; i < nb; i++) {
            const _ckpt_buf *x = &b[order[i].idx];
            uint64_t sz = _ckpt_align_up(x->bytes), off = 0;
            int moved = 1;
            while (moved) {     /* lowest offset clear of every placed buffer live at the same time */
                moved = 0;
                for (j = 0; j < i; j++) {
                    const _ckpt_buf *y = &b[order[j].idx];
                    uint64_t yo = ref[order[j].idx], ye = yo + _ckpt_align_up(y->bytes);
                    if (y->end < x->start || x->end < y->start || ye <= off || yo >= off + sz) continue;
                    off = ye; moved = 1;
                }
            }
            ref[order[i].idx] = off;
            if (off + sz > ref_extent) ref_extent = off + sz;
        }
        for (mode = 0; mode < 2; mode++) {   /* time buckets, then the scan of every placed buffer */
            _ckpt_placer P;
            int ok = 1;
            uint64_t ext;
            CHECK(_ckpt_placer_init(NULL, b, nb, n_ops, mode, &P) == CKPT_OK, "placer");
            ext = _ckpt_place(b, order, nb, nb, offs, ref_extent, &P);   /* a limit it reaches, not passes */
            for (i = 0; i < nb; i++) ok &= offs[i] == ref[i];
            CHECK(ok && ext == ref_extent, "round %d, mode %d: placement differs from the reference scan (extent %llu "
                  "vs %llu)", round, mode, (unsigned long long)ext, (unsigned long long)ref_extent);
            if (ref_extent > 0) {   /* a limit below the extent: stops with a value above it */
                ext = _ckpt_place(b, order, nb, nb, offs, ref_extent - 1, &P);
                CHECK(ext > ref_extent - 1 && ext <= ref_extent, "round %d, mode %d: limit %llu gave %llu", round, mode,
                      (unsigned long long)(ref_extent - 1), (unsigned long long)ext);
                ext = _ckpt_place(b, order, nb, nb, offs, UINT64_MAX, &P);    /* the placer reused after it */
                for (i = 0, ok = 1; i < nb; i++) ok &= offs[i] == ref[i];
                CHECK(ok && ext == ref_extent, "round %d, mode %d: placement after a stopped one differs", round, mode);
            }
            _ckpt_placer_free(NULL, &P);
        }
        /* the layout's result: no two buffers live at the same time share an address */
        for (i = 0; i < nb; i++)
            for (j = i + 1; j < nb; j++) {
                const _ckpt_buf *x = &b[i], *y = &b[j];
                int live = !(y->end < x->start || x->end < y->start);
                int share = x->offset < y->offset + y->bytes && y->offset < x->offset + x->bytes;
                CHECK(!(live && share), "round %d: buffers %d and %d overlap", round, i, j);
                CHECK(x->offset + x->bytes <= arena, "round %d: buffer %d past the arena", round, i);
            }
        free(b); free(order); free(offs); free(ref);
    }
}

int main(void) {
    check_lanes_host_budget();
    check_zero_times();
    check_plan_logger();
    random_sweep(TEST_REDUCED ? 60 : 150);   /* sanitizer builds: 60 rounds (23-34 s under ASan) */
    check_place_reference(TEST_REDUCED ? 20 : 200);
    printf("test_arena: %d plans within budget, %d infeasible (each re-planned at its min_budget), %d skipped; "
           "%d checks, %d failures\n", n_ok, n_infeasible, n_skipped, checks, failures);
    return failures ? 1 : 0;
}
