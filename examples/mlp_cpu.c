/* mlp_cpu.c -- train a stack of transformer MLP blocks with ckpt.h on the CPU.

   Each block is one ckpt stage, on activations of N rows by C columns:

       y = x + Dropout(W2 * GELU(W1 * LN(x) + b1) + b2)        (hidden width H = 4C)

   The model learns to imitate a fixed random "teacher" of the same shape (MSE loss, SGD). The
   program trains it from the same weights on the same data once per planner policy and prints,
   for each, the planned and measured memory, the step time, and whether the last step's
   gradients are bit-identical to storing every activation (exit status 1 if any are not). The
   stage times every plan uses are measured first by the library (ckpt_chain_measure: one warm-up
   and three timed store-all steps, medians per block).

   Tape options (TAPE OPTIONS in ckpt.h): selective recomputation inside a block. A block's tape
   (option 0) holds the LayerNorm output, its mean and rstd, h (pre-GELU), a = GELU(h) and the
   dropout mask: 37 N C bytes. Each block also declares three smaller options, whose backward
   recomputes what they leave out (block_recompute) with the forward's own functions, so with
   the same bits: option 1 keeps no a (21 N C bytes) and recomputes GELU; option 2 keeps no a
   and no LN output (17 N C bytes) and recomputes LN from the input and the kept statistics too;
   option 3 keeps only the statistics and the mask (N C bytes) and also recomputes h = LN W1^T +
   b1, one of the forward's two matrix products. Their forward writes what it does not keep into
   a forward workspace (N x H floats) or the output buffer, and option 3's backward needs room
   for h (N x H floats more in the backward workspace, declared only with options). Each option's
   bwd_extra, the time of its recomputation, is measured at start-up by timing block_recompute
   alone (measure_recompute: the host clock around each call, the median, as ckpt_chain_measure
   times callbacks); the backward measured under store-all's schedule kept in each option is
   printed beside it as a cross-check. The optimal policy chooses options with its checkpoints;
   an F that keeps no tape (a recomputation's first pass) runs option 3, the smallest. Six rows
   check the options: for each option k of 1-3, "store-all optk", store-all's schedule with every
   F keeping option k (its gradients must be store-all's bits; the row shows what option k costs
   in time and saves in memory), and "optimal b=optk", the optimal policy at that row's peak.
   Column "options" counts the blocks whose F kept options 0/1/2/3; the lines under the table
   show each plan's option per block.
   --no-options declares no option (nor the forward workspace, nor the backward's room for h):
   the blocks as they were before.
   --check-recompute trains every row with ckpt_chain_desc.check_recompute (RECOMPUTE CHECK in
   ckpt.h): each step checksums the boundaries and tapes of its first forward and compares every
   recomputation; the table's times then include that cost (the stage times are measured without
   it), and a line under each row gives the buffers compared per step.

   Build (from the repository root), with OpenBLAS and OpenMP:
       cc -std=c11 -O2 -fopenmp -DCKPT_EXAMPLE_OPENBLAS examples/mlp_cpu.c -o mlp_cpu -lopenblas -lm
   or without either (built-in SGEMM, one thread): cc -std=c11 -O2 examples/mlp_cpu.c -o mlp_cpu -lm
   Run:
       ./mlp_cpu [--width C] [--depth L] [--batch N] [--steps S] [--dropout P] [--lr LR]
                 [--seed S] [--budget-frac F | --budget BYTES] [--bandwidth GB_PER_S] [--stream 1]
                 [--threads T] [--no-options] [--check-recompute]

   --threads T (default: $OPENBLAS_NUM_THREADS if set, else 1) gives the BLAS and the example's
   own loops T threads (example_set_threads). The loops are split over rows, or over columns for
   the sums over rows (bias and LayerNorm gradients), so every sum runs in the same order at any
   thread count: the results are the same bits at every T. The step time is reported both as wall
   time and as the process's CPU time (CLOCK_PROCESS_CPUTIME_ID, all threads).

   With --bandwidth, one more row: the offload policy, on the CPU backend's copy engine (worker
   threads copying to "pinned" host memory, throttled to that many GB/s each way), so boundaries
   and tapes really move out and back while the blocks compute. With --stream 1 every row streams
   the blocks' parameters: each block's parameters and gradients stay in the model's host
   buffers, the stages get the library's copies (args->params, args->param_grads), and the
   table also shows the parameter loads per step.
*/
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "blas.h"              /* cblas_sgemm (OpenBLAS or a built-in one), threads */

#define CKPT_IMPLEMENTATION
#include "../ckpt.h"
#include "../backends/ckpt_cpu.h"

#define CHECK(call) check((call), #call, __FILE__, __LINE__)

static void check(ckpt_result r, const char *what, const char *file, int line)
{
    if (r == CKPT_OK) return;
    fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, what, ckpt_result_string(r),
            ckpt_result_description(r));
    exit(1);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p) { fprintf(stderr, "out of memory (%zu x %zu bytes)\n", n, size); exit(1); }
    return p;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* CPU time of the whole process (every thread), in ms. */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* The thread count when --threads is not given: $OPENBLAS_NUM_THREADS if set (and >= 1), else 1. */
static int default_threads(void)
{
    const char *e = getenv("OPENBLAS_NUM_THREADS");
    int n = e ? atoi(e) : 0;
    return n >= 1 ? n : 1;
}

/* Errors to stderr, except "infeasible": the table reports those. */
static void log_errors(const char *tag, ckpt_log_level level, ckpt_result item, const char *message,
                       const char *file, int line, void *user)
{
    if (item != CKPT_ERR_INFEASIBLE) ckpt_log_stderr(tag, level, item, message, file, line, user);
}

/* ---- random numbers: the library's Philox, also for weights and data ------------------------- */

typedef struct Rng { uint64_t key, next; } Rng;   /* a key and the next unused Philox block */

static void randn(Rng *rng, float *out, size_t n, float mean, float std)
{
    ckpt_philox p = { .key = rng->key, .base = rng->next, .count = (n + 1) / 2 };
    for (size_t i = 0; i < n; i++) {    /* Box-Muller, one normal from two uniforms */
        float u1 = ckpt_philox_uniform(&p, 2 * i), u2 = ckpt_philox_uniform(&p, 2 * i + 1);
        out[i] = mean + std * sqrtf(-2.0f * logf(1.0f - u1)) * cosf(6.28318531f * u2);
    }
    rng->next += p.count;
}

/* ---- the model ------------------------------------------------------------------------------- */

/* One block's parameters, or their gradients: pointers into one flat buffer, as in llm.c. */
typedef struct Block { float *ln_g, *ln_b, *w1, *b1, *w2, *b2; } Block;

enum { T_LN, T_MEAN, T_RSTD, T_H, T_A, T_MASK, T_COUNT };   /* pieces of a stage's tape */
enum { W_DM, W_DA, W_DLN, W_H, W_COUNT };                   /* pieces of the backward workspace */
enum { N_OPTIONS = 4 };                                     /* tape options 0..3 (see model_create) */

typedef struct Model {
    int C, H, N, L;             /* width, hidden width (4C), rows, blocks */
    float p_drop;
    size_t n_params;
    float *params, *grads;      /* n_params floats each */
    Block *p, *g;               /* per block, into params and grads */
    ckpt_layout_entry tape[N_OPTIONS][T_COUNT], ws[W_COUNT];
    size_t tape_bytes[N_OPTIONS], ws_bytes;
    size_t fws_bytes;           /* forward workspace of options 1-3: a, or h then a (N x H floats) */
} Model;

static float *carve(float *base, int C, int H, Block *b)
{
    b->ln_g = base; base += C;
    b->ln_b = base; base += C;
    b->w1 = base;   base += (size_t)H * C;    /* H x C: h = ln * W1^T */
    b->b1 = base;   base += H;
    b->w2 = base;   base += (size_t)C * H;    /* C x H */
    b->b2 = base;   base += C;
    return base;
}

