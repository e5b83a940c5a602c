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
