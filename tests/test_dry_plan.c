/* test_dry_plan.c -- ckpt_chain_plan_dry, and replacing a plan without holding two arenas.

   A counting backend wraps the CPU backend's alloc, free, alloc_pinned and free_pinned: it keeps
   the device and pinned bytes held now and the most held at once, and can make the nth
   allocation from now fail. Checked:
   - the dry call allocates nothing and returns what ckpt_chain_plan returns (result and every
     info field) for six policies, offload and 3 microbatch lanes included, and an infeasible
     budget;
   - a third of store-all planned on a fresh chain never allocates store-all's arena;
   - replacing store-all by a third of it holds at most max(old, new) device bytes (plus the
     slots of parameter streaming), pinned pools likewise; with keep_old_on_failure both;
   - an allocation failure (the arena, or the pinned pool after the arena) leaves no plan and
     holds nothing; with keep_old_on_failure the old (offload) plan still gives store-all's
     gradients bit for bit;
   - NULL chain, a pending forward, an infeasible budget, a bad policy and a backend without
     pinned memory: the same error from both calls, the installed plan untouched. */
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"
#include "../backends/ckpt_cpu.h"
#include <math.h>
#include <string.h>

#include "test_util.h"

enum { N = 12, D = 1024, MAXLIVE = 64 };

/* ---- the counting backend ---------------------------------------------------------------------- */
static struct {
    ckpt_backend inner;
    uint64_t dev, dev_max, pin, pin_max, allocs;
    int fail_in;                        /* the nth alloc or alloc_pinned from now fails; 0: none */
    struct { void *p; size_t bytes; int pinned; } live[MAXLIVE];
} cnt;

static ckpt_result count_alloc(void *state, size_t bytes, void **out, int pinned) {
    ckpt_result r;
    int i;
    if (cnt.fail_in && --cnt.fail_in == 0) { *out = NULL; return CKPT_ERR_OUT_OF_DEVICE_MEMORY; }
    r = pinned ? cnt.inner.alloc_pinned(state, bytes, out) : cnt.inner.alloc(state, bytes, out);
    if (r != CKPT_OK) return r;
    for (i = 0; i < MAXLIVE && cnt.live[i].p; i++) {}
    CHECK(i < MAXLIVE, "more than %d live allocations", MAXLIVE);
    if (i == MAXLIVE) return r;
    cnt.live[i].p = *out; cnt.live[i].bytes = bytes; cnt.live[i].pinned = pinned;
    cnt.allocs++;
    if (pinned) { cnt.pin += bytes; if (cnt.pin > cnt.pin_max) cnt.pin_max = cnt.pin; }
    else { cnt.dev += bytes; if (cnt.dev > cnt.dev_max) cnt.dev_max = cnt.dev; }
    return r;
}
static void count_free(void *state, void *p, int pinned) {
    int i;
    if (!p) return;
    for (i = 0; i < MAXLIVE && cnt.live[i].p != p; i++) {}
    CHECK(i < MAXLIVE && cnt.live[i].pinned == pinned, "free of %p, which was not allocated (pinned %d)", p, pinned);
    if (i == MAXLIVE) return;
    if (pinned) cnt.pin -= cnt.live[i].bytes; else cnt.dev -= cnt.live[i].bytes;
    cnt.live[i].p = NULL;
    if (pinned) cnt.inner.free_pinned(state, p); else cnt.inner.free(state, p);
}
static ckpt_result c_alloc(void *s, size_t b, void **o) { return count_alloc(s, b, o, 0); }
static ckpt_result c_alloc_pinned(void *s, size_t b, void **o) { return count_alloc(s, b, o, 1); }
static void c_free(void *s, void *p) { count_free(s, p, 0); }
static void c_free_pinned(void *s, void *p) { count_free(s, p, 1); }

