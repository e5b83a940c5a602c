/* ckpt_forward_eval: for every policy's plan (tight and unlimited budgets, parameter streaming or
   not), the evaluation's X[n] equals a training forward's bit for bit (dropout off; with dropout,
   under CKPT_EVAL_RNG, the next training forward's at the same counter); a training step after an
   evaluation gives the gradients of a chain that never evaluated; every buffer an evaluation
   hands a callback lies in the arena and in, out, tape and workspace do not overlap; errors:
   no plan, a pending forward, a NULL input, unknown flags, a draw without CKPT_EVAL_RNG. */
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"
#include "../backends/ckpt_cpu.h"

#include <stdio.h>
#include <string.h>

#include "test_util.h"

#define N 5
#define W 64    /* floats per activation */

static int dropout_on = 0, bad_ptrs = 0, eval_calls = 0, refused = 0, refused_zeroed = 0;
static float pgrad[N], host_w[N][W];
static const char *arena_lo, *arena_hi;

/* The backend's allocations: the arena is the last one made while planning. */
static ckpt_backend cpu;
static ckpt_result rec_alloc(void *state, size_t bytes, void **out) {
    ckpt_result r = cpu.alloc(state, bytes, out);
    if (r == CKPT_OK) { arena_lo = (const char *)*out; arena_hi = arena_lo + bytes; }
    return r;
}

static int inside(const void *p, size_t bytes) {
    return (const char *)p >= arena_lo && (const char *)p + bytes <= arena_hi;
}
static int apart(const void *p, size_t pb, const void *q, size_t qb) {
    return (const char *)p + pb <= (const char *)q || (const char *)q + qb <= (const char *)p;
}

/* out = in * w (+ dropout p = 0.5 when on); tape = in, then the dropout scale per element */
static ckpt_result fwd(const ckpt_fwd_args *a) {
    const float *x = (const float *)a->in, *w = a->params ? (const float *)a->params : host_w[a->ctx->stage];
    float *y = (float *)a->out, *t = (float *)a->tape, *ws = (float *)a->workspace;
    int j;
    if (a->ctx->mode == CKPT_MODE_EVAL) {
        eval_calls++;
        if (a->ctx->keep_tape != 0 || a->ctx->microbatch != 0) bad_ptrs++;
        if (!inside(y, W * 4) || !inside(t, 2 * W * 4) || !inside(ws, W * 4) || !apart(y, W * 4, t, 2 * W * 4) ||
            !apart(y, W * 4, ws, W * 4) || !apart(t, 2 * W * 4, ws, W * 4) || ((uintptr_t)y | (uintptr_t)t | (uintptr_t)ws) % CKPT_ALIGN)
            bad_ptrs++;
        if (a->ctx->stage > 0 && (!inside(x, W * 4) || !apart(x, W * 4, y, W * 4) || !apart(x, W * 4, t, 2 * W * 4) ||
                                  !apart(x, W * 4, ws, W * 4)))
            bad_ptrs++;
    }
    for (j = 0; j < W; j++) { ws[j] = x[j] * w[j]; t[j] = x[j]; t[W + j] = 1.0f; }
    if (dropout_on) {
        ckpt_philox p;
        ckpt_result r;
        memset(&p, 0xA5, sizeof p);
        if ((r = ckpt_ctx_rng(a->ctx, W / 4, &p)) != CKPT_OK) {     /* a refused draw zeroes p */
            refused++;
            refused_zeroed += !p.key && !p.base && !p.count && !p.delta;
            return r;
        }
        for (j = 0; j < W; j++) t[W + j] = ckpt_philox_uniform(&p, (uint64_t)j) >= 0.5f ? 2.0f : 0.0f;
    }
    for (j = 0; j < W; j++) y[j] = ws[j] * t[W + j];
    return CKPT_OK;
}
static ckpt_result bwd(const ckpt_bwd_args *a) {
    const float *g = (const float *)a->grad_out, *t = (const float *)a->tape;
    const float *w = a->params ? (const float *)a->params : host_w[a->ctx->stage];
    float *gi = (float *)a->grad_in;
    int j;
    for (j = 0; j < W; j++) {
        pgrad[a->ctx->stage] += g[j] * t[W + j] * t[j];
        if (gi) gi[j] = g[j] * t[W + j] * w[j];
    }
    return CKPT_OK;
}
/* eval mode, dropout on but skipped as a stage should */
static ckpt_result fwd_skip(const ckpt_fwd_args *a) {
    int save = dropout_on;
    ckpt_result r;
    if (a->ctx->mode == CKPT_MODE_EVAL) dropout_on = 0;
    r = fwd(a);
    dropout_on = save;
    return r;
}

