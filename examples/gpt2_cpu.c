/* gpt2_cpu.c -- train a small GPT-2 style transformer on the CPU with ckpt.h.

   The model, on B sequences of T tokens (N = B*T rows of C channels, NH heads, vocabulary V):

       x = wte[token] + wpe[position]                           outside the chain (X[0])
       for each of L layers, two ckpt stages:
         attention:  x = x + Dropout(Proj(CausalSelfAttention(LN1(x))))
         MLP:        x = x + Dropout(FC2(GELU(FC1(LN2(x)))))     (hidden 4C)
       loss = CrossEntropy(LNf(x) wte^T, next token)            outside the chain (G[n] in)

   So the chain has 2L stages of two kinds, with different tapes and costs. The embedding's
   gradient comes from the chain's input gradient G[0] (ckpt_backward's grad_input); the LM head
   is tied to the token embedding, as in GPT-2. Forward and backward are hand-written: plain loops
   plus SGEMM (examples/blas.h). Dropout draws from the library's Philox generator, so a
   recomputed stage reproduces its first forward exactly.

   The data is a fixed random first-order Markov chain over the vocabulary with low-entropy
   transitions: the best possible loss is the chain's entropy rate, printed with ln(V).

   Tape options: each stage declares two (ckpt_stage_desc.tape_options). Option 0 keeps
   everything its backward reads. Option 1 keeps less and recomputes the rest in backward: the
   attention stage leaves out the attention probabilities (B*NH*T*T floats; Megatron's selective
   recompute) and recomputes them from the kept q and k; the MLP stage leaves out the GELU output
   (4*N*C floats; llm.c's -r 1) and recomputes it from the kept pre-activation. The recomputation
   calls the forward's own function on the same inputs, so every option gives the same bits. A
   forward that keeps no tape runs option 1 (the smaller tape: the library's scratch option).
   Option 1's bwd_extra is its recomputation timed alone (the clock ckpt_chain_measure uses),
   in the same rounds as the stage times, and checked against whole backward callbacks with
   option-1 tapes minus with option-0 tapes, measured by ckpt_chain_measure and printed per layer
   (see "measuring" below).

   The program measures each stage's forward and backward time with ckpt_chain_measure (store-all
   steps, medians), gives them to the planner, then trains from the same initial weights on the same data once per
   policy, and once more per tape option k > 0 under store-all's schedule with every tape kept in
   option k ("all tapes ok"), and prints the planned and measured memory, step time, final loss,
   whether every parameter gradient of the last step (and G[0]) is bit-identical to store-all's
   (option 0's), and how many kept tapes of each stage kind use each option. Then the optimal
   policy's plans at fractions of store-all's peak (planned, not run), with the options and with
   option 0 alone. Exit status 1 if any gradient differs, or if the loss did not fall.

   Build (from the repository root):
       cc -std=c11 -O2 -DCKPT_EXAMPLE_OPENBLAS -I/usr/include/x86_64-linux-gnu/openblas-pthread \
          examples/gpt2_cpu.c -o gpt2_cpu -lopenblas -lm          [-fopenmp for --threads]
       cc -std=c11 -O2 examples/gpt2_cpu.c -o gpt2_cpu -lm        (built-in SGEMM, slower)
   Run:
       ./gpt2_cpu [--toy] [--layers L] [--ctx T] [--channels C] [--heads NH] [--vocab V]
                  [--batch B] [--steps S] [--dropout P] [--lr LR] [--seed S] [--budget-frac F]
                  [--bandwidth GB_PER_S] [--threads N]
       ./gpt2_cpu --gradcheck      (backward against central finite differences, toy size)

   Threads: --threads N (default $OPENBLAS_NUM_THREADS, else 1) sets OpenBLAS's threads and, when
   built with -fopenmp, the OpenMP threads of the loops marked EXAMPLE_PARALLEL_FOR. Those loops
   give the same bits for any thread count (each iteration writes its own row; sums over rows are
   serial). OpenBLAS's SGEMM need not: with Debian 12's OpenBLAS, 1 and 2 threads gave different
   last bits at the default size (the built-in SGEMM with OpenMP gave identical ones). Every
   policy of one run uses the same thread count, so the bit-identity checks are unaffected. With
   both OpenMP and OpenBLAS threads, OMP_WAIT_POLICY=passive keeps OpenMP's idle threads from
   spinning against OpenBLAS's (9x faster here on 2 busy cores).
*/
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "blas.h"

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

/* Errors to stderr, except "infeasible": the table reports those. */
static void log_errors(const char *tag, ckpt_log_level level, ckpt_result item, const char *message,
                       const char *file, int line, void *user)
{
    if (item != CKPT_ERR_INFEASIBLE) ckpt_log_stderr(tag, level, item, message, file, line, user);
}

/* ---- random numbers: the library's Philox, also for weights and data ------------------------- */

typedef struct Rng { uint64_t key, next; } Rng;   /* a key and the next unused Philox block */

static void randn(Rng *rng, float *out, size_t n, float std)
{
    ckpt_philox p = { .key = rng->key, .base = rng->next, .count = (n + 3) / 4 };
    ckpt_philox_fill_normal(&p, out, n);
    for (size_t i = 0; i < n; i++) out[i] *= std;
    rng->next += p.count;
}

static void randu(Rng *rng, float *out, size_t n)
{
    ckpt_philox p = { .key = rng->key, .base = rng->next, .count = (n + 3) / 4 };
    ckpt_philox_fill_uniform(&p, out, n);
    rng->next += p.count;
}

/* ---- the model's parameters ------------------------------------------------------------------ */

/* One layer's parameters, or their gradients. Weights are (out x in), y = x W^T. */
typedef struct Layer {
    float *ln1_g, *ln1_b, *w_qkv, *b_qkv, *w_proj, *b_proj;    /* attention stage */
    float *ln2_g, *ln2_b, *w_fc, *b_fc, *w_fc2, *b_fc2;        /* MLP stage */
} Layer;

typedef struct Params {         /* pointers into one flat buffer */
    float *wte, *wpe;           /* V x C token embedding (also the LM head), T x C positions */
    float *lnf_g, *lnf_b;       /* final layer norm */
    Layer *layer;               /* L of them */
} Params;

/* Pieces of the stages' tapes and backward workspaces (carved with ckpt_layout). Each stage has
   two tape options, each with its own tape layout: option 0 keeps every piece, option 1 leaves
   out TA_ATT (attention) or TM_A (MLP), which its layout gives 0 bytes. */
enum { TA_LN, TA_MEAN, TA_RSTD, TA_QKV, TA_ATT, TA_ATTY, TA_MASK, TA_COUNT };  /* attention tape */
enum { WA_DM, WA_DATTY, WA_DATT, WA_DQKV, WA_DLN, WA_ATT, WA_COUNT };         /* its workspace */
enum { TM_LN, TM_MEAN, TM_RSTD, TM_H, TM_A, TM_MASK, TM_COUNT };              /* MLP tape */
enum { WM_DM, WM_DA, WM_DLN, WM_COUNT };                                      /* its workspace */
enum { N_OPTS = 2 };            /* tape options per stage: 0 keeps everything, 1 recomputes */

typedef struct Model {
    int L, T, C, NH, V, B, N;   /* N = B*T rows */
    float p_drop;
    size_t n_params;
    float *params, *grads;      /* n_params floats each */
    Params p, g;
    ckpt_layout_entry ta[N_OPTS][TA_COUNT], wa[WA_COUNT], tm[N_OPTS][TM_COUNT], wm[WM_COUNT];
    size_t ta_bytes[N_OPTS], wa_bytes, tm_bytes[N_OPTS], wm_bytes;
    size_t fa_bytes, fm_bytes;  /* forward workspaces: option 1's probabilities / GELU output */
} Model;

/* Points P's tensors into base (n_params floats); returns the number of floats used. */
static size_t carve(float *base, const Model *m, Params *P)
{
    const size_t C = m->C;
    float *q = base;
#define TAKE(ptr, count) (ptr = q, q += (count))
    TAKE(P->wte, (size_t)m->V * C);
    TAKE(P->wpe, (size_t)m->T * C);
    TAKE(P->lnf_g, C);
    TAKE(P->lnf_b, C);
    for (int l = 0; l < m->L; l++) {
        Layer *y = &P->layer[l];
        TAKE(y->ln1_g, C); TAKE(y->ln1_b, C);
        TAKE(y->w_qkv, 3 * C * C); TAKE(y->b_qkv, 3 * C);
        TAKE(y->w_proj, C * C); TAKE(y->b_proj, C);
        TAKE(y->ln2_g, C); TAKE(y->ln2_b, C);
        TAKE(y->w_fc, 4 * C * C); TAKE(y->b_fc, 4 * C);
        TAKE(y->w_fc2, 4 * C * C); TAKE(y->b_fc2, C);
    }
#undef TAKE
    return (size_t)(q - base);
}

static void entry(ckpt_layout_entry *e, size_t bytes) { *e = (ckpt_layout_entry){ .bytes = bytes, .align = 64 }; }

