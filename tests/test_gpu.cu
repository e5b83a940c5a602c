/* GPU backend tests, for CUDA (nvcc) and, built with -DCKPT_TEST_HIP by hipcc, for HIP.

   Without a usable device: checks that creating the backend fails with CKPT_ERR_NO_DEVICE and
   logs the runtime's error, then exits 77 (skipped). With one:
   - memory: device and pinned allocations counted in the stats, a failed huge allocation maps to
     CKPT_ERR_OUT_OF_DEVICE_MEMORY and leaves the runtime usable, copies both ways on the copy
     streams ordered by events, memset, free-memory query, elapsed time;
   - RNG kernels: uniform, normal and dropout (mask, in-place) bit-identical to the host functions
     for odd sizes, large counters and 64-bit keys; bad ranges and probabilities rejected;
   - checksum kernel equal to ckpt_checksum for sizes around the chunk and pass boundaries and for
     an unaligned buffer;
   - the executor suite of tests/test_executor.c on the device: random chains of dropout layers,
     every policy (offload included) at random budgets, parameter and input gradients
     bit-identical to store-all, measured peak equal to planned, profiler ranges pushed and
     popped once per operation; then the same with the weights streamed from pinned host memory
     (args->params, host_grads), against streamed store-all;
   - ckpt_chain_measure on the device: timed through the backend's events (two records on the
     compute stream per callback), one sample per F and B op of the plan; then ckpt_chain_trace
     (STEP TIMELINE): every F, B, W on the compute lane in schedule order without overlaps, O and
     P once per op on their copy lanes, start <= end, timed by events; the measured and the traced
     step are ordinary steps: the same gradients as two ckpt_forward/ckpt_backward steps;
   - the gradient-ready hook, the recompute check and early host_grads (stream_grads_early) on
     the device: store-all, optimal and offload, weights kept or streamed; the hook runs once per
     stage per step in backward order, and what it copies on its stream (host_grads when
     streamed) equals the step's final gradients; gradients bit-identical to store-all without
     them; streamed, stream_grads_overwrite over junk host_grads gives the gradients of zeroing
     them before each step, with no host_grads load; a stage whose forward writes a call counter
     into its output, under optimal at its smallest budget, fails the step with
     CKPT_ERR_RECOMPUTE_MISMATCH naming X[i] when the plan runs its F twice, and passes when it
     runs once;
   - graph mode (ckpt_chain_desc.graphs) on a stream of its own: random chains of dropout layers
     under store-all, optimal and offload (copies inside the graphs), 8 steps each against the
     same chain without graphs: gradients and outputs bit-identical after every step (replays
     draw the step's own random numbers), outputs differ from step to step (new masks), one
     capture per sweep, a new plan and a new input pointer captured again once; the legacy
     stream refused. Skipped where the runtime cannot capture (the host emulation). */
#define CKPT_IMPLEMENTATION
#ifdef CKPT_TEST_HIP
#define CKPT_HIP_IMPLEMENTATION
#include "../backends/ckpt_hip.h"
#define GPU(name) ckpt_hip_##name
#define GPU_NAME "hip"
typedef ckpt_hip_desc gpu_desc;
typedef ckpt_hip_stats gpu_stats;
#else
#define CKPT_CUDA_IMPLEMENTATION
#include "../backends/ckpt_cuda.h"
#define GPU(name) ckpt_cuda_##name
#define GPU_NAME "cuda"
typedef ckpt_cuda_desc gpu_desc;
typedef ckpt_cuda_stats gpu_stats;
#endif
#include "../backends/ckpt_cpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#define TEST_XORSHIFT64_SEED 0x9E3779B97F4A7C15ull
#include "test_util.h"

#define CU(call) do { cudaError_t _e = (call); if (_e != cudaSuccess) { printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(_e)); exit(1); } } while (0)

/* The last message logged, for checks of what the backend reports. */
static char last_log[512];
static ckpt_result last_item;
static void capture(const char *tag, ckpt_log_level level, ckpt_result item, const char *msg, const char *file, int line, void *user) {
    (void)tag; (void)level; (void)file; (void)line; (void)user;
    snprintf(last_log, sizeof last_log, "%s", msg);
    last_item = item;
}

/* ---- memory, copies, events -------------------------------------------------------------------- */
static void memory(ckpt_backend *be) {
    gpu_stats st;
    void *d = NULL, *d2 = NULL, *h = NULL, *hb = NULL, *huge = NULL, *e0 = NULL, *e1 = NULL;
    size_t n = 3 << 20, i, fr = 0, tot = 0;
    unsigned char *hp;
    float ms = -1;
    ckpt_result r;
    CHECK(be->alloc(be->state, n, &d) == CKPT_OK && d && ((uintptr_t)d % CKPT_ALIGN) == 0, "device alloc");
    CHECK(be->alloc(be->state, n, &d2) == CKPT_OK && d2, "second device alloc");
    CHECK(be->alloc_pinned(be->state, n, &h) == CKPT_OK && h, "pinned alloc");
    CHECK(be->alloc_pinned(be->state, n, &hb) == CKPT_OK && hb, "second pinned alloc");
    GPU(get_stats)(be, &st);
    CHECK(st.live_bytes == 2 * n && st.pinned_live_bytes == 2 * n && st.allocs == 4, "stats after allocs: live %llu pinned %llu",
          (unsigned long long)st.live_bytes, (unsigned long long)st.pinned_live_bytes);
    last_log[0] = 0;
    r = be->alloc(be->state, (size_t)1 << 50, &huge);
    CHECK(r == CKPT_ERR_OUT_OF_DEVICE_MEMORY && huge == NULL, "1 PiB alloc gave %s", ckpt_result_string(r));
    CHECK(strstr(last_log, "1125899906842624") != NULL, "the failed allocation's log names its size: '%s'", last_log);
    hp = (unsigned char *)h;
    for (i = 0; i < n; i++) hp[i] = (unsigned char)(i * 7 + 1);
    /* host -> d on the h2d stream, then d -> d2 on compute after an event, then d2 -> host on d2h */
    CHECK(be->event_create(be->state, &e0) == CKPT_OK && be->event_create(be->state, &e1) == CKPT_OK, "events");
    void *h2d = be->copy_stream(be->state, CKPT_COPY_HOST_TO_DEVICE), *d2h = be->copy_stream(be->state, CKPT_COPY_DEVICE_TO_HOST);
    CHECK(h2d && d2h && h2d != d2h && h2d != be->compute_stream(be->state), "distinct copy streams");
    CHECK(be->copy_async(be->state, d, h, n, CKPT_COPY_HOST_TO_DEVICE, h2d) == CKPT_OK, "h2d copy");
    CHECK(be->event_record(be->state, e0, h2d) == CKPT_OK, "record on h2d");
    CHECK(be->stream_wait_event(be->state, NULL, e0) == CKPT_OK, "compute waits");
    CHECK(be->event_record(be->state, e0, NULL) == CKPT_OK, "record start on compute");
    CHECK(be->copy_async(be->state, d2, d, n, CKPT_COPY_DEVICE_TO_DEVICE, NULL) == CKPT_OK, "d2d copy");
    CHECK(be->memset_async(be->state, d, 0, n, NULL) == CKPT_OK, "memset");
    CHECK(be->event_record(be->state, e1, NULL) == CKPT_OK, "record end on compute");
    CHECK(be->stream_wait_event(be->state, d2h, e1) == CKPT_OK, "d2h waits");
    memset(hb, 0, n);       /* h may still be in flight to the device: the result goes to hb */
    CHECK(be->copy_async(be->state, hb, d2, n, CKPT_COPY_DEVICE_TO_HOST, d2h) == CKPT_OK, "d2h copy");
    CHECK(be->synchronize(be->state, NULL) == CKPT_OK, "synchronize all");
    for (i = 0; i < n && ((unsigned char *)hb)[i] == (unsigned char)(i * 7 + 1); i++) {}
    CHECK(i == n, "round trip through two device buffers differs at byte %zu", i);
    CHECK(be->event_synchronize(be->state, e1) == CKPT_OK && be->event_elapsed_ms(be->state, e0, e1, &ms) == CKPT_OK && ms >= 0,
          "elapsed %g ms", (double)ms);
    CHECK(be->copy_async(be->state, hb, d, 1000, CKPT_COPY_DEVICE_TO_HOST, NULL) == CKPT_OK &&
          be->synchronize(be->state, be->compute_stream(be->state)) == CKPT_OK && ((unsigned char *)hb)[0] == 0 &&
          ((unsigned char *)hb)[999] == 0, "memset reached the device");
    CHECK(be->copy_async(be->state, h, d, 8, (ckpt_copy_kind)7, NULL) == CKPT_ERR_BAD_ARGUMENT, "unknown copy kind rejected");
    CHECK(be->mem_info(be->state, &fr, &tot) == CKPT_OK && fr <= tot && tot > 0, "mem_info %zu / %zu", fr, tot);
    be->event_destroy(be->state, e0);
    be->event_destroy(be->state, e1);
    last_log[0] = 0;
    be->free_pinned(be->state, d);      /* wrong kind: reported, nothing freed */
    CHECK(strstr(last_log, "did not allocate") != NULL, "freeing device memory as pinned is reported");
    be->free(be->state, d);
    be->free(be->state, d2);
    be->free_pinned(be->state, h);
    be->free_pinned(be->state, hb);
    be->free(be->state, NULL);
    GPU(get_stats)(be, &st);
    CHECK(st.live_bytes == 0 && st.pinned_live_bytes == 0 && st.frees == 4 && st.peak_bytes == 2 * n, "stats after frees");
    GPU(reset_peak)(be);
    GPU(get_stats)(be, &st);
    CHECK(st.peak_bytes == 0, "reset_peak");
}

