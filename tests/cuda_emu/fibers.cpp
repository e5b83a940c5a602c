/* fibers.cpp -- the fiber launcher: kernels whose threads wait for each other (__syncthreads,
   __syncwarp, warp shuffles) on the host.

   A launch runs the blocks one after another (x fastest, then y, z). Within a block every thread
   is a fiber (its own stack, a cooperative context switch): the scheduler starts the threads in
   order of their linear index, and each runs until it returns or waits at a barrier; a barrier
   that completes queues its waiters again (in arrival order) and lets the last arriver go on.
   So the emulation is deterministic: the same kernel on the same data gives the same bits.

   What it emulates: __syncthreads as a barrier among the block's threads that have not returned;
   __syncwarp and the __shfl*_sync family as a barrier among the warp's non-exited lanes named in
   the mask, where lanes are linear thread indices % 32 and warps / 32, as in CUDA, with the
   shuffle's value exchange (width included); __shared__ variables (static storage, see
   cuda_runtime.h). What it catches: a shuffle that reads a lane which did not take part (CUDA:
   an undefined value), lanes of one warp naming different masks at once, a lane not in its own
   mask, a block that deadlocks (threads waiting at barriers no other thread will reach), and
   __syncthreads or a shuffle in a kernel launched by the loop launcher, each with an "EMU:"
   message and abort().

   What it does not: real parallelism or lockstep warps (a kernel that relies on implicit warp
   synchronism without __syncwarp, or on a particular interleaving, is not exercised the way a
   GPU would run it; data races on shared or global memory go unnoticed); dynamic shared memory;
   cooperative groups, votes and atomics; several lanes' disjoint masks in one warp at the same
   time. Each thread has a 256 KiB stack (untouched pages cost nothing), below a guard page.

   The context switch is a few lines of assembly on x86-64 (callee-saved registers and the stack
   pointer; the floating-point control words are shared by all threads, which never change them);
   elsewhere, or with -DEMU_FIBERS_UCONTEXT, it is <ucontext.h>'s swapcontext (correct, slower: a
   system call per switch). Not usable under AddressSanitizer (it would need the fiber switch
   annotations); the emulated tests are not built with CKPT_SANITIZE. */
#include "cuda_runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <vector>

#if defined(__x86_64__) && !defined(EMU_FIBERS_UCONTEXT)
#define EMU_FIBERS_ASM 1
/* emu_ctx_swap(save, load): pushes the callee-saved registers, stores the stack pointer in
   *save, switches to the stack load, pops that context's registers and returns into it. */
extern "C" void emu_ctx_swap(void **save, void *load);
asm(R"(
    .text
    .p2align 4
    .type emu_ctx_swap, @function
emu_ctx_swap:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size emu_ctx_swap, .-emu_ctx_swap
)");
#else
#define EMU_FIBERS_ASM 0
#include <ucontext.h>
#endif

