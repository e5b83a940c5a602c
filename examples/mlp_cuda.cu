/* mlp_cuda.cu -- train a stack of transformer MLP blocks with ckpt.h on a CUDA GPU.

   The GPU port of examples/mlp_cpu.c: the same model, trained the same way, with the same table.
   Each block is one ckpt stage, on activations of N rows by C columns:

       y = x + Dropout(W2 * GELU(W1 * LN(x) + b1) + b2)        (hidden width H = 4C)

   The model learns to imitate a fixed random "teacher" of the same shape (MSE loss, SGD). The
   program trains it from the same weights on the same data once per planner policy and prints,
   for each, the planned and measured memory (the highest arena byte the executor handed out, and
   the device bytes the CUDA backend allocated), the median step time, and whether the last step's gradients are
   bit-identical to storing every activation (exit status 1 if any are not).

   Bit-identical gradients need a deterministic step, so: the GEMMs are cuBLAS on one stream
   (cuBLAS gives the same bits run to run on one GPU model; atomics stay off, the default); every
   sum over rows or columns has a fixed order (no atomicAdd); dropout draws its mask from the
   Philox range ckpt_ctx_rng gives, which a recomputation gets back.

   Build (from the repository root; needs the CUDA toolkit with cuBLAS):
       nvcc -O2 -arch=sm_90 -I. examples/mlp_cuda.cu -o mlp_cuda -lcublas
   Run:
       ./mlp_cuda [--width C] [--depth L] [--batch N] [--steps S] [--dropout P] [--lr LR]
                  [--seed S] [--budget-frac F | --budget BYTES] [--bandwidth GB_PER_S] [--stream]
                  [--tf32]
   Exit status 0: every policy's gradients equal store-all's; 1: one differs, or an error;
   77: no usable GPU (skipped).

   The rows: store-all (no budget: the reference), then every-k, sqrt, greedy and optimal at the
   budget. With --bandwidth GB_PER_S, one more row at the same budget: the offload policy, planned
   for a link of that many GB/s each way (plan bandwidth in bytes per ms, as the stage times are in
   ms), which copies boundaries and tapes to the CUDA backend's pinned host pool and back on its
   copy streams while the blocks compute; its "pinned B" column is that pool
   (ckpt_chain_stats.pool_bytes; 0 in the other rows).

   With --stream, every run streams the parameters (see PARAMETER STREAMING in ckpt.h): each
   block's parameters and float gradients live in pinned host memory (one block of the flat
   layout each, the stage's host_params and host_grads); the library loads them into two device
   slots ahead of each op, and each backward adds into a device copy of its host gradients that
   is copied straight back; the SGD update runs on the host, after the timed part of the step.
   Two more columns: parameter loads per step and the slots' device bytes
   (ckpt_chain_stats.param_loads / steps, slot_bytes). The gradients
   compared are the host ones, against store-all's streamed run. A streamed run and one without
   --stream may differ in the last bits after the first step (the host update rounds differently
   from the GPU's): compare rows within one mode only.

   bench/mlp_gpu_bench.cu reuses the model: it defines MLP_CUDA_NO_MAIN and includes this file.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>

#define CKPT_IMPLEMENTATION
#define CKPT_CUDA_IMPLEMENTATION
#include "../ckpt.h"
#include "../backends/ckpt_cuda.h"

/* ---- errors ----------------------------------------------------------------------------------
   Model code returns a ckpt_result, so a stage callback can hand a failure to the library, which
   reports it as CKPT_ERR_CALLBACK. CUDA and cuBLAS failures are printed where they happen. */

#define CHECK(call) check((call), #call, __FILE__, __LINE__)
#define CU(call) cuda_result((call), #call, __FILE__, __LINE__)
#define BLAS(call) blas_result((call), #call, __FILE__, __LINE__)
#define LAUNCHED(kernel) cuda_result(cudaGetLastError(), #kernel " launch", __FILE__, __LINE__)
#define TRY(expr) do { ckpt_result r_ = (expr); if (r_ != CKPT_OK) return r_; } while (0)

static void check(ckpt_result r, const char *what, const char *file, int line)
{
    if (r == CKPT_OK) return;
    fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, what, ckpt_result_string(r),
            ckpt_result_description(r));
    exit(1);
}

static ckpt_result cuda_result(cudaError_t e, const char *what, const char *file, int line)
{
    if (e == cudaSuccess) return CKPT_OK;
    fprintf(stderr, "%s:%d: %s: %s (%s)\n", file, line, what, cudaGetErrorName(e), cudaGetErrorString(e));
    return e == cudaErrorMemoryAllocation ? CKPT_ERR_OUT_OF_DEVICE_MEMORY : CKPT_ERR_BACKEND;
}

static ckpt_result blas_result(cublasStatus_t s, const char *what, const char *file, int line)
{
    if (s == CUBLAS_STATUS_SUCCESS) return CKPT_OK;
    fprintf(stderr, "%s:%d: %s: %s\n", file, line, what, cublasGetStatusString(s));
    return CKPT_ERR_BACKEND;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p) { fprintf(stderr, "out of host memory (%zu x %zu bytes)\n", n, size); exit(1); }
    return p;
}

/* Device memory of our own (parameters, the batch): cudaMalloc, not the backend, so that the
   backend's statistics count the ckpt arena alone. Zeroed and complete on return (setup only). */
static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    CHECK(CU(cudaMalloc(&p, bytes ? bytes : 1)));
    CHECK(CU(cudaMemset(p, 0, bytes ? bytes : 1)));
    CHECK(CU(cudaDeviceSynchronize()));
    return p;
}

/* Errors to stderr, except "infeasible": the table reports those. */
static void log_errors(const char *tag, ckpt_log_level level, ckpt_result item, const char *message,
                       const char *file, int line, void *user)
{
    if (item != CKPT_ERR_INFEASIBLE) ckpt_log_stderr(tag, level, item, message, file, line, user);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n), n >= 1 (sorts v). */
static double median(float *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_float);
    return n % 2 ? v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + v[n / 2]);
}

/* ---- kernels ---------------------------------------------------------------------------------
   Element-wise kernels use grid-stride loops. Reductions run in a fixed order that depends only
   on the sizes, never on timing: a warp per row (shuffles), or a thread per column over a fixed
   range of rows followed by a second pass that adds the partial sums in order. */

#define THREADS 256
#define ROWS_PER_BLOCK (THREADS / 32)   /* row kernels: one warp per row */
#define MAX_PARTS 64                    /* column sums: rows split into at most this many parts */
#define LOSS_BLOCKS 256                 /* loss: partial sums per block, then one thread adds them */
#define GELU_K 0.7978845608f            /* sqrt(2/pi) */

#define GRID_STRIDE(i, n) \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

static unsigned blocks_for(size_t work)
{
    size_t b = (work + THREADS - 1) / THREADS;
    return (unsigned)(b == 0 ? 1 : b > 65536 ? 65536 : b);
}

/* The same sum in every lane: a butterfly adds each pair in both orders, and a + b == b + a. */
__device__ static float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ static float gelu(float x)
{
    return 0.5f * x * (1.0f + tanhf(GELU_K * (x + 0.044715f * x * x * x)));
}