static void model_create(Model *m, int L, int T, int C_, int NH, int V, int B, float p_drop)
{
    memset(m, 0, sizeof *m);
    m->L = L; m->T = T; m->C = C_; m->NH = NH; m->V = V; m->B = B; m->N = B * T; m->p_drop = p_drop;
    m->p.layer = xcalloc((size_t)L, sizeof(Layer));
    m->g.layer = xcalloc((size_t)L, sizeof(Layer));
    const size_t C = (size_t)C_, per_layer = 12 * C * C + 13 * C;
    m->n_params = ((size_t)V + (size_t)T) * C + 2 * C + (size_t)L * per_layer;
    m->params = xcalloc(m->n_params, sizeof(float));
    m->grads = xcalloc(m->n_params, sizeof(float));
    if (carve(m->params, m, &m->p) != m->n_params || carve(m->grads, m, &m->g) != m->n_params) {
        fprintf(stderr, "internal error: parameter count\n");
        exit(1);
    }

    /* What each backward needs besides its input: the LN output (for the weight gradient) and
       its mean and rstd (x-hat is recomputed from the input), the matmul inputs, the attention
       probabilities, the pre-GELU activations, the GELU output and the dropout mask. Option 1
       leaves out the attention probabilities (B*NH*T*T floats) or the GELU output (4*N*C). The
       attention works one (sequence, head) at a time, so its forward and backward need only
       T x T floats of scratch per such piece: the forward workspace holds option 1's
       probabilities of one head; the backward workspace holds one head's dL/dscores and
       option 1's recomputed probabilities. The MLP's forward workspace holds option 1's GELU
       output (its backward recomputes it into WM_DA, which is free until the GELU output has
       been read). */
    const size_t f = sizeof(float), N = m->N, nc = N * C, att = (size_t)B * NH * T * T;
    const size_t tt = (size_t)T * T;
    for (int o = 0; o < N_OPTS; o++) {
        ckpt_layout_entry *ta = m->ta[o], *tm = m->tm[o];
        entry(&ta[TA_LN], nc * f);      entry(&ta[TA_MEAN], N * f);
        entry(&ta[TA_RSTD], N * f);     entry(&ta[TA_QKV], 3 * nc * f);
        entry(&ta[TA_ATT], o == 1 ? 0 : att * f);
        entry(&ta[TA_ATTY], nc * f);    entry(&ta[TA_MASK], nc);
        CHECK(ckpt_layout_compute(ta, TA_COUNT, &m->ta_bytes[o]));
        entry(&tm[TM_LN], nc * f);      entry(&tm[TM_MEAN], N * f);
        entry(&tm[TM_RSTD], N * f);     entry(&tm[TM_H], 4 * nc * f);
        entry(&tm[TM_A], o == 1 ? 0 : 4 * nc * f);
        entry(&tm[TM_MASK], nc);
        CHECK(ckpt_layout_compute(tm, TM_COUNT, &m->tm_bytes[o]));
    }
    entry(&m->wa[WA_DM], nc * f);      entry(&m->wa[WA_DATTY], nc * f);
    entry(&m->wa[WA_DATT], tt * f);    entry(&m->wa[WA_DQKV], 3 * nc * f);
    entry(&m->wa[WA_DLN], nc * f);     entry(&m->wa[WA_ATT], tt * f);
    CHECK(ckpt_layout_compute(m->wa, WA_COUNT, &m->wa_bytes));
    entry(&m->wm[WM_DM], nc * f);      entry(&m->wm[WM_DA], 4 * nc * f);
    entry(&m->wm[WM_DLN], nc * f);
    CHECK(ckpt_layout_compute(m->wm, WM_COUNT, &m->wm_bytes));
    m->fa_bytes = tt * f;
    m->fm_bytes = 4 * nc * f;
}

static void model_destroy(Model *m)
{
    free(m->params); free(m->grads); free(m->p.layer); free(m->g.layer);
}

/* GPT-2's initialisation: weights N(0, 0.02), the residual projections N(0, 0.02/sqrt(2L)),
   biases 0, LN gains 1. */
static void model_init(Model *m, uint64_t seed)
{
    Rng rng = { seed, 0 };
    const size_t C = m->C;
    memset(m->params, 0, m->n_params * sizeof(float));
    randn(&rng, m->p.wte, (size_t)m->V * C, 0.02f);
    randn(&rng, m->p.wpe, (size_t)m->T * C, 0.01f);
    for (size_t c = 0; c < C; c++) m->p.lnf_g[c] = 1.0f;
    const float resid_std = 0.02f / sqrtf(2.0f * (float)m->L);
    for (int l = 0; l < m->L; l++) {
        Layer *y = &m->p.layer[l];
        for (size_t c = 0; c < C; c++) y->ln1_g[c] = y->ln2_g[c] = 1.0f;
        randn(&rng, y->w_qkv, 3 * C * C, 0.02f);
        randn(&rng, y->w_proj, C * C, resid_std);
        randn(&rng, y->w_fc, 4 * C * C, 0.02f);
        randn(&rng, y->w_fc2, 4 * C * C, resid_std);
    }
}

/* ---- building blocks: each loop runs over contiguous rows ------------------------------------ */

/* out = LN(x) * g + b per row; keeps mean and rstd. Rows are independent: parallel. */
static void layernorm_forward(int N, int C, const float *x, const float *g, const float *b,
                              float *out, float *mean, float *rstd)
{
    EXAMPLE_PARALLEL_FOR
    for (int r = 0; r < N; r++) {
        const float *xr = x + (size_t)r * C;
        float *o = out + (size_t)r * C;
        float mu = 0.0f, var = 0.0f;
        for (int c = 0; c < C; c++) mu += xr[c];
        mu /= C;
        for (int c = 0; c < C; c++) var += (xr[c] - mu) * (xr[c] - mu);
        float rs = 1.0f / sqrtf(var / C + 1e-5f);
        for (int c = 0; c < C; c++) o[c] = (xr[c] - mu) * rs * g[c] + b[c];
        mean[r] = mu;
        rstd[r] = rs;
    }
}

/* Layer norm backward, given dout = dL/d(LN output): writes dx = resid + dL/dx (resid may be
   NULL: no residual; dx may be NULL: not wanted) and adds into dg, db. The per-row part is
   parallel; the parameter gradients sum over rows serially, in row order. */
static void layernorm_backward(int N, int C, const float *x, const float *mean, const float *rstd,
                               const float *g, const float *dout, const float *resid, float *dx,
                               float *dg, float *db)
{
    if (dx) {
        EXAMPLE_PARALLEL_FOR
        for (int r = 0; r < N; r++) {
            const float *xr = x + (size_t)r * C, *d = dout + (size_t)r * C;
            float *dxr = dx + (size_t)r * C;
            float sum_d = 0.0f, sum_dx = 0.0f;
            for (int c = 0; c < C; c++) {
                float xhat = (xr[c] - mean[r]) * rstd[r];
                sum_d += d[c] * g[c];
                sum_dx += d[c] * g[c] * xhat;
            }
            sum_d /= C;
            sum_dx /= C;
            for (int c = 0; c < C; c++) {
                float xhat = (xr[c] - mean[r]) * rstd[r];
                float v = rstd[r] * (d[c] * g[c] - sum_d - xhat * sum_dx);
                dxr[c] = resid ? resid[(size_t)r * C + c] + v : v;
            }
        }
    }
    for (int r = 0; r < N; r++) {
        const float *xr = x + (size_t)r * C, *d = dout + (size_t)r * C;
        for (int c = 0; c < C; c++) {
            dg[c] += d[c] * (xr[c] - mean[r]) * rstd[r];
            db[c] += d[c];
        }
    }
}

/* y[r] += bias, per row. */
static void add_bias(int N, int D, float *y, const float *bias)
{
    EXAMPLE_PARALLEL_FOR
    for (int r = 0; r < N; r++)
        for (int j = 0; j < D; j++) y[(size_t)r * D + j] += bias[j];
}

/* dbias += column sums of dy, serially over rows (a fixed order). */
static void bias_backward(int N, int D, const float *dy, float *dbias)
{
    for (int r = 0; r < N; r++)
        for (int j = 0; j < D; j++) dbias[j] += dy[(size_t)r * D + j];
}

/* y = x + Dropout(y), the dropout from the stage's Philox range `drop` (NULL: none) with one
   row of C values per C/4 blocks, so each row can be done on its own. */
static void dropout_residual(int N, int C, float p_drop, const ckpt_philox *drop, const float *x,
                             float *y, uint8_t *mask)
{
    EXAMPLE_PARALLEL_FOR
    for (int r = 0; r < N; r++) {
        size_t o = (size_t)r * C;
        if (drop) {
            ckpt_philox row = { .key = drop->key, .base = drop->base + o / 4, .count = (size_t)C / 4 };
            ckpt_philox_dropout(&row, p_drop, y + o, y + o, mask + o, (size_t)C);
        } else {
            memset(mask + o, 1, (size_t)C);
        }
        for (int c = 0; c < C; c++) y[o + c] += x[o + c];
    }
}

/* dm = dL/d(pre-dropout) = mask ? dy / (1-p) : 0. */
static void dropout_backward(int N, int C, float p_drop, const uint8_t *mask, const float *dy, float *dm)
{
    const float scale = 1.0f / (1.0f - p_drop);
    EXAMPLE_PARALLEL_FOR
    for (int r = 0; r < N; r++)
        for (int c = 0; c < C; c++) {
            size_t i = (size_t)r * C + c;
            dm[i] = mask[i] ? dy[i] * scale : 0.0f;
        }
}

/* GELU, tanh approximation. tanh(u) = 1 - 2 / (1 + e^2u) (cheaper than libm's tanhf). */
#define GELU_K 0.7978845608f    /* sqrt(2/pi) */

static float gelu_tanh(float x)
{
    return 1.0f - 2.0f / (1.0f + expf(2.0f * GELU_K * (x + 0.044715f * x * x * x)));
}

static float gelu_grad(float x)
{
    float t = gelu_tanh(x);
    float du = GELU_K * (1.0f + 3.0f * 0.044715f * x * x);     /* d(tanh argument)/dx */
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

/* ---- stage (a): attention --------------------------------------------------------------------

   qkv = LN1(x) Wqkv^T + b (N x 3C: q, k, v side by side). For each sequence b and head h (head
   size hs = C/NH) the slices Q, K, V are T x hs with row stride 3C:
       att = softmax_causal(Q K^T / sqrt(hs))     (T x T, zero above the diagonal)
       atty[:, h*hs..] = att V
   y = x + Dropout(atty Wproj^T + bproj). Forward and backward run one (b, h) at a time.
   Tape option 0 keeps att; option 1 (Megatron's selective recompute) does not, and its backward
   recomputes each head's att from the kept q and k with attention_probs, the forward's code. */

/* The attention probabilities of sequence b, head h into att (T x T): the scores Q K^T / sqrt(hs)
   by SGEMM, then a causal softmax per row. The forward runs it for every head in every tape
   option, the backward of option 1 again on the same q and k: the same calls, the same bits. */
static void attention_probs(const Model *m, const float *qkv, int b, int h, float *att)
{
    const int C = m->C, T = m->T, hs = C / m->NH, C3 = 3 * C;
    const float *q = qkv + (size_t)b * T * C3 + h * hs;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f / sqrtf((float)hs), q, C3, q + C, C3,
                0.0f, att, T);
    EXAMPLE_PARALLEL_FOR                        /* causal softmax, one row t at a time */
    for (int t = 0; t < T; t++) {
        float *a = att + (size_t)t * T;
        float mx = a[0], sum = 0.0f;
        for (int u = 1; u <= t; u++) mx = a[u] > mx ? a[u] : mx;
        for (int u = 0; u <= t; u++) { a[u] = expf(a[u] - mx); sum += a[u]; }
        for (int u = 0; u <= t; u++) a[u] /= sum;
        for (int u = t + 1; u < T; u++) a[u] = 0.0f;
    }
}

