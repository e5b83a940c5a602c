/* selftest.cu -- tests of the CUDA emulation itself (built by tests/cuda_emu/CMakeLists.txt with
   the fiber launcher, run in every EMU_ASYNC schedule): what examples/mlp_cuda.cu relies on, so
   that a bug in the emulator cannot hide behind the example's own check (every policy of the
   example runs on the same emulator, so an emulator bug common to all would pass it).
   - __syncthreads: a shared-memory tree reduction over 2-D blocks in a 2-D grid, threads that
     return before the barrier, many barriers in a loop;
   - warp shuffles (xor, up, down, idx, with widths) against a host model of CUDA's rules;
   - cublasSgemm against a double-precision reference for every transpose pair, leading
     dimensions larger than the rows, beta 0 over NaN (C is not read), beta 1;
   - stream semantics: a queued kernel sees its stream's earlier copy, the legacy stream and a
     blocking stream order their work (a synchronous copy waits for a blocking stream), an
     event orders two non-blocking streams, a launch error is reported by cudaGetLastError;
   - device memory: an allocation reuses the first hole a free left; a kernel reaches every live
     allocation, apart or touching; the host reading a live or a freed one faults (in a child);
   - misuse that must abort with an "EMU:" message (in a child process): a shuffle reading an
     exited lane, a deadlocked block, __syncthreads under the loop launcher.
   Exit status 0 when every check passes. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

static int failures = 0, checks = 0;
#define CHECK(cond, ...) do { checks++; if (!(cond)) { failures++; printf("FAIL %s:%d: ", __FILE__, __LINE__); \
    printf(__VA_ARGS__); printf("\n"); } } while (0)
#define CU(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { printf("FAIL %s:%d: %s: %s\n", __FILE__, \
    __LINE__, #call, cudaGetErrorName(e_)); exit(1); } } while (0)

/* ---- barriers -------------------------------------------------------------------------------- */
/* out[block] = sum of in over the block's threads (a 2-D block of bx x by), by a tree in shared
   memory; threads with t >= active return at once (they must not hold up the barriers). */
__global__ void block_sum(const int *in, int *out, unsigned active) {
    __shared__ int sh[1024];
    unsigned t = threadIdx.x + threadIdx.y * blockDim.x, n = blockDim.x * blockDim.y;
    unsigned b = blockIdx.x + blockIdx.y * gridDim.x;
    if (t >= active) return;
    sh[t] = in[b * n + t];
    __syncthreads();
    for (unsigned s = 1; s < active; s *= 2) {       /* pairs (t, t + s) for t a multiple of 2s */
        int v = t % (2 * s) == 0 && t + s < active ? sh[t + s] : 0;
        __syncthreads();
        sh[t] += v;
        __syncthreads();
    }
    if (t == 0) out[b] = sh[0];
}

static void barriers(void) {
    const unsigned bx = 16, by = 8, gx = 3, gy = 2, n = bx * by, blocks = gx * gy;
    std::vector<int> h(n * blocks);
    for (size_t i = 0; i < h.size(); i++) h[i] = (int)(i * 7 % 101) - 50;
    int *din, *dout;
    CU(cudaMalloc(&din, h.size() * sizeof(int)));
    CU(cudaMalloc(&dout, blocks * sizeof(int)));
    CU(cudaMemcpy(din, h.data(), h.size() * sizeof(int), cudaMemcpyHostToDevice));
    for (unsigned active : {n, 100u, 1u}) {
        block_sum<<<dim3(gx, gy), dim3(bx, by)>>>(din, dout, active);
        CU(cudaGetLastError());
        std::vector<int> got(blocks);
        CU(cudaMemcpy(got.data(), dout, blocks * sizeof(int), cudaMemcpyDeviceToHost));
        for (unsigned b = 0; b < blocks; b++) {
            int want = 0;
            for (unsigned t = 0; t < active; t++) want += h[b * n + t];
            CHECK(got[b] == want, "block_sum block %u, %u active threads: %d, want %d", b, active, got[b], want);
        }
    }
    CU(cudaFree(din));
    CU(cudaFree(dout));
}

