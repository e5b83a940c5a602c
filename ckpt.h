/* ckpt.h -- activation checkpointing for C, CUDA and HIP training code. MIT licence (see end).

   ckpt.h saves the memory that stored activations take during training. You describe your
   model as a chain of stages, each with a hand-written forward and backward callback and the
   sizes of what it produces. Give a byte budget and ckpt.h plans which activations to keep and
   which to recompute (optimally, under the cost model below), lays every buffer out in one arena,
   and runs forward and backward. Gradients are bit-identical to storing everything: recomputation
   replays the random numbers a stage drew in its first forward (Philox4x32-10).

   QUICK START
   -----------
   In exactly one C or C++ file:

       #define CKPT_IMPLEMENTATION
       #include "ckpt.h"
       #include "backends/ckpt_cpu.h"

   Other files include both headers without the macro. Then:

       ckpt_backend be; ckpt_cpu_backend_create(NULL, &be);
       ckpt_stage_desc st[N] = {0};
       for (i = 0; i < N; i++) {
           st[i].forward = my_fwd; st[i].backward = my_bwd; st[i].user = &layers[i];
           st[i].out_bytes = ...; st[i].tape_bytes = ...;   // what forward writes / backward needs
           st[i].fwd_time = 1.0; st[i].bwd_time = 2.0;      // any consistent unit (measured is best)
       }
       ckpt_chain_desc cd = {0};
       cd.stages = st; cd.n_stages = N; cd.input_bytes = ...; cd.backend = &be; cd.seed = 42;
       ckpt_chain *chain; ckpt_chain_create(&cd, &chain);
       ckpt_plan_desc pd = {0}; pd.policy = CKPT_POLICY_OPTIMAL; pd.budget = 64 << 20;
       ckpt_chain_plan(chain, &pd, NULL);                    // allocates the arena once
       for (step...) {
           const void *out; ckpt_forward(chain, x, &out);     // out = X[n], valid until backward
           ... compute loss and dout from out ...
           ckpt_backward(chain, dout, dx_or_NULL);           // accumulates parameter gradients
       }
       ckpt_chain_destroy(chain); ckpt_cpu_backend_destroy(&be);

   A forward callback reads args->in and writes args->out; it also writes args->tape: whatever
   its backward needs (the backward does NOT see the stage's output). A backward callback reads
   args->in, args->tape and args->grad_out, writes args->grad_in (NULL for stage 0 when the
   caller passed NULL), and adds its parameter gradients into memory it owns. Callbacks never
   allocate: every buffer comes from the arena. Use ckpt_layout to carve a tape into pieces.

   CONFIGURATION MACROS (define before including)
   ---------------------------------------------
   CKPT_IMPLEMENTATION     compile the implementation (core + planner + executor + RNG).
   CKPT_STATIC             make every function static (CKPT_API = static).
   CKPT_API                override the declaration prefix (default extern).
   CKPT_MALLOC(sz,u), CKPT_FREE(p,u)
                           host allocator (u is the user pointer of ckpt_allocator, may be
                           NULL). Define both or neither. A ckpt_allocator in a desc wins.
   CKPT_ASSERT(c)          internal invariant check (default assert). Never used for bad input.
   CKPT_MAX_STAGES         largest chain accepted (default 4096).
   CKPT_EXACT_SEARCH_MAX_STAGES
                           chains up to this many stages get the exact search over all
                           schedules (default 10).

   MEMORY
   ------
   The library allocates host memory (chain, plans, schedules) through the allocator in the desc,
   else CKPT_MALLOC/CKPT_FREE, else malloc/free. Device memory comes only from the backend: one
   arena per plan, allocated by ckpt_chain_plan and freed by the next plan or by
   ckpt_chain_destroy. Every buffer in it has an offset fixed at plan time, so a training step
   allocates nothing. The caller owns X[0] (the input), G[0] (the input gradient) and G[n] (the
   output gradient); the library owns everything else.

   ERRORS AND LOGGING
   ------------------
   Every fallible function returns ckpt_result: CKPT_OK (0) or a negative code, grouped in bands
   (-1.. bad arguments, -100.. planning, -200.. memory and backend, -300.. execution).
   ckpt_result_string() names a code; ckpt_result_description() explains it. When a desc has a
   log callback, each error is also reported with a message naming the field, stage or op at
   fault. ckpt_log_stderr is a ready-made callback. The library never calls exit() or abort() on
   bad input; CKPT_ASSERT guards only its own invariants.

   COST MODEL (what the planner minimises)
   ---------------------------------------
   Stages 1..n (stage i is stages[i-1]). X[i] is stage i's output (a_i = out_bytes); X[0] is the
   caller's input. Stage i has forward time f_i, backward time b_i, tape t_i, forward workspace
   wf_i and backward workspace wb_i bytes. G[i] is the gradient of X[i] (a_i bytes). X[0], G[0]
   and G[n] are the caller's and are not counted. A schedule is a sequence of:
     F(i, tape)  reads X[i-1], writes X[i] (must not be live); live bytes grow by
                 a_i + t_i + wf_i during it; T[i] stays live afterwards only if tape is set.
     B(i)        needs T[i], X[i-1], G[i]; writes G[i-1]; live bytes grow by a_{i-1} (0 for
                 i = 1) + wb_i during it; afterwards T[i], G[i] and X[i-1] are freed.
   F(n, tape) runs exactly once and ends the forward phase; X[n] is freed once the caller has it.
   B runs in order n..1. Any buffer is freed right after its last read before it is written again.
   Time is the sum of f and b over the operations; peak is the largest live byte count during
   any operation. The optimal policy minimises time with peak <= budget, ties to the smaller peak.
   A stage with CKPT_STAGE_NO_CHECKPOINT forbids a checkpoint at its input boundary: F(i) never
   runs twice from the same X[i-1] (X[i-1] must be recomputed in between).

   WRITING A BACKEND
   -----------------
   A backend is a ckpt_backend: a state pointer plus function pointers (see the struct below for
   the contract of each). alloc and free are required; everything else is optional and the
   library works without it (copies fall back to synchronous behaviour, the stream is NULL).
   backends/ckpt_cpu.h is the reference: read it first.
*/
#ifndef CKPT_H_INCLUDED
#define CKPT_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#define CKPT_VERSION_MAJOR 0
#define CKPT_VERSION_MINOR 1
#define CKPT_VERSION_PATCH 0