/* Writes tape option opt's pieces of tape (ws: the forward workspace, option 1's scratch). */
static void attention_forward(const Model *m, const Layer *p, const float *x, float *y, void *tape, void *ws,
                              int opt, const ckpt_philox *drop)
{
    const int N = m->N, C = m->C, T = m->T, NH = m->NH, hs = C / NH, C3 = 3 * C;
    const ckpt_layout_entry *lt = m->ta[opt];
    float *ln = ckpt_layout_ptr(tape, lt, TA_LN), *qkv = ckpt_layout_ptr(tape, lt, TA_QKV);
    float *mean = ckpt_layout_ptr(tape, lt, TA_MEAN), *rstd = ckpt_layout_ptr(tape, lt, TA_RSTD);
    float *att = opt == 0 ? ckpt_layout_ptr(tape, lt, TA_ATT) : NULL, *atty = ckpt_layout_ptr(tape, lt, TA_ATTY);
    uint8_t *mask = ckpt_layout_ptr(tape, lt, TA_MASK);

    layernorm_forward(N, C, x, p->ln1_g, p->ln1_b, ln, mean, rstd);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, C3, C, 1.0f, ln, C, p->w_qkv, C, 0.0f, qkv, C3);
    add_bias(N, C3, qkv, p->b_qkv);
    for (int b = 0; b < m->B; b++)
        for (int h = 0; h < NH; h++) {          /* att = softmax(Q K^T * scale), atty = att V */
            float *a = att ? att + ((size_t)b * NH + h) * T * T : ws;
            attention_probs(m, qkv, b, h, a);
            const float *v = qkv + (size_t)b * T * C3 + 2 * C + h * hs;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, v, C3, 0.0f,
                        atty + (size_t)b * T * C + h * hs, C);
        }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, C, C, 1.0f, atty, C, p->w_proj, C, 0.0f, y, C);
    add_bias(N, C, y, p->b_proj);
    dropout_residual(N, C, m->p_drop, drop, x, y, mask);
}

/* Reads a tape of option opt. */
static void attention_backward(const Model *m, const Layer *p, Layer *g, const float *x, const void *tape,
                               int opt, const float *dy, float *dx, void *ws)
{
    const int N = m->N, C = m->C, T = m->T, NH = m->NH, hs = C / NH, C3 = 3 * C;
    const ckpt_layout_entry *lt = m->ta[opt];
    const float *ln = ckpt_layout_ptr(tape, lt, TA_LN), *qkv = ckpt_layout_ptr(tape, lt, TA_QKV);
    const float *mean = ckpt_layout_ptr(tape, lt, TA_MEAN), *rstd = ckpt_layout_ptr(tape, lt, TA_RSTD);
    const float *att = opt == 0 ? ckpt_layout_ptr(tape, lt, TA_ATT) : NULL;
    const float *atty = ckpt_layout_ptr(tape, lt, TA_ATTY);
    const uint8_t *mask = ckpt_layout_ptr(tape, lt, TA_MASK);
    float *dm = ckpt_layout_ptr(ws, m->wa, WA_DM), *datty = ckpt_layout_ptr(ws, m->wa, WA_DATTY);
    float *datt = ckpt_layout_ptr(ws, m->wa, WA_DATT), *dqkv = ckpt_layout_ptr(ws, m->wa, WA_DQKV);
    float *dln = ckpt_layout_ptr(ws, m->wa, WA_DLN), *att_ws = ckpt_layout_ptr(ws, m->wa, WA_ATT);
    const float scale = 1.0f / sqrtf((float)hs);

    dropout_backward(N, C, m->p_drop, mask, dy, dm);
    bias_backward(N, C, dm, g->b_proj);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, C, C, N, 1.0f, dm, C, atty, C, 1.0f, g->w_proj, C);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, C, 1.0f, dm, C, p->w_proj, C, 0.0f, datty, C);
    for (int b = 0; b < m->B; b++)
        for (int h = 0; h < NH; h++) {
            size_t o = (size_t)b * T * C3 + h * hs;
            const float *dyh = datty + (size_t)b * T * C + h * hs, *a = att_ws;
            if (att) a = att + ((size_t)b * NH + h) * T * T;
            else attention_probs(m, qkv, b, h, att_ws);     /* option 1: recompute */
            /* datt = datty V^T, dV = att^T datty */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, dyh, C, qkv + o + 2 * C, C3,
                        0.0f, datt, T);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, dyh, C, 0.0f,
                        dqkv + o + 2 * C, C3);
            EXAMPLE_PARALLEL_FOR                /* softmax backward, in place: datt = dL/dscores */
            for (int t = 0; t < T; t++) {
                const float *ar = a + (size_t)t * T;
                float *d = datt + (size_t)t * T;
                float dot = 0.0f;
                for (int u = 0; u <= t; u++) dot += ar[u] * d[u];
                for (int u = 0; u <= t; u++) d[u] = ar[u] * (d[u] - dot);
                for (int u = t + 1; u < T; u++) d[u] = 0.0f;
            }
            /* dQ = datt K * scale, dK = datt^T Q * scale */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, scale, datt, T, qkv + o + C, C3,
                        0.0f, dqkv + o, C3);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, scale, datt, T, qkv + o, C3,
                        0.0f, dqkv + o + C, C3);
        }
    bias_backward(N, C3, dqkv, g->b_qkv);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, C3, C, N, 1.0f, dqkv, C3, ln, C, 1.0f, g->w_qkv, C);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, C3, 1.0f, dqkv, C3, p->w_qkv, C, 0.0f, dln, C);
    layernorm_backward(N, C, x, mean, rstd, p->ln1_g, dln, dy, dx, g->ln1_g, g->ln1_b);
}

/* ---- stage (b): MLP: y = x + Dropout(GELU(LN2(x) Wfc^T + bfc) Wfc2^T + bfc2) -----------------

   Tape option 0 keeps the GELU output a; option 1 (llm.c's -r 1) does not, and its backward
   recomputes a from the kept pre-activation h with gelu_forward, the forward's code. */

/* a = GELU(h) over N rows of H: the forward, and the backward of option 1 on the same h. */
static void gelu_forward(int N, int H, const float *h, float *a)
{
    EXAMPLE_PARALLEL_FOR
    for (int r = 0; r < N; r++)
        for (int j = 0; j < H; j++) {
            size_t i = (size_t)r * H + j;
            a[i] = 0.5f * h[i] * (1.0f + gelu_tanh(h[i]));
        }
}

/* Writes tape option opt's pieces of tape (ws: the forward workspace, option 1's GELU output). */
static void mlp_forward(const Model *m, const Layer *p, const float *x, float *y, void *tape, void *ws, int opt,
                        const ckpt_philox *drop)
{
    const int N = m->N, C = m->C, H = 4 * C;
    const ckpt_layout_entry *lt = m->tm[opt];
    float *ln = ckpt_layout_ptr(tape, lt, TM_LN), *h = ckpt_layout_ptr(tape, lt, TM_H);
    float *mean = ckpt_layout_ptr(tape, lt, TM_MEAN), *rstd = ckpt_layout_ptr(tape, lt, TM_RSTD);
    float *a = opt == 0 ? ckpt_layout_ptr(tape, lt, TM_A) : ws;
    uint8_t *mask = ckpt_layout_ptr(tape, lt, TM_MASK);

    layernorm_forward(N, C, x, p->ln2_g, p->ln2_b, ln, mean, rstd);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, H, C, 1.0f, ln, C, p->w_fc, C, 0.0f, h, H);
    add_bias(N, H, h, p->b_fc);
    gelu_forward(N, H, h, a);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, C, H, 1.0f, a, H, p->w_fc2, H, 0.0f, y, C);
    add_bias(N, C, y, p->b_fc2);
    dropout_residual(N, C, m->p_drop, drop, x, y, mask);
}

/* Reads a tape of option opt. */
static void mlp_backward(const Model *m, const Layer *p, Layer *g, const float *x, const void *tape, int opt,
                         const float *dy, float *dx, void *ws)
{
    const int N = m->N, C = m->C, H = 4 * C;
    const ckpt_layout_entry *lt = m->tm[opt];
    const float *ln = ckpt_layout_ptr(tape, lt, TM_LN), *h = ckpt_layout_ptr(tape, lt, TM_H);
    const float *mean = ckpt_layout_ptr(tape, lt, TM_MEAN), *rstd = ckpt_layout_ptr(tape, lt, TM_RSTD);
    const uint8_t *mask = ckpt_layout_ptr(tape, lt, TM_MASK);
    float *dm = ckpt_layout_ptr(ws, m->wm, WM_DM), *da = ckpt_layout_ptr(ws, m->wm, WM_DA);
    float *dln = ckpt_layout_ptr(ws, m->wm, WM_DLN);
    const float *a = da;

    if (opt == 0) a = ckpt_layout_ptr(tape, lt, TM_A);
    else gelu_forward(N, H, h, da);             /* option 1: recompute a into da, read before da is written */
    dropout_backward(N, C, m->p_drop, mask, dy, dm);
    bias_backward(N, C, dm, g->b_fc2);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, C, H, N, 1.0f, dm, C, a, H, 1.0f, g->w_fc2, H);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, H, C, 1.0f, dm, C, p->w_fc2, H, 0.0f, da, H);
    EXAMPLE_PARALLEL_FOR                        /* da becomes dL/dh */
    for (int r = 0; r < N; r++)
        for (int j = 0; j < H; j++) da[(size_t)r * H + j] *= gelu_grad(h[(size_t)r * H + j]);
    bias_backward(N, H, da, g->b_fc);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, C, N, 1.0f, da, H, ln, C, 1.0f, g->w_fc, C);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, H, 1.0f, da, H, p->w_fc, C, 0.0f, dln, C);
    layernorm_backward(N, C, x, mean, rstd, p->ln2_g, dln, dy, dx, g->ln2_g, g->ln2_b);
}