/* The CPU backend with counted allocations (its state is the CPU backend's). */
static void counting_backend(ckpt_backend *be) {
    ckpt_cpu_backend_create(NULL, &cnt.inner);
    *be = cnt.inner;
    be->alloc = c_alloc; be->free = c_free; be->alloc_pinned = c_alloc_pinned; be->free_pinned = c_free_pinned;
}
static void reset_max(void) { cnt.dev_max = cnt.dev; cnt.pin_max = cnt.pin; }

/* ---- the chain: y = tanh(w x), the tape keeps y; w a scalar parameter per stage ---------------- */
static float w[N], dw[N];
static float pw[N], pdw[N];     /* streamed copies of w and dw (host_params, host_grads) */

static ckpt_result fwd(const ckpt_fwd_args *a) {
    const float *x = (const float *)a->in;
    float *y = (float *)a->out, *t = (float *)a->tape;
    float wi = a->params ? *(const float *)a->params : *(const float *)a->ctx->user;
    int j;
    for (j = 0; j < D; j++) t[j] = y[j] = tanhf(wi * x[j]);
    return CKPT_OK;
}
static ckpt_result bwd(const ckpt_bwd_args *a) {
    const float *x = (const float *)a->in, *y = (const float *)a->tape, *gy = (const float *)a->grad_out;
    float *gx = (float *)a->grad_in, s = 0;
    float wi = a->params ? *(const float *)a->params : *(const float *)a->ctx->user;
    int j;
    for (j = 0; j < D; j++) {
        float g = gy[j] * (1 - y[j] * y[j]);
        s += g * x[j];
        if (gx) gx[j] = g * wi;
    }
    if (a->param_grads) *(float *)a->param_grads += s;
    else dw[(const float *)a->ctx->user - w] += s;
    return CKPT_OK;
}

static ckpt_stage_desc st[N];

/* A chain of N stages on be with k lanes; stream: every stage's parameter streams. */
static ckpt_chain *make_chain(const ckpt_backend *be, int lanes, int stream) {
    ckpt_chain_desc cd;
    ckpt_chain *ch = NULL;
    int i;
    memset(st, 0, sizeof st);
    for (i = 0; i < N; i++) {
        w[i] = pw[i] = 0.5f + 0.05f * (float)i;
        st[i].forward = fwd; st[i].backward = bwd; st[i].user = &w[i];
        st[i].out_bytes = D * sizeof(float);
        st[i].tape_bytes = (size_t)(1 + i % 3) * D * sizeof(float);
        st[i].fwd_time = 1.0 + i % 4; st[i].bwd_time = 2 * st[i].fwd_time;
        if (stream) { st[i].host_params = &pw[i]; st[i].param_bytes = sizeof(float); st[i].host_grads = &pdw[i]; }
    }
    memset(&cd, 0, sizeof cd);
    cd.stages = st; cd.n_stages = N; cd.input_bytes = D * sizeof(float); cd.backend = be; cd.seed = 7;
    cd.microbatches = lanes;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_OK, "chain_create");
    return ch;
}

/* One step's gradients: dw, then dx. */
static ckpt_result step(ckpt_chain *ch, float g[N + D]) {
    static float x[D], gy[D];
    ckpt_result r;
    int j;
    for (j = 0; j < D; j++) { x[j] = (float)(j % 17) / 8.0f - 1.0f; gy[j] = (float)(j % 5) - 2.0f; }
    memset(dw, 0, sizeof dw);
    if ((r = ckpt_forward(ch, x, NULL)) != CKPT_OK) return r;
    if ((r = ckpt_backward(ch, gy, g + N)) != CKPT_OK) return r;
    memcpy(g, dw, sizeof dw);
    return CKPT_OK;
}

static int same_info(const ckpt_plan_info *a, const ckpt_plan_info *b) {
    return a->policy == b->policy && a->budget == b->budget && a->time == b->time && a->peak == b->peak &&
           a->arena == b->arena && a->fit_budget == b->fit_budget && a->min_budget == b->min_budget &&
           a->store_all_time == b->store_all_time && a->store_all_peak == b->store_all_peak && a->k == b->k &&
           a->unit == b->unit && a->guarantee == b->guarantee && a->n_ops == b->n_ops &&
           a->n_recomputed == b->n_recomputed && a->compute_time == b->compute_time &&
           a->host_peak == b->host_peak && a->n_offloaded == b->n_offloaded;
}

