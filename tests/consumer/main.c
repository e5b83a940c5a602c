#define CKPT_IMPLEMENTATION              /* in exactly one file */
#include "ckpt.h"
#include "backends/ckpt_cpu.h"
#include <math.h>
#include <stdio.h>
enum { N = 16, D = 4096 };               /* 16 stages, 4096 floats per activation */
/* y = tanh(x). Backward needs y but never sees the output, so forward keeps y in its tape. */
static ckpt_result fwd(const ckpt_fwd_args *a) {
    const float *x = a->in; float *y = a->out, *t = a->tape;
    for (int j = 0; j < D; j++) t[j] = y[j] = tanhf(x[j]);
    return CKPT_OK;
}
static ckpt_result bwd(const ckpt_bwd_args *a) {   /* grad_in is NULL if the caller wants no dx */
    const float *y = a->tape, *gy = a->grad_out; float *gx = a->grad_in;
    for (int j = 0; gx && j < D; j++) gx[j] = gy[j] * (1 - y[j] * y[j]);
    return CKPT_OK;
}
int main(void) {
    static float x[D], gy[D], gx[D];
    ckpt_backend be; ckpt_cpu_backend_create(NULL, &be);
    ckpt_stage_desc st[N] = {0};                   /* zero times: f = 1, b = 2 for every stage */
    for (int i = 0; i < N; i++) {
        st[i].forward = fwd; st[i].backward = bwd;
        st[i].out_bytes = st[i].tape_bytes = D * sizeof(float);
    }
    ckpt_chain_desc cd = {0};
    cd.stages = st; cd.n_stages = N; cd.input_bytes = sizeof x; cd.backend = &be; cd.seed = 42;
    ckpt_chain *chain; ckpt_chain_create(&cd, &chain);
    ckpt_plan_desc pd = {0}; pd.policy = CKPT_POLICY_OPTIMAL; pd.budget = 160 << 10;
    ckpt_plan_info info; ckpt_result r = ckpt_chain_plan(chain, &pd, &info);
    if (r != CKPT_OK) { printf("plan: %s\n", ckpt_result_string(r)); return 1; }
    printf("peak %.0f bytes, time %g (store-all: %.0f bytes, time %g)\n",
           (double)info.peak, info.time, (double)info.store_all_peak, info.store_all_time);
    for (int j = 0; j < D; j++) { x[j] = j / (float)D; gy[j] = 1; }
    const void *out; r = ckpt_forward(chain, x, &out);   /* out = X[N], valid until backward */
    if (r == CKPT_OK) r = ckpt_backward(chain, gy, gx);  /* gx = dL/dx, given dL/dy = gy */
    printf("%s: dx[1] = %g\n", ckpt_result_string(r), gx[1]);
    ckpt_chain_destroy(chain); ckpt_cpu_backend_destroy(&be);
    return r == CKPT_OK ? 0 : 1;
}
