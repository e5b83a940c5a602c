/* The gradient-ready hook (ckpt_chain_desc.grads_ready), on the CPU backend (plain, and with its
   asynchronous copy engine):
   - in every step it is called exactly once per stage with parameters, in backward order, and
     never for a stage flagged CKPT_STAGE_NO_PARAMS; for store-all and for optimal plans that
     recompute, with 1 and 3 microbatch lanes;
   - never before the stage's last B: when it is called, the stage's backward has run for every
     lane, and it does not run again in that step;
   - a streamed stage with host_grads gets in_host_grads = 1, and host_grads already holds its
     final value (what it holds when ckpt_backward returns); other stages get 0;
   - a hook that returns an error fails the step with CKPT_ERR_GRADS_READY and a message naming
     the stage; the next step succeeds with the same gradients as a chain without a hook;
   - bad descs: CKPT_STAGE_NO_PARAMS with host_params, a hook with graphs. */
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"
#include "../backends/ckpt_cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_XORSHIFT64_SEED 0x51ed270b27a3c1f5ull
#include "test_util.h"

#define W 16            /* floats per boundary */
#define MAXN 9
#define MAXK 3

/* Stage i: y = x * p[0] + p[1] elementwise; its tape keeps y (tape_bytes >= W floats). */
typedef struct stage_state {
    int index, streamed;
    float params[2];
    float grads[2];         /* host_grads when streamed, else the callback's own */
} stage_state;

static stage_state S[MAXN];
static int n_stages, lanes;
static int b_runs[MAXN];            /* B callbacks run in this step, all lanes */
static int hook_calls[MAXN], hook_order[MAXN], n_hook, hook_bad, fail_at = -1;
static float snap[MAXN][2];         /* host_grads when the hook saw them */

static ckpt_result fwd(const ckpt_fwd_args *a) {
    stage_state *s = (stage_state *)a->ctx->user;
    const float *x = (const float *)a->in, *p = s->streamed ? (const float *)a->params : s->params;
    float *y = (float *)a->out;
    int i;
    for (i = 0; i < W; i++) y[i] = x[i] * p[0] + p[1];
    if (a->tape) memcpy(a->tape, y, sizeof(float) * W);
    return CKPT_OK;
}

static ckpt_result bwd(const ckpt_bwd_args *a) {
    stage_state *s = (stage_state *)a->ctx->user;
    const float *x = (const float *)a->in, *gy = (const float *)a->grad_out, *p = s->streamed ? (const float *)a->params : s->params;
    float *gx = (float *)a->grad_in, *g = s->streamed ? (float *)a->param_grads : s->grads;
    int i;
    if (hook_calls[s->index]) hook_bad++;       /* a B after the stage's hook */
    for (i = 0; i < W; i++) {
        g[0] += gy[i] * x[i];
        g[1] += gy[i];
        if (gx) gx[i] = gy[i] * p[0];
    }
    b_runs[s->index]++;
    return CKPT_OK;
}

static ckpt_result hook(const ckpt_grads_ready_args *a) {
    int i = a->stage;
    if (a->user != (void *)&hook_calls) hook_bad++;
    if (i < 0 || i >= n_stages) { hook_bad++; return CKPT_ERR_CALLBACK; }
    if (b_runs[i] != lanes) hook_bad++;                       /* every lane's backward first */
    if (a->in_host_grads != S[i].streamed) hook_bad++;
    if (a->stream != NULL) hook_bad++;                       /* the CPU has no stream */
    hook_calls[i]++;
    if (n_hook < MAXN) hook_order[n_hook] = i;
    n_hook++;
    memcpy(snap[i], S[i].grads, sizeof snap[i]);
    return i == fail_at ? CKPT_ERR_CALLBACK : CKPT_OK;
}

static char last_msg[512];
static void keep_msg(const char *tag, ckpt_log_level level, ckpt_result item, const char *msg, const char *file,
                     int line, void *user) {
    (void)tag; (void)level; (void)item; (void)file; (void)line; (void)user;
    snprintf(last_msg, sizeof last_msg, "%s", msg);
}

/* One chain: stages with random sizes, some streamed (with host_grads), some without
   parameters. Runs `steps` steps under policy/budget fraction and checks the hook each step. */