/* ---- the ckpt callbacks: stage s is layer s/2, attention when s is even ----------------------

   ctx->tape_option says which tape option a forward writes (keeping it or not: a forward that
   keeps no tape runs option 1, the smaller tape) and which one a backward reads. Every option's
   forward computes the same output and draws the same random numbers in the same order: only
   what it saves differs. */

static ckpt_result stage_forward(const ckpt_fwd_args *args)
{
    const Model *m = args->ctx->user;
    int s = args->ctx->stage, opt = args->ctx->tape_option;
    if (opt < 0 || opt >= N_OPTS) return CKPT_ERR_BAD_ARGUMENT;
    ckpt_philox drop;
    if (m->p_drop > 0.0f) {     /* a recomputation gets the same range back: the same mask */
        ckpt_result r = ckpt_ctx_rng(args->ctx, (uint64_t)m->N * m->C / 4, &drop);
        if (r != CKPT_OK) return r;
    }
    const ckpt_philox *d = m->p_drop > 0.0f ? &drop : NULL;
    if (s % 2 == 0) attention_forward(m, &m->p.layer[s / 2], args->in, args->out, args->tape, args->workspace, opt, d);
    else mlp_forward(m, &m->p.layer[s / 2], args->in, args->out, args->tape, args->workspace, opt, d);
    return CKPT_OK;
}

static ckpt_result stage_backward(const ckpt_bwd_args *args)
{
    const Model *m = args->ctx->user;
    int s = args->ctx->stage, opt = args->ctx->tape_option;
    if (opt < 0 || opt >= N_OPTS) return CKPT_ERR_BAD_ARGUMENT;
    if (s % 2 == 0)
        attention_backward(m, &m->p.layer[s / 2], &m->g.layer[s / 2], args->in, args->tape, opt,
                           args->grad_out, args->grad_in, args->workspace);
    else
        mlp_backward(m, &m->p.layer[s / 2], &m->g.layer[s / 2], args->in, args->tape, opt, args->grad_out,
                     args->grad_in, args->workspace);
    return CKPT_OK;
}

/* ---- outside the chain: embedding, final LN, tied LM head, cross-entropy --------------------- */

typedef struct Batch {          /* host buffers of one step; the caller owns X[0], G[0], G[n] */
    int *tokens, *targets;      /* N each */
    float *x0, *dx0;            /* X[0] and G[0], N x C */
    float *lnf, *lnf_mean, *lnf_rstd, *dlnf, *dout;   /* final LN; dout = G[n] */
    float *logits;              /* N x V: probabilities, then dL/dlogits */
    double *row_loss;           /* N */
} Batch;

static void embed_forward(const Model *m, Batch *bt)
{
    const int C = m->C;
    EXAMPLE_PARALLEL_FOR
    for (int r = 0; r < m->N; r++) {
        const float *te = m->p.wte + (size_t)bt->tokens[r] * C, *pe = m->p.wpe + (size_t)(r % m->T) * C;
        for (int c = 0; c < C; c++) bt->x0[(size_t)r * C + c] = te[c] + pe[c];
    }
}

/* Scatters G[0] into the embedding gradients: serial, in row order (rows share tokens). */
static void embed_backward(Model *m, const Batch *bt)
{
    const int C = m->C;
    for (int r = 0; r < m->N; r++) {
        float *dte = m->g.wte + (size_t)bt->tokens[r] * C, *dpe = m->g.wpe + (size_t)(r % m->T) * C;
        const float *d = bt->dx0 + (size_t)r * C;
        for (int c = 0; c < C; c++) { dte[c] += d[c]; dpe[c] += d[c]; }
    }
}

/* Mean cross-entropy of the next token given X[n] (out); with `backward`, also the head's
   parameter gradients and G[n] in bt->dout. The loss is summed in double, in row order. */
static double head(Model *m, Batch *bt, const float *out, int backward)
{
    const int N = m->N, C = m->C, V = m->V;
    layernorm_forward(N, C, out, m->p.lnf_g, m->p.lnf_b, bt->lnf, bt->lnf_mean, bt->lnf_rstd);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, V, C, 1.0f, bt->lnf, C, m->p.wte, C, 0.0f, bt->logits, V);
    EXAMPLE_PARALLEL_FOR                        /* softmax; logits become dL/dlogits */
    for (int r = 0; r < N; r++) {
        float *z = bt->logits + (size_t)r * V;
        float mx = z[0];
        for (int v = 1; v < V; v++) mx = z[v] > mx ? z[v] : mx;
        double sum = 0.0;
        for (int v = 0; v < V; v++) sum += exp((double)z[v] - mx);
        bt->row_loss[r] = log(sum) - ((double)z[bt->targets[r]] - mx);
        float inv = (float)(1.0 / sum);
        for (int v = 0; v < V; v++) z[v] = expf(z[v] - mx) * inv / (float)N;
        z[bt->targets[r]] -= 1.0f / (float)N;
    }
    double loss = 0.0;
    for (int r = 0; r < N; r++) loss += bt->row_loss[r];
    if (backward) {
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, V, C, N, 1.0f, bt->logits, V, bt->lnf, C, 1.0f, m->g.wte, C);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, V, 1.0f, bt->logits, V, m->p.wte, C, 0.0f, bt->dlnf, C);
        layernorm_backward(N, C, out, bt->lnf_mean, bt->lnf_rstd, m->p.lnf_g, bt->dlnf, NULL, bt->dout,
                           m->g.lnf_g, m->g.lnf_b);
    }
    return loss / N;
}

/* ---- the data: a fixed random Markov chain with low-entropy transitions ---------------------- */

typedef struct Source {
    int V;
    float *cdf;                 /* V x V: row i is the cumulative distribution of the next token */
    double entropy;             /* entropy rate, nats per token (the best possible loss) */
    Rng rng;
} Source;

static void source_create(Source *src, int V, uint64_t seed)
{
    Rng rng = { seed ^ 0x5eedULL, 0 };
    float *w = xcalloc((size_t)V, sizeof(float));
    double *pi = xcalloc((size_t)V, sizeof(double)), *nx = xcalloc((size_t)V, sizeof(double));
    double *h = xcalloc((size_t)V, sizeof(double));
    src->V = V;
    src->cdf = xcalloc((size_t)V * V, sizeof(float));
    for (int i = 0; i < V; i++) {   /* weights exp(3 z): a few likely successors per token */
        randn(&rng, w, (size_t)V, 3.0f);
        double sum = 0.0, acc = 0.0;
        for (int j = 0; j < V; j++) sum += exp(w[j]);
        for (int j = 0; j < V; j++) {
            double pr = exp(w[j]) / sum;
            acc += pr;
            src->cdf[(size_t)i * V + j] = (float)acc;
            if (pr > 0) h[i] -= pr * log(pr);
        }
        src->cdf[(size_t)i * V + V - 1] = 1.0f;
    }
    for (int i = 0; i < V; i++) pi[i] = 1.0 / V;   /* stationary distribution: power iteration */
    for (int it = 0; it < 500; it++) {
        memset(nx, 0, (size_t)V * sizeof(double));
        for (int i = 0; i < V; i++) {
            double prev = 0.0;
            for (int j = 0; j < V; j++) {
                double c = src->cdf[(size_t)i * V + j];
                nx[j] += pi[i] * (c - prev);
                prev = c;
            }
        }
        memcpy(pi, nx, (size_t)V * sizeof(double));
    }
    src->entropy = 0.0;
    for (int i = 0; i < V; i++) src->entropy += pi[i] * h[i];
    src->rng = (Rng){ seed ^ 0xda7aULL, 0 };
    free(w); free(pi); free(nx); free(h);
}

/* Fills a batch: each sequence starts at a uniform token and follows the chain for T+1 tokens. */
static void source_batch(Source *src, const Model *m, Batch *bt)
{
    float *u = xcalloc((size_t)m->T + 1, sizeof(float));
    for (int b = 0; b < m->B; b++) {
        randu(&src->rng, u, (size_t)m->T + 1);
        int tok = (int)(u[0] * src->V);
        for (int t = 0; t < m->T; t++) {
            const float *cdf = src->cdf + (size_t)tok * src->V;
            int next = 0;
            while (next < src->V - 1 && cdf[next] <= u[t + 1]) next++;
            bt->tokens[b * m->T + t] = tok;
            bt->targets[b * m->T + t] = next;
            tok = next;
        }
    }
    free(u);
}

static void source_destroy(Source *src) { free(src->cdf); }

/* ---- training under one plan ----------------------------------------------------------------- */

typedef struct Config {
    int L, T, C, NH, V, B, steps, threads, gradcheck, toy;
    float p_drop, lr;
    double budget_frac, bandwidth_gbs;
    uint64_t seed;
} Config;

typedef struct Run {
    ckpt_policy policy;
    int option;                 /* -1: planned by policy; k >= 0: store-all's schedule, tapes in option k */
    int feasible;
    ckpt_plan_info info;
    ckpt_chain_stats stats;
    int kept[2][N_OPTS];        /* F ops that keep their tape, per stage kind (attn, mlp) and option */
    double ms_per_step;
    double *loss;               /* per step */
    float *grads;               /* the last step's parameter gradients, then G[0] */
} Run;