/* ---- shuffles -------------------------------------------------------------------------------- */
enum { XOR, UP, DOWN, IDX };
__global__ void shuffle(const float *in, float *out, int kind, int arg, int width) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    float v = in[t];
    switch (kind) {
    case XOR: v = __shfl_xor_sync(0xffffffffu, v, arg, width); break;
    case UP: v = __shfl_up_sync(0xffffffffu, v, (unsigned)arg, width); break;
    case DOWN: v = __shfl_down_sync(0xffffffffu, v, (unsigned)arg, width); break;
    case IDX: v = __shfl_sync(0xffffffffu, v, arg, width); break;
    }
    out[t] = v;
}
/* The same sum in every lane (examples/mlp_cuda.cu's warp_sum), of doubles, twice in a row. */
__global__ void warp_sums(const double *in, double *out) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    double v = in[t];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    double w = v * (threadIdx.x % 32 + 1);
    for (int o = 16; o > 0; o >>= 1) w += __shfl_xor_sync(0xffffffffu, w, o);
    out[t] = v + w;
}

/* CUDA's rule for the lane a shuffle reads (the Programming Guide), written independently. */
static unsigned model_src(int kind, unsigned lane, int arg, int width) {
    unsigned seg = lane / (unsigned)width * (unsigned)width;
    int src;
    switch (kind) {
    case XOR: src = (int)(lane ^ (unsigned)arg); return src >= (int)(seg + (unsigned)width) ? lane : (unsigned)src;
    case UP: src = (int)lane - arg; return src < (int)seg ? lane : (unsigned)src;
    case DOWN: src = (int)lane + arg; return src >= (int)(seg + (unsigned)width) ? lane : (unsigned)src;
    default: return seg + (unsigned)(arg % width);
    }
}

