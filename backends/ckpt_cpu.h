/* ckpt_cpu.h -- the reference backend of ckpt.h: host memory, synchronous copies.

   It always builds, needs nothing but the C library, and is the oracle the GPU backends are
   tested against. Include it after ckpt.h; its implementation is compiled by the same
   CKPT_IMPLEMENTATION file.

       ckpt_backend be;
       ckpt_cpu_backend_create(NULL, &be);      // or a ckpt_cpu_desc with a logger
       ... ckpt_chain_desc.backend = &be ...
       ckpt_cpu_backend_destroy(&be);           // after every chain that uses it

   Fault injection, for tests of error paths: ckpt_cpu_inject_fault(&be, CKPT_CPU_FAULT_ALLOC, 3)
   makes the third alloc call from now fail (alloc and alloc_pinned count together; copies and
   memsets count together under CKPT_CPU_FAULT_COPY). ckpt_cpu_get_stats reports live and peak
   allocations, so a test can prove nothing leaked.
*/
#ifndef CKPT_CPU_H_INCLUDED
#define CKPT_CPU_H_INCLUDED

#include "../ckpt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ckpt_cpu_desc {
    ckpt_logger logger;         /* default: silent */
    ckpt_allocator allocator;   /* for the backend's own state and its memory; default malloc */
} ckpt_cpu_desc;

/* Creates a CPU backend in *out (desc may be NULL). Destroy it with ckpt_cpu_backend_destroy. */
CKPT_API ckpt_result ckpt_cpu_backend_create(const ckpt_cpu_desc *desc, ckpt_backend *out);
/* Frees the backend's state. Memory still allocated through it is not freed (see stats). */
CKPT_API void ckpt_cpu_backend_destroy(ckpt_backend *backend);

typedef enum ckpt_cpu_fault {
    CKPT_CPU_FAULT_ALLOC = 0,   /* alloc and alloc_pinned */
    CKPT_CPU_FAULT_COPY = 1     /* copy_async and memset_async */
} ckpt_cpu_fault;

/* The nth (1-based) call of that kind from now fails; 0 clears. Returns CKPT_ERR_NULL_ARGUMENT
   or CKPT_ERR_BAD_BACKEND (not a CPU backend) or CKPT_ERR_BAD_INDEX (n < 0). */
CKPT_API ckpt_result ckpt_cpu_inject_fault(ckpt_backend *backend, ckpt_cpu_fault kind, int nth);

typedef struct ckpt_cpu_stats {
    uint64_t allocs;            /* successful alloc + alloc_pinned calls */
    uint64_t frees;
    uint64_t live_allocations;  /* allocs - frees */
    uint64_t live_bytes;
    uint64_t peak_bytes;
    uint64_t copies;            /* successful copy_async + memset_async calls */
    uint64_t faults;            /* injected failures so far */
} ckpt_cpu_stats;

