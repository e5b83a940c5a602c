/* Host emulation of the slice of the CUDA runtime ckpt uses. Everything runs synchronously;
   device memory is mmap'ed PROT_NONE except while an emulated device operation runs. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#define __global__
#define __host__
#define __device__
#define __CUDACC__ 1
typedef enum cudaError { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
    cudaErrorInsufficientDriver = 35, cudaErrorNoDevice = 100, cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidResourceHandle = 400 } cudaError_t;
typedef struct emu_stream *cudaStream_t;
typedef struct emu_event *cudaEvent_t;
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamNonBlocking 1u
#define cudaHostAllocDefault 0u
typedef enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4 } cudaMemcpyKind;
struct emu_u3 { unsigned x, y, z; };
extern emu_u3 blockIdx, threadIdx, blockDim, gridDim;
struct uint4 { unsigned x, y, z, w; };
cudaError_t cudaGetDeviceCount(int *);
cudaError_t cudaGetDevice(int *);
cudaError_t cudaSetDevice(int);
cudaError_t cudaGetLastError(void);
const char *cudaGetErrorName(cudaError_t);
const char *cudaGetErrorString(cudaError_t);
cudaError_t cudaMalloc(void **, size_t);
template <class T> cudaError_t cudaMalloc(T **p, size_t n) { return cudaMalloc((void **)p, n); }
cudaError_t cudaFree(void *);
cudaError_t cudaHostAlloc(void **, size_t, unsigned);
template <class T> cudaError_t cudaHostAlloc(T **p, size_t n, unsigned f) { return cudaHostAlloc((void **)p, n, f); }
cudaError_t cudaFreeHost(void *);
cudaError_t cudaMemGetInfo(size_t *, size_t *);
cudaError_t cudaMemcpy(void *, const void *, size_t, cudaMemcpyKind);
cudaError_t cudaMemcpyAsync(void *, const void *, size_t, cudaMemcpyKind, cudaStream_t);
cudaError_t cudaMemset(void *, int, size_t);
cudaError_t cudaMemsetAsync(void *, int, size_t, cudaStream_t);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *, unsigned);
cudaError_t cudaStreamDestroy(cudaStream_t);
cudaError_t cudaStreamSynchronize(cudaStream_t);
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned);
cudaError_t cudaEventCreate(cudaEvent_t *);
cudaError_t cudaEventDestroy(cudaEvent_t);
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t);
cudaError_t cudaEventSynchronize(cudaEvent_t);
cudaError_t cudaEventElapsedTime(float *, cudaEvent_t, cudaEvent_t);
void emu_device_enter(void);
void emu_flush_all(void);
void emu_device_leave(void);
extern cudaError_t emu_launch_error;
struct emu_grid {
    unsigned g, b, bi, ti; bool first;
    emu_grid(unsigned g_, unsigned b_) : g(g_), b(b_), bi(0), ti(0), first(true) {
        if (g == 0 || b == 0 || b > 1024) { emu_launch_error = cudaErrorInvalidValue; g = 0; }
        emu_flush_all(); gridDim.x = g; blockDim.x = b; blockIdx.x = 0; threadIdx.x = 0; emu_device_enter();
    }
    ~emu_grid() { emu_device_leave(); }
    bool ok() const { return g && bi < g; }
    void next() { if (++ti == b) { ti = 0; bi++; } blockIdx.x = bi; threadIdx.x = ti; }
};
#define EMU_LAUNCH(G, B, ...) for (emu_grid _emu_g((unsigned)(G), (unsigned)(B)); _emu_g.ok(); _emu_g.next())