/* options: whether the blocks declare tape options 1-3 (the backward workspace then has room
   for option 3's h). */
static void model_create(Model *m, int C, int L, int N, float p_drop, int options)
{
    m->C = C; m->H = 4 * C; m->N = N; m->L = L; m->p_drop = p_drop;
    m->n_params = (size_t)L * (3 * (size_t)C + m->H + 2 * (size_t)m->H * C);
    m->params = xcalloc(m->n_params, sizeof(float));
    m->grads = xcalloc(m->n_params, sizeof(float));
    m->p = xcalloc(L, sizeof(Block));
    m->g = xcalloc(L, sizeof(Block));
    float *pp = m->params, *gp = m->grads;
    for (int l = 0; l < L; l++) {
        pp = carve(pp, C, m->H, &m->p[l]);
        gp = carve(gp, C, m->H, &m->g[l]);
    }
    /* The backward sees only the input, the tape and grad_out, so the tape keeps everything else
       it needs; the LN input x-hat is recomputed from the input and the mean/rstd.
       Tape option 0 keeps the LN output, mean, rstd, h (pre-GELU), a = GELU(h) and the dropout
       mask: 37 N C bytes and the row statistics (H = 4C). The other options (TAPE OPTIONS in
       ckpt.h) keep less, and their backward recomputes the rest from the input x and the tape
       (block_recompute), with the forward's own functions, so with the same bits:
         1: no a (21 N C bytes, 43% less): a = GELU(h);
         2: no a, no LN output (17 N C bytes): LN from x, mean and rstd; then a;
         3: only mean, rstd and the mask (N C bytes): LN; h = LN W1^T + b1 (one of the forward's
            two matrix products); a.
       Their forward still needs a (for y = a W2^T) but may not keep it, so it writes a (option 3:
       h, then a over it) into the forward workspace (fws_bytes, N x H floats), and the LN output
       of options 2 and 3 into y (out), which y = a W2^T overwrites. The stage declares that
       workspace only with options. */
    size_t nc = (size_t)N * C, nh = (size_t)N * m->H;
    ckpt_layout_entry *t0 = m->tape[0];
    t0[T_LN] = (ckpt_layout_entry){ .bytes = nc * sizeof(float), .align = 64 };
    t0[T_MEAN] = (ckpt_layout_entry){ .bytes = N * sizeof(float), .align = 64 };
    t0[T_RSTD] = (ckpt_layout_entry){ .bytes = N * sizeof(float), .align = 64 };
    t0[T_H] = (ckpt_layout_entry){ .bytes = nh * sizeof(float), .align = 64 };
    t0[T_A] = (ckpt_layout_entry){ .bytes = nh * sizeof(float), .align = 64 };
    t0[T_MASK] = (ckpt_layout_entry){ .bytes = nc, .align = 64 };
    for (int o = 1; o < N_OPTIONS; o++) memcpy(m->tape[o], t0, sizeof m->tape[0]);
    m->tape[1][T_A].bytes = 0;  /* an empty entry: never used */
    m->tape[2][T_A].bytes = m->tape[2][T_LN].bytes = 0;
    m->tape[3][T_A].bytes = m->tape[3][T_LN].bytes = m->tape[3][T_H].bytes = 0;
    for (int o = 0; o < N_OPTIONS; o++) CHECK(ckpt_layout_compute(m->tape[o], T_COUNT, &m->tape_bytes[o]));
    m->fws_bytes = nh * sizeof(float);
    /* the backward: dm, da (dL/da, then dL/dh; a recomputed there first), dln (option 2 and 3's
       LN output recomputed there first) and, with options, option 3's h */
    m->ws[W_DM] = (ckpt_layout_entry){ .bytes = nc * sizeof(float), .align = 64 };
    m->ws[W_DA] = (ckpt_layout_entry){ .bytes = nh * sizeof(float), .align = 64 };
    m->ws[W_DLN] = (ckpt_layout_entry){ .bytes = nc * sizeof(float), .align = 64 };
    m->ws[W_H] = (ckpt_layout_entry){ .bytes = options ? nh * sizeof(float) : 0, .align = 64 };
    CHECK(ckpt_layout_compute(m->ws, W_COUNT, &m->ws_bytes));
}

static void model_destroy(Model *m)
{
    free(m->params); free(m->grads); free(m->p); free(m->g);
}

/* LN gain 1; W1 ~ N(0, 1/C), W2 ~ N(0, (w2_scale)^2/H); biases ~ N(0, bias_std^2). */
static void model_init(Model *m, Rng *rng, float w2_scale, float bias_std)
{
    for (int l = 0; l < m->L; l++) {
        Block *b = &m->p[l];
        for (int c = 0; c < m->C; c++) b->ln_g[c] = 1.0f;
        randn(rng, b->ln_b, m->C, 0.0f, bias_std);
        randn(rng, b->w1, (size_t)m->H * m->C, 0.0f, 1.0f / sqrtf((float)m->C));
        randn(rng, b->b1, m->H, 0.0f, bias_std);
        randn(rng, b->w2, (size_t)m->C * m->H, 0.0f, w2_scale / sqrtf((float)m->H));
        randn(rng, b->b2, m->C, 0.0f, bias_std);
    }
}

/* ---- the block's elementwise loops ------------------------------------------------------------
   Contiguous inner loops over a row's columns, the row's invariants hoisted, no branches inside
   but selects, EXAMPLE_SIMD on the elementwise ones (an OpenMP simd pragma when built with
   OpenMP). Not on the GELU loops: expf is a libm call, which GCC 12 and clang 14 do not vectorise
   without -ffast-math (clang warns about a simd loop it cannot vectorise; a branch-free
   polynomial exp tried instead was not vectorised either and was slower than glibc's expf), so
   at one thread these loops cost what the plain ones did; the gain is threading. Rows are
   independent, so the loops over rows are EXAMPLE_PARALLEL_FOR; the sums over rows (bias and LayerNorm parameter
   gradients) are split over columns instead and add the rows in order, and the sums within a row
   (LayerNorm's mean, variance and backward sums) run in a fixed order of their own (row_sum), so
   no result depends on the thread count. */

/* GELU, tanh approximation. tanh(u) = 1 - 2 / (1 + e^2u): libm's tanhf is 3x slower here. */
#define GELU_K 0.7978845608f    /* sqrt(2/pi) */

static inline float gelu_tanh(float x)
{
    return 1.0f - 2.0f / (1.0f + expf(2.0f * GELU_K * (x + 0.044715f * x * x * x)));
}

static inline float gelu(float x) { return 0.5f * x * (1.0f + gelu_tanh(x)); }

static inline float gelu_grad(float x)
{
    float t = gelu_tanh(x);
    float du = GELU_K * (1.0f + 3.0f * 0.044715f * x * x);     /* d(tanh argument)/dx */
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

/* Sums within a row, c < n, in a fixed order: eight running sums (term c into sum c % 8), added
   pairwise at the end. row_sum: of a[c]; row_sumsq: of (a[c] - mu)^2; row_dot: of a[c] * b[c]. */
#define ROW_SUM8(term)                                                                          \
    float s[8] = { 0 };                                                                         \
    int c = 0;                                                                                  \
    for (; c + 8 <= n; c += 8)                                                                  \
        for (int j = 0; j < 8; j++) { const int k = c + j; s[j] += (term); }                   \
    for (; c < n; c++) { const int k = c; s[c & 7] += (term); }                                 \
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))

static inline float row_sum(const float *a, int n) { ROW_SUM8(a[k]); }
static inline float row_sumsq(const float *a, float mu, int n) { ROW_SUM8((a[k] - mu) * (a[k] - mu)); }
static inline float row_dot(const float *a, const float *b, int n) { ROW_SUM8(a[k] * b[k]); }