static void shuffles(void) {
    const unsigned n = 96;      /* three warps in a block of 96 */
    std::vector<float> h(n);
    for (unsigned i = 0; i < n; i++) h[i] = (float)i + 0.5f;
    float *din, *dout;
    CU(cudaMalloc(&din, n * sizeof(float)));
    CU(cudaMalloc(&dout, n * sizeof(float)));
    CU(cudaMemcpy(din, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    const char *names[] = {"xor", "up", "down", "idx"};
    for (int kind = XOR; kind <= IDX; kind++)
        for (int width : {32, 16, 8, 2, 1})
            for (int arg : {0, 1, 3, 5, 16, 31}) {
                shuffle<<<1, n>>>(din, dout, kind, arg, width);
                CU(cudaGetLastError());
                std::vector<float> got(n);
                CU(cudaMemcpy(got.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost));
                int bad = 0;
                for (unsigned t = 0; t < n; t++) {
                    unsigned want = t / 32 * 32 + model_src(kind, t % 32, arg, width);
                    bad += got[t] != h[want];
                }
                CHECK(bad == 0, "shfl %s width %d arg %d: %d lanes differ from the model", names[kind], width, arg, bad);
            }
    CU(cudaFree(din));
    CU(cudaFree(dout));

    const unsigned m = 64;
    std::vector<double> hd(m);
    for (unsigned i = 0; i < m; i++) hd[i] = 1.0 / (i + 1);
    double *dd, *dr;
    CU(cudaMalloc(&dd, m * sizeof(double)));
    CU(cudaMalloc(&dr, m * sizeof(double)));
    CU(cudaMemcpy(dd, hd.data(), m * sizeof(double), cudaMemcpyHostToDevice));
    warp_sums<<<2, 32>>>(dd, dr);
    std::vector<double> got(m);
    CU(cudaMemcpy(got.data(), dr, m * sizeof(double), cudaMemcpyDeviceToHost));
    for (unsigned w = 0; w < 2; w++) {
        double s = 0.0;
        for (unsigned l = 0; l < 32; l++) s += hd[w * 32 + l];
        for (unsigned l = 0; l < 32; l++) {
            CHECK(fabs(got[w * 32 + l] - got[w * 32]) == 0.0, "warp_sums: lane %u differs from lane 0", l);
            CHECK(fabs(got[w * 32 + l] - (s + s * 528.0)) < 1e-9 * s * 529.0, "warp_sums: %.17g, want %.17g",
                  got[w * 32 + l], s + s * 528.0);
        }
    }
    CU(cudaFree(dd));
    CU(cudaFree(dr));
}

/* ---- cuBLAS ---------------------------------------------------------------------------------- */
static void gemm(cudaStream_t s) {
    cublasHandle_t h;
    CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
    CHECK(cublasSetStream(h, s) == CUBLAS_STATUS_SUCCESS, "cublasSetStream");
    const int m = 7, n = 5, k = 9, pad = 3;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (float beta : {0.0f, 1.0f}) {
                int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
                int lda = ar + pad, ldb = br + pad, ldc = m + pad;
                std::vector<float> A((size_t)lda * ac), B((size_t)ldb * bc), C((size_t)ldc * n);
                for (size_t i = 0; i < A.size(); i++) A[i] = (float)((int)(i * 37 % 19) - 9) / 8.0f;
                for (size_t i = 0; i < B.size(); i++) B[i] = (float)((int)(i * 53 % 23) - 11) / 4.0f;
                for (size_t i = 0; i < C.size(); i++) C[i] = beta == 0.0f ? NAN : (float)i;
                float *dA, *dB, *dC;
                CU(cudaMalloc(&dA, A.size() * sizeof(float)));
                CU(cudaMalloc(&dB, B.size() * sizeof(float)));
                CU(cudaMalloc(&dC, C.size() * sizeof(float)));
                CU(cudaMemcpyAsync(dA, A.data(), A.size() * sizeof(float), cudaMemcpyHostToDevice, s));
                CU(cudaMemcpyAsync(dB, B.data(), B.size() * sizeof(float), cudaMemcpyHostToDevice, s));
                CU(cudaMemcpyAsync(dC, C.data(), C.size() * sizeof(float), cudaMemcpyHostToDevice, s));
                const float alpha = 0.5f;
                cublasStatus_t st = cublasSgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n,
                                                k, &alpha, dA, lda, dB, ldb, &beta, dC, ldc);
                CHECK(st == CUBLAS_STATUS_SUCCESS, "cublasSgemm: %s", cublasGetStatusName(st));
                std::vector<float> got(C.size());
                CU(cudaMemcpyAsync(got.data(), dC, C.size() * sizeof(float), cudaMemcpyDeviceToHost, s));
                CU(cudaStreamSynchronize(s));
                int bad = 0;
                for (int j = 0; j < n; j++)
                    for (int i = 0; i < m; i++) {
                        double dot = 0.0;
                        for (int l = 0; l < k; l++)
                            dot += (double)(ta ? A[(size_t)i * lda + l] : A[(size_t)l * lda + i]) *
                                   (double)(tb ? B[(size_t)l * ldb + j] : B[(size_t)j * ldb + l]);
                        double want = alpha * dot + (beta == 0.0f ? 0.0 : (double)C[(size_t)j * ldc + i]);
                        bad += !(fabs(got[(size_t)j * ldc + i] - want) <= 1e-5 * (1.0 + fabs(want)));
                    }
                for (int j = 0; j < n; j++)     /* the padding rows are not written */
                    for (int i = m; i < ldc; i++) bad += memcmp(&got[(size_t)j * ldc + i], &C[(size_t)j * ldc + i], 4) != 0;
                CHECK(bad == 0, "sgemm transa %d transb %d beta %g: %d elements wrong", ta, tb, beta, bad);
                CU(cudaFree(dA)); CU(cudaFree(dB)); CU(cudaFree(dC));
            }
    float one = 1.0f, *dx;
    CU(cudaMalloc(&dx, 64));
    CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 1, 1, &one, dx, 3, dx, 1, &one, dx, 4) ==
          CUBLAS_STATUS_INVALID_VALUE, "lda < m is rejected");
    CU(cudaFree(dx));
    CHECK(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS, "cublasDestroy");
}