__device__ static float gelu_grad(float x)
{
    float t = tanhf(GELU_K * (x + 0.044715f * x * x * x));
    float du = GELU_K * (1.0f + 3.0f * 0.044715f * x * x);     /* d(tanh argument)/dx */
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

__global__ static void fill_kernel(float *p, float v, size_t n)
{
    GRID_STRIDE(i, n) p[i] = v;
}

__global__ static void affine_kernel(float *p, float mean, float std, size_t n)
{
    GRID_STRIDE(i, n) p[i] = mean + std * p[i];
}

/* ln = (x - mean) * rstd * g + b, per row; mean and rstd kept for the backward. */
__global__ static void ln_forward_kernel(const float *x, const float *g, const float *b, float *ln,
                                         float *mean, float *rstd, int N, int C)
{
    int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;       /* the whole warp: the row is the warp's */
    const float *xr = x + (size_t)row * C;
    float s = 0.0f;
    for (int c = lane; c < C; c += 32) s += xr[c];
    float mu = warp_sum(s) / (float)C;
    float v = 0.0f;
    for (int c = lane; c < C; c += 32) v += (xr[c] - mu) * (xr[c] - mu);
    float rs = 1.0f / sqrtf(warp_sum(v) / (float)C + 1e-5f);
    for (int c = lane; c < C; c += 32) ln[(size_t)row * C + c] = (xr[c] - mu) * rs * g[c] + b[c];
    if (lane == 0) { mean[row] = mu; rstd[row] = rs; }
}

/* h += b1 (in place), a = GELU(h); both N x H. */
__global__ static void bias_gelu_kernel(float *h, const float *b1, float *a, int H, size_t n)
{
    GRID_STRIDE(i, n) {
        float v = h[i] + b1[i % H];
        h[i] = v;
        a[i] = gelu(v);
    }
}

/* y = x + Dropout(y + b2), in place in y; mask gets 1 (kept) or 0. One thread per Philox block
   of 4 elements, like ckpt_philox_dropout: element i uses word i % 4 of block i / 4. Without
   dropout (use_rng 0) every element is kept unscaled. */
__global__ static void bias_dropout_residual_kernel(const float *x, float *y, const float *b2, uint8_t *mask,
                                                    ckpt_philox p, int use_rng, float p_drop, float scale,
                                                    int C, size_t n)
{
    GRID_STRIDE(j, (n + 3) / 4) {
        uint32_t w[4] = {0, 0, 0, 0};
        if (use_rng) ckpt_philox_gen(p.key, p.base + j, w);
        for (size_t i = 4 * j; i < 4 * j + 4 && i < n; i++) {
            float v = y[i] + b2[i % C];
            int keep = 1;
            if (use_rng) v = ckpt_dropout_from_u32(w[i - 4 * j], p_drop, scale, v, &keep);
            y[i] = x[i] + v;
            mask[i] = (uint8_t)keep;
        }
    }
}

/* dm = mask ? dy * scale : 0: the backward of the dropout (the residual passes dy on unchanged). */
__global__ static void dropout_backward_kernel(const float *dy, const uint8_t *mask, float scale, float *dm, size_t n)
{
    GRID_STRIDE(i, n) dm[i] = mask[i] ? dy[i] * scale : 0.0f;
}

/* da *= GELU'(h): da becomes dL/dh. */
__global__ static void gelu_backward_kernel(float *da, const float *h, size_t n)
{
    GRID_STRIDE(i, n) da[i] *= gelu_grad(h[i]);
}

/* part[p][c] = sum of a[r][c] over the rows r of part p, in order (grid: columns x parts). */
__global__ static void colsum_partial_kernel(const float *a, int N, int C, int rows_per_part, float *part)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x, p = blockIdx.y;
    if (c >= C) return;
    int r1 = min(N, (p + 1) * rows_per_part);
    float s = 0.0f;
    for (int r = p * rows_per_part; r < r1; r++) s += a[(size_t)r * C + c];
    part[(size_t)p * C + c] = s;
}

/* The same for the layer norm's gain and bias: sums of dln * x-hat and of dln. */
__global__ static void ln_param_partial_kernel(const float *dln, const float *x, const float *mean,
                                               const float *rstd, int N, int C, int rows_per_part,
                                               float *part_g, float *part_b)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x, p = blockIdx.y;
    if (c >= C) return;
    int r1 = min(N, (p + 1) * rows_per_part);
    float sg = 0.0f, sb = 0.0f;
    for (int r = p * rows_per_part; r < r1; r++) {
        size_t i = (size_t)r * C + c;
        float xhat = (x[i] - mean[r]) * rstd[r];
        sg += dln[i] * xhat;
        sb += dln[i];
    }
    part_g[(size_t)p * C + c] = sg;
    part_b[(size_t)p * C + c] = sb;
}

/* g[c] += the partial sums of column c, parts in order. */
__global__ static void colsum_finish_kernel(const float *part, int parts, int C, float *g)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float s = 0.0f;
    for (int p = 0; p < parts; p++) s += part[(size_t)p * C + c];
    g[c] += s;
}

/* Layer norm backward to the input, per row (x-hat recomputed from x, mean, rstd), plus the
   residual: dx = dy + rstd * (d - mean(d) - x-hat * mean(d * x-hat)) with d = dln * g. */
__global__ static void ln_backward_kernel(const float *dln, const float *x, const float *mean, const float *rstd,
                                          const float *g, const float *dy, float *dx, int N, int C)
{
    int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;
    size_t base = (size_t)row * C;
    float mu = mean[row], rs = rstd[row], sd = 0.0f, sdx = 0.0f;
    for (int c = lane; c < C; c += 32) {
        float d = dln[base + c] * g[c], xhat = (x[base + c] - mu) * rs;
        sd += d;
        sdx += d * xhat;
    }
    sd = warp_sum(sd) / (float)C;
    sdx = warp_sum(sdx) / (float)C;
    for (int c = lane; c < C; c += 32) {
        float d = dln[base + c] * g[c], xhat = (x[base + c] - mu) * rs;
        dx[base + c] = dy[base + c] + rs * (d - sd - xhat * sdx);
    }
}

/* dy = dscale * (y - t); part[block] = sum of (y - t)^2 over the block's elements (fixed grid). */
__global__ static void mse_partial_kernel(const float *y, const float *t, float *dy, float dscale, size_t n,
                                          double *part)
{
    __shared__ double sh[THREADS];
    double s = 0.0;
    GRID_STRIDE(i, n) {
        float d = y[i] - t[i];
        dy[i] = dscale * d;
        s += (double)d * d;
    }
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int stride = THREADS / 2; stride > 0; stride /= 2) {
        if ((int)threadIdx.x < stride) sh[threadIdx.x] += sh[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) part[blockIdx.x] = sh[0];
}

__global__ static void mse_finish_kernel(const double *part, int parts, size_t n, double *loss)
{
    double s = 0.0;
    for (int p = 0; p < parts; p++) s += part[p];
    *loss = s / (double)n;
}

__global__ static void sgd_kernel(float *p, const float *g, float lr, size_t n)
{
    GRID_STRIDE(i, n) p[i] -= lr * g[i];
}