enum { COL_BLOCK = 64 };        /* columns per task in the sums over rows */

/* g[c] += sum over r < rows of d[r * n + c] (c < n), the rows in order; threads split the columns. */
static void add_column_sums(float *g, const float *d, int rows, int n)
{
    const int blocks = (n + COL_BLOCK - 1) / COL_BLOCK;
    EXAMPLE_PARALLEL_FOR
    for (int b = 0; b < blocks; b++) {
        const int c0 = b * COL_BLOCK, c1 = c0 + COL_BLOCK < n ? c0 + COL_BLOCK : n;
        for (int r = 0; r < rows; r++) {
            const float *dr = d + (size_t)r * n;
            EXAMPLE_SIMD
            for (int c = c0; c < c1; c++) g[c] += dr[c];
        }
    }
}

/* a = GELU(h) for rows x H values (a may be h). The forward's GELU and the backward's
   recomputation (options 1-3) both call this one function, so they run the same code and give
   the same bits. */
static void gelu_rows(const float *h, float *a, int rows, int H)
{
    EXAMPLE_PARALLEL_FOR
    for (int r = 0; r < rows; r++) {
        const float *hr = h + (size_t)r * H;
        float *ar = a + (size_t)r * H;
        for (int j = 0; j < H; j++) ar[j] = gelu(hr[j]);
    }
}

/* The LayerNorm output ln of x (N x C). With stats, each row's mean and rstd are computed first
   into mean and rstd (the forward); without, they are read from there (options 2 and 3's
   backward). One function for both, so the recomputed ln has the forward's bits. */
static void ln_rows(const Model *m, const Block *p, const float *x, float *mean, float *rstd, float *ln,
                    int stats)
{
    const int N = m->N, C = m->C;
    const float *ln_g = p->ln_g, *ln_b = p->ln_b;
    EXAMPLE_PARALLEL_FOR
    for (int r = 0; r < N; r++) {
        const float *xr = x + (size_t)r * C;
        float *lr = ln + (size_t)r * C;
        if (stats) {
            const float mu = row_sum(xr, C) / C;
            const float var = row_sumsq(xr, mu, C);
            mean[r] = mu;
            rstd[r] = 1.0f / sqrtf(var / C + 1e-5f);
        }
        const float mu = mean[r], rs = rstd[r];
        EXAMPLE_SIMD
        for (int c = 0; c < C; c++) lr[c] = (xr[c] - mu) * rs * ln_g[c] + ln_b[c];
    }
}

/* h = ln W1^T + b1 (N x H): the forward's, and option 3's backward recomputation. */
static void linear1(const Model *m, const Block *p, const float *ln, float *h)
{
    const int N = m->N, C = m->C, H = m->H;
    const float *b1 = p->b1;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, H, C, 1.0f, ln, C, p->w1, C, 0.0f, h, H);
    EXAMPLE_PARALLEL_FOR
    for (int r = 0; r < N; r++) {
        float *hr = h + (size_t)r * H;
        EXAMPLE_SIMD
        for (int j = 0; j < H; j++) hr[j] += b1[j];
    }
}

/* One block forward, keeping tape option `option` (0..3, see model_create) in tape; options 1-3
   write a (option 3: h, then a over it) into fws (the forward workspace, N x H floats), and
   options 2 and 3 the LN output into y until y = a W2^T overwrites it. Every option computes the
   same y from the same random numbers: only what stays in the tape differs. rng NULL: no dropout
   (the teacher, or p_drop = 0). */
static void block_forward(const Model *m, const Block *p, const float *x, float *y, void *tape,
                          int option, float *fws, const ckpt_philox *rng)
{
    const int N = m->N, C = m->C, H = m->H;
    const ckpt_layout_entry *lay = m->tape[option];
    float *ln = option < 2 ? ckpt_layout_ptr(tape, lay, T_LN) : y;
    float *h = option < 3 ? ckpt_layout_ptr(tape, lay, T_H) : fws;
    float *mean = ckpt_layout_ptr(tape, lay, T_MEAN);
    float *rstd = ckpt_layout_ptr(tape, lay, T_RSTD);
    float *a = option == 0 ? ckpt_layout_ptr(tape, lay, T_A) : fws;
    uint8_t *mask = ckpt_layout_ptr(tape, lay, T_MASK);
    const float *b2 = p->b2;
    /* Dropout row by row needs each row to start on a Philox block (4 values): C % 4 == 0. */
    const int drop_rows = rng && C % 4 == 0, drop_all = rng && !drop_rows;

    ln_rows(m, p, x, mean, rstd, ln, 1);
    linear1(m, p, ln, h);
    gelu_rows(h, a, N, H);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, C, H,       /* y = a W2^T */
                1.0f, a, H, p->w2, H, 0.0f, y, C);
    EXAMPLE_PARALLEL_FOR
    for (int r = 0; r < N; r++) {
        const size_t off = (size_t)r * C;
        float *yr = y + off;
        const float *xr = x + off;
        EXAMPLE_SIMD
        for (int c = 0; c < C; c++) yr[c] += b2[c];
        if (drop_all) continue;     /* dropout and the residual after this loop */
        if (drop_rows) {            /* the same values as one call over all rows */
            ckpt_philox sub = *rng;
            sub.base += off / 4;
            sub.count -= off / 4;
            ckpt_philox_dropout(&sub, m->p_drop, yr, yr, mask + off, (size_t)C);
        } else {
            memset(mask + off, 1, (size_t)C);
        }
        EXAMPLE_SIMD
        for (int c = 0; c < C; c++) yr[c] += xr[c];
    }
    if (drop_all) {
        ckpt_philox_dropout(rng, m->p_drop, y, y, mask, (size_t)N * C);
        for (size_t i = 0; i < (size_t)N * C; i++) y[i] += x[i];
    }
}

/* What option `option`'s backward recomputes before it starts, with the forward's functions (the
   same bits): the LN output (options 2, 3) into ws's dln, h (option 3) into ws's h, a (options
   1-3) into ws's da; *ln, *h and *a point at each, from the tape or recomputed. Option 0 does
   nothing. The bwd_extra of options 1-3 is this call's time (measure_recompute). */
static void block_recompute(const Model *m, const Block *p, const float *x, const void *tape, int option,
                            void *ws, const float **ln, const float **h, const float **a)
{
    const ckpt_layout_entry *lay = m->tape[option];
    float *mean = ckpt_layout_ptr(tape, lay, T_MEAN);
    float *rstd = ckpt_layout_ptr(tape, lay, T_RSTD);
    *ln = ckpt_layout_ptr(tape, lay, T_LN);
    *h = ckpt_layout_ptr(tape, lay, T_H);
    *a = ckpt_layout_ptr(tape, lay, T_A);
    if (option >= 2) {          /* stats 0: mean and rstd are only read */
        float *ln_ws = ckpt_layout_ptr(ws, m->ws, W_DLN);
        ln_rows(m, p, x, mean, rstd, ln_ws, 0);
        *ln = ln_ws;
    }
    if (option == 3) {
        float *h_ws = ckpt_layout_ptr(ws, m->ws, W_H);
        linear1(m, p, *ln, h_ws);
        *h = h_ws;
    }
    if (option >= 1) {          /* into da's space, which nothing uses until da = dm W2 */
        float *a_ws = ckpt_layout_ptr(ws, m->ws, W_DA);
        gelu_rows(*h, a_ws, m->N, m->H);
        *a = a_ws;
    }
}

/* One block backward from a tape of option `option`: dx (may be NULL) = dL/dx; adds parameter
   gradients into g. */