static ckpt_plan_desc desc_of(ckpt_policy p, uint64_t budget) {
    ckpt_plan_desc pd;
    memset(&pd, 0, sizeof pd);
    pd.policy = p; pd.budget = budget;
    if (p == CKPT_POLICY_OFFLOAD) pd.bandwidth = 1e5;   /* bytes per time unit: a tape moves in 0.1 of a forward */
    return pd;
}

/* ---- the dry call plans what ckpt_chain_plan plans, allocating nothing ------------------------- */
static void dry_matches_plan(const ckpt_backend *be, int lanes) {
    ckpt_chain *ch = make_chain(be, lanes, 0);
    ckpt_plan_info sa, di, pi;
    ckpt_chain_stats cs = {0};
    int i, offloaded = 0;
    if (!ch) return;
    cnt.allocs = 0;
    reset_max();
    CHECK(ckpt_chain_plan_dry(ch, NULL, &sa) == CKPT_OK && sa.store_all_peak > 0, "dry, no desc");
    CHECK(cnt.allocs == 0 && cnt.dev_max == 0, "lanes %d: dry plan on a fresh chain allocated %llu times",
          lanes, (unsigned long long)cnt.allocs);
    for (i = 0; i < 8; i++) {
        static const ckpt_policy pol[8] = {CKPT_POLICY_STORE_ALL, CKPT_POLICY_OPTIMAL, CKPT_POLICY_EVERY_K,
                                           CKPT_POLICY_SQRT, CKPT_POLICY_GREEDY, CKPT_POLICY_OFFLOAD,
                                           CKPT_POLICY_OFFLOAD, CKPT_POLICY_OPTIMAL};
        static const double frac[8] = {0, 1.0 / 3, 0.5, 0, 0.5, 0.25, 0.25, 0.01};
        ckpt_plan_desc pd = desc_of(pol[i], (uint64_t)(frac[i] * (double)sa.store_all_peak));
        const ckpt_plan *before = ckpt_chain_get_plan(ch);
        uint64_t allocs = cnt.allocs, dev = cnt.dev, pin = cnt.pin;
        ckpt_result rd, rp;
        if (i == 6) pd.host_budget = (uint64_t)lanes * 3 * D * sizeof(float);
        memset(&di, 0xab, sizeof di); memset(&pi, 0xcd, sizeof pi);
        rd = ckpt_chain_plan_dry(ch, &pd, &di);
        CHECK(cnt.allocs == allocs && cnt.dev == dev && cnt.pin == pin && ckpt_chain_get_plan(ch) == before,
              "lanes %d case %d: the dry call allocated or replaced the plan", lanes, i);
        rp = ckpt_chain_plan(ch, &pd, &pi);
        CHECK(rd == rp, "lanes %d case %d (%s): dry %s, plan %s", lanes, i, ckpt_policy_name(pol[i]),
              ckpt_result_string(rd), ckpt_result_string(rp));
        if (rp == CKPT_ERR_INFEASIBLE) {
            CHECK(i == 7 && di.min_budget == pi.min_budget && di.min_budget > pd.budget &&
                  di.store_all_peak == sa.store_all_peak && ckpt_chain_get_plan(ch) == before,
                  "lanes %d case %d: infeasible: dry min %llu, plan min %llu", lanes, i,
                  (unsigned long long)di.min_budget, (unsigned long long)pi.min_budget);
            continue;
        }
        CHECK(rp == CKPT_OK && i != 7, "lanes %d case %d: %s", lanes, i, ckpt_result_string(rp));
        CHECK(same_info(&di, &pi), "lanes %d case %d (%s): dry peak %llu time %g arena %llu fit %llu min %llu ops %d; "
              "plan peak %llu time %g arena %llu fit %llu min %llu ops %d", lanes, i, ckpt_policy_name(pol[i]),
              (unsigned long long)di.peak, di.time, (unsigned long long)di.arena, (unsigned long long)di.fit_budget,
              (unsigned long long)di.min_budget, di.n_ops, (unsigned long long)pi.peak, pi.time,
              (unsigned long long)pi.arena, (unsigned long long)pi.fit_budget, (unsigned long long)pi.min_budget,
              pi.n_ops);
        ckpt_chain_get_stats(ch, &cs);
        CHECK(cs.arena_bytes == di.arena * (uint64_t)lanes && cnt.dev == cs.arena_bytes,
              "lanes %d case %d: dry arena %llu x %d lanes, allocated %llu (backend holds %llu)", lanes, i,
              (unsigned long long)di.arena, lanes, (unsigned long long)cs.arena_bytes, (unsigned long long)cnt.dev);
        offloaded += pi.n_offloaded > 0;
    }
    /* the pinned pool path is exercised (with host_budget, a recompute-only plan may win) */
    CHECK(offloaded >= 1, "lanes %d: none of the 2 offload plans offloads", lanes);
    ckpt_chain_destroy(ch);
    CHECK(cnt.dev == 0 && cnt.pin == 0, "lanes %d: %llu device, %llu pinned bytes left", lanes,
          (unsigned long long)cnt.dev, (unsigned long long)cnt.pin);
}