static ckpt_chain *make(ckpt_backend *be, int streaming, ckpt_forward_fn f, ckpt_policy pol, int tight) {
    static ckpt_stage_desc st[N];
    ckpt_chain_desc cd;
    ckpt_chain *ch = NULL;
    ckpt_plan_desc pd;
    ckpt_plan_info info;
    int i;
    memset(st, 0, sizeof st);
    for (i = 0; i < N; i++) {
        st[i].forward = f; st[i].backward = bwd;
        st[i].out_bytes = W * 4; st[i].tape_bytes = 2 * W * 4; st[i].fwd_workspace_bytes = W * 4;
        st[i].fwd_time = 1; st[i].bwd_time = 2;
        if (streaming && i % 2) { st[i].host_params = host_w[i]; st[i].param_bytes = sizeof host_w[i]; }
    }
    memset(&cd, 0, sizeof cd);
    cd.stages = st; cd.n_stages = N; cd.backend = be; cd.seed = 5; cd.logger.fn = NULL;
    if (ckpt_chain_create(&cd, &ch) != CKPT_OK) return NULL;
    memset(&pd, 0, sizeof pd);
    pd.policy = pol; pd.bandwidth = pol == CKPT_POLICY_OFFLOAD ? 1000 : 0;
    if (ckpt_chain_plan(ch, &pd, &info) != CKPT_OK) { ckpt_chain_destroy(ch); return NULL; }
    if (tight) {
        pd.budget = info.min_budget;
        if (ckpt_chain_plan(ch, &pd, &info) != CKPT_OK) { ckpt_chain_destroy(ch); return NULL; }
    }
    return ch;
}

static int step(ckpt_chain *ch, const float *x, float *y, float *grads) {
    const void *out;
    float g[W];
    int j, r;
    memset(pgrad, 0, sizeof pgrad);
    if ((r = ckpt_forward(ch, x, &out)) != CKPT_OK) return r;
    memcpy(y, out, sizeof(float) * W);
    for (j = 0; j < W; j++) g[j] = 0.25f * (float)(j % 5) - 0.5f;
    if ((r = ckpt_backward(ch, g, grads + N)) != CKPT_OK) return r;
    memcpy(grads, pgrad, sizeof pgrad);
    return CKPT_OK;
}