static void block_backward(const Model *m, const Block *p, Block *g, const float *x,
                           const void *tape, int option, const float *dy, float *dx, void *ws)
{
    const int N = m->N, C = m->C, H = m->H;
    const ckpt_layout_entry *lay = m->tape[option];
    const float *mean = ckpt_layout_ptr(tape, lay, T_MEAN);
    const float *rstd = ckpt_layout_ptr(tape, lay, T_RSTD);
    const uint8_t *mask = ckpt_layout_ptr(tape, lay, T_MASK);
    float *dm = ckpt_layout_ptr(ws, m->ws, W_DM), *da = ckpt_layout_ptr(ws, m->ws, W_DA);
    float *dln = ckpt_layout_ptr(ws, m->ws, W_DLN);
    const float scale = 1.0f / (1.0f - m->p_drop);   /* the scale the dropout applied */
    const float *ln_g = p->ln_g;
    float *g_ln_g = g->ln_g, *g_ln_b = g->ln_b;
    const float *ln, *h, *a;

    block_recompute(m, p, x, tape, option, ws, &ln, &h, &a);
    EXAMPLE_PARALLEL_FOR
    for (int r = 0; r < N; r++) {
        const size_t off = (size_t)r * C;
        EXAMPLE_SIMD
        for (int c = 0; c < C; c++) dm[off + c] = mask[off + c] ? dy[off + c] * scale : 0.0f;
    }
    add_column_sums(g->b2, dm, N, C);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, C, H, N,       /* dW2 += dm^T a */
                1.0f, dm, C, a, H, 1.0f, g->w2, H);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, H, C,     /* da = dm W2 */
                1.0f, dm, C, p->w2, H, 0.0f, da, H);
    EXAMPLE_PARALLEL_FOR
    for (int r = 0; r < N; r++) {
        float *dr = da + (size_t)r * H;
        const float *hr = h + (size_t)r * H;
        for (int j = 0; j < H; j++) dr[j] *= gelu_grad(hr[j]);     /* da becomes dL/dh */
    }
    add_column_sums(g->b1, da, N, H);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, C, N,       /* dW1 += dh^T ln */
                1.0f, da, H, ln, C, 1.0f, g->w1, C);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, H,     /* dln = dh W1 (over */
                1.0f, da, H, p->w1, C, 0.0f, dln, C);                   /* a recomputed ln) */

    /* Layer norm backward, x-hat recomputed from x. The parameter gradients: over columns. */
    const int blocks = (C + COL_BLOCK - 1) / COL_BLOCK;
    EXAMPLE_PARALLEL_FOR
    for (int b = 0; b < blocks; b++) {
        const int c0 = b * COL_BLOCK, c1 = c0 + COL_BLOCK < C ? c0 + COL_BLOCK : C;
        for (int r = 0; r < N; r++) {
            const float *xr = x + (size_t)r * C, *dr = dln + (size_t)r * C;
            const float mu = mean[r], rs = rstd[r];
            EXAMPLE_SIMD
            for (int c = c0; c < c1; c++) {
                g_ln_g[c] += dr[c] * ((xr[c] - mu) * rs);
                g_ln_b[c] += dr[c];
            }
        }
    }
    if (!dx) return;
    EXAMPLE_PARALLEL_FOR
    for (int r = 0; r < N; r++) {       /* the input's gradient, row by row */
        const size_t off = (size_t)r * C;
        const float *xr = x + off, *dr = dln + off, *dyr = dy + off;
        float *dxr = dx + off;
        const float mu = mean[r], rs = rstd[r];
        /* dm (no longer needed) holds this row's dln * ln_g, da (H >= C) its x-hat, so that the
           sums read them contiguously */
        float *d = dm + off, *xhat = da + (size_t)r * H;
        EXAMPLE_SIMD
        for (int c = 0; c < C; c++) {
            d[c] = dr[c] * ln_g[c];
            xhat[c] = (xr[c] - mu) * rs;
        }
        const float sum_d = row_sum(d, C) / C;
        const float sum_dx = row_dot(d, xhat, C) / C;
        EXAMPLE_SIMD
        for (int c = 0; c < C; c++) dxr[c] = dyr[c] + rs * (d[c] - sum_d - xhat[c] * sum_dx);
    }
}

/* ---- the ckpt stages: thin wrappers; the stage index picks the block ------------------------ */

/* ctx->tape_option is the tape option to write (forward) or read (backward): 0, or 1-3 when the
   stage declares them (session_open); their forward needs the forward workspace. */
static ckpt_result stage_forward(const ckpt_fwd_args *args)
{
    const Model *m = args->ctx->user;
    const Block *p = &m->p[args->ctx->stage];
    const int option = args->ctx->tape_option;
    Block streamed;             /* --stream: the library's copy of this block's parameters */
    ckpt_philox rng;
    if (option < 0 || option >= N_OPTIONS || (option > 0 && !args->workspace)) return CKPT_ERR_BAD_ARGUMENT;
    if (args->params) { carve((float *)(uintptr_t)args->params, m->C, m->H, &streamed); p = &streamed; }
    if (m->p_drop > 0.0f) {     /* a recomputation gets the same range back: same mask */
        ckpt_result r = ckpt_ctx_rng(args->ctx, ((uint64_t)m->N * m->C + 3) / 4, &rng);
        if (r != CKPT_OK) return r;
    }
    block_forward(m, p, args->in, args->out, args->tape, option, args->workspace,
                  m->p_drop > 0.0f ? &rng : NULL);
    return CKPT_OK;
}

static ckpt_result stage_backward(const ckpt_bwd_args *args)
{
    const Model *m = args->ctx->user;
    int l = args->ctx->stage;
    const int option = args->ctx->tape_option;
    Block sp, sg;               /* --stream: parameters in, gradients out through the library */
    const Block *p = &m->p[l];
    Block *g = &m->g[l];
    if (option < 0 || option >= N_OPTIONS) return CKPT_ERR_BAD_ARGUMENT;
    if (args->params) { carve((float *)(uintptr_t)args->params, m->C, m->H, &sp); p = &sp; }
    if (args->param_grads) { carve((float *)args->param_grads, m->C, m->H, &sg); g = &sg; }
    block_backward(m, p, g, args->in, args->tape, option, args->grad_out, args->grad_in, args->workspace);
    return CKPT_OK;
}

/* ---- training -------------------------------------------------------------------------------- */

typedef struct Config {
    int C, L, N, steps;
    float p_drop, lr;
    double budget_frac, bandwidth_gbs;
    int stream;                 /* parameters streamed through the library */
    int threads;                /* for the BLAS and the loops (example_set_threads); 0: default */
    int no_options;             /* --no-options: declare no tape option (option 0 only, as before) */
    int check_recompute;        /* --check-recompute: ckpt_chain_desc.check_recompute in every row */
    uint64_t budget, seed;
} Config;

typedef struct Batch {          /* host buffers of one step; the caller owns X[0], G[0], G[n] */
    float *x, *target, *dy, *dx, *tmp[2];
    void *tape;
} Batch;

typedef struct Run {
    ckpt_policy policy;
    const char *label;          /* the table's name for it; NULL: the policy's */
    uint64_t budget;            /* the budget it was planned for (0: none) */
    int feasible;
    ckpt_plan_info info;
    ckpt_chain_stats stats;
    double ms_per_step;         /* median wall time of a timed step */
    double cpu_ms_per_step;     /* median CPU time of a timed step, every thread of the process */
    double first_loss, loss;
    float *grads;               /* the last step's parameter gradients, then the input gradient */
    char *tape_opts;            /* per block, the tape option its F kept ('0' + option), L chars */
    int n_opt[N_OPTIONS];       /* blocks whose F kept each tape option */
    char opt_counts[48];        /* n_opt as "n0/n1/n2/n3" */
} Run;

static void run_free(Run *r)
{
    free(r->grads);
    free(r->tape_opts);
    r->grads = NULL;
    r->tape_opts = NULL;
}

