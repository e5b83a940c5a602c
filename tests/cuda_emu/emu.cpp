/* emu.cpp -- a host emulation of the slice of the CUDA runtime that backends/ckpt_gpu.inl,
   tests/test_gpu.cu, tests/gpu_impl.cu, examples/mlp_cuda.cu and bench/mlp_gpu_bench.cu use, so
   that CI (which has no GPU) runs the CUDA backend's host code, its kernels and the example's
   on every commit. tests/cuda_emu/CMakeLists.txt builds and runs them on it.

   What it checks: device memory is mmap'ed PROT_NONE except while an emulated device operation
   (a kernel, a copy, a memset, a cuBLAS call) runs, so any host access to device memory crashes;
   copies check that their kind matches the pointers; allocations, streams and cuBLAS handles left
   at exit are reported ("EMU: ..." on stderr).

   Streams: EMU_ASYNC picks the schedule of the async work, each one a legal CUDA schedule:
     unset or 0   everything runs at once, in program order;
     1 ("late")   async copies, memsets, event records, stream-event waits, fiber-launched kernels
                  and cuBLAS calls are queued per stream and run only when something waits for
                  them (a synchronize, an event synchronize, an operation queued behind a
                  stream-event wait that is run, a free, a loop-launched kernel, or, for the
                  legacy and blocking streams, a synchronous copy or memset): work starts as late as possible, so code that reads a
                  result before waiting for it sees stale data, and a queued kernel that lacks
                  its wait for a copy on another stream runs before the copy;
     2 ("early copies")  the same, but an async copy or memset runs as soon as it is queued
                  (with everything before it on its stream and what that waits for): a copy
                  that lacks its wait for a queued kernel on another stream runs before it
                  (reading data not written yet, or overwriting data still to be read).
   A blocking stream (cudaStreamCreate, or flags 0) and the legacy stream order their queued
   work against each other as CUDA's implicit synchronisation does; cudaStreamNonBlocking
   streams do not. Loop-launched kernels (see cuda_runtime.h) cannot be queued: they run at
   launch, after every queued operation of every stream.

   What it does not model: overlap of any two operations (one runs at a time, each to
   completion); warps in lockstep, a memory model, races (see fibers.cpp); several devices. It
   proves nothing about a real GPU. */
#include "cuda_runtime.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <functional>
#include <vector>

uint3 blockIdx, threadIdx;
dim3 blockDim, gridDim;
int emu_nvtx_depth;     /* nvtx3/nvToolsExt.h */

void emu_fatal(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("EMU: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    abort();
}

/* ---- errors ----------------------------------------------------------------------------------- */
static cudaError_t last_error = cudaSuccess;
static cudaError_t fail(cudaError_t e) { last_error = e; return e; }

cudaError_t cudaGetLastError(void) { cudaError_t e = last_error; last_error = cudaSuccess; return e; }
cudaError_t cudaPeekAtLastError(void) { return last_error; }
const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    }
    return "cudaErrorOther";
}
const char *cudaGetErrorString(cudaError_t e) { return e ? "emulated error" : "no error"; }

/* ---- device ----------------------------------------------------------------------------------- */
static int cur_dev = 0;
static bool no_device(void) { return getenv("EMU_NO_DEVICE") != NULL; }
cudaError_t cudaGetDeviceCount(int *c) { *c = no_device() ? 0 : 1; return no_device() ? fail(cudaErrorNoDevice) : cudaSuccess; }
cudaError_t cudaGetDevice(int *d) { *d = cur_dev; return cudaSuccess; }
cudaError_t cudaSetDevice(int d) { if (d != 0) return fail(cudaErrorInvalidValue); cur_dev = d; return cudaSuccess; }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d) {
    if (d != 0 || no_device()) return fail(cudaErrorInvalidValue);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "Emulated CUDA device (tests/cuda_emu, host)");
    p->totalGlobalMem = (size_t)80 << 30;
    p->sharedMemPerBlock = 48 << 10;
    p->warpSize = warpSize;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = 1024; p->maxThreadsDim[1] = 1024; p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 0x7fffffff; p->maxGridSize[1] = 65535; p->maxGridSize[2] = 65535;
    p->major = 9; p->minor = 0; p->multiProcessorCount = 1;
    return cudaSuccess;
}

