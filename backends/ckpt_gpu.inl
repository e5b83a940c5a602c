/* ckpt_gpu.inl -- the implementation shared by the CUDA and HIP backends (internal).

   Written once, in CUDA's spelling. backends/ckpt_cuda.h includes it under nvcc; backends/
   ckpt_hip.h includes backends/ckpt_hip_alias.h first (which renames cudaX to hipX) and then this
   file under hipcc. Before including it, the backend header defines:
     _CKPT_GPU(name)            the public name: ckpt_cuda_##name or ckpt_hip_##name
     _CKPT_GPU_TAG              "cuda" or "hip": the log tag and the backend's name
     _CKPT_GPU_LEGACY_STREAM    the stream used when the desc gives none
     _CKPT_GPU_RANGE_PUSH(s), _CKPT_GPU_RANGE_POP()
                                profiler ranges (optional: without them desc.nvtx is ignored)
   Every random bit and the checksum come from the CKPT_HD functions of ckpt.h, so device results
   equal the host's. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* >>gpu state ---------------------------------------------------------------------------------- */
#define _CKPT_GPU_MAGIC 0x47505521u          /* "GPU!" */
#define _CKPT_GPU_THREADS 256
#define _CKPT_GPU_MAX_BLOCKS 65536u
#define _CKPT_GPU_CHECKSUM_PASS 65536u       /* chunk hashes per kernel launch: 512 KiB scratch */

typedef struct _ckpt_gpu_rec { void *ptr; size_t bytes; int pinned; } _ckpt_gpu_rec;

typedef struct _ckpt_gpu_state {
    uint32_t magic;
    int device;
    cudaStream_t compute, h2d, d2h;
    ckpt_logger lg;
    ckpt_allocator al;
    _ckpt_gpu_rec *recs;            /* live allocations, for the sizes the stats need at free */
    size_t n_recs, cap_recs;
    _CKPT_GPU(stats) stats;
    uint64_t *scratch_dev, *scratch_host;
    uint64_t *graph_delta;          /* device: the Philox counter offset graph launches set */
    cudaEvent_t graph_join[2];      /* graph_end: the copy streams joined back into compute */
} _ckpt_gpu_state;

/* The runtime's name for a CUDA function, after the HIP aliases: "cudaMalloc" or "hipMalloc". */
#define _CKPT_GPU_STR(x) #x
#define _CKPT_GPU_XSTR(x) _CKPT_GPU_STR(x)

/* >>gpu logging and errors ----------------------------------------------------------------------
   The core's helpers live in the CKPT_IMPLEMENTATION file, which gcc may compile; this file has
   its own. */
static ckpt_result _ckpt_gpu_log(const ckpt_logger *lg, ckpt_result r, const char *file, int line, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    if (!lg || !lg->fn) return r;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lg->fn(_CKPT_GPU_TAG, r == CKPT_OK ? CKPT_LOG_INFO : CKPT_LOG_ERROR, r, msg, file, line, lg->user);
    return r;
}
#define _CKPT_GPU_ERR(lg, code, ...) _ckpt_gpu_log((lg), (code), __FILE__, __LINE__, __VA_ARGS__)

static ckpt_result _ckpt_gpu_map(cudaError_t e) {
    if (e == cudaSuccess) return CKPT_OK;
    if (e == cudaErrorMemoryAllocation) return CKPT_ERR_OUT_OF_DEVICE_MEMORY;
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) return CKPT_ERR_NO_DEVICE;
    return CKPT_ERR_BACKEND;
}

/* A failed call becomes a ckpt_result and a log line "what: cudaErrorX: text". The runtime's
   last-error slot is cleared so a non-sticky error (a failed allocation) does not resurface in a
   later launch check. */
static ckpt_result _ckpt_gpu_fail(const ckpt_logger *lg, cudaError_t e, const char *file, int line, const char *what) {
    (void)cudaGetLastError();
    return _ckpt_gpu_log(lg, _ckpt_gpu_map(e), file, line, "%s: %s: %s", what, cudaGetErrorName(e), cudaGetErrorString(e));
}
#define _CKPT_GPU_CALL(s, call, what) \
    do { cudaError_t _e = (call); if (_e != cudaSuccess) return _ckpt_gpu_fail(&(s)->lg, _e, __FILE__, __LINE__, what); } while (0)

/* >>gpu helpers -------------------------------------------------------------------------------- */
static void *_ckpt_gpu_host_alloc(const ckpt_allocator *al, size_t bytes) {
    if (al->alloc) return al->alloc(bytes, al->user);
#ifdef CKPT_MALLOC
    return CKPT_MALLOC(bytes, al->user);
#else
    return malloc(bytes);
#endif
}
static void _ckpt_gpu_host_free(const ckpt_allocator *al, void *p) {
    if (!p) return;
    if (al->free) { al->free(p, al->user); return; }
#ifdef CKPT_FREE
    CKPT_FREE(p, al->user);
#else
    free(p);
#endif
}


/* Makes the backend's device current; *prev gets the caller's, for _ckpt_gpu_leave. */
static ckpt_result _ckpt_gpu_enter(_ckpt_gpu_state *s, int *prev) {
    _CKPT_GPU_CALL(s, cudaGetDevice(prev), _CKPT_GPU_XSTR(cudaGetDevice));
    if (*prev != s->device) _CKPT_GPU_CALL(s, cudaSetDevice(s->device), _CKPT_GPU_XSTR(cudaSetDevice));
    return CKPT_OK;
}
static void _ckpt_gpu_leave(_ckpt_gpu_state *s, int prev) {
    if (prev != s->device) (void)cudaSetDevice(prev);
}