/* ---- random numbers: the library's Philox, also for weights and data ------------------------- */

typedef struct Rng { uint64_t key, next; } Rng;   /* a key and the next unused Philox block */

/* n normals N(mean, std^2) into device memory: ckpt_cuda_philox_normal, then scaled. */
static ckpt_result randn(const ckpt_backend *be, Rng *rng, float *out, size_t n, float mean, float std,
                         cudaStream_t s)
{
    ckpt_philox p;
    p.key = rng->key; p.base = rng->next; p.count = (n + 3) / 4;
    TRY(ckpt_cuda_philox_normal(be, &p, out, n, s));
    affine_kernel<<<blocks_for(n), THREADS, 0, s>>>(out, mean, std, n);
    TRY(LAUNCHED(affine_kernel));
    rng->next += p.count;
    return CKPT_OK;
}

/* ---- the model ------------------------------------------------------------------------------- */

/* One block's parameters, or their gradients: device pointers into one flat buffer. */
typedef struct Block { float *ln_g, *ln_b, *w1, *b1, *w2, *b2; } Block;

enum { T_LN, T_MEAN, T_RSTD, T_H, T_A, T_MASK, T_COUNT };   /* pieces of a stage's tape */
enum { W_DM, W_DA, W_DLN, W_PART, W_COUNT };                /* pieces of the backward workspace */

typedef struct Model {
    int C, H, N, L;             /* width, hidden width (4C), rows, blocks */
    float p_drop, drop_scale;   /* drop_scale = ckpt_dropout_scale(p_drop), computed on the host */
    int rows_per_part, parts;   /* how column sums split the rows */
    size_t block_floats;        /* one block's parameters, padding included: carve's layout */
    size_t n_params;            /* floats, L * block_floats */
    float *params, *grads;      /* device, n_params floats each (grads NULL for the teacher) */
    Block *p, *g;               /* per block, into params and grads */
    cublasHandle_t blas;        /* shared; each call sets the stream of the callback */
    ckpt_layout_entry tape[T_COUNT], ws[W_COUNT];
    size_t tape_bytes, ws_bytes;
} Model;

/* Every tensor starts on a 256-byte boundary: the same alignment as every arena buffer. */
static size_t pad64(size_t floats) { return (floats + 63) / 64 * 64; }

static float *carve(float *base, int C, int H, Block *b)
{
    b->ln_g = base; base += pad64(C);
    b->ln_b = base; base += pad64(C);
    b->w1 = base;   base += pad64((size_t)H * C);    /* H x C: h = ln * W1^T */
    b->b1 = base;   base += pad64(H);
    b->w2 = base;   base += pad64((size_t)C * H);    /* C x H */
    b->b2 = base;   base += pad64(C);
    return base;
}

static void set_entry(ckpt_layout_entry *e, size_t bytes)
{
    e->bytes = bytes;
    e->align = 256;
    e->offset = 0;
}

static void model_create(Model *m, int C, int L, int N, float p_drop, int trainable, cublasHandle_t blas)
{
    memset(m, 0, sizeof *m);
    m->C = C; m->H = 4 * C; m->N = N; m->L = L; m->p_drop = p_drop;
    m->drop_scale = ckpt_dropout_scale(p_drop);
    m->blas = blas;
    m->rows_per_part = (N + MAX_PARTS - 1) / MAX_PARTS;
    m->parts = (N + m->rows_per_part - 1) / m->rows_per_part;
    m->block_floats = 3 * pad64(C) + pad64(m->H) + 2 * pad64((size_t)m->H * C);   /* what carve takes */
    m->n_params = (size_t)L * m->block_floats;
    m->params = (float *)dev_alloc(m->n_params * sizeof(float));
    m->grads = trainable ? (float *)dev_alloc(m->n_params * sizeof(float)) : NULL;
    m->p = (Block *)xcalloc(L, sizeof(Block));
    m->g = (Block *)xcalloc(L, sizeof(Block));
    float *pp = m->params, *gp = m->grads;
    for (int l = 0; l < L; l++) {
        pp = carve(pp, C, m->H, &m->p[l]);
        if (gp) gp = carve(gp, C, m->H, &m->g[l]);
    }
    /* The backward sees only the input, the tape and grad_out, so the tape keeps everything else
       it needs; the LN input x-hat is recomputed from the input and the mean/rstd. */
    size_t nc = (size_t)N * C, nh = (size_t)N * m->H;
    set_entry(&m->tape[T_LN], nc * sizeof(float));
    set_entry(&m->tape[T_MEAN], N * sizeof(float));
    set_entry(&m->tape[T_RSTD], N * sizeof(float));
    set_entry(&m->tape[T_H], nh * sizeof(float));
    set_entry(&m->tape[T_A], nh * sizeof(float));
    set_entry(&m->tape[T_MASK], nc);
    CHECK(ckpt_layout_compute(m->tape, T_COUNT, &m->tape_bytes));
    set_entry(&m->ws[W_DM], nc * sizeof(float));
    set_entry(&m->ws[W_DA], nh * sizeof(float));
    set_entry(&m->ws[W_DLN], nc * sizeof(float));
    /* partial column sums: H columns for b1, or 2 x C for the layer norm's gain and bias */
    set_entry(&m->ws[W_PART], (size_t)m->parts * (m->H > 2 * C ? m->H : 2 * C) * sizeof(float));
    CHECK(ckpt_layout_compute(m->ws, W_COUNT, &m->ws_bytes));
}

static void model_destroy(Model *m)
{
    CHECK(CU(cudaFree(m->params)));
    if (m->grads) CHECK(CU(cudaFree(m->grads)));
    free(m->p); free(m->g);
}

/* LN gain 1; W1 ~ N(0, 1/C), W2 ~ N(0, (w2_scale)^2/H); biases ~ N(0, bias_std^2). */
static void model_init(Model *m, const ckpt_backend *be, Rng *rng, float w2_scale, float bias_std, cudaStream_t s)
{
    for (int l = 0; l < m->L; l++) {
        Block *b = &m->p[l];
        fill_kernel<<<blocks_for(m->C), THREADS, 0, s>>>(b->ln_g, 1.0f, m->C);
        CHECK(LAUNCHED(fill_kernel));
        CHECK(randn(be, rng, b->ln_b, m->C, 0.0f, bias_std, s));
        CHECK(randn(be, rng, b->w1, (size_t)m->H * m->C, 0.0f, 1.0f / sqrtf((float)m->C), s));
        CHECK(randn(be, rng, b->b1, m->H, 0.0f, bias_std, s));
        CHECK(randn(be, rng, b->w2, (size_t)m->C * m->H, 0.0f, w2_scale / sqrtf((float)m->H), s));
        CHECK(randn(be, rng, b->b2, m->C, 0.0f, bias_std, s));
    }
}