#ifndef CKPT_API
#ifdef CKPT_STATIC
#define CKPT_API static
#else
#define CKPT_API extern
#endif
#endif

#ifndef CKPT_MAX_STAGES
#define CKPT_MAX_STAGES 4096
#endif
#ifndef CKPT_EXACT_SEARCH_MAX_STAGES
#define CKPT_EXACT_SEARCH_MAX_STAGES 10
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* >>results ------------------------------------------------------------------------------------
   One X-macro list gives the enum, the names and the descriptions. */
#define CKPT_RESULT_LIST(X) \
    X(CKPT_OK, 0, "success") \
    X(CKPT_ERR_NULL_ARGUMENT, -1, "a required pointer argument is NULL") \
    X(CKPT_ERR_NO_STAGES, -2, "the chain has no stages (n_stages must be at least 1)") \
    X(CKPT_ERR_TOO_MANY_STAGES, -3, "the chain has more than CKPT_MAX_STAGES stages") \
    X(CKPT_ERR_MISSING_CALLBACK, -4, "a stage has no forward or backward callback") \
    X(CKPT_ERR_BAD_TIME, -5, "a stage time is negative, NaN or infinite") \
    X(CKPT_ERR_BAD_FLAGS, -6, "a stage has unknown flag bits set") \
    X(CKPT_ERR_SIZE_OVERFLOW, -7, "byte sizes overflow 64 bits when added up") \
    X(CKPT_ERR_BAD_POLICY, -8, "unknown planner policy") \
    X(CKPT_ERR_BAD_K, -9, "every-k segment length is out of range") \
    X(CKPT_ERR_BAD_BACKEND, -10, "the backend lacks a required function (alloc or free)") \
    X(CKPT_ERR_BAD_SCHEDULE, -11, "the schedule breaks a rule of the cost model") \
    X(CKPT_ERR_BAD_LAYOUT, -12, "a layout entry has a zero or non-power-of-two alignment") \
    X(CKPT_ERR_BAD_RNG_HOOKS, -13, "rng save and restore hooks must be given together, with a state size") \
    X(CKPT_ERR_NO_PLAN, -14, "the chain has no plan yet (call ckpt_chain_plan first)") \
    X(CKPT_ERR_OUT_OF_ORDER, -15, "call out of order (backward without forward, or forward twice)") \
    X(CKPT_ERR_BAD_INDEX, -16, "an index is out of range") \
    X(CKPT_ERR_INFEASIBLE, -100, "no schedule of this policy fits the budget") \
    X(CKPT_ERR_TOO_COMPLEX, -101, "the planning problem is too large for the requested policy") \
    X(CKPT_ERR_OUT_OF_HOST_MEMORY, -200, "host memory allocation failed") \
    X(CKPT_ERR_OUT_OF_DEVICE_MEMORY, -201, "device (backend) memory allocation failed") \
    X(CKPT_ERR_BACKEND, -202, "a backend operation failed") \
    X(CKPT_ERR_CALLBACK, -300, "a stage callback returned an error") \
    X(CKPT_ERR_RNG_REPLAY, -301, "a recomputation drew different random numbers than the first forward")