/* ---- RNG and checksum kernels ------------------------------------------------------------------ */
static void rng(ckpt_backend *be) {
    static const size_t sizes[] = {1, 2, 3, 4, 5, 7, 255, 1024, 1000003};
    size_t si;
    float *dv = NULL, *dv2 = NULL;
    uint8_t *dm = NULL;
    size_t nmax = 1000003;
    std::vector<float> host(nmax), dev(nmax), in(nmax);
    std::vector<uint8_t> hmask(nmax), dmask(nmax);
    CU(cudaMalloc((void **)&dv, nmax * sizeof(float)));
    CU(cudaMalloc((void **)&dv2, nmax * sizeof(float)));
    CU(cudaMalloc((void **)&dm, nmax));
    for (si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si];
        ckpt_philox p;
        int kind;
        p.delta = NULL; p.key = rnd(); p.base = si == 6 ? 0xFFFFFFFFull - 1 : rnd() >> 8; p.count = (n + 3) / 4;   /* n = 255: a carry into word 1 */
        for (kind = 0; kind < 3; kind++) {
            ckpt_result r;
            if (kind == 0) { ckpt_philox_fill_uniform(&p, host.data(), n); r = GPU(philox_uniform)(be, &p, dv, n, NULL); }
            else if (kind == 1) { ckpt_philox_fill_normal(&p, host.data(), n); r = GPU(philox_normal)(be, &p, dv, n, NULL); }
            else {
                size_t i;
                for (i = 0; i < n; i++) in[i] = rnd_float();
                CU(cudaMemcpy(dv, in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
                ckpt_philox_dropout(&p, 0.3f, in.data(), host.data(), hmask.data(), n);
                r = GPU(philox_dropout)(be, &p, 0.3f, dv, dv, dm, n, NULL);      /* in place, with a mask */
                CU(cudaMemcpy(dmask.data(), dm, n, cudaMemcpyDeviceToHost));
                CHECK(memcmp(dmask.data(), hmask.data(), n) == 0, "dropout mask differs (n %zu)", n);
            }
            CHECK(r == CKPT_OK, "kernel %d n %zu: %s", kind, n, ckpt_result_string(r));
            CU(cudaDeviceSynchronize());
            CU(cudaMemcpy(dev.data(), dv, n * sizeof(float), cudaMemcpyDeviceToHost));
            CHECK(memcmp(dev.data(), host.data(), n * sizeof(float)) == 0, "%s kernel differs from the host (n %zu, key %llx)",
                  kind == 0 ? "uniform" : kind == 1 ? "normal" : "dropout", n, (unsigned long long)p.key);
        }
    }
    {   /* edges: p_drop 0 keeps everything unscaled, 1 drops everything; bad arguments */
        ckpt_philox p = {5, 6, 1000, NULL};
        size_t i;
        for (i = 0; i < 4000; i++) in[i] = (float)i;
        CU(cudaMemcpy(dv, in.data(), 4000 * sizeof(float), cudaMemcpyHostToDevice));
        CHECK(GPU(philox_dropout)(be, &p, 0.0f, dv, dv2, NULL, 4000, NULL) == CKPT_OK, "p=0");
        CU(cudaMemcpy(dev.data(), dv2, 4000 * sizeof(float), cudaMemcpyDeviceToHost));
        CHECK(memcmp(dev.data(), in.data(), 4000 * sizeof(float)) == 0, "p=0 changed values");
        CHECK(GPU(philox_dropout)(be, &p, 1.0f, dv, dv2, NULL, 4000, NULL) == CKPT_OK, "p=1");
        CU(cudaMemcpy(dev.data(), dv2, 4000 * sizeof(float), cudaMemcpyDeviceToHost));
        for (i = 0; i < 4000 && dev[i] == 0.0f; i++) {}
        CHECK(i == 4000, "p=1 kept element %zu", i);
        CHECK(GPU(philox_dropout)(be, &p, 1.5f, dv, dv2, NULL, 4000, NULL) == CKPT_ERR_BAD_ARGUMENT, "p=1.5 rejected");
        CHECK(GPU(philox_dropout)(be, &p, NAN, dv, dv2, NULL, 4000, NULL) == CKPT_ERR_BAD_ARGUMENT, "p=NaN rejected");
        CHECK(GPU(philox_uniform)(be, &p, dv, 4001, NULL) == CKPT_ERR_BAD_ARGUMENT, "a range too short is rejected");
        CHECK(GPU(philox_uniform)(be, &p, dv, 0, NULL) == CKPT_OK, "n = 0 is a no-op");
        CHECK(GPU(philox_normal)(be, NULL, dv, 4, NULL) == CKPT_ERR_NULL_ARGUMENT, "NULL range");
        CHECK(GPU(philox_uniform)(be, &p, NULL, 4, NULL) == CKPT_ERR_NULL_ARGUMENT, "NULL output");
    }
    CU(cudaFree(dv)); CU(cudaFree(dv2)); CU(cudaFree(dm));
}

static void checksum(ckpt_backend *be) {
    /* 256 MiB + 4097 bytes crosses one kernel pass (65536 chunks of 4096 bytes) */
    const size_t big = ((size_t)65536 * CKPT_CHECKSUM_CHUNK) + 4097;
    static const size_t sizes[] = {0, 1, 15, 16, 17, 4095, 4096, 4097, 3 * 4096 + 100};
    std::vector<unsigned char> h(big + 16);
    unsigned char *d = NULL;
    size_t i, si;
    uint64_t got = 0, via_vtable = 0;
    for (i = 0; i < h.size(); i++) h[i] = (unsigned char)(rnd() >> 24);
    CU(cudaMalloc((void **)&d, big + 16));
    CU(cudaMemcpy(d, h.data(), big + 16, cudaMemcpyHostToDevice));
    for (si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int off;
        for (off = 0; off < 2; off++) {   /* aligned, and 3 bytes in (byte loads) */
            size_t o = off ? 3 : 0;
            CHECK(GPU(checksum)(be, d + o, sizes[si], &got) == CKPT_OK && got == ckpt_checksum(h.data() + o, sizes[si]),
                  "checksum of %zu bytes at offset %zu", sizes[si], o);
        }
    }
    CHECK(GPU(checksum)(be, d, big, &got) == CKPT_OK && got == ckpt_checksum(h.data(), big), "checksum across two passes");
    CHECK(be->checksum(be->state, d + 1, big, &via_vtable) == CKPT_OK && via_vtable == ckpt_checksum(h.data() + 1, big),
          "vtable checksum, unaligned, two passes");
    CU(cudaFree(d));
}

/* ---- the executor on the device ----------------------------------------------------------------
   One stage: y = dropout(tanh(x W^T + b)) on ROWS rows, as in tests/test_executor.c. Every
   reduction runs in a fixed order (one thread per output, a loop over the inputs). */
#define ROWS 5
#define MAXN 9
#define MAXW 40

typedef struct layer {
    int win, wout;
    float p_drop;
    float *W, *b, *dW, *db;     /* device */
    float *hp, *hg;             /* pinned host: W then b, and their gradients (streaming) */
    int streamed;               /* the weights come through args->params */
    int drift;                  /* the forward writes a call counter into its output's first byte */
    unsigned calls;
} layer;

static const ckpt_backend *g_be;

__global__ void k_linear_tanh(const float *x, const float *W, const float *b, float *h, float *y, int win, int wout) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x, r = idx / wout, o = idx % wout, i;
    float s;
    if (idx >= ROWS * wout) return;
    s = b[o];
    for (i = 0; i < win; i++) s += x[r * win + i] * W[o * win + i];
    h[idx] = s;
    y[idx] = tanhf(s);
}
__global__ void k_dh(const float *h, const uint8_t *mask, const float *g, float scale, float *dh, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float t;
    if (i >= n) return;
    t = tanhf(h[i]);
    dh[i] = mask[i] ? g[i] * scale * (1.0f - t * t) : 0.0f;
}
__global__ void k_param_grads(const float *dh, const float *x, float *dW, float *db, int win, int wout) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x, o, i, r;
    if (idx >= wout * (win + 1)) return;
    o = idx / (win + 1); i = idx % (win + 1);
    if (i == win) { float s = db[o]; for (r = 0; r < ROWS; r++) s += dh[r * wout + o]; db[o] = s; return; }
    {
        float s = dW[o * win + i];
        for (r = 0; r < ROWS; r++) s += dh[r * wout + o] * x[r * win + i];
        dW[o * win + i] = s;
    }
}
__global__ void k_input_grad(const float *dh, const float *W, float *gx, int win, int wout) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x, r = idx / win, i = idx % win, o;
    float s = 0;
    if (idx >= ROWS * win) return;
    for (o = 0; o < wout; o++) s += dh[r * wout + o] * W[o * win + i];
    gx[idx] = s;
}

