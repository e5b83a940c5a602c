/* ckpt_cuda.h -- the CUDA backend of ckpt.h: device and pinned memory, streams, events, async
   copies, and the kernels the library and its users need (Philox random fills that match the
   host bit for bit, dropout, a buffer checksum).

   USE
   ---
   Any C or C++ file may include this header: its declarations need no CUDA header (streams and
   events cross as void*), so the file that defines CKPT_IMPLEMENTATION can be compiled by gcc.
   Exactly one .cu file, compiled by nvcc, builds the backend:

       #define CKPT_CUDA_IMPLEMENTATION
       #include "backends/ckpt_cuda.h"

   then, anywhere:

       ckpt_cuda_desc cd = {0};
       cd.stream = my_stream;              // cudaStream_t your kernels use; NULL: legacy stream
       cd.nvtx = 1;                        // NVTX range per scheduled op (Nsight Systems)
       ckpt_backend be;
       if (ckpt_cuda_backend_create(&cd, &be) == CKPT_ERR_NO_DEVICE) ...   // no GPU here
       ... ckpt_chain_desc.backend = &be ...
       ckpt_cuda_backend_destroy(&be);     // after every chain that uses it

   Link with the CUDA runtime (-lcudart; from gcc also -lstdc++). NVTX is header-only in CUDA 12
   and later: nothing more to link.

   Check for a GPU before making your own stream: ckpt_cuda_device_count returns
   CKPT_ERR_NO_DEVICE when there is none (cudaStreamCreate would fail first otherwise).

   What callbacks get: ckpt_ctx.stream is the compute stream (a cudaStream_t); launch every kernel
   of a stage on it. ckpt_ctx.backend is the backend, for the kernel launchers below. The
   executor does not synchronise inside a step (except to capture a CUDA graph again: see CUDA
   GRAPHS in ckpt.h); ckpt_backward ends with a synchronize of the compute and copy streams, so
   gradients are complete when it returns.

   STREAMS, EVENTS, COPIES
   -----------------------
   The backend owns one copy stream per direction (non-blocking, created at create); copy_async
   on a NULL stream uses the compute stream. Events are cudaEvent_t with timing enabled. Every
   entry makes desc.device current for the duration of the call and restores the caller's device.
   Callbacks, though, run on the caller's current device: with several GPUs, make desc.device
   current (cudaSetDevice) before ckpt_forward and ckpt_backward, as one thread per GPU does.

   KERNELS
   -------
   ckpt_cuda_philox_uniform / _normal / _dropout launch on `stream` (NULL: the compute stream) and
   return without waiting. They compute with the CKPT_HD functions of ckpt.h, the same code the
   host runs, so ckpt_cuda_philox_normal gives exactly ckpt_philox_fill_normal's bits, and so on.
   In your own kernels (a .cu file that includes ckpt.h), call ckpt_philox_at (block j of a
   range; it honours ckpt_philox.delta, see CUDA GRAPHS), ckpt_philox_gen, ckpt_uniform_from_u32,
   ckpt_normal_from_u32 and ckpt_dropout_from_u32 directly: they are __host__ __device__ under
   nvcc. ckpt_cuda_checksum equals ckpt_checksum of the same bytes.

   ERRORS
   ------
   Every CUDA error becomes a ckpt_result, logged through desc.logger with the CUDA error name and
   string: cudaErrorMemoryAllocation -> CKPT_ERR_OUT_OF_DEVICE_MEMORY, cudaErrorNoDevice and
   cudaErrorInsufficientDriver (no driver: what a machine without a GPU reports) ->
   CKPT_ERR_NO_DEVICE, anything else -> CKPT_ERR_BACKEND. Nothing here calls exit().

   CUDA GRAPHS
   -----------
   The backend has the graph entries, so a chain with ckpt_chain_desc.graphs = 1 captures its
   forward and backward sweeps into two CUDA graphs and replays them (CUDA GRAPHS in ckpt.h's
   manual: what is captured, when a graph is captured again, what is refused). It needs a
   compute stream of its own: desc.stream non-NULL (the legacy default stream cannot be captured;
   the first step then fails with CKPT_ERR_BAD_ARGUMENT). Capture is cudaStreamCaptureModeRelaxed
   on the compute stream; the copy streams join it through the executor's events and are joined
   back before cudaStreamEndCapture. Each launch first runs a one-thread kernel that sets the
   backend's device-resident Philox offset (8 bytes, allocated at the first capture, outside the
   stats), then cudaGraphLaunch, both on the compute stream. Your kernels that draw random
   numbers from a ckpt_ctx_rng range must take their counters from ckpt_philox_at (or
   ckpt_philox_counter), which add that offset: ckpt_philox_gen(p.key, p.base + j, ...) would
   replay the capture step's masks at every step. Callbacks run only when a sweep is captured;
   they must not synchronize (cudaStreamSynchronize, cudaEventSynchronize, cudaMemcpy).

   HIP: backends/ckpt_hip.h is this backend for AMD GPUs, built from the same source.
*/
#ifndef CKPT_CUDA_H_INCLUDED
#define CKPT_CUDA_H_INCLUDED