/* Runs one runtime call with the device current; `what` names it in the log. */
#define _CKPT_GPU_ON_DEVICE(s, call, what) \
    do { int _prev; cudaError_t _e; ckpt_result _r = _ckpt_gpu_enter((s), &_prev); \
         if (_r != CKPT_OK) return _r; \
         _e = (call); _ckpt_gpu_leave((s), _prev); \
         if (_e != cudaSuccess) return _ckpt_gpu_fail(&(s)->lg, _e, __FILE__, __LINE__, what); } while (0)

static cudaStream_t _ckpt_gpu_stream(_ckpt_gpu_state *s, void *stream) {
    return stream ? (cudaStream_t)stream : s->compute;
}

static unsigned _ckpt_gpu_blocks(uint64_t work) {
    uint64_t b = (work + _CKPT_GPU_THREADS - 1) / _CKPT_GPU_THREADS;
    return b == 0 ? 1u : b > _CKPT_GPU_MAX_BLOCKS ? _CKPT_GPU_MAX_BLOCKS : (unsigned)b;
}

static ckpt_result _ckpt_gpu_remember(_ckpt_gpu_state *s, void *p, size_t bytes, int pinned) {
    if (s->n_recs == s->cap_recs) {
        size_t cap = s->cap_recs ? 2 * s->cap_recs : 16;
        _ckpt_gpu_rec *r = (_ckpt_gpu_rec *)_ckpt_gpu_host_alloc(&s->al, cap * sizeof *r);
        if (!r) return CKPT_ERR_OUT_OF_HOST_MEMORY;
        if (s->n_recs) memcpy(r, s->recs, s->n_recs * sizeof *r);
        _ckpt_gpu_host_free(&s->al, s->recs);
        s->recs = r;
        s->cap_recs = cap;
    }
    s->recs[s->n_recs].ptr = p;
    s->recs[s->n_recs].bytes = bytes;
    s->recs[s->n_recs].pinned = pinned;
    s->n_recs++;
    if (pinned) {
        s->stats.pinned_live_bytes += bytes;
        if (s->stats.pinned_live_bytes > s->stats.pinned_peak_bytes) s->stats.pinned_peak_bytes = s->stats.pinned_live_bytes;
    } else {
        s->stats.live_bytes += bytes;
        if (s->stats.live_bytes > s->stats.peak_bytes) s->stats.peak_bytes = s->stats.live_bytes;
    }
    s->stats.allocs++;
    return CKPT_OK;
}

/* The record of p allocated as that kind; s->n_recs when there is none. */
static size_t _ckpt_gpu_find(const _ckpt_gpu_state *s, const void *p, int pinned) {
    size_t i;
    for (i = 0; i < s->n_recs && (s->recs[i].ptr != p || s->recs[i].pinned != pinned); i++) {}
    return i;
}

/* Forgets record i (found by _ckpt_gpu_find). */
static void _ckpt_gpu_forget(_ckpt_gpu_state *s, size_t i) {
    if (s->recs[i].pinned) s->stats.pinned_live_bytes -= s->recs[i].bytes;
    else s->stats.live_bytes -= s->recs[i].bytes;
    s->recs[i] = s->recs[--s->n_recs];
    s->stats.frees++;
}

/* This backend's state, or NULL for any other backend (recognised by its alloc function). */
static ckpt_result _ckpt_gpu_alloc(void *state, size_t bytes, void **out);
static _ckpt_gpu_state *_ckpt_gpu_of(const ckpt_backend *b) {
    _ckpt_gpu_state *s;
    if (!b || !b->state || b->alloc != _ckpt_gpu_alloc) return NULL;
    s = (_ckpt_gpu_state *)b->state;
    return s->magic == _CKPT_GPU_MAGIC ? s : NULL;
}

/* >>gpu memory --------------------------------------------------------------------------------- */
static ckpt_result _ckpt_gpu_alloc_any(void *state, size_t bytes, void **out, int pinned) {
    _ckpt_gpu_state *s = (_ckpt_gpu_state *)state;
    void *p = NULL;
    cudaError_t e;
    ckpt_result r;
    int prev;
    *out = NULL;
    if ((r = _ckpt_gpu_enter(s, &prev)) != CKPT_OK) return r;
    e = pinned ? cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault) : cudaMalloc(&p, bytes ? bytes : 1);
    if (e == cudaSuccess && (r = _ckpt_gpu_remember(s, p, bytes, pinned)) != CKPT_OK) {
        if (pinned) (void)cudaFreeHost(p); else (void)cudaFree(p);
        _ckpt_gpu_leave(s, prev);
        return _CKPT_GPU_ERR(&s->lg, r, "%s backend: no host memory to record an allocation", _CKPT_GPU_TAG);
    }
    _ckpt_gpu_leave(s, prev);
    if (e != cudaSuccess) {
        char what[96];
        snprintf(what, sizeof what, "%s of %llu bytes", pinned ? _CKPT_GPU_XSTR(cudaHostAlloc) : _CKPT_GPU_XSTR(cudaMalloc), (unsigned long long)bytes);
        r = _ckpt_gpu_fail(&s->lg, e, __FILE__, __LINE__, what);
        return pinned && r == CKPT_ERR_OUT_OF_DEVICE_MEMORY ? CKPT_ERR_OUT_OF_HOST_MEMORY : r;
    }
    *out = p;
    return CKPT_OK;
}
static ckpt_result _ckpt_gpu_alloc(void *state, size_t bytes, void **out) { return _ckpt_gpu_alloc_any(state, bytes, out, 0); }
static ckpt_result _ckpt_gpu_alloc_pinned(void *state, size_t bytes, void **out) { return _ckpt_gpu_alloc_any(state, bytes, out, 1); }