static void tape_layout(const layer *L, ckpt_layout_entry e[2], size_t *total) {
    e[0].bytes = sizeof(float) * ROWS * (size_t)L->wout; e[0].align = 16;
    e[1].bytes = (size_t)ROWS * (size_t)L->wout; e[1].align = 16;
    ckpt_layout_compute(e, 2, total);
}

static ckpt_result launch_ok(void) { return cudaGetLastError() == cudaSuccess ? CKPT_OK : CKPT_ERR_BACKEND; }

static ckpt_result layer_fwd(const ckpt_fwd_args *a) {
    layer *L = (layer *)a->ctx->user;
    cudaStream_t s = (cudaStream_t)a->ctx->stream;
    ckpt_layout_entry e[2];
    size_t total;
    ckpt_philox ph;
    int n = ROWS * L->wout;
    ckpt_result r;
    float *h;
    tape_layout(L, e, &total);
    h = (float *)ckpt_layout_ptr(a->tape, e, 0);
    /* the whole tape, padding included, is written (the recompute check sums all of it) */
    if (cudaMemsetAsync(a->tape, 0, total, s) != cudaSuccess) return CKPT_ERR_BACKEND;
    if ((r = ckpt_ctx_rng(a->ctx, (uint64_t)(n + 3) / 4, &ph)) != CKPT_OK) return r;
    {
        const float *W = L->streamed ? (const float *)a->params : L->W;
        const float *b = L->streamed ? (const float *)a->params + L->win * L->wout : L->b;
        if (L->streamed != (a->params != NULL)) return CKPT_ERR_CALLBACK;
        k_linear_tanh<<<(n + 127) / 128, 128, 0, s>>>((const float *)a->in, W, b, h, (float *)a->out, L->win, L->wout);
    }
    if ((r = launch_ok()) != CKPT_OK) return r;
    r = GPU(philox_dropout)(g_be, &ph, L->p_drop, (const float *)a->out, (float *)a->out,
                            (uint8_t *)ckpt_layout_ptr(a->tape, e, 1), (size_t)n, a->ctx->stream);
    if (r == CKPT_OK && L->drift && cudaMemsetAsync(a->out, (int)(1 + L->calls++ % 200), 1, s) != cudaSuccess)
        r = CKPT_ERR_BACKEND;
    return r;
}

static ckpt_result layer_bwd(const ckpt_bwd_args *a) {
    layer *L = (layer *)a->ctx->user;
    cudaStream_t s = (cudaStream_t)a->ctx->stream;
    ckpt_layout_entry e[2];
    size_t total;
    float *dh = (float *)a->workspace;
    int n = ROWS * L->wout, np = L->wout * (L->win + 1);
    tape_layout(L, e, &total);
    k_dh<<<(n + 127) / 128, 128, 0, s>>>((const float *)ckpt_layout_ptr(a->tape, e, 0),
                                         (const uint8_t *)ckpt_layout_ptr(a->tape, e, 1), (const float *)a->grad_out,
                                         ckpt_dropout_scale(L->p_drop), dh, n);
    if (L->streamed && (!a->params || !a->param_grads)) return CKPT_ERR_CALLBACK;
    {
        float *dW = L->streamed ? (float *)a->param_grads : L->dW;
        float *db = L->streamed ? (float *)a->param_grads + L->win * L->wout : L->db;
        const float *W = L->streamed ? (const float *)a->params : L->W;
        k_param_grads<<<(np + 127) / 128, 128, 0, s>>>(dh, (const float *)a->in, dW, db, L->win, L->wout);
        if (a->grad_in)
            k_input_grad<<<(ROWS * L->win + 127) / 128, 128, 0, s>>>(dh, W, (float *)a->grad_in, L->win, L->wout);
    }
    return launch_ok();
}

typedef struct chain_case {
    int n;
    layer layers[MAXN];
    ckpt_stage_desc st[MAXN];
    float *x, *gy, *gx;         /* device */
} chain_case;