typedef struct Session {
    Config cfg;
    Model m;
    Batch bt;
    float *init, *adam_m, *adam_v;
    ckpt_stage_desc *stages;
    ckpt_backend be, engine;    /* plain CPU backend; with a throttled copy engine for offload */
} Session;

static ckpt_chain *chain_create(Session *ss, ckpt_backend *be)
{
    ckpt_chain_desc cd = {0};
    cd.stages = ss->stages;
    cd.n_stages = 2 * ss->m.L;
    cd.input_bytes = (size_t)ss->m.N * ss->m.C * sizeof(float);
    cd.backend = be;
    cd.seed = ss->cfg.seed;
    cd.logger.fn = log_errors;
    ckpt_chain *chain;
    CHECK(ckpt_chain_create(&cd, &chain));
    return chain;
}

/* Store-all's schedule with every tape kept in tape option `option` (option 0 where a stage has
   no such option) into ops (4L entries); returns their number. */
static int store_all_ops(const Session *ss, int option, ckpt_op *ops)
{
    const int n = 2 * ss->m.L;
    int k = 0;
    for (int i = 1; i <= n; i++)
        ops[k++] = (ckpt_op){ .kind = CKPT_OP_F, .stage = i, .tape = 1,
                              .option = option <= ss->stages[i - 1].n_tape_options ? option : 0 };
    for (int i = n; i >= 1; i--) ops[k++] = (ckpt_op){ .kind = CKPT_OP_B, .stage = i };
    return k;
}

/* A chain planned by pd, or (pd NULL) given store-all's schedule with every tape in `option`. */
static ckpt_chain *chain_open(Session *ss, ckpt_backend *be, const ckpt_plan_desc *pd, int option,
                              ckpt_plan_info *info, ckpt_result *res)
{
    ckpt_chain *chain = chain_create(ss, be);
    if (pd) {
        *res = ckpt_chain_plan(chain, pd, info);
    } else {
        ckpt_op *ops = xcalloc(4 * (size_t)ss->m.L, sizeof(ckpt_op));
        *res = ckpt_chain_set_schedule(chain, ops, store_all_ops(ss, option, ops), info);
        free(ops);
    }
    if (*res != CKPT_OK) { ckpt_chain_destroy(chain); return NULL; }
    return chain;
}

/* Counts the F ops of ops that keep their tape, per stage kind and tape option. */
static void count_kept(const ckpt_op *ops, int n_ops, int kept[2][N_OPTS])
{
    memset(kept, 0, 2 * sizeof kept[0]);
    for (int i = 0; i < n_ops; i++)
        if (ops[i].kind == CKPT_OP_F && ops[i].tape && ops[i].option >= 0 && ops[i].option < N_OPTS)
            kept[(ops[i].stage - 1) % 2][ops[i].option]++;
}

/* Store-all's peak, from a dry plan: no arena is allocated. */
static uint64_t store_all_peak(Session *ss)
{
    ckpt_chain *chain = chain_create(ss, &ss->be);
    ckpt_plan_info info;
    CHECK(ckpt_chain_plan_dry(chain, NULL, &info));
    ckpt_chain_destroy(chain);
    return info.store_all_peak;
}

/* One forward and backward; gradients are zeroed first. Returns the loss. */
static double step(Session *ss, ckpt_chain *chain)
{
    Model *m = &ss->m;
    const void *out = NULL;
    memset(m->grads, 0, m->n_params * sizeof(float));
    embed_forward(m, &ss->bt);
    CHECK(ckpt_forward(chain, ss->bt.x0, &out));
    double loss = head(m, &ss->bt, out, 1);
    CHECK(ckpt_backward(chain, ss->bt.dout, ss->bt.dx0));
    embed_backward(m, &ss->bt);
    return loss;
}

/* Adam (beta1 0.9, beta2 0.95, no weight decay); t counts from 1. Element-wise: parallel. */
static void adam(Session *ss, int t)
{
    Model *m = &ss->m;
    const float b1 = 0.9f, b2 = 0.95f, lr = ss->cfg.lr;
    const float c1 = 1.0f - powf(b1, (float)t), c2 = 1.0f - powf(b2, (float)t);
    const long n = (long)m->n_params;
    EXAMPLE_PARALLEL_FOR
    for (long i = 0; i < n; i++) {
        float g = m->grads[i];
        ss->adam_m[i] = b1 * ss->adam_m[i] + (1.0f - b1) * g;
        ss->adam_v[i] = b2 * ss->adam_v[i] + (1.0f - b2) * g * g;
        m->params[i] -= lr * (ss->adam_m[i] / c1) / (sqrtf(ss->adam_v[i] / c2) + 1e-8f);
    }
}

/* Trains from the initial weights on the seed's data under plan desc pd, or (pd NULL) under
   store-all's schedule with every tape in tape option `option`; fills run. */
static void train(Session *ss, ckpt_plan_desc *pd, int option, Run *run)
{
    Model *m = &ss->m;
    const Config *cfg = &ss->cfg;
    size_t nc = (size_t)m->N * m->C;
    ckpt_result res;
    memset(run, 0, sizeof *run);
    run->policy = pd ? pd->policy : CKPT_POLICY_CUSTOM;
    run->option = pd ? -1 : option;
    if (pd && pd->policy == CKPT_POLICY_OFFLOAD && pd->bandwidth == 0)
        pd->bandwidth = cfg->bandwidth_gbs * 1e9 / 1e3;     /* bytes per ms: stage times are in ms */
    ckpt_chain *chain = chain_open(ss, pd && pd->policy == CKPT_POLICY_OFFLOAD ? &ss->engine : &ss->be, pd,
                                   option, &run->info, &res);
    if (res == CKPT_ERR_INFEASIBLE) return;
    CHECK(res);
    run->feasible = 1;
    int n_ops;
    const ckpt_op *ops = ckpt_plan_ops(ckpt_chain_get_plan(chain), &n_ops);
    count_kept(ops, n_ops, run->kept);
    memcpy(m->params, ss->init, m->n_params * sizeof(float));
    memset(ss->adam_m, 0, m->n_params * sizeof(float));
    memset(ss->adam_v, 0, m->n_params * sizeof(float));
    Source src;
    source_create(&src, m->V, cfg->seed);
    run->loss = xcalloc((size_t)cfg->steps, sizeof(double));
    double *ms = xcalloc((size_t)cfg->steps, sizeof(double));
    int timed = 0;
    for (int s = 0; s < cfg->steps; s++) {
        source_batch(&src, m, &ss->bt);
        double t0 = now_ms();
        run->loss[s] = step(ss, chain);
        adam(ss, s + 1);
        if (s > 0 || cfg->steps == 1) ms[timed++] = now_ms() - t0;    /* step 1 warms up */
    }
    run->ms_per_step = median(ms, timed);
    CHECK(ckpt_chain_get_stats(chain, &run->stats));
    run->grads = xcalloc(m->n_params + nc, sizeof(float));
    memcpy(run->grads, m->grads, m->n_params * sizeof(float));
    memcpy(run->grads + m->n_params, ss->bt.dx0, nc * sizeof(float));
    free(ms);
    source_destroy(&src);
    ckpt_chain_destroy(chain);
}

/* ---- measuring: stage times and the tape options' extra backward time ------------------------

   Stage times come from ckpt_chain_measure under store-all, whose tapes are option 0's, as
   fwd_time and bwd_time must be. Option 1's bwd_extra is the time of the work its backward adds
   to option 0's: attention_probs for every (sequence, head) of an attention stage, gelu_forward
   over the N x 4C pre-activations of an MLP stage. Those two kernels are timed alone with now_ms
   (CLOCK_MONOTONIC, the clock ckpt_chain_measure reads around the CPU backend's callbacks), on the
   q, k and pre-activations layer 0's forward writes for the measuring batch; every layer has the
   same shapes, so one figure per stage kind. As a check, each round also measures a step under
   store-all's schedule with every tape in option 1, and the program prints each stage's backward
   under option 1 minus under option 0, paired by round: timed alone, the kernels run with their
   inputs in the caches and miss what recomputing does to the backward around them. Everything is
   measured in the same rounds (one warm-up, then `rounds` of: PROBE_RUNS runs of each kernel, a
   store-all step, an option-1 step), and every figure is a median over the rounds, so a change
   in the machine's load (other processes on shared cores) hits all of them alike. At the default
   size on a shared 2-core machine, four runs gave attention 0.67-0.78 ms alone against a median
   over the layers of 0.40-0.65 ms in the backward (likely because option 0 reads its kept
   probabilities from memory, which option 1 does not), and the MLP 1.40-2.10 ms alone against 1.23-2.01 ms:
   the kernels alone, the simpler and steadier figure, are what the planner gets. */
enum { PROBE_RUNS = 3 };

typedef struct Probe { void *tape_a, *tape_m; float *scratch, *y; } Probe;

static void *xalloc64(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) { fprintf(stderr, "out of memory (%zu bytes)\n", bytes); exit(1); }
    return p;
}

/* Layer 0's option-0 tapes for X[0] = x (no dropout), the kernels' inputs. */
static void probe_open(const Model *m, const float *x, Probe *pr)
{
    pr->tape_a = xalloc64(m->ta_bytes[0]);
    pr->tape_m = xalloc64(m->tm_bytes[0]);
    pr->scratch = xalloc64(m->fa_bytes > m->fm_bytes ? m->fa_bytes : m->fm_bytes);
    pr->y = xcalloc((size_t)m->N * m->C, sizeof(float));
    attention_forward(m, &m->p.layer[0], x, pr->y, pr->tape_a, pr->scratch, 0, NULL);
    mlp_forward(m, &m->p.layer[0], x, pr->y, pr->tape_m, pr->scratch, 0, NULL);
}