static void _ckpt_gpu_free_any(void *state, void *ptr, int pinned) {
    _ckpt_gpu_state *s = (_ckpt_gpu_state *)state;
    cudaError_t e;
    int prev;
    size_t i;
    if (!ptr) return;
    if ((i = _ckpt_gpu_find(s, ptr, pinned)) == s->n_recs) {
        _CKPT_GPU_ERR(&s->lg, CKPT_ERR_BAD_ARGUMENT, "%s backend: free of %p, which this backend did not allocate as %s memory",
                      _CKPT_GPU_TAG, ptr, pinned ? "pinned" : "device");
        return;
    }
    if (_ckpt_gpu_enter(s, &prev) != CKPT_OK) return;
    e = pinned ? cudaFreeHost(ptr) : cudaFree(ptr);
    _ckpt_gpu_leave(s, prev);
    if (e != cudaSuccess) { _ckpt_gpu_fail(&s->lg, e, __FILE__, __LINE__, pinned ? _CKPT_GPU_XSTR(cudaFreeHost) : _CKPT_GPU_XSTR(cudaFree)); return; }
    _ckpt_gpu_forget(s, i);             /* counted as freed only once it is */
}
static void _ckpt_gpu_free(void *state, void *ptr) { _ckpt_gpu_free_any(state, ptr, 0); }
static void _ckpt_gpu_free_pinned(void *state, void *ptr) { _ckpt_gpu_free_any(state, ptr, 1); }

static ckpt_result _ckpt_gpu_mem_info(void *state, size_t *free_bytes, size_t *total_bytes) {
    _ckpt_gpu_state *s = (_ckpt_gpu_state *)state;
    _CKPT_GPU_ON_DEVICE(s, cudaMemGetInfo(free_bytes, total_bytes), _CKPT_GPU_XSTR(cudaMemGetInfo));
    return CKPT_OK;
}

/* >>gpu streams, copies, events ---------------------------------------------------------------- */
static void *_ckpt_gpu_compute_stream(void *state) { return (void *)((_ckpt_gpu_state *)state)->compute; }

static void *_ckpt_gpu_copy_stream(void *state, ckpt_copy_kind kind) {
    _ckpt_gpu_state *s = (_ckpt_gpu_state *)state;
    return kind == CKPT_COPY_HOST_TO_DEVICE ? (void *)s->h2d : kind == CKPT_COPY_DEVICE_TO_HOST ? (void *)s->d2h : NULL;
}

static ckpt_result _ckpt_gpu_copy(void *state, void *dst, const void *src, size_t bytes, ckpt_copy_kind kind, void *stream) {
    _ckpt_gpu_state *s = (_ckpt_gpu_state *)state;
    cudaMemcpyKind k = kind == CKPT_COPY_HOST_TO_DEVICE ? cudaMemcpyHostToDevice
                     : kind == CKPT_COPY_DEVICE_TO_HOST ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice;
    if (kind != CKPT_COPY_HOST_TO_DEVICE && kind != CKPT_COPY_DEVICE_TO_HOST && kind != CKPT_COPY_DEVICE_TO_DEVICE)
        return _CKPT_GPU_ERR(&s->lg, CKPT_ERR_BAD_ARGUMENT, "%s backend: copy kind %d is not a ckpt_copy_kind", _CKPT_GPU_TAG, (int)kind);
    if (bytes == 0) return CKPT_OK;
    _CKPT_GPU_ON_DEVICE(s, cudaMemcpyAsync(dst, src, bytes, k, _ckpt_gpu_stream(s, stream)), _CKPT_GPU_XSTR(cudaMemcpyAsync));
    s->stats.copies++;
    return CKPT_OK;
}

static ckpt_result _ckpt_gpu_memset(void *state, void *dst, int value, size_t bytes, void *stream) {
    _ckpt_gpu_state *s = (_ckpt_gpu_state *)state;
    if (bytes == 0) return CKPT_OK;
    _CKPT_GPU_ON_DEVICE(s, cudaMemsetAsync(dst, value, bytes, _ckpt_gpu_stream(s, stream)), _CKPT_GPU_XSTR(cudaMemsetAsync));
    s->stats.copies++;
    return CKPT_OK;
}

static ckpt_result _ckpt_gpu_sync(void *state, void *stream) {
    _ckpt_gpu_state *s = (_ckpt_gpu_state *)state;
    if (stream) {
        _CKPT_GPU_ON_DEVICE(s, cudaStreamSynchronize((cudaStream_t)stream), _CKPT_GPU_XSTR(cudaStreamSynchronize));
        return CKPT_OK;
    }
    _CKPT_GPU_ON_DEVICE(s, cudaStreamSynchronize(s->compute), _CKPT_GPU_XSTR(cudaStreamSynchronize) " (compute stream)");
    _CKPT_GPU_ON_DEVICE(s, cudaStreamSynchronize(s->h2d), _CKPT_GPU_XSTR(cudaStreamSynchronize) " (host-to-device copy stream)");
    _CKPT_GPU_ON_DEVICE(s, cudaStreamSynchronize(s->d2h), _CKPT_GPU_XSTR(cudaStreamSynchronize) " (device-to-host copy stream)");
    return CKPT_OK;
}

