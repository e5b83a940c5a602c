/* blas.h -- the one BLAS call the CPU examples make, with or without OpenBLAS, and their threads.

   With CKPT_EXAMPLE_OPENBLAS defined (the CMake build defines it when it finds OpenBLAS), this is
   <cblas.h> and programs link -lopenblas. Without it, cblas_sgemm is a plain cache-blocked SGEMM
   below: row-major only, single-threaded, and several times slower than OpenBLAS, but
   deterministic, so every bit-identity check the examples make still holds.
   EXAMPLE_BLAS names which one a program was built with, for its output.

   example_set_threads(n) gives the BLAS and the examples' own loops n threads: the loops are
   marked EXAMPLE_PARALLEL_FOR, an OpenMP static schedule when built with OpenMP (-fopenmp), else
   nothing. A static schedule over rows keeps every sum in the same order, so results do not depend
   on the thread count's timing. */
#ifndef CKPT_EXAMPLE_BLAS_H
#define CKPT_EXAMPLE_BLAS_H

#ifdef _OPENMP
#include <omp.h>
#define EXAMPLE_PARALLEL_FOR _Pragma("omp parallel for schedule(static)")
#else
#define EXAMPLE_PARALLEL_FOR
#endif

#ifdef CKPT_EXAMPLE_OPENBLAS
#include <cblas.h>
#define EXAMPLE_BLAS "OpenBLAS"
#else
#include <stddef.h>
#define EXAMPLE_BLAS "built-in blocked SGEMM (no OpenBLAS: several times slower)"

enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112 };

enum { SGEMM_MB = 64, SGEMM_NB = 128, SGEMM_KB = 128 };

/* C = alpha op(A) op(B) + beta C, row-major (order must be CblasRowMajor). op(A) is M x K, op(B)
   K x N. Blocks of op(A) and op(B) are copied into contiguous row-major tiles so that the inner
   loop runs over contiguous memory whatever the transposes; the sum over k runs in the same order
   for every call with the same shapes. */
static inline void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb,
                               int M, int N, int K, float alpha, const float *A, int lda,
                               const float *B, int ldb, float beta, float *C, int ldc)
{
    float pa[SGEMM_MB * SGEMM_KB], pb[SGEMM_KB * SGEMM_NB];
    (void)order;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++)
            C[(size_t)i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[(size_t)i * ldc + j];
    for (int k0 = 0; k0 < K; k0 += SGEMM_KB) {
        int kb = K - k0 < SGEMM_KB ? K - k0 : SGEMM_KB;
        for (int j0 = 0; j0 < N; j0 += SGEMM_NB) {
            int nb = N - j0 < SGEMM_NB ? N - j0 : SGEMM_NB;
            for (int k = 0; k < kb; k++)            /* pb[k][j] = op(B)[k0+k][j0+j] */
                for (int j = 0; j < nb; j++)
                    pb[k * nb + j] = tb == CblasNoTrans ? B[(size_t)(k0 + k) * ldb + j0 + j]
                                                        : B[(size_t)(j0 + j) * ldb + k0 + k];
            for (int i0 = 0; i0 < M; i0 += SGEMM_MB) {
                int mb = M - i0 < SGEMM_MB ? M - i0 : SGEMM_MB;
                for (int i = 0; i < mb; i++)        /* pa[i][k] = alpha op(A)[i0+i][k0+k] */
                    for (int k = 0; k < kb; k++)
                        pa[i * kb + k] = alpha * (ta == CblasNoTrans ? A[(size_t)(i0 + i) * lda + k0 + k]
                                                                     : A[(size_t)(k0 + k) * lda + i0 + i]);
                for (int i = 0; i < mb; i++) {
                    float *c = C + (size_t)(i0 + i) * ldc + j0;
                    for (int k = 0; k < kb; k++) {
                        const float a = pa[i * kb + k], *b = pb + k * nb;
                        for (int j = 0; j < nb; j++) c[j] += a * b[j];
                    }
                }
            }
        }
    }
}
#endif

static inline void example_set_threads(int n)
{
#ifdef CKPT_EXAMPLE_OPENBLAS
    openblas_set_num_threads(n);
#endif
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
    (void)n;
}
#endif
