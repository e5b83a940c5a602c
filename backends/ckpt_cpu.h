/* ckpt_cpu.h -- the reference backend of ckpt.h: host memory; copies synchronous, or on a copy
   engine of worker threads (optionally throttled to a bandwidth) that behaves like a GPU's.

   It always builds, needs nothing but the C library (C11 threads for the copy engine), and is
   the oracle the GPU backends are tested against. Include it after ckpt.h; its implementation is compiled by the same
   CKPT_IMPLEMENTATION file.

       ckpt_backend be;
       ckpt_cpu_backend_create(NULL, &be);      // or a ckpt_cpu_desc with a logger
       ... ckpt_chain_desc.backend = &be ...
       ckpt_cpu_backend_destroy(&be);           // after every chain that uses it

   Fault injection, for tests of error paths: ckpt_cpu_inject_fault(&be, CKPT_CPU_FAULT_ALLOC, 3)
   makes the third alloc call from now fail (alloc and alloc_pinned count together; copies and
   memsets count together under CKPT_CPU_FAULT_COPY). ckpt_cpu_get_stats reports live and peak
   allocations, so a test can prove nothing leaked (on failure it zeroes *out).

   The copy engine (ckpt_cpu_desc.copy_engine = 1, copy_bandwidth in bytes per second) makes
   offload testable without a GPU: copy_stream gives a stream per direction, a worker thread runs
   its copies in order, and events order the streams exactly as on CUDA (the compute "stream" is
   the calling thread, so waiting on it is blocking the caller). A throttled stream times its
   copies as a link that needs no core would (>>cpu link clock): back to back, each bytes /
   bandwidth long, as long as the worker thread gets to each copy within that time.
*/
#ifndef CKPT_CPU_H_INCLUDED
#define CKPT_CPU_H_INCLUDED