static void upload_random(float *d, size_t n, float scale) {
    std::vector<float> h(n);
    size_t i;
    for (i = 0; i < n; i++) h[i] = rnd_float() * scale;
    CU(cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
}

/* Stage i streams its weights from pinned host memory (hp, hg), or keeps them on the device. */
static void set_streamed(chain_case *c, int i, int streamed) {
    layer *L = &c->layers[i];
    L->streamed = streamed;
    c->st[i].host_params = streamed ? L->hp : NULL;
    c->st[i].param_bytes = streamed ? sizeof(float) * (L->win + 1) * L->wout : 0;
    c->st[i].host_grads = streamed ? L->hg : NULL;
}

/* Zero gradients, on the device and in host_grads, with the weights kept or streamed. */
static void reset_layers(chain_case *c, int streamed) {
    int i;
    for (i = 0; i < c->n; i++) {
        layer *L = &c->layers[i];
        CU(cudaMemset(L->dW, 0, sizeof(float) * L->win * L->wout));
        CU(cudaMemset(L->db, 0, sizeof(float) * L->wout));
        memset(L->hg, 0, sizeof(float) * (L->win + 1) * L->wout);
        set_streamed(c, i, streamed);
    }
}

static void make_case(chain_case *c) {
    int i, w[MAXN + 1];
    memset(c, 0, sizeof *c);
    c->n = rnd_int(1, MAXN);
    for (i = 0; i <= c->n; i++) w[i] = rnd_int(1, MAXW);
    for (i = 0; i < c->n; i++) {
        layer *L = &c->layers[i];
        ckpt_layout_entry e[2];
        size_t tape = 0;
        L->win = w[i]; L->wout = w[i + 1];
        L->p_drop = (rnd() % 3) ? 0.25f : 0.0f;
        CU(cudaMalloc((void **)&L->W, sizeof(float) * L->win * L->wout));
        CU(cudaMalloc((void **)&L->b, sizeof(float) * L->wout));
        CU(cudaMalloc((void **)&L->dW, sizeof(float) * L->win * L->wout));
        CU(cudaMalloc((void **)&L->db, sizeof(float) * L->wout));
        upload_random(L->W, (size_t)L->win * L->wout, 1.0f);
        upload_random(L->b, (size_t)L->wout, 0.1f);
        CU(cudaHostAlloc((void **)&L->hp, sizeof(float) * (L->win + 1) * L->wout, cudaHostAllocDefault));
        CU(cudaHostAlloc((void **)&L->hg, sizeof(float) * (L->win + 1) * L->wout, cudaHostAllocDefault));
        CU(cudaMemcpy(L->hp, L->W, sizeof(float) * L->win * L->wout, cudaMemcpyDeviceToHost));
        CU(cudaMemcpy(L->hp + L->win * L->wout, L->b, sizeof(float) * L->wout, cudaMemcpyDeviceToHost));
        tape_layout(L, e, &tape);
        c->st[i].forward = layer_fwd; c->st[i].backward = layer_bwd; c->st[i].user = L;
        c->st[i].out_bytes = sizeof(float) * ROWS * (size_t)L->wout;
        c->st[i].tape_bytes = tape;
        c->st[i].fwd_workspace_bytes = (size_t)rnd_int(0, 3) * 64;
        c->st[i].bwd_workspace_bytes = sizeof(float) * ROWS * (size_t)L->wout + (size_t)rnd_int(0, 3) * 64;
        c->st[i].fwd_time = rnd_int(1, 4);
        c->st[i].bwd_time = rnd_int(1, 8) * 0.5;
        c->st[i].flags = (rnd() % 6 == 0) ? CKPT_STAGE_NO_CHECKPOINT : 0;
    }
    CU(cudaMalloc((void **)&c->x, sizeof(float) * ROWS * w[0]));
    CU(cudaMalloc((void **)&c->gx, sizeof(float) * ROWS * w[0]));
    CU(cudaMalloc((void **)&c->gy, sizeof(float) * ROWS * w[c->n]));
    upload_random(c->x, (size_t)ROWS * w[0], 1.0f);
    upload_random(c->gy, (size_t)ROWS * w[c->n], 1.0f);
}

static void free_case(chain_case *c) {
    int i;
    for (i = 0; i < c->n; i++) {
        CU(cudaFree(c->layers[i].W)); CU(cudaFree(c->layers[i].b));
        CU(cudaFree(c->layers[i].dW)); CU(cudaFree(c->layers[i].db));
        CU(cudaFreeHost(c->layers[i].hp)); CU(cudaFreeHost(c->layers[i].hg));
    }
    CU(cudaFree(c->x)); CU(cudaFree(c->gx)); CU(cudaFree(c->gy));
}

/* Every gradient of the chain, on the host, in one vector. */
static std::vector<float> gather(const chain_case *c) {
    std::vector<float> g;
    int i;
    for (i = 0; i < c->n; i++) {
        const layer *L = &c->layers[i];
        size_t nw = (size_t)L->win * L->wout, off = g.size();
        g.resize(off + nw + L->wout);
        if (L->streamed) {      /* host_grads: complete when ckpt_backward returned */
            memcpy(&g[off], L->hg, (nw + L->wout) * sizeof(float));
            continue;
        }
        CU(cudaMemcpy(&g[off], L->dW, nw * sizeof(float), cudaMemcpyDeviceToHost));
        CU(cudaMemcpy(&g[off + nw], L->db, L->wout * sizeof(float), cudaMemcpyDeviceToHost));
    }
    {
        size_t off = g.size(), nx = (size_t)ROWS * c->layers[0].win;
        g.resize(off + nx);
        CU(cudaMemcpy(&g[off], c->gx, nx * sizeof(float), cudaMemcpyDeviceToHost));
    }
    return g;
}

/* Profiler ranges: the executor must push and pop once per scheduled operation. */
static int pushes, pops, depth_bad;
static int records;                 /* event records on the compute stream */
static ckpt_result (*real_record)(void *state, void *event, void *stream);
static ckpt_result count_record(void *state, void *event, void *stream) {
    records += stream == NULL;
    return real_record(state, event, stream);
}
static void count_push(void *state, const char *label) { (void)state; if (pushes - pops != 0 || !label || !label[0]) depth_bad++; pushes++; }
static void count_pop(void *state) { (void)state; pops++; if (pops > pushes) depth_bad++; }

/* A trace of one step of the plan ops (one lane) against the schedule. */
static void check_trace(const ckpt_trace *t, const ckpt_op *ops, int n_ops) {
    int want[8] = {0}, got[8] = {0}, i, k = 0, order = 0, lane = 0, time = 0, overlap = 0;
    double end = -1.0;
    for (i = 0; i < n_ops; i++) want[ops[i].kind]++;
    for (i = 0; i < t->n_events; i++) {
        const ckpt_trace_event *e = &t->events[i];
        ckpt_trace_lane l = e->kind == CKPT_TRACE_O || e->kind == CKPT_TRACE_GRAD_STORE ? CKPT_TRACE_D2H
                          : e->kind == CKPT_TRACE_P || e->kind == CKPT_TRACE_PARAM_LOAD || e->kind == CKPT_TRACE_GRAD_LOAD
                          ? CKPT_TRACE_H2D : CKPT_TRACE_COMPUTE;
        if ((unsigned)e->kind < 8) got[e->kind]++;
        lane += e->lane != l;
        time += !(e->end_ms >= e->start_ms && e->start_ms > -1.0);
        if (e->lane != CKPT_TRACE_COMPUTE) continue;
        while (k < n_ops && (ops[k].kind == CKPT_OP_O || ops[k].kind == CKPT_OP_P)) k++;
        order += k >= n_ops || e->op != k || (int)ops[k].kind != (int)e->kind || ops[k].stage - 1 != e->stage;
        k++;
        overlap += e->start_ms < end;
        end = e->end_ms;
    }
    for (i = 0; i < 5; i++) CHECK(got[i] == want[i], "trace: %d events of kind %d, the schedule has %d", got[i], i, want[i]);
    CHECK(t->events_clock == 1 && lane == 0 && time == 0 && order == 0 && overlap == 0,
          "trace: events clock %d, %d on the wrong lane, %d with bad times, %d out of order, %d overlapping",
          t->events_clock, lane, time, order, overlap);
}

/* Plans c at pd and runs two steps: ckpt_forward and ckpt_backward, or with `measure`
   ckpt_chain_measure (whose samples and event records are checked) and ckpt_chain_trace. */
static ckpt_result run(chain_case *c, const ckpt_plan_desc *pd, std::vector<float> *g, ckpt_plan_info *info,
                       ckpt_chain_stats *stats, const ckpt_backend *be, int streamed, int measure = 0) {
    ckpt_chain_desc cd;
    ckpt_chain *ch = NULL;
    ckpt_backend counted = *be;
    ckpt_result r;
    int i, step;
    counted.range_push = count_push;
    counted.range_pop = count_pop;
    real_record = be->event_record;
    if (be->event_record) counted.event_record = count_record;
    pushes = pops = depth_bad = 0;
    memset(&cd, 0, sizeof cd);
    cd.stages = c->st; cd.n_stages = c->n; cd.backend = &counted; cd.seed = 0x1234567890abcdefull; cd.rng_offset = 77;
    cd.input_bytes = sizeof(float) * ROWS * (size_t)c->layers[0].win;
    reset_layers(c, streamed);
    r = ckpt_chain_create(&cd, &ch);
    CHECK(r == CKPT_OK, "chain_create: %s", ckpt_result_string(r));
    if (r != CKPT_OK) return r;
    r = ckpt_chain_plan(ch, pd, info);
    if (r == CKPT_OK && measure) {
        std::vector<ckpt_stage_time> t((size_t)c->n);
        std::vector<int> f((size_t)c->n, 0);
        int n_ops, k, callbacks = 0;
        const ckpt_op *ops = ckpt_plan_ops(ckpt_chain_get_plan(ch), &n_ops);
        ckpt_result rm;
        for (k = 0; k < n_ops; k++) {
            if (ops[k].kind == CKPT_OP_F) f[ops[k].stage - 1]++;
            callbacks += ops[k].kind == CKPT_OP_F || ops[k].kind == CKPT_OP_B;
        }
        records = 0;
        rm = ckpt_chain_measure(ch, c->x, c->gy, c->gx, 1, t.data());
        CHECK(rm == CKPT_OK, "measure: %s", ckpt_result_string(rm));
        CHECK(streamed || info->n_offloaded ? records >= 2 * callbacks : records == 2 * callbacks,
              "%d event records on the compute stream for a step of %d callbacks", records, callbacks);
        for (i = 0; i < c->n && rm == CKPT_OK; i++)
            CHECK(t[i].fwd_count == f[i] && t[i].bwd_count == 1 && t[i].fwd_time >= 0 && t[i].bwd_time >= 0 &&
                  t[i].fwd_time < 1e4 && t[i].bwd_time < 1e4, "stage %d: fwd %g ms (%d samples, %d F ops), bwd %g ms (%d)",
                  i, t[i].fwd_time, t[i].fwd_count, f[i], t[i].bwd_time, t[i].bwd_count);
        {
            ckpt_trace tr;
            ckpt_result rt = ckpt_chain_trace(ch, c->x, c->gy, c->gx, &tr);
            CHECK(rt == CKPT_OK, "trace: %s", ckpt_result_string(rt));
            if (rt == CKPT_OK) check_trace(&tr, ops, n_ops);
            ckpt_trace_free(&tr);
        }
        *g = gather(c);
        ckpt_chain_get_stats(ch, stats);
    } else if (r == CKPT_OK) {
        for (step = 0; step < 2; step++) {
            const void *out = NULL;
            ckpt_result rf = ckpt_forward(ch, c->x, &out), rb;
            CHECK(rf == CKPT_OK && out != NULL, "forward: %s", ckpt_result_string(rf));
            rb = ckpt_backward(ch, c->gy, c->gx);
            CHECK(rb == CKPT_OK, "backward: %s", ckpt_result_string(rb));
        }
        *g = gather(c);
        ckpt_chain_get_stats(ch, stats);
        CHECK(pushes == 2 * info->n_ops && pops == pushes && depth_bad == 0, "ranges: %d pushes, %d pops for %d ops x 2 steps",
              pushes, pops, info->n_ops);
    }
    ckpt_chain_destroy(ch);
    return r;
}

static void executor(const ckpt_backend *be) {
    const ckpt_policy policies[] = {CKPT_POLICY_OPTIMAL, CKPT_POLICY_STORE_ALL, CKPT_POLICY_EVERY_K,
                                    CKPT_POLICY_EVERY_K, CKPT_POLICY_SQRT, CKPT_POLICY_GREEDY, CKPT_POLICY_OFFLOAD};
    int ci, cases = 0, plans = 0, infeasible = 0, offloaded = 0, streamed, measured = 0;
    gpu_stats bs;
    g_be = be;
    for (ci = 0; ci < 40; ci++) {
        chain_case c;
        std::vector<float> ref, got;
        ckpt_plan_desc pd;
        ckpt_plan_info ref_info = {}, info = {};
        ckpt_chain_stats ref_stats = {}, stats = {};
        int bi, pi;
        make_case(&c);
        for (streamed = 0; streamed < 2; streamed++) {   /* weights kept by the layers, then streamed */
        memset(&pd, 0, sizeof pd);
        pd.policy = CKPT_POLICY_STORE_ALL;
        if (run(&c, &pd, &ref, &ref_info, &ref_stats, be, streamed) != CKPT_OK) continue;
        cases++;
        for (bi = 0; bi < 4; bi++) {
            uint64_t lo = ref_info.store_all_peak / 3, budget = lo + rnd() % (ref_info.store_all_peak - lo + 1);
            for (pi = 0; pi < (int)(sizeof policies / sizeof policies[0]); pi++) {
                ckpt_result r;
                memset(&pd, 0, sizeof pd);
                pd.policy = policies[pi];
                pd.budget = budget;
                pd.k = pi == 3 ? rnd_int(1, c.n) : 0;
                pd.bandwidth = (double)(64u << rnd_int(0, 8));   /* bytes per unit of the stage times */
                r = run(&c, &pd, &got, &info, &stats, be, streamed);
                if (r == CKPT_ERR_INFEASIBLE) { infeasible++; continue; }
                CHECK(r == CKPT_OK, "plan %s: %s", ckpt_policy_name(pd.policy), ckpt_result_string(r));
                if (r != CKPT_OK) continue;
                plans++;
                CHECK(got.size() == ref.size() && memcmp(got.data(), ref.data(), ref.size() * sizeof(float)) == 0,
                      "case %d policy %s budget %llu: gradients differ from store-all", ci, ckpt_policy_name(pd.policy),
                      (unsigned long long)budget);
                CHECK(stats.arena_high_water > 0 && stats.arena_high_water <= stats.arena_bytes &&
                      stats.arena_bytes == info.arena && info.peak <= info.arena && info.arena <= budget,
                      "high water %llu, arena %llu (planned %llu), peak %llu, budget %llu",
                      (unsigned long long)stats.arena_high_water, (unsigned long long)stats.arena_bytes,
                      (unsigned long long)info.arena, (unsigned long long)info.peak, (unsigned long long)budget);
                offloaded += info.n_offloaded > 0;
            }
        }
        }
        free_case(&c);
    }
    for (ci = 0; ci < 6; ci++) {    /* ckpt_chain_measure: store-all, optimal and offload at 1/2 */
        chain_case c;
        std::vector<float> ref, got;
        ckpt_plan_desc pd;
        ckpt_plan_info ref_info = {}, info = {};
        ckpt_chain_stats ref_stats = {}, stats = {};
        int pi;
        make_case(&c);
        streamed = ci % 2;
        memset(&pd, 0, sizeof pd);
        pd.policy = CKPT_POLICY_STORE_ALL;
        if (run(&c, &pd, &ref, &ref_info, &ref_stats, be, streamed) == CKPT_OK) {
            for (pi = 0; pi < 3; pi++) {
                ckpt_result r;
                memset(&pd, 0, sizeof pd);
                pd.policy = pi == 0 ? CKPT_POLICY_STORE_ALL : pi == 1 ? CKPT_POLICY_OPTIMAL : CKPT_POLICY_OFFLOAD;
                pd.budget = pi ? ref_info.store_all_peak / 2 : 0;
                pd.bandwidth = 256;
                r = run(&c, &pd, &got, &info, &stats, be, streamed, 1);
                if (r == CKPT_ERR_INFEASIBLE) continue;
                CHECK(r == CKPT_OK, "measure, plan %s: %s", ckpt_policy_name(pd.policy), ckpt_result_string(r));
                measured += r == CKPT_OK;
                CHECK(r != CKPT_OK || (got.size() == ref.size() && memcmp(got.data(), ref.data(), ref.size() * sizeof(float)) == 0),
                      "measure case %d policy %s: gradients differ from two ordinary store-all steps", ci,
                      ckpt_policy_name(pd.policy));
            }
        }
        free_case(&c);
    }
    GPU(get_stats)(be, &bs);
    CHECK(bs.live_bytes == 0, "the chains left %llu bytes allocated", (unsigned long long)bs.live_bytes);
    printf("executor on the device: %d chain runs (weights kept, then streamed), %d plans run (%d offloading), "
           "%d infeasible budgets\n", cases, plans, offloaded, infeasible);
    CHECK(offloaded > 0, "no offload plan offloaded anything");
    printf("ckpt_chain_measure on the device: %d plans measured\n", measured);
    CHECK(measured >= 6, "only %d plans measured", measured);
}

/* ---- graph mode ---------------------------------------------------------------------------------
   One run of `graph_steps` steps: steps 4-5 after planning again (same desc), steps 6-7 with the
   input at another address (same values). Per step: the gradients so far and the output; the
   stats after steps 3, 5 and 7. */
enum { graph_steps = 8 };
static ckpt_result graph_run(chain_case *c, const ckpt_plan_desc *pd, const ckpt_backend *be, int graphs, float *x2,
                             std::vector<std::vector<float> > *grads, std::vector<std::vector<float> > *outs,
                             ckpt_chain_stats st[3], ckpt_plan_info *info) {
    ckpt_chain_desc cd;
    ckpt_chain *ch = NULL;
    ckpt_result r;
    int step;
    size_t ny = (size_t)ROWS * c->layers[c->n - 1].wout;
    memset(&cd, 0, sizeof cd);
    cd.stages = c->st; cd.n_stages = c->n; cd.backend = be; cd.seed = 0x5eedull; cd.rng_offset = 3;
    cd.input_bytes = sizeof(float) * ROWS * (size_t)c->layers[0].win;
    cd.graphs = graphs;
    cd.logger.fn = ckpt_log_stderr;
    reset_layers(c, 0);
    grads->clear(); outs->clear();
    if ((r = ckpt_chain_create(&cd, &ch)) != CKPT_OK) return r;
    r = ckpt_chain_plan(ch, pd, info);
    for (step = 0; step < graph_steps && r == CKPT_OK; step++) {
        const void *out = NULL;
        if (step == 4) r = ckpt_chain_plan(ch, pd, info);
        if (r == CKPT_OK) r = ckpt_forward(ch, step >= 6 ? x2 : c->x, &out);
        if (r == CKPT_OK) {
            std::vector<float> y(ny);
            CU(cudaStreamSynchronize((cudaStream_t)be->compute_stream(be->state)));
            CU(cudaMemcpy(y.data(), out, ny * sizeof(float), cudaMemcpyDeviceToHost));
            outs->push_back(y);
            r = ckpt_backward(ch, c->gy, c->gx);
        }
        if (r == CKPT_OK) grads->push_back(gather(c));
        if (r == CKPT_OK && (step == 3 || step == 5 || step == 7)) ckpt_chain_get_stats(ch, &st[(step - 3) / 2]);
    }
    ckpt_chain_destroy(ch);
    return r;
}

static void graphs(void) {
    const ckpt_policy policies[] = {CKPT_POLICY_STORE_ALL, CKPT_POLICY_OPTIMAL, CKPT_POLICY_OFFLOAD};
    cudaStream_t gs;
    ckpt_backend gb, legacy;
    gpu_desc d;
    cudaError_t e;
    int ci, runs = 0, offloaded = 0, recomputed = 0;
    e = cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking);
    CHECK(e == cudaSuccess, "stream: %s", cudaGetErrorString(e));
    {   /* can this runtime capture at all? (the host emulation cannot) */
        cudaGraph_t g = NULL;
        e = cudaStreamBeginCapture(gs, cudaStreamCaptureModeRelaxed);
        if (e == cudaSuccess) e = cudaStreamEndCapture(gs, &g);
        if (g) (void)cudaGraphDestroy(g);
        (void)cudaGetLastError();
    }
    memset(&d, 0, sizeof d);
    d.logger.fn = capture;
    d.stream = (void *)gs;
    CHECK(GPU(backend_create)(&d, &gb) == CKPT_OK, "graph backend");
    if (e != cudaSuccess) {     /* a chain in graph mode fails its steps with the backend's error, cleanly */
        chain_case c;
        ckpt_chain_desc cd;
        ckpt_chain *ch = NULL;
        ckpt_result r;
        g_be = &gb;
        make_case(&c);
        memset(&cd, 0, sizeof cd);
        cd.stages = c.st; cd.n_stages = c.n; cd.backend = &gb; cd.graphs = 1;
        for (int i = 0; i < c.n; i++) set_streamed(&c, i, 0);
        r = ckpt_chain_create(&cd, &ch);
        if (r == CKPT_OK) r = ckpt_chain_plan(ch, NULL, NULL);
        CHECK(r == CKPT_OK, "graph chain: %s", ckpt_result_string(r));
        if (r == CKPT_OK) {
            r = ckpt_forward(ch, c.x, NULL);
            CHECK(r == CKPT_ERR_BACKEND && strstr(last_log, "Capture"), "no capture here: %s (%s)", ckpt_result_string(r), last_log);
            CHECK(ckpt_forward(ch, c.x, NULL) == CKPT_ERR_BACKEND, "again: the step fails the same way");
        }
        ckpt_chain_destroy(ch);
        free_case(&c);
        GPU(backend_destroy)(&gb);
        printf("graphs: skipped: this runtime cannot capture a stream (%s); a chain in graph mode fails its steps "
               "with CKPT_ERR_BACKEND\n", cudaGetErrorName(e));
        (void)cudaStreamDestroy(gs);
        return;
    }
    CHECK(gb.graph_begin && gb.graph_end && gb.graph_launch && gb.graph_destroy, "the backend has every graph entry");
    g_be = &gb;
    for (ci = 0; ci < 8; ci++) {
        chain_case c;
        float *x2;
        size_t nx;
        int pi;
        make_case(&c);
        c.layers[c.n - 1].p_drop = 0.25f;     /* the output shows each step's mask */
        nx = (size_t)ROWS * c.layers[0].win;
        CU(cudaMalloc((void **)&x2, nx * sizeof(float)));
        CU(cudaMemcpy(x2, c.x, nx * sizeof(float), cudaMemcpyDeviceToDevice));
        for (pi = 0; pi < 3; pi++) {
            std::vector<std::vector<float> > g0, y0, g1, y1;
            ckpt_chain_stats s0[3], s1[3];
            ckpt_plan_info info0, info1;
            ckpt_plan_desc pd;
            ckpt_result r0, r1;
            int step, changes = 0;
            memset(&pd, 0, sizeof pd);
            memset(s1, 0, sizeof s1);
            pd.policy = policies[pi];
            if (pi) {   /* half of store-all's peak */
                ckpt_plan_desc sa;
                ckpt_plan_info si;
                ckpt_chain_desc cd;
                ckpt_chain *ch = NULL;
                memset(&sa, 0, sizeof sa); memset(&cd, 0, sizeof cd);
                cd.stages = c.st; cd.n_stages = c.n; cd.backend = &gb;
                if (ckpt_chain_create(&cd, &ch) != CKPT_OK) continue;
                sa.policy = CKPT_POLICY_STORE_ALL;
                if (ckpt_chain_plan_dry(ch, &sa, &si) == CKPT_OK) pd.budget = si.store_all_peak / 2;
                ckpt_chain_destroy(ch);
                pd.bandwidth = 256;
            }
            r0 = graph_run(&c, &pd, &gb, 0, x2, &g0, &y0, s0, &info0);
            if (r0 == CKPT_ERR_INFEASIBLE) continue;
            CHECK(r0 == CKPT_OK, "case %d %s without graphs: %s", ci, ckpt_policy_name(pd.policy), ckpt_result_string(r0));
            r1 = graph_run(&c, &pd, &gb, 1, x2, &g1, &y1, s1, &info1);
            CHECK(r1 == CKPT_OK, "case %d %s with graphs: %s (%s)", ci, ckpt_policy_name(pd.policy), ckpt_result_string(r1), last_log);
            if (r0 != CKPT_OK || r1 != CKPT_OK) continue;
            runs++;
            offloaded += info1.n_offloaded > 0;
            recomputed += info1.n_recomputed > 0;
            CHECK(g0.size() == graph_steps && g1.size() == graph_steps && y0.size() == graph_steps && y1.size() == graph_steps,
                  "steps run");
            for (step = 0; step < graph_steps && step < (int)g1.size() && step < (int)g0.size(); step++) {
                CHECK(g0[step] == g1[step], "case %d %s step %d: gradients with graphs differ from without", ci,
                      ckpt_policy_name(pd.policy), step);
                CHECK(y0[step] == y1[step], "case %d %s step %d: outputs with graphs differ from without", ci,
                      ckpt_policy_name(pd.policy), step);
                changes += step && y1[step] != y1[step - 1];
            }
            /* new masks every step (at least 5 outputs; the cases and seeds are fixed, so this is deterministic) */
            CHECK(changes >= 4, "case %d %s: the output changed in %d steps of %d (the same dropout masks?)", ci,
                  ckpt_policy_name(pd.policy), changes, graph_steps - 1);
            CHECK(s1[0].graph_captures == 2 && s1[0].graph_replays == 6, "4 steps: %llu captures, %llu replays (2, 6)",
                  (unsigned long long)s1[0].graph_captures, (unsigned long long)s1[0].graph_replays);
            CHECK(s1[1].graph_captures == 4 && s1[1].graph_replays == 8, "a new plan: %llu captures, %llu replays (4, 8)",
                  (unsigned long long)s1[1].graph_captures, (unsigned long long)s1[1].graph_replays);
            CHECK(s1[2].graph_captures == 6 && s1[2].graph_replays == 10, "a new input: %llu captures, %llu replays (6, 10)",
                  (unsigned long long)s1[2].graph_captures, (unsigned long long)s1[2].graph_replays);
            CHECK(s0[2].graph_captures == 0 && s0[2].graph_replays == 0, "no graphs, no captures");
            CHECK(s1[2].ops_run == s0[2].ops_run && s1[2].copies == s0[2].copies && s1[2].steps == s0[2].steps,
                  "stats: ops %llu/%llu, copies %llu/%llu", (unsigned long long)s1[2].ops_run,
                  (unsigned long long)s0[2].ops_run, (unsigned long long)s1[2].copies, (unsigned long long)s0[2].copies);
        }
        CU(cudaFree(x2));
        free_case(&c);
    }
    {   /* the legacy stream cannot be captured: the step fails, nothing is left half done */
        chain_case c;
        ckpt_chain_desc cd;
        ckpt_chain *ch = NULL;
        ckpt_result r;
        memset(&d, 0, sizeof d);
        d.logger.fn = capture;
        CHECK(GPU(backend_create)(&d, &legacy) == CKPT_OK, "legacy-stream backend");
        g_be = &legacy;
        make_case(&c);
        memset(&cd, 0, sizeof cd);
        cd.stages = c.st; cd.n_stages = c.n; cd.backend = &legacy; cd.graphs = 1;
        for (int i = 0; i < c.n; i++) set_streamed(&c, i, 0);
        r = ckpt_chain_create(&cd, &ch);
        CHECK(r == CKPT_OK, "create: %s", ckpt_result_string(r));
        if (r == CKPT_OK) r = ckpt_chain_plan(ch, NULL, NULL);
        if (r == CKPT_OK) {
            r = ckpt_forward(ch, c.x, NULL);
            CHECK(r == CKPT_ERR_BAD_ARGUMENT && strstr(last_log, "legacy"), "legacy stream: %s (%s)", ckpt_result_string(r), last_log);
            r = ckpt_forward(ch, c.x, NULL);
            CHECK(r == CKPT_ERR_BAD_ARGUMENT, "again: %s", ckpt_result_string(r));
        }
        ckpt_chain_destroy(ch);
        free_case(&c);
        GPU(backend_destroy)(&legacy);
    }
    GPU(backend_destroy)(&gb);
    CU(cudaStreamDestroy(gs));
    printf("graphs: %d chain runs of %d steps with graphs bit-identical to without (%d offloading, %d recomputing)\n",
           runs, graph_steps, offloaded, recomputed);
    CHECK(runs >= 12 && offloaded > 0 && recomputed > 0, "graphs: %d runs, %d offloading, %d recomputing", runs, offloaded,
          recomputed);
}