/* A third of store-all on a fresh chain: store-all's arena is never allocated. */
static void third_without_store_all(const ckpt_backend *be) {
    ckpt_chain *ch = make_chain(be, 1, 0);
    ckpt_plan_info sa, info;
    ckpt_plan_desc pd;
    if (!ch) return;
    reset_max();
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_STORE_ALL;
    CHECK(ckpt_chain_plan_dry(ch, &pd, &sa) == CKPT_OK && sa.peak == sa.store_all_peak, "dry store-all");
    pd = desc_of(CKPT_POLICY_OPTIMAL, sa.store_all_peak / 3);
    CHECK(ckpt_chain_plan(ch, &pd, &info) == CKPT_OK, "a third of store-all");
    CHECK(cnt.dev_max == info.arena && info.arena < sa.arena, "held at most %llu bytes: the third's arena is %llu, "
          "store-all's %llu", (unsigned long long)cnt.dev_max, (unsigned long long)info.arena,
          (unsigned long long)sa.arena);
    ckpt_chain_destroy(ch);
}

/* ---- replacing a plan --------------------------------------------------------------------------- */

/* Replaces plan a by plan b (keep: keep_old_on_failure) and checks the most bytes held at once. */
static void replace(ckpt_chain *ch, const ckpt_plan_desc *a, ckpt_plan_desc b, int keep, const char *what) {
    ckpt_plan_info ia, ib;
    ckpt_chain_stats cs = {0};
    uint64_t base, pin_base, pool_a, pool_b;
    CHECK(ckpt_chain_plan(ch, a, &ia) == CKPT_OK, "%s: old plan", what);
    ckpt_chain_get_stats(ch, &cs);
    base = cnt.dev - cs.arena_bytes;    /* the streaming slots */
    CHECK(base == cs.slot_bytes, "%s: the backend holds %llu besides the arena, slots %llu", what,
          (unsigned long long)base, (unsigned long long)cs.slot_bytes);
    pool_a = cs.pool_bytes;
    pin_base = cnt.pin - pool_a;        /* nothing else: streaming stages no gradients in pinned memory */
    CHECK(pin_base == 0, "%s: %llu pinned bytes besides the pool", what, (unsigned long long)pin_base);
    reset_max();
    b.keep_old_on_failure = keep;
    CHECK(ckpt_chain_plan(ch, &b, &ib) == CKPT_OK, "%s: new plan", what);
    ckpt_chain_get_stats(ch, &cs);
    pool_b = cs.pool_bytes;
    CHECK(ia.arena != ib.arena, "%s: the arenas should differ (%llu)", what, (unsigned long long)ia.arena);
    if (!keep) {
        CHECK(cnt.dev_max == base + (ia.arena > ib.arena ? ia.arena : ib.arena),
              "%s: held %llu device bytes at once; slots %llu, old arena %llu, new %llu", what,
              (unsigned long long)cnt.dev_max, (unsigned long long)base, (unsigned long long)ia.arena,
              (unsigned long long)ib.arena);
        CHECK(cnt.pin_max == pin_base + (pool_a > pool_b ? pool_a : pool_b),
              "%s: held %llu pinned bytes at once; besides the pools %llu, old pool %llu, new %llu", what,
              (unsigned long long)cnt.pin_max, (unsigned long long)pin_base, (unsigned long long)pool_a,
              (unsigned long long)pool_b);
    } else {
        CHECK(cnt.dev_max == base + ia.arena + ib.arena, "%s, keeping the old: held %llu device bytes at once; "
              "slots %llu, old arena %llu, new %llu", what, (unsigned long long)cnt.dev_max, (unsigned long long)base,
              (unsigned long long)ia.arena, (unsigned long long)ib.arena);
        CHECK(cnt.pin_max == pin_base + pool_a + pool_b, "%s, keeping the old: held %llu pinned bytes at once; "
              "besides the pools %llu, old pool %llu, new %llu", what, (unsigned long long)cnt.pin_max,
              (unsigned long long)pin_base, (unsigned long long)pool_a, (unsigned long long)pool_b);
    }
}

