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

   Tape options (TAPE OPTIONS in ckpt.h), as in examples/mlp_cpu.c. A block's tape (option 0)
   holds the LayerNorm output, its mean and rstd, h (pre-GELU), a = GELU(h) and the dropout mask.
   Each block also declares option 1: the same tape without a, whose backward recomputes a from h
   on the device (gelu_kernel, the forward's gelu(), on the h the forward stored) into its
   workspace before use. Its forward still computes a, for W2, into the forward workspace (N x H
   floats; option 0's forward is given it too and leaves it unused). Option 1's bwd_extra is
   measured at start-up (measure_block): the median backward in option 1 less the median in
   option 0, with CUDA events, at least 0.001 ms. The optimal policy chooses options with its
   checkpoints; an F that keeps no tape runs option 1, the smaller. Two more rows check the
   options: "store-all opt1", store-all's schedule with every F keeping option 1
   (ckpt_chain_set_schedule; its gradients must be store-all's bits), and "optimal b=opt1", the
   optimal policy at that row's peak. Column opt1 counts the blocks whose F kept option 1; the
   lines under the table show each plan's option per block. --no-options declares no option (nor
   the forward workspace): the blocks as they were before.

   Build (from the repository root; needs the CUDA toolkit with cuBLAS):
       nvcc -O2 -arch=sm_90 -I. examples/mlp_cuda.cu -o mlp_cuda -lcublas
   Run:
       ./mlp_cuda [--width C] [--depth L] [--batch N] [--steps S] [--dropout P] [--lr LR]
                  [--seed S] [--budget-frac F | --budget BYTES] [--bandwidth GB_PER_S] [--stream]
                  [--tf32] [--no-options] [--graphs] [--check-recompute] [--grads-early]
                  [--grads-overwrite]
   Exit status 0: every policy's gradients equal store-all's; 1: one differs, or an error;
   77: no usable GPU (skipped).

   The rows: store-all (no budget: the reference), then every-k, sqrt, greedy and optimal at the
   budget (with tape options, "store-all opt1" after store-all and "optimal b=opt1" after
   optimal). With --bandwidth GB_PER_S, one more row at the same budget: the offload policy, planned
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
   from the GPU's): compare rows within one mode only. --grads-early sets
   ckpt_chain_desc.stream_grads_early (this program zeroes host_grads before each forward, never
   between ckpt_forward and ckpt_backward). --grads-overwrite sets stream_grads_overwrite: the
   step's gradients replace host_grads, so the program does not zero them, and no host_grads
   load crosses the link.

   --check-recompute runs every chain with the recompute check (RECOMPUTE CHECK in ckpt.h): each
   recomputed boundary and tape is checksummed on the device and compared with the first
   forward's; a mismatch fails the run, and so does a row that recomputes and compared nothing.

   bench/mlp_gpu_bench.cu reuses the model: it defines MLP_CUDA_NO_MAIN and includes this file;
   parse_model_flag and parse_model_switch parse the flags both programs take.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
        if (use_rng) ckpt_philox_at(&p, j, w);
        for (size_t i = 4 * j; i < 4 * j + 4 && i < n; i++) {
            float v = y[i] + b2[i % C];
            int keep = 1;
            if (use_rng) v = ckpt_dropout_from_u32(w[i - 4 * j], p_drop, scale, v, &keep);
            y[i] = x[i] + v;
            mask[i] = (uint8_t)keep;
        }
    }
}

/* a = GELU(h): tape option 1's recomputation in the backward. It applies the forward's gelu()
   to the h bias_gelu_kernel stored, so a gets the forward's bits. */