#define _CKPT_RESULT_ENUM(name, value, text) name = value,
typedef enum ckpt_result { CKPT_RESULT_LIST(_CKPT_RESULT_ENUM) CKPT__RESULT_FORCE_INT = 0x7fffffff } ckpt_result;

/* The code's name, e.g. "CKPT_ERR_INFEASIBLE"; "CKPT_ERR_UNKNOWN" for values not in the list. */
CKPT_API const char *ckpt_result_string(ckpt_result r);
/* One sentence that explains the code. */
CKPT_API const char *ckpt_result_description(ckpt_result r);

/* >>logging ------------------------------------------------------------------------------------ */
typedef enum ckpt_log_level { CKPT_LOG_ERROR = 0, CKPT_LOG_WARN = 1, CKPT_LOG_INFO = 2 } ckpt_log_level;

/* tag is "ckpt" (backends use their own), item the ckpt_result the message is about (CKPT_OK for
   information), message a NUL-terminated text that names what is wrong. */
typedef void (*ckpt_log_fn)(const char *tag, ckpt_log_level level, ckpt_result item,
                            const char *message, const char *file, int line, void *user);
typedef struct ckpt_logger {
    ckpt_log_fn fn;     /* NULL: silent (the default) */
    void *user;
} ckpt_logger;

/* A log callback that prints "[tag] LEVEL ITEM: message" to stderr. */
CKPT_API void ckpt_log_stderr(const char *tag, ckpt_log_level level, ckpt_result item,
                              const char *message, const char *file, int line, void *user);

/* >>memory ------------------------------------------------------------------------------------- */
typedef struct ckpt_allocator {
    void *(*alloc)(size_t bytes, void *user);  /* NULL: CKPT_MALLOC / malloc */
    void (*free)(void *ptr, void *user);       /* must be set with alloc */
    void *user;
} ckpt_allocator;

/* >>backend ------------------------------------------------------------------------------------
   The contract. Every function gets the backend's state pointer first. Required: alloc, free.
   Optional (NULL is fine): the rest. A backend reports native errors through its own logger and
   returns a ckpt_result; native error codes never cross this interface. */
typedef enum ckpt_copy_kind {
    CKPT_COPY_HOST_TO_DEVICE = 0,
    CKPT_COPY_DEVICE_TO_HOST = 1,
    CKPT_COPY_DEVICE_TO_DEVICE = 2
} ckpt_copy_kind;