namespace {

constexpr size_t kStackBytes = 256 << 10;
constexpr size_t kGuardBytes = 4096;
constexpr unsigned kNone = ~0u;

struct Context {
#if EMU_FIBERS_ASM
    void *sp = nullptr;
#else
    ucontext_t uc;
#endif
};

struct Fiber {
    Context ctx;
    char *stack = nullptr;      /* from the pool while the thread runs: null before it starts */
    uint3 idx{0, 0, 0};
    unsigned warp = 0, lane = 0;
    bool done = false;
};

struct Warp {
    unsigned live = 0;          /* lanes that exist and have not returned */
    unsigned arrived = 0;       /* lanes waiting at the current warp barrier */
    unsigned mask = 0;          /* the mask they named */
    unsigned round = 0;         /* warp barriers completed */
    /* Shuffle values, double-buffered by round: a lane can be at most one barrier ahead of
       another that still has to read. */
    uint64_t vals[2][32];
    unsigned took_part[2];      /* the lanes of the round that used this buffer */
    unsigned buf_round[2];
};

/* The launch in progress (launches never nest: a kernel cannot launch one). */
struct State {
    const char *name = nullptr;
    void (*body)(void *) = nullptr;
    void *arg = nullptr;
    unsigned nthreads = 0, live = 0;
    std::vector<Fiber> fibers;
    Fiber *cur = nullptr;
    Context sched;
    std::vector<unsigned> ring;     /* threads ready to run: each at most once */
    unsigned head = 0, count = 0;
    unsigned block_arrived = 0;
    std::vector<unsigned> block_waiters;
    std::vector<Warp> warps;
    std::vector<char *> pool;       /* free stacks (kept until exit) */
    ~State() { for (char *s : pool) munmap(s, kGuardBytes + kStackBytes); }
} S;

void push_ready(unsigned t) {
    S.ring[(S.head + S.count) % S.nthreads] = t;
    S.count++;
}

[[noreturn]] void fiber_main();

#if EMU_FIBERS_ASM
void ctx_init(Fiber &f) {
    /* The frame emu_ctx_swap pops: six registers, then the address it returns to (fiber_main),
       then a null return address for fiber_main, which never returns. At fiber_main's entry the
       stack pointer is 8 mod 16, as after a call. */
    void **top = (void **)(f.stack + kGuardBytes + kStackBytes) - 8;
    for (int i = 0; i < 6; i++) top[i] = nullptr;
    top[6] = (void *)&fiber_main;
    top[7] = nullptr;
    f.ctx.sp = top;
}
inline void ctx_switch(Context &from, Context &to) { emu_ctx_swap(&from.sp, to.sp); }
#else
void ctx_init(Fiber &f) {
    getcontext(&f.ctx.uc);
    f.ctx.uc.uc_stack.ss_sp = f.stack + kGuardBytes;
    f.ctx.uc.uc_stack.ss_size = kStackBytes;
    f.ctx.uc.uc_link = nullptr;
    makecontext(&f.ctx.uc, (void (*)())fiber_main, 0);
}
inline void ctx_switch(Context &from, Context &to) { swapcontext(&from.uc, &to.uc); }
#endif

char *stack_get() {
    if (!S.pool.empty()) {
        char *s = S.pool.back();
        S.pool.pop_back();
        return s;
    }
    void *m = mmap(nullptr, kGuardBytes + kStackBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (m == MAP_FAILED) emu_fatal("%s: no memory for a fiber stack", S.name);
    mprotect(m, kGuardBytes, PROT_NONE);
    return (char *)m;
}

/* The running thread, for the synchronisation functions; aborts outside the fiber launcher. */
Fiber &current(const char *what) {
    if (!S.cur)
        emu_fatal("%s called outside a kernel launched by the fiber launcher: a kernel launched with "
                  "EMU_LAUNCH (the loop launcher) runs its threads one after another and cannot wait; "
                  "rewrite its source with EMU_FIBER_LAUNCH (tests/cuda_emu/CMakeLists.txt)", what);
    return *S.cur;
}

[[noreturn]] void fail_at(const Fiber &f, const char *fmt, const char *what, unsigned a = 0, unsigned b = 0) {
    char msg[256];
    snprintf(msg, sizeof msg, fmt, what, a, b);
    emu_fatal("%s block (%u,%u,%u) thread (%u,%u,%u): %s", S.name, blockIdx.x, blockIdx.y, blockIdx.z, f.idx.x, f.idx.y,
              f.idx.z, msg);
}

/* Switches to the scheduler; returns when the scheduler resumes this thread. */
void wait_here(Fiber &f) { ctx_switch(f.ctx, S.sched); }

void block_release() {
    for (unsigned t : S.block_waiters) push_ready(t);
    S.block_waiters.clear();
    S.block_arrived = 0;
}

/* Completes the warp's barrier: records who took part, queues the waiters (not the thread now
   running, which goes on by itself). */
void warp_release(unsigned w) {
    Warp &W = S.warps[w];
    unsigned b = W.round & 1;
    W.took_part[b] = W.arrived;
    W.buf_round[b] = W.round;
    unsigned wake = W.arrived;
    if (S.cur && S.cur->warp == w) wake &= ~(1u << S.cur->lane);
    for (unsigned l = 0; l < 32; l++)
        if (wake >> l & 1) push_ready(w * 32 + l);
    W.arrived = 0;
    W.round++;
}

bool warp_complete(const Warp &W) { return (W.mask & W.live & ~W.arrived) == 0; }

/* The thread returned from the kernel: it no longer holds up any barrier. */
void thread_exit(Fiber &f) {
    f.done = true;
    S.live--;
    Warp &W = S.warps[f.warp];
    W.live &= ~(1u << f.lane);
    if (W.arrived && warp_complete(W)) warp_release(f.warp);
    if (S.block_arrived && S.block_arrived == S.live) block_release();
}

void fiber_main() {
    S.body(S.arg);
    Fiber &f = *S.cur;
    thread_exit(f);
    wait_here(f);           /* never resumed: the scheduler returns its stack to the pool */
    abort();
}

/* Arrives at the warp barrier with value v in this round's buffer; returns the round once every
   non-exited lane named in mask has arrived. */
unsigned warp_arrive(Fiber &f, const char *what, unsigned mask, uint64_t v) {
    Warp &W = S.warps[f.warp];
    unsigned bit = 1u << f.lane;
    if (!(mask & bit)) fail_at(f, "%s: the mask 0x%08x does not name the calling lane %u", what, mask, f.lane);
    if (W.arrived && W.mask != mask)
        fail_at(f, "%s with mask 0x%08x while other lanes of the warp wait with mask 0x%08x (not emulated)", what, mask,
                W.mask);
    W.mask = mask;
    unsigned round = W.round;
    W.vals[round & 1][f.lane] = v;
    W.arrived |= bit;
    if (warp_complete(W)) warp_release(f.warp);
    else wait_here(f);
    return round;
}

void run_block() {
    unsigned bx = blockDim.x, bxy = blockDim.x * blockDim.y;
    S.live = S.nthreads;
    S.head = 0;
    S.count = 0;
    S.block_arrived = 0;
    S.block_waiters.clear();
    for (unsigned w = 0; w < S.warps.size(); w++) {
        Warp &W = S.warps[w];
        unsigned lanes = S.nthreads - w * 32 >= 32 ? 32 : S.nthreads - w * 32;
        W.live = lanes == 32 ? ~0u : (1u << lanes) - 1;
        W.arrived = W.mask = W.round = 0;
        W.took_part[0] = W.took_part[1] = 0;
        W.buf_round[0] = W.buf_round[1] = kNone;
    }
    for (unsigned t = 0; t < S.nthreads; t++) {
        Fiber &f = S.fibers[t];
        f.idx = uint3{t % bx, t % bxy / bx, t / bxy};
        f.warp = t / 32;
        f.lane = t % 32;
        f.done = false;
        push_ready(t);
    }
    while (S.count) {
        unsigned t = S.ring[S.head];
        S.head = (S.head + 1) % S.nthreads;
        S.count--;
        Fiber &f = S.fibers[t];
        S.cur = &f;
        threadIdx = f.idx;
        if (!f.stack) {
            f.stack = stack_get();
            ctx_init(f);
        }
        ctx_switch(S.sched, f.ctx);
        if (f.done) {
            S.pool.push_back(f.stack);
            f.stack = nullptr;
        }
    }
    S.cur = nullptr;
    if (S.live) {
        unsigned at_block = S.block_arrived, at_warp = 0;
        for (const Warp &W : S.warps) at_warp += (unsigned)__builtin_popcount(W.arrived);
        emu_fatal("%s block (%u,%u,%u) deadlocked: %u threads have not returned; %u wait at __syncthreads, %u at a "
                  "warp barrier (__syncwarp or a shuffle)", S.name, blockIdx.x, blockIdx.y, blockIdx.z, S.live,
                  at_block, at_warp);
    }
}

} // namespace

void emu_fiber_run(const char *name, dim3 grid, dim3 block, void (*body)(void *), void *arg) {
    if (S.cur || S.body) emu_fatal("%s launched from inside a kernel (not emulated)", name);
    S.name = name;
    S.body = body;
    S.arg = arg;
    S.nthreads = block.x * block.y * block.z;
    if (S.fibers.size() < S.nthreads) S.fibers.resize(S.nthreads);
    S.ring.resize(S.nthreads);
    S.warps.resize((S.nthreads + 31) / 32);
    gridDim = grid;
    blockDim = block;
    emu_device_enter();
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                blockIdx = uint3{x, y, z};
                run_block();
            }
    emu_device_leave();
    S.body = nullptr;
    S.arg = nullptr;
}