#include "../ckpt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ckpt_cuda_desc {
    int device;                 /* CUDA device ordinal (default 0) */
    void *stream;               /* compute stream (cudaStream_t); NULL: the legacy default stream */
    int nvtx;                   /* nonzero: an NVTX range around every scheduled operation */
    ckpt_logger logger;         /* default: silent */
    ckpt_allocator allocator;   /* host memory for the backend's own state; default malloc */
} ckpt_cuda_desc;

typedef struct ckpt_cuda_stats {
    uint64_t allocs, frees;             /* device allocations through the backend */
    uint64_t live_bytes, peak_bytes;    /* device bytes allocated through the backend */
    uint64_t pinned_live_bytes, pinned_peak_bytes;
    uint64_t copies;                    /* copy_async + memset_async calls that succeeded */
} ckpt_cuda_stats;

/* Creates a CUDA backend in *out (desc may be NULL: device 0, legacy stream). Returns
   CKPT_ERR_NO_DEVICE when there is no usable GPU, CKPT_ERR_BAD_INDEX when desc->device is not a
   device ordinal. */
CKPT_API ckpt_result ckpt_cuda_backend_create(const ckpt_cuda_desc *desc, ckpt_backend *out);
/* Destroys the copy streams and the backend state; frees the checksum scratch. Memory allocated
   through the backend and not freed stays allocated (see the stats). */
CKPT_API void ckpt_cuda_backend_destroy(ckpt_backend *backend);
/* Number of CUDA devices in *count; CKPT_ERR_NO_DEVICE (count 0) when none can be used. */
CKPT_API ckpt_result ckpt_cuda_device_count(int *count);
/* Allocation and copy counters of a CUDA backend (CKPT_ERR_BAD_BACKEND for any other). */
CKPT_API ckpt_result ckpt_cuda_get_stats(const ckpt_backend *backend, ckpt_cuda_stats *out);
/* Sets peak_bytes and pinned_peak_bytes to the live values (to measure one phase). */
CKPT_API ckpt_result ckpt_cuda_reset_peak(ckpt_backend *backend);

/* Fill out[0..n) with ckpt_philox_fill_uniform's values for the range p (device pointer). */
CKPT_API ckpt_result ckpt_cuda_philox_uniform(const ckpt_backend *backend, const ckpt_philox *p, float *out,
                                              size_t n, void *stream);
/* Fill out[0..n) with ckpt_philox_fill_normal's values. */
CKPT_API ckpt_result ckpt_cuda_philox_normal(const ckpt_backend *backend, const ckpt_philox *p, float *out,
                                             size_t n, void *stream);
/* ckpt_philox_dropout on the device: out = keep ? in * scale : 0, mask (optional) 1 or 0. in and
   out may alias. Run it on the gradient with the same range for the backward. */
CKPT_API ckpt_result ckpt_cuda_philox_dropout(const ckpt_backend *backend, const ckpt_philox *p, float p_drop,
                                              const float *in, float *out, uint8_t *mask, size_t n, void *stream);
/* ckpt_checksum of `bytes` device bytes at ptr, after the work queued on the compute stream.
   Blocks until the result is on the host. Uses a scratch buffer allocated on the first call
   (512 KiB device + 512 KiB pinned, outside the stats) and kept until destroy. */
CKPT_API ckpt_result ckpt_cuda_checksum(const ckpt_backend *backend, const void *ptr, size_t bytes, uint64_t *out);

#ifdef __cplusplus
}
#endif
#endif /* CKPT_CUDA_H_INCLUDED */

/* ================================================================================================
   IMPLEMENTATION (one .cu file, compiled by nvcc, defines CKPT_CUDA_IMPLEMENTATION)
   ================================================================================================ */
#if defined(CKPT_CUDA_IMPLEMENTATION) && !defined(CKPT_CUDA_IMPLEMENTATION_DONE)
#define CKPT_CUDA_IMPLEMENTATION_DONE
#ifndef __CUDACC__
#error "CKPT_CUDA_IMPLEMENTATION must be compiled by nvcc (a .cu file); other files include ckpt_cuda.h without it"
#endif
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define _CKPT_GPU(name) ckpt_cuda_##name
#define _CKPT_GPU_TAG "cuda"
#define _CKPT_GPU_LEGACY_STREAM cudaStreamLegacy
#define _CKPT_GPU_RANGE_PUSH(label) nvtxRangePushA(label)
#define _CKPT_GPU_RANGE_POP() nvtxRangePop()
#include "ckpt_gpu.inl"
#endif /* CKPT_CUDA_IMPLEMENTATION */