__global__ static void gelu_kernel(const float *h, float *a, size_t n)
{
    GRID_STRIDE(i, n) a[i] = gelu(h[i]);
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
    p.key = rng->key; p.base = rng->next; p.count = (n + 3) / 4; p.delta = NULL;
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
enum { N_OPTIONS = 2 };                                     /* tape options 0 and 1 (see model_create) */

typedef struct Model {
    int C, H, N, L;             /* width, hidden width (4C), rows, blocks */
    float p_drop, drop_scale;   /* drop_scale = ckpt_dropout_scale(p_drop), computed on the host */
    int rows_per_part, parts;   /* how column sums split the rows */
    size_t block_floats;        /* one block's parameters, padding included: carve's layout */
    size_t n_params;            /* floats, L * block_floats */
    float *params, *grads;      /* device, n_params floats each (grads NULL for the teacher) */
    Block *p, *g;               /* per block, into params and grads */
    cublasHandle_t blas;        /* shared; each call sets the stream of the callback */
    ckpt_layout_entry tape[N_OPTIONS][T_COUNT], ws[W_COUNT];
    size_t tape_bytes[N_OPTIONS], ws_bytes;
    size_t fws_bytes;           /* forward workspace: option 1's GELU output a (N x H floats) */
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
       it needs; the LN input x-hat is recomputed from the input and the mean/rstd.
       Tape option 0 keeps the LN output, mean, rstd, h (pre-GELU), a = GELU(h) and the dropout
       mask. Option 1 is the same tape without a, for a backward that recomputes a from h into
       W_DA (which it overwrites only after its last read of a): the backward workspace is the
       same for both. Its forward still needs a (for y = a W2^T) but may not keep it, so it writes
       a into the forward workspace (fws_bytes), which the stage declares only with options on. */
    size_t nc = (size_t)N * C, nh = (size_t)N * m->H;
    ckpt_layout_entry *t0 = m->tape[0], *t1 = m->tape[1];
    set_entry(&t0[T_LN], nc * sizeof(float));
    set_entry(&t0[T_MEAN], N * sizeof(float));
    set_entry(&t0[T_RSTD], N * sizeof(float));
    set_entry(&t0[T_H], nh * sizeof(float));
    set_entry(&t0[T_A], nh * sizeof(float));
    set_entry(&t0[T_MASK], nc);
    memcpy(t1, t0, sizeof m->tape[0]);
    set_entry(&t1[T_A], 0);     /* option 1: no a (its entry is empty, never used) */
    CHECK(ckpt_layout_compute(t0, T_COUNT, &m->tape_bytes[0]));
    CHECK(ckpt_layout_compute(t1, T_COUNT, &m->tape_bytes[1]));
    m->fws_bytes = nh * sizeof(float);
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

/* One block forward on stream s, keeping tape option `option` (0 or 1) in tape; option 1 writes
   a into fws (the forward workspace, N x H floats) instead. Every option computes the same y
   from the same random numbers. rng NULL: no dropout (the teacher, or p_drop = 0).
   Matrices are row-major; cuBLAS is column-major, so a row-major R x K matrix is its K x R
   transpose there, and each product below is written transposed (h^T = W1 ln^T, and so on). */
static ckpt_result block_forward(const Model *m, const Block *p, const float *x, float *y, void *tape,
                                 int option, float *fws, const ckpt_philox *rng, cudaStream_t s)
{
    const int N = m->N, C = m->C, H = m->H;
    const float one = 1.0f, zero = 0.0f;
    const ckpt_layout_entry *lay = m->tape[option];
    float *ln = (float *)ckpt_layout_ptr(tape, lay, T_LN), *h = (float *)ckpt_layout_ptr(tape, lay, T_H);
    float *mean = (float *)ckpt_layout_ptr(tape, lay, T_MEAN);
    float *rstd = (float *)ckpt_layout_ptr(tape, lay, T_RSTD);
    float *a = option == 0 ? (float *)ckpt_layout_ptr(tape, lay, T_A) : fws;
    uint8_t *mask = (uint8_t *)ckpt_layout_ptr(tape, lay, T_MASK);
    size_t nc = (size_t)N * C, nh = (size_t)N * H;
    ckpt_philox none = {0, 0, 0, NULL};

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

/* One block backward on stream s from a tape of option `option`: dx (may be NULL) = dL/dx; adds
   parameter gradients into g. */
static ckpt_result block_backward(const Model *m, const Block *p, const Block *g, const float *x,
                                  const void *tape, int option, const float *dy, float *dx, void *ws,
                                  cudaStream_t s)
{
    const int N = m->N, C = m->C, H = m->H;
    const float one = 1.0f, zero = 0.0f;
    const ckpt_layout_entry *lay = m->tape[option];
    const float *ln = (const float *)ckpt_layout_ptr(tape, lay, T_LN);
    const float *h = (const float *)ckpt_layout_ptr(tape, lay, T_H);
    const float *mean = (const float *)ckpt_layout_ptr(tape, lay, T_MEAN);
    const float *rstd = (const float *)ckpt_layout_ptr(tape, lay, T_RSTD);
    const float *a = (const float *)ckpt_layout_ptr(tape, lay, T_A);
    const uint8_t *mask = (const uint8_t *)ckpt_layout_ptr(tape, lay, T_MASK);
    float *dm = (float *)ckpt_layout_ptr(ws, m->ws, W_DM), *da = (float *)ckpt_layout_ptr(ws, m->ws, W_DA);
    float *dln = (float *)ckpt_layout_ptr(ws, m->ws, W_DLN), *part = (float *)ckpt_layout_ptr(ws, m->ws, W_PART);
    size_t nc = (size_t)N * C, nh = (size_t)N * H;

    dropout_backward_kernel<<<blocks_for(nc), THREADS, 0, s>>>(dy, mask, m->drop_scale, dm, nc);
    TRY(LAUNCHED(dropout_backward_kernel));
    TRY(colsum_add(m, dm, C, part, g->b2, s));
    if (option == 1) {      /* a = GELU(h) into da's space, which da = dm W2 below overwrites */
        gelu_kernel<<<blocks_for(nh), THREADS, 0, s>>>(h, da, nh);
        TRY(LAUNCHED(gelu_kernel));
        a = da;
    }
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

/* ctx->tape_option is the tape option to write (forward) or read (backward): 0, or 1 when the
   stage declares it (session_open); option 1's forward needs the forward workspace. */
static ckpt_result stage_forward(const ckpt_fwd_args *args)
{
    const Model *m = (const Model *)args->ctx->user;
    const Block *p = &m->p[args->ctx->stage];
    const int option = args->ctx->tape_option;
    Block slot;
    if (option < 0 || option >= N_OPTIONS || (option == 1 && !args->workspace)) return CKPT_ERR_BAD_ARGUMENT;
    if (args->params) { carve((float *)args->params, m->C, m->H, &slot); p = &slot; }
    ckpt_philox rng;
    if (m->p_drop > 0.0f)       /* a recomputation gets the same range back: same mask */
        TRY(ckpt_ctx_rng(args->ctx, ((uint64_t)m->N * m->C + 3) / 4, &rng));
    return block_forward(m, p, (const float *)args->in, (float *)args->out, args->tape, option,
                         (float *)args->workspace, m->p_drop > 0.0f ? &rng : NULL, (cudaStream_t)args->ctx->stream);
}

static ckpt_result stage_backward(const ckpt_bwd_args *args)
{
    const Model *m = (const Model *)args->ctx->user;
    int l = args->ctx->stage;
    const int option = args->ctx->tape_option;
    const Block *p = &m->p[l], *g = &m->g[l];
    Block pslot, gslot;
    if (option < 0 || option >= N_OPTIONS) return CKPT_ERR_BAD_ARGUMENT;
    if (args->params) { carve((float *)args->params, m->C, m->H, &pslot); p = &pslot; }
    if (args->param_grads) { carve((float *)args->param_grads, m->C, m->H, &gslot); g = &gslot; }
    return block_backward(m, p, g, (const float *)args->in, args->tape, option, (const float *)args->grad_out,
                          (float *)args->grad_in, args->workspace, (cudaStream_t)args->ctx->stream);
}

/* One block's times in ms, measured by measure_block. */
typedef struct BlockTimes {
    double fwd, bwd;            /* option 0's forward and backward: the planner's costs */
    double bwd1;                /* the backward from a tape of option 1 (0 without options) */
    double gelu;                /* gelu_kernel alone over N x H (cross-check of bwd1 - bwd; 0 without options) */
} BlockTimes;

/* One block's forward and backward times (medians of 7, after a warm-up rep), timed with events
   on stream s: the planner's costs. With options, each rep also runs the forward and backward
   in option 1, and gelu_kernel alone (the recompute that makes the difference). Leaves the
   gradients zero. */
static void measure_block(Model *m, const ckpt_backend *be, cudaStream_t s, int options, BlockTimes *t)
{
    enum { REPS = 8, EVENTS = 6 };
    size_t nc = (size_t)m->N * m->C, nh = (size_t)m->N * m->H;
    float *x = (float *)dev_alloc(nc * sizeof(float)), *y = (float *)dev_alloc(nc * sizeof(float));
    float *dx = (float *)dev_alloc(nc * sizeof(float));
    void *tape = dev_alloc(m->tape_bytes[0]), *ws = dev_alloc(m->ws_bytes);   /* option 0's tape is the larger */
    float *fws = options ? (float *)dev_alloc(m->fws_bytes) : NULL;
    Rng rng = { 12345, 0 };
    CHECK(randn(be, &rng, x, nc, 0.0f, 1.0f, s));
    ckpt_philox drop;
    drop.key = 1; drop.base = 0; drop.count = (nc + 3) / 4; drop.delta = NULL;
    const ckpt_philox *dropp = m->p_drop > 0.0f ? &drop : NULL;
    cudaEvent_t ev[EVENTS];
    for (int i = 0; i < EVENTS; i++) CHECK(CU(cudaEventCreate(&ev[i])));
    float f[REPS], b[REPS], b1[REPS], g1[REPS];
    for (int rep = 0; rep < REPS; rep++) {
        CHECK(CU(cudaEventRecord(ev[0], s)));
        CHECK(block_forward(m, &m->p[0], x, y, tape, 0, NULL, dropp, s));
        CHECK(CU(cudaEventRecord(ev[1], s)));
        CHECK(block_backward(m, &m->p[0], &m->g[0], x, tape, 0, y, dx, ws, s));
        CHECK(CU(cudaEventRecord(ev[2], s)));
        if (options) {
            CHECK(block_forward(m, &m->p[0], x, y, tape, 1, fws, dropp, s));
            CHECK(CU(cudaEventRecord(ev[3], s)));
            CHECK(block_backward(m, &m->p[0], &m->g[0], x, tape, 1, y, dx, ws, s));
            CHECK(CU(cudaEventRecord(ev[4], s)));
            gelu_kernel<<<blocks_for(nh), THREADS, 0, s>>>((const float *)ckpt_layout_ptr(tape, m->tape[1], T_H),
                                                           fws, nh);
            CHECK(LAUNCHED(gelu_kernel));
            CHECK(CU(cudaEventRecord(ev[5], s)));
        }
        CHECK(CU(cudaEventSynchronize(ev[options ? 5 : 2])));
        CHECK(CU(cudaEventElapsedTime(&f[rep], ev[0], ev[1])));
        CHECK(CU(cudaEventElapsedTime(&b[rep], ev[1], ev[2])));
        if (options) {
            CHECK(CU(cudaEventElapsedTime(&b1[rep], ev[3], ev[4])));
            CHECK(CU(cudaEventElapsedTime(&g1[rep], ev[4], ev[5])));
        }
    }
    t->fwd = median(f + 1, REPS - 1);     /* rep 0 warms up (cuBLAS loads its kernels) */
    t->bwd = median(b + 1, REPS - 1);
    t->bwd1 = options ? median(b1 + 1, REPS - 1) : 0.0;
    t->gelu = options ? median(g1 + 1, REPS - 1) : 0.0;
    CHECK(CU(cudaMemsetAsync(m->grads, 0, m->n_params * sizeof(float), s)));
    CHECK(CU(cudaStreamSynchronize(s)));
    for (int i = 0; i < EVENTS; i++) CHECK(CU(cudaEventDestroy(ev[i])));
    CHECK(CU(cudaFree(x))); CHECK(CU(cudaFree(y))); CHECK(CU(cudaFree(dx)));
    CHECK(CU(cudaFree(tape))); CHECK(CU(cudaFree(ws)));
    if (fws) CHECK(CU(cudaFree(fws)));
}

/* Tape option 1's bwd_extra from the measured times: what its backward takes beyond option 0's,
   at least 0.001 ms (a difference of two medians may come out below 0 when the recompute is
   small; 0 would make option 1 free for the planner). */
static double option1_extra(const BlockTimes *t)
{
    double d = t->bwd1 - t->bwd;
    return d > 1e-3 ? d : 1e-3;
}

/* ---- training -------------------------------------------------------------------------------- */

typedef struct Config {
    int C, L, N, steps, warmup, tf32;
    int stream;                 /* parameter streaming: parameters and gradients in pinned host memory */
    int no_options;             /* --no-options: declare no tape option (option 0 only, as before) */
    int graphs;                 /* --graphs: ckpt_chain_desc.graphs (CUDA graphs of both sweeps) */
    int check_recompute;        /* --check-recompute: ckpt_chain_desc.check_recompute */
    int grads_early;            /* --grads-early: ckpt_chain_desc.stream_grads_early (with --stream) */
    int grads_overwrite;        /* --grads-overwrite: ckpt_chain_desc.stream_grads_overwrite (with --stream) */
    int device;                 /* the CUDA device (0; examples/mlp_nccl.cu opens one per rank) */
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
    c.stream = 0; c.bandwidth_gbs = 0.0; c.no_options = 0;
    return c;
}

typedef struct Batch {          /* device buffers of one step; the caller owns X[0], G[0], G[n] */
    float *x, *target, *dy, *dx, *tmp[2];
    void *tape;                 /* the teacher's tape (scratch) */
    double *loss_part, *loss;
} Batch;

typedef struct Run {
    ckpt_policy policy;
    const char *label;          /* the table's name for it; NULL: the policy's */
    uint64_t budget;            /* the budget it was planned for (0: none) */
    int feasible;
    ckpt_plan_info info;
    ckpt_chain_stats stats;     /* also pool_bytes (offload), param_loads and slot_bytes (streaming) */
    uint64_t device_peak;       /* ckpt_cuda_stats.peak_bytes while this run's chain lived */
    uint64_t driver_bytes;      /* cudaMemGetInfo: free bytes before the chain less the least free after each step */
    double ms_per_step, first_loss, loss;
    double cpu_ms_per_step;     /* host CPU time (clock()) of ckpt_forward + loss + ckpt_backward, median */
    float *grads;               /* host: the last step's parameter gradients, then the input gradient */
    char *tape_opts;            /* per block, the tape option its F kept ('0' + option), L chars */
    int n_opt1;                 /* blocks whose F kept tape option 1 */
} Run;

static void run_free(Run *r)
{
    free(r->grads);
    free(r->tape_opts);
    r->grads = NULL;
    r->tape_opts = NULL;
}

/* Everything the runs share: the GPU, both models, the measured stage costs, the batch. */
typedef struct Session {
    Config cfg;
    cudaStream_t stream;
    ckpt_backend be;
    cublasHandle_t blas;
    Model model, teacher;
    float *init;                /* device: the model's initial parameters */
    double fwd_ms, bwd_ms;      /* one block, measured (option 0) */
    double bwd1_ms, gelu_ms;    /* with options: its backward in option 1, and gelu_kernel alone */
    double bwd_extra_ms;        /* tape option 1's bwd_extra: bwd1_ms - bwd_ms, at least 0.001 */
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
        TRY(block_forward(t, &t->p[l], in, out, b->tape, 0, NULL, NULL, s));
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
    CHECK(CU(cudaSetDevice(cfg->device)));     /* the stream, the models and cuBLAS live there */
    CHECK(CU(cudaStreamCreate(&ss->stream)));
    ckpt_cuda_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.device = cfg->device;
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

    BlockTimes bt;
    measure_block(&ss->model, &ss->be, ss->stream, !cfg->no_options, &bt);
    ss->fwd_ms = bt.fwd;
    ss->bwd_ms = bt.bwd;
    ss->bwd1_ms = bt.bwd1;
    ss->gelu_ms = bt.gelu;
    ss->bwd_extra_ms = cfg->no_options ? 0.0 : option1_extra(&bt);
    ss->stages = (ckpt_stage_desc *)xcalloc(cfg->L, sizeof(ckpt_stage_desc));
    for (int l = 0; l < cfg->L; l++) {
        ckpt_stage_desc *st = &ss->stages[l];
        st->name = "mlp";
        st->forward = stage_forward;
        st->backward = stage_backward;
        st->user = &ss->model;
        st->out_bytes = (size_t)cfg->N * cfg->C * sizeof(float);
        st->tape_bytes = ss->model.tape_bytes[0];
        st->bwd_workspace_bytes = ss->model.ws_bytes;      /* option 1 recomputes a inside it: no more */
        st->fwd_time = ss->fwd_ms;      /* milliseconds: plan times are in ms too */
        st->bwd_time = ss->bwd_ms;
        if (!cfg->no_options) {         /* option 1: no a */
            st->n_tape_options = 1;
            st->tape_options[0].tape_bytes = ss->model.tape_bytes[1];
            st->tape_options[0].bwd_extra = ss->bwd_extra_ms;
            st->fwd_workspace_bytes = ss->model.fws_bytes;  /* option 1's a; option 0's F gets it unused */
        }
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
    b->tape = dev_alloc(ss->teacher.tape_bytes[0]);
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

/* The tape option of the F that kept each stage's tape in the chain's plan, into run. (An F
   that keeps no tape runs the scratch option, the smallest tape: option 1 when declared.) */
static void plan_options(const ckpt_chain *chain, int L, Run *run)
{
    int n_ops;
    const ckpt_op *ops = ckpt_plan_ops(ckpt_chain_get_plan(chain), &n_ops);
    run->tape_opts = (char *)xcalloc((size_t)L + 1, 1);
    memset(run->tape_opts, '0', (size_t)L);
    for (int k = 0; k < n_ops; k++)
        if (ops[k].kind == CKPT_OP_F && ops[k].tape) run->tape_opts[ops[k].stage - 1] = (char)('0' + ops[k].option);
    run->n_opt1 = 0;
    for (int l = 0; l < L; l++) run->n_opt1 += run->tape_opts[l] == '1';
}

/* Trains the model from its initial weights under one plan (warmup + steps steps): pd, or with
   ops non-NULL the schedule ops (ckpt_chain_set_schedule); fills run. Every run sees the same
   data and dropout. The step time is the median of the timed steps. With --stream the
   parameters and gradients are the pinned host copies, and the SGD update runs on the host
   after the timed part of the step. */
static void train_plan(Session *ss, const ckpt_plan_desc *pd, const ckpt_op *ops, int n_ops, Run *run)
{
    const Config *cfg = &ss->cfg;
    Model *m = &ss->model;
    Batch *b = &ss->batch;
    cudaStream_t s = ss->stream;
    size_t nc = (size_t)m->N * m->C, param_bytes = m->n_params * sizeof(float);
    memset(run, 0, sizeof *run);
    run->policy = ops ? CKPT_POLICY_CUSTOM : pd->policy;
    run->budget = ops ? 0 : pd->budget;
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
    cd.graphs = cfg->graphs;
    cd.check_recompute = cfg->check_recompute;
    cd.stream_grads_early = cfg->grads_early;
    cd.stream_grads_overwrite = cfg->grads_overwrite;
    ckpt_chain *chain;
    size_t free0 = 0, free_min = 0, free_now = 0, total_mem = 0;
    CHECK(CU(cudaDeviceSynchronize()));
    CHECK(CU(cudaMemGetInfo(&free0, &total_mem)));
    free_min = free0;
    CHECK(ckpt_cuda_reset_peak(&ss->be));
    CHECK(ckpt_chain_create(&cd, &chain));
    ckpt_result r = ops ? ckpt_chain_set_schedule(chain, ops, n_ops, &run->info)
                        : ckpt_chain_plan(chain, pd, &run->info);
    if (r == CKPT_ERR_INFEASIBLE) {
        ckpt_chain_destroy(chain);
        return;
    }
    CHECK(r);
    run->feasible = 1;
    plan_options(chain, m->L, run);

    int total = cfg->warmup + cfg->steps;
    float *ms = (float *)xcalloc(total, sizeof(float)), *cpu = (float *)xcalloc(total, sizeof(float));
    cudaEvent_t ev[2];
    CHECK(CU(cudaEventCreate(&ev[0])));
    CHECK(CU(cudaEventCreate(&ev[1])));
    Rng data = { cfg->seed ^ 0xda7aULL, 0 };
    for (int step = 0; step < total; step++) {
        CHECK(randn(&ss->be, &data, b->x, nc, 0.0f, 1.0f, s));
        CHECK(teacher_forward(&ss->teacher, b, s));

        /* the library loads host_grads for each backward and copies them back before it returns;
           with --grads-overwrite it replaces them (last step's gradients stay until then) */
        if (ss->host_grads && !cfg->grads_overwrite) memset(ss->host_grads, 0, param_bytes);
        CHECK(CU(cudaEventRecord(ev[0], s)));
        if (!ss->host_grads) CHECK(CU(cudaMemsetAsync(m->grads, 0, param_bytes, s)));
        const void *out;
        clock_t c0 = clock();
        CHECK(ckpt_forward(chain, b->x, &out));
        CHECK(mse((const float *)out, b, nc, s));
        CHECK(ckpt_backward(chain, b->dy, b->dx));    /* ends with a synchronize */
        cpu[step] = (float)(1e3 * (double)(clock() - c0) / CLOCKS_PER_SEC);
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
    run->cpu_ms_per_step = median(cpu + cfg->warmup, cfg->steps);
    free(ms); free(cpu);
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

static void train(Session *ss, const ckpt_plan_desc *pd, Run *run)
{
    train_plan(ss, pd, NULL, 0, run);
}

/* Store-all's schedule with every F keeping tape option `option`: F(1..L), then B(L..1). */
static ckpt_op *store_all_ops(int L, int option, int *n_ops)
{
    ckpt_op *ops = (ckpt_op *)xcalloc(2 * (size_t)L, sizeof *ops);
    for (int i = 0; i < L; i++) {
        ops[i].kind = CKPT_OP_F; ops[i].stage = i + 1; ops[i].tape = 1; ops[i].option = option;
        ops[L + i].kind = CKPT_OP_B; ops[L + i].stage = L - i;
    }
    *n_ops = 2 * L;
    return ops;
}

/* Trains it under store-all's schedule with every F keeping tape option `option`, into run. */
static void train_store_all(Session *ss, int option, const char *label, Run *run)
{
    int n_ops;
    ckpt_op *ops = store_all_ops(ss->cfg.L, option, &n_ops);
    train_plan(ss, NULL, ops, n_ops, run);
    run->label = label;
    free(ops);
}

/* Whether two runs' last gradients (parameters and input) are bit-identical. */
static int same_grads(const Session *ss, const Run *a, const Run *b)
{
    size_t n = ss->model.n_params + (size_t)ss->cfg.N * ss->cfg.C;
    return memcmp(a->grads, b->grads, n * sizeof(float)) == 0;
}

/* The run's label, "every-k (k=3)" or the policy's name. */
static const char *run_name(const Run *r, char *buf, size_t size)
{
    if (r->label) snprintf(buf, size, "%s", r->label);
    else if (r->policy == CKPT_POLICY_EVERY_K && r->feasible) snprintf(buf, size, "every-k (k=%d)", r->info.k);
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

/* Parses one flag without a value that the benchmark shares; 0 when the name is not one. */
static int parse_model_switch(Config *cfg, const char *a)
{
    if (!strcmp(a, "--tf32")) cfg->tf32 = 1;
    else if (!strcmp(a, "--stream")) cfg->stream = 1;
    else if (!strcmp(a, "--no-options")) cfg->no_options = 1;
    else if (!strcmp(a, "--graphs")) cfg->graphs = 1;
    else if (!strcmp(a, "--check-recompute")) cfg->check_recompute = 1;
    else if (!strcmp(a, "--grads-early")) cfg->grads_early = 1;
    else if (!strcmp(a, "--grads-overwrite")) cfg->grads_overwrite = 1;
    else return 0;
    return 1;
}

static int config_ok(const Config *cfg)
{
    return cfg->C >= 1 && cfg->L >= 1 && cfg->N >= 1 && cfg->steps >= 1 && cfg->p_drop >= 0.0f &&
           cfg->p_drop < 1.0f && cfg->budget_frac > 0.0 && cfg->bandwidth_gbs >= 0.0 &&
           cfg->bandwidth_gbs < 1e9 &&  /* NaN fails both */
           !(cfg->check_recompute && cfg->graphs) && (!cfg->grads_early || cfg->stream) &&
           (!cfg->grads_overwrite || cfg->stream);
}

/* ---- main ------------------------------------------------------------------------------------ */
#ifndef MLP_CUDA_NO_MAIN

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--width C] [--depth L] [--batch N] [--steps S] [--dropout P] [--lr LR]\n"
            "          [--seed S] [--budget-frac F | --budget BYTES] [--bandwidth GB_PER_S] [--stream]\n"
            "          [--tf32] [--no-options] [--graphs] [--check-recompute] [--grads-early]\n"
            "          [--grads-overwrite]\n"
            "defaults: --width 768 --depth 12 --batch 4096 --steps 10 (timed, after 1 warm-up step)\n"
            "          --dropout 0.1 --lr 0.1 --seed 42 --budget-frac 0.4 (of store-all's peak);\n"
            "          no offload row; parameters on the device; FP32 GEMMs (--tf32: TF32 tensor cores);\n"
            "          tape option 1 declared (--no-options: option 0 only);\n"
            "          no CUDA graphs (--graphs: each chain captures its sweeps once and replays them);\n"
            "          --check-recompute: the recompute check (not with --graphs);\n"
            "          --grads-early: with --stream, host_grads load in the forward (stream_grads_early);\n"
            "          --grads-overwrite: with --stream, gradients replace host_grads (stream_grads_overwrite)\n",
            prog);
    exit(2);
}

static void parse_args(int argc, char **argv, Config *cfg)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (parse_model_switch(cfg, a)) continue;
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
    const int options = !cfg.no_options;

    /* The rows. Store-all first: it is the reference, and the budget is a fraction of its peak.
       With tape options, two more: store-all's schedule keeping every tape in option 1, and the
       optimal policy at that schedule's peak. The offload row (last) runs only with --bandwidth. */
    enum { MAX_ROWS = 8 };
    Run runs[MAX_ROWS];
    int match[MAX_ROWS];        /* gradients bit-identical to store-all's */
    int n_rows = 0, all1 = -1, opt1 = -1;   /* the rows "store-all opt1" and "optimal b=opt1" */
    uint64_t budget = cfg.budget;
    const ckpt_policy policies[] = { CKPT_POLICY_EVERY_K, CKPT_POLICY_SQRT, CKPT_POLICY_GREEDY, CKPT_POLICY_OPTIMAL };
    for (int i = -1; i < (int)(sizeof policies / sizeof policies[0]) + 2; i++) {
        ckpt_plan_desc pd;
        memset(&pd, 0, sizeof pd);
        Run *r = &runs[n_rows];
        if (i == -1) {                  /* store-all, no budget */
            pd.policy = CKPT_POLICY_STORE_ALL;
            train(&ss, &pd, r);
            if (budget == 0)            /* at least 1: a budget of 0 would mean "no limit" */
                budget = (uint64_t)(cfg.budget_frac * (double)r->info.peak) + 1;
        } else if (i < (int)(sizeof policies / sizeof policies[0])) {
            pd.policy = policies[i];
            pd.budget = budget;         /* every-k gets k = 0: the best k that fits */
            train(&ss, &pd, r);
        } else if (i == (int)(sizeof policies / sizeof policies[0])) {
            if (!options) continue;
            pd.policy = CKPT_POLICY_OPTIMAL;
            pd.budget = runs[all1].info.peak;
            train(&ss, &pd, r);
            r->label = "optimal b=opt1";
            opt1 = n_rows;
        } else {
            if (cfg.bandwidth_gbs <= 0.0) continue;
            pd.policy = CKPT_POLICY_OFFLOAD;
            pd.budget = budget;
            pd.bandwidth = cfg.bandwidth_gbs * 1e9 / 1e3;   /* bytes per ms: stage times are in ms */
            train(&ss, &pd, r);
        }
        match[n_rows] = r->feasible && same_grads(&ss, r, &runs[0]);
        if (n_rows > 0) { free(r->grads); r->grads = NULL; }    /* keep only the reference */
        n_rows++;
        if (i == -1 && options) {       /* store-all's schedule, every tape in option 1 */
            r = &runs[n_rows];
            train_store_all(&ss, 1, "store-all opt1", r);
            match[n_rows] = same_grads(&ss, r, &runs[0]);
            free(r->grads);
            r->grads = NULL;
            all1 = n_rows++;
        }
    }

    const Model *m = &ss.model;
    cudaDeviceProp prop;
    CHECK(CU(cudaGetDeviceProperties(&prop, 0)));
    printf("%s, %s GEMMs\n", prop.name, cfg.tf32 ? "TF32" : "FP32");
    printf("%d blocks of width %d (hidden %d), %d rows, dropout %.2f, %d+%d steps (warm-up+timed); "
           "one block: fwd %.3f ms, bwd %.3f ms\n", cfg.L, cfg.C, 4 * cfg.C, cfg.N, cfg.p_drop, cfg.warmup,
           cfg.steps, ss.fwd_ms, ss.bwd_ms);
    if (options) {
        printf("tape option 1 (no GELU output a, recomputed in backward): tape %zu bytes per block (option 0: %zu), "
               "forward workspace %zu bytes;\n", m->tape_bytes[1], m->tape_bytes[0], m->fws_bytes);
        printf("  bwd_extra %.3f ms: backward in option 1 %.3f ms less option 0's %.3f (medians, at least 0.001); "
               "cross-check: the GELU recompute alone %.3f ms\n", ss.bwd_extra_ms, ss.bwd1_ms, ss.bwd_ms, ss.gelu_ms);
    } else {
        printf("tape options off (--no-options): every block keeps option 0, %zu bytes of tape\n", m->tape_bytes[0]);
    }
    printf("budget %llu bytes (store-all peak %llu); loss at step 1: %.6e\n", (unsigned long long)budget,
           (unsigned long long)runs[0].info.peak, runs[0].first_loss);
    if (cfg.bandwidth_gbs > 0.0)
        printf("offload: planned for a link of %.3g GB/s each way; copies on the CUDA backend's copy streams "
               "to its pinned pool\n", cfg.bandwidth_gbs);
    if (cfg.stream)
        printf("parameter streaming: each block's %zu bytes of parameters and float gradients in pinned host "
               "memory; SGD on the host, after the timed part of each step\n",
               ss.model.block_floats * sizeof(float));
    if (cfg.graphs)
        printf("CUDA graphs: each chain captures its forward and backward sweeps in its first step and replays them\n");
    printf("\n%-14s %12s %12s %12s %12s %12s %9s %7s %7s %4s %12s", "policy", "planned B", "used B", "device B",
           "driver B", "pinned B", "ms/step", "pred x", "meas x", "opt1", "final loss");
    if (cfg.stream) printf(" %10s %12s", "loads/step", "slot B");
    printf(" %s\n", "grads bit-identical");
    const Run *ref = &runs[0];
    int all_match = 1;
    for (int i = 0; i < n_rows; i++) {
        const Run *r = &runs[i];
        char name[32];
        run_name(r, name, sizeof name);
        if (!r->feasible) {
            printf("%-14s infeasible (min budget %llu)\n", name, (unsigned long long)r->info.min_budget);
            continue;
        }
        all_match &= match[i];
        printf("%-14s %12llu %12llu %12llu %12llu %12llu %9.3f %7.3f %7.3f %4d %12.6e", name,
               (unsigned long long)r->info.peak, (unsigned long long)r->stats.arena_high_water,
               (unsigned long long)r->device_peak, (unsigned long long)r->driver_bytes,
               (unsigned long long)r->stats.pool_bytes, r->ms_per_step,
               r->info.time / ref->info.time, r->ms_per_step / ref->ms_per_step, r->n_opt1, r->loss);
        if (cfg.stream)
            printf(" %10.2f %12llu", r->stats.steps ? (double)r->stats.param_loads / (double)r->stats.steps : 0.0,
                   (unsigned long long)r->stats.slot_bytes);
        printf(" %s\n", match[i] ? "yes" : "no");
        /* (ckpt_chain_set_schedule's info has no arena: 0) */
        if (r->stats.arena_high_water > r->stats.arena_bytes ||
            (r->policy != CKPT_POLICY_CUSTOM && r->stats.arena_bytes != r->info.arena))
            fprintf(stderr, "warning: %s: arena bytes used %llu, allocated %llu, planned %llu\n", name,
                    (unsigned long long)r->stats.arena_high_water, (unsigned long long)r->stats.arena_bytes,
                    (unsigned long long)r->info.arena);
        /* the arena (and the streaming slots) is all we allocate through it */
        if (r->device_peak != r->stats.arena_bytes + r->stats.slot_bytes)
            fprintf(stderr, "warning: %s: device peak %llu differs from the arena's %llu bytes plus the slots' %llu\n",
                    name, (unsigned long long)r->device_peak, (unsigned long long)r->stats.arena_bytes,
                    (unsigned long long)r->stats.slot_bytes);
        if (r->budget && r->info.peak > r->budget)
            fprintf(stderr, "warning: %s: planned peak %llu exceeds the budget %llu\n", name,
                    (unsigned long long)r->info.peak, (unsigned long long)r->budget);
    }
    printf("\n(device B: the bytes the CUDA backend allocated: the arena, planned peak plus the gaps of its "
           "fixed layout%s; driver B: the device memory cudaMemGetInfo saw taken while the chain lived, the "
           "driver's rounding included; pinned B: offload's pinned host pool%s)\n",
           cfg.stream ? ", plus the streaming slots (slot B)" : "",
           cfg.stream ? "; loads/step: parameter copies to the device per step (store-all: 2 x blocks)" : "");
    if (options) {
        /* The option-1 schedule must keep option 1 everywhere; the optimal policy at its peak may
           not be slower than it (it is one of the schedules optimal searches). */
        const Run *a1 = &runs[all1], *o1 = &runs[opt1];
        if (a1->n_opt1 != cfg.L) {
            fprintf(stderr, "error: store-all opt1 kept option 1 in %d of %d blocks\n", a1->n_opt1, cfg.L);
            all_match = 0;
        }
        if (o1->feasible && o1->info.time > a1->info.time * (1.0 + 1e-12))
            fprintf(stderr, "warning: optimal at store-all opt1's peak predicts %.6f ms, store-all opt1 %.6f ms\n",
                    o1->info.time, a1->info.time);
        printf("\nopt1: blocks whose F kept tape option 1. store-all opt1: store-all's schedule with every F keeping "
               "option 1\n(ckpt_chain_set_schedule); optimal b=opt1: the optimal policy at that schedule's peak.\n");
        printf("tape option each block's F kept (block 1 first; an F that keeps no tape runs option 1, the "
               "smaller):\n");
        for (int i = 0; i < n_rows; i++) {
            char name[32];
            run_name(&runs[i], name, sizeof name);
            if (runs[i].feasible) printf("  %-14s %s\n", name, runs[i].tape_opts);
        }
    }

    if (cfg.check_recompute) {
        printf("recompute check: comparisons per step (ckpt_chain_stats.recompute_checks / steps):\n");
        for (int i = 0; i < n_rows; i++) {
            char name[32];
            run_name(&runs[i], name, sizeof name);
            if (!runs[i].feasible || !runs[i].stats.steps) continue;
            printf("  %-14s %.2f\n", name, (double)runs[i].stats.recompute_checks / (double)runs[i].stats.steps);
            if (runs[i].info.n_recomputed > 0 && runs[i].stats.recompute_checks == 0) {
                fprintf(stderr, "error: %s recomputes %d F ops a step and compared none\n", name,
                        runs[i].info.n_recomputed);
                all_match = 0;
            }
        }
    }

    for (int i = 0; i < n_rows; i++) run_free(&runs[i]);
    session_close(&ss);
    return all_match ? 0 : 1;
}
#endif /* MLP_CUDA_NO_MAIN */