void __syncthreads(void) {
    Fiber &f = current("__syncthreads");
    if (++S.block_arrived == S.live) {     /* the last one: release the others and go on */
        block_release();
        return;
    }
    S.block_waiters.push_back((unsigned)(&f - S.fibers.data()));
    wait_here(f);
}

void __syncwarp(unsigned mask) {
    Fiber &f = current("__syncwarp");
    warp_arrive(f, "__syncwarp", mask, 0);
}

uint64_t emu_shfl(const char *what, unsigned mask, uint64_t bits, emu_shfl_kind kind, unsigned arg, int width) {
    Fiber &f = current(what);
    if (width < 1 || width > 32 || (width & (width - 1)))
        fail_at(f, "%s: width %u is not a power of 2 from 1 to 32", what, (unsigned)width);
    unsigned round = warp_arrive(f, what, mask, bits);
    const Warp &W = S.warps[f.warp];
    unsigned w = (unsigned)width, lane = f.lane, base = lane & ~(w - 1), src = lane;
    switch (kind) {     /* out of the lane's segment (of width lanes): its own value */
    case EMU_SHFL_IDX: src = base + (arg & (w - 1)); break;
    case EMU_SHFL_UP: src = arg <= lane - base ? lane - arg : lane; break;
    case EMU_SHFL_DOWN: src = arg < base + w - lane ? lane + arg : lane; break;
    case EMU_SHFL_XOR: src = (lane ^ arg) < base + w ? lane ^ arg : lane; break;
    }
    unsigned b = round & 1;
    if (W.buf_round[b] != round)
        fail_at(f, "%s: round %u's values were overwritten before this lane read them (shuffles with different "
                   "masks interleaved: not emulated)", what, round);
    if (!(W.took_part[b] >> src & 1))
        fail_at(f, "%s reads lane %u, which did not take part (exited, not in the mask 0x%08x, or beyond the block): "
                   "undefined on a GPU", what, src, mask);
    return W.vals[b][src];
}