/* One timed run of each recomputation: ms[0] attention, ms[1] MLP. */
static void probe_time(const Model *m, const Probe *pr, double ms[2])
{
    const float *qkv = ckpt_layout_ptr(pr->tape_a, m->ta[0], TA_QKV), *h = ckpt_layout_ptr(pr->tape_m, m->tm[0], TM_H);
    double t0 = now_ms();
    for (int b = 0; b < m->B; b++)
        for (int hd = 0; hd < m->NH; hd++) attention_probs(m, qkv, b, hd, pr->scratch);
    double t1 = now_ms();
    gelu_forward(m->N, 4 * m->C, h, pr->scratch);
    ms[0] = t1 - t0;
    ms[1] = now_ms() - t1;
}

static void probe_close(Probe *pr) { free(pr->tape_a); free(pr->tape_m); free(pr->scratch); free(pr->y); }

/* Fills t (2L entries, ms) with option 0's stage times, dbwd (2L) with each stage's backward
   under option 1 minus under option 0, and extra[0..1] with option 1's bwd_extra of attention and
   MLP; no parameter update. Returns the milliseconds it took. */
static double measure_stages(Session *ss, int rounds, ckpt_stage_time *t, double *dbwd, double extra[2])
{
    Model *m = &ss->m;
    const int n = 2 * m->L;
    ckpt_plan_desc pd = {0};
    pd.policy = CKPT_POLICY_STORE_ALL;
    ckpt_result res;
    double t_start = now_ms();
    ckpt_chain *chain[2];
    chain[0] = chain_open(ss, &ss->be, &pd, 0, NULL, &res);
    CHECK(res);
    chain[1] = chain_open(ss, &ss->be, NULL, 1, NULL, &res);
    CHECK(res);
    Source src;
    source_create(&src, m->V, ss->cfg.seed + 1);
    source_batch(&src, m, &ss->bt);
    step(ss, chain[0]);                     /* warm-up; fills X[0] (bt.x0) and G[n] (bt.dout) */
    CHECK(ckpt_chain_measure(chain[1], ss->bt.x0, ss->bt.dout, ss->bt.dx0, 1, NULL));
    Probe pr;
    double ms[2], *kx[2] = { xcalloc((size_t)rounds * PROBE_RUNS, sizeof(double)),
                             xcalloc((size_t)rounds * PROBE_RUNS, sizeof(double)) };
    probe_open(m, ss->bt.x0, &pr);
    probe_time(m, &pr, ms);
    ckpt_stage_time *r = xcalloc((size_t)rounds * 2 * n, sizeof *r);
    for (int s = 0; s < rounds; s++) {
        for (int k = 0; k < PROBE_RUNS; k++) {
            probe_time(m, &pr, ms);
            kx[0][s * PROBE_RUNS + k] = ms[0];
            kx[1][s * PROBE_RUNS + k] = ms[1];
        }
        for (int o = 0; o < 2; o++)
            CHECK(ckpt_chain_measure(chain[o], ss->bt.x0, ss->bt.dout, ss->bt.dx0, 1, r + ((size_t)s * 2 + o) * n));
    }
    extra[0] = median(kx[0], rounds * PROBE_RUNS);
    extra[1] = median(kx[1], rounds * PROBE_RUNS);
    double *v = xcalloc((size_t)rounds, sizeof(double));
    for (int i = 0; i < n; i++) {
        const ckpt_stage_time *r0 = r + i, *r1 = r + n + i;     /* round s: r0[2 n s], r1[2 n s] */
        memset(&t[i], 0, sizeof t[i]);
        for (int s = 0; s < rounds; s++) v[s] = r0[(size_t)s * 2 * n].fwd_time;
        t[i].fwd_time = median(v, rounds);
        for (int s = 0; s < rounds; s++) v[s] = r0[(size_t)s * 2 * n].bwd_time;
        t[i].bwd_time = median(v, rounds);
        for (int s = 0; s < rounds; s++) v[s] = r1[(size_t)s * 2 * n].bwd_time - r0[(size_t)s * 2 * n].bwd_time;
        dbwd[i] = median(v, rounds);
    }
    memset(m->grads, 0, m->n_params * sizeof(float));   /* the measuring steps were real steps */
    free(v); free(r); free(kx[0]); free(kx[1]);
    probe_close(&pr);
    source_destroy(&src);
    ckpt_chain_destroy(chain[0]);
    ckpt_chain_destroy(chain[1]);
    return now_ms() - t_start;
}

static void session_open(Session *ss, const Config *cfg)
{
    memset(ss, 0, sizeof *ss);
    ss->cfg = *cfg;
    example_set_threads(cfg->threads);
    Model *m = &ss->m;
    model_create(m, cfg->L, cfg->T, cfg->C, cfg->NH, cfg->V, cfg->B, cfg->p_drop);
    model_init(m, cfg->seed);
    ss->init = xcalloc(m->n_params, sizeof(float));
    memcpy(ss->init, m->params, m->n_params * sizeof(float));
    ss->adam_m = xcalloc(m->n_params, sizeof(float));
    ss->adam_v = xcalloc(m->n_params, sizeof(float));
    const size_t N = m->N, nc = N * m->C;
    ss->bt = (Batch){ .tokens = xcalloc(N, sizeof(int)), .targets = xcalloc(N, sizeof(int)),
                      .x0 = xcalloc(nc, sizeof(float)), .dx0 = xcalloc(nc, sizeof(float)),
                      .lnf = xcalloc(nc, sizeof(float)), .lnf_mean = xcalloc(N, sizeof(float)),
                      .lnf_rstd = xcalloc(N, sizeof(float)), .dlnf = xcalloc(nc, sizeof(float)),
                      .dout = xcalloc(nc, sizeof(float)), .logits = xcalloc(N * m->V, sizeof(float)),
                      .row_loss = xcalloc(N, sizeof(double)) };
    ss->stages = xcalloc(2 * (size_t)m->L, sizeof(ckpt_stage_desc));
    for (int i = 0; i < 2 * m->L; i++) {
        ckpt_stage_desc *st = &ss->stages[i];
        int attn = i % 2 == 0;
        st->name = attn ? "attn" : "mlp";
        st->forward = stage_forward;
        st->backward = stage_backward;
        st->user = m;
        st->out_bytes = nc * sizeof(float);
        st->tape_bytes = attn ? m->ta_bytes[0] : m->tm_bytes[0];
        st->fwd_workspace_bytes = attn ? m->fa_bytes : m->fm_bytes;
        st->bwd_workspace_bytes = attn ? m->wa_bytes : m->wm_bytes;
        st->fwd_time = attn ? 1.0 : 2.0;    /* until measured */
        st->bwd_time = 2.0 * st->fwd_time;
        st->n_tape_options = N_OPTS - 1;    /* option 1: bwd_extra until measured */
        st->tape_options[0] = (ckpt_tape_option){ .tape_bytes = attn ? m->ta_bytes[1] : m->tm_bytes[1],
                                                  .bwd_extra = 0.1 * st->bwd_time };
    }
    CHECK(ckpt_cpu_backend_create(NULL, &ss->be));
    ckpt_cpu_desc ed = {0};
    ed.copy_engine = 1;
    ed.copy_bandwidth = cfg->bandwidth_gbs * 1e9;
    CHECK(ckpt_cpu_backend_create(&ed, &ss->engine));
}

static void session_close(Session *ss)
{
    Batch *b = &ss->bt;
    ckpt_cpu_backend_destroy(&ss->be);
    ckpt_cpu_backend_destroy(&ss->engine);
    free(b->tokens); free(b->targets); free(b->x0); free(b->dx0); free(b->lnf); free(b->lnf_mean);
    free(b->lnf_rstd); free(b->dlnf); free(b->dout); free(b->logits); free(b->row_loss);
    free(ss->stages); free(ss->init); free(ss->adam_m); free(ss->adam_v);
    model_destroy(&ss->m);
}

/* ---- --gradcheck: the hand-written backward against central finite differences --------------- */

/* The loss of the current parameters on the current batch, through a fresh store-all chain:
   every chain with the same seed draws the same dropout masks in its first step. */
static double eval_loss(Session *ss, int backward)
{
    ckpt_plan_desc pd = {0};
    pd.policy = CKPT_POLICY_STORE_ALL;
    ckpt_result res;
    ckpt_chain *chain = chain_open(ss, &ss->be, &pd, 0, NULL, &res);
    CHECK(res);
    double loss;
    if (backward) {
        loss = step(ss, chain);
    } else {
        const void *out = NULL;
        embed_forward(&ss->m, &ss->bt);
        CHECK(ckpt_forward(chain, ss->bt.x0, &out));
        loss = head(&ss->m, &ss->bt, out, 0);
        ckpt_chain_reset_step(chain);
    }
    ckpt_chain_destroy(chain);
    return loss;
}

/* p[i] += N(0, std^2) */
static void perturb(Rng *rng, float *p, size_t n, float std)
{
    float *z = xcalloc(n, sizeof(float));
    randn(rng, z, n, std);
    for (size_t i = 0; i < n; i++) p[i] += z[i];
    free(z);
}