/* ---- streams --------------------------------------------------------------------------------- */
__global__ void add_one(int *p, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] += 1;
}

static void streams(cudaStream_t blocking) {
    const int n = 1000;
    std::vector<int> h(n, 41), got(n);
    int *d;
    CU(cudaMalloc(&d, n * sizeof(int)));
    /* copy, kernel, copy back on one stream: in order */
    CU(cudaMemcpyAsync(d, h.data(), n * sizeof(int), cudaMemcpyHostToDevice, blocking));
    add_one<<<3, 64, 0, blocking>>>(d, n);
    CU(cudaMemcpyAsync(got.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost, blocking));
    CU(cudaStreamSynchronize(blocking));
    CHECK(got[0] == 42 && got[n - 1] == 42, "stream order: %d %d", got[0], got[n - 1]);
    /* the legacy stream, then a blocking stream: the kernel waits for the memset */
    CU(cudaMemsetAsync(d, 0, n * sizeof(int), cudaStreamLegacy));
    add_one<<<2, 128, 0, blocking>>>(d, n);
    /* and the legacy stream waits for the blocking stream's kernel */
    CU(cudaMemcpyAsync(got.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost, cudaStreamLegacy));
    CU(cudaStreamSynchronize(cudaStreamLegacy));
    CHECK(got[0] == 1 && got[n - 1] == 1, "legacy and blocking stream order: %d %d", got[0], got[n - 1]);
    /* a synchronous copy (legacy stream) waits for a blocking stream's queued kernel */
    add_one<<<2, 32, 0, blocking>>>(d, n);
    CU(cudaMemcpy(got.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(got[0] == 2 && got[n - 1] == 2, "cudaMemcpy after a blocking stream's kernel: %d %d", got[0], got[n - 1]);
    /* an event orders two non-blocking streams */
    cudaStream_t a, b;
    cudaEvent_t ev;
    CU(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CU(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    CU(cudaEventCreate(&ev));
    add_one<<<1, 32, 0, a>>>(d, n);
    CU(cudaEventRecord(ev, a));
    CU(cudaStreamWaitEvent(b, ev, 0));
    CU(cudaMemcpyAsync(got.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost, b));
    CU(cudaStreamSynchronize(b));
    CHECK(got[0] == 3 && got[n - 1] == 3, "event order: %d %d", got[0], got[n - 1]);
    CU(cudaEventDestroy(ev));
    CU(cudaStreamDestroy(a));
    CU(cudaStreamDestroy(b));
    /* launch errors */
    add_one<<<1, 1025>>>(d, n);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration, "a block of 1025 threads is refused");
    add_one<<<0, 32>>>(d, n);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration, "an empty grid is refused");
    CHECK(cudaGetLastError() == cudaSuccess, "the error is cleared");
    CU(cudaFree(d));
}

/* ---- device memory ------------------------------------------------------------------------- */
__global__ void fill(int *p, int n, int v) {
    for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += (int)(gridDim.x * blockDim.x)) p[i] = v + i;
}
static volatile int *host_read;
/* Runs a host read of host_read in a child process: it must die of SIGSEGV. */
static void expect_fault(const char *what) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        int v = *host_read;
        _exit(v == 12345 ? 2 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "%s: the host read did not fault (status %d)", what,
          status);
}
static void device_memory(void) {
    const int n[4] = {3000, 5000, 1500, 9000};   /* ints: 3, 5, 2 and 9 pages */
    int *p[4], *got = (int *)malloc(9000 * sizeof(int)), k, i, bad = 0;
    for (k = 0; k < 3; k++) CU(cudaMalloc(&p[k], (size_t)n[k] * sizeof(int)));
    int *hole = p[1];
    CU(cudaFree(p[1]));
    CU(cudaMalloc(&p[1], (size_t)n[2] * sizeof(int)));
    CHECK(p[1] == hole, "a 2-page allocation takes the first hole (%p), not %p", (void *)hole, (void *)p[1]);
    CU(cudaMalloc(&p[3], (size_t)n[3] * sizeof(int)));   /* too large for what is left of the hole */
    CHECK(p[3] > p[2], "a 9-page allocation goes after the last one");
    const int m[4] = {n[0], n[2], n[2], n[3]};
    for (k = 0; k < 4; k++) fill<<<4, 64>>>(p[k], m[k], 1000 * k);
    CU(cudaDeviceSynchronize());
    for (k = 0; k < 4; k++) {
        CU(cudaMemcpy(got, p[k], (size_t)m[k] * sizeof(int), cudaMemcpyDeviceToHost));
        for (i = 0; i < m[k]; i++) bad += got[i] != 1000 * k + i;
    }
    CHECK(bad == 0, "kernels on four allocations, apart and touching: %d values wrong", bad);
    host_read = p[2];
    expect_fault("a live allocation");
    CU(cudaFree(p[1]));
    host_read = hole;
    expect_fault("a freed allocation");
    for (k = 0; k < 4; k++) if (k != 1) CU(cudaFree(p[k]));
    free(got);
}

