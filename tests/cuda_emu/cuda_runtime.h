/* cuda_runtime.h -- a host emulation of the slice of the CUDA runtime that ckpt's CUDA backend,
   its tests, examples/mlp_cuda.cu and bench/mlp_gpu_bench.cu use. Compiled by g++ as C++17;
   tests/cuda_emu/CMakeLists.txt force-includes it and rewrites every kernel launch
   `name<<<grid, block, shmem, stream>>>(args)` into one of two forms:

     EMU_LAUNCH(grid, block, ...) name(args)          the loop launcher (backend and test sources):
         a for loop over the grid that calls the kernel once per thread, one thread after
         another, at once (after running every queued async operation: emu_flush_all). Fast,
         but a thread cannot wait for another (no barriers, no shuffles) and the launch cannot
         be queued.
     EMU_FIBER_LAUNCH(name, grid, block, ...)(args)   the fiber launcher (the example and the
         benchmark): every thread of a block is a fiber (fibers.cpp), so __syncthreads,
         __syncwarp and the warp shuffles work; the arguments are copied and the launch is a
         device operation of its stream (emu_device_op): queued with EMU_ASYNC, like a copy.

   Blocks run one after another; nothing runs in parallel. emu.cpp says what else is and is not
   emulated. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#define __global__
#define __host__
#define __device__
/* Blocks run one after another and the threads of a block share the process, so one static
   copy is the block's shared memory. Dynamic shared memory (extern __shared__) is not emulated. */
#define __shared__ static
#ifndef __CUDACC__
#define __CUDACC__ 1
#endif

typedef enum cudaError {
    cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2, cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevicePointer = 17, cudaErrorInsufficientDriver = 35, cudaErrorNoDevice = 100,
    cudaErrorInvalidResourceHandle = 400, cudaErrorNotSupported = 801
} cudaError_t;
typedef struct emu_stream *cudaStream_t;
typedef struct emu_event *cudaEvent_t;
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamDefault 0u
#define cudaStreamNonBlocking 1u
#define cudaHostAllocDefault 0u
/* Graphs and stream capture: declared so that the backend compiles; not emulated (every call
   returns cudaErrorNotSupported, so a chain in graph mode fails its first step). */
typedef struct emu_graph *cudaGraph_t;
typedef struct emu_graph_exec *cudaGraphExec_t;
typedef enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal = 0, cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed = 2 } cudaStreamCaptureMode;
typedef enum cudaStreamCaptureStatus { cudaStreamCaptureStatusNone = 0, cudaStreamCaptureStatusActive = 1,
    cudaStreamCaptureStatusInvalidated = 2 } cudaStreamCaptureStatus;
typedef enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4 } cudaMemcpyKind;

/* ---- built-in types and variables ---------------------------------------------------------- */
struct uint3 { unsigned x, y, z; };
struct uint4 { unsigned x, y, z, w; };
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
/* One set for the whole process: the launchers set them for the thread that runs. */
extern uint3 blockIdx, threadIdx;
extern dim3 blockDim, gridDim;
constexpr int warpSize = 32;

/* CUDA's min and max overloads (math_functions.h), host and device. */
#define EMU_MINMAX(T) \
    static inline T min(T a, T b) { return a < b ? a : b; } \
    static inline T max(T a, T b) { return a > b ? a : b; }
EMU_MINMAX(int) EMU_MINMAX(unsigned) EMU_MINMAX(long long) EMU_MINMAX(unsigned long long)
EMU_MINMAX(float) EMU_MINMAX(double)
#undef EMU_MINMAX

/* ---- device properties (a made-up device) ----------------------------------------------------- */
struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem, sharedMemPerBlock;
    int warpSize, maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3];
    int major, minor, multiProcessorCount;
};