/* The tape option of the F that kept each stage's tape in the chain's plan, into run. (An F
   that keeps no tape runs the scratch option, the smallest tape: option 3 when declared.) */
static void plan_options(const ckpt_chain *chain, int L, Run *run)
{
    int n_ops;
    const ckpt_op *ops = ckpt_plan_ops(ckpt_chain_get_plan(chain), &n_ops);
    run->tape_opts = xcalloc((size_t)L + 1, 1);
    memset(run->tape_opts, '0', (size_t)L);
    for (int k = 0; k < n_ops; k++)
        if (ops[k].kind == CKPT_OP_F && ops[k].tape) run->tape_opts[ops[k].stage - 1] = (char)('0' + ops[k].option);
    memset(run->n_opt, 0, sizeof run->n_opt);
    for (int l = 0; l < L; l++) run->n_opt[run->tape_opts[l] - '0']++;
    snprintf(run->opt_counts, sizeof run->opt_counts, "%d/%d/%d/%d", run->n_opt[0], run->n_opt[1], run->n_opt[2],
             run->n_opt[3]);
}

/* The teacher's output for b->x, into b->target (no ckpt: it never trains). */
static void teacher_forward(const Model *t, Batch *b)
{
    const float *in = b->x;
    for (int l = 0; l < t->L; l++) {
        float *out = l == t->L - 1 ? b->target : b->tmp[l % 2];
        block_forward(t, &t->p[l], in, out, b->tape, 0, NULL, NULL);
        in = out;
    }
}

/* Mean squared error of rows x cols values; dy = dLoss/dy. The sum runs in one fixed order. */
static double mse(const float *y, const float *target, float *dy, int rows, int cols)
{
    const size_t n = (size_t)rows * cols;
    const float two_over_n = 2.0f / (float)n;
    double sum = 0.0;
    EXAMPLE_PARALLEL_FOR
    for (int r = 0; r < rows; r++) {
        const size_t off = (size_t)r * cols;
        EXAMPLE_SIMD
        for (int c = 0; c < cols; c++) dy[off + c] = two_over_n * (y[off + c] - target[off + c]);
    }
    for (size_t i = 0; i < n; i++) {
        float d = y[i] - target[i];
        sum += (double)d * d;
    }
    return sum / (double)n;
}

