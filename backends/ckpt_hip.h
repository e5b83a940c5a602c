/* ckpt_hip.h -- the HIP backend of ckpt.h, for AMD GPUs: the CUDA backend built from the same
   source.

   Everything in backends/ckpt_cuda.h holds here with ckpt_hip_ for ckpt_cuda_ and hipcc for
   nvcc; read that header's documentation. The kernels and the host code are not copied: under
   CKPT_HIP_IMPLEMENTATION this header includes backends/ckpt_hip_alias.h (cudaX -> hipX) and then
   backends/ckpt_gpu.inl, the source ckpt_cuda.h compiles.

       #define CKPT_HIP_IMPLEMENTATION          // in one file compiled by hipcc
       #include "backends/ckpt_hip.h"

   Differences from CUDA: a NULL desc.stream means HIP's null stream; desc.nvtx is ignored (no
   roctx ranges yet); "no device" is hipErrorNoDevice (100) or hipErrorInsufficientDriver, both
   CKPT_ERR_NO_DEVICE. Link with -lamdhip64 (hipcc does it); from gcc also -lstdc++.
*/
#ifndef CKPT_HIP_H_INCLUDED
#define CKPT_HIP_H_INCLUDED

#include "../ckpt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ckpt_hip_desc {
    int device;                 /* HIP device ordinal (default 0) */
    void *stream;               /* compute stream (hipStream_t); NULL: the default (null) stream */
    int nvtx;                   /* ignored: HIP builds have no profiler ranges yet */
    ckpt_logger logger;         /* default: silent */
    ckpt_allocator allocator;   /* host memory for the backend's own state; default malloc */
} ckpt_hip_desc;

typedef struct ckpt_hip_stats {
    uint64_t allocs, frees;             /* device allocations through the backend */
    uint64_t live_bytes, peak_bytes;    /* device bytes allocated through the backend */
    uint64_t pinned_live_bytes, pinned_peak_bytes;
    uint64_t copies;                    /* copy_async + memset_async calls that succeeded */
} ckpt_hip_stats;

/* Creates a HIP backend in *out (desc may be NULL: device 0, null stream). Returns
   CKPT_ERR_NO_DEVICE when there is no usable GPU, CKPT_ERR_BAD_INDEX when desc->device is not a
   device ordinal. */
CKPT_API ckpt_result ckpt_hip_backend_create(const ckpt_hip_desc *desc, ckpt_backend *out);
/* Destroys the copy streams and the backend state; frees the checksum scratch. Memory allocated
   through the backend and not freed stays allocated (see the stats). */
CKPT_API void ckpt_hip_backend_destroy(ckpt_backend *backend);
/* Number of HIP devices in *count; CKPT_ERR_NO_DEVICE (count 0) when none can be used. */
CKPT_API ckpt_result ckpt_hip_device_count(int *count);
/* Allocation and copy counters of a HIP backend (CKPT_ERR_BAD_BACKEND for any other). */
CKPT_API ckpt_result ckpt_hip_get_stats(const ckpt_backend *backend, ckpt_hip_stats *out);
/* Sets peak_bytes and pinned_peak_bytes to the live values (to measure one phase). */
CKPT_API ckpt_result ckpt_hip_reset_peak(ckpt_backend *backend);

/* Fill out[0..n) with ckpt_philox_fill_uniform's values for the range p (device pointer). */
CKPT_API ckpt_result ckpt_hip_philox_uniform(const ckpt_backend *backend, const ckpt_philox *p, float *out,
                                             size_t n, void *stream);
/* Fill out[0..n) with ckpt_philox_fill_normal's values. */
CKPT_API ckpt_result ckpt_hip_philox_normal(const ckpt_backend *backend, const ckpt_philox *p, float *out,
                                            size_t n, void *stream);
/* ckpt_philox_dropout on the device: out = keep ? in * scale : 0, mask (optional) 1 or 0. in and
   out may alias. Run it on the gradient with the same range for the backward. */
CKPT_API ckpt_result ckpt_hip_philox_dropout(const ckpt_backend *backend, const ckpt_philox *p, float p_drop,
                                             const float *in, float *out, uint8_t *mask, size_t n, void *stream);
/* ckpt_checksum of `bytes` device bytes at ptr, after the work queued on the compute stream.
   Blocks until the result is on the host. Uses a scratch buffer allocated on the first call
   (512 KiB device + 512 KiB pinned, outside the stats) and kept until destroy. */
CKPT_API ckpt_result ckpt_hip_checksum(const ckpt_backend *backend, const void *ptr, size_t bytes, uint64_t *out);

#ifdef __cplusplus
}
#endif
#endif /* CKPT_HIP_H_INCLUDED */

/* ================================================================================================
   IMPLEMENTATION (one file, compiled by hipcc, defines CKPT_HIP_IMPLEMENTATION)
   ================================================================================================ */
#if defined(CKPT_HIP_IMPLEMENTATION) && !defined(CKPT_HIP_IMPLEMENTATION_DONE)
#define CKPT_HIP_IMPLEMENTATION_DONE
#ifndef __HIPCC__
#error "CKPT_HIP_IMPLEMENTATION must be compiled by hipcc; other files include ckpt_hip.h without it"
#endif
#include <hip/hip_runtime.h>
#include "ckpt_hip_alias.h"

#define _CKPT_GPU(name) ckpt_hip_##name
#define _CKPT_GPU_TAG "hip"
#define _CKPT_GPU_LEGACY_STREAM ((hipStream_t)0)
#include "ckpt_gpu.inl"
#endif /* CKPT_HIP_IMPLEMENTATION */