/* ---- runtime API (emu.cpp) -------------------------------------------------------------------- */
cudaError_t cudaGetDeviceCount(int *);
cudaError_t cudaGetDevice(int *);
cudaError_t cudaSetDevice(int);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *, int);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorName(cudaError_t);
const char *cudaGetErrorString(cudaError_t);
cudaError_t cudaMalloc(void **, size_t);
template <class T> cudaError_t cudaMalloc(T **p, size_t n) { return cudaMalloc((void **)p, n); }
cudaError_t cudaFree(void *);
cudaError_t cudaHostAlloc(void **, size_t, unsigned);
template <class T> cudaError_t cudaHostAlloc(T **p, size_t n, unsigned f) { return cudaHostAlloc((void **)p, n, f); }
cudaError_t cudaMallocHost(void **, size_t);
template <class T> cudaError_t cudaMallocHost(T **p, size_t n) { return cudaMallocHost((void **)p, n); }
cudaError_t cudaFreeHost(void *);
cudaError_t cudaMemGetInfo(size_t *, size_t *);
cudaError_t cudaMemcpy(void *, const void *, size_t, cudaMemcpyKind);
cudaError_t cudaMemcpyAsync(void *, const void *, size_t, cudaMemcpyKind, cudaStream_t);
cudaError_t cudaMemset(void *, int, size_t);
cudaError_t cudaMemsetAsync(void *, int, size_t, cudaStream_t);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaStreamCreate(cudaStream_t *);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *, unsigned);
cudaError_t cudaStreamDestroy(cudaStream_t);
cudaError_t cudaStreamSynchronize(cudaStream_t);
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned);
cudaError_t cudaEventCreate(cudaEvent_t *);
cudaError_t cudaEventDestroy(cudaEvent_t);
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t);
cudaError_t cudaEventSynchronize(cudaEvent_t);
cudaError_t cudaEventElapsedTime(float *, cudaEvent_t, cudaEvent_t);
cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode);
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *);
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus *);
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *, cudaGraph_t, unsigned long long);
cudaError_t cudaGraphLaunch(cudaGraphExec_t, cudaStream_t);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t);
cudaError_t cudaGraphDestroy(cudaGraph_t);

/* ---- the emulator's own interface ------------------------------------------------------------- */
/* Device mode: device memory is readable and writable only between enter and leave (nested). */
void emu_device_enter(void);
void emu_device_leave(void);
/* Runs every queued async operation (EMU_ASYNC=1), on every stream, in order. */
void emu_flush_all(void);
/* Whether [p, p + n) lies inside one device allocation. */
bool emu_is_device(const void *p, size_t n);
/* Whether s is the legacy stream, NULL, or a live stream from cudaStreamCreate*. */
bool emu_stream_valid(cudaStream_t s);
/* Prints "EMU: ..." to stderr and aborts: a misuse that CUDA would not catch as an error code. */
[[noreturn]] void emu_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Checks a launch's configuration and stream; on failure records the error for
   cudaGetLastError (CUDA reports launch errors at the launch) and returns false. */
bool emu_launch_check(dim3 grid, dim3 block, cudaStream_t stream);
/* A device operation on stream s (a fiber-launched kernel, a cuBLAS call): without EMU_ASYNC it
   runs now, after every queued operation (emu_flush_all); with it, it is queued on s like an
   async copy and runs when something waits for it. op enters device mode itself. */
void emu_device_op(cudaStream_t s, std::function<void()> op);

/* The loop launcher: `for (...) kernel(args);`, thread x fastest, then y, z, then the blocks.
   emu_launch_begin checks, runs the queued work, sets gridDim and blockDim and enters device
   mode; it returns false when the launch must not run. */
bool emu_launch_begin(dim3 grid, dim3 block, cudaStream_t stream);
void emu_launch_end(void);
struct emu_grid {
    dim3 g, b;
    bool run;
    emu_grid(dim3 grid, dim3 block, size_t shmem = 0, cudaStream_t stream = 0) : g(grid), b(block) {
        (void)shmem;
        run = emu_launch_begin(grid, block, stream);
    }
    ~emu_grid() { emu_launch_end(); }
    emu_grid(const emu_grid &) = delete;
    emu_grid &operator=(const emu_grid &) = delete;
    bool ok() const { return run; }
    void next() {
        if (++threadIdx.x < b.x) return;
        threadIdx.x = 0;
        if (++threadIdx.y < b.y) return;
        threadIdx.y = 0;
        if (++threadIdx.z < b.z) return;
        threadIdx.z = 0;
        if (++blockIdx.x < g.x) return;
        blockIdx.x = 0;
        if (++blockIdx.y < g.y) return;
        blockIdx.y = 0;
        if (++blockIdx.z < g.z) return;
        run = false;
    }
};
#define EMU_LAUNCH(...) for (emu_grid _emu_g(__VA_ARGS__); _emu_g.ok(); _emu_g.next())

