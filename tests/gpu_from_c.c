/* The CUDA backend from plain C: this file is compiled by the C compiler (C11) with the core's
   implementation, tests/gpu_impl.cu by nvcc, and the program linked from both. Without a device:
   the "no device" result and message, then exit 77. With one: a chain whose stages are dropout
   layers run entirely through the host API (ckpt_cuda_philox_dropout launched on the context's
   stream), trained under store-all and under a budget that forces recomputation; the input
   gradients must be bit-identical, and the dropout of the first forward must equal the host's. */
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"
#include "../backends/ckpt_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define N_STAGES 6
#define WIDTH 1000

static int recomputed;
/* Each stage's Philox range, on the host (the tape is device memory, which this C code may not
   touch): a recomputation draws the same range, and the backward replays the same mask from it. */
static ckpt_philox ranges[N_STAGES];

static ckpt_result drop_fwd(const ckpt_fwd_args *a) {
    ckpt_philox p;
    ckpt_result r = ckpt_ctx_rng(a->ctx, WIDTH / 4, &p);
    if (r != CKPT_OK) return r;
    if (a->ctx->mode == CKPT_MODE_RECOMPUTE) recomputed++;
    ranges[a->ctx->stage] = p;
    return ckpt_cuda_philox_dropout(a->ctx->backend, &p, 0.2f, (const float *)a->in, (float *)a->out, NULL, WIDTH,
                                    a->ctx->stream);
}
static ckpt_result drop_bwd(const ckpt_bwd_args *a) {
    if (!a->grad_in) return CKPT_OK;
    return ckpt_cuda_philox_dropout(a->ctx->backend, &ranges[a->ctx->stage], 0.2f, (const float *)a->grad_out,
                                    (float *)a->grad_in, NULL, WIDTH, a->ctx->stream);
}

/* One step under the given budget (0: store-all); the input gradient lands in gx_host. */
static void step(ckpt_backend *be, ckpt_stage_desc *st, void *x, void *gy, void *gx, uint64_t budget, float *gx_host,
                 float *y_host) {
    ckpt_chain_desc cd;
    ckpt_plan_desc pd;
    ckpt_plan_info info;
    ckpt_chain *ch = NULL;
    const void *y = NULL;
    memset(&cd, 0, sizeof cd);
    cd.stages = st; cd.n_stages = N_STAGES; cd.input_bytes = WIDTH * sizeof(float); cd.backend = be; cd.seed = 2026;
    memset(&pd, 0, sizeof pd);
    pd.policy = budget ? CKPT_POLICY_OPTIMAL : CKPT_POLICY_STORE_ALL;
    pd.budget = budget;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_OK, "chain_create");
    CHECK(ckpt_chain_plan(ch, &pd, &info) == CKPT_OK, "plan at budget %llu", (unsigned long long)budget);
    CHECK(!budget || info.n_recomputed > 0, "the budget forces recomputation");
    CHECK(ckpt_forward(ch, x, &y) == CKPT_OK, "forward");
    CHECK(be->copy_async(be->state, y_host, y, WIDTH * sizeof(float), CKPT_COPY_DEVICE_TO_HOST, NULL) == CKPT_OK, "copy y");
    CHECK(ckpt_backward(ch, gy, gx) == CKPT_OK, "backward");
    CHECK(be->copy_async(be->state, gx_host, gx, WIDTH * sizeof(float), CKPT_COPY_DEVICE_TO_HOST, NULL) == CKPT_OK &&
          be->synchronize(be->state, NULL) == CKPT_OK, "copy gx");
    ckpt_chain_destroy(ch);
}

int main(void) {
    ckpt_backend be;
    ckpt_cuda_desc d;
    ckpt_stage_desc st[N_STAGES];
    ckpt_cuda_stats stats;
    static float ones[WIDTH], gx_ref[WIDTH], gx[WIDTH], y_ref[WIDTH], y[WIDTH], expect[WIDTH];
    void *dx = NULL, *dgy = NULL, *dgx = NULL;
    int count = 0, i;
    ckpt_result r = ckpt_cuda_device_count(&count);
    memset(&d, 0, sizeof d);
    if (r == CKPT_ERR_NO_DEVICE) {
        CHECK(ckpt_cuda_backend_create(&d, &be) == CKPT_ERR_NO_DEVICE, "create without a device");
        CHECK(strcmp(ckpt_result_string(CKPT_ERR_NO_DEVICE), "CKPT_ERR_NO_DEVICE") == 0, "result name");
        printf("%d passed, %d failed; no CUDA device: skipped\n", checks - failures, failures);
        return failures ? 1 : 77;
    }
    if (ckpt_cuda_backend_create(&d, &be) != CKPT_OK) { printf("FAIL: create\n"); return 1; }
    memset(st, 0, sizeof st);
    for (i = 0; i < N_STAGES; i++) {
        st[i].forward = drop_fwd; st[i].backward = drop_bwd;
        st[i].out_bytes = WIDTH * sizeof(float);
        st[i].fwd_time = 1; st[i].bwd_time = 2;
    }
    for (i = 0; i < WIDTH; i++) ones[i] = 1.0f + (float)(i % 13);
    CHECK(be.alloc(be.state, WIDTH * sizeof(float), &dx) == CKPT_OK && be.alloc(be.state, WIDTH * sizeof(float), &dgy) == CKPT_OK &&
          be.alloc(be.state, WIDTH * sizeof(float), &dgx) == CKPT_OK, "buffers");
    CHECK(be.copy_async(be.state, dx, ones, sizeof ones, CKPT_COPY_HOST_TO_DEVICE, NULL) == CKPT_OK &&
          be.copy_async(be.state, dgy, ones, sizeof ones, CKPT_COPY_HOST_TO_DEVICE, NULL) == CKPT_OK, "uploads");
    step(&be, st, dx, dgy, dgx, 0, gx_ref, y_ref);
    recomputed = 0;
    step(&be, st, dx, dgy, dgx, 3 * WIDTH * sizeof(float) + 1024, gx, y);
    CHECK(recomputed > 0, "no stage was recomputed");
    CHECK(memcmp(gx, gx_ref, sizeof gx) == 0, "input gradient differs from store-all's");
    CHECK(memcmp(y, y_ref, sizeof y) == 0, "output differs from store-all's");
    {   /* the host computes the same forward: six dropouts over consecutive Philox ranges */
        ckpt_philox p;
        memcpy(expect, ones, sizeof expect);
        p.key = 2026; p.count = WIDTH / 4; p.delta = NULL;
        for (i = 0; i < N_STAGES; i++) {
            p.base = (uint64_t)i * (WIDTH / 4);
            ckpt_philox_dropout(&p, 0.2f, expect, expect, NULL, WIDTH);
        }
        CHECK(memcmp(expect, y_ref, sizeof expect) == 0, "device forward differs from the host's dropout chain");
    }
    be.free(be.state, dx); be.free(be.state, dgy); be.free(be.state, dgx);
    ckpt_cuda_get_stats(&be, &stats);
    CHECK(stats.live_bytes == 0, "%llu device bytes leaked", (unsigned long long)stats.live_bytes);
    ckpt_cuda_backend_destroy(&be);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
