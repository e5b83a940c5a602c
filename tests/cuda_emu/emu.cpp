/* emu.cpp -- a host emulation of the slice of the CUDA runtime that backends/ckpt_gpu.inl and
   tests/test_gpu.cu use, so that CI (which has no GPU) runs the CUDA backend's host code and its
   kernels (as plain C++ loops over the grid) on every commit.

   What it checks: device memory is mmap'ed PROT_NONE except while an emulated device operation
   runs, so any host access to device memory crashes; copies check that their kind matches the
   pointers; allocations and streams left at exit are reported. With EMU_ASYNC=1, async copies
   and memsets are queued per stream and run only when something waits for them (a
   synchronize, an event, a stream waiting on an event, a kernel launch), a legal CUDA schedule
   in which copies start as late as possible: code that reads a copy's result before waiting
   for it sees stale data. Kernels run at launch, one thread after another; nothing here models
   concurrent kernels, warps or the memory model. It proves nothing about a real GPU.
   tests/cuda_emu/run_test_gpu.cmake builds and runs the tests on it. */
#include <functional>
#include "cuda_runtime.h"
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vector>
emu_u3 blockIdx, threadIdx, blockDim, gridDim;
int emu_nvtx_depth;
cudaError_t emu_launch_error = cudaSuccess;
static cudaError_t last = cudaSuccess;
static int cur_dev = 0;
struct alloc { char *p; size_t n, mapped; };
static std::vector<alloc> dev, pinned;
static int depth = 0;
static cudaError_t fail(cudaError_t e) { last = e; return e; }
static size_t pg(size_t n) { return (n + 4095) & ~(size_t)4095; }
void emu_device_enter(void) { if (depth++ == 0) for (auto &a : dev) mprotect(a.p, a.mapped, PROT_READ | PROT_WRITE); }
void emu_device_leave(void) { if (--depth == 0) for (auto &a : dev) mprotect(a.p, a.mapped, PROT_NONE); }
static int is_dev(const void *p, size_t n) {
    for (auto &a : dev) if ((const char *)p >= a.p && (const char *)p + n <= a.p + a.n + 0) return 1;
    return 0;
}
static int touches_dev(const void *p) { for (auto &a : dev) if ((const char *)p >= a.p && (const char *)p < a.p + a.mapped) return 1; return 0; }
cudaError_t cudaGetDeviceCount(int *c) { *c = getenv("EMU_NO_DEVICE") ? 0 : 1; return getenv("EMU_NO_DEVICE") ? fail(cudaErrorNoDevice) : cudaSuccess; }
cudaError_t cudaGetDevice(int *d) { *d = cur_dev; return cudaSuccess; }
cudaError_t cudaSetDevice(int d) { if (d != 0) return fail(cudaErrorInvalidValue); cur_dev = d; return cudaSuccess; }
cudaError_t cudaGetLastError(void) { cudaError_t e = last; if (emu_launch_error) { e = emu_launch_error; emu_launch_error = cudaSuccess; } last = cudaSuccess; return e; }
const char *cudaGetErrorName(cudaError_t e) {
    switch (e) { case cudaSuccess: return "cudaSuccess"; case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorNoDevice: return "cudaErrorNoDevice"; case cudaErrorInvalidValue: return "cudaErrorInvalidValue"; default: return "cudaErrorOther"; }
}
const char *cudaGetErrorString(cudaError_t e) { return e ? "emulated error" : "no error"; }
cudaError_t cudaMalloc(void **p, size_t n) {
    if (n == 0) { *p = NULL; return cudaSuccess; }
    if (n > ((size_t)1 << 40)) return fail(cudaErrorMemoryAllocation);
    void *m = mmap(NULL, pg(n), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return fail(cudaErrorMemoryAllocation);
    if (depth) mprotect(m, pg(n), PROT_READ | PROT_WRITE);
    dev.push_back({(char *)m, n, pg(n)}); *p = m; return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    emu_flush_all();
    for (size_t i = 0; i < dev.size(); i++) if (dev[i].p == p) { munmap(p, dev[i].mapped); dev.erase(dev.begin() + i); return cudaSuccess; }
    fprintf(stderr, "EMU: cudaFree of %p, not a device allocation\n", p); return fail(cudaErrorInvalidDevicePointer);
}
cudaError_t cudaHostAlloc(void **p, size_t n, unsigned f) {
    (void)f; if (n > ((size_t)1 << 40)) return fail(cudaErrorMemoryAllocation);
    *p = aligned_alloc(4096, pg(n)); pinned.push_back({(char *)*p, n, pg(n)}); return cudaSuccess;
}
cudaError_t cudaFreeHost(void *p) {
    emu_flush_all();
    for (size_t i = 0; i < pinned.size(); i++) if (pinned[i].p == p) { free(p); pinned.erase(pinned.begin() + i); return cudaSuccess; }
    fprintf(stderr, "EMU: cudaFreeHost of %p, not pinned\n", p); return fail(cudaErrorInvalidValue);
}
cudaError_t cudaMemGetInfo(size_t *f, size_t *t) { *f = (size_t)60 << 30; *t = (size_t)80 << 30; return cudaSuccess; }
static cudaError_t cp(void *d, const void *s, size_t n, cudaMemcpyKind k) {
    int dd = k == cudaMemcpyHostToDevice || k == cudaMemcpyDeviceToDevice, sd = k == cudaMemcpyDeviceToHost || k == cudaMemcpyDeviceToDevice;
    if (n && (dd != is_dev(d, n) || sd != is_dev(s, n) || (!dd && touches_dev(d)) || (!sd && touches_dev(s)))) {
        fprintf(stderr, "EMU: memcpy kind %d does not match the pointers (dst dev %d, src dev %d)\n", (int)k, is_dev(d, n), is_dev(s, n));
        abort();
    }
    emu_device_enter(); memmove(d, s, n); emu_device_leave(); return cudaSuccess;
}
void emu_flush_all(void);
static int async_mode2(void);
struct emu_stream;
static void enq(cudaStream_t st, std::function<void()> f);
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind k) { emu_flush_all(); return cp(d, s, n, k); }
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind k, cudaStream_t st) { if (!async_mode2()) return cp(d, s, n, k); enq(st, [=]{ cp(d, s, n, k); }); return cudaSuccess; }
cudaError_t cudaMemset(void *d, int v, size_t n) {
    emu_flush_all();
    if (n && !is_dev(d, n)) { fprintf(stderr, "EMU: memset of non-device memory\n"); abort(); }
    emu_device_enter(); memset(d, v, n); emu_device_leave(); return cudaSuccess;
}
static void ms(void *d, int v, size_t n) { emu_device_enter(); memset(d, v, n); emu_device_leave(); }
cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t st) { if (!async_mode2()) return cudaMemset(d, v, n); enq(st, [=]{ ms(d, v, n); }); return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void);
#include <functional>
struct emu_stream { std::vector<std::function<void()>> q; size_t done = 0; };
static emu_stream legacy_q;
static emu_stream *SQ(cudaStream_t s) { return (!s || s == cudaStreamLegacy) ? &legacy_q : s; }
static void flush_to(emu_stream *s, size_t upto) { while (s->done < upto && s->done < s->q.size()) { auto f = s->q[s->done]; s->done++; f(); } }
static std::vector<emu_stream *> streams;
void emu_flush_all(void) { flush_to(&legacy_q, legacy_q.q.size()); for (auto x : streams) flush_to(x, x->q.size()); flush_to(&legacy_q, legacy_q.q.size()); }
static int async_mode = getenv("EMU_ASYNC") != NULL;
struct emu_event { double t; int recorded; emu_stream *s; size_t idx; unsigned gen; };
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) { *s = new emu_stream(); streams.push_back(*s); return cudaSuccess; }
static int valid_stream(cudaStream_t s) { if (!s || s == cudaStreamLegacy) return 1; for (auto x : streams) if (x == s) return 1; return 0; }
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    for (size_t i = 0; i < streams.size(); i++) if (streams[i] == s) { delete s; streams.erase(streams.begin() + i); return cudaSuccess; }
    return fail(cudaErrorInvalidResourceHandle);
}
static int async_mode2(void) { return async_mode; }
static void enq(cudaStream_t st, std::function<void()> f) { SQ(st)->q.push_back(f); }
cudaError_t cudaDeviceSynchronize(void) { emu_flush_all(); return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { if (!valid_stream(s)) return fail(cudaErrorInvalidResourceHandle); flush_to(SQ(s), SQ(s)->q.size()); return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned) { if (!valid_stream(s)) return fail(cudaErrorInvalidResourceHandle); if (e->s) { emu_stream *es = e->s; size_t i = e->idx + 1; enq(s, [=]{ flush_to(es, i); }); } return cudaSuccess; }
static double now_ms(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6; }
cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = new emu_event(); (*e)->recorded = 0; (*e)->s = NULL; (*e)->gen = 0; return cudaSuccess; }
cudaError_t cudaEventDestroy(cudaEvent_t e) { delete e; return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { if (!valid_stream(s)) return fail(cudaErrorInvalidResourceHandle); e->recorded = 1; e->s = SQ(s); e->idx = SQ(s)->q.size(); { cudaEvent_t ee = e; unsigned g = ++e->gen; enq(s, [=]{ if (ee->gen == g) ee->t = now_ms(); }); } return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t e) { if (e->s) flush_to(e->s, e->idx + 1); return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    if (!a->recorded || !b->recorded) return fail(cudaErrorInvalidResourceHandle);
    *ms = (float)(b->t - a->t); return cudaSuccess;
}
struct emu_check { ~emu_check() { if (!dev.empty() || !pinned.empty()) fprintf(stderr, "EMU: at exit %zu device and %zu pinned allocations remain\n", dev.size(), pinned.size());
    if (!streams.empty()) fprintf(stderr, "EMU: %zu streams not destroyed\n", streams.size()); } } emu_check_at_exit;
