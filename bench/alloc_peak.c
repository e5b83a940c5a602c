/* alloc_peak.c -- an LD_PRELOAD shim that counts the bytes PyTorch's CPU allocator hands out:
   the CPU counterpart of torch.cuda.memory_allocated() / max_memory_allocated() for
   bench/torch_checkpoint.py.

   PyTorch allocates every CPU tensor's storage with c10::alloc_cpu (libc10.so), which on Linux
   is posix_memalign(&p, 64, nbytes), and releases it with c10::free_cpu, which is free(p). This
   shim defines posix_memalign and free; preloaded, it comes before glibc in the symbol search, so
   libc10's calls land here and are passed on to the next definition (glibc's, found with
   dlsym(RTLD_NEXT, ...)). It records each block that it counts in a hash table (pointer ->
   requested size), adds the size to the current total and raises the peak; free() of a recorded
   pointer subtracts its size, free() of any other pointer (everything else in the process) only
   misses in the table. The counts are the requested sizes, i.e. the tensors' nbytes, not
   malloc_usable_size(): that is what PyTorch asked for and what the model's tensor sizes add up
   to exactly, independent of glibc's chunk headers, its 16-byte rounding and the page rounding
   of mmap-served blocks.

   Only posix_memalign calls made from code in the shared object whose path contains
   $ALLOC_PEAK_CALLER (read once at load; default "libc10.so", the one holding c10::alloc_cpu)
   are counted, so that aligned allocations of other libraries (oneDNN's scratchpads, for
   instance) stay out; set ALLOC_PEAK_CALLER to the empty string to count every caller. The
   calls from elsewhere are only summed, in alloc_peak_other_bytes().

   Exported (for ctypes):
     void               alloc_peak_reset(void)      peak := current
     unsigned long long alloc_peak_current(void)    bytes in counted blocks now
     unsigned long long alloc_peak_max(void)        the largest current since load / reset
     unsigned long long alloc_peak_blocks(void)     number of counted blocks now
     unsigned long long alloc_peak_other_bytes(void) bytes of posix_memalign calls not counted
                                                   (another caller), summed since load
     int                alloc_peak_caller_found(void) 1 once a call from the caller object
                                                   has been seen (0: nothing counted yet)

   Limits: realloc(), aligned_alloc(), memalign() and malloc() are not wrapped (PyTorch's CPU
   allocator does not use them for tensor storage: libc10 imports posix_memalign, malloc and
   realloc, and its malloc/realloc serve small host-side bookkeeping); a counted block given to
   realloc() would stay in the table. Memory that libraries obtain without posix_memalign
   (OpenBLAS's per-call workspace comes from malloc, Python objects from pymalloc) is not
   counted, which is the point: the figure is PyTorch's tensor memory. Thread-safe (one mutex);
   not async-signal-safe, as malloc is not either.

   Build: cc -O2 -shared -fPIC -o alloc_peak.so bench/alloc_peak.c -ldl
   Use:   LD_PRELOAD=/path/to/alloc_peak.so python3 ... (torch_checkpoint.py does this itself). */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define AP_EXPORT __attribute__((visibility("default")))

typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void (*free_fn)(void *);

static posix_memalign_fn real_posix_memalign;
static free_fn real_free;

/* ---- the table: open addressing, linear probing, backward-shift deletion -------------------- */

typedef struct {
    uintptr_t key; /* 0: empty */
    size_t size;
} ap_slot;

static pthread_mutex_t ap_lock = PTHREAD_MUTEX_INITIALIZER;
static ap_slot *ap_tab;   /* mmap'd, so that the table never calls malloc or free */
static size_t ap_cap;     /* power of two, or 0 */
static size_t ap_used;
static unsigned long long ap_cur, ap_peak, ap_other;

static size_t ap_hash(uintptr_t k, size_t mask) {
    uint64_t h = (uint64_t)k >> 4; /* blocks are at least 16-byte aligned */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return (size_t)h & mask;
}