static void run_chain(const ckpt_backend *be, int n, int k, int use_hook, double frac, int steps, float gin_out[MAXK][W],
                      float grads_out[MAXN][2]) {
    ckpt_stage_desc st[MAXN];
    ckpt_chain_desc cd;
    ckpt_plan_desc pd;
    ckpt_plan_info info;
    ckpt_chain *ch = NULL;
    float x[MAXK][W], gout[MAXK][W], gin[MAXK][W];
    const void *xs[MAXK], *gos[MAXK];
    void *gis[MAXK];
    unsigned noparams = 0;
    int i, m, step, j;
    ckpt_result r;
    memset(st, 0, sizeof st);
    memset(&cd, 0, sizeof cd);
    n_stages = n; lanes = k;
    for (i = 0; i < n; i++) {
        S[i].index = i;
        S[i].streamed = (i % 3) == 1;
        S[i].params[0] = 0.5f + 0.125f * (float)i; S[i].params[1] = 0.25f * (float)(i % 4);
        S[i].grads[0] = S[i].grads[1] = 0.0f;
        st[i].forward = fwd; st[i].backward = bwd; st[i].user = &S[i];
        st[i].out_bytes = sizeof(float) * W;
        st[i].tape_bytes = sizeof(float) * W * (size_t)(1 + rnd() % 3);
        st[i].fwd_time = 1.0 + (double)(rnd() % 3); st[i].bwd_time = 2.0 + (double)(rnd() % 3);
        if (S[i].streamed) { st[i].host_params = S[i].params; st[i].param_bytes = sizeof S[i].params; st[i].host_grads = S[i].grads; }
        else if (i % 4 == 3) { st[i].flags = CKPT_STAGE_NO_PARAMS; noparams |= 1u << i; }
    }
    cd.stages = st; cd.n_stages = n; cd.backend = be; cd.seed = 5; cd.microbatches = k;
    cd.input_bytes = sizeof(float) * W;
    if (use_hook) { cd.grads_ready = hook; cd.grads_ready_user = &hook_calls; }
    cd.logger.fn = keep_msg;
    r = ckpt_chain_create(&cd, &ch);
    CHECK(r == CKPT_OK, "chain_create: %s", ckpt_result_string(r));
    if (r != CKPT_OK) return;
    memset(&pd, 0, sizeof pd);
    r = ckpt_chain_plan_dry(ch, NULL, &info);
    CHECK(r == CKPT_OK, "dry plan");
    pd.budget = frac >= 1 ? 0 : (uint64_t)((double)info.store_all_peak * frac);
    r = ckpt_chain_plan(ch, &pd, &info);
    if (r == CKPT_ERR_INFEASIBLE) { pd.budget = info.min_budget; r = ckpt_chain_plan(ch, &pd, &info); }
    CHECK(r == CKPT_OK, "plan: %s", ckpt_result_string(r));
    for (m = 0; m < k; m++)
        for (j = 0; j < W; j++) { x[m][j] = 0.1f * (float)(j + m); gout[m][j] = 1.0f / (float)(1 + j + m); }
    for (m = 0; m < k; m++) { xs[m] = x[m]; gos[m] = gout[m]; gis[m] = gin[m]; }
    for (step = 0; step < steps && r == CKPT_OK; step++) {
        memset(b_runs, 0, sizeof b_runs); memset(hook_calls, 0, sizeof hook_calls); n_hook = 0;
        r = ckpt_forward_microbatches(ch, xs, NULL);
        CHECK(r == CKPT_OK, "forward: %s", ckpt_result_string(r));
        if (r == CKPT_OK) r = ckpt_backward_microbatches(ch, gos, gis);
        if (fail_at >= 0 && use_hook && step == 0) {
            /* the failing hook: its own code, the stage named, then a normal step */
            CHECK(r == CKPT_ERR_GRADS_READY, "failing hook: %s", ckpt_result_string(r));
            CHECK(strstr(last_msg, "grads_ready") != NULL && strstr(last_msg, "stage ") != NULL,
                  "message: %s", last_msg);
            {
                char want[32];
                snprintf(want, sizeof want, "stage %d ", fail_at);
                CHECK(strstr(last_msg, want) != NULL, "message names stage %d: %s", fail_at, last_msg);
            }
            fail_at = -1;
            for (i = 0; i < n; i++) S[i].grads[0] = S[i].grads[1] = 0.0f;
            r = CKPT_OK;
            continue;
        }
        CHECK(r == CKPT_OK, "backward: %s", ckpt_result_string(r));
        if (!use_hook) continue;
        for (i = 0; i < n; i++) {
            int want = (noparams >> i) & 1 ? 0 : 1;
            CHECK(hook_calls[i] == want, "n %d k %d: stage %d hooked %d times, want %d", n, k, i, hook_calls[i], want);
            CHECK(b_runs[i] == k, "stage %d: %d backward runs for %d lanes", i, b_runs[i], k);
            if (S[i].streamed && hook_calls[i])   /* final when the hook saw it */
                CHECK(memcmp(snap[i], S[i].grads, sizeof snap[i]) == 0, "stage %d: host_grads changed after its hook", i);
        }
        for (j = 1; j < n_hook && j < MAXN; j++)
            CHECK(hook_order[j] < hook_order[j - 1], "hook order: stage %d after stage %d", hook_order[j], hook_order[j - 1]);
        CHECK(hook_bad == 0, "n %d k %d frac %.2f: %d hook checks failed", n, k, frac, hook_bad);
        hook_bad = 0;
    }
    for (m = 0; m < k; m++) memcpy(gin_out[m], gin[m], sizeof gin[m]);
    for (i = 0; i < n; i++) memcpy(grads_out[i], S[i].grads, sizeof S[i].grads);
    ckpt_chain_destroy(ch);
}