/* params -= lr * grads, n values. */
static void sgd_update(float *params, const float *grads, size_t n, float lr)
{
    enum { CHUNK = 1 << 14 };
    const long chunks = (long)((n + CHUNK - 1) / CHUNK);
    EXAMPLE_PARALLEL_FOR
    for (long k = 0; k < chunks; k++) {
        const size_t i0 = (size_t)k * CHUNK, len = n - i0 < CHUNK ? n - i0 : CHUNK;
        float *pk = params + i0;
        const float *gk = grads + i0;
        EXAMPLE_SIMD
        for (size_t i = 0; i < len; i++) pk[i] -= lr * gk[i];
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n-1] (n >= 1); sorts v. */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Trains m from `init` under one plan (pd, or with ops non-NULL the schedule ops, installed with
   ckpt_chain_set_schedule); fills run. Every run sees the same data and dropout. */
static void train(const Config *cfg, Model *m, const Model *teacher, const float *init,
                  const ckpt_stage_desc *stages, ckpt_backend *be, const ckpt_plan_desc *pd,
                  const ckpt_op *ops, int n_ops, Batch *b, Run *run)
{
    size_t nc = (size_t)m->N * m->C;
    memcpy(m->params, init, m->n_params * sizeof(float));
    ckpt_chain_desc cd = {0};
    cd.stages = stages;
    cd.n_stages = m->L;
    cd.input_bytes = nc * sizeof(float);
    cd.backend = be;
    cd.seed = cfg->seed;
    cd.logger.fn = log_errors;
    cd.check_recompute = cfg->check_recompute;
    ckpt_chain *chain;
    CHECK(ckpt_chain_create(&cd, &chain));
    run->policy = ops ? CKPT_POLICY_CUSTOM : pd->policy;
    run->budget = ops ? 0 : pd->budget;
    ckpt_result r = ops ? ckpt_chain_set_schedule(chain, ops, n_ops, &run->info)
                        : ckpt_chain_plan(chain, pd, &run->info);
    if (r == CKPT_ERR_INFEASIBLE) {
        run->feasible = 0;
        ckpt_chain_destroy(chain);
        return;
    }
    CHECK(r);
    run->feasible = 1;
    plan_options(chain, m->L, run);

    Rng data = { cfg->seed ^ 0xda7aULL, 0 };
    double *step_ms = xcalloc((size_t)cfg->steps, sizeof(double));
    double *step_cpu = xcalloc((size_t)cfg->steps, sizeof(double));
    int timed = 0;
    for (int s = 0; s < cfg->steps; s++) {
        randn(&data, b->x, nc, 0.0f, 1.0f);
        teacher_forward(teacher, b);

        double t0 = now_ms(), c0 = cpu_ms();
        memset(m->grads, 0, m->n_params * sizeof(float));
        const void *out;
        CHECK(ckpt_forward(chain, b->x, &out));
        run->loss = mse(out, b->target, b->dy, m->N, m->C);
        if (s == 0) run->first_loss = run->loss;
        CHECK(ckpt_backward(chain, b->dy, b->dx));
        sgd_update(m->params, m->grads, m->n_params, cfg->lr);
        if (s > 0 || cfg->steps == 1) {     /* step 1 warms up */
            step_cpu[timed] = cpu_ms() - c0;
            step_ms[timed++] = now_ms() - t0;
        }
    }
    run->ms_per_step = median(step_ms, timed);
    run->cpu_ms_per_step = median(step_cpu, timed);
    free(step_ms);
    free(step_cpu);
    CHECK(ckpt_chain_get_stats(chain, &run->stats));
    run->grads = xcalloc(m->n_params + nc, sizeof(float));
    memcpy(run->grads, m->grads, m->n_params * sizeof(float));
    memcpy(run->grads + m->n_params, b->dx, nc * sizeof(float));
    ckpt_chain_destroy(chain);
}

/* ---- a session: the model, its teacher, the stages and the backends, set up once ------------- */

typedef struct Session {
    Config cfg;
    Model model, teacher;
    float *init;                /* the model's initial parameters: every run starts from them */
    double fwd_ms;              /* the blocks' mean measured forward (every plan uses the same costs) */
    double measure_ms;          /* what measuring them took */
    double bwd_extra_ms[N_OPTIONS];     /* option k's bwd_extra: its recomputation timed alone (0: 0) */
    double bwd_opt_ms[N_OPTIONS];       /* mean backward measured under store-all in option k: [0] is the
                                           blocks' (the costs), [1..] cross-checks */
    int bwd_option[N_OPTIONS];          /* ckpt_stage_time.bwd_option each measurement reported (stage 1) */
    ckpt_stage_desc *stages;
    Batch batch;
    ckpt_backend be;            /* plain CPU backend */
    ckpt_backend engine;        /* with a copy engine (throttled to --bandwidth), for offload */
} Session;

/* Store-all's schedule with every F keeping tape option `option`: F(1..L), then B(L..1). */
static ckpt_op *store_all_ops(int L, int option, int *n_ops)
{
    ckpt_op *ops = xcalloc(2 * (size_t)L, sizeof *ops);
    for (int i = 0; i < L; i++) {
        ops[i] = (ckpt_op){ .kind = CKPT_OP_F, .stage = i + 1, .tape = 1, .option = option };
        ops[L + i] = (ckpt_op){ .kind = CKPT_OP_B, .stage = L - i };
    }
    *n_ops = 2 * L;
    return ops;
}

/* Every block's forward and backward time, measured by the library: ckpt_chain_measure runs
   MEASURE_STEPS real store-all steps after one untimed (warm-up) and gives each stage's medians
   in ms, which become the stages' fwd_time and bwd_time: the costs every plan below uses (option
   0's: store-all keeps every tape in option 0). With option k > 0, the same steps under
   store-all's schedule keeping every tape in option k (ckpt_chain_set_schedule), only as a
   cross-check of option k's bwd_extra: their mean backward goes to ss->bwd_opt_ms[k] and nothing
   else changes. The steps add gradients, which are zeroed after. */
enum { MEASURE_STEPS = 3 };
static void measure_stages(Session *ss, int option)
{
    Model *m = &ss->model;
    Batch *b = &ss->batch;
    size_t nc = (size_t)m->N * m->C;
    ckpt_chain_desc cd = {0};
    cd.stages = ss->stages;
    cd.n_stages = m->L;
    cd.input_bytes = nc * sizeof(float);
    cd.backend = &ss->be;
    cd.seed = ss->cfg.seed;
    cd.logger.fn = log_errors;
    ckpt_chain *chain;
    CHECK(ckpt_chain_create(&cd, &chain));
    if (option == 0) {
        ckpt_plan_desc pd = {0};
        pd.policy = CKPT_POLICY_STORE_ALL;
        CHECK(ckpt_chain_plan(chain, &pd, NULL));
    } else {
        int n_ops;
        ckpt_op *ops = store_all_ops(m->L, option, &n_ops);
        CHECK(ckpt_chain_set_schedule(chain, ops, n_ops, NULL));
        free(ops);
    }
    Rng rng = { ss->cfg.seed ^ 0x7133ULL, 0 };
    randn(&rng, b->x, nc, 0.0f, 1.0f);
    randn(&rng, b->dy, nc, 0.0f, 1.0f / (float)nc);
    ckpt_stage_time *t = xcalloc((size_t)m->L, sizeof *t);
    double t0 = now_ms();
    CHECK(ckpt_chain_measure(chain, b->x, b->dy, b->dx, 1, NULL));
    CHECK(ckpt_chain_measure(chain, b->x, b->dy, b->dx, MEASURE_STEPS, t));
    if (option == 0) {
        ss->measure_ms = now_ms() - t0;
        ss->fwd_ms = 0.0;
        for (int l = 0; l < m->L; l++) {
            ss->stages[l].fwd_time = t[l].fwd_time;
            ss->stages[l].bwd_time = t[l].bwd_time;
            ss->fwd_ms += t[l].fwd_time / m->L;
        }
    }
    ss->bwd_opt_ms[option] = 0.0;
    for (int l = 0; l < m->L; l++) ss->bwd_opt_ms[option] += t[l].bwd_time / m->L;
    ss->bwd_option[option] = t[0].bwd_option;
    memset(m->grads, 0, m->n_params * sizeof(float));
    free(t);
    ckpt_chain_destroy(chain);
}

/* Tape option k's bwd_extra: what its backward does beyond option 0's, block_recompute (from
   the LN output to GELU, model_create). Timed alone, the way ckpt_chain_measure times a callback
   on the CPU: the host clock (CLOCK_MONOTONIC) around each call, the median of the calls, here
   MEASURE_STEPS x L of them (as many as the backward samples behind the stage times) after one
   untimed, on a tape of option k from block 1's forward on the measuring batch. The blocks have
   one shape, so one time serves them all. measure_stages(ss, k) then measures the backward under
   a schedule that keeps every tape in option k, which the example prints beside this as a
   cross-check; the difference of two medians of whole backwards is the noisier figure on a
   loaded machine, so it is not the one declared. */
static double measure_recompute(Session *ss, int option)
{
    const Model *m = &ss->model;
    Batch *b = &ss->batch;
    const int n = MEASURE_STEPS * m->L;
    void *tape = xcalloc(1, m->tape_bytes[option]), *ws = xcalloc(1, m->ws_bytes);
    float *fws = xcalloc(1, m->fws_bytes);
    const float *ln, *h, *a;
    block_forward(m, &m->p[0], b->x, b->tmp[0], tape, option, fws, NULL);
    double *ms = xcalloc((size_t)n, sizeof *ms);
    block_recompute(m, &m->p[0], b->x, tape, option, ws, &ln, &h, &a);
    for (int k = 0; k < n; k++) {
        double t0 = now_ms();
        block_recompute(m, &m->p[0], b->x, tape, option, ws, &ln, &h, &a);
        ms[k] = now_ms() - t0;
    }
    double med = median(ms, n);
    free(ms); free(tape); free(ws); free(fws);
    return med;
}

static void session_open(Session *ss, const Config *cfg)
{
    memset(ss, 0, sizeof *ss);
    ss->cfg = *cfg;
    if (ss->cfg.threads < 1) ss->cfg.threads = default_threads();
    example_set_threads(ss->cfg.threads);
    Model *m = &ss->model;
    model_create(m, cfg->C, cfg->L, cfg->N, cfg->p_drop, !cfg->no_options);
    model_create(&ss->teacher, cfg->C, cfg->L, cfg->N, 0.0f, 0);
    Rng init_rng = { cfg->seed, 0 }, teacher_rng = { cfg->seed + 1, 0 };
    model_init(m, &init_rng, 0.1f, 0.0f);
    model_init(&ss->teacher, &teacher_rng, 1.0f, 0.1f);
    ss->init = xcalloc(m->n_params, sizeof(float));
    memcpy(ss->init, m->params, m->n_params * sizeof(float));

    ss->stages = xcalloc(cfg->L, sizeof(ckpt_stage_desc));
    for (int l = 0; l < cfg->L; l++) {
        ckpt_stage_desc *st = &ss->stages[l];
        st->forward = stage_forward;
        st->backward = stage_backward;
        st->user = m;
        st->out_bytes = (size_t)cfg->N * cfg->C * sizeof(float);
        st->tape_bytes = m->tape_bytes[0];
        st->bwd_workspace_bytes = m->ws_bytes;      /* options 1-3 recompute inside it */
        if (!cfg->no_options) {     /* options 1-3; bwd_extra once measured (session_open) */
            st->n_tape_options = N_OPTIONS - 1;
            for (int o = 1; o < N_OPTIONS; o++) st->tape_options[o - 1].tape_bytes = m->tape_bytes[o];
            st->fwd_workspace_bytes = m->fws_bytes;     /* their a; option 0's F gets it unused */
        }
        if (cfg->stream) {  /* the block's parameters are contiguous: ln_g is the first of them */
            st->host_params = m->p[l].ln_g;
            st->param_bytes = (size_t)(m->g[l].b2 + m->C - m->g[l].ln_g) * sizeof(float);
            st->host_grads = m->g[l].ln_g;
        }
    }

    size_t nc = (size_t)cfg->N * cfg->C;
    ss->batch = (Batch){ .x = xcalloc(nc, sizeof(float)), .target = xcalloc(nc, sizeof(float)),
                         .dy = xcalloc(nc, sizeof(float)), .dx = xcalloc(nc, sizeof(float)),
                         .tmp = { xcalloc(nc, sizeof(float)), xcalloc(nc, sizeof(float)) },
                         .tape = xcalloc(1, ss->teacher.tape_bytes[0]) };
    CHECK(ckpt_cpu_backend_create(NULL, &ss->be));
    ckpt_cpu_desc ed = {0};
    ed.copy_engine = 1;
    ed.copy_bandwidth = cfg->bandwidth_gbs * 1e9;
    CHECK(ckpt_cpu_backend_create(&ed, &ss->engine));
    measure_stages(ss, 0);
    for (int o = 1; !cfg->no_options && o < N_OPTIONS; o++) {
        ss->bwd_extra_ms[o] = measure_recompute(ss, o);
        for (int l = 0; l < cfg->L; l++) ss->stages[l].tape_options[o - 1].bwd_extra = ss->bwd_extra_ms[o];
        measure_stages(ss, o);
    }
}

static void session_close(Session *ss)
{
    Batch *b = &ss->batch;
    ckpt_cpu_backend_destroy(&ss->be);
    ckpt_cpu_backend_destroy(&ss->engine);
    free(b->x); free(b->target); free(b->dy); free(b->dx);
    free(b->tmp[0]); free(b->tmp[1]); free(b->tape);
    free(ss->stages); free(ss->init);
    model_destroy(&ss->model);
    model_destroy(&ss->teacher);
}

/* Trains the session's model under plan desc pd (offload on the copy engine) into run. For the
   offload policy, pd->bandwidth is set from --bandwidth when it is 0. */
static void session_train(Session *ss, ckpt_plan_desc *pd, Run *run)
{
    memset(run, 0, sizeof *run);
    if (pd->policy == CKPT_POLICY_OFFLOAD && pd->bandwidth == 0)
        pd->bandwidth = ss->cfg.bandwidth_gbs * 1e9 / 1e3;     /* bytes per ms: stage times are in ms */
    train(&ss->cfg, &ss->model, &ss->teacher, ss->init, ss->stages,
          pd->policy == CKPT_POLICY_OFFLOAD ? &ss->engine : &ss->be, pd, NULL, 0, &ss->batch, run);
}

/* Trains it under store-all's schedule with every F keeping tape option `option` (1..3), into
   run, labelled "store-all optk". */
static void session_train_store_all(Session *ss, int option, Run *run)
{
    static const char *const label[N_OPTIONS] = { "", "store-all opt1", "store-all opt2", "store-all opt3" };
    int n_ops;
    ckpt_op *ops = store_all_ops(ss->cfg.L, option, &n_ops);
    memset(run, 0, sizeof *run);
    train(&ss->cfg, &ss->model, &ss->teacher, ss->init, ss->stages, &ss->be, NULL, ops, n_ops, &ss->batch, run);
    run->label = label[option];
    free(ops);
}

/* Whether run's gradients (parameters, then the input's) are bit-identical to ref's. */
static int same_grads(const Session *ss, const Run *run, const Run *ref)
{
    size_t n = ss->model.n_params + (size_t)ss->cfg.N * ss->cfg.C;
    return run->grads && ref->grads && memcmp(run->grads, ref->grads, n * sizeof(float)) == 0;
}

static void run_name(const Run *r, char *name, size_t size)
{
    if (r->label) snprintf(name, size, "%s", r->label);
    else if (r->policy == CKPT_POLICY_EVERY_K && r->feasible) snprintf(name, size, "every-k (k=%d)", r->info.k);
    else snprintf(name, size, "%s", ckpt_policy_name(r->policy));
}

/* The tape options' sizes, measured extras and cross-checks, a line each after a header; each line
   starts with lead. */
static void print_options(const Session *ss, const char *lead)
{
    static const char *const what[N_OPTIONS] = { "keeps LN, h, a", "no a: GELU recomputed",
                                                 "no a, no LN: LN and GELU recomputed",
                                                 "only the row statistics and mask: LN, h = LN W1^T + b1, GELU recomputed" };
    const Model *m = &ss->model;
    if (ss->cfg.no_options) {
        printf("%stape options off (--no-options): every block keeps option 0, %zu bytes of tape\n", lead,
               m->tape_bytes[0]);
        return;
    }
    printf("%stape options (forward workspace %zu bytes, backward workspace %zu): bwd_extra is the recompute timed "
           "alone (median of %d calls); the backward measured under store-all keeping every tape in that option "
           "is beside it\n", lead, m->fws_bytes, m->ws_bytes, MEASURE_STEPS * ss->cfg.L);
    for (int o = 0; o < N_OPTIONS; o++)
        printf("%s  option %d (%s): tape %zu bytes, bwd_extra %.3f ms; backward %.3f ms (%+.3f on option 0's; "
               "bwd_option reported %d)\n", lead, o, what[o], m->tape_bytes[o], ss->bwd_extra_ms[o], ss->bwd_opt_ms[o],
               ss->bwd_opt_ms[o] - ss->bwd_opt_ms[0], ss->bwd_option[o]);
}

/* ---- main ------------------------------------------------------------------------------------ */

#ifndef MLP_CPU_NO_MAIN
static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--width C] [--depth L] [--batch N] [--steps S] [--dropout P] [--lr LR]\n"
            "          [--seed S] [--budget-frac F | --budget BYTES] [--bandwidth GB_PER_S] [--stream 0|1]\n"
            "          [--threads T] [--no-options] [--check-recompute]\n"
            "defaults: --width 64 --depth 8 --batch 256 --steps 20 --dropout 0.1 --lr 0.1\n"
            "          --seed 42 --budget-frac 0.4 (of store-all's peak); no offload row;\n"
            "          --threads $OPENBLAS_NUM_THREADS if set, else 1; tape options 1-3 declared\n",
            prog);
    exit(2);
}