/* ---- the gradient-ready hook, the recompute check and early host_grads on the device -----------
   A hook that, on the stream it is given, copies the stage's device gradients into a snapshot
   (host_grads on the host, for a streamed stage): after the step the snapshots must equal the
   final gradients, so the hook came after the stage's last B in stream order. */
typedef struct hook_rec {
    chain_case *c;
    int calls[MAXN], last, bad_order, bad_where;
    float *snap[MAXN];                  /* device: dW then db */
    std::vector<float> hsnap[MAXN];
} hook_rec;

static ckpt_result snap_hook(const ckpt_grads_ready_args *a) {
    hook_rec *h = (hook_rec *)a->user;
    layer *L = &h->c->layers[a->stage];
    size_t nw = (size_t)L->win * L->wout;
    if (a->stage >= h->last) h->bad_order++;
    h->last = a->stage;
    h->calls[a->stage]++;
    if (a->in_host_grads != L->streamed || a->stream == NULL) h->bad_where++;
    if (a->in_host_grads) {
        h->hsnap[a->stage].assign(L->hg, L->hg + nw + L->wout);
        return CKPT_OK;
    }
    if (cudaMemcpyAsync(h->snap[a->stage], L->dW, nw * sizeof(float), cudaMemcpyDeviceToDevice,
                        (cudaStream_t)a->stream) != cudaSuccess ||
        cudaMemcpyAsync(h->snap[a->stage] + nw, L->db, L->wout * sizeof(float), cudaMemcpyDeviceToDevice,
                        (cudaStream_t)a->stream) != cudaSuccess)
        return CKPT_ERR_BACKEND;
    return CKPT_OK;
}