static void replacing(const ckpt_backend *be) {
    int stream, keep;
    for (stream = 0; stream < 2; stream++)
        for (keep = 0; keep < 2; keep++) {
            ckpt_chain *ch = make_chain(be, 1, stream);
            ckpt_plan_info sa;
            ckpt_plan_desc all = desc_of(CKPT_POLICY_STORE_ALL, 0), off;
            char what[64];
            if (!ch) return;
            snprintf(what, sizeof what, "store-all -> 1/3%s", stream ? ", streaming" : "");
            ckpt_chain_plan_dry(ch, NULL, &sa);
            replace(ch, &all, desc_of(CKPT_POLICY_OPTIMAL, sa.store_all_peak / 3), keep, what);
            snprintf(what, sizeof what, "offload 1/4 -> offload 1/2%s", stream ? ", streaming" : "");
            off = desc_of(CKPT_POLICY_OFFLOAD, sa.store_all_peak / 4);
            replace(ch, &off, desc_of(CKPT_POLICY_OFFLOAD, sa.store_all_peak / 2), keep, what);
            ckpt_chain_destroy(ch);
            CHECK(cnt.dev == 0 && cnt.pin == 0, "%s: %llu device, %llu pinned bytes left", what,
                  (unsigned long long)cnt.dev, (unsigned long long)cnt.pin);
        }
}