/* The fiber launcher (fibers.cpp): sets gridDim and blockDim, enters device mode and runs
   body(arg) once per thread of the grid, each thread on its own fiber. name is the kernel's,
   for messages. */
void emu_fiber_run(const char *name, dim3 grid, dim3 block, void (*body)(void *), void *arg);

template <class K> struct emu_fiber_launcher {
    K *kernel;
    const char *name;
    dim3 grid, block;
    cudaStream_t stream;
    /* The arguments are evaluated and copied once, here; each thread's call converts the copies
       to the kernel's parameter types (its own, as each CUDA thread gets). */
    template <class... A> void operator()(A &&...args) const {
        if (!emu_launch_check(grid, block, stream)) return;
        emu_device_op(stream, [k = kernel, n = name, g = grid, b = block,
                               a = std::tuple<std::decay_t<A>...>(std::forward<A>(args)...)]() {
            auto call = [&]() { std::apply(k, a); };
            emu_fiber_run(n, g, b, [](void *p) { (*static_cast<decltype(call) *>(p))(); }, &call);
        });
    }
};
template <class K>
emu_fiber_launcher<K> emu_fiber_launch(K *kernel, const char *name, dim3 grid, dim3 block, size_t shmem = 0,
                                       cudaStream_t stream = 0) {
    (void)shmem;
    return emu_fiber_launcher<K>{kernel, name, grid, block, stream};
}
#define EMU_FIBER_LAUNCH(kernel, ...) emu_fiber_launch(kernel, #kernel, __VA_ARGS__)

/* ---- block and warp synchronisation (fibers.cpp; only under the fiber launcher) ---------------
   __syncthreads: a barrier among the block's threads that have not returned (as on sm_70 and
   later, an exited thread does not hold it up). __syncwarp and the shuffles: a barrier among the
   non-exited lanes of the warp named in mask (lane = linear thread index % 32); every lane that
   arrives must name the same mask; a shuffle that reads a lane which did not take part (exited,
   not in mask, or beyond the block) aborts, where CUDA would return an undefined value. */
void __syncthreads(void);
void __syncwarp(unsigned mask = 0xffffffffu);
enum emu_shfl_kind { EMU_SHFL_IDX, EMU_SHFL_UP, EMU_SHFL_DOWN, EMU_SHFL_XOR };
uint64_t emu_shfl(const char *what, unsigned mask, uint64_t bits, emu_shfl_kind kind, unsigned arg, int width);
template <class T> T emu_shfl_t(const char *what, unsigned mask, T v, emu_shfl_kind kind, unsigned arg, int width) {
    static_assert(sizeof(T) <= sizeof(uint64_t) && std::is_trivially_copyable<T>::value, "shuffle of a 4- or 8-byte value");
    uint64_t bits = 0;
    memcpy(&bits, &v, sizeof v);
    bits = emu_shfl(what, mask, bits, kind, arg, width);
    memcpy(&v, &bits, sizeof v);
    return v;
}
template <class T> T __shfl_sync(unsigned mask, T v, int src, int width = warpSize) {
    return emu_shfl_t("__shfl_sync", mask, v, EMU_SHFL_IDX, (unsigned)src, width);
}
template <class T> T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
    return emu_shfl_t("__shfl_up_sync", mask, v, EMU_SHFL_UP, delta, width);
}
template <class T> T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
    return emu_shfl_t("__shfl_down_sync", mask, v, EMU_SHFL_DOWN, delta, width);
}
template <class T> T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = warpSize) {
    return emu_shfl_t("__shfl_xor_sync", mask, v, EMU_SHFL_XOR, (unsigned)lane_mask, width);
}