typedef struct ckpt_backend {
    void *state;
    const char *name;
    /* device memory: alloc returns CKPT_ERR_OUT_OF_DEVICE_MEMORY on failure and sets *out = NULL.
       free(NULL) is a no-op. Alignment of alloc: at least CKPT_ALIGN bytes. */
    ckpt_result (*alloc)(void *state, size_t bytes, void **out);
    void (*free)(void *state, void *ptr);
    /* pinned (page-locked) host memory for offload; NULL: not supported. */
    ckpt_result (*alloc_pinned)(void *state, size_t bytes, void **out);
    void (*free_pinned)(void *state, void *ptr);
    /* copy on a stream (NULL: the compute stream); may return before the copy is done. */
    ckpt_result (*copy_async)(void *state, void *dst, const void *src, size_t bytes,
                              ckpt_copy_kind kind, void *stream);
    ckpt_result (*memset_async)(void *state, void *dst, int value, size_t bytes, void *stream);
    /* the user's compute stream, handed to callbacks in ckpt_ctx.stream (NULL on the CPU). */
    void *(*compute_stream)(void *state);
    /* wait until everything queued on the stream (NULL: all streams) has finished. */
    ckpt_result (*synchronize)(void *state, void *stream);
    /* free and total device bytes; NULL: unknown. */
    ckpt_result (*mem_info)(void *state, size_t *free_bytes, size_t *total_bytes);
    /* host-side checksum of a device buffer (for recompute checks); NULL: not supported. */
    ckpt_result (*checksum)(void *state, const void *ptr, size_t bytes, uint64_t *out);
} ckpt_backend;

#define CKPT_ALIGN 256u   /* alignment of every arena buffer */

/* >>rng ----------------------------------------------------------------------------------------
   Philox4x32-10 (Salmon et al., Random123). ckpt_philox4x32_10 is the raw block function. A
   ckpt_philox names a stream of 128-bit blocks: block j has counter (base + j) as a 64-bit number
   in words 0..1 and `subsequence` in words 2..3, key = the chain seed. */
CKPT_API void ckpt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

typedef struct ckpt_philox {
    uint64_t key;       /* the chain seed */
    uint64_t base;      /* first counter of the range */
    uint64_t count;     /* number of 128-bit blocks in the range */
} ckpt_philox;

/* Block j (0 <= j < count) of the range, as four 32-bit words. */
CKPT_API void ckpt_philox_block(const ckpt_philox *p, uint64_t j, uint32_t out[4]);
/* The k-th 32-bit word of the range (block k/4, word k%4). */
CKPT_API uint32_t ckpt_philox_u32(const ckpt_philox *p, uint64_t k);
/* Uniform float in [0,1) from word k: (word >> 8) * 2^-24. */
CKPT_API float ckpt_philox_uniform(const ckpt_philox *p, uint64_t k);
/* Fill n floats with uniforms (word i -> out[i]). Needs a range of at least ceil(n/4) blocks. */
CKPT_API void ckpt_philox_fill_uniform(const ckpt_philox *p, float *out, size_t n);
/* Dropout: out[i] = keep ? in[i] * scale : 0 with keep = uniform(i) >= p_drop, scale =
   1/(1-p_drop); mask[i] (optional) gets 1 or 0. in and out may alias. */
CKPT_API void ckpt_philox_dropout(const ckpt_philox *p, float p_drop, const float *in, float *out,
                                  uint8_t *mask, size_t n);

/* >>stages ------------------------------------------------------------------------------------- */
typedef enum ckpt_mode {
    CKPT_MODE_FORWARD = 0,      /* first forward of this step */
    CKPT_MODE_RECOMPUTE = 1,    /* a recomputation: must reproduce the first forward exactly */
    CKPT_MODE_BACKWARD = 2
} ckpt_mode;

typedef struct ckpt_chain ckpt_chain;