/* Column sums of an N x cols matrix, added into g (cols floats). */
static ckpt_result colsum_add(const Model *m, const float *a, int cols, float *part, float *g, cudaStream_t s)
{
    dim3 grid((cols + THREADS - 1) / THREADS, m->parts);
    colsum_partial_kernel<<<grid, THREADS, 0, s>>>(a, m->N, cols, m->rows_per_part, part);
    TRY(LAUNCHED(colsum_partial_kernel));
    colsum_finish_kernel<<<(cols + THREADS - 1) / THREADS, THREADS, 0, s>>>(part, m->parts, cols, g);
    return LAUNCHED(colsum_finish_kernel);
}

/* One block forward on stream s. rng NULL: no dropout (the teacher, or p_drop = 0).
   Matrices are row-major; cuBLAS is column-major, so a row-major R x K matrix is its K x R
   transpose there, and each product below is written transposed (h^T = W1 ln^T, and so on). */
static ckpt_result block_forward(const Model *m, const Block *p, const float *x, float *y, void *tape,
                                 const ckpt_philox *rng, cudaStream_t s)
{
    const int N = m->N, C = m->C, H = m->H;
    const float one = 1.0f, zero = 0.0f;
    float *ln = (float *)ckpt_layout_ptr(tape, m->tape, T_LN), *h = (float *)ckpt_layout_ptr(tape, m->tape, T_H);
    float *mean = (float *)ckpt_layout_ptr(tape, m->tape, T_MEAN);
    float *rstd = (float *)ckpt_layout_ptr(tape, m->tape, T_RSTD);
    float *a = (float *)ckpt_layout_ptr(tape, m->tape, T_A);
    uint8_t *mask = (uint8_t *)ckpt_layout_ptr(tape, m->tape, T_MASK);
    size_t nc = (size_t)N * C, nh = (size_t)N * H;
    ckpt_philox none = {0, 0, 0};

    ln_forward_kernel<<<(N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, THREADS, 0, s>>>(x, p->ln_g, p->ln_b, ln,
                                                                                  mean, rstd, N, C);
    TRY(LAUNCHED(ln_forward_kernel));
    TRY(BLAS(cublasSetStream(m->blas, s)));
    TRY(BLAS(cublasSgemm(m->blas, CUBLAS_OP_T, CUBLAS_OP_N, H, N, C,      /* h = ln W1^T */
                         &one, p->w1, C, ln, C, &zero, h, H)));
    bias_gelu_kernel<<<blocks_for(nh), THREADS, 0, s>>>(h, p->b1, a, H, nh);
    TRY(LAUNCHED(bias_gelu_kernel));
    TRY(BLAS(cublasSgemm(m->blas, CUBLAS_OP_T, CUBLAS_OP_N, C, N, H,      /* y = a W2^T */
                         &one, p->w2, H, a, H, &zero, y, C)));
    bias_dropout_residual_kernel<<<blocks_for((nc + 3) / 4), THREADS, 0, s>>>(
        x, y, p->b2, mask, rng ? *rng : none, rng != NULL, m->p_drop, m->drop_scale, C, nc);
    return LAUNCHED(bias_dropout_residual_kernel);
}

/* One block backward on stream s: dx (may be NULL) = dL/dx; adds parameter gradients into g. */
static ckpt_result block_backward(const Model *m, const Block *p, const Block *g, const float *x,
                                  const void *tape, const float *dy, float *dx, void *ws, cudaStream_t s)
{
    const int N = m->N, C = m->C, H = m->H;
    const float one = 1.0f, zero = 0.0f;
    const float *ln = (const float *)ckpt_layout_ptr(tape, m->tape, T_LN);
    const float *h = (const float *)ckpt_layout_ptr(tape, m->tape, T_H);
    const float *mean = (const float *)ckpt_layout_ptr(tape, m->tape, T_MEAN);
    const float *rstd = (const float *)ckpt_layout_ptr(tape, m->tape, T_RSTD);
    const float *a = (const float *)ckpt_layout_ptr(tape, m->tape, T_A);
    const uint8_t *mask = (const uint8_t *)ckpt_layout_ptr(tape, m->tape, T_MASK);
    float *dm = (float *)ckpt_layout_ptr(ws, m->ws, W_DM), *da = (float *)ckpt_layout_ptr(ws, m->ws, W_DA);
    float *dln = (float *)ckpt_layout_ptr(ws, m->ws, W_DLN), *part = (float *)ckpt_layout_ptr(ws, m->ws, W_PART);
    size_t nc = (size_t)N * C, nh = (size_t)N * H;

    dropout_backward_kernel<<<blocks_for(nc), THREADS, 0, s>>>(dy, mask, m->drop_scale, dm, nc);
    TRY(LAUNCHED(dropout_backward_kernel));
    TRY(colsum_add(m, dm, C, part, g->b2, s));
    TRY(BLAS(cublasSetStream(m->blas, s)));
    TRY(BLAS(cublasSgemm(m->blas, CUBLAS_OP_N, CUBLAS_OP_T, H, C, N,      /* dW2 += dm^T a */
                         &one, a, H, dm, C, &one, g->w2, H)));
    TRY(BLAS(cublasSgemm(m->blas, CUBLAS_OP_N, CUBLAS_OP_N, H, N, C,      /* da = dm W2 */
                         &one, p->w2, H, dm, C, &zero, da, H)));
    gelu_backward_kernel<<<blocks_for(nh), THREADS, 0, s>>>(da, h, nh);   /* da becomes dL/dh */
    TRY(LAUNCHED(gelu_backward_kernel));
    TRY(colsum_add(m, da, H, part, g->b1, s));
    TRY(BLAS(cublasSgemm(m->blas, CUBLAS_OP_N, CUBLAS_OP_T, C, H, N,      /* dW1 += dh^T ln */
                         &one, ln, C, da, H, &one, g->w1, C)));
    TRY(BLAS(cublasSgemm(m->blas, CUBLAS_OP_N, CUBLAS_OP_N, C, N, H,      /* dln = dh W1 */
                         &one, p->w1, C, da, H, &zero, dln, C)));
    dim3 grid((C + THREADS - 1) / THREADS, m->parts);
    float *part_b = part + (size_t)m->parts * C;
    ln_param_partial_kernel<<<grid, THREADS, 0, s>>>(dln, x, mean, rstd, N, C, m->rows_per_part, part, part_b);
    TRY(LAUNCHED(ln_param_partial_kernel));
    colsum_finish_kernel<<<(C + THREADS - 1) / THREADS, THREADS, 0, s>>>(part, m->parts, C, g->ln_g);
    TRY(LAUNCHED(colsum_finish_kernel));
    colsum_finish_kernel<<<(C + THREADS - 1) / THREADS, THREADS, 0, s>>>(part_b, m->parts, C, g->ln_b);
    TRY(LAUNCHED(colsum_finish_kernel));
    if (!dx) return CKPT_OK;
    ln_backward_kernel<<<(N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, THREADS, 0, s>>>(dln, x, mean, rstd, p->ln_g,
                                                                                   dy, dx, N, C);
    return LAUNCHED(ln_backward_kernel);
}

/* ---- the ckpt stages: thin wrappers; the stage index picks the block ------------------------
   With parameter streaming (--stream) the library hands each op the block's parameters in a
   device slot (args->params: one block of the model's flat buffer, carve's layout) and, in the
   backward, a gradient slot of the same layout holding the block's host gradients
   (args->param_grads) to add into; it copies that slot back afterwards. Without it both are NULL and the block
   uses the model's own device buffers. */

static ckpt_result stage_forward(const ckpt_fwd_args *args)
{
    const Model *m = (const Model *)args->ctx->user;
    const Block *p = &m->p[args->ctx->stage];
    Block slot;
    if (args->params) { carve((float *)args->params, m->C, m->H, &slot); p = &slot; }
    ckpt_philox rng;
    if (m->p_drop > 0.0f)       /* a recomputation gets the same range back: same mask */
        TRY(ckpt_ctx_rng(args->ctx, ((uint64_t)m->N * m->C + 3) / 4, &rng));
    return block_forward(m, p, (const float *)args->in, (float *)args->out, args->tape,
                         m->p_drop > 0.0f ? &rng : NULL, (cudaStream_t)args->ctx->stream);
}

static ckpt_result stage_backward(const ckpt_bwd_args *args)
{
    const Model *m = (const Model *)args->ctx->user;
    int l = args->ctx->stage;
    const Block *p = &m->p[l], *g = &m->g[l];
    Block pslot, gslot;
    if (args->params) { carve((float *)args->params, m->C, m->H, &pslot); p = &pslot; }
    if (args->param_grads) { carve((float *)args->param_grads, m->C, m->H, &gslot); g = &gslot; }
    return block_backward(m, p, g, (const float *)args->in, args->tape, (const float *)args->grad_out,
                          (float *)args->grad_in, args->workspace, (cudaStream_t)args->ctx->stream);
}

/* Milliseconds of one block's forward and backward (median of 7, after a warm-up), timed with
   events on stream s: the planner's costs. Leaves the gradients zero. */
static void measure_block(Model *m, const ckpt_backend *be, cudaStream_t s, double *fwd_ms, double *bwd_ms)
{
    enum { REPS = 8 };
    size_t nc = (size_t)m->N * m->C;
    float *x = (float *)dev_alloc(nc * sizeof(float)), *y = (float *)dev_alloc(nc * sizeof(float));
    float *dx = (float *)dev_alloc(nc * sizeof(float));
    void *tape = dev_alloc(m->tape_bytes), *ws = dev_alloc(m->ws_bytes);
    Rng rng = { 12345, 0 };
    CHECK(randn(be, &rng, x, nc, 0.0f, 1.0f, s));
    ckpt_philox drop;
    drop.key = 1; drop.base = 0; drop.count = (nc + 3) / 4;
    cudaEvent_t ev[3];
    for (int i = 0; i < 3; i++) CHECK(CU(cudaEventCreate(&ev[i])));
    float f[REPS], b[REPS];
    for (int rep = 0; rep < REPS; rep++) {
        CHECK(CU(cudaEventRecord(ev[0], s)));
        CHECK(block_forward(m, &m->p[0], x, y, tape, m->p_drop > 0.0f ? &drop : NULL, s));
        CHECK(CU(cudaEventRecord(ev[1], s)));
        CHECK(block_backward(m, &m->p[0], &m->g[0], x, tape, y, dx, ws, s));
        CHECK(CU(cudaEventRecord(ev[2], s)));
        CHECK(CU(cudaEventSynchronize(ev[2])));
        CHECK(CU(cudaEventElapsedTime(&f[rep], ev[0], ev[1])));
        CHECK(CU(cudaEventElapsedTime(&b[rep], ev[1], ev[2])));
    }
    *fwd_ms = median(f + 1, REPS - 1);     /* rep 0 warms up (cuBLAS loads its kernels) */
    *bwd_ms = median(b + 1, REPS - 1);
    CHECK(CU(cudaMemsetAsync(m->grads, 0, m->n_params * sizeof(float), s)));
    CHECK(CU(cudaStreamSynchronize(s)));
    for (int i = 0; i < 3; i++) CHECK(CU(cudaEventDestroy(ev[i])));
    CHECK(CU(cudaFree(x))); CHECK(CU(cudaFree(y))); CHECK(CU(cudaFree(dx)));
    CHECK(CU(cudaFree(tape))); CHECK(CU(cudaFree(ws)));
}

/* ---- training -------------------------------------------------------------------------------- */

typedef struct Config {
    int C, L, N, steps, warmup, tf32;
    int stream;                 /* parameter streaming: parameters and gradients in pinned host memory */
    float p_drop, lr;
    double budget_frac;
    double bandwidth_gbs;       /* > 0: an offload run, planned for a link of this many GB/s each way */
    uint64_t budget, seed;
} Config;

static Config default_config(void)
{
    Config c;
    memset(&c, 0, sizeof c);
    c.C = 768; c.L = 12; c.N = 4096; c.steps = 10; c.warmup = 1; c.tf32 = 0;
    c.p_drop = 0.1f; c.lr = 0.1f; c.budget_frac = 0.4; c.budget = 0; c.seed = 42;
    c.stream = 0; c.bandwidth_gbs = 0.0;
    return c;
}

typedef struct Batch {          /* device buffers of one step; the caller owns X[0], G[0], G[n] */
    float *x, *target, *dy, *dx, *tmp[2];
    void *tape;                 /* the teacher's tape (scratch) */
    double *loss_part, *loss;
} Batch;

typedef struct Run {
    ckpt_policy policy;
    int feasible;
    ckpt_plan_info info;
    ckpt_chain_stats stats;     /* also pool_bytes (offload), param_loads and slot_bytes (streaming) */
    uint64_t device_peak;       /* ckpt_cuda_stats.peak_bytes while this run's chain lived */
    uint64_t driver_bytes;      /* cudaMemGetInfo: free bytes before the chain less the least free after each step */
    double ms_per_step, first_loss, loss;
    float *grads;               /* host: the last step's parameter gradients, then the input gradient */
} Run;

/* Everything the runs share: the GPU, both models, the measured stage costs, the batch. */
typedef struct Session {
    Config cfg;
    cudaStream_t stream;
    ckpt_backend be;
    cublasHandle_t blas;
    Model model, teacher;
    float *init;                /* device: the model's initial parameters */
    double fwd_ms, bwd_ms;      /* one block, measured */
    ckpt_stage_desc *stages;
    Batch batch;
    /* --stream: the model's parameters and their gradients in pinned host memory (n_params floats
       each, carve's layout: block l at l * block_floats); the chain loads them block by block.
       NULL without streaming (the model's device buffers are used). */
    float *host_params, *host_grads;
} Session;

/* The teacher's output for b->x, into b->target (no ckpt: it never trains). */
static ckpt_result teacher_forward(const Model *t, Batch *b, cudaStream_t s)
{
    const float *in = b->x;
    for (int l = 0; l < t->L; l++) {
        float *out = l == t->L - 1 ? b->target : b->tmp[l % 2];
        TRY(block_forward(t, &t->p[l], in, out, b->tape, NULL, s));
        in = out;
    }
    return CKPT_OK;
}

/* Mean squared error into b->loss (device); b->dy = dLoss/dy. */
static ckpt_result mse(const float *y, Batch *b, size_t n, cudaStream_t s)
{
    mse_partial_kernel<<<LOSS_BLOCKS, THREADS, 0, s>>>(y, b->target, b->dy, 2.0f / (float)n, n, b->loss_part);
    TRY(LAUNCHED(mse_partial_kernel));
    mse_finish_kernel<<<1, 1, 0, s>>>(b->loss_part, LOSS_BLOCKS, n, b->loss);
    return LAUNCHED(mse_finish_kernel);
}

/* No GPU is not a failure: exit 77, which test runners read as "skipped". */
static void exit_no_gpu(const char *prog, ckpt_result r)
{
    fprintf(stderr, "%s: skipped: no usable GPU (%s: %s)\n", prog, ckpt_result_string(r), ckpt_result_description(r));
    exit(77);
}

/* Opens the GPU (exit 77 without one), builds both models, measures a block, describes the
   stages. */
static void session_open(Session *ss, const Config *cfg, const char *prog)
{
    memset(ss, 0, sizeof *ss);
    ss->cfg = *cfg;
    int count = 0;
    ckpt_result r = ckpt_cuda_device_count(&count);     /* before any CUDA call that needs a device */
    if (r == CKPT_ERR_NO_DEVICE) exit_no_gpu(prog, r);
    CHECK(r);
    CHECK(CU(cudaStreamCreate(&ss->stream)));
    ckpt_cuda_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.stream = ss->stream;
    cd.logger.fn = ckpt_log_stderr;
    r = ckpt_cuda_backend_create(&cd, &ss->be);
    if (r == CKPT_ERR_NO_DEVICE) exit_no_gpu(prog, r);
    CHECK(r);
    CHECK(BLAS(cublasCreate(&ss->blas)));
    CHECK(BLAS(cublasSetMathMode(ss->blas, cfg->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH)));
    CHECK(BLAS(cublasSetStream(ss->blas, ss->stream)));

    model_create(&ss->model, cfg->C, cfg->L, cfg->N, cfg->p_drop, 1, ss->blas);
    model_create(&ss->teacher, cfg->C, cfg->L, cfg->N, 0.0f, 0, ss->blas);
    Rng init_rng = { cfg->seed, 0 }, teacher_rng = { cfg->seed + 1, 0 };
    model_init(&ss->model, &ss->be, &init_rng, 0.1f, 0.0f, ss->stream);
    model_init(&ss->teacher, &ss->be, &teacher_rng, 1.0f, 0.1f, ss->stream);
    ss->init = (float *)dev_alloc(ss->model.n_params * sizeof(float));
    CHECK(CU(cudaMemcpyAsync(ss->init, ss->model.params, ss->model.n_params * sizeof(float),
                             cudaMemcpyDeviceToDevice, ss->stream)));

    measure_block(&ss->model, &ss->be, ss->stream, &ss->fwd_ms, &ss->bwd_ms);
    ss->stages = (ckpt_stage_desc *)xcalloc(cfg->L, sizeof(ckpt_stage_desc));
    for (int l = 0; l < cfg->L; l++) {
        ckpt_stage_desc *st = &ss->stages[l];
        st->name = "mlp";
        st->forward = stage_forward;
        st->backward = stage_backward;
        st->user = &ss->model;
        st->out_bytes = (size_t)cfg->N * cfg->C * sizeof(float);
        st->tape_bytes = ss->model.tape_bytes;
        st->bwd_workspace_bytes = ss->model.ws_bytes;
        st->fwd_time = ss->fwd_ms;      /* milliseconds: plan times are in ms too */
        st->bwd_time = ss->bwd_ms;
    }
    if (cfg->stream) {      /* pinned, so that the library's loads overlap compute */
        size_t bytes = ss->model.n_params * sizeof(float);
        CHECK(CU(cudaMallocHost((void **)&ss->host_params, bytes)));
        CHECK(CU(cudaMallocHost((void **)&ss->host_grads, bytes)));
        memset(ss->host_params, 0, bytes);
        memset(ss->host_grads, 0, bytes);
        for (int l = 0; l < cfg->L; l++) {
            ckpt_stage_desc *st = &ss->stages[l];
            st->host_params = ss->host_params + (size_t)l * ss->model.block_floats;
            st->param_bytes = ss->model.block_floats * sizeof(float);
            st->host_grads = ss->host_grads + (size_t)l * ss->model.block_floats;
        }
    }

    size_t nc = (size_t)cfg->N * cfg->C;
    Batch *b = &ss->batch;
    b->x = (float *)dev_alloc(nc * sizeof(float));
    b->target = (float *)dev_alloc(nc * sizeof(float));
    b->dy = (float *)dev_alloc(nc * sizeof(float));
    b->dx = (float *)dev_alloc(nc * sizeof(float));
    b->tmp[0] = (float *)dev_alloc(nc * sizeof(float));
    b->tmp[1] = (float *)dev_alloc(nc * sizeof(float));
    b->tape = dev_alloc(ss->teacher.tape_bytes);
    b->loss_part = (double *)dev_alloc(LOSS_BLOCKS * sizeof(double));
    b->loss = (double *)dev_alloc(sizeof(double));
    CHECK(CU(cudaStreamSynchronize(ss->stream)));
}

static void session_close(Session *ss)
{
    Batch *b = &ss->batch;
    CHECK(CU(cudaStreamSynchronize(ss->stream)));
    CHECK(CU(cudaFree(b->x))); CHECK(CU(cudaFree(b->target))); CHECK(CU(cudaFree(b->dy)));
    CHECK(CU(cudaFree(b->dx))); CHECK(CU(cudaFree(b->tmp[0]))); CHECK(CU(cudaFree(b->tmp[1])));
    CHECK(CU(cudaFree(b->tape))); CHECK(CU(cudaFree(b->loss_part))); CHECK(CU(cudaFree(b->loss)));
    CHECK(CU(cudaFree(ss->init)));
    if (ss->host_params) CHECK(CU(cudaFreeHost(ss->host_params)));
    if (ss->host_grads) CHECK(CU(cudaFreeHost(ss->host_grads)));
    model_destroy(&ss->model);
    model_destroy(&ss->teacher);
    free(ss->stages);
    CHECK(BLAS(cublasDestroy(ss->blas)));
    ckpt_cuda_backend_destroy(&ss->be);     /* after every chain that used it */
    CHECK(CU(cudaStreamDestroy(ss->stream)));
}

/* The SGD step on the host copy (--stream): p -= lr * g. */
static void host_sgd(float *p, const float *g, float lr, size_t n)
{
    for (size_t i = 0; i < n; i++) p[i] -= lr * g[i];
}

/* Trains the model from its initial weights under one plan (warmup + steps steps); fills run.
   Every run sees the same data and dropout. The step time is the median of the timed steps.
   With --stream the parameters and gradients are the pinned host copies, and the SGD update runs
   on the host after the timed part of the step. */
static void train(Session *ss, const ckpt_plan_desc *pd, Run *run)
{
    const Config *cfg = &ss->cfg;
    Model *m = &ss->model;
    Batch *b = &ss->batch;
    cudaStream_t s = ss->stream;
    size_t nc = (size_t)m->N * m->C, param_bytes = m->n_params * sizeof(float);
    memset(run, 0, sizeof *run);
    run->policy = pd->policy;
    if (ss->host_params)    /* synchronous: the host copy is complete before the chain loads it */
        CHECK(CU(cudaMemcpy(ss->host_params, ss->init, param_bytes, cudaMemcpyDeviceToHost)));
    else
        CHECK(CU(cudaMemcpyAsync(m->params, ss->init, param_bytes, cudaMemcpyDeviceToDevice, s)));

    ckpt_chain_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.stages = ss->stages;
    cd.n_stages = m->L;
    cd.input_bytes = nc * sizeof(float);
    cd.backend = &ss->be;
    cd.seed = cfg->seed;
    cd.logger.fn = log_errors;
    ckpt_chain *chain;
    size_t free0 = 0, free_min = 0, free_now = 0, total_mem = 0;
    CHECK(CU(cudaDeviceSynchronize()));
    CHECK(CU(cudaMemGetInfo(&free0, &total_mem)));
    free_min = free0;
    CHECK(ckpt_cuda_reset_peak(&ss->be));
    CHECK(ckpt_chain_create(&cd, &chain));
    ckpt_result r = ckpt_chain_plan(chain, pd, &run->info);
    if (r == CKPT_ERR_INFEASIBLE) {
        ckpt_chain_destroy(chain);
        return;
    }
    CHECK(r);
    run->feasible = 1;

    int total = cfg->warmup + cfg->steps;
    float *ms = (float *)xcalloc(total, sizeof(float));
    cudaEvent_t ev[2];
    CHECK(CU(cudaEventCreate(&ev[0])));
    CHECK(CU(cudaEventCreate(&ev[1])));
    Rng data = { cfg->seed ^ 0xda7aULL, 0 };
    for (int step = 0; step < total; step++) {
        CHECK(randn(&ss->be, &data, b->x, nc, 0.0f, 1.0f, s));
        CHECK(teacher_forward(&ss->teacher, b, s));

        /* the library loads host_grads for each backward and copies them back before it returns */
        if (ss->host_grads) memset(ss->host_grads, 0, param_bytes);
        CHECK(CU(cudaEventRecord(ev[0], s)));
        if (!ss->host_grads) CHECK(CU(cudaMemsetAsync(m->grads, 0, param_bytes, s)));
        const void *out;
        CHECK(ckpt_forward(chain, b->x, &out));
        CHECK(mse((const float *)out, b, nc, s));
        CHECK(ckpt_backward(chain, b->dy, b->dx));    /* ends with a synchronize */
        if (!ss->host_params) {
            sgd_kernel<<<blocks_for(m->n_params), THREADS, 0, s>>>(m->params, m->grads, cfg->lr, m->n_params);
            CHECK(LAUNCHED(sgd_kernel));
        }
        CHECK(CU(cudaEventRecord(ev[1], s)));
        CHECK(CU(cudaEventSynchronize(ev[1])));
        CHECK(CU(cudaEventElapsedTime(&ms[step], ev[0], ev[1])));
        /* every copy of the step is done (ckpt_backward synchronized the copy streams too), so
           the host parameters may change before the next forward loads them */
        if (ss->host_params) host_sgd(ss->host_params, ss->host_grads, cfg->lr, m->n_params);
        CHECK(CU(cudaMemcpyAsync(&run->loss, b->loss, sizeof(double), cudaMemcpyDeviceToHost, s)));
        CHECK(CU(cudaStreamSynchronize(s)));
        CHECK(CU(cudaMemGetInfo(&free_now, &total_mem)));
        if (free_now < free_min) free_min = free_now;
        if (step == 0) run->first_loss = run->loss;
    }
    run->ms_per_step = median(ms + cfg->warmup, cfg->steps);
    free(ms);
    CHECK(CU(cudaEventDestroy(ev[0])));
    CHECK(CU(cudaEventDestroy(ev[1])));

    CHECK(ckpt_chain_get_stats(chain, &run->stats));
    ckpt_cuda_stats ds;
    CHECK(ckpt_cuda_get_stats(&ss->be, &ds));
    run->device_peak = ds.peak_bytes;
    run->driver_bytes = free0 - free_min;
    run->grads = (float *)xcalloc(m->n_params + nc, sizeof(float));
    if (ss->host_grads) memcpy(run->grads, ss->host_grads, param_bytes);
    else CHECK(CU(cudaMemcpy(run->grads, m->grads, param_bytes, cudaMemcpyDeviceToHost)));
    CHECK(CU(cudaMemcpy(run->grads + m->n_params, b->dx, nc * sizeof(float), cudaMemcpyDeviceToHost)));
    ckpt_chain_destroy(chain);
}

/* Whether two runs' last gradients (parameters and input) are bit-identical. */
static int same_grads(const Session *ss, const Run *a, const Run *b)
{
    size_t n = ss->model.n_params + (size_t)ss->cfg.N * ss->cfg.C;
    return memcmp(a->grads, b->grads, n * sizeof(float)) == 0;
}

/* "every-k (k=3)" or the policy's name. */
static const char *run_name(const Run *r, char *buf, size_t size)
{
    if (r->policy == CKPT_POLICY_EVERY_K && r->feasible) snprintf(buf, size, "every-k (k=%d)", r->info.k);
    else snprintf(buf, size, "%s", ckpt_policy_name(r->policy));
    return buf;
}

/* Parses one flag with a value that the benchmark shares; 0 when the name is not one. */
static int parse_model_flag(Config *cfg, const char *a, const char *v)
{
    if (!strcmp(a, "--width")) cfg->C = atoi(v);
    else if (!strcmp(a, "--depth")) cfg->L = atoi(v);
    else if (!strcmp(a, "--batch")) cfg->N = atoi(v);
    else if (!strcmp(a, "--steps")) cfg->steps = atoi(v);
    else if (!strcmp(a, "--dropout")) cfg->p_drop = (float)atof(v);
    else if (!strcmp(a, "--lr")) cfg->lr = (float)atof(v);
    else if (!strcmp(a, "--seed")) cfg->seed = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--bandwidth")) cfg->bandwidth_gbs = atof(v);
    else return 0;
    return 1;
}

static int config_ok(const Config *cfg)
{
    return cfg->C >= 1 && cfg->L >= 1 && cfg->N >= 1 && cfg->steps >= 1 && cfg->p_drop >= 0.0f &&
           cfg->p_drop < 1.0f && cfg->budget_frac > 0.0 && cfg->bandwidth_gbs >= 0.0 &&
           cfg->bandwidth_gbs < 1e9;    /* NaN fails both */
}

/* ---- main ------------------------------------------------------------------------------------ */
#ifndef MLP_CUDA_NO_MAIN

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--width C] [--depth L] [--batch N] [--steps S] [--dropout P] [--lr LR]\n"
            "          [--seed S] [--budget-frac F | --budget BYTES] [--bandwidth GB_PER_S] [--stream]\n"
            "          [--tf32]\n"
            "defaults: --width 768 --depth 12 --batch 4096 --steps 10 (timed, after 1 warm-up step)\n"
            "          --dropout 0.1 --lr 0.1 --seed 42 --budget-frac 0.4 (of store-all's peak);\n"
            "          no offload row; parameters on the device; FP32 GEMMs (--tf32: TF32 tensor cores)\n",
            prog);
    exit(2);
}