static ckpt_result _ckpt_gpu_event_create(void *state, void **out) {
    _ckpt_gpu_state *s = (_ckpt_gpu_state *)state;
    cudaEvent_t ev = NULL;
    *out = NULL;
    _CKPT_GPU_ON_DEVICE(s, cudaEventCreate(&ev), _CKPT_GPU_XSTR(cudaEventCreate));
    *out = (void *)ev;
    return CKPT_OK;
}
static void _ckpt_gpu_event_destroy(void *state, void *ev) {
    _ckpt_gpu_state *s = (_ckpt_gpu_state *)state;
    cudaError_t e;
    if (!ev) return;
    e = cudaEventDestroy((cudaEvent_t)ev);
    if (e != cudaSuccess) _ckpt_gpu_fail(&s->lg, e, __FILE__, __LINE__, _CKPT_GPU_XSTR(cudaEventDestroy));
}
static ckpt_result _ckpt_gpu_event_record(void *state, void *ev, void *stream) {
    _ckpt_gpu_state *s = (_ckpt_gpu_state *)state;
    if (!ev) return CKPT_ERR_NULL_ARGUMENT;
    _CKPT_GPU_ON_DEVICE(s, cudaEventRecord((cudaEvent_t)ev, _ckpt_gpu_stream(s, stream)), _CKPT_GPU_XSTR(cudaEventRecord));
    return CKPT_OK;
}
static ckpt_result _ckpt_gpu_stream_wait(void *state, void *stream, void *ev) {
    _ckpt_gpu_state *s = (_ckpt_gpu_state *)state;
    if (!ev) return CKPT_ERR_NULL_ARGUMENT;
    _CKPT_GPU_ON_DEVICE(s, cudaStreamWaitEvent(_ckpt_gpu_stream(s, stream), (cudaEvent_t)ev, 0), _CKPT_GPU_XSTR(cudaStreamWaitEvent));
    return CKPT_OK;
}
static ckpt_result _ckpt_gpu_event_sync(void *state, void *ev) {
    _ckpt_gpu_state *s = (_ckpt_gpu_state *)state;
    if (!ev) return CKPT_ERR_NULL_ARGUMENT;
    _CKPT_GPU_ON_DEVICE(s, cudaEventSynchronize((cudaEvent_t)ev), _CKPT_GPU_XSTR(cudaEventSynchronize));
    return CKPT_OK;
}
static ckpt_result _ckpt_gpu_event_elapsed(void *state, void *a, void *b, float *ms) {
    _ckpt_gpu_state *s = (_ckpt_gpu_state *)state;
    if (!a || !b || !ms) return CKPT_ERR_NULL_ARGUMENT;
    _CKPT_GPU_ON_DEVICE(s, cudaEventElapsedTime(ms, (cudaEvent_t)a, (cudaEvent_t)b), _CKPT_GPU_XSTR(cudaEventElapsedTime));
    return CKPT_OK;
}

#ifdef _CKPT_GPU_RANGE_PUSH
static void _ckpt_gpu_range_push(void *state, const char *label) { (void)state; _CKPT_GPU_RANGE_PUSH(label); }
static void _ckpt_gpu_range_pop(void *state) { (void)state; _CKPT_GPU_RANGE_POP(); }
#endif

/* >>gpu kernels ---------------------------------------------------------------------------------
   One thread per Philox block (4 values), grid-stride. */
#define _CKPT_GPU_FOR(j, count) \
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < (count); j += (size_t)gridDim.x * blockDim.x)

static __global__ void _ckpt_gpu_uniform_kernel(ckpt_philox p, float *out, size_t n) {
    _CKPT_GPU_FOR(j, (n + 3) / 4) {
        uint32_t w[4];
        size_t i = 4 * j;
        int t;
        ckpt_philox_at(&p, j, w);
        for (t = 0; t < 4 && i + t < n; t++) out[i + t] = ckpt_uniform_from_u32(w[t]);
    }
}

static __global__ void _ckpt_gpu_normal_kernel(ckpt_philox p, float *out, size_t n) {
    _CKPT_GPU_FOR(j, (n + 3) / 4) {
        uint32_t w[4];
        float z[4];
        size_t i = 4 * j;
        int t;
        ckpt_philox_at(&p, j, w);
        ckpt_normal_from_u32(w[0], w[1], &z[0], &z[1]);
        ckpt_normal_from_u32(w[2], w[3], &z[2], &z[3]);
        for (t = 0; t < 4 && i + t < n; t++) out[i + t] = z[t];
    }
}

/* scale comes from the host (ckpt_dropout_scale there), so a fast-math division on the device
   cannot change it. */
static __global__ void _ckpt_gpu_dropout_kernel(ckpt_philox p, float p_drop, float scale, const float *in, float *out,
                                         uint8_t *mask, size_t n) {
    _CKPT_GPU_FOR(j, (n + 3) / 4) {
        uint32_t w[4];
        size_t i = 4 * j;
        int t;
        ckpt_philox_at(&p, j, w);
        for (t = 0; t < 4 && i + t < n; t++) {
            int keep;
            float y = ckpt_dropout_from_u32(w[t], p_drop, scale, in[i + t], &keep);
            out[i + t] = y;
            if (mask) mask[i + t] = (uint8_t)keep;
        }
    }
}

/* FNV-1a-64 of chunks first..first+count of the buffer, one thread per chunk; 16-byte loads when
   the buffer is 16-byte aligned (chunks are 4096 bytes, so then every chunk is). */