/* What every callback receives. Read it; the library owns it. */
typedef struct ckpt_ctx {
    ckpt_chain *chain;
    int stage;              /* 0-based stage index */
    ckpt_mode mode;
    int keep_tape;          /* forward: 1 when the tape is kept for backward, 0 when it is scratch */
    void *stream;           /* the backend's compute stream (NULL on the CPU backend) */
    void *user;             /* the stage's user pointer */
} ckpt_ctx;

/* Draws `blocks` 128-bit Philox blocks for this stage and describes them in *out. In the first
   forward the range is new; in a recomputation the same draws, in the same order, get the same
   ranges. Only valid in forward callbacks. Returns CKPT_ERR_RNG_REPLAY if a recomputation draws
   more blocks than the first forward did. */
CKPT_API ckpt_result ckpt_ctx_rng(ckpt_ctx *ctx, uint64_t blocks, ckpt_philox *out);

typedef struct ckpt_fwd_args {
    ckpt_ctx *ctx;
    const void *in;     /* X[i-1] (the caller's input for stage 0) */
    void *out;          /* X[i], out_bytes */
    void *tape;         /* tape_bytes (NULL if 0); always written, kept only if ctx->keep_tape */
    void *workspace;    /* fwd_workspace_bytes of scratch (NULL if 0) */
} ckpt_fwd_args;

typedef struct ckpt_bwd_args {
    ckpt_ctx *ctx;
    const void *in;         /* X[i-1] */
    const void *tape;       /* what the forward wrote */
    const void *grad_out;   /* G[i] */
    void *grad_in;          /* G[i-1]; NULL for stage 0 when the caller passed no input gradient */
    void *workspace;        /* bwd_workspace_bytes of scratch (NULL if 0) */
} ckpt_bwd_args;

/* Return CKPT_OK, or any negative code to abort the step (reported as CKPT_ERR_CALLBACK). */
typedef ckpt_result (*ckpt_forward_fn)(const ckpt_fwd_args *args);
typedef ckpt_result (*ckpt_backward_fn)(const ckpt_bwd_args *args);

#define CKPT_STAGE_NO_CHECKPOINT 0x1u   /* forbid a checkpoint at this stage's input boundary */

typedef struct ckpt_stage_desc {
    const char *name;               /* for messages; NULL: "stage <i>" */
    ckpt_forward_fn forward;        /* required */
    ckpt_backward_fn backward;      /* required */
    size_t out_bytes;               /* a_i */
    size_t tape_bytes;              /* t_i */
    size_t fwd_workspace_bytes;     /* wf_i */
    size_t bwd_workspace_bytes;     /* wb_i */
    double fwd_time;                /* f_i, >= 0; default 0 (all zero: every time is taken as 1, 2) */
    double bwd_time;                /* b_i, >= 0 */
    unsigned flags;                 /* CKPT_STAGE_* */
    void *user;
} ckpt_stage_desc;

/* >>planner ------------------------------------------------------------------------------------ */
typedef enum ckpt_policy {
    CKPT_POLICY_OPTIMAL = 0,    /* minimum time under the budget (the default) */
    CKPT_POLICY_STORE_ALL = 1,  /* no recomputation */
    CKPT_POLICY_EVERY_K = 2,    /* checkpoint every k-th boundary; k = 0: the best k that fits */
    CKPT_POLICY_SQRT = 3,       /* about sqrt(n) evenly spaced checkpoints */
    CKPT_POLICY_GREEDY = 4,     /* drop the boundary with most bytes saved per second of recompute */
    CKPT_POLICY_COUNT_ = 5
} ckpt_policy;

/* "optimal", "store-all", "every-k", "sqrt", "greedy"; NULL for an unknown value. */
CKPT_API const char *ckpt_policy_name(ckpt_policy p);
/* Parses those names; CKPT_ERR_BAD_POLICY for anything else. */
CKPT_API ckpt_result ckpt_policy_parse(const char *name, ckpt_policy *out);

/* One stage's costs, as the planner sees them. */
typedef struct ckpt_cost {
    double f, b;                    /* forward and backward time */
    uint64_t a, t, wf, wb;          /* output, tape, forward and backward workspace bytes */
    unsigned flags;                 /* CKPT_STAGE_* */
} ckpt_cost;

