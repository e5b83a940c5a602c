/* blas.h -- the one BLAS call the CPU examples make, with or without OpenBLAS, and their threads.

   With CKPT_EXAMPLE_OPENBLAS defined (the CMake build defines it when it finds OpenBLAS), this is
   <cblas.h> and programs link -lopenblas. Without it, cblas_sgemm is a plain cache-blocked SGEMM
   below: row-major only, single-threaded, and several times slower than OpenBLAS, but
   deterministic, so every bit-identity check the examples make still holds.
   EXAMPLE_BLAS names which one a program was built with, for its output.

   example_set_threads(n) gives the BLAS and the examples' own loops n threads: the loops are
   marked EXAMPLE_PARALLEL_FOR, an OpenMP static schedule when built with OpenMP (-fopenmp), else
   nothing. EXAMPLE_SIMD marks an elementwise inner loop whose iterations are independent (no
   sums across them): "omp simd" with OpenMP, which vectorises it whatever the optimisation
   level's cost model, else nothing. Neither changes any result: a loop marked
   EXAMPLE_PARALLEL_FOR must write disjoint data in each iteration and sum in an order that does
   not depend on how the iterations are split (sums over rows: split the columns), so the results
   are the same bits at every thread count. */
#ifndef CKPT_EXAMPLE_BLAS_H
#define CKPT_EXAMPLE_BLAS_H

#ifdef _OPENMP
#include <omp.h>
#include <stdlib.h>     /* getenv, setenv (POSIX: define _POSIX_C_SOURCE before any include) */
#include <unistd.h>     /* execv */
#define EXAMPLE_PARALLEL_FOR _Pragma("omp parallel for schedule(static)")
#define EXAMPLE_SIMD _Pragma("omp simd")
#else
#define EXAMPLE_PARALLEL_FOR
#define EXAMPLE_SIMD
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

/* With OpenMP and more than one thread: makes the OpenMP threads sleep between loops
   (OMP_WAIT_POLICY=PASSIVE) instead of spinning for a while after each one, as they do by
   default; spinning, they take the cores from OpenBLAS's threads during every SGEMM (measured on
   2 cores: over twice the CPU time per step at 2 threads). The OpenMP runtime reads
   OMP_WAIT_POLICY only when it starts, so when it is unset this sets it and re-executes the
   program (argv as main received it) once, on Linux; a policy the user set is left alone. Call
   it first in main, with the thread count the program will use. */
static inline void example_openmp_passive(int threads, char **argv)
{
#if defined(_OPENMP) && defined(__linux__)
    if (threads > 1 && !getenv("OMP_WAIT_POLICY") && setenv("OMP_WAIT_POLICY", "PASSIVE", 1) == 0)
        execv("/proc/self/exe", argv);      /* returns only on failure: then run as we are */
#else
    (void)threads;
    (void)argv;
#endif
}

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