static __global__ void _ckpt_gpu_checksum_kernel(const unsigned char *base, size_t bytes, size_t first, size_t count,
                                          uint64_t *out) {
    _CKPT_GPU_FOR(c, count) {
        size_t off = (first + c) * (size_t)CKPT_CHECKSUM_CHUNK, i = 0;
        size_t len = bytes - off < CKPT_CHECKSUM_CHUNK ? bytes - off : CKPT_CHECKSUM_CHUNK;
        const unsigned char *p = base + off;
        uint64_t h = CKPT_FNV_BASIS;
        if (((uintptr_t)p & 15u) == 0) {
            for (; i + 16 <= len; i += 16) {
                uint4 v = *(const uint4 *)(p + i);
                uint32_t q[4];
                int a, b;
                q[0] = v.x; q[1] = v.y; q[2] = v.z; q[3] = v.w;
                for (a = 0; a < 4; a++)
                    for (b = 0; b < 4; b++) h = ckpt_fnv1a_step(h, (q[a] >> (8 * b)) & 0xffu);
            }
        }
        for (; i < len; i++) h = ckpt_fnv1a_step(h, p[i]);
        out[c] = h;
    }
}

/* >>gpu kernel launchers ----------------------------------------------------------------------- */
/* Checks the backend (into *s), out, and a Philox range that must hold ceil(n/4) blocks. */
static ckpt_result _ckpt_gpu_fill_args(const ckpt_backend *be, const ckpt_philox *p, const void *out, size_t n,
                                       const char *fn, _ckpt_gpu_state **s) {
    if (!be || !p) return CKPT_ERR_NULL_ARGUMENT;
    if (!(*s = _ckpt_gpu_of(be))) return CKPT_ERR_BAD_BACKEND;
    if (n && !out) return _CKPT_GPU_ERR(&(*s)->lg, CKPT_ERR_NULL_ARGUMENT, "%s: out is NULL", fn);
    if (p->count < (uint64_t)((n + 3) / 4))
        return _CKPT_GPU_ERR(&(*s)->lg, CKPT_ERR_BAD_ARGUMENT, "%s: %llu values need %llu Philox blocks; the range has %llu",
                             fn, (unsigned long long)n, (unsigned long long)((n + 3) / 4), (unsigned long long)p->count);
    return CKPT_OK;
}

/* An error left pending by an earlier call (the caller's, say) is reported as such, not blamed on
   this launch. */
#define _CKPT_GPU_LAUNCH(s, stream, work, kernel, args, what) \
    do { int _prev; cudaError_t _e; ckpt_result _r = _ckpt_gpu_enter((s), &_prev); \
         if (_r != CKPT_OK) return _r; \
         _e = cudaGetLastError(); \
         if (_e != cudaSuccess) { _ckpt_gpu_leave((s), _prev); \
             return _ckpt_gpu_fail(&(s)->lg, _e, __FILE__, __LINE__, "an error pending from an earlier call, before " what); } \
         kernel<<<_ckpt_gpu_blocks(work), _CKPT_GPU_THREADS, 0, _ckpt_gpu_stream((s), (stream))>>> args; \
         _e = cudaGetLastError(); _ckpt_gpu_leave((s), _prev); \
         if (_e != cudaSuccess) return _ckpt_gpu_fail(&(s)->lg, _e, __FILE__, __LINE__, what); } while (0)

CKPT_API ckpt_result _CKPT_GPU(philox_uniform)(const ckpt_backend *be, const ckpt_philox *p, float *out,
                                                          size_t n, void *stream) {
    _ckpt_gpu_state *s = NULL;
    ckpt_result r = _ckpt_gpu_fill_args(be, p, out, n, "philox_uniform", &s);
    if (r != CKPT_OK || n == 0) return r;
    _CKPT_GPU_LAUNCH(s, stream, (n + 3) / 4, _ckpt_gpu_uniform_kernel, (*p, out, n), "uniform kernel launch");
    return CKPT_OK;
}

CKPT_API ckpt_result _CKPT_GPU(philox_normal)(const ckpt_backend *be, const ckpt_philox *p, float *out,
                                                         size_t n, void *stream) {
    _ckpt_gpu_state *s = NULL;
    ckpt_result r = _ckpt_gpu_fill_args(be, p, out, n, "philox_normal", &s);
    if (r != CKPT_OK || n == 0) return r;
    _CKPT_GPU_LAUNCH(s, stream, (n + 3) / 4, _ckpt_gpu_normal_kernel, (*p, out, n), "normal kernel launch");
    return CKPT_OK;
}

CKPT_API ckpt_result _CKPT_GPU(philox_dropout)(const ckpt_backend *be, const ckpt_philox *p, float p_drop,
                                                          const float *in, float *out, uint8_t *mask, size_t n,
                                                          void *stream) {
    _ckpt_gpu_state *s = NULL;
    ckpt_result r = _ckpt_gpu_fill_args(be, p, out, n, "philox_dropout", &s);
    if (r != CKPT_OK) return r;
    if (!(p_drop >= 0.0f && p_drop <= 1.0f))
        return _CKPT_GPU_ERR(&s->lg, CKPT_ERR_BAD_ARGUMENT, "philox_dropout: p_drop %g is not in [0, 1]", (double)p_drop);
    if (n && !in) return _CKPT_GPU_ERR(&s->lg, CKPT_ERR_NULL_ARGUMENT, "philox_dropout: in is NULL");
    if (n == 0) return CKPT_OK;
    _CKPT_GPU_LAUNCH(s, stream, (n + 3) / 4, _ckpt_gpu_dropout_kernel,
                     (*p, p_drop, ckpt_dropout_scale(p_drop), in, out, mask, n), "dropout kernel launch");
    return CKPT_OK;
}

/* >>gpu graphs ----------------------------------------------------------------------------------
   Stream capture of the compute stream (ckpt_chain_desc.graphs). The capture is relaxed
   (cudaStreamCaptureModeRelaxed), so a callback's lazy allocation (cuBLAS's workspace, say) does
   not break it; a synchronize during the capture still does. The copy streams join the capture
   through the events the executor records on the compute stream; graph_end joins them back. */