/* Two steps of c at pd with the check and the hook (early host_grads when asked); the hook's
   checks after each step. host_grads: 0 zeroed before the first step (the steps add up), 1
   zeroed before each, 2 junk before each with stream_grads_overwrite. Returns the last step's
   result. */
static ckpt_result feature_run(chain_case *c, const ckpt_plan_desc *pd, int streamed, int early, std::vector<float> *g,
                               ckpt_plan_info *info, ckpt_chain_stats *stats, int *f_ops_bad, int host_grads = 0) {
    ckpt_chain_desc cd;
    ckpt_chain *ch = NULL;
    hook_rec h;
    ckpt_result r;
    int i, step;
    memset(&cd, 0, sizeof cd);
    cd.stages = c->st; cd.n_stages = c->n; cd.backend = g_be; cd.seed = 0x1234567890abcdefull; cd.rng_offset = 77;
    cd.input_bytes = sizeof(float) * ROWS * (size_t)c->layers[0].win;
    cd.check_recompute = 1;
    cd.grads_ready = snap_hook;
    cd.grads_ready_user = &h;
    cd.stream_grads_early = early;
    cd.stream_grads_overwrite = host_grads == 2;
    cd.logger.fn = capture;
    h.c = c;
    reset_layers(c, streamed);
    for (i = 0; i < c->n; i++)
        CU(cudaMalloc((void **)&h.snap[i], sizeof(float) * (c->layers[i].win + 1) * c->layers[i].wout));
    r = ckpt_chain_create(&cd, &ch);
    CHECK(r == CKPT_OK, "chain_create with hook and check: %s", ckpt_result_string(r));
    if (r == CKPT_OK) r = ckpt_chain_plan(ch, pd, info);
    if (r == CKPT_OK) {
        int n_ops, k;
        const ckpt_op *ops = ckpt_plan_ops(ckpt_chain_get_plan(ch), &n_ops);
        *f_ops_bad = 0;
        for (k = 0; k < n_ops; k++) *f_ops_bad += ops[k].kind == CKPT_OP_F && c->layers[ops[k].stage - 1].drift;
    }
    for (step = 0; step < 2 && r == CKPT_OK; step++) {
        const void *out = NULL;
        memset(h.calls, 0, sizeof h.calls);
        h.last = c->n; h.bad_order = h.bad_where = 0;
        for (i = 0; i < c->n && host_grads; i++) {
            layer *L = &c->layers[i];
            size_t np = (size_t)(L->win + 1) * L->wout, e;
            for (e = 0; e < np; e++) L->hg[e] = host_grads == 2 ? 1e6f + (float)e : 0.0f;
        }
        r = ckpt_forward(ch, c->x, &out);
        if (r == CKPT_OK) r = ckpt_backward(ch, c->gy, c->gx);
        if (r != CKPT_OK) break;
        *g = gather(c);
        {
            size_t off = 0;
            for (i = 0; i < c->n; i++) {
                const layer *L = &c->layers[i];
                size_t np = (size_t)(L->win + 1) * L->wout;
                std::vector<float> s(np);
                if (L->streamed) s = h.hsnap[i];
                else CU(cudaMemcpy(s.data(), h.snap[i], np * sizeof(float), cudaMemcpyDeviceToHost));
                CHECK(h.calls[i] == 1, "step %d: the hook ran %d times for stage %d", step, h.calls[i], i);
                CHECK(s.size() == np && memcmp(s.data(), &(*g)[off], np * sizeof(float)) == 0,
                      "step %d, stage %d (%s): the gradients at the hook differ from the step's", step, i,
                      L->streamed ? "host_grads" : "device");
                off += np;
            }
        }
        CHECK(h.bad_order == 0 && h.bad_where == 0, "hook: %d calls out of backward order, %d with a wrong place or stream",
              h.bad_order, h.bad_where);
    }
    if (ch) ckpt_chain_get_stats(ch, stats);
    ckpt_chain_destroy(ch);
    for (i = 0; i < c->n; i++) CU(cudaFree(h.snap[i]));
    return r;
}