/* ---- memory ----------------------------------------------------------------------------------- */
/* Device allocations are page-aligned pieces of one PROT_NONE reservation, kept in address order
   and placed first-fit, so that the live ones mostly touch: entering and leaving a device operation
   changes the protection of each run of touching allocations in one mprotect (each one costs a TLB
   flush, which dominated the emulated tests' time when every allocation had its own). A freed
   piece is mapped PROT_NONE afresh, which drops its pages. */
struct alloc { char *p; size_t n, mapped; };
static std::vector<alloc> dev, pinned;   /* dev: in address order */
static int depth = 0;
static char *heap;                        /* the reservation */
static const size_t heap_bytes = (size_t)1 << 44;
static size_t pg(size_t n) { return (n + 4095) & ~(size_t)4095; }

static void protect_dev(int prot) {
    for (size_t i = 0, j; i < dev.size(); i = j) {
        char *end = dev[i].p + dev[i].mapped;
        for (j = i + 1; j < dev.size() && dev[j].p == end; j++) end += dev[j].mapped;
        mprotect(dev[i].p, (size_t)(end - dev[i].p), prot);
    }
}
void emu_device_enter(void) { if (depth++ == 0) protect_dev(PROT_READ | PROT_WRITE); }
void emu_device_leave(void) { if (--depth == 0) protect_dev(PROT_NONE); }
bool emu_is_device(const void *p, size_t n) {
    for (auto &a : dev) if ((const char *)p >= a.p && (const char *)p + n <= a.p + a.n) return true;
    return false;
}
static bool touches_dev(const void *p) {
    for (auto &a : dev) if ((const char *)p >= a.p && (const char *)p < a.p + a.mapped) return true;
    return false;
}

cudaError_t cudaMalloc(void **p, size_t n) {
    if (n == 0) { *p = NULL; return cudaSuccess; }
    if (n > ((size_t)1 << 40)) return fail(cudaErrorMemoryAllocation);
    if (!heap) {
        void *h = mmap(NULL, heap_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (h == MAP_FAILED) emu_fatal("cannot reserve %zu bytes of address space for device memory", heap_bytes);
        heap = (char *)h;
    }
    char *m = heap;
    size_t i = 0;
    for (; i < dev.size() && (size_t)(dev[i].p - m) < pg(n); i++)   /* first fit */
        m = dev[i].p + dev[i].mapped;
    if ((size_t)(heap + heap_bytes - m) < pg(n)) return fail(cudaErrorMemoryAllocation);
    if (depth) mprotect(m, pg(n), PROT_READ | PROT_WRITE);
    dev.insert(dev.begin() + (long)i, {m, n, pg(n)});
    *p = m;
    return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    emu_flush_all();
    for (size_t i = 0; i < dev.size(); i++)
        if (dev[i].p == p) {
            int fl = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED;
            if (mmap(p, dev[i].mapped, PROT_NONE, fl, -1, 0) == MAP_FAILED)
                emu_fatal("cudaFree: cannot unmap %p", p);
            dev.erase(dev.begin() + (long)i);
            return cudaSuccess;
        }
    fprintf(stderr, "EMU: cudaFree of %p, not a device allocation\n", p);
    return fail(cudaErrorInvalidDevicePointer);
}
cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags) {
    (void)flags;
    if (n > ((size_t)1 << 40)) return fail(cudaErrorMemoryAllocation);
    *p = aligned_alloc(4096, pg(n));
    if (!*p) return fail(cudaErrorMemoryAllocation);
    pinned.push_back({(char *)*p, n, pg(n)});
    return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t n) { return cudaHostAlloc(p, n, cudaHostAllocDefault); }
cudaError_t cudaFreeHost(void *p) {
    emu_flush_all();
    for (size_t i = 0; i < pinned.size(); i++)
        if (pinned[i].p == p) { free(p); pinned.erase(pinned.begin() + (long)i); return cudaSuccess; }
    fprintf(stderr, "EMU: cudaFreeHost of %p, not pinned\n", p);
    return fail(cudaErrorInvalidValue);
}
cudaError_t cudaMemGetInfo(size_t *f, size_t *t) { *f = (size_t)60 << 30; *t = (size_t)80 << 30; return cudaSuccess; }

/* ---- streams and events ----------------------------------------------------------------------- */
struct emu_stream {
    std::vector<std::function<void()>> q;   /* every operation queued, run or not */
    size_t done = 0;                         /* q[0..done) have run (or are running) */
    bool blocking = true;                    /* orders against the legacy stream */
    bool destroyed = false;                  /* its queued work still runs */
};
struct emu_event { double t = 0; bool recorded = false; emu_stream *s = nullptr; size_t idx = 0; unsigned gen = 0; };