static __global__ void _ckpt_gpu_set_u64_kernel(uint64_t *p, uint64_t v) { *p = v; }

static ckpt_result _ckpt_gpu_graph_begin(void *state, const uint64_t **delta) {
    _ckpt_gpu_state *s = (_ckpt_gpu_state *)state;
    cudaError_t e = cudaSuccess;
    const char *what = _CKPT_GPU_XSTR(cudaMalloc) " (graph counter offset)";
    int prev, i;
    ckpt_result r;
    if (!delta) return CKPT_ERR_NULL_ARGUMENT;
    *delta = NULL;
    if (s->compute == _CKPT_GPU_LEGACY_STREAM)
        return _CKPT_GPU_ERR(&s->lg, CKPT_ERR_BAD_ARGUMENT, "%s backend: graph capture needs a compute stream of your own "
                             "(%s_desc.stream): the legacy default stream cannot be captured", _CKPT_GPU_TAG, _CKPT_GPU_TAG);
    if ((r = _ckpt_gpu_enter(s, &prev)) != CKPT_OK) return r;
    if (!s->graph_delta) {
        void *p = NULL;
        e = cudaMalloc(&p, sizeof(uint64_t));
        if (e == cudaSuccess) { s->graph_delta = (uint64_t *)p; e = cudaMemset(p, 0, sizeof(uint64_t)); }
    }
    for (i = 0; i < 2 && e == cudaSuccess; i++)
        if (!s->graph_join[i]) { e = cudaEventCreate(&s->graph_join[i]); what = _CKPT_GPU_XSTR(cudaEventCreate) " (graph joins)"; }
    if (e == cudaSuccess) {
        e = cudaStreamBeginCapture(s->compute, cudaStreamCaptureModeRelaxed);
        what = _CKPT_GPU_XSTR(cudaStreamBeginCapture) " (graph capture not supported here?)";
    }
    _ckpt_gpu_leave(s, prev);
    if (e != cudaSuccess) return _ckpt_gpu_fail(&s->lg, e, __FILE__, __LINE__, what);
    *delta = s->graph_delta;
    return CKPT_OK;
}

static ckpt_result _ckpt_gpu_graph_end(void *state, int keep, void **exec) {
    _ckpt_gpu_state *s = (_ckpt_gpu_state *)state;
    cudaStream_t copy[2];
    cudaGraph_t graph = NULL;
    cudaGraphExec_t x = NULL;
    cudaError_t e = cudaSuccess, e2;
    const char *what = _CKPT_GPU_XSTR(cudaStreamEndCapture);
    int prev, i;
    ckpt_result r;
    if (!exec) return CKPT_ERR_NULL_ARGUMENT;
    *exec = NULL;
    if ((r = _ckpt_gpu_enter(s, &prev)) != CKPT_OK) return r;
    copy[0] = s->h2d; copy[1] = s->d2h;
    for (i = 0; i < 2; i++) {       /* a copy stream still in the capture joins the compute stream */
        cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
        if (cudaStreamIsCapturing(copy[i], &st) != cudaSuccess || st != cudaStreamCaptureStatusActive) continue;
        if (e == cudaSuccess) e = cudaEventRecord(s->graph_join[i], copy[i]);
        if (e == cudaSuccess) e = cudaStreamWaitEvent(s->compute, s->graph_join[i], 0);
        if (e != cudaSuccess) what = _CKPT_GPU_XSTR(cudaStreamWaitEvent) " (joining a copy stream)";
    }
    e2 = cudaStreamEndCapture(s->compute, &graph);
    if (e == cudaSuccess && e2 != cudaSuccess) { e = e2; what = _CKPT_GPU_XSTR(cudaStreamEndCapture); }
    if (e == cudaSuccess && keep) {
        e = cudaGraphInstantiateWithFlags(&x, graph, 0);
        what = _CKPT_GPU_XSTR(cudaGraphInstantiateWithFlags);
    }
    if (graph) (void)cudaGraphDestroy(graph);
    _ckpt_gpu_leave(s, prev);
    if (e != cudaSuccess) return keep ? _ckpt_gpu_fail(&s->lg, e, __FILE__, __LINE__, what) : ((void)cudaGetLastError(), CKPT_OK);
    *exec = keep ? (void *)x : NULL;
    return CKPT_OK;
}

static ckpt_result _ckpt_gpu_graph_launch(void *state, void *exec, uint64_t delta) {
    _ckpt_gpu_state *s = (_ckpt_gpu_state *)state;
    cudaError_t e;
    int prev;
    ckpt_result r;
    if (!exec || !s->graph_delta) return CKPT_ERR_NULL_ARGUMENT;
    if ((r = _ckpt_gpu_enter(s, &prev)) != CKPT_OK) return r;
    e = cudaGetLastError();
    if (e != cudaSuccess) {
        _ckpt_gpu_leave(s, prev);
        return _ckpt_gpu_fail(&s->lg, e, __FILE__, __LINE__, "an error pending from an earlier call, before a graph launch");
    }
    _ckpt_gpu_set_u64_kernel<<<1, 1, 0, s->compute>>>(s->graph_delta, delta);
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaGraphLaunch((cudaGraphExec_t)exec, s->compute);
    _ckpt_gpu_leave(s, prev);
    if (e != cudaSuccess) return _ckpt_gpu_fail(&s->lg, e, __FILE__, __LINE__, _CKPT_GPU_XSTR(cudaGraphLaunch));
    return CKPT_OK;
}