static int ap_grow(void) {
    size_t ncap = ap_cap ? 2 * ap_cap : 4096;
    ap_slot *nt = mmap(NULL, ncap * sizeof *nt, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (nt == MAP_FAILED) return -1;
    for (size_t i = 0; i < ap_cap; i++) {
        if (!ap_tab[i].key) continue;
        size_t j = ap_hash(ap_tab[i].key, ncap - 1);
        while (nt[j].key) j = (j + 1) & (ncap - 1);
        nt[j] = ap_tab[i];
    }
    if (ap_tab) munmap(ap_tab, ap_cap * sizeof *ap_tab);
    ap_tab = nt;
    ap_cap = ncap;
    return 0;
}

/* Under ap_lock. A key already present (a block freed behind our back) is replaced. */
static void ap_insert(uintptr_t k, size_t size) {
    if (2 * (ap_used + 1) > ap_cap && ap_grow() != 0) return; /* no memory: not counted */
    size_t mask = ap_cap - 1, j = ap_hash(k, mask);
    while (ap_tab[j].key && ap_tab[j].key != k) j = (j + 1) & mask;
    if (ap_tab[j].key == k) {
        ap_cur -= ap_tab[j].size;
    } else {
        ap_tab[j].key = k;
        ap_used++;
    }
    ap_tab[j].size = size;
    ap_cur += size;
    if (ap_cur > ap_peak) ap_peak = ap_cur;
}

/* Under ap_lock. */
static void ap_remove(uintptr_t k) {
    if (!ap_used) return;
    size_t mask = ap_cap - 1, j = ap_hash(k, mask);
    while (ap_tab[j].key != k) {
        if (!ap_tab[j].key) return; /* not ours */
        j = (j + 1) & mask;
    }
    ap_cur -= ap_tab[j].size;
    ap_used--;
    /* Backward shift: pull later members of the probe run into the hole. */
    size_t hole = j;
    for (size_t i = (j + 1) & mask; ap_tab[i].key; i = (i + 1) & mask) {
        size_t home = ap_hash(ap_tab[i].key, mask);
        /* The entry at i may move to the hole iff its home is not in (hole, i] cyclically. */
        if (((i - home) & mask) >= ((i - hole) & mask)) {
            ap_tab[hole] = ap_tab[i];
            hole = i;
        }
    }
    ap_tab[hole].key = 0;
    ap_tab[hole].size = 0;
}

/* ---- which callers count ---------------------------------------------------------------------- */

static char ap_caller[256] = "libc10.so";
static _Atomic uintptr_t ap_lo, ap_hi; /* the caller object's mapped range, once found */

typedef struct {
    uintptr_t addr;
    int match;
    uintptr_t lo, hi;
} ap_find;

static int ap_phdr_cb(struct dl_phdr_info *info, size_t sz, void *data) {
    (void)sz;
    ap_find *f = data;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    int inside = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
        if (s < lo) lo = s;
        if (e > hi) hi = e;
        if (f->addr >= s && f->addr < e) inside = 1;
    }
    if (!inside) return 0;
    f->match = info->dlpi_name && strstr(info->dlpi_name, ap_caller) != NULL;
    f->lo = lo;
    f->hi = hi;
    return 1;
}

/* Whether the call from return address ra counts. Outside ap_lock (dl_iterate_phdr takes the
   loader's lock). */
static int ap_counts(uintptr_t ra) {
    if (!ap_caller[0]) return 1;
    uintptr_t lo = atomic_load_explicit(&ap_lo, memory_order_acquire);
    if (lo) return ra >= lo && ra < atomic_load_explicit(&ap_hi, memory_order_relaxed);
    ap_find f = {ra, 0, 0, 0};
    dl_iterate_phdr(ap_phdr_cb, &f);
    if (!f.match) return 0;
    atomic_store_explicit(&ap_hi, f.hi, memory_order_relaxed);
    atomic_store_explicit(&ap_lo, f.lo, memory_order_release);
    return 1;
}

/* ---- the wrappers ------------------------------------------------------------------------------ */

static void ap_resolve(void) {
    static _Thread_local int busy; /* dlsym may free; see free() */
    if (busy) return;
    busy = 1;
    /* memcpy: ISO C has no conversion from void * to a function pointer; POSIX makes the
       representations the same. */
    void *sym;
    if (!real_free && (sym = dlsym(RTLD_NEXT, "free")) != NULL)
        memcpy(&real_free, &sym, sizeof sym);
    if (!real_posix_memalign && (sym = dlsym(RTLD_NEXT, "posix_memalign")) != NULL)
        memcpy(&real_posix_memalign, &sym, sizeof sym);
    busy = 0;
}

__attribute__((constructor)) static void ap_init(void) {
    const char *c = getenv("ALLOC_PEAK_CALLER");
    if (c) {
        strncpy(ap_caller, c, sizeof ap_caller - 1);
        ap_caller[sizeof ap_caller - 1] = '\0';
    }
    ap_resolve();
}

AP_EXPORT int posix_memalign(void **memptr, size_t alignment, size_t size) {
    if (!real_posix_memalign) ap_resolve();
    if (!real_posix_memalign) return ENOMEM;
    int rc = real_posix_memalign(memptr, alignment, size);
    if (rc != 0 || !*memptr) return rc;
    int counts = ap_counts((uintptr_t)__builtin_return_address(0));
    pthread_mutex_lock(&ap_lock);
    if (counts)
        ap_insert((uintptr_t)*memptr, size);
    else
        ap_other += size;
    pthread_mutex_unlock(&ap_lock);
    return rc;
}

AP_EXPORT void free(void *p) {
    if (!p) return;
    if (!real_free) ap_resolve();
    if (!real_free) return; /* only while dlsym itself frees, before free is known: leak it */
    pthread_mutex_lock(&ap_lock);
    ap_remove((uintptr_t)p);
    pthread_mutex_unlock(&ap_lock);
    real_free(p);
}

/* ---- the interface ----------------------------------------------------------------------------- */

AP_EXPORT void alloc_peak_reset(void) {
    pthread_mutex_lock(&ap_lock);
    ap_peak = ap_cur;
    pthread_mutex_unlock(&ap_lock);
}

#define AP_GETTER(name, expr)                  \
    AP_EXPORT unsigned long long name(void) {  \
        pthread_mutex_lock(&ap_lock);          \
        unsigned long long v = (expr);         \
        pthread_mutex_unlock(&ap_lock);        \
        return v;                              \
    }

AP_GETTER(alloc_peak_current, ap_cur)
AP_GETTER(alloc_peak_max, ap_peak)
AP_GETTER(alloc_peak_blocks, ap_used)
AP_GETTER(alloc_peak_other_bytes, ap_other)

AP_EXPORT int alloc_peak_caller_found(void) {
    return !ap_caller[0] || atomic_load_explicit(&ap_lo, memory_order_acquire) != 0;
}