static ckpt_result fake_graph_begin(void *s, const uint64_t **d) { (void)s; (void)d; return CKPT_ERR_BACKEND; }
static ckpt_result fake_graph_end(void *s, int keep, void **g) { (void)s; (void)keep; (void)g; return CKPT_ERR_BACKEND; }
static ckpt_result fake_graph_launch(void *s, void *g, uint64_t d) { (void)s; (void)g; (void)d; return CKPT_ERR_BACKEND; }
static void fake_graph_destroy(void *s, void *g) { (void)s; (void)g; }

static void bad_descs(const ckpt_backend *be) {
    ckpt_stage_desc st[2];
    ckpt_chain_desc cd;
    ckpt_chain *ch = NULL;
    ckpt_backend gb = *be;
    float p[2] = {1, 0};
    memset(st, 0, sizeof st);
    memset(&cd, 0, sizeof cd);
    st[0].forward = st[1].forward = fwd; st[0].backward = st[1].backward = bwd;
    st[0].out_bytes = st[1].out_bytes = sizeof(float) * W;
    st[0].user = &S[0]; st[1].user = &S[1];
    cd.stages = st; cd.n_stages = 2; cd.backend = be; cd.logger.fn = keep_msg;
    st[1].flags = CKPT_STAGE_NO_PARAMS; st[1].host_params = p; st[1].param_bytes = sizeof p;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_ERR_BAD_ARGUMENT, "NO_PARAMS with host_params");
    CHECK(strstr(last_msg, "CKPT_STAGE_NO_PARAMS") != NULL, "message: %s", last_msg);
    st[1].host_params = NULL; st[1].param_bytes = 0;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_OK, "NO_PARAMS alone");
    ckpt_chain_destroy(ch); ch = NULL;
    gb.graph_begin = fake_graph_begin; gb.graph_end = fake_graph_end;
    gb.graph_launch = fake_graph_launch; gb.graph_destroy = fake_graph_destroy;
    cd.backend = &gb; cd.graphs = 1; cd.grads_ready = hook;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_ERR_BAD_ARGUMENT, "grads_ready with graphs");
    CHECK(strstr(last_msg, "grads_ready") != NULL, "message: %s", last_msg);
    CHECK(ckpt_result_string(CKPT_ERR_GRADS_READY) && !strcmp(ckpt_result_string(CKPT_ERR_GRADS_READY), "CKPT_ERR_GRADS_READY"),
          "result string");
    /* the planner's costs take no CKPT_STAGE_NO_PARAMS: the chain keeps it to itself */
    {
        ckpt_cost c[1];
        ckpt_plan *pl = NULL;
        memset(c, 0, sizeof c);
        c[0].a = 64; c[0].f = 1; c[0].b = 2; c[0].flags = CKPT_STAGE_NO_PARAMS;
        CHECK(ckpt_plan_create(c, 1, NULL, &pl, NULL) == CKPT_ERR_BAD_FLAGS, "NO_PARAMS in ckpt_plan_create's costs");
        ckpt_plan_destroy(pl);
    }
}

int main(void) {
    ckpt_backend plain, engine;
    ckpt_cpu_desc ed;
    static const double fracs[] = {1.0, 0.6, 0.35, 0.0};
    int bi, n, k, fi, i, m;
    memset(&ed, 0, sizeof ed);
    ed.copy_engine = 1;
    if (ckpt_cpu_backend_create(NULL, &plain) != CKPT_OK || ckpt_cpu_backend_create(&ed, &engine) != CKPT_OK) return 1;
    for (bi = 0; bi < 2; bi++)
        for (n = 2; n <= MAXN; n += 3)
            for (k = 1; k <= MAXK; k += 2)
                for (fi = 0; fi < 4; fi++) {
                    float gin_a[MAXK][W], gin_b[MAXK][W], g_a[MAXN][2], g_b[MAXN][2];
                    uint64_t save = rng_state;
                    run_chain(bi ? &engine : &plain, n, k, 1, fracs[fi], 3, gin_a, g_a);
                    rng_state = save;   /* the same chain without a hook: the same gradients */
                    run_chain(bi ? &engine : &plain, n, k, 0, fracs[fi], 3, gin_b, g_b);
                    for (m = 0; m < k; m++) CHECK(memcmp(gin_a[m], gin_b[m], sizeof gin_a[m]) == 0, "G[0] with and without a hook");
                    for (i = 0; i < n; i++) CHECK(memcmp(g_a[i], g_b[i], sizeof g_a[i]) == 0, "stage %d gradients with and without a hook", i);
                    /* a failing hook at a stage with parameters, then normal steps */
                    rng_state = save;
                    for (fail_at = n - 1; fail_at % 3 != 1 && fail_at % 4 == 3; fail_at--) {}   /* has parameters */
                    run_chain(bi ? &engine : &plain, n, k, 1, fracs[fi], 3, gin_a, g_a);
                    rng_state = save;
                    run_chain(bi ? &engine : &plain, n, k, 0, fracs[fi], 2, gin_b, g_b);
                    for (i = 0; i < n; i++) CHECK(memcmp(g_a[i], g_b[i], sizeof g_a[i]) == 0, "after a failed hook: stage %d", i);
                }
    bad_descs(&plain);
    ckpt_cpu_backend_destroy(&plain);
    ckpt_cpu_backend_destroy(&engine);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