static int gradcheck(Session *ss)
{
    Model *m = &ss->m;
    const float eps = 1e-3f;
    const double rtol = 1e-3, atol = 1e-5;     /* pass: |analytic - numeric| <= atol + rtol |numeric| */
    const size_t C = m->C;
    Source src;
    source_create(&src, m->V, ss->cfg.seed);
    source_batch(&src, m, &ss->bt);
    source_destroy(&src);
    /* Move LN gains off 1 and biases off 0, or gradients where they enter as factors go
       untested. */
    Rng noise = { ss->cfg.seed ^ 0x7e57ULL, 0 };
    for (int l = 0; l < m->L; l++) {
        Layer *y = &m->p.layer[l];
        float *ts[] = { y->ln1_g, y->ln1_b, y->b_qkv, y->b_proj, y->ln2_g, y->ln2_b, y->b_fc, y->b_fc2 };
        size_t ns[] = { C, C, 3 * C, C, C, C, 4 * C, C };
        for (int k = 0; k < 8; k++) perturb(&noise, ts[k], ns[k], 0.1f);
    }
    perturb(&noise, m->p.lnf_g, C, 0.1f);
    perturb(&noise, m->p.lnf_b, C, 0.1f);
    eval_loss(ss, 1);
    float *grads = xcalloc(m->n_params, sizeof(float));
    memcpy(grads, m->grads, m->n_params * sizeof(float));
    const Layer *pl = &m->p.layer[m->L - 1];     /* the last layer's tensors, and the globals */
    struct { const char *name; float *p; size_t n; } t[] = {
        { "wte", m->p.wte, (size_t)m->V * C }, { "wpe", m->p.wpe, (size_t)m->T * C },
        { "ln1_g", pl->ln1_g, C }, { "ln1_b", pl->ln1_b, C }, { "w_qkv", pl->w_qkv, 3 * C * C },
        { "b_qkv", pl->b_qkv, 3 * C }, { "w_proj", pl->w_proj, C * C }, { "b_proj", pl->b_proj, C },
        { "ln2_g", pl->ln2_g, C }, { "ln2_b", pl->ln2_b, C }, { "w_fc", pl->w_fc, 4 * C * C },
        { "b_fc", pl->b_fc, 4 * C }, { "w_fc2", pl->w_fc2, 4 * C * C }, { "b_fc2", pl->b_fc2, C },
        { "lnf_g", m->p.lnf_g, C }, { "lnf_b", m->p.lnf_b, C },
        { "l0.w_qkv", m->p.layer[0].w_qkv, 3 * C * C }, { "l0.ln1_g", m->p.layer[0].ln1_g, C },
    };
    Rng pick = { ss->cfg.seed ^ 0x9c9cULL, 0 };
    int failures = 0, checked = 0;
    double worst = 0.0;
    printf("gradcheck: %d layers, T %d, C %d, NH %d, V %d, B %d, dropout %.2f; eps %g, pass if "
           "|analytic - numeric| <= %g + %g |numeric|\n", m->L, m->T, m->C, m->NH, m->V, m->B, m->p_drop,
           (double)eps, atol, rtol);
    printf("%-10s %8s %14s %14s %10s\n", "tensor", "index", "analytic", "numeric", "rel err");
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
        size_t off = (size_t)(t[k].p - m->params), best = 0;
        for (size_t i = 1; i < t[k].n; i++)     /* the largest gradient, plus three at random */
            if (fabsf(grads[off + i]) > fabsf(grads[off + best])) best = i;
        float u[3];
        randu(&pick, u, 3);
        size_t idx[4] = { best, (size_t)(u[0] * t[k].n), (size_t)(u[1] * t[k].n), (size_t)(u[2] * t[k].n) };
        for (int j = 0; j < 4; j++) {
            float *p = t[k].p + idx[j], saved = *p;
            *p = saved + eps;
            double lp = eval_loss(ss, 0);
            *p = saved - eps;
            double lm = eval_loss(ss, 0);
            *p = saved;
            double num = (lp - lm) / (2.0 * (double)eps), ana = grads[off + idx[j]];
            double err = fabs(ana - num), rel = err / (fabs(num) > 1e-12 ? fabs(num) : 1e-12);
            int ok = err <= atol + rtol * fabs(num);
            failures += !ok;
            checked++;
            if (err / (atol + rtol * fabs(num)) > worst) worst = err / (atol + rtol * fabs(num));
            printf("%-10s %8zu %14.6e %14.6e %10.2e%s\n", t[k].name, idx[j], ana, num, rel, ok ? "" : "  FAIL");
        }
    }
    printf("gradcheck: %d of %d entries within tolerance (largest error %.2f of its tolerance): %s\n",
           checked - failures, checked, worst, failures ? "FAILED" : "passed");
    free(grads);
    return failures ? 1 : 0;
}

/* ---- optimal's tape options by budget --------------------------------------------------------

   The optimal policy's plans (ckpt_plan_create on the stages' measured costs: no arena, nothing
   run) at fractions of store-all's peak, with the tape options and with option 0 alone: how
   much time the options save and which ones the kept tapes use. */

static void stage_costs(const Session *ss, int options, ckpt_cost *c)
{
    for (int i = 0; i < 2 * ss->m.L; i++) {
        const ckpt_stage_desc *st = &ss->stages[i];
        c[i] = (ckpt_cost){ .f = st->fwd_time, .b = st->bwd_time, .a = st->out_bytes, .t = st->tape_bytes,
                            .wf = st->fwd_workspace_bytes, .wb = st->bwd_workspace_bytes, .flags = st->flags };
        if (!options) continue;
        c[i].n_options = st->n_tape_options;
        for (int j = 0; j < st->n_tape_options; j++) {
            c[i].option_t[j] = st->tape_options[j].tape_bytes;
            c[i].option_extra[j] = st->tape_options[j].bwd_extra;
        }
    }
}

static void optimal_by_budget(const Session *ss, uint64_t sa_peak, double frac_used)
{
    const double fracs[] = { frac_used, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.45, 0.4, 0.35, 0.3 };
    const int n = 2 * ss->m.L;
    ckpt_cost *c[2] = { xcalloc((size_t)n, sizeof(ckpt_cost)), xcalloc((size_t)n, sizeof(ckpt_cost)) };
    stage_costs(ss, 1, c[0]);
    stage_costs(ss, 0, c[1]);
    printf("\noptimal by budget (plans from the same costs, not run; pred x: predicted time / store-all's; "
           "* the budget above):\n");
    printf("%6s %11s %11s %7s %9s %9s  %s\n", "frac", "budget", "peak", "pred x", "o0 only x", "recomp F",
           "kept tapes attn o0/o1, mlp o0/o1");
    for (size_t k = 0; k < sizeof fracs / sizeof fracs[0]; k++) {
        if (k > 0 && fracs[k] == frac_used) continue;
        ckpt_plan_desc pd = {0};
        pd.policy = CKPT_POLICY_OPTIMAL;
        pd.budget = (uint64_t)(fracs[k] * (double)sa_peak) + 1;
        ckpt_plan *plan[2] = { NULL, NULL };
        ckpt_plan_info info[2];
        ckpt_result r[2];
        for (int o = 0; o < 2; o++) {
            r[o] = ckpt_plan_create(c[o], n, &pd, &plan[o], &info[o]);
            if (r[o] != CKPT_OK && r[o] != CKPT_ERR_INFEASIBLE) CHECK(r[o]);
        }
        printf("%5.2f%s %11llu ", fracs[k], k == 0 ? "*" : " ", (unsigned long long)pd.budget);
        if (r[0] != CKPT_OK) {
            printf("infeasible (min budget %llu)\n", (unsigned long long)info[0].min_budget);
            ckpt_plan_destroy(plan[1]);
            continue;
        }
        char without[16] = "infeasible";
        if (r[1] == CKPT_OK) snprintf(without, sizeof without, "%.3f", info[1].time / info[1].store_all_time);
        int n_ops, kept[2][N_OPTS];
        const ckpt_op *ops = ckpt_plan_ops(plan[0], &n_ops);
        count_kept(ops, n_ops, kept);
        printf("%11llu %7.3f %9s %9d  %d/%d, %d/%d\n", (unsigned long long)info[0].peak,
               info[0].time / info[0].store_all_time, without, info[0].n_recomputed, kept[0][0], kept[0][1],
               kept[1][0], kept[1][1]);
        ckpt_plan_destroy(plan[0]);
        ckpt_plan_destroy(plan[1]);
    }
    free(c[0]); free(c[1]);
}

/* ---- main ------------------------------------------------------------------------------------ */

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--toy] [--gradcheck] [--layers L] [--ctx T] [--channels C] [--heads NH]\n"
            "          [--vocab V] [--batch B] [--steps S] [--dropout P] [--lr LR] [--seed S]\n"
            "          [--budget-frac F] [--bandwidth GB_PER_S] [--threads N]\n"
            "defaults: --layers 4 --ctx 64 --channels 128 --heads 4 --vocab 256 --batch 8 --steps 40\n"
            "          --dropout 0.1 --lr 3e-3 --seed 42 --budget-frac 0.33 (of store-all's peak)\n"
            "          --threads $OPENBLAS_NUM_THREADS or 1; no offload row without --bandwidth\n"
            "--toy:    --layers 2 --ctx 16 --channels 32 --heads 4 --vocab 64 --batch 4 --steps 40\n"
            "          --budget-frac 0.7\n"
            "--gradcheck: toy size, compares the backward with finite differences\n", prog);
    exit(2);
}

static void toy(Config *cfg)
{
    cfg->L = 2; cfg->T = 16; cfg->C = 32; cfg->NH = 4; cfg->V = 64; cfg->B = 4; cfg->steps = 40;
    cfg->budget_frac = 0.7;     /* at this size 1/3 is below every policy's minimum */
}

static void parse_args(int argc, char **argv, Config *cfg)
{
    for (int i = 1; i < argc; i++) {    /* --toy and --gradcheck first: other flags override */
        if (!strcmp(argv[i], "--toy")) { cfg->toy = 1; toy(cfg); }
        if (!strcmp(argv[i], "--gradcheck")) { cfg->gradcheck = 1; toy(cfg); }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--toy") || !strcmp(a, "--gradcheck")) continue;
        if (i + 1 >= argc) usage(argv[0]);
        const char *v = argv[++i];
        if (!strcmp(a, "--layers")) cfg->L = atoi(v);
        else if (!strcmp(a, "--ctx")) cfg->T = atoi(v);
        else if (!strcmp(a, "--channels")) cfg->C = atoi(v);
        else if (!strcmp(a, "--heads")) cfg->NH = atoi(v);
        else if (!strcmp(a, "--vocab")) cfg->V = atoi(v);
        else if (!strcmp(a, "--batch")) cfg->B = atoi(v);
        else if (!strcmp(a, "--steps")) cfg->steps = atoi(v);
        else if (!strcmp(a, "--dropout")) cfg->p_drop = (float)atof(v);
        else if (!strcmp(a, "--lr")) cfg->lr = (float)atof(v);
        else if (!strcmp(a, "--seed")) cfg->seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--budget-frac")) cfg->budget_frac = atof(v);
        else if (!strcmp(a, "--bandwidth")) cfg->bandwidth_gbs = atof(v);
        else if (!strcmp(a, "--threads")) cfg->threads = atoi(v);
        else usage(argv[0]);
    }
    /* heads divide C; C % 4 == 0 so that each row's dropout is a whole number of Philox blocks */
    if (cfg->L < 1 || cfg->T < 1 || cfg->C < 4 || cfg->C % 4 || cfg->NH < 1 || cfg->C % cfg->NH ||
        cfg->V < 2 || cfg->B < 1 || cfg->steps < 1 || !(cfg->p_drop >= 0.0f) || !(cfg->p_drop < 1.0f) ||
        !(cfg->lr > 0.0f) || !(cfg->budget_frac > 0.0) || !(cfg->bandwidth_gbs >= 0.0) || cfg->threads < 1)
        usage(argv[0]);
}