static void features(void) {
    int ci, runs = 0, early_runs = 0, checked = 0, caught = 0, clean = 0, overwrites = 0;
    for (ci = 0; ci < 12; ci++) {
        chain_case c;
        std::vector<float> ref, got;
        ckpt_plan_desc pd;
        ckpt_plan_info ref_info = {}, info = {};
        ckpt_chain_stats ref_stats = {}, stats = {};
        int streamed = ci % 2, early = (ci % 4) == 1, pi, f_bad = 0;
        make_case(&c);
        memset(&pd, 0, sizeof pd);
        pd.policy = CKPT_POLICY_STORE_ALL;
        if (run(&c, &pd, &ref, &ref_info, &ref_stats, g_be, streamed) != CKPT_OK) { free_case(&c); continue; }
        for (pi = 0; pi < 3; pi++) {     /* store-all, optimal and offload at a random budget */
            uint64_t lo = ref_info.store_all_peak / 3;
            ckpt_result r;
            memset(&pd, 0, sizeof pd);
            pd.policy = pi == 0 ? CKPT_POLICY_STORE_ALL : pi == 1 ? CKPT_POLICY_OPTIMAL : CKPT_POLICY_OFFLOAD;
            pd.budget = pi ? lo + rnd() % (ref_info.store_all_peak - lo + 1) : 0;
            pd.bandwidth = 256;
            r = feature_run(&c, &pd, streamed, early, &got, &info, &stats, &f_bad);
            if (r == CKPT_ERR_INFEASIBLE) continue;
            CHECK(r == CKPT_OK, "hook and check, plan %s: %s (%s)", ckpt_policy_name(pd.policy), ckpt_result_string(r), last_log);
            if (r != CKPT_OK) continue;
            runs++;
            early_runs += early;
            CHECK(got.size() == ref.size() && memcmp(got.data(), ref.data(), ref.size() * sizeof(float)) == 0,
                  "case %d policy %s with hook, check%s: gradients differ from store-all", ci, ckpt_policy_name(pd.policy),
                  early ? ", early host_grads" : "");
            CHECK(stats.recompute_checks >= 2ull * (uint64_t)info.n_recomputed,
                  "%llu checks for %d recomputations in 2 steps", (unsigned long long)stats.recompute_checks, info.n_recomputed);
            checked += stats.recompute_checks > 0;
            if (streamed) {     /* stream_grads_overwrite over junk = zeroing host_grads before each step */
                std::vector<float> zeroed;
                ckpt_result r0 = feature_run(&c, &pd, streamed, early, &zeroed, &info, &stats, &f_bad, 1);
                r = feature_run(&c, &pd, streamed, early, &got, &info, &stats, &f_bad, 2);
                CHECK(r0 == CKPT_OK && r == CKPT_OK, "zeroed: %s, overwrite: %s", ckpt_result_string(r0), ckpt_result_string(r));
                CHECK(r != CKPT_OK || r0 != CKPT_OK ||
                      (got.size() == zeroed.size() && memcmp(got.data(), zeroed.data(), got.size() * sizeof(float)) == 0),
                      "case %d policy %s: stream_grads_overwrite differs from zeroing host_grads", ci, ckpt_policy_name(pd.policy));
                CHECK(stats.grad_loads == 0, "overwrite: %llu host_grads loads", (unsigned long long)stats.grad_loads);
                overwrites += r == CKPT_OK;
            }
        }
        /* A drifting stage under optimal at the smallest budget: caught when the plan runs its F twice. */
        {
            int bad = rnd_int(0, c.n - 1);
            ckpt_result r;
            c.layers[bad].drift = 1;
            memset(&pd, 0, sizeof pd);
            pd.policy = CKPT_POLICY_OPTIMAL;
            pd.budget = 1;
            CHECK(feature_run(&c, &pd, streamed, early, &got, &info, &stats, &f_bad) == CKPT_ERR_INFEASIBLE,
                  "a budget of 1 byte plans");
            pd.budget = info.min_budget;
            last_log[0] = 0;
            r = feature_run(&c, &pd, streamed, early, &got, &info, &stats, &f_bad);
            if (r != CKPT_ERR_INFEASIBLE) {
                char want[32];
                snprintf(want, sizeof want, "X[%d]", bad + 1);
                if (f_bad > 1) {
                    caught++;
                    CHECK(r == CKPT_ERR_RECOMPUTE_MISMATCH && last_item == CKPT_ERR_RECOMPUTE_MISMATCH && strstr(last_log, want),
                          "stage %d drifts and is recomputed: %s, log '%s'", bad, ckpt_result_string(r), last_log);
                } else {
                    clean++;
                    CHECK(r == CKPT_OK, "stage %d drifts but runs once: %s (%s)", bad, ckpt_result_string(r), last_log);
                }
            }
            c.layers[bad].drift = 0;
        }
        free_case(&c);
    }
    printf("hook, recompute check, early host_grads on the device: %d runs (%d with early host_grads, %d with "
           "recompute checks, %d also with overwritten host_grads), drifting stage caught in %d plans, not recomputed in %d\n",
           runs, early_runs, checked, overwrites, caught, clean);
    CHECK(runs >= 20 && early_runs > 0 && checked > 0 && caught > 0 && overwrites > 0,
          "features: %d runs, %d early, %d checked, %d overwrite, %d caught", runs, early_runs, checked, overwrites, caught);
}