/* EMU_ASYNC: 0 (or unset), 1 or 2; see the top of this file. */
static int async_mode = [] {
    const char *v = getenv("EMU_ASYNC");
    int m = v && *v ? atoi(v) : 0;
    if (m < 0 || m > 2) emu_fatal("EMU_ASYNC=%s: expected 0, 1 (late) or 2 (early copies)", v);
    return m;
}();
static emu_stream legacy_q;
/* Every stream ever created: destroyed ones and events stay allocated until exit, as queued
   work may still name them. */
static std::vector<emu_stream *> streams;
static std::vector<emu_event *> dead_events;

static emu_stream *SQ(cudaStream_t s) { return (!s || s == cudaStreamLegacy) ? &legacy_q : s; }
bool emu_stream_valid(cudaStream_t s) {
    if (!s || s == cudaStreamLegacy) return true;
    for (auto x : streams) if (x == s) return !x->destroyed;
    return false;
}
/* Runs s's queued operations up to (not including) index upto. An operation may run others
   first (an event wait, an implicit legacy-stream dependency), always ones queued before it. */
static void flush_to(emu_stream *s, size_t upto) {
    while (s->done < upto && s->done < s->q.size()) {
        auto f = s->q[s->done];
        s->done++;
        f();
    }
}
void emu_flush_all(void) {
    flush_to(&legacy_q, legacy_q.q.size());
    for (auto x : streams) flush_to(x, x->q.size());
    flush_to(&legacy_q, legacy_q.q.size());
}
/* What a synchronous legacy-stream operation (cudaMemcpy, cudaMemset) waits for: the legacy
   stream and every blocking stream, not the non-blocking ones. */
static void flush_legacy_sync(void) {
    flush_to(&legacy_q, legacy_q.q.size());
    for (auto x : streams) if (x->blocking) flush_to(x, x->q.size());
}
/* Queues f on st, after CUDA's implicit dependencies: the legacy stream waits for the work
   already queued on every blocking stream; a blocking stream waits for the legacy stream's. */
static void enq(cudaStream_t st, std::function<void()> f) {
    emu_stream *q = SQ(st);
    if (q == &legacy_q) {
        for (auto b : streams)
            if (b->blocking && b->done < b->q.size()) { size_t n = b->q.size(); q->q.push_back([=] { flush_to(b, n); }); }
    } else if (q->blocking && legacy_q.done < legacy_q.q.size()) {
        size_t n = legacy_q.q.size();
        q->q.push_back([=] { flush_to(&legacy_q, n); });
    }
    q->q.push_back(std::move(f));
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
    *s = new emu_stream();
    (*s)->blocking = !(flags & cudaStreamNonBlocking);
    streams.push_back(*s);
    return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }
/* As in CUDA, the stream's queued work still runs, when something waits for it. */
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (!s || s == cudaStreamLegacy || !emu_stream_valid(s)) return fail(cudaErrorInvalidResourceHandle);
    s->destroyed = true;
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) { emu_flush_all(); return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    if (!emu_stream_valid(s)) return fail(cudaErrorInvalidResourceHandle);
    flush_to(SQ(s), SQ(s)->q.size());
    return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags) {
    (void)flags;
    if (!emu_stream_valid(s)) return fail(cudaErrorInvalidResourceHandle);
    if (e->s) { emu_stream *es = e->s; size_t i = e->idx + 1; enq(s, [=] { flush_to(es, i); }); }
    return cudaSuccess;
}
static double now_ms(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6; }
cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = new emu_event(); return cudaSuccess; }
cudaError_t cudaEventDestroy(cudaEvent_t e) { dead_events.push_back(e); return cudaSuccess; }
/* The time is taken when the record runs; a later record of the same event (gen) supersedes it. */
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    if (!emu_stream_valid(s)) return fail(cudaErrorInvalidResourceHandle);
    e->recorded = true;
    unsigned g = ++e->gen;
    enq(s, [=] { if (e->gen == g) e->t = now_ms(); });
    e->s = SQ(s);
    e->idx = e->s->q.size() - 1;
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) { if (e->s) flush_to(e->s, e->idx + 1); return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    if (!a->recorded || !b->recorded) return fail(cudaErrorInvalidResourceHandle);
    *ms = (float)(b->t - a->t);
    return cudaSuccess;
}