typedef struct ckpt_plan_desc {
    ckpt_policy policy;     /* default CKPT_POLICY_OPTIMAL */
    uint64_t budget;        /* peak bytes allowed; 0: no limit (store-all's peak) */
    int k;                  /* every-k segment length; 0: the best that fits */
    ckpt_logger logger;     /* for ckpt_plan_create; ckpt_chain_plan uses the chain's */
    ckpt_allocator allocator;
} ckpt_plan_desc;

typedef enum ckpt_op_kind { CKPT_OP_F = 0, CKPT_OP_B = 1 } ckpt_op_kind;

typedef struct ckpt_op {
    ckpt_op_kind kind;
    int stage;      /* 1-based, as in the cost model */
    int tape;       /* F only: keep the tape */
} ckpt_op;

typedef enum ckpt_guarantee {
    CKPT_GUARANTEE_NONE = 0,          /* a heuristic policy */
    CKPT_GUARANTEE_ALL_SCHEDULES = 1, /* optimal over every schedule of the cost model */
    CKPT_GUARANTEE_PERSISTENT = 2     /* optimal over persistent schedules (checkpoints stay
                                         until their segment is back-propagated) */
} ckpt_guarantee;

typedef struct ckpt_plan_info {
    ckpt_policy policy;
    uint64_t budget;        /* the budget planned for (resolved: never 0) */
    double time;            /* predicted time of one step (sum of f and b of the ops) */
    uint64_t peak;          /* predicted peak bytes */
    uint64_t min_budget;    /* smallest budget at which this policy finds a schedule */
    double store_all_time;  /* for reference */
    uint64_t store_all_peak;
    int k;                  /* every-k: the k used */
    uint64_t unit;          /* optimal: the memory unit the search was exact in (1 = bytes) */
    ckpt_guarantee guarantee;
    int n_ops;
    int n_recomputed;       /* F operations beyond the first forward of each stage */
} ckpt_plan_info;

typedef struct ckpt_plan ckpt_plan;

/* Plans a chain from its costs alone (no callbacks: this is what ckpt-plan uses). On success
   *out is a new plan and *out_info (if non-NULL) a copy of its info. On CKPT_ERR_INFEASIBLE *out
   is NULL and out_info (if non-NULL) still receives policy, budget, min_budget and the store-all
   figures, so the caller can say which budget would work. */
CKPT_API ckpt_result ckpt_plan_create(const ckpt_cost *costs, int n, const ckpt_plan_desc *desc,
                                      ckpt_plan **out, ckpt_plan_info *out_info);
CKPT_API void ckpt_plan_destroy(ckpt_plan *plan);
CKPT_API const ckpt_plan_info *ckpt_plan_get_info(const ckpt_plan *plan);
/* The schedule: *n_ops operations, valid until the plan is destroyed. */
CKPT_API const ckpt_op *ckpt_plan_ops(const ckpt_plan *plan, int *n_ops);

/* Replays a schedule in the cost model: checks every rule (CKPT_ERR_BAD_SCHEDULE, with the op
   index in *bad_op when non-NULL) and returns its time and peak. */
CKPT_API ckpt_result ckpt_schedule_simulate(const ckpt_cost *costs, int n, const ckpt_op *ops,
                                            int n_ops, double *time, uint64_t *peak, int *bad_op);

/* >>layout -------------------------------------------------------------------------------------
   Carve one buffer (a tape or a workspace) into aligned pieces. Fill bytes and align (a power of
   two; 0 means 16) for each entry; ckpt_layout_compute sets the offsets and the total, which is
   the size to declare. ckpt_layout_ptr gives entry i's address inside a buffer. */
typedef struct ckpt_layout_entry {
    size_t bytes;
    size_t align;
    size_t offset;      /* set by ckpt_layout_compute */
} ckpt_layout_entry;