static void parse_args(int argc, char **argv, Config *cfg)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--tf32")) { cfg->tf32 = 1; continue; }
        if (!strcmp(a, "--stream")) { cfg->stream = 1; continue; }
        if (i + 1 >= argc) usage(argv[0]);
        const char *v = argv[++i];
        if (parse_model_flag(cfg, a, v)) continue;
        if (!strcmp(a, "--budget-frac")) cfg->budget_frac = atof(v);
        else if (!strcmp(a, "--budget")) cfg->budget = strtoull(v, NULL, 10);
        else usage(argv[0]);
    }
    if (!config_ok(cfg)) usage(argv[0]);
}

int main(int argc, char **argv)
{
    Config cfg = default_config();
    parse_args(argc, argv, &cfg);
    Session ss;
    session_open(&ss, &cfg, "mlp_cuda");

    /* Store-all first: it is the reference, and the budget is a fraction of its peak. The offload
       row (last) runs only with --bandwidth. */
    const ckpt_policy policies[] = { CKPT_POLICY_STORE_ALL, CKPT_POLICY_EVERY_K, CKPT_POLICY_SQRT,
                                     CKPT_POLICY_GREEDY, CKPT_POLICY_OPTIMAL, CKPT_POLICY_OFFLOAD };
    enum { N_POLICIES = sizeof policies / sizeof policies[0] };
    int n_policies = cfg.bandwidth_gbs > 0.0 ? N_POLICIES : N_POLICIES - 1;
    Run runs[N_POLICIES];
    int match[N_POLICIES];      /* gradients bit-identical to store-all's */
    uint64_t budget = cfg.budget;
    for (int i = 0; i < n_policies; i++) {
        ckpt_plan_desc pd;
        memset(&pd, 0, sizeof pd);
        pd.policy = policies[i];
        pd.budget = i == 0 ? 0 : budget;    /* every-k gets k = 0: the best k that fits */
        if (pd.policy == CKPT_POLICY_OFFLOAD)
            pd.bandwidth = cfg.bandwidth_gbs * 1e9 / 1e3;   /* bytes per ms: stage times are in ms */
        train(&ss, &pd, &runs[i]);
        if (i == 0 && budget == 0)      /* at least 1: a budget of 0 would mean "no limit" */
            budget = (uint64_t)(cfg.budget_frac * (double)runs[0].info.peak) + 1;
        match[i] = runs[i].feasible && same_grads(&ss, &runs[i], &runs[0]);
        if (i > 0) { free(runs[i].grads); runs[i].grads = NULL; }   /* keep only the reference */
    }

    cudaDeviceProp prop;
    CHECK(CU(cudaGetDeviceProperties(&prop, 0)));
    printf("%s, %s GEMMs\n", prop.name, cfg.tf32 ? "TF32" : "FP32");
    printf("%d blocks of width %d (hidden %d), %d rows, dropout %.2f, %d+%d steps (warm-up+timed); "
           "one block: fwd %.3f ms, bwd %.3f ms\n", cfg.L, cfg.C, 4 * cfg.C, cfg.N, cfg.p_drop, cfg.warmup,
           cfg.steps, ss.fwd_ms, ss.bwd_ms);
    printf("budget %llu bytes (store-all peak %llu); loss at step 1: %.6e\n", (unsigned long long)budget,
           (unsigned long long)runs[0].info.peak, runs[0].first_loss);
    if (cfg.bandwidth_gbs > 0.0)
        printf("offload: planned for a link of %.3g GB/s each way; copies on the CUDA backend's copy streams "
               "to its pinned pool\n", cfg.bandwidth_gbs);
    if (cfg.stream)
        printf("parameter streaming: each block's %zu bytes of parameters and float gradients in pinned host "
               "memory; SGD on the host, after the timed part of each step\n",
               ss.model.block_floats * sizeof(float));
    printf("\n%-14s %12s %12s %12s %12s %12s %9s %7s %7s %12s", "policy", "planned B", "used B", "device B",
           "driver B", "pinned B", "ms/step", "pred x", "meas x", "final loss");
    if (cfg.stream) printf(" %10s %12s", "loads/step", "slot B");
    printf(" %s\n", "grads bit-identical");
    const Run *ref = &runs[0];
    int all_match = 1;
    for (int i = 0; i < n_policies; i++) {
        const Run *r = &runs[i];
        char name[32];
        run_name(r, name, sizeof name);
        if (!r->feasible) {
            printf("%-14s infeasible (min budget %llu)\n", name, (unsigned long long)r->info.min_budget);
            continue;
        }
        all_match &= match[i];
        printf("%-14s %12llu %12llu %12llu %12llu %12llu %9.3f %7.3f %7.3f %12.6e", name,
               (unsigned long long)r->info.peak, (unsigned long long)r->stats.arena_high_water,
               (unsigned long long)r->device_peak, (unsigned long long)r->driver_bytes,
               (unsigned long long)r->stats.pool_bytes, r->ms_per_step,
               r->info.time / r->info.store_all_time, r->ms_per_step / ref->ms_per_step, r->loss);
        if (cfg.stream)
            printf(" %10.2f %12llu", r->stats.steps ? (double)r->stats.param_loads / (double)r->stats.steps : 0.0,
                   (unsigned long long)r->stats.slot_bytes);
        printf(" %s\n", match[i] ? "yes" : "no");
        if (r->stats.arena_high_water > r->stats.arena_bytes || r->stats.arena_bytes != r->info.arena)
            fprintf(stderr, "warning: %s: arena bytes used %llu, allocated %llu, planned %llu\n", name,
                    (unsigned long long)r->stats.arena_high_water, (unsigned long long)r->stats.arena_bytes,
                    (unsigned long long)r->info.arena);
        /* the arena (and the streaming slots) is all we allocate through it */
        if (r->device_peak != r->stats.arena_bytes + r->stats.slot_bytes)
            fprintf(stderr, "warning: %s: device peak %llu differs from the arena's %llu bytes plus the slots' %llu\n",
                    name, (unsigned long long)r->device_peak, (unsigned long long)r->stats.arena_bytes,
                    (unsigned long long)r->stats.slot_bytes);
        if (i > 0 && r->info.peak > budget)
            fprintf(stderr, "warning: %s: planned peak %llu exceeds the budget %llu\n", name,
                    (unsigned long long)r->info.peak, (unsigned long long)budget);
    }
    printf("\n(device B: the bytes the CUDA backend allocated: the arena, planned peak plus the gaps of its "
           "fixed layout%s; driver B: the device memory cudaMemGetInfo saw taken while the chain lived, the "
           "driver's rounding included; pinned B: offload's pinned host pool%s)\n",
           cfg.stream ? ", plus the streaming slots (slot B)" : "",
           cfg.stream ? "; loads/step: parameter copies to the device per step (store-all: 2 x blocks)" : "");

    free(runs[0].grads);
    session_close(&ss);
    return all_match ? 0 : 1;
}
#endif /* MLP_CUDA_NO_MAIN */