CKPT_API ckpt_result ckpt_cpu_get_stats(const ckpt_backend *backend, ckpt_cpu_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* CKPT_CPU_H_INCLUDED */

/* ================================================================================================
   IMPLEMENTATION (compiled by the file that defines CKPT_IMPLEMENTATION)
   ================================================================================================ */
#if defined(CKPT_IMPLEMENTATION) && !defined(CKPT_CPU_IMPLEMENTATION_DONE)
#define CKPT_CPU_IMPLEMENTATION_DONE

#include <time.h>

#define _CKPT_CPU_MAGIC 0x43505521u   /* "CPU!": tells a CPU backend's state from others */

typedef struct _ckpt_cpu_state {
    uint32_t magic;
    ckpt_logger lg;
    ckpt_allocator al;
    int fail_alloc_in, fail_copy_in;    /* countdowns; 0 = off */
    ckpt_cpu_stats stats;
} _ckpt_cpu_state;

/* Each block remembers its raw pointer and size just below the aligned address. */
typedef struct _ckpt_cpu_hdr { void *raw; uint64_t bytes; } _ckpt_cpu_hdr;

static int _ckpt_cpu_fault(_ckpt_cpu_state *s, int *countdown) {
    if (*countdown > 0 && --*countdown == 0) { s->stats.faults++; return 1; }
    return 0;
}

static ckpt_result _ckpt_cpu_alloc(void *state, size_t bytes, void **out) {
    _ckpt_cpu_state *s = (_ckpt_cpu_state *)state;
    size_t total;
    char *raw;
    uintptr_t p;
    *out = NULL;
    if (_ckpt_cpu_fault(s, &s->fail_alloc_in))
        return _CKPT_ERR(&s->lg, CKPT_ERR_OUT_OF_DEVICE_MEMORY, "cpu backend: injected failure of a %llu-byte allocation",
                         (unsigned long long)bytes);
    if (bytes > SIZE_MAX - CKPT_ALIGN - sizeof(_ckpt_cpu_hdr)) return CKPT_ERR_OUT_OF_DEVICE_MEMORY;
    total = bytes + CKPT_ALIGN + sizeof(_ckpt_cpu_hdr);
    raw = (char *)_ckpt_malloc(&s->al, total);
    if (!raw)
        return _CKPT_ERR(&s->lg, CKPT_ERR_OUT_OF_DEVICE_MEMORY, "cpu backend: malloc of %llu bytes failed",
                         (unsigned long long)bytes);
    p = ((uintptr_t)(raw + sizeof(_ckpt_cpu_hdr)) + CKPT_ALIGN - 1) & ~(uintptr_t)(CKPT_ALIGN - 1);
    ((_ckpt_cpu_hdr *)p)[-1].raw = raw;
    ((_ckpt_cpu_hdr *)p)[-1].bytes = bytes;
    s->stats.allocs++;
    s->stats.live_allocations++;
    s->stats.live_bytes += bytes;
    if (s->stats.live_bytes > s->stats.peak_bytes) s->stats.peak_bytes = s->stats.live_bytes;
    *out = (void *)p;
    return CKPT_OK;
}

static void _ckpt_cpu_free(void *state, void *ptr) {
    _ckpt_cpu_state *s = (_ckpt_cpu_state *)state;
    _ckpt_cpu_hdr h;
    if (!ptr) return;
    h = ((_ckpt_cpu_hdr *)ptr)[-1];
    s->stats.frees++;
    s->stats.live_allocations--;
    s->stats.live_bytes -= h.bytes;
    _ckpt_free(&s->al, h.raw);
}

static ckpt_result _ckpt_cpu_copy(void *state, void *dst, const void *src, size_t bytes, ckpt_copy_kind kind,
                                  void *stream) {
    _ckpt_cpu_state *s = (_ckpt_cpu_state *)state;
    _CKPT_UNUSED(kind); _CKPT_UNUSED(stream);
    if (_ckpt_cpu_fault(s, &s->fail_copy_in))
        return _CKPT_ERR(&s->lg, CKPT_ERR_BACKEND, "cpu backend: injected failure of a %llu-byte copy",
                         (unsigned long long)bytes);
    if (bytes) memmove(dst, src, bytes);
    s->stats.copies++;
    return CKPT_OK;
}

static ckpt_result _ckpt_cpu_memset(void *state, void *dst, int value, size_t bytes, void *stream) {
    _ckpt_cpu_state *s = (_ckpt_cpu_state *)state;
    _CKPT_UNUSED(stream);
    if (_ckpt_cpu_fault(s, &s->fail_copy_in))
        return _CKPT_ERR(&s->lg, CKPT_ERR_BACKEND, "cpu backend: injected failure of a %llu-byte memset",
                         (unsigned long long)bytes);
    if (bytes) memset(dst, value, bytes);
    s->stats.copies++;
    return CKPT_OK;
}

static ckpt_result _ckpt_cpu_sync(void *state, void *stream) { _CKPT_UNUSED(state); _CKPT_UNUSED(stream); return CKPT_OK; }
static void *_ckpt_cpu_stream(void *state) { _CKPT_UNUSED(state); return NULL; }

/* ckpt_checksum: the same bits the GPU backends' checksum kernel gives. */
static ckpt_result _ckpt_cpu_checksum(void *state, const void *ptr, size_t bytes, uint64_t *out) {
    _CKPT_UNUSED(state);
    *out = ckpt_checksum(ptr, bytes);
    return CKPT_OK;
}

/* Events: the CPU runs everything synchronously, so an event is complete once recorded; it keeps
   the wall-clock time of its last record for event_elapsed_ms. */
typedef struct _ckpt_cpu_event { double t; int recorded; } _ckpt_cpu_event;

static ckpt_result _ckpt_cpu_event_create(void *state, void **out) {
    _ckpt_cpu_state *s = (_ckpt_cpu_state *)state;
    *out = _ckpt_calloc(&s->al, 1, sizeof(_ckpt_cpu_event));
    return *out ? CKPT_OK : _CKPT_ERR(&s->lg, CKPT_ERR_OUT_OF_HOST_MEMORY, "cpu backend: no memory for an event");
}
static void _ckpt_cpu_event_destroy(void *state, void *ev) {
    if (ev) _ckpt_free(&((_ckpt_cpu_state *)state)->al, ev);
}
static ckpt_result _ckpt_cpu_event_record(void *state, void *ev, void *stream) {
    struct timespec ts;
    _CKPT_UNUSED(state); _CKPT_UNUSED(stream);
    if (!ev) return CKPT_ERR_NULL_ARGUMENT;
    timespec_get(&ts, TIME_UTC);
    ((_ckpt_cpu_event *)ev)->t = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
    ((_ckpt_cpu_event *)ev)->recorded = 1;
    return CKPT_OK;
}
static ckpt_result _ckpt_cpu_event_wait(void *state, void *stream, void *ev) {
    _CKPT_UNUSED(state); _CKPT_UNUSED(stream);
    return ev ? CKPT_OK : CKPT_ERR_NULL_ARGUMENT;
}
static ckpt_result _ckpt_cpu_event_sync(void *state, void *ev) {
    _CKPT_UNUSED(state);
    return ev ? CKPT_OK : CKPT_ERR_NULL_ARGUMENT;
}
static ckpt_result _ckpt_cpu_event_elapsed(void *state, void *a, void *b, float *ms) {
    const _ckpt_cpu_event *x = (const _ckpt_cpu_event *)a, *y = (const _ckpt_cpu_event *)b;
    if (!x || !y || !ms) return CKPT_ERR_NULL_ARGUMENT;
    if (!x->recorded || !y->recorded)
        return _CKPT_ERR(&((_ckpt_cpu_state *)state)->lg, CKPT_ERR_BACKEND, "cpu backend: elapsed time of an event never recorded");
    *ms = (float)(y->t - x->t);
    return CKPT_OK;
}

CKPT_API ckpt_result ckpt_cpu_backend_create(const ckpt_cpu_desc *desc, ckpt_backend *out) {
    _ckpt_cpu_state *s;
    ckpt_allocator al;
    if (!out) return CKPT_ERR_NULL_ARGUMENT;
    memset(out, 0, sizeof *out);
    memset(&al, 0, sizeof al);
    if (desc) al = desc->allocator;
    if ((!al.alloc) != (!al.free))
        return _CKPT_ERR(desc ? &desc->logger : NULL, CKPT_ERR_NULL_ARGUMENT,
                         "ckpt_cpu_desc.allocator: alloc and free must be set together");
    s = (_ckpt_cpu_state *)_ckpt_calloc(&al, 1, sizeof *s);
    if (!s) return CKPT_ERR_OUT_OF_HOST_MEMORY;
    s->magic = _CKPT_CPU_MAGIC;
    s->al = al;
    if (desc) s->lg = desc->logger;
    out->state = s;
    out->name = "cpu";
    out->alloc = _ckpt_cpu_alloc;
    out->free = _ckpt_cpu_free;
    out->alloc_pinned = _ckpt_cpu_alloc;
    out->free_pinned = _ckpt_cpu_free;
    out->copy_async = _ckpt_cpu_copy;
    out->memset_async = _ckpt_cpu_memset;
    out->compute_stream = _ckpt_cpu_stream;
    out->synchronize = _ckpt_cpu_sync;
    out->mem_info = NULL;
    out->checksum = _ckpt_cpu_checksum;
    out->event_create = _ckpt_cpu_event_create;
    out->event_destroy = _ckpt_cpu_event_destroy;
    out->event_record = _ckpt_cpu_event_record;
    out->stream_wait_event = _ckpt_cpu_event_wait;
    out->event_synchronize = _ckpt_cpu_event_sync;
    out->event_elapsed_ms = _ckpt_cpu_event_elapsed;
    return CKPT_OK;
}

static _ckpt_cpu_state *_ckpt_cpu_of(const ckpt_backend *b) {
    _ckpt_cpu_state *s;
    if (!b || b->alloc != _ckpt_cpu_alloc || !b->state) return NULL;
    s = (_ckpt_cpu_state *)b->state;
    return s->magic == _CKPT_CPU_MAGIC ? s : NULL;
}

CKPT_API void ckpt_cpu_backend_destroy(ckpt_backend *backend) {
    _ckpt_cpu_state *s = _ckpt_cpu_of(backend);
    ckpt_allocator al;
    if (!s) return;
    al = s->al;
    s->magic = 0;
    _ckpt_free(&al, s);
    memset(backend, 0, sizeof *backend);
}

CKPT_API ckpt_result ckpt_cpu_inject_fault(ckpt_backend *backend, ckpt_cpu_fault kind, int nth) {
    _ckpt_cpu_state *s;
    if (!backend) return CKPT_ERR_NULL_ARGUMENT;
    if (!(s = _ckpt_cpu_of(backend))) return CKPT_ERR_BAD_BACKEND;
    if (nth < 0) return CKPT_ERR_BAD_INDEX;
    if (kind == CKPT_CPU_FAULT_ALLOC) s->fail_alloc_in = nth;
    else if (kind == CKPT_CPU_FAULT_COPY) s->fail_copy_in = nth;
    else return CKPT_ERR_BAD_INDEX;
    return CKPT_OK;
}

CKPT_API ckpt_result ckpt_cpu_get_stats(const ckpt_backend *backend, ckpt_cpu_stats *out) {
    _ckpt_cpu_state *s;
    if (!backend || !out) return CKPT_ERR_NULL_ARGUMENT;
    if (!(s = _ckpt_cpu_of(backend))) return CKPT_ERR_BAD_BACKEND;
    *out = s->stats;
    return CKPT_OK;
}
#endif /* CKPT_IMPLEMENTATION */