int main(int argc, char **argv)
{
    const char *env = getenv("OPENBLAS_NUM_THREADS");
    Config cfg = { .L = 4, .T = 64, .C = 128, .NH = 4, .V = 256, .B = 8, .steps = 40, .p_drop = 0.1f,
                   .lr = 3e-3f, .budget_frac = 0.33, .bandwidth_gbs = 0, .seed = 42,
                   .threads = env && atoi(env) > 0 ? atoi(env) : 1 };
    parse_args(argc, argv, &cfg);
    Session ss;
    session_open(&ss, &cfg);
    Model *m = &ss.m;
    printf("GPT-2 style: %d layers (%d stages), T %d, C %d, %d heads, V %d, batch %d (%d rows), "
           "dropout %.2f, %zu parameters\n", cfg.L, 2 * cfg.L, cfg.T, cfg.C, cfg.NH, cfg.V, cfg.B, m->N,
           cfg.p_drop, m->n_params);
    printf("BLAS: %s; threads %d%s\n", EXAMPLE_BLAS, cfg.threads,
#ifdef _OPENMP
           " (OpenMP)"
#else
           " (no OpenMP: own loops single-threaded)"
#endif
    );
    if (cfg.gradcheck) {
        int rc = gradcheck(&ss);
        session_close(&ss);
        return rc;
    }

    double t_start = now_ms();
    const int n = 2 * cfg.L;
    enum { MEASURE_ROUNDS = 5 };
    ckpt_stage_time *t = xcalloc((size_t)n, sizeof *t);
    double extra[2], *dbwd = xcalloc((size_t)n, sizeof(double));
    double measure_ms = measure_stages(&ss, MEASURE_ROUNDS, t, dbwd, extra);
    for (int i = 0; i < n; i++) {
        ss.stages[i].fwd_time = t[i].fwd_time;
        ss.stages[i].bwd_time = t[i].bwd_time;
        ss.stages[i].tape_options[0].bwd_extra = extra[i % 2];
    }
    printf("measured in %.0f ms: 1 warm-up + %d rounds, each %d runs of each recomputation alone, a store-all\n"
           "step and a step with every tape in option 1 (ckpt_chain_measure); medians over the rounds\n",
           measure_ms, MEASURE_ROUNDS, PROBE_RUNS);
    printf("stage times (ms), attn fwd/bwd | mlp fwd/bwd per layer:\n ");
    for (int l = 0; l < cfg.L; l++)
        printf(" %.2f/%.2f | %.2f/%.2f%s", ss.stages[2 * l].fwd_time, ss.stages[2 * l].bwd_time,
               ss.stages[2 * l + 1].fwd_time, ss.stages[2 * l + 1].bwd_time, l + 1 < cfg.L ? ";" : "\n");
    printf("output %zu bytes per stage; tape options (bytes; bwd_extra: the recomputation timed alone):\n",
           (size_t)m->N * m->C * sizeof(float));
    printf("  attn: option 0 %zu (keeps the attention probabilities), option 1 %zu (recomputes them: "
           "bwd_extra %.4f ms)\n", m->ta_bytes[0], m->ta_bytes[1], extra[0]);
    printf("  mlp:  option 0 %zu (keeps the GELU output), option 1 %zu (recomputes it: bwd_extra %.4f ms)\n",
           m->tm_bytes[0], m->tm_bytes[1], extra[1]);
    printf("check: backward with option-1 tapes minus with option 0's, ms per layer:\n");
    double *diff = xcalloc((size_t)cfg.L, sizeof(double));
    for (int kind = 0; kind < 2; kind++) {
        printf("  %-5s", kind ? "mlp:" : "attn:");
        for (int l = 0; l < cfg.L; l++) {
            diff[l] = dbwd[2 * l + kind];
            printf(" %+.4f", diff[l]);
        }
        printf("  (median %+.4f; bwd_extra %.4f)\n", median(diff, cfg.L), extra[kind]);
    }
    free(diff); free(dbwd); free(t);

    /* Store-all first: it is the reference. The budget is a fraction of its peak, which a dry
       plan gives without allocating store-all's arena (at least 1: 0 would mean "no limit").
       Then, for each tape option k > 0, store-all's schedule with every tape in option k: its
       gradients must be store-all's (option 0's) too. */
    const ckpt_policy policies[] = { CKPT_POLICY_STORE_ALL, CKPT_POLICY_EVERY_K, CKPT_POLICY_SQRT,
                                     CKPT_POLICY_GREEDY, CKPT_POLICY_OPTIMAL, CKPT_POLICY_OFFLOAD };
    enum { N_POLICIES = sizeof policies / sizeof policies[0], N_RUNS = N_POLICIES + N_OPTS - 1 };
    int n_policies = cfg.bandwidth_gbs > 0 ? N_POLICIES : N_POLICIES - 1, n_runs = 0;
    Run runs[N_RUNS] = {0};
    uint64_t sa_peak = store_all_peak(&ss), budget = (uint64_t)(cfg.budget_frac * (double)sa_peak) + 1;
    for (int i = 0; i < n_policies; i++) {
        ckpt_plan_desc pd = {0};
        pd.policy = policies[i];
        pd.budget = i == 0 ? 0 : budget;    /* every-k gets k = 0: the best k that fits */
        train(&ss, &pd, -1, &runs[n_runs++]);
    }
    for (int k = 1; k < N_OPTS; k++) train(&ss, NULL, k, &runs[n_runs++]);

    Source src;
    source_create(&src, cfg.V, cfg.seed);
    const Run *ref = &runs[0];
    printf("\nloss (store-all; every row trains the same): uniform ln(V) = %.4f, source entropy = %.4f\n",
           log((double)cfg.V), src.entropy);
    source_destroy(&src);
    int every = cfg.steps > 10 ? cfg.steps / 10 : 1;
    for (int s = 0; s < cfg.steps; s++)
        if (s % every == 0 || s == cfg.steps - 1) printf("  step %4d  loss %.6f\n", s + 1, ref->loss[s]);

    printf("\nbudget %llu bytes (%.2f of store-all's peak %llu)\n", (unsigned long long)budget, cfg.budget_frac,
           (unsigned long long)ref->info.peak);
    if (cfg.bandwidth_gbs > 0) printf("offload: copy engine throttled to %.3g GB/s each way\n", cfg.bandwidth_gbs);
    printf("%-14s %11s %11s %11s %9s %7s %7s %11s %-13s %s\n", "policy", "planned B", "used B", "arena B",
           "ms/step", "pred x", "meas x", "final loss", "bit-identical", "kept tapes attn o0/o1, mlp o0/o1");
    int all_match = 1;
    for (int i = 0; i < n_runs; i++) {
        const Run *r = &runs[i];
        char name[32];
        if (r->option >= 0) snprintf(name, sizeof name, "all tapes o%d", r->option);
        else if (r->policy == CKPT_POLICY_EVERY_K && r->feasible) snprintf(name, sizeof name, "every-k (k=%d)", r->info.k);
        else snprintf(name, sizeof name, "%s", ckpt_policy_name(r->policy));
        if (!r->feasible) {
            printf("%-14s infeasible (min budget %llu)\n", name, (unsigned long long)r->info.min_budget);
            continue;
        }
        size_t ng = m->n_params + (size_t)m->N * m->C;
        int match = memcmp(r->grads, ref->grads, ng * sizeof(float)) == 0;
        all_match &= match;
        printf("%-14s %11llu %11llu %11llu %9.2f %7.3f %7.3f %11.6f %-13s %d/%d, %d/%d\n", name,
               (unsigned long long)r->info.peak, (unsigned long long)r->stats.arena_high_water,
               (unsigned long long)r->stats.arena_bytes, r->ms_per_step, r->info.time / ref->info.time,
               r->ms_per_step / ref->ms_per_step, r->loss[cfg.steps - 1], match ? "yes" : "no",
               r->kept[0][0], r->kept[0][1], r->kept[1][0], r->kept[1][1]);
    }
    printf("(bit-identical: the last step's parameter gradients and G[0] against store-all's; \"all tapes\n"
           " ok\": store-all's schedule with every tape in option k; a forward that keeps no tape runs\n"
           " option 1, the smaller tape)\n");
    optimal_by_budget(&ss, sa_peak, cfg.budget_frac);
    /* A fingerprint of the reference gradients, to compare runs (e.g. --threads 1 and 2). */
    printf("store-all's last-step gradients: checksum %016llx; total %.1f s\n",
           (unsigned long long)ckpt_checksum(ref->grads, (m->n_params + (size_t)m->N * m->C) * sizeof(float)),
           (now_ms() - t_start) / 1e3);

    int rc = all_match ? 0 : 1;
    if (!all_match) fprintf(stderr, "FAILED: gradients differ from store-all\n");
    if (cfg.steps >= 20 && !(ref->loss[cfg.steps - 1] < ref->loss[0])) {   /* the training check */
        fprintf(stderr, "FAILED: the loss did not fall (%.4f -> %.4f)\n", ref->loss[0], ref->loss[cfg.steps - 1]);
        rc = 1;
    }
    for (int i = 0; i < N_RUNS; i++) { free(runs[i].grads); free(runs[i].loss); }
    session_close(&ss);
    return rc;
}