static void parse_args(int argc, char **argv, Config *cfg)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--no-options")) { cfg->no_options = 1; continue; }
        if (!strcmp(a, "--check-recompute")) { cfg->check_recompute = 1; continue; }
        if (i + 1 >= argc) usage(argv[0]);
        const char *v = argv[++i];
        if (!strcmp(a, "--width")) cfg->C = atoi(v);
        else if (!strcmp(a, "--depth")) cfg->L = atoi(v);
        else if (!strcmp(a, "--batch")) cfg->N = atoi(v);
        else if (!strcmp(a, "--steps")) cfg->steps = atoi(v);
        else if (!strcmp(a, "--dropout")) cfg->p_drop = (float)atof(v);
        else if (!strcmp(a, "--lr")) cfg->lr = (float)atof(v);
        else if (!strcmp(a, "--seed")) cfg->seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--budget-frac")) cfg->budget_frac = atof(v);
        else if (!strcmp(a, "--budget")) cfg->budget = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--bandwidth")) cfg->bandwidth_gbs = atof(v);
        else if (!strcmp(a, "--stream")) cfg->stream = atoi(v);
        else if (!strcmp(a, "--threads")) { if ((cfg->threads = atoi(v)) < 1) usage(argv[0]); }
        else usage(argv[0]);
    }
    if (cfg->C < 1 || cfg->L < 1 || cfg->N < 1 || cfg->steps < 1 || !(cfg->p_drop >= 0.0f) ||
        !(cfg->p_drop < 1.0f) || !(cfg->budget_frac > 0.0) || !(cfg->bandwidth_gbs >= 0.0))
        usage(argv[0]);
}