/* ---- misuse: each must abort with an "EMU:" message ------------------------------------------ */
__global__ void shfl_exited(float *p) {
    if (threadIdx.x >= 16) return;
    p[threadIdx.x] = __shfl_xor_sync(0xffffffffu, p[threadIdx.x], 16);
}
__global__ void deadlock(void) {
    if (threadIdx.x == 0) __syncthreads();
    else __syncwarp();
}
__global__ void needs_barrier(void) { __syncthreads(); }

/* Runs f in a child process and checks that it aborts with a message containing `want`. */
static void expect_abort(const char *what, void (*f)(void), const char *want) {
    int fds[2];
    if (pipe(fds) != 0) { perror("pipe"); exit(1); }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        f();
        emu_flush_all();
        _exit(0);
    }
    close(fds[1]);
    char buf[4096];
    size_t len = 0;
    ssize_t r;
    while (len < sizeof buf - 1 && (r = read(fds[0], buf + len, sizeof buf - 1 - len)) > 0) len += (size_t)r;
    buf[len] = 0;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    /* the message, without its "EMU" prefix, so that this test's own output does not match the
       FAIL_REGULAR_EXPRESSION of the emulated tests */
    const char *msg = strncmp(buf, "EMU: ", 5) == 0 ? buf + 5 : buf;
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && strncmp(buf, "EMU: ", 5) == 0 && strstr(buf, want),
          "%s: expected an abort with '%s', got status %d and '%.200s'", what, want, status, msg);
}
static void run_shfl_exited(void) {
    float *p;
    CU(cudaMalloc(&p, 32 * sizeof(float)));
    shfl_exited<<<1, 32>>>(p);
}
static void run_deadlock(void) { deadlock<<<1, 32>>>(); }
/* Written as the loop launcher's form by hand: this file is rewritten for the fiber launcher. */
static void run_loop_barrier(void) { EMU_LAUNCH(1, 32) needs_barrier(); }

int main(void) {
    cudaStream_t s;
    CU(cudaStreamCreate(&s));
    barriers();
    shuffles();
    gemm(s);
    streams(s);
    device_memory();
    expect_abort("shuffle from an exited lane", run_shfl_exited, "which did not take part");
    expect_abort("deadlock", run_deadlock, "deadlocked");
    expect_abort("__syncthreads under the loop launcher", run_loop_barrier, "outside a kernel launched by the fiber");
    CU(cudaStreamDestroy(s));
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