int main(void) {
    ckpt_backend be;
    gpu_desc d;
    int count = 0;
    ckpt_result r = GPU(device_count)(&count);
    memset(&d, 0, sizeof d);
    d.logger.fn = capture;
    if (r == CKPT_ERR_NO_DEVICE) {
        ckpt_backend cpu;
        float x;
        ckpt_philox p = {1, 0, 1, NULL};
        r = GPU(backend_create)(&d, &be);
        CHECK(r == CKPT_ERR_NO_DEVICE && last_item == CKPT_ERR_NO_DEVICE, "create without a device: %s", ckpt_result_string(r));
        CHECK(strstr(last_log, "Error") != NULL, "the log names the runtime error: '%s'", last_log);
        CHECK(be.alloc == NULL && be.state == NULL, "a failed create leaves the struct empty");
        ckpt_cpu_backend_create(NULL, &cpu);
        CHECK(GPU(philox_uniform)(&cpu, &p, &x, 1, NULL) == CKPT_ERR_BAD_BACKEND, "a CPU backend is not a " GPU_NAME " backend");
        CHECK(GPU(get_stats)(&cpu, NULL) == CKPT_ERR_NULL_ARGUMENT, "NULL stats");
        ckpt_cpu_backend_destroy(&cpu);
        printf("%d passed, %d failed; no " GPU_NAME " device: the device tests are skipped\n", checks - failures, failures);
        return failures ? 1 : 77;
    }
    CHECK(r == CKPT_OK && count > 0, "device_count: %s", ckpt_result_string(r));
    d.device = count;
    CHECK(GPU(backend_create)(&d, &be) == CKPT_ERR_BAD_INDEX, "device ordinal out of range");
    d.device = 0;
    d.nvtx = 1;
    r = GPU(backend_create)(&d, &be);
    CHECK(r == CKPT_OK, "create: %s", ckpt_result_string(r));
    if (r != CKPT_OK) return 1;
#ifndef CKPT_TEST_HIP
    CHECK(be.range_push && be.range_pop, "desc.nvtx sets the range entries");
#endif
    if (be.range_push) { be.range_push(be.state, "test range"); be.range_pop(be.state); }
    memory(&be);
    rng(&be);
    checksum(&be);
    executor(&be);
    features();
    graphs();
    GPU(backend_destroy)(&be);
    CHECK(be.state == NULL, "destroy clears the struct");
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