/* ---- graphs: not emulated; a stream never captures ----------------------------------------------- */
cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) { return fail(cudaErrorNotSupported); }
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *g) { *g = nullptr; return fail(cudaErrorNotSupported); }
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus *st) { *st = cudaStreamCaptureStatusNone; return cudaSuccess; }
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *x, cudaGraph_t, unsigned long long) {
    *x = nullptr;
    return fail(cudaErrorNotSupported);
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t, cudaStream_t) { return fail(cudaErrorNotSupported); }
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t) { return cudaSuccess; }
cudaError_t cudaGraphDestroy(cudaGraph_t) { return cudaSuccess; }

/* ---- copies and memsets ----------------------------------------------------------------------- */
static cudaError_t cp(void *d, const void *s, size_t n, cudaMemcpyKind k) {
    bool dd = k == cudaMemcpyHostToDevice || k == cudaMemcpyDeviceToDevice;
    bool sd = k == cudaMemcpyDeviceToHost || k == cudaMemcpyDeviceToDevice;
    if (n && (dd != emu_is_device(d, n) || sd != emu_is_device(s, n) || (!dd && touches_dev(d)) || (!sd && touches_dev(s))))
        emu_fatal("memcpy kind %d does not match the pointers (dst dev %d, src dev %d)", (int)k, (int)emu_is_device(d, n),
                  (int)emu_is_device(s, n));
    emu_device_enter();
    memmove(d, s, n);
    emu_device_leave();
    return cudaSuccess;
}
static void ms(void *d, int v, size_t n) {
    if (n && !emu_is_device(d, n)) emu_fatal("memset of non-device memory");
    emu_device_enter();
    memset(d, v, n);
    emu_device_leave();
}
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind k) { flush_legacy_sync(); return cp(d, s, n, k); }
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind k, cudaStream_t st) {
    if (!emu_stream_valid(st)) return fail(cudaErrorInvalidResourceHandle);
    if (!async_mode) return cp(d, s, n, k);
    enq(st, [=] { cp(d, s, n, k); });
    if (async_mode == 2) flush_to(SQ(st), SQ(st)->q.size());
    return cudaSuccess;
}
cudaError_t cudaMemset(void *d, int v, size_t n) { flush_legacy_sync(); ms(d, v, n); return cudaSuccess; }
cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t st) {
    if (!emu_stream_valid(st)) return fail(cudaErrorInvalidResourceHandle);
    if (!async_mode) { emu_flush_all(); ms(d, v, n); return cudaSuccess; }
    enq(st, [=] { ms(d, v, n); });
    if (async_mode == 2) flush_to(SQ(st), SQ(st)->q.size());
    return cudaSuccess;
}

/* ---- kernel launches -------------------------------------------------------------------------- */
bool emu_launch_check(dim3 g, dim3 b, cudaStream_t stream) {
    unsigned long long threads = (unsigned long long)b.x * b.y * b.z;
    if (!g.x || !g.y || !g.z || g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535 || !threads || threads > 1024 ||
        b.x > 1024 || b.y > 1024 || b.z > 64) {
        last_error = cudaErrorInvalidConfiguration;
        return false;
    }
    if (!emu_stream_valid(stream)) {
        last_error = cudaErrorInvalidResourceHandle;
        return false;
    }
    return true;
}
void emu_device_op(cudaStream_t s, std::function<void()> op) {
    if (async_mode) { enq(s, std::move(op)); return; }
    emu_flush_all();
    op();
}
bool emu_launch_begin(dim3 g, dim3 b, cudaStream_t stream) {
    bool ok = emu_launch_check(g, b, stream);
    emu_flush_all();
    gridDim = g;
    blockDim = b;
    blockIdx = uint3{0, 0, 0};
    threadIdx = uint3{0, 0, 0};
    emu_device_enter();
    return ok;
}
void emu_launch_end(void) { emu_device_leave(); }

/* ---- at exit ---------------------------------------------------------------------------------- */
static struct emu_check {
    ~emu_check() {
        if (!dev.empty() || !pinned.empty())
            fprintf(stderr, "EMU: at exit %zu device and %zu pinned allocations remain\n", dev.size(), pinned.size());
        size_t live = 0;
        for (auto s : streams) live += !s->destroyed;
        if (live) fprintf(stderr, "EMU: %zu streams not destroyed\n", live);
        for (auto s : streams) delete s;
        for (auto e : dead_events) delete e;
    }
} emu_check_at_exit;