/* ---- allocation failures ------------------------------------------------------------------------ */
static void failures_(const ckpt_backend *be) {
    ckpt_chain *ch = make_chain(be, 1, 0);
    ckpt_plan_info sa, io, info;
    ckpt_plan_desc all = desc_of(CKPT_POLICY_STORE_ALL, 0), third, off;
    ckpt_chain_stats cs = {0};
    static float ref[N + D], got[N + D];
    const ckpt_plan *old;
    int nth;
    if (!ch) return;
    CHECK(ckpt_chain_plan(ch, &all, &sa) == CKPT_OK && step(ch, ref) == CKPT_OK, "store-all step");
    third = desc_of(CKPT_POLICY_OPTIMAL, sa.store_all_peak / 3);
    off = desc_of(CKPT_POLICY_OFFLOAD, sa.store_all_peak / 4);
    /* without the flag: the arena (nth 1) or the offload plan's pool (nth 2) fails */
    for (nth = 1; nth <= 2; nth++) {
        CHECK(ckpt_chain_plan(ch, &all, NULL) == CKPT_OK, "store-all again");
        cnt.fail_in = nth;
        /* the pinned pool's failure is reported as host memory */
        CHECK(ckpt_chain_plan(ch, nth == 1 ? &third : &off, &info) ==
              (nth == 1 ? CKPT_ERR_OUT_OF_DEVICE_MEMORY : CKPT_ERR_OUT_OF_HOST_MEMORY),
              "failure %d: not reported", nth);
        ckpt_chain_get_stats(ch, &cs);
        CHECK(ckpt_forward(ch, ref, NULL) == CKPT_ERR_NO_PLAN && ckpt_chain_get_plan(ch) == NULL &&
              cs.arena_bytes == 0 && cs.pool_bytes == 0, "failure %d: the chain should have no plan", nth);
        CHECK(cnt.dev == 0 && cnt.pin == 0, "failure %d: %llu device, %llu pinned bytes held", nth,
              (unsigned long long)cnt.dev, (unsigned long long)cnt.pin);
    }
    CHECK(ckpt_chain_plan(ch, &third, NULL) == CKPT_OK && step(ch, got) == CKPT_OK &&
          memcmp(got, ref, sizeof ref) == 0, "a plan after the failures runs and gives store-all's gradients");
    /* with the flag: an offload plan survives the failure of the new arena or of its new pool */
    for (nth = 1; nth <= 2; nth++) {
        ckpt_plan_desc next = nth == 1 ? third : desc_of(CKPT_POLICY_OFFLOAD, sa.store_all_peak / 2);
        uint64_t dev, pin;
        CHECK(ckpt_chain_plan(ch, &off, &io) == CKPT_OK && io.n_offloaded > 0, "the offload plan offloads");
        old = ckpt_chain_get_plan(ch);
        dev = cnt.dev; pin = cnt.pin;
        next.keep_old_on_failure = 1;
        cnt.fail_in = nth;
        CHECK(ckpt_chain_plan(ch, &next, &info) ==
              (nth == 1 ? CKPT_ERR_OUT_OF_DEVICE_MEMORY : CKPT_ERR_OUT_OF_HOST_MEMORY),
              "keep, failure %d: not reported", nth);
        CHECK(ckpt_chain_get_plan(ch) == old && cnt.dev == dev && cnt.pin == pin,
              "keep, failure %d: the old plan and its memory should stay (device %llu was %llu, pinned %llu was %llu)",
              nth, (unsigned long long)cnt.dev, (unsigned long long)dev, (unsigned long long)cnt.pin,
              (unsigned long long)pin);
        memset(got, 0, sizeof got);
        CHECK(step(ch, got) == CKPT_OK && memcmp(got, ref, sizeof ref) == 0,
              "keep, failure %d: the old plan's step should give store-all's gradients", nth);
    }
    ckpt_chain_destroy(ch);
    CHECK(cnt.dev == 0 && cnt.pin == 0 && cnt.fail_in == 0, "failures: %llu device, %llu pinned bytes left",
          (unsigned long long)cnt.dev, (unsigned long long)cnt.pin);
}