int main(int argc, char **argv)
{
    Config cfg = { .C = 64, .L = 8, .N = 256, .steps = 20, .p_drop = 0.1f, .lr = 0.1f,
                   .budget_frac = 0.4, .bandwidth_gbs = 0, .budget = 0, .seed = 42 };
    parse_args(argc, argv, &cfg);
    example_openmp_passive(cfg.threads ? cfg.threads : default_threads(), argv);
    Session ss;
    session_open(&ss, &cfg);
    const int options = !cfg.no_options;

    /* The rows. Store-all first: it is the reference, and the budget is a fraction of its peak.
       With tape options, six more: for each option k of 1-3, store-all's schedule keeping every
       tape in option k (every block's backward then recomputes what k leaves out), and the
       optimal policy at that schedule's peak. */
    enum { MAX_ROWS = 12 };
    Run runs[MAX_ROWS] = {0};
    int n_rows = 0;
    int all_opt[N_OPTIONS] = {0};   /* the row of store-all in option k (k >= 1) */
    static const char *const opt_label[N_OPTIONS] = { "", "optimal b=opt1", "optimal b=opt2", "optimal b=opt3" };
    uint64_t budget = cfg.budget;
    {
        ckpt_plan_desc pd = {0};
        pd.policy = CKPT_POLICY_STORE_ALL;
        session_train(&ss, &pd, &runs[n_rows++]);
        if (budget == 0)        /* at least 1: a budget of 0 would mean "no limit" */
            budget = (uint64_t)(cfg.budget_frac * (double)runs[0].info.peak) + 1;
    }
    for (int o = 1; options && o < N_OPTIONS; o++) {
        session_train_store_all(&ss, o, &runs[n_rows]);
        all_opt[o] = n_rows++;
    }
    const ckpt_policy policies[] = { CKPT_POLICY_EVERY_K, CKPT_POLICY_SQRT, CKPT_POLICY_GREEDY, CKPT_POLICY_OPTIMAL };
    for (int i = 0; i < (int)(sizeof policies / sizeof policies[0]); i++) {
        ckpt_plan_desc pd = {0};
        pd.policy = policies[i];
        pd.budget = budget;     /* every-k gets k = 0: the best k that fits */
        session_train(&ss, &pd, &runs[n_rows++]);
    }
    const int first_opt = n_rows;   /* the "optimal b=optk" rows, k = 1.. */
    for (int o = 1; options && o < N_OPTIONS; o++) {
        ckpt_plan_desc pd = {0};
        pd.policy = CKPT_POLICY_OPTIMAL;
        pd.budget = runs[all_opt[o]].info.peak;
        session_train(&ss, &pd, &runs[n_rows]);
        runs[n_rows++].label = opt_label[o];
    }
    if (cfg.bandwidth_gbs > 0) {
        ckpt_plan_desc pd = {0};
        pd.policy = CKPT_POLICY_OFFLOAD;
        pd.budget = budget;
        session_train(&ss, &pd, &runs[n_rows++]);
    }

    printf("BLAS: %s\n", EXAMPLE_BLAS);
    printf("%d blocks of width %d (hidden %d), %d rows, dropout %.2f, %d steps; blocks (mean of the "
           "measured medians): fwd %.3f ms, bwd %.3f ms\n", cfg.L, cfg.C, 4 * cfg.C, cfg.N, cfg.p_drop,
           cfg.steps, ss.fwd_ms, ss.bwd_opt_ms[0]);
    printf("stage times measured by ckpt_chain_measure: 1 warm-up + %d timed store-all steps in %.1f ms; "
           "fwd/bwd per block (ms):", MEASURE_STEPS, ss.measure_ms);
    for (int l = 0; l < cfg.L; l++) printf(" %.3f/%.3f", ss.stages[l].fwd_time, ss.stages[l].bwd_time);
    printf("\n");
    print_options(&ss, "");
    printf("%s, %d thread%s%s; step times: medians, wall and CPU (all threads)\n", EXAMPLE_BLAS,
           ss.cfg.threads, ss.cfg.threads == 1 ? "" : "s",
#ifdef _OPENMP
           " (BLAS and OpenMP loops)"
#else
           " (BLAS only: built without OpenMP)"
#endif
           );
    printf("budget %llu bytes (store-all peak %llu); loss at step 1: %.9e\n",
           (unsigned long long)budget, (unsigned long long)runs[0].info.peak, runs[0].first_loss);
    printf("store-all's last gradients (parameters, input): checksum %016llx; final loss %a\n\n",
           (unsigned long long)ckpt_checksum(runs[0].grads, (ss.model.n_params + (size_t)cfg.N * cfg.C) * sizeof(float)),
           runs[0].loss);
    if (cfg.bandwidth_gbs > 0) printf("offload: copy engine throttled to %.3g GB/s each way\n\n", cfg.bandwidth_gbs);
    if (cfg.stream) printf("parameters streamed: loads per step in the last column\n\n");
    printf("%-14s %12s %12s %12s %12s %9s %9s %7s %7s %7s %8s %12s %s\n", "policy", "planned B", "used B",
           "arena B", "pinned B", "ms/step", "cpu ms", "pred x", "meas x", "cpu x", "options", "final loss",
           "grads bit-identical");
    const Run *ref = &runs[0];
    int all_match = 1;
    for (int i = 0; i < n_rows; i++) {
        const Run *r = &runs[i];
        char name[32];
        run_name(r, name, sizeof name);
        if (!r->feasible) {
            printf("%-14s infeasible (min budget %llu)\n", name,
                   (unsigned long long)r->info.min_budget);
            continue;
        }
        int match = same_grads(&ss, r, ref);
        all_match &= match;
        printf("%-14s %12llu %12llu %12llu %12llu %9.3f %9.3f %7.3f %7.3f %7.3f %8s %12.6e %s\n", name,
               (unsigned long long)r->info.peak, (unsigned long long)r->stats.arena_high_water,
               (unsigned long long)r->stats.arena_bytes, (unsigned long long)r->stats.pool_bytes, r->ms_per_step,
               r->cpu_ms_per_step, r->info.time / ref->info.time, r->ms_per_step / ref->ms_per_step,
               r->cpu_ms_per_step / ref->cpu_ms_per_step, r->opt_counts, r->loss, match ? "yes" : "no");
        if (cfg.check_recompute && r->stats.steps)
            printf("%-14s recompute check: %llu buffers compared per step\n", "",
                   (unsigned long long)(r->stats.recompute_checks / r->stats.steps));
        if (cfg.stream)
            printf("%-14s %llu parameter loads per step, %llu slot bytes\n", "", (unsigned long long)(r->stats.param_loads / (uint64_t)cfg.steps),
                   (unsigned long long)r->stats.slot_bytes);
        /* (ckpt_chain_set_schedule's info has no arena: 0) */
        if (r->stats.arena_high_water > r->stats.arena_bytes ||
            (r->policy != CKPT_POLICY_CUSTOM && r->stats.arena_bytes != r->info.arena))
            fprintf(stderr, "warning: %s: arena bytes used %llu, allocated %llu, planned %llu\n", name,
                    (unsigned long long)r->stats.arena_high_water, (unsigned long long)r->stats.arena_bytes,
                    (unsigned long long)r->info.arena);
        if (r->budget && r->info.peak > r->budget)
            fprintf(stderr, "warning: %s: planned peak %llu exceeds the budget %llu\n", name,
                    (unsigned long long)r->info.peak, (unsigned long long)r->budget);
    }
    if (options) {
        /* The option-k schedule must keep option k everywhere; the optimal policy at its peak may
           not be slower than it (it is one of the schedules optimal searches). */
        for (int o = 1; o < N_OPTIONS; o++) {
            const Run *all = &runs[all_opt[o]], *opt = &runs[first_opt + o - 1];
            if (all->n_opt[o] != cfg.L) {
                fprintf(stderr, "error: %s kept option %d in %d of %d blocks\n", all->label, o, all->n_opt[o], cfg.L);
                all_match = 0;
            }
            if (opt->feasible && opt->info.time > all->info.time * (1.0 + 1e-12))
                fprintf(stderr, "warning: optimal at %s's peak predicts %.6f ms, %s %.6f ms\n", all->label,
                        opt->info.time, all->label, all->info.time);
        }
        printf("\noptions: how many blocks' F kept tape options 0/1/2/3. store-all optk: store-all's schedule with "
               "every F keeping\noption k (ckpt_chain_set_schedule); optimal b=optk: the optimal policy at that "
               "schedule's peak.\n");
        printf("tape option each block's F kept (block 1 first; an F that keeps no tape runs option 3, the "
               "smallest):\n");
        for (int i = 0; i < n_rows; i++) {
            char name[32];
            run_name(&runs[i], name, sizeof name);
            if (runs[i].feasible) printf("  %-14s %s\n", name, runs[i].tape_opts);
        }
    }

    for (int i = 0; i < n_rows; i++) run_free(&runs[i]);
    session_close(&ss);
    return all_match ? 0 : 1;
}
#endif /* MLP_CPU_NO_MAIN */