static void _ckpt_gpu_graph_destroy(void *state, void *exec) {
    _ckpt_gpu_state *s = (_ckpt_gpu_state *)state;
    int prev;
    if (!exec || _ckpt_gpu_enter(s, &prev) != CKPT_OK) return;
    (void)cudaGraphExecDestroy((cudaGraphExec_t)exec);
    _ckpt_gpu_leave(s, prev);
}

/* Hashes the chunks in passes of _CKPT_GPU_CHECKSUM_PASS and folds them on the host, in order. */
static ckpt_result _ckpt_gpu_checksum_run(_ckpt_gpu_state *s, const void *ptr, size_t bytes, uint64_t *out) {
    size_t chunks = (bytes + CKPT_CHECKSUM_CHUNK - 1) / CKPT_CHECKSUM_CHUNK, first, i;
    uint64_t h = CKPT_FNV_BASIS;
    if (!s->scratch_dev) {   /* through a local: the pointer is kept only when the call succeeds */
        void *p = NULL;
        _CKPT_GPU_CALL(s, cudaMalloc(&p, _CKPT_GPU_CHECKSUM_PASS * sizeof(uint64_t)), _CKPT_GPU_XSTR(cudaMalloc) " (checksum scratch)");
        s->scratch_dev = (uint64_t *)p;
    }
    if (!s->scratch_host) {
        void *p = NULL;
        _CKPT_GPU_CALL(s, cudaHostAlloc(&p, _CKPT_GPU_CHECKSUM_PASS * sizeof(uint64_t), cudaHostAllocDefault),
                       _CKPT_GPU_XSTR(cudaHostAlloc) " (checksum scratch)");
        s->scratch_host = (uint64_t *)p;
    }
    _CKPT_GPU_CALL(s, cudaGetLastError(), "an error pending from an earlier call, before the checksum kernel");
    for (first = 0; first < chunks; first += _CKPT_GPU_CHECKSUM_PASS) {
        size_t count = chunks - first < _CKPT_GPU_CHECKSUM_PASS ? chunks - first : _CKPT_GPU_CHECKSUM_PASS;
        _ckpt_gpu_checksum_kernel<<<_ckpt_gpu_blocks(count), _CKPT_GPU_THREADS, 0, s->compute>>>(
            (const unsigned char *)ptr, bytes, first, count, s->scratch_dev);
        _CKPT_GPU_CALL(s, cudaGetLastError(), "checksum kernel launch");
        _CKPT_GPU_CALL(s, cudaMemcpyAsync(s->scratch_host, s->scratch_dev, count * sizeof(uint64_t), cudaMemcpyDeviceToHost,
                                          s->compute), _CKPT_GPU_XSTR(cudaMemcpyAsync) " (checksum)");
        _CKPT_GPU_CALL(s, cudaStreamSynchronize(s->compute), _CKPT_GPU_XSTR(cudaStreamSynchronize) " (checksum)");
        for (i = 0; i < count; i++) h = ckpt_fnv1a_step(h, s->scratch_host[i]);
    }
    *out = ckpt_fnv1a_step(h, (uint64_t)bytes);
    return CKPT_OK;
}

static ckpt_result _ckpt_gpu_checksum(void *state, const void *ptr, size_t bytes, uint64_t *out) {
    _ckpt_gpu_state *s = (_ckpt_gpu_state *)state;
    ckpt_result r;
    int prev;
    if (!out || (bytes && !ptr)) return CKPT_ERR_NULL_ARGUMENT;
    if ((r = _ckpt_gpu_enter(s, &prev)) != CKPT_OK) return r;
    r = _ckpt_gpu_checksum_run(s, ptr, bytes, out);
    _ckpt_gpu_leave(s, prev);
    return r;
}

CKPT_API ckpt_result _CKPT_GPU(checksum)(const ckpt_backend *be, const void *ptr, size_t bytes, uint64_t *out) {
    _ckpt_gpu_state *s;
    if (!be) return CKPT_ERR_NULL_ARGUMENT;
    if (!(s = _ckpt_gpu_of(be))) return CKPT_ERR_BAD_BACKEND;
    return _ckpt_gpu_checksum(s, ptr, bytes, out);
}

/* >>gpu public --------------------------------------------------------------------------------- */
CKPT_API ckpt_result _CKPT_GPU(device_count)(int *count) {
    cudaError_t e;
    if (!count) return CKPT_ERR_NULL_ARGUMENT;
    *count = 0;
    e = cudaGetDeviceCount(count);
    if (e != cudaSuccess) { (void)cudaGetLastError(); *count = 0; return _ckpt_gpu_map(e); }
    return *count > 0 ? CKPT_OK : CKPT_ERR_NO_DEVICE;
}

static void _ckpt_gpu_teardown(_ckpt_gpu_state *s) {
    int prev;
    ckpt_allocator al = s->al;
    if (_ckpt_gpu_enter(s, &prev) == CKPT_OK) {
        if (s->h2d) (void)cudaStreamDestroy(s->h2d);
        if (s->d2h) (void)cudaStreamDestroy(s->d2h);
        if (s->scratch_dev) (void)cudaFree(s->scratch_dev);
        if (s->scratch_host) (void)cudaFreeHost(s->scratch_host);
        if (s->graph_delta) (void)cudaFree(s->graph_delta);
        if (s->graph_join[0]) (void)cudaEventDestroy(s->graph_join[0]);
        if (s->graph_join[1]) (void)cudaEventDestroy(s->graph_join[1]);
        _ckpt_gpu_leave(s, prev);
    }
    _ckpt_gpu_host_free(&al, s->recs);
    s->magic = 0;
    _ckpt_gpu_host_free(&al, s);
}