int main(void) {
    ckpt_backend be;
    float x[W];
    int i, j, pol, tight, streaming, dr;
    if (ckpt_cpu_backend_create(NULL, &cpu) != CKPT_OK) return 1;
    be = cpu; be.alloc = rec_alloc;
    for (i = 0; i < N; i++) for (j = 0; j < W; j++) host_w[i][j] = 0.5f + 0.01f * (float)((i * 7 + j) % 13);
    for (j = 0; j < W; j++) x[j] = (float)(j % 9) - 4.0f;
    for (pol = 0; pol < CKPT_POLICY_COUNT_; pol++)
        for (tight = 0; tight < 2; tight++)
            for (streaming = 0; streaming < 2; streaming++)
                for (dr = 0; dr < 2; dr++) {
                    ckpt_chain *a, *b;
                    const void *ev;
                    float ye[W], ya[W], yb[W], ga[N + W], gb[N + W];
                    ckpt_result r;
                    const char *what = ckpt_policy_name((ckpt_policy)pol);
                    dropout_on = dr;
                    a = make(&be, streaming, fwd, (ckpt_policy)pol, tight);
                    b = make(&be, streaming, fwd, (ckpt_policy)pol, tight);   /* b is evaluated: its arena is the last allocation */
                    ckpt_chain_destroy(b);
                    b = make(&be, streaming, fwd, (ckpt_policy)pol, tight);
                    CHECK(a && b, "%s: chains", what);
                    if (!a || !b) { ckpt_chain_destroy(a); ckpt_chain_destroy(b); continue; }
                    /* a: step, step; b: step, eval, step. With dropout the eval draws what b's next forward draws. */
                    CHECK(step(a, x, ya, ga) == CKPT_OK && step(b, x, yb, gb) == CKPT_OK, "%s: first steps", what);
                    bad_ptrs = 0; eval_calls = 0;
                    r = ckpt_forward_eval(b, x, &ev, dr ? CKPT_EVAL_RNG : 0);
                    CHECK(r == CKPT_OK && eval_calls == N, "%s: eval %s, %d calls", what, ckpt_result_string(r), eval_calls);
                    if (r == CKPT_OK) memcpy(ye, ev, sizeof ye);
                    CHECK(bad_ptrs == 0, "%s (tight %d, streaming %d): %d eval buffers outside the arena or overlapping",
                          what, tight, streaming, bad_ptrs);
                    CHECK(step(a, x, ya, ga) == CKPT_OK && step(b, x, yb, gb) == CKPT_OK, "%s: second steps", what);
                    CHECK(memcmp(ye, yb, sizeof ye) == 0, "%s (dropout %d): eval output differs from the training forward's",
                          what, dr);
                    CHECK(memcmp(ya, yb, sizeof ya) == 0 && memcmp(ga, gb, sizeof ga) == 0,
                          "%s (tight %d, streaming %d, dropout %d): the step after an eval differs", what, tight, streaming, dr);
                    ckpt_chain_destroy(a); ckpt_chain_destroy(b);
                }
    /* a stage that skips dropout in eval mode; errors */
    {
        ckpt_chain_desc cd;
        ckpt_stage_desc st[N];
        ckpt_chain *ch;
        const void *ev;
        float y[W], g[N + W];
        ckpt_result r;
        dropout_on = 1;
        memset(st, 0, sizeof st);
        for (i = 0; i < N; i++) {
            st[i].forward = fwd_skip; st[i].backward = bwd; st[i].out_bytes = W * 4; st[i].tape_bytes = 2 * W * 4;
            st[i].fwd_workspace_bytes = W * 4;
        }
        memset(&cd, 0, sizeof cd);
        cd.stages = st; cd.n_stages = N; cd.backend = &be;
        CHECK(ckpt_chain_create(&cd, &ch) == CKPT_OK, "create");
        CHECK(ckpt_forward_eval(ch, x, &ev, 0) == CKPT_ERR_NO_PLAN, "eval without a plan");
        CHECK(ckpt_chain_plan(ch, NULL, NULL) == CKPT_OK, "plan");
        CHECK(ckpt_forward_eval(ch, NULL, &ev, 0) == CKPT_ERR_BAD_ARGUMENT, "NULL input");
        CHECK(ckpt_forward_eval(ch, x, &ev, 0x2) == CKPT_ERR_BAD_ARGUMENT, "unknown flags");
        CHECK(ckpt_forward_eval(ch, x, &ev, 0) == CKPT_OK, "eval, dropout skipped");
        for (j = 0; j < W; j++) {
            float v = x[j];
            for (i = 0; i < N; i++) v *= host_w[i][j];
            y[j] = v;
        }
        CHECK(memcmp(y, ev, sizeof y) == 0, "eval without dropout");
        CHECK(ckpt_forward(ch, x, NULL) == CKPT_OK, "forward");
        CHECK(ckpt_forward_eval(ch, x, &ev, 0) == CKPT_ERR_OUT_OF_ORDER, "eval while a forward is pending");
        ckpt_chain_reset_step(ch);
        ckpt_chain_destroy(ch);
        /* a stage that draws in eval mode without CKPT_EVAL_RNG */
        for (i = 0; i < N; i++) st[i].forward = fwd;
        CHECK(ckpt_chain_create(&cd, &ch) == CKPT_OK && ckpt_chain_plan(ch, NULL, NULL) == CKPT_OK, "create 2");
        r = ckpt_forward_eval(ch, x, &ev, 0);
        CHECK(r == CKPT_ERR_OUT_OF_ORDER, "a draw in eval mode gave %s", ckpt_result_string(r));
        CHECK(refused == 1 && refused_zeroed == 1, "the refused draw: %d, its range zeroed: %d", refused, refused_zeroed);
        CHECK(step(ch, x, y, g) == CKPT_OK, "a step after a failed eval");
        ckpt_chain_destroy(ch);
    }
    ckpt_cpu_backend_destroy(&cpu);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