/* ---- errors: the same from both calls, and the installed plan untouched ------------------------ */
static void errors(const ckpt_backend *be) {
    ckpt_chain *ch = make_chain(be, 1, 0);
    ckpt_plan_info sa, di, pi;
    ckpt_plan_desc all = desc_of(CKPT_POLICY_STORE_ALL, 0), pd;
    ckpt_backend nopin = *be;
    ckpt_chain *np;
    static float ref[N + D], got[N + D];
    static float x[D], gy[D];
    const ckpt_plan *old;
    uint64_t dev;
    int keep;
    if (!ch) return;
    CHECK(ckpt_chain_plan_dry(NULL, &all, &di) == CKPT_ERR_NULL_ARGUMENT &&
          ckpt_chain_plan(NULL, &all, &pi) == CKPT_ERR_NULL_ARGUMENT, "NULL chain");
    CHECK(ckpt_chain_plan_dry(ch, &all, NULL) == CKPT_OK && cnt.allocs == 0, "NULL info is fine and allocates nothing");
    CHECK(ckpt_chain_plan(ch, &all, &sa) == CKPT_OK && step(ch, ref) == CKPT_OK, "store-all step");
    old = ckpt_chain_get_plan(ch);
    dev = cnt.dev;
    /* pending forward */
    CHECK(ckpt_forward(ch, x, NULL) == CKPT_OK, "forward");
    pd = desc_of(CKPT_POLICY_OPTIMAL, sa.store_all_peak / 3);
    CHECK(ckpt_chain_plan_dry(ch, &pd, &di) == CKPT_ERR_OUT_OF_ORDER &&
          ckpt_chain_plan(ch, &pd, &pi) == CKPT_ERR_OUT_OF_ORDER, "pending forward");
    CHECK(ckpt_backward(ch, gy, NULL) == CKPT_OK && ckpt_chain_get_plan(ch) == old, "the step completes");
    for (keep = 0; keep < 2; keep++) {
        /* infeasible */
        pd = desc_of(CKPT_POLICY_OPTIMAL, 1000);
        pd.keep_old_on_failure = keep;
        memset(&di, 0, sizeof di); memset(&pi, 0, sizeof pi);
        CHECK(ckpt_chain_plan_dry(ch, &pd, &di) == CKPT_ERR_INFEASIBLE &&
              ckpt_chain_plan(ch, &pd, &pi) == CKPT_ERR_INFEASIBLE, "keep %d: infeasible", keep);
        CHECK(di.min_budget > 1000 && di.min_budget == pi.min_budget && di.store_all_peak == sa.store_all_peak,
              "keep %d: min_budget dry %llu, plan %llu", keep, (unsigned long long)di.min_budget,
              (unsigned long long)pi.min_budget);
        /* a bad desc */
        pd = desc_of((ckpt_policy)99, 0);
        pd.keep_old_on_failure = keep;
        CHECK(ckpt_chain_plan_dry(ch, &pd, &di) == CKPT_ERR_BAD_POLICY &&
              ckpt_chain_plan(ch, &pd, &pi) == CKPT_ERR_BAD_POLICY, "keep %d: bad policy", keep);
        CHECK(ckpt_chain_get_plan(ch) == old && cnt.dev == dev, "keep %d: the installed plan should be untouched",
              keep);
        memset(got, 0, sizeof got);
        CHECK(step(ch, got) == CKPT_OK && memcmp(got, ref, sizeof ref) == 0,
              "keep %d: the installed plan should still give its gradients", keep);
    }
    ckpt_chain_destroy(ch);
    /* an offload plan on a backend without pinned memory fails before anything is freed */
    nopin.alloc_pinned = NULL; nopin.free_pinned = NULL;
    np = make_chain(&nopin, 1, 0);
    if (!np) return;
    CHECK(ckpt_chain_plan(np, &all, NULL) == CKPT_OK, "store-all without pinned memory");
    old = ckpt_chain_get_plan(np);
    dev = cnt.dev;
    pd = desc_of(CKPT_POLICY_OFFLOAD, sa.store_all_peak / 4);
    CHECK(ckpt_chain_plan_dry(np, &pd, &di) == CKPT_ERR_BAD_BACKEND &&
          ckpt_chain_plan(np, &pd, &pi) == CKPT_ERR_BAD_BACKEND, "offload without pinned memory");
    CHECK(ckpt_chain_get_plan(np) == old && cnt.dev == dev && step(np, got) == CKPT_OK &&
          memcmp(got, ref, sizeof ref) == 0,
          "BAD_BACKEND left the installed plan untouched");
    ckpt_chain_destroy(np);
}

int main(void) {
    ckpt_backend be;
    counting_backend(&be);
    dry_matches_plan(&be, 1);
    dry_matches_plan(&be, 3);
    third_without_store_all(&be);
    replacing(&be);
    failures_(&be);
    cnt.allocs = 0;
    errors(&be);
    CHECK(cnt.dev == 0 && cnt.pin == 0, "%llu device, %llu pinned bytes left at the end", (unsigned long long)cnt.dev,
          (unsigned long long)cnt.pin);
    ckpt_cpu_backend_destroy(&cnt.inner);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