#include "../ckpt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Called by a copy-engine thread after each copy: which stream (CKPT_COPY_HOST_TO_DEVICE or
   CKPT_COPY_DEVICE_TO_HOST), when it ran (ms on the backend's clock, see ckpt_cpu_now_ms), and
   its size. For tests and timelines; must be thread-safe. */
typedef void (*ckpt_cpu_copy_trace_fn)(void *user, ckpt_copy_kind stream, double start_ms, double end_ms, size_t bytes);

typedef struct ckpt_cpu_desc {
    ckpt_logger logger;         /* default: silent */
    ckpt_allocator allocator;   /* for the backend's own state and its memory; default malloc */
    /* Copy engine: nonzero gives the backend one copy stream per direction, each a worker thread
       that runs its copies in order, so copies overlap with compute as on a GPU (default 0: no
       copy streams; every copy runs synchronously on the caller). Needs C11 threads. */
    int copy_engine;
    double copy_bandwidth;      /* copy engine: bytes per second per stream; 0: unthrottled */
    ckpt_cpu_copy_trace_fn copy_trace;  /* throttled: start and end on the link's clock */
    void *copy_trace_user;
} ckpt_cpu_desc;

/* The clock of copy traces, events and the copy throttle, in milliseconds: C11's timespec_get
   (TIME_UTC), the wall clock, as C11 has no monotonic one; a clock step mid-copy skews them. */
CKPT_API double ckpt_cpu_now_ms(void);

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
    uint64_t live_bytes;        /* device and pinned together */
    uint64_t peak_bytes;
    uint64_t pinned_live_bytes; /* alloc_pinned alone */
    uint64_t pinned_peak_bytes;
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
#if !defined(__STDC_NO_THREADS__)
#include <threads.h>
#define _CKPT_CPU_THREADS 1
#else
#define _CKPT_CPU_THREADS 0
#endif

#define _CKPT_CPU_MAGIC 0x43505521u   /* "CPU!": tells a CPU backend's state from others */

CKPT_API double ckpt_cpu_now_ms(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Events, as in CUDA: a wait refers to the event's last record at the time of the wait, and is
   released when that record has happened, whatever records come later. recorded numbers the
   records; pend lists those queued on a copy stream and not yet reached (a record on the
   caller's compute stream happens at once). */
typedef struct _ckpt_cpu_event {
    uint64_t recorded;
    uint64_t *pend;
    int n_pend, cap_pend;
    double t;
} _ckpt_cpu_event;

/* Where record gen is in ev->pend; -1 once it has happened. */
static int _ckpt_cpu_pend_index(const _ckpt_cpu_event *ev, uint64_t gen) {
    int i;
    for (i = 0; i < ev->n_pend; i++) if (ev->pend[i] == gen) return i;
    return -1;
}
static int _ckpt_cpu_pending(const _ckpt_cpu_event *ev, uint64_t gen) { return _ckpt_cpu_pend_index(ev, gen) >= 0; }

enum { _CKPT_CPU_COPY = 0, _CKPT_CPU_RECORD = 1, _CKPT_CPU_WAIT = 2 };
typedef struct _ckpt_cpu_item {
    int kind;
    void *dst;
    const void *src;
    size_t bytes;
    _ckpt_cpu_event *ev;
    uint64_t gen;
    double t;               /* when it was queued */
    double ready;           /* a wait: when its record happened, if it had when queued; else -1 */
} _ckpt_cpu_item;

struct _ckpt_cpu_state;
typedef struct _ckpt_cpu_queue {    /* one copy stream: a ring of items and its worker */
    struct _ckpt_cpu_state *s;
    ckpt_copy_kind kind;
    _ckpt_cpu_item *items;
    size_t head, count, cap;
    double link;            /* when its last item ended on the link's clock (>>cpu link clock) */
#if _CKPT_CPU_THREADS
    thrd_t thread;
#endif
    int started;
} _ckpt_cpu_queue;

typedef struct _ckpt_cpu_state {
    uint32_t magic;
    ckpt_logger lg;
    ckpt_allocator al;
    int fail_alloc_in, fail_copy_in;    /* countdowns; 0 = off */
    ckpt_cpu_stats stats;
    int engine, stop;
    double bandwidth;
    ckpt_cpu_copy_trace_fn trace;
    void *trace_user;
    _ckpt_cpu_queue q[2];               /* [CKPT_COPY_HOST_TO_DEVICE], [CKPT_COPY_DEVICE_TO_HOST] */
#if _CKPT_CPU_THREADS
    mtx_t mu;                           /* guards the queues and the events */
    cnd_t cv;                           /* broadcast on every change */
#endif
} _ckpt_cpu_state;

/* Each block remembers its raw pointer, size and kind just below the aligned address. */
typedef struct _ckpt_cpu_hdr { void *raw; uint64_t bytes; uint64_t pinned; } _ckpt_cpu_hdr;

static int _ckpt_cpu_fault(_ckpt_cpu_state *s, int *countdown) {
    if (*countdown > 0 && --*countdown == 0) { s->stats.faults++; return 1; }
    return 0;
}

static ckpt_result _ckpt_cpu_alloc_any(void *state, size_t bytes, void **out, int pinned) {
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
    ((_ckpt_cpu_hdr *)p)[-1].pinned = (uint64_t)pinned;
    s->stats.allocs++;
    s->stats.live_allocations++;
    s->stats.live_bytes += bytes;
    if (s->stats.live_bytes > s->stats.peak_bytes) s->stats.peak_bytes = s->stats.live_bytes;
    if (pinned) {
        s->stats.pinned_live_bytes += bytes;
        if (s->stats.pinned_live_bytes > s->stats.pinned_peak_bytes) s->stats.pinned_peak_bytes = s->stats.pinned_live_bytes;
    }
    *out = (void *)p;
    return CKPT_OK;
}
static ckpt_result _ckpt_cpu_alloc(void *state, size_t bytes, void **out) { return _ckpt_cpu_alloc_any(state, bytes, out, 0); }
static ckpt_result _ckpt_cpu_alloc_pinned(void *state, size_t bytes, void **out) { return _ckpt_cpu_alloc_any(state, bytes, out, 1); }

static ckpt_result _ckpt_cpu_sync(void *state, void *stream);

static void _ckpt_cpu_free(void *state, void *ptr) {
    _ckpt_cpu_state *s = (_ckpt_cpu_state *)state;
    _ckpt_cpu_hdr h;
    if (!ptr) return;
    if (s->engine) (void)_ckpt_cpu_sync(state, NULL);   /* like cudaFree: no queued copy may still use it */
    h = ((_ckpt_cpu_hdr *)ptr)[-1];
    s->stats.frees++;
    s->stats.live_allocations--;
    s->stats.live_bytes -= h.bytes;
    if (h.pinned) s->stats.pinned_live_bytes -= h.bytes;
    _ckpt_free(&s->al, h.raw);
}

/* >>cpu copy engine ----------------------------------------------------------------------------- */
#if _CKPT_CPU_THREADS
static _ckpt_cpu_queue *_ckpt_cpu_queue_of(_ckpt_cpu_state *s, void *stream) {
    return s->engine && (stream == (void *)&s->q[0] || stream == (void *)&s->q[1]) ? (_ckpt_cpu_queue *)stream : NULL;
}

/* Appends an item (the caller holds the lock). */
static ckpt_result _ckpt_cpu_push(_ckpt_cpu_queue *q, const _ckpt_cpu_item *it) {
    if (q->count == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 64, i;
        _ckpt_cpu_item *n = (_ckpt_cpu_item *)_ckpt_malloc(&q->s->al, cap * sizeof *n);
        if (!n) return CKPT_ERR_OUT_OF_HOST_MEMORY;
        for (i = 0; i < q->count; i++) n[i] = q->items[(q->head + i) % q->cap];
        _ckpt_free(&q->s->al, q->items);
        q->items = n; q->cap = cap; q->head = 0;
    }
    q->items[(q->head + q->count) % q->cap] = *it;
    q->items[(q->head + q->count) % q->cap].t = ckpt_cpu_now_ms();
    q->count++;
    cnd_broadcast(&q->s->cv);
    return CKPT_OK;
}

/* >>cpu link clock: a throttled stream models a link that copies on its own, as a GPU's copy
   engine does, not a thread that needs a core. An item starts on the link's clock when it was
   queued, the stream's previous item ended and (a wait) the awaited record happened, whichever
   is last (a record still queued on the other stream when the wait was: the event's latest
   record when the wait runs, never earlier), even when the worker thread reaches it later (two
   cores shared by the caller's compute and two workers: bench/RESULTS.md); a copy then ends
   bytes / bandwidth later, or when its memmove ends if that is later. The worker sleeps to that
   end (a late wake-up delays those who wait for the copy, not the link). Records on the stream
   take the link's time. Unthrottled, the link's clock is the wall clock. */

/* Runs one copy that starts at `start` on the link's clock: the copy, then a sleep to its end;
   returns the end. */
static double _ckpt_cpu_run_copy(_ckpt_cpu_queue *q, const _ckpt_cpu_item *it, double start) {
    _ckpt_cpu_state *s = q->s;
    double end, now;
    if (it->bytes) memmove(it->dst, it->src, it->bytes);
    end = ckpt_cpu_now_ms();
    if (s->bandwidth > 0) {
        if (start + (double)it->bytes / s->bandwidth * 1e3 > end) end = start + (double)it->bytes / s->bandwidth * 1e3;
        while ((now = ckpt_cpu_now_ms()) < end) {
            struct timespec d;
            double left = end - now;
            d.tv_sec = (time_t)(left / 1e3);
            d.tv_nsec = (long)((left - (double)d.tv_sec * 1e3) * 1e6);
            thrd_sleep(&d, NULL);
        }
    }
    if (s->trace) s->trace(s->trace_user, q->kind, start, end, it->bytes);
    return end;
}

static int _ckpt_cpu_worker(void *arg) {
    _ckpt_cpu_queue *q = (_ckpt_cpu_queue *)arg;
    _ckpt_cpu_state *s = q->s;
    mtx_lock(&s->mu);
    while (!s->stop) {
        _ckpt_cpu_item it;
        double start;
        if (q->count == 0) { cnd_wait(&s->cv, &s->mu); continue; }
        it = q->items[q->head];
        if (it.kind == _CKPT_CPU_WAIT && _ckpt_cpu_pending(it.ev, it.gen)) { cnd_wait(&s->cv, &s->mu); continue; }
        start = s->bandwidth > 0 ? (it.t > q->link ? it.t : q->link) : ckpt_cpu_now_ms();
        if (it.kind == _CKPT_CPU_WAIT) {    /* a record reached after the wait was queued: the latest one's time */
            double w = it.ready >= 0 ? it.ready : it.ev->t;
            if (w > start) start = w;
        }
        q->link = start;
        if (it.kind == _CKPT_CPU_RECORD) {
            int i = _ckpt_cpu_pend_index(it.ev, it.gen);
            if (i >= 0) it.ev->pend[i] = it.ev->pend[--it.ev->n_pend];
            it.ev->t = start;
        } else if (it.kind == _CKPT_CPU_COPY) {
            double end;
            mtx_unlock(&s->mu);
            end = _ckpt_cpu_run_copy(q, &it, start);
            mtx_lock(&s->mu);
            q->link = end;
        }
        q->head = (q->head + 1) % q->cap;   /* popped only when done: count > 0 means busy */
        q->count--;
        cnd_broadcast(&s->cv);
    }
    mtx_unlock(&s->mu);
    return 0;
}

static void _ckpt_cpu_engine_stop(_ckpt_cpu_state *s) {
    int i;
    mtx_lock(&s->mu);
    s->stop = 1;
    cnd_broadcast(&s->cv);
    mtx_unlock(&s->mu);
    for (i = 0; i < 2; i++) {
        if (s->q[i].started) thrd_join(s->q[i].thread, NULL);
        _ckpt_free(&s->al, s->q[i].items);
        s->q[i].items = NULL;
    }
    mtx_destroy(&s->mu);
    cnd_destroy(&s->cv);
}

static ckpt_result _ckpt_cpu_engine_start(_ckpt_cpu_state *s) {
    int i;
    if (mtx_init(&s->mu, mtx_plain) != thrd_success) return CKPT_ERR_BACKEND;
    if (cnd_init(&s->cv) != thrd_success) { mtx_destroy(&s->mu); return CKPT_ERR_BACKEND; }
    for (i = 0; i < 2; i++) {
        s->q[i].s = s;
        s->q[i].kind = (ckpt_copy_kind)i;
        if (thrd_create(&s->q[i].thread, _ckpt_cpu_worker, &s->q[i]) != thrd_success) {
            _ckpt_cpu_engine_stop(s);
            return _CKPT_ERR(&s->lg, CKPT_ERR_BACKEND, "cpu backend: could not start a copy-engine thread");
        }
        s->q[i].started = 1;
    }
    s->engine = 1;
    return CKPT_OK;
}
#endif

static ckpt_result _ckpt_cpu_copy(void *state, void *dst, const void *src, size_t bytes, ckpt_copy_kind kind,
                                  void *stream) {
    _ckpt_cpu_state *s = (_ckpt_cpu_state *)state;
    _CKPT_UNUSED(kind);
    if (_ckpt_cpu_fault(s, &s->fail_copy_in))
        return _CKPT_ERR(&s->lg, CKPT_ERR_BACKEND, "cpu backend: injected failure of a %llu-byte copy",
                         (unsigned long long)bytes);
#if _CKPT_CPU_THREADS
    {
        _ckpt_cpu_queue *q = _ckpt_cpu_queue_of(s, stream);
        if (q) {
            _ckpt_cpu_item it;
            ckpt_result r;
            memset(&it, 0, sizeof it);
            it.kind = _CKPT_CPU_COPY; it.dst = dst; it.src = src; it.bytes = bytes;
            mtx_lock(&s->mu);
            r = _ckpt_cpu_push(q, &it);
            mtx_unlock(&s->mu);
            if (r != CKPT_OK) return _CKPT_ERR(&s->lg, r, "cpu backend: no memory to queue a copy");
            s->stats.copies++;
            return CKPT_OK;
        }
    }
#else
    _CKPT_UNUSED(stream);
#endif
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

/* synchronize(NULL) waits for both copy streams to drain; the caller's own work is done already. */
static ckpt_result _ckpt_cpu_sync(void *state, void *stream) {
    _ckpt_cpu_state *s = (_ckpt_cpu_state *)state;
#if _CKPT_CPU_THREADS
    if (s->engine) {
        _ckpt_cpu_queue *q = _ckpt_cpu_queue_of(s, stream);
        mtx_lock(&s->mu);
        while (q ? q->count > 0 : (!stream && (s->q[0].count > 0 || s->q[1].count > 0))) cnd_wait(&s->cv, &s->mu);
        mtx_unlock(&s->mu);
    }
#else
    _CKPT_UNUSED(s);
#endif
    _CKPT_UNUSED(stream);
    return CKPT_OK;
}
static void *_ckpt_cpu_stream(void *state) { _CKPT_UNUSED(state); return NULL; }
static void *_ckpt_cpu_copy_stream(void *state, ckpt_copy_kind kind) {
    _ckpt_cpu_state *s = (_ckpt_cpu_state *)state;
    if (!s->engine || (kind != CKPT_COPY_HOST_TO_DEVICE && kind != CKPT_COPY_DEVICE_TO_HOST)) return NULL;
    return (void *)&s->q[kind];
}

/* ckpt_checksum: the same bits the GPU backends' checksum kernel gives. */
static ckpt_result _ckpt_cpu_checksum(void *state, const void *ptr, size_t bytes, uint64_t *out) {
    _CKPT_UNUSED(state);
    *out = ckpt_checksum(ptr, bytes);
    return CKPT_OK;
}

/* >>cpu events ---------------------------------------------------------------------------------- */
static void _ckpt_cpu_lock(_ckpt_cpu_state *s) {
#if _CKPT_CPU_THREADS
    if (s->engine) mtx_lock(&s->mu);
#else
    _CKPT_UNUSED(s);
#endif
}
static void _ckpt_cpu_unlock(_ckpt_cpu_state *s) {
#if _CKPT_CPU_THREADS
    if (s->engine) { cnd_broadcast(&s->cv); mtx_unlock(&s->mu); }
#else
    _CKPT_UNUSED(s);
#endif
}

static ckpt_result _ckpt_cpu_event_create(void *state, void **out) {
    _ckpt_cpu_state *s = (_ckpt_cpu_state *)state;
    *out = _ckpt_calloc(&s->al, 1, sizeof(_ckpt_cpu_event));
    return *out ? CKPT_OK : _CKPT_ERR(&s->lg, CKPT_ERR_OUT_OF_HOST_MEMORY, "cpu backend: no memory for an event");
}
static void _ckpt_cpu_event_destroy(void *state, void *event) {
    _ckpt_cpu_state *s = (_ckpt_cpu_state *)state;
    _ckpt_cpu_event *ev = (_ckpt_cpu_event *)event;
    if (!ev) return;
    if (s->engine) (void)_ckpt_cpu_sync(state, NULL);   /* queued records and waits still point at it */
    _ckpt_free(&s->al, ev->pend);
    _ckpt_free(&s->al, ev);
}
static ckpt_result _ckpt_cpu_event_record(void *state, void *event, void *stream) {
    _ckpt_cpu_state *s = (_ckpt_cpu_state *)state;
    _ckpt_cpu_event *ev = (_ckpt_cpu_event *)event;
    ckpt_result r = CKPT_OK;
    if (!ev) return CKPT_ERR_NULL_ARGUMENT;
    _ckpt_cpu_lock(s);
    ev->recorded++;
#if _CKPT_CPU_THREADS
    _ckpt_cpu_queue *q = _ckpt_cpu_queue_of(s, stream);
    if (q) {
        _ckpt_cpu_item it;
        if (ev->n_pend == ev->cap_pend) {
            int cap = ev->cap_pend ? 2 * ev->cap_pend : 4;
            uint64_t *p = (uint64_t *)_ckpt_malloc(&s->al, (size_t)cap * sizeof *p);
            if (!p) { ev->recorded--; _ckpt_cpu_unlock(s); return CKPT_ERR_OUT_OF_HOST_MEMORY; }
            if (ev->n_pend) memcpy(p, ev->pend, (size_t)ev->n_pend * sizeof *p);
            _ckpt_free(&s->al, ev->pend);
            ev->pend = p; ev->cap_pend = cap;
        }
        memset(&it, 0, sizeof it);
        it.kind = _CKPT_CPU_RECORD; it.ev = ev; it.gen = ev->recorded;
        r = _ckpt_cpu_push(q, &it);
        if (r == CKPT_OK) ev->pend[ev->n_pend++] = ev->recorded;
        else ev->recorded--;
        _ckpt_cpu_unlock(s);
        return r;
    }
#else
    _CKPT_UNUSED(stream);
#endif
    ev->t = ckpt_cpu_now_ms();
    _ckpt_cpu_unlock(s);
    return r;
}
/* Waits for the last record of ev: on a copy stream, as a queued wait; on the caller, blocking. */
static ckpt_result _ckpt_cpu_event_wait(void *state, void *stream, void *event) {
    _ckpt_cpu_state *s = (_ckpt_cpu_state *)state;
    _ckpt_cpu_event *ev = (_ckpt_cpu_event *)event;
    ckpt_result r = CKPT_OK;
    if (!ev) return CKPT_ERR_NULL_ARGUMENT;
#if _CKPT_CPU_THREADS
    if (s->engine) {
        _ckpt_cpu_queue *q = _ckpt_cpu_queue_of(s, stream);
        mtx_lock(&s->mu);
        if (q) {
            _ckpt_cpu_item it;
            memset(&it, 0, sizeof it);
            it.kind = _CKPT_CPU_WAIT; it.ev = ev; it.gen = ev->recorded;
            it.ready = _ckpt_cpu_pending(ev, it.gen) ? -1.0 : ev->t;
            r = _ckpt_cpu_push(q, &it);
        } else {
            uint64_t gen = ev->recorded;
            while (_ckpt_cpu_pending(ev, gen)) cnd_wait(&s->cv, &s->mu);
        }
        mtx_unlock(&s->mu);
    }
#else
    _CKPT_UNUSED(s); _CKPT_UNUSED(stream);
#endif
    return r;
}
static ckpt_result _ckpt_cpu_event_sync(void *state, void *ev) { return _ckpt_cpu_event_wait(state, NULL, ev); }
static ckpt_result _ckpt_cpu_event_elapsed(void *state, void *a, void *b, float *ms) {
    _ckpt_cpu_state *s = (_ckpt_cpu_state *)state;
    const _ckpt_cpu_event *x = (const _ckpt_cpu_event *)a, *y = (const _ckpt_cpu_event *)b;
    ckpt_result r = CKPT_OK;
    if (!x || !y || !ms) return CKPT_ERR_NULL_ARGUMENT;
    _ckpt_cpu_lock(s);
    if (!x->recorded || !y->recorded || _ckpt_cpu_pending(x, x->recorded) || _ckpt_cpu_pending(y, y->recorded))
        r = CKPT_ERR_BACKEND;
    else
        *ms = (float)(y->t - x->t);
    _ckpt_cpu_unlock(s);
    return r == CKPT_OK ? r : _CKPT_ERR(&s->lg, r, "cpu backend: elapsed time of an event not recorded or not complete");
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
    if (desc && !(desc->copy_bandwidth >= 0 && desc->copy_bandwidth < DBL_MAX))
        return _CKPT_ERR(&desc->logger, CKPT_ERR_BAD_ARGUMENT, "ckpt_cpu_desc.copy_bandwidth %g: must be finite and not negative",
                         desc->copy_bandwidth);
#if !_CKPT_CPU_THREADS
    if (desc && desc->copy_engine)
        return _CKPT_ERR(&desc->logger, CKPT_ERR_BAD_ARGUMENT, "ckpt_cpu_desc.copy_engine: this C library has no threads");
#endif
    s = (_ckpt_cpu_state *)_ckpt_calloc(&al, 1, sizeof *s);
    if (!s) return CKPT_ERR_OUT_OF_HOST_MEMORY;
    s->magic = _CKPT_CPU_MAGIC;
    s->al = al;
    if (desc) {
        s->lg = desc->logger;
        s->bandwidth = desc->copy_bandwidth;
        s->trace = desc->copy_trace;
        s->trace_user = desc->copy_trace_user;
    }
#if _CKPT_CPU_THREADS
    if (desc && desc->copy_engine) {
        ckpt_result r = _ckpt_cpu_engine_start(s);
        if (r != CKPT_OK) { _ckpt_free(&al, s); return r; }
    }
#endif
    out->state = s;
    out->name = "cpu";
    out->alloc = _ckpt_cpu_alloc;
    out->free = _ckpt_cpu_free;
    out->alloc_pinned = _ckpt_cpu_alloc_pinned;
    out->free_pinned = _ckpt_cpu_free;
    out->copy_async = _ckpt_cpu_copy;
    out->memset_async = _ckpt_cpu_memset;
    out->compute_stream = _ckpt_cpu_stream;
    out->synchronize = _ckpt_cpu_sync;
    out->mem_info = NULL;
    out->checksum = _ckpt_cpu_checksum;
    out->copy_stream = _ckpt_cpu_copy_stream;
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
#if _CKPT_CPU_THREADS
    if (s->engine) { (void)_ckpt_cpu_sync(s, NULL); _ckpt_cpu_engine_stop(s); }   /* queued copies finish first */
#endif
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
    if (out) memset(out, 0, sizeof *out);
    if (!backend || !out) return CKPT_ERR_NULL_ARGUMENT;
    if (!(s = _ckpt_cpu_of(backend))) return CKPT_ERR_BAD_BACKEND;
    *out = s->stats;
    return CKPT_OK;
}
#endif /* CKPT_IMPLEMENTATION */