CKPT_API ckpt_result ckpt_layout_compute(ckpt_layout_entry *entries, int n, size_t *total);
CKPT_API void *ckpt_layout_ptr(void *base, const ckpt_layout_entry *entries, int i);

/* >>chain -------------------------------------------------------------------------------------- */
typedef struct ckpt_rng_hooks {
    /* For users with their own generators: save writes the generator's state into state (of
       state_bytes); restore sets it from state. Each stage's state is saved before its first
       forward; around every recomputation the current state is saved, the stage's state
       restored, and afterwards the current state restored again. All three or none. */
    size_t state_bytes;
    void (*save)(void *state, void *user);
    void (*restore)(const void *state, void *user);
    void *user;
} ckpt_rng_hooks;

typedef struct ckpt_chain_desc {
    const ckpt_stage_desc *stages;  /* required; copied */
    int n_stages;                   /* 1..CKPT_MAX_STAGES */
    size_t input_bytes;             /* size of X[0] (informational: the caller owns it) */
    const ckpt_backend *backend;    /* required; copied */
    uint64_t seed;                  /* Philox key */
    uint64_t rng_offset;            /* first Philox counter (default 0) */
    ckpt_rng_hooks rng_hooks;
    ckpt_logger logger;
    ckpt_allocator allocator;
} ckpt_chain_desc;

CKPT_API ckpt_result ckpt_chain_create(const ckpt_chain_desc *desc, ckpt_chain **out);
/* Frees the chain, its plan and its arena. NULL is a no-op. */
CKPT_API void ckpt_chain_destroy(ckpt_chain *chain);

/* Plans the chain for desc (NULL: optimal, no budget), lays out every buffer and allocates the
   arena through the backend (replacing any previous plan and arena). info may be NULL. On
   failure the previous plan stays in place. */
CKPT_API ckpt_result ckpt_chain_plan(ckpt_chain *chain, const ckpt_plan_desc *desc, ckpt_plan_info *info);
/* Like ckpt_chain_plan, with a schedule of your own (validated by the cost model). */
CKPT_API ckpt_result ckpt_chain_set_schedule(ckpt_chain *chain, const ckpt_op *ops, int n_ops,
                                             ckpt_plan_info *info);

/* Runs the schedule up to and including F(n). *output (if non-NULL) points at X[n] in the arena,
   valid until ckpt_backward. Returns CKPT_ERR_OUT_OF_ORDER when a forward is pending. */
CKPT_API ckpt_result ckpt_forward(ckpt_chain *chain, const void *input, const void **output);
/* Runs the rest given G[n] (grad_output). grad_input (G[0]) may be NULL. After an error in
   either call the step is abandoned and the chain is ready for a new forward. */
CKPT_API ckpt_result ckpt_backward(ckpt_chain *chain, const void *grad_output, void *grad_input);
/* Abandons a forward whose backward will not run (e.g. evaluation). */
CKPT_API void ckpt_chain_reset_step(ckpt_chain *chain);

typedef struct ckpt_chain_stats {
    uint64_t planned_peak;      /* the plan's predicted peak (cost-model bytes) */
    uint64_t measured_peak;     /* largest sum of live buffer bytes seen while running */
    uint64_t arena_bytes;       /* size of the arena allocated through the backend */
    uint64_t arena_high_water;  /* highest arena byte handed to a callback, + 1 */
    uint64_t steps;             /* completed forward+backward steps */
    uint64_t ops_run;           /* operations executed */
    int failed_stage;           /* stage (0-based) of the last CKPT_ERR_CALLBACK, else -1 */
    ckpt_result failed_result;  /* what that callback returned */
} ckpt_chain_stats;

CKPT_API ckpt_result ckpt_chain_get_stats(const ckpt_chain *chain, ckpt_chain_stats *out);
/* The plan in use (NULL before ckpt_chain_plan). */
CKPT_API const ckpt_plan *ckpt_chain_get_plan(const ckpt_chain *chain);

#ifdef __cplusplus
}
#endif
#endif /* CKPT_H_INCLUDED */