static void _ckpt_gpu_fill_vtable(_ckpt_gpu_state *s, int nvtx, ckpt_backend *out) {
    out->state = s;
    out->name = _CKPT_GPU_TAG;
    out->alloc = _ckpt_gpu_alloc;
    out->free = _ckpt_gpu_free;
    out->alloc_pinned = _ckpt_gpu_alloc_pinned;
    out->free_pinned = _ckpt_gpu_free_pinned;
    out->copy_async = _ckpt_gpu_copy;
    out->memset_async = _ckpt_gpu_memset;
    out->compute_stream = _ckpt_gpu_compute_stream;
    out->synchronize = _ckpt_gpu_sync;
    out->mem_info = _ckpt_gpu_mem_info;
    out->checksum = _ckpt_gpu_checksum;
    out->copy_stream = _ckpt_gpu_copy_stream;
    out->event_create = _ckpt_gpu_event_create;
    out->event_destroy = _ckpt_gpu_event_destroy;
    out->event_record = _ckpt_gpu_event_record;
    out->stream_wait_event = _ckpt_gpu_stream_wait;
    out->event_synchronize = _ckpt_gpu_event_sync;
    out->event_elapsed_ms = _ckpt_gpu_event_elapsed;
    out->graph_begin = _ckpt_gpu_graph_begin;
    out->graph_end = _ckpt_gpu_graph_end;
    out->graph_launch = _ckpt_gpu_graph_launch;
    out->graph_destroy = _ckpt_gpu_graph_destroy;
#ifdef _CKPT_GPU_RANGE_PUSH
    if (nvtx) { out->range_push = _ckpt_gpu_range_push; out->range_pop = _ckpt_gpu_range_pop; }
#else
    if (nvtx) _CKPT_GPU_ERR(&s->lg, CKPT_OK, "%s backend: profiler ranges are not available in this build; desc.nvtx ignored", _CKPT_GPU_TAG);
#endif
}

CKPT_API ckpt_result _CKPT_GPU(backend_create)(const _CKPT_GPU(desc) *desc, ckpt_backend *out) {
    _CKPT_GPU(desc) d;
    _ckpt_gpu_state *s;
    ckpt_result r;
    int count = 0, prev;
    cudaError_t e;
    if (!out) return CKPT_ERR_NULL_ARGUMENT;
    memset(out, 0, sizeof *out);
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if ((!d.allocator.alloc) != (!d.allocator.free))
        return _CKPT_GPU_ERR(&d.logger, CKPT_ERR_NULL_ARGUMENT, "%s_desc.allocator: alloc and free must be set together", _CKPT_GPU_TAG);
    e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) return _ckpt_gpu_fail(&d.logger, e, __FILE__, __LINE__, _CKPT_GPU_XSTR(cudaGetDeviceCount));
    if (count == 0) return _CKPT_GPU_ERR(&d.logger, CKPT_ERR_NO_DEVICE, "%s backend: no device", _CKPT_GPU_TAG);
    if (d.device < 0 || d.device >= count)
        return _CKPT_GPU_ERR(&d.logger, CKPT_ERR_BAD_INDEX, "%s_desc.device %d: there are %d devices", _CKPT_GPU_TAG, d.device, count);
    s = (_ckpt_gpu_state *)_ckpt_gpu_host_alloc(&d.allocator, sizeof *s);
    if (!s) return CKPT_ERR_OUT_OF_HOST_MEMORY;
    memset(s, 0, sizeof *s);
    s->magic = _CKPT_GPU_MAGIC;
    s->device = d.device;
    s->lg = d.logger;
    s->al = d.allocator;
    s->compute = d.stream ? (cudaStream_t)d.stream : _CKPT_GPU_LEGACY_STREAM;
    if ((r = _ckpt_gpu_enter(s, &prev)) != CKPT_OK) { _ckpt_gpu_host_free(&d.allocator, s); return r; }
    e = cudaStreamCreateWithFlags(&s->h2d, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&s->d2h, cudaStreamNonBlocking);
    _ckpt_gpu_leave(s, prev);
    if (e != cudaSuccess) {
        r = _ckpt_gpu_fail(&s->lg, e, __FILE__, __LINE__, _CKPT_GPU_XSTR(cudaStreamCreateWithFlags) " (copy streams)");
        _ckpt_gpu_teardown(s);
        return r;
    }
    _ckpt_gpu_fill_vtable(s, d.nvtx, out);
    return CKPT_OK;
}

CKPT_API void _CKPT_GPU(backend_destroy)(ckpt_backend *backend) {
    _ckpt_gpu_state *s = _ckpt_gpu_of(backend);
    if (!s) return;
    _ckpt_gpu_teardown(s);
    memset(backend, 0, sizeof *backend);
}

CKPT_API ckpt_result _CKPT_GPU(get_stats)(const ckpt_backend *backend, _CKPT_GPU(stats) *out) {
    _ckpt_gpu_state *s;
    if (!backend || !out) return CKPT_ERR_NULL_ARGUMENT;
    if (!(s = _ckpt_gpu_of(backend))) return CKPT_ERR_BAD_BACKEND;
    *out = s->stats;
    return CKPT_OK;
}

CKPT_API ckpt_result _CKPT_GPU(reset_peak)(ckpt_backend *backend) {
    _ckpt_gpu_state *s;
    if (!backend) return CKPT_ERR_NULL_ARGUMENT;
    if (!(s = _ckpt_gpu_of(backend))) return CKPT_ERR_BAD_BACKEND;
    s->stats.peak_bytes = s->stats.live_bytes;
    s->stats.pinned_peak_bytes = s->stats.pinned_live_bytes;
    return CKPT_OK;
}
