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
           st[i].fwd_time = 1.0; st[i].bwd_time = 2.0;      // any consistent unit (MEASURED TIMES)
           // optional: st[i].n_tape_options, st[i].tape_options[] (TAPE OPTIONS)
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
   Nothing the library hands a callback is zeroed: out, tape, grad_in and the workspaces hold
   whatever the arena held, so a backward that adds into grad_in (as llm.c's kernels do) must clear
   it first. A streamed stage's param_grads holds its host_grads, or zeros with
   stream_grads_overwrite (PARAMETER STREAMING).
   ckpt_forward_eval runs the forward alone for evaluation (mode CKPT_MODE_EVAL: skip dropout),
   between steps, in the same arena, consuming no random numbers.

   On a GPU, use backends/ckpt_cuda.h (or ckpt_hip.h) instead of ckpt_cpu.h for the backend: its
   implementation goes in one .cu file compiled by nvcc (CKPT_CUDA_IMPLEMENTATION), while the file
   with CKPT_IMPLEMENTATION may stay C. Callbacks launch on ckpt_ctx.stream. See that header.

   CONFIGURATION MACROS (define before including)
   ---------------------------------------------
   CKPT_IMPLEMENTATION     compile the implementation (core + planner + executor + RNG).
   CKPT_CUDA_IMPLEMENTATION, CKPT_HIP_IMPLEMENTATION
                           compile a GPU backend (backends/ckpt_cuda.h, ckpt_hip.h); only
                           nvcc / hipcc accept them.
   CKPT_STATIC             make every function static (CKPT_API = static).
   CKPT_API                override the declaration prefix (default extern).
   CKPT_MALLOC(sz,u), CKPT_FREE(p,u)
                           host allocator (u is the user pointer of ckpt_allocator, may be
                           NULL). Define both or neither. A ckpt_allocator in a desc wins.
   CKPT_ASSERT(c)          internal invariant check (default assert). Never used for bad input.
   CKPT_NO_THREADS         leave out <pthread.h>: ckpt_plan_desc.threads is then ignored (it
                           is included by default on POSIX systems; with glibc before 2.34,
                           link with -pthread).
   CKPT_HUGEPAGES          madvise(MADV_HUGEPAGE) on the planner's large tables, on Linux
                           (MEMORY): for a program that plans again and again, seconds apart.
   CKPT_MAX_STAGES         largest chain accepted (default 4096).
   CKPT_CUBIC_MAX_STAGES   longest chain the optimal and greedy policies plan (default 1024:
                           their cost grows as n^3); longer ones get CKPT_ERR_TOO_COMPLEX, and
                           every-k, sqrt and store-all still work.
   CKPT_EXACT_SEARCH_MAX_STAGES
                           chains up to this many stages get the exact search over all
                           schedules (default 10), as long as its state space (about
                           2^n x (product of 2 + n_tape_options) x 2^(stages with
                           CKPT_STAGE_NO_CHECKPOINT)) stays under 2^23 states (at most about
                           200 MB), 2^20 when a stage has tape options; beyond that the long-chain program
                           runs and the plan's guarantee says so (CKPT_GUARANTEE_PERSISTENT).
   CKPT_LAYOUT_WORK        the arena layout's search effort (default 5e5): at most
                           CKPT_LAYOUT_WORK / (buffers) orders of placement per layout, tried
                           only while the arena is over both the peak and the budget (the host
                           budget for a pinned pool; none without a budget, down to the peak
                           for a schedule given to ckpt_chain_set_schedule): COST MODEL. It
                           costs most near a long chain's smallest peak, where layouts that
                           never fit run it to the end at each step of the descent: up to
                           0.75 s more per ckpt_plan_create on chains of 50-400 stages
                           (bench/RESULTS.md, plan_bench --near-min). 0 turns the search off.

   MEMORY
   ------
   The library allocates host memory (chain, plans, schedules) through the allocator in the desc,
   else CKPT_MALLOC/CKPT_FREE, else malloc/free (from several threads at once when planning with
   ckpt_plan_desc.threads > 1: COST MODEL). The long-chain program's large tables (hundreds of MB
   for hundreds of distinct stages, of which the fill writes about half, >>packed: 180 MB peak
   RSS for 400 at 500 units) take the system's default pages. With CKPT_HUGEPAGES defined they
   ask Linux for 2 MiB pages (madvise MADV_HUGEPAGE, >>hugepages), when they come from malloc
   (no allocator in the desc, no CKPT_MALLOC) and <sys/mman.h> declares MADV_HUGEPAGE (glibc's
   does unless the file is strict ISO C: -std=c11 without _DEFAULT_SOURCE or _GNU_SOURCE). On
   the developers' AMD VM that is slower for a process's first call, and a little faster for
   calls a few seconds apart: 400 distinct stages at 500 units took 804-974 ms with it and
   647-717 without on a first call, 571-717 and 639-709 on a second (2026-11-28,
   bench/RESULTS.md).
   Device memory comes only from the backend: one arena per plan, allocated by ckpt_chain_plan
   and freed by the next plan or by ckpt_chain_destroy. Every buffer in it has an offset fixed at
   plan time, so a training step allocates nothing. The caller owns X[0] (the input), G[0] (the
   input gradient) and G[n] (the output gradient); the library owns everything else.
   Replacing a plan plans first, so a planning error changes nothing; then it frees the old arena
   (and pinned pool) before allocating the new one, so the two are never held together. If that
   allocation fails, the chain has no plan (ckpt_forward returns CKPT_ERR_NO_PLAN) until a plan
   succeeds. ckpt_plan_desc.keep_old_on_failure = 1 allocates the new arena first instead and
   keeps the old plan when that fails, at the cost of both arenas at once.
   ckpt_chain_plan_dry plans like ckpt_chain_plan and returns the same info, allocating no arena
   and installing nothing: to size a budget (info.store_all_peak / 3 for a third of store-all's
   peak, info.arena) before any arena exists.

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
   and G[n] are the caller's and are not counted. Every size counts rounded up to CKPT_ALIGN (each
   buffer takes that much of the arena), and when every stage time is 0 the times are taken as
   f = 1, b = 2; every entry point (ckpt_plan_create, ckpt_chain_plan, the simulators) sees the
   costs so. A schedule is a sequence of:
     F(i, tape)  reads X[i-1], writes X[i] (must not be live); live bytes grow by
                 a_i + t_i + wf_i during it; T[i] stays live afterwards only if tape is set.
     B(i)        needs T[i], X[i-1], G[i]; writes G[i-1]; live bytes grow by a_{i-1} (0 for
                 i = 1) + wb_i during it; afterwards T[i], G[i] and X[i-1] are freed.
   F(n, tape) runs exactly once and ends the forward phase; X[n] is freed after it: its bytes
   stay untouched until the caller calls ckpt_backward, whose ops may reuse them (so G[n] must not
   live in X[n]'s memory; copy it out first).
   B runs in order n..1. Any buffer is freed right after its last read before it is written again.
   Time is the sum of f and b over the operations; peak is the largest live byte count during
   any operation. Times must be finite and >= 0, and all of them together at most
   DBL_MAX / (4 (n + 1)), so that no schedule's time overflows (else CKPT_ERR_BAD_TIME). The
   optimal policy minimises time with peak <= budget, ties to the smaller peak: over all schedules
   up to CKPT_EXACT_SEARCH_MAX_STAGES stages, over the class CKPT_GUARANTEE_PERSISTENT describes
   beyond. There it plans every-k's best k first, and from it a plan whose last segment (not
   recomputed) starts as early as fits (>>two-level); the long-chain program then computes
   exactly only what could be as fast as the faster of the two (>>bound), and optimal returns
   that plan when the program has none as fast.
   The arena: every buffer gets an offset where it overlaps no buffer live at the same time; that
   layout can need more than the peak (info.arena >= info.peak). While it is over both the peak
   and the budget, the layout tries other orders of placing the buffers (CKPT_LAYOUT_WORK). When
   the plan's arena still exceeds the budget (or its pinned pool the host budget), the policy
   plans again for a budget lowered by the excess (optimal without offload: first, in the exact
   search, the plan's own peak, where an equally fast schedule may lay out smaller, then a byte
   below it), down to its smallest peak, until the arena fits: info.fit_budget is the budget it
   finally planned for, and its guarantee holds there. min_budget is a budget from which every
   larger one plans: the smallest peak, or the arena of a plan at that peak when it needs more,
   laid out without the search (so an infeasible budget reports the same min_budget whatever it
   is; a budget that plans reports the smaller of that and itself).
   Beyond the exact search that plan keeps each sub-problem at its own smallest peak (>>floor),
   not the fastest plan at that peak, which takes far longer to find; where its arena is the
   smaller of the two and only it fits, it is the plan returned, with guarantee
   CKPT_GUARANTEE_NONE. A budget below min_budget may still plan, where the search fits a plan's
   arena or a plan of larger peak has a smaller arena.
   A stage with CKPT_STAGE_NO_CHECKPOINT forbids a checkpoint at its input boundary: F(i) never
   runs twice from the same X[i-1] (X[i-1] must be recomputed in between).
   Planning threads: with ckpt_plan_desc.threads > 1 the long-chain program (chains beyond the
   exact search) runs on that many threads, the caller among them, at most one per 16 stages or
   part of them (2 for 17 to 32 stages); they start within each planning call and end before it
   returns. The plan and its info are the same for every count. Its sparse frontiers (the fastest
   plan at the smallest peak, and any plan whose dense table would not fit) then allocate host
   memory from those threads, so the allocator must be thread-safe (malloc is). Without POSIX
   threads, or with CKPT_NO_THREADS, the caller plans alone.

   TAPE OPTIONS (selective recomputation inside a stage)
   ------------
   A stage may offer up to CKPT_MAX_TAPE_OPTIONS ways to keep its tape: option 0 is tape_bytes
   with bwd_time; options 1..n_tape_options (ckpt_stage_desc.tape_options) each keep tape_bytes
   of their own and make the backward bwd_extra slower, for what they leave out and recompute
   there. Examples: keep the attention probabilities, or only q and k and recompute softmax(q k^T)
   in backward (Megatron's selective recompute); keep GELU's output, or only its input (llm.c's
   -r 1). In the cost model F(i, tape) names an option o (ckpt_op.option): live bytes grow by
   a_i + t_i(o) + wf_i and T[i] keeps t_i(o) bytes; B(i) takes b_i + extra_i(o) for the option of
   the F that kept T[i]. An F without tape runs the stage's scratch option, the one with the
   smallest tape (the lowest index among equal ones), whatever its op.option says. Workspaces
   are per stage: size them for the option that needs most.
   The optimal policy chooses an option for every F that keeps a tape jointly with what to
   recompute, in the exact search and in the long-chain program alike; so does offload, which
   starts from optimal's plans. store-all, every-k, sqrt and greedy keep every tape in option 0
   (store-all's figures in ckpt_plan_info are option 0's). The chosen option is in each F op of
   ckpt_plan_ops and, in the callbacks, in ckpt_ctx.tape_option: the forward writes that
   option's tape (args->tape has its size) and the backward reads the tape of the option it is
   given. The contract: a stage's forward output, and the random numbers it draws, must not
   depend on the option (only what it keeps does), and every option's backward must compute the
   same gradients bit for bit; then gradients are bit-identical to store-all's whatever the plan
   chooses. Times measured by ckpt_chain_measure include the option's extra in bwd_time; it says
   which option ran (ckpt_stage_time.bwd_option), and ckpt_chain_set_times takes that option's
   bwd_extra off again. The extras themselves are the caller's: time what an option recomputes
   (examples/mlp_cpu.c times each option's recomputation alone at start-up).

   OFFLOAD (the offload policy; ckpt_plan_desc.bandwidth, bandwidth_h2d, host_budget)
   -------
   Three more operations move a buffer between device memory and the pinned host pool. The
   buffer is X[i] (op.tape = 0, 1 <= i <= n-1) or T[i] (op.tape = 1, 1 <= i <= n):
     O(i)  copies it to the host. It must be live on the device and not already offloaded; it
           stays readable there until released (below). Host bytes grow by its size from this op
           until the first read of the copy P(i) brings back.
     P(i)  brings it back: a new device copy, live from this op. Needs an earlier O(i) of the
           same buffer; the old device copy, if not yet released, is released at the op before.
           (The host copy stops counting at P itself when nothing reads the buffer after it.)
     W(i)  waits for O(i)'s copy and releases the device copy: compute waits until the copy is
           done (time for memory). Between an O(i) and its P(i), at most once; nothing may read
           the device copy after it (no F(i+1) for X[i]).
   Between O(i) and its P(i), nothing may rewrite or consume the buffer: no F(i) (for X[i]; for
   T[i] no F(i, tape)), no B(i+1) (X[i]) or B(i) (T[i]). Every O has its P. An O of a buffer that
   a P brought back copies only once that P's copy is done; when nothing reads what a P brings
   back, the compute op after it waits for that copy.
   Time: compute runs the F and B ops in schedule order. Each direction of the link is a channel
   that runs one copy at a time, in schedule order, at its bandwidth (bytes per unit of the stage
   times). O's copy starts when compute has finished the ops before it and the device-to-host
   channel is free. P's copy starts when compute has finished the ops before it, the
   host-to-device channel is free and its O's copy is done. A compute op that reads a prefetched
   buffer first starts only when that copy is done. The predicted time is the makespan: the end
   of the last compute op or copy.
   W(i) is a compute-side wait: compute (and so every copy issued after it) resumes when O(i)'s
   copy is done.
   Memory: an offloaded device copy is released once it has no more reads before its P and its
   copy is done by the time the next compute op would start (it counts up to the op before);
   otherwise it counts until the op before its W, or without a W until the op before its P (and
   the next compute op waits for the copy). peak counts device bytes during every op, O, P and
   W included; host_peak counts the pinned pool.
   The planner: recompute-only plans made for budgets from the given one up to store-all's peak
   (optimal's at the budget; the long-chain program's at eight budgets above it, all from one
   table in a thousandth of the lowest, or coarser where that table would not fit in memory),
   each brought under the budget by offloading buffers idle across its peak (copies that fit in
   the compute of their gap first, then the largest) and, when no idle buffer is left, by a W
   for the offloaded buffer whose copy ends first, just before the op over the budget; every P is
   then moved as early as the budgets allow; the fastest wins (ties: the smaller device peak). It
   is never predicted slower than optimal at the same budget: that plan is one of the
   candidates, and when the arena rule of COST MODEL lowers the budget, optimal's own fitted plan
   is taken if faster, or when the offload policy finds no plan that fits. On some chains it also
   plans below optimal's min_budget. It is a heuristic: no optimality guarantee. Its min_budget
   is the smaller of optimal's and the offload policy's own, found as optimal's is (COST MODEL's
   arena paragraph) from its plan at the smallest budget it plans for, with no pinned pool; or
   the budget itself, when smaller and planned. It is an upper bound of the offload policy's true
   minimum. It takes longer to plan than optimal: on the developers' VM, 400 distinct stages at
   max_units 500 took 7.1-7.5 s, and 400 stages of a repeated block 4.3 s (bench/RESULTS.md). With
   microbatches, each of the k lanes has its own pool and the planner gives each a k-th of
   host_budget (rounded down to CKPT_ALIGN).

   PARAMETER STREAMING AND MICROBATCHES
   ------------------------------------
   A stage whose parameters do not fit on the device next to everything else sets host_params
   and param_bytes in its desc (and host_grads for float gradients). Its callbacks then get
   args->params, a device copy, and the backward also args->param_grads, a device buffer that
   holds the stage's host_grads on entry (zeros with stream_grads_overwrite, below): the callback
   ADDS its gradients into it. With
   L = ckpt_chain_desc.stream_lookahead (0 means 1; at most CKPT_MAX_STREAM_LOOKAHEAD), the chain
   keeps L + 1 parameter slots and L + 1 gradient slots of the largest param_bytes on the device
   (ckpt_chain_stats.slot_bytes; outside the plan's budget, which covers activations). While op
   k runs, the parameters of the next L F or B ops' stages load on the host-to-device copy
   stream, in the order those ops come, into slots that no op from k on needs (and, for each of
   them that is a B op, its stage's host_grads into the gradient slot it will take, after that
   slot's last copy back); an op waits only for its own loads. A slot that already holds the
   stage is reused, so F(i) followed by B(i) loads once. With L = 1 the link idles between two
   loads until the next op starts; a larger L queues loads back to back, which matters when the
   copies, not compute, bound the step. After a B op the gradient slot is
   copied straight back into host_grads on the device-to-host stream: the host neither waits
   nor adds anything during a step, and host_grads is complete when ckpt_backward returns
   (host_grads, like host_params, should be pinned on a GPU; stages' host_grads must not
   overlap: CKPT_ERR_BAD_ARGUMENT at ckpt_chain_create). After a failed backward no copy is in
   flight: host_grads of each stage whose B op completed holds its gradient added (unless
   copying it back is what failed), the others are unchanged; zero them all before retrying the
   step. Each forward starts with empty slots: the host parameters may have changed since the
   last step. Its backward keeps them, and the forward's last ops already load parameters for
   the backward's first (host_params must not change between ckpt_forward and ckpt_backward:
   the recomputations and gradients need the forward's); host_grads load only in the backward,
   so the host may zero them between the two calls, unless ckpt_chain_desc.stream_grads_early
   = 1 promises it will not: then the forward's last ops load the backward's first host_grads
   too, and the backward's first B op need not wait for its own (at 2 GB/s on the CPU copy
   engine that saves one load's time per step: bench/RESULTS.md). A host that zeroes host_grads
   before every step can set ckpt_chain_desc.stream_grads_overwrite = 1 instead: the step's
   gradients then replace what host_grads held, each B op's gradient slot is zeroed on the
   device (the backend's memset_async, on the compute stream) rather than loaded, and no
   host_grads load crosses the link (after a failed backward, host_grads of each stage whose B
   op completed holds its gradient alone, unless copying it back is what failed). The gradients
   are the same bits as loading zeroed host_grads (on an H200, examples/mlp_cuda's streamed
   store-all step at 512 rows went from 12.8 to 8.7 ms: bench/RESULTS.md). The CPU backend's
   memset_async zeroes on the calling thread: there the flag gave 0.69-0.75 of the step where
   the copy engine's link bounds it, and was 1-6% slower where compute does
   (bench/offload_cpu_bench, bench/RESULTS.md). Where this manual says a step adds
   parameter gradients (measured and traced steps, a failed step), a streamed stage's host_grads
   then get that step's gradients in place of what they held; a backend without memset_async is
   refused (CKPT_ERR_BAD_ARGUMENT at ckpt_chain_create).
   ckpt_chain_desc.microbatches = k gives the chain k lanes: ckpt_forward_microbatches and
   ckpt_backward_microbatches run every op for microbatches 0..k-1 before the next op, each in
   its own copy of the arena (arena_bytes is k times one lane; plans and peaks are per lane),
   so a streamed stage's parameters are loaded once per op for all k: with store-all, once in
   the forward and at most once in the backward. Each lane draws its own random numbers and replays them in
   its recomputations. The k lanes of a B op add into one gradient slot (lane 0 first), which
   is copied back into host_grads once. ckpt_split_by_bytes and ckpt_split_segments group
   layers into stages.

   GRADIENT-READY HOOK (data parallel)
   -------------------
   ckpt_chain_desc.grads_ready, when set, is called once per stage per step, as soon as that
   stage's parameter gradients are final: right after its B op (a stage has one per step) has
   run for every microbatch lane, so in backward order n-1..0, while the stages before it still
   run their backward. It gets the stage, the compute stream (queue work after the backward
   there, e.g. ncclAllReduce ordered by an event, or MPI_Iallreduce on host data) and whether the
   gradients are in host_grads (a streamed stage: the chain waits for that stage's copy back
   before the call, the one host wait it adds) or on the device where the callback keeps them.
   Stages with CKPT_STAGE_NO_PARAMS get no call. A hook that returns an error fails the step
   with CKPT_ERR_GRADS_READY (the step is abandoned as after a failed callback; the next one
   runs normally). Not with graphs (refused at create). The hook must not call the chain.

   MEASURED TIMES
   --------------
   The planner is as good as the stage times it is given. ckpt_chain_measure runs real steps
   under the plan in use and reports each stage's median forward and backward time in ms (the
   backward in the tape option the plan kept, see TAPE OPTIONS);
   ckpt_chain_set_times gives them to the chain, and the next ckpt_chain_plan plans with them:

       ckpt_stage_time t[N];
       ckpt_chain_plan(chain, &pd, NULL);                 // any plan that fits (store-all need not)
       ckpt_chain_measure(chain, x, dout, dx, 1, NULL);   // a warm-up step, untimed
       ckpt_chain_measure(chain, x, dout, dx, 3, t);      // 3 timed steps
       ckpt_chain_set_times(chain, t);
       ckpt_chain_plan(chain, &pd, &info);                // planned with the measured times
       ... zero the parameter gradients, or count the 4 steps as training ...

   What is timed: each forward and backward callback, and nothing else. Every call is a sample:
   first forwards and recomputations alike, and with k microbatches each lane's call (the times
   are per microbatch, as the planner's are per lane); a stage's time is the median of its
   samples, so a stray slow call (a page fault, a preempted thread) does not move it. Waits for
   copies (prefetches, parameter and gradient loads), RNG hooks and the library's own
   work fall outside. The clock: when the backend's compute_stream returns a stream and it has
   every event entry (CUDA, HIP), an event recorded on the compute stream before and after each
   callback, read after the step: kernels are timed where they run, and a wait queued on the
   stream before the callback does not count. Otherwise (the CPU backend, whose callbacks are done
   when they return) the host clock around each call: CLOCK_MONOTONIC where <time.h> declares it
   (POSIX builds), else C11's timespec_get(TIME_UTC), a wall clock.
   What it costs: each measuring step is a full training step under the plan in use (its
   recomputations included) plus two clock reads or event records per callback, an event
   synchronize per step, host memory for steps x (F and B ops x lanes) samples of 16 bytes and,
   with events, two events per callback of one step, created and destroyed by the call. One
   warm-up and three timed steps is a good default (more on a noisy machine); callbacks shorter
   than about 10 microseconds measure the clock as much as the work. The steps are real: they add
   parameter gradients (and write grad_input), advance the random-number stream and count in
   ckpt_chain_stats.steps, as ckpt_forward and ckpt_backward would; the steps after them are
   exactly what they would be after as many ordinary steps.

   STEP TIMELINE
   -------------
   ckpt_chain_trace runs one real step under the plan in use, like a timed step of
   ckpt_chain_measure (the same arguments; it adds parameter gradients, writes grad_input, draws
   random numbers and counts in ckpt_chain_stats.steps; with graphs its callbacks run, no graph),
   and records what ran where, from the step's start, in ms:

       ckpt_trace tr;
       ckpt_chain_trace(chain, x, dout, dx, &tr);         // one step
       ckpt_trace_json(&tr, NULL, 0, &len);               // size, then fill a buffer of len + 1
       ckpt_trace_json(&tr, buf, len + 1, &len);          // write buf to step.json
       ckpt_trace_free(&tr);

   Lanes: compute (every F and B callback, once per microbatch lane, and every W: from compute
   reaching it to the copy it waits for being done), host-to-device (every P, per lane; a
   streamed stage's parameter loads and host_grads loads, once per op for all lanes; with
   stream_grads_overwrite no host_grads loads, and the zeroing of a gradient slot is no event) and
   device-to-host (every O, per lane; gradient stores into host_grads). A callback's span is the
   callback alone, as in MEASURED TIMES; a copy's starts when its stream reaches it (after the
   waits queued before it) and ends when it is done. Compute waiting for a prefetch or a load is
   a gap. The clock: when the backend has every event entry (event_create, _destroy, _record,
   _synchronize, event_elapsed_ms: CUDA, HIP, CPU), an event recorded before and after each span
   on the stream the work goes to (a copy stream, or the compute stream), read after the step
   against one recorded on the compute stream at its start (floats: about 7 significant digits).
   The CPU backend's events take ckpt_cpu_now_ms (its wall clock) when the caller records them
   and, for its copy engine (copy_engine = 1), when the copy thread reaches them: engine copies
   are timed where they run, throttle included. Without its engine, copies run in the call and
   are timed around it. A backend without events gets the host clock around each call (on an
   asynchronous backend that times the calls, not the work); ckpt_trace.events_clock says which.
   Cost: a step, two backend events for every span the step may record (created and destroyed by
   the call), a synchronize at the end, and 56 bytes of host memory per trace event.
   ckpt_trace_predict gives the same timeline as the cost model predicts it for a schedule (one
   lane, no streaming; copies on the OFFLOAD channels), and ckpt-plan --trace FILE writes it for
   the plan it prints. ckpt_trace_json writes Chrome trace-event JSON that chrome://tracing and
   ui.perfetto.dev open: tid 0, 1, 2 are the lanes, names as in profiler ranges ("F3+ attn",
   "B3 attn", "O T3", "load params 3 attn"), args the stage, option and microbatch; pid 1 is a
   measurement, 2 a prediction, so that the traceEvents of the two files can be joined into one
   and compared lane by lane.

   RECOMPUTE CHECK (ckpt_chain_desc.check_recompute = 1)
   ---------------
   Bit-identical gradients need every recomputation to write what the first forward wrote. A
   forward that depends on state changing between calls (BatchNorm's running statistics updated
   in forward, an unseeded or global RNG, a counter) breaks that silently. With check_recompute,
   in the first forward of every step the chain takes the backend's checksum (>>checksum) of
   each X[i] an F op writes (but X[n]: F(n) runs once) and of its tape T[i], per microbatch lane;
   every recomputation of F(i) compares X[i] with it, and T[i] when it keeps its tape in the
   option the first forward ran (a first forward that keeps no tape runs the scratch option: see
   TAPE OPTIONS; a tape recomputed in another option holds other bytes and is not compared). The
   first difference fails the step with CKPT_ERR_RECOMPUTE_MISMATCH; the log names the stage
   (0-based index and name), the lane, the buffer as "X[i]" or "T[i]" (1-based, as in COST MODEL)
   and both checksums in hex. The step is abandoned as after any execution error (the chain is
   ready for the next forward; parameter gradients the step's B ops already added stay added:
   zero them before retrying). ckpt_chain_stats.recompute_checks counts the comparisons.
   Not checked: buffers that P ops bring back (a copy, not a recomputation), X[n], a tape
   recomputed without being kept or in another option, workspaces, backward callbacks, and
   ckpt_forward_eval. The sums cover out_bytes and the option's tape bytes exactly, so a forward
   must write its whole tape, as the callback contract asks (args->tape), or the check sees the
   stale bytes as a difference.
   Cost: a checksum pass over X[i] and T[i] of every first forward (X[n] aside) and over X[i],
   and T[i] when compared, of every recomputation; each waits for the compute stream (the host
   reads the sum); 20 bytes of host memory per stage and lane, allocated at ckpt_chain_create. On
   the CPU backend the checksum runs FNV-1a over four chunks at once (about 0.35 ns a byte): on
   examples/mlp_cpu it made store-all's steps about 21% slower and an optimal plan's at 0.4 of
   the memory about 11% (noisy medians, bench/RESULTS.md); on an H200, examples/mlp_cuda's steps
   at 32,768 rows were 2.5-6.7% slower (one run each). Use it to find a stage at fault, not
   in every run.
   Needs the backend's checksum (CPU, CUDA and HIP have it) and no graphs: either lack is
   CKPT_ERR_BAD_ARGUMENT at ckpt_chain_create.

   CUDA GRAPHS (ckpt_chain_desc.graphs = 1)
   -----------
   Every buffer has an address fixed by the plan, so a sweep can be captured once into a CUDA
   graph and replayed: the first ckpt_forward captures the forward's ops (the callbacks run and
   their kernels, the copies and the events are recorded) and launches the graph; the first
   ckpt_backward does the same for the backward's ops. Later steps launch the two graphs without
   calling a callback: one launch replaces a step's hundreds, which pays where launches take
   longer than the kernels (small batches). The caller's work between them (the loss) stays
   outside. A graph is captured again at the next step when the plan changes (ckpt_chain_plan,
   ckpt_chain_set_schedule), when a sweep gets another input pointer (X[0] of any lane) or, for
   the backward, another G[n] or G[0] pointer, and after any failed step. Callbacks therefore
   run only in capture steps: they must launch everything on ckpt_ctx.stream and keep every
   pointer they use fixed. A backward may use only what its forward left on the device (its
   tape, its output) and the range ckpt_ctx_rng gives it, never host state a forward callback
   set: the backward alone is captured again (new G pointers) after a replayed forward whose
   callbacks did not run. Callbacks must not wait on the host (cudaStreamSynchronize,
   cudaEventSynchronize or cudaEventQuery on captured work, a synchronous cudaMemcpy: the capture,
   and so the step, fails); the capture is relaxed, so a lazy cudaMalloc, say cuBLAS's
   workspace, is allowed (and the graph keeps using that memory). ckpt_chain_measure's timed steps
   (times non-NULL) run the callbacks without graphs, so that they can be timed, and leave the
   graphs in place; its untimed warm-up steps use them. ckpt_forward_eval never uses graphs.
   Random numbers: a graph replays the kernels' arguments as captured, so the Philox ranges of the
   capture step. ckpt_ctx_rng therefore gives, during a capture, ckpt_philox.delta: a device
   pointer to a 64-bit offset that each launch sets (in stream order) to this step's first counter
   less the capturing step's. Kernels MUST compute their counters with ckpt_philox_at or
   ckpt_philox_counter (the backend's philox kernels do); then a replay draws exactly what a step
   without graphs draws, and gradients are bit-identical. The host counter advances on replay as
   it would after the callbacks ran (a plan's draws per step are fixed).
   Limits: the backend needs graph_begin, graph_end, graph_launch and graph_destroy (CUDA and HIP
   have them; the CPU backend has not: CKPT_ERR_BAD_ARGUMENT at ckpt_chain_create), and the CUDA
   backend a compute stream of its own (ckpt_cuda_desc.stream; the legacy default stream cannot
   be captured: the first step fails with CKPT_ERR_BAD_ARGUMENT). Parameter streaming
   (host_params) and rng_hooks are refused at create (CKPT_ERR_BAD_ARGUMENT). Copies of an
   offloading plan are inside the graphs; the forward's graph ends by joining the copy streams
   into the compute stream, so its offloads are done when the backward's graph starts.
   ckpt_chain_stats.graph_captures and graph_replays count the sweeps captured and replayed (a
   capture whose launch failed included). Replayed sweeps call no range_push, range_pop or
   compute_stream: profiler ranges show only in capture steps. Capturing a sweep again first
   synchronizes the streams (the old graph may still run), the one synchronize inside a step.

   WRITING A BACKEND
   -----------------
   A backend is a ckpt_backend: a state pointer plus function pointers (see the struct below for
   the contract of each). alloc and free are required; everything else is optional and the
   library works without it (copies fall back to synchronous behaviour, the stream is NULL).
   backends/ckpt_cpu.h is the reference: read it first. What the core calls, and when:
     alloc           once per ckpt_chain_plan / ckpt_chain_set_schedule that planned, for the arena
                     (its size is ckpt_chain_stats.arena_bytes), after the old arena is freed
                     (see MEMORY). Never in ckpt_chain_plan_dry.
                     Also at ckpt_chain_create when a stage streams its parameters: stream_lookahead
                     + 1 parameter slots and, with host_grads, as many gradient slots
                     (ckpt_chain_stats.slot_bytes).
     free            on that arena when a new plan replaces it (before the new arena is
                     allocated, or after with keep_old_on_failure) and in ckpt_chain_destroy.
     compute_stream  before every callback; the result goes to ckpt_ctx.stream.
     synchronize     (stream NULL) at the end of every ckpt_backward, so that gradients are
                     complete when it returns; an error there fails the step.
     range_push/pop  around every scheduled operation, when set, with a label such as "F3+ attn"
                     (forward of stage 3 keeping its tape), "F3+/1 attn" (keeping tape option 1),
                     "F3 attn" (tape not kept), "B3 attn", "O X3" or "P T3" (offload or prefetch of
                     boundary 3 or tape 3), "W T3" (compute waits for that copy).
     alloc_pinned, free_pinned
                     once per plan that offloads, for the pinned pool (ckpt_chain_stats.pool_bytes,
                     freed and allocated with the arena).
     copy_async      for every O and P op, every parameter load, gradient load and copy back; on
                     copy_stream(kind) when the backend has copy streams and events, else on the
                     compute stream (NULL) in order.
     copy_stream, event_create/destroy/record, stream_wait_event, event_synchronize
                     to order those copies against compute (see OFFLOAD and PARAMETER STREAMING);
                     all of them, or copies run on the compute stream.
     event_elapsed_ms
                     by ckpt_chain_measure, with compute_stream and the other event entries, to
                     time callbacks on the compute stream (MEASURED TIMES), and by
                     ckpt_chain_trace, with the other event entries, to time callbacks and
                     copies on their streams (STEP TIMELINE).
     synchronize     also when a forward is abandoned (ckpt_chain_reset_step, an error), when a
                     plan is replaced while copies may be in flight, and before a graph sweep is
                     captured again.
     graph_begin, graph_end, graph_launch, graph_destroy
                     only for chains with ckpt_chain_desc.graphs (CUDA GRAPHS): begin and end
                     around the ops of a sweep being captured, launch for every sweep of a graph
                     (the capturing one too, since capture only records), destroy when a graph
                     is captured again or the plan or chain goes.
   memset_async, mem_info and checksum are for users' own code, and the chain's own in two
   options: memset_async with ckpt_chain_desc.stream_grads_overwrite (a gradient slot before
   each streamed B op, on the compute stream), checksum with check_recompute (RECOMPUTE CHECK:
   after every F op, on X[i] and T[i]). backends/ckpt_cuda.h and backends/ckpt_hip.h implement
   every entry on the GPU. The backend must outlive every chain that uses it; the chain copies
   the struct, not the state.
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
#if defined(__GNUC__) || defined(__clang__)
#define CKPT_API static __attribute__((unused))   /* uncalled functions are no warning */
#else
#define CKPT_API static
#endif
#else
#define CKPT_API extern
#endif
#endif

#ifndef CKPT_MAX_STAGES
#define CKPT_MAX_STAGES 4096
#endif
#define CKPT_MAX_STREAM_LOOKAHEAD 8     /* ckpt_chain_desc.stream_lookahead's largest value */
#define CKPT_MAX_OPS 715827882          /* the most ops a schedule may have: (2^31 - 2) / 3, as its
                                           buffers (up to 3 per op) are counted in an int */
#ifndef CKPT_EXACT_SEARCH_MAX_STAGES
#define CKPT_EXACT_SEARCH_MAX_STAGES 10
#endif
#ifndef CKPT_CUBIC_MAX_STAGES
#define CKPT_CUBIC_MAX_STAGES 1024
#endif
#ifndef CKPT_LAYOUT_WORK     /* the arena layout's local search: at most this / n_bufs orders */
#define CKPT_LAYOUT_WORK 5e5
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
    X(CKPT_ERR_BAD_TIME, -5, "a stage time is negative, NaN or infinite, or the times add up past what a double holds") \
    X(CKPT_ERR_BAD_FLAGS, -6, "a stage has unknown flag bits set") \
    X(CKPT_ERR_SIZE_OVERFLOW, -7, "byte sizes add up to more than 2^56 bytes, or the arena to more than SIZE_MAX") \
    X(CKPT_ERR_BAD_POLICY, -8, "unknown planner policy") \
    X(CKPT_ERR_BAD_K, -9, "every-k segment length is out of range") \
    X(CKPT_ERR_BAD_BACKEND, -10, "the backend lacks a required function (alloc or free)") \
    X(CKPT_ERR_BAD_SCHEDULE, -11, "the schedule breaks a rule of the cost model") \
    X(CKPT_ERR_BAD_LAYOUT, -12, "a layout entry has a zero or non-power-of-two alignment") \
    X(CKPT_ERR_BAD_RNG_HOOKS, -13, "rng save and restore hooks must be given together, with a state size") \
    X(CKPT_ERR_NO_PLAN, -14, "the chain has no plan yet (call ckpt_chain_plan first)") \
    X(CKPT_ERR_OUT_OF_ORDER, -15, "call out of order (backward without forward, or forward twice)") \
    X(CKPT_ERR_BAD_INDEX, -16, "an index is out of range") \
    X(CKPT_ERR_BAD_ARGUMENT, -17, "an argument's value is out of its range (see the log for which)") \
    X(CKPT_ERR_INFEASIBLE, -100, "no schedule of this policy fits the budget") \
    X(CKPT_ERR_TOO_COMPLEX, -101, "the planning problem is too large for the requested policy") \
    X(CKPT_ERR_OUT_OF_HOST_MEMORY, -200, "host memory allocation failed") \
    X(CKPT_ERR_OUT_OF_DEVICE_MEMORY, -201, "device (backend) memory allocation failed") \
    X(CKPT_ERR_BACKEND, -202, "a backend operation failed") \
    X(CKPT_ERR_NO_DEVICE, -203, "no usable GPU: no device, or no driver for it") \
    X(CKPT_ERR_CALLBACK, -300, "a stage callback returned an error") \
    X(CKPT_ERR_RNG_REPLAY, -301, "a recomputation drew different random numbers than the first forward") \
    X(CKPT_ERR_RECOMPUTE_MISMATCH, -302, "a recomputation wrote a different output or tape than the first forward (ckpt_chain_desc.check_recompute)") \
    X(CKPT_ERR_GRADS_READY, -303, "the chain's grads_ready hook returned an error")

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
    /* ckpt_checksum of a device buffer, after the work queued on the compute stream; NULL: not
       supported. */
    ckpt_result (*checksum)(void *state, const void *ptr, size_t bytes, uint64_t *out);
    /* The backend's own copy stream for one direction (host-to-device or device-to-host), so that
       copies overlap with compute; NULL (or returning NULL): copies go to the compute stream. */
    void *(*copy_stream)(void *state, ckpt_copy_kind kind);
    /* Events, for ordering streams and timing. event_create makes one (*out); event_record
       records it on a stream (NULL: compute); stream_wait_event makes later work on `stream` wait
       for the last record; event_synchronize blocks the host until that record has completed;
       event_elapsed_ms gives the milliseconds between two completed records. All or none. */
    ckpt_result (*event_create)(void *state, void **out);
    void (*event_destroy)(void *state, void *event);
    ckpt_result (*event_record)(void *state, void *event, void *stream);
    ckpt_result (*stream_wait_event)(void *state, void *stream, void *event);
    ckpt_result (*event_synchronize)(void *state, void *event);
    ckpt_result (*event_elapsed_ms)(void *state, void *start, void *end, float *ms);
    /* Profiler ranges: range_push(label) before every scheduled operation and range_pop after it
       (NVTX on CUDA). NULL: none. The label ("F3+ name", "F3+/1 name", "B3 name", "O X3": see
       WRITING A BACKEND) is valid only during the call. */
    void (*range_push)(void *state, const char *label);
    void (*range_pop)(void *state);
    /* Graph capture of whole sweeps (ckpt_chain_desc.graphs; CUDA GRAPHS in the manual). All four
       or none. graph_begin starts capturing the compute stream's work (and that of every stream
       that joins it through an event recorded on it) and sets *delta to a device-resident 64-bit
       counter offset that kernels add to their Philox counters (ckpt_philox.delta). graph_end
       joins every stream still in the capture back into the compute stream, ends the capture and,
       when keep is nonzero, instantiates the graph into *exec (keep 0: an abandoned capture,
       discarded; *exec NULL). graph_launch sets the counter offset to delta and launches exec
       on the compute stream, both in stream order; graph_destroy frees an exec. */
    ckpt_result (*graph_begin)(void *state, const uint64_t **delta);
    ckpt_result (*graph_end)(void *state, int keep, void **exec);
    ckpt_result (*graph_launch)(void *state, void *exec, uint64_t delta);
    void (*graph_destroy)(void *state, void *exec);
} ckpt_backend;

#define CKPT_ALIGN 256u   /* alignment of every arena buffer */

/* >>rng ----------------------------------------------------------------------------------------
   Philox4x32-10 (Salmon et al., Random123). A ckpt_philox names a range of 128-bit blocks: block j
   has counter words {lo32(base + j), hi32(base + j), 0, 0} and key words {lo32(key), hi32(key)}.

   Every random bit comes from the static inline functions of this section, which are compiled for
   the host here and for the GPU by the CUDA and HIP backends (CKPT_HD marks them __host__
   __device__ under nvcc and hipcc). So the GPU kernels, and your own kernels if they call these
   functions, give the same bits as the host for the same (key, counter):
     uniform  (word >> 8) * 2^-24, exact in float, in [0, 1);
     normal   Box-Muller on a pair of words, computed in 64-bit fixed point (log, sqrt, sin and cos
              by integer arithmetic) and rounded to float once, at the end: identical on every
              compiler, target and FP-contraction setting; |z| < 6.67;
     dropout  keep = uniform >= p_drop; out = keep ? in * scale : 0 (one rounding, the product). */
#if defined(__CUDACC__) || defined(__HIPCC__)
#define CKPT_HD __host__ __device__
#else
#define CKPT_HD
#endif

/* The ten rounds of Philox4x32-10 on the counter c, in place, with key (k0, k1). */
static inline CKPT_HD void _ckpt_philox_rounds(uint32_t c[4], uint32_t k0, uint32_t k1) {
    int r;
    for (r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[1] = (uint32_t)p1; c[3] = (uint32_t)p0; c[0] = n0; c[2] = n2;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
}

/* The 4 words of the block at counter `ctr` under `key`. */
static inline CKPT_HD void ckpt_philox_gen(uint64_t key, uint64_t ctr, uint32_t out[4]) {
    out[0] = (uint32_t)ctr; out[1] = (uint32_t)(ctr >> 32); out[2] = 0; out[3] = 0;
    _ckpt_philox_rounds(out, (uint32_t)key, (uint32_t)(key >> 32));
}

/* A uniform float in [0, 1) from one word. */
static inline CKPT_HD float ckpt_uniform_from_u32(uint32_t w) { return (float)(w >> 8) * (1.0f / 16777216.0f); }

/* The high 64 bits of a 64x64-bit product, from 32-bit pieces (no 128-bit type needed). */
static inline CKPT_HD uint64_t _ckpt_mulhi64(uint64_t a, uint64_t b) {
    uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0;
    uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
    return a1 * b1 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

/* -ln(x / 2^32) in Q57 fixed point for x in [1, 2^32]: ln m = 2 atanh(s), s = (m-1)/(m+1), with
   m = x / 2^k in [1, 2); s (at most 1/3) in Q62 by a two-step division, 16 terms of the series
   (error below 2^-55). */
static inline CKPT_HD uint64_t _ckpt_neglog_q57(uint64_t x) {
    uint64_t num, den, q, rem, s, s2, term, sum;
    int k = 0, j;
    while ((x >> (k + 1)) != 0) k++;
    num = (x << (32 - k)) - 0x100000000ull;                         /* (m - 1) in Q32 */
    den = (x << (32 - k)) + 0x100000000ull;                         /* (m + 1) in Q32 */
    q = (num << 32) / den; rem = (num << 32) % den;
    s = (q << 30) + ((rem << 30) / den);                            /* Q62 */
    s2 = _ckpt_mulhi64(s, s) << 2;
    sum = term = s;
    for (j = 3; j <= 33; j += 2) { term = _ckpt_mulhi64(term, s2) << 2; sum += term / (uint64_t)j; }
    /* 99893036290645744 = ln 2 in Q57; 2 * sum in Q62 is ln m, shifted to Q57 */
    return (uint64_t)(32 - k) * 99893036290645744ull - (sum >> 4);
}

static inline CKPT_HD uint64_t _ckpt_isqrt64(uint64_t v) {
    uint64_t r = 0, bit = (uint64_t)1 << 62;
    while (bit > v) bit >>= 2;
    while (bit) {
        if (v >= r + bit) { v -= r + bit; r = (r >> 1) + bit; } else r >>= 1;
        bit >>= 2;
    }
    return r;
}

/* cos and sin of 2*pi*w/2^32 in Q32 (signed): octant symmetry, then Taylor series on [0, pi/4]. */
static inline CKPT_HD void _ckpt_sincos_q32(uint32_t w, int64_t *c, int64_t *s) {
    uint32_t oct = w >> 29, f = w & 0x1FFFFFFFu;
    uint64_t x, x2, ts, tc, cs, sn;
    int64_t C, S;
    int j;
    if (oct & 1) f = 0x20000000u - f;                               /* mirror within the octant */
    x = ((uint64_t)f * 3373259426ull) >> 29;                        /* angle in Q32; 3373259426 = pi/4 */
    x2 = (x * x) >> 32;
    ts = x; sn = x; tc = 0x100000000ull; cs = tc;
    for (j = 1; j <= 7; j++) {                                      /* x^15/15!, x^14/14! < 2^-37 */
        ts = ((ts * x2) >> 32) / (uint64_t)((2 * j) * (2 * j + 1));
        tc = ((tc * x2) >> 32) / (uint64_t)((2 * j - 1) * (2 * j));
        if (j & 1) { sn -= ts; cs -= tc; } else { sn += ts; cs += tc; }
    }
    C = (int64_t)cs; S = (int64_t)sn;
    switch (oct) {
    case 0: *c = C; *s = S; break;
    case 1: *c = S; *s = C; break;
    case 2: *c = -S; *s = C; break;
    case 3: *c = -C; *s = S; break;
    case 4: *c = -C; *s = -S; break;
    case 5: *c = -S; *s = -C; break;
    case 6: *c = S; *s = -C; break;
    default: *c = C; *s = -S; break;
    }
}

/* Two independent standard normals from two words (Box-Muller: radius from w0, angle from w1).
   The radius is sqrt(2 L) in Q29 (the square root of 2L in Q58, L = -ln u in Q57); each product with
   |cos| or |sin| (Q32) is below 2^64 and is rounded to float once. */
static inline CKPT_HD void ckpt_normal_from_u32(uint32_t w0, uint32_t w1, float *z0, float *z1) {
    uint64_t r = _ckpt_isqrt64(4 * _ckpt_neglog_q57((uint64_t)w0 + 1));      /* 2L in Q58 */
    int64_t c, s;
    float a, b;
    _ckpt_sincos_q32(w1, &c, &s);
    a = (float)(r * (uint64_t)(c < 0 ? -c : c)) * (1.0f / 2305843009213693952.0f);   /* 2^-61 */
    b = (float)(r * (uint64_t)(s < 0 ? -s : s)) * (1.0f / 2305843009213693952.0f);
    *z0 = c < 0 ? -a : a;
    *z1 = s < 0 ? -b : b;
}

/* The scale dropout applies to kept values: 1/(1-p_drop), or 0 when p_drop >= 1. */
static inline CKPT_HD float ckpt_dropout_scale(float p_drop) { return p_drop < 1.0f ? 1.0f / (1.0f - p_drop) : 0.0f; }

/* One dropout element: keep iff the word's uniform is >= p_drop; scale = 1 / (1 - p_drop). */
static inline CKPT_HD float ckpt_dropout_from_u32(uint32_t w, float p_drop, float scale, float x, int *keep) {
    *keep = ckpt_uniform_from_u32(w) >= p_drop;
    return *keep ? x * scale : 0.0f;
}

/* The raw Philox4x32-10 block function (the Random123 reference interface). */
CKPT_API void ckpt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

typedef struct ckpt_philox {
    uint64_t key;       /* the chain seed */
    uint64_t base;      /* first counter of the range */
    uint64_t count;     /* number of 128-bit blocks in the range */
    const uint64_t *delta;  /* NULL, except in a CUDA graph capture (ckpt_chain_desc.graphs): a
                               DEVICE pointer to an offset that every launch of the graph sets and
                               that device code adds to base (ckpt_philox_at). The host functions
                               below ignore it (they never see it set). New in this version: code
                               that fills a ckpt_philox field by field must set it (NULL), or
                               the backend's kernels read a stray pointer. For a sub-range, copy
                               the struct and move base and count, so that delta comes along. */
} ckpt_philox;

/* Block j of the range into out[4], on the device or the host: ckpt_philox_gen at counter base +
   j, plus *delta when delta is set (device code only: delta is a device pointer). Kernels that
   draw from a range ckpt_ctx_rng gave must use this (or ckpt_philox_counter) so that a chain in
   graph mode replays with the right counters. */
static inline CKPT_HD uint64_t ckpt_philox_counter(const ckpt_philox *p, uint64_t j) {
    return p->base + j + (p->delta ? *p->delta : 0);
}
static inline CKPT_HD void ckpt_philox_at(const ckpt_philox *p, uint64_t j, uint32_t out[4]) {
    ckpt_philox_gen(p->key, ckpt_philox_counter(p, j), out);
}

/* Block j (0 <= j < count) of the range, as four 32-bit words. */
CKPT_API void ckpt_philox_block(const ckpt_philox *p, uint64_t j, uint32_t out[4]);
/* The k-th 32-bit word of the range (block k/4, word k%4). */
CKPT_API uint32_t ckpt_philox_u32(const ckpt_philox *p, uint64_t k);
/* Uniform float in [0,1) from word k: (word >> 8) * 2^-24. */
CKPT_API float ckpt_philox_uniform(const ckpt_philox *p, uint64_t k);
/* Fill n floats with uniforms (word i -> out[i]). Needs a range of at least ceil(n/4) blocks. */
CKPT_API void ckpt_philox_fill_uniform(const ckpt_philox *p, float *out, size_t n);
/* Fill n floats with standard normals: block j gives out[4j..4j+3] from its word pairs (0,1) and
   (2,3) by ckpt_normal_from_u32. Needs ceil(n/4) blocks. */
CKPT_API void ckpt_philox_fill_normal(const ckpt_philox *p, float *out, size_t n);
/* Dropout: out[i] = keep ? in[i] * scale : 0 with keep = uniform(i) >= p_drop, scale =
   1/(1-p_drop) (0 when p_drop >= 1); mask[i] (optional) gets 1 or 0. in and out may alias. The
   backward of dropout is the same call on the gradient with the same range. */
CKPT_API void ckpt_philox_dropout(const ckpt_philox *p, float p_drop, const float *in, float *out,
                                  uint8_t *mask, size_t n);

/* >>checksum -----------------------------------------------------------------------------------
   The checksum every backend computes (host here, a kernel on the GPU): the buffer is cut into
   chunks of CKPT_CHECKSUM_CHUNK bytes (the last may be shorter); each chunk gets FNV-1a-64 over
   its bytes; the result folds the chunk hashes in order, h = (h ^ chunk_hash) * FNV_PRIME from
   the FNV offset basis, and finally the byte count the same way. Chunks let a GPU hash them in
   parallel; the result depends on every byte and on their order. */
#define CKPT_CHECKSUM_CHUNK 4096u
#define CKPT_FNV_BASIS 1469598103934665603ull
#define CKPT_FNV_PRIME 1099511628211ull
static inline CKPT_HD uint64_t ckpt_fnv1a_step(uint64_t h, uint64_t v) { return (h ^ v) * CKPT_FNV_PRIME; }
CKPT_API uint64_t ckpt_checksum(const void *ptr, size_t bytes);

/* >>stages ------------------------------------------------------------------------------------- */
typedef enum ckpt_mode {
    CKPT_MODE_FORWARD = 0,      /* first forward of this step */
    CKPT_MODE_RECOMPUTE = 1,    /* a recomputation: must reproduce the first forward exactly */
    CKPT_MODE_BACKWARD = 2,
    CKPT_MODE_EVAL = 3          /* ckpt_forward_eval: no backward follows (skip dropout) */
} ckpt_mode;

typedef struct ckpt_chain ckpt_chain;

/* What every callback receives. Read it; the library owns it. */
typedef struct ckpt_ctx {
    ckpt_chain *chain;
    uint64_t _rng_cursor;   /* private: next Philox counter of this call */
    uint64_t _rng_limit;    /* private: in a recomputation or evaluation, end of the range allowed */
    ckpt_result _rng_error; /* private: a draw ckpt_ctx_rng refused; the op fails with it */
    int stage;              /* 0-based stage index */
    ckpt_mode mode;
    int keep_tape;          /* forward: 1 when the tape is kept for backward, 0 when it is scratch */
    int tape_option;        /* F and B: the tape option (0 = tape_bytes; see TAPE OPTIONS). B gets
                               the option of the F that kept its tape */
    void *stream;           /* the backend's compute stream (NULL on the CPU backend) */
    void *user;             /* the stage's user pointer */
    const ckpt_backend *backend;    /* the chain's backend, e.g. for ckpt_cuda_philox_dropout */
    int microbatch;         /* 0..k-1 with ckpt_chain_desc.microbatches = k (else 0) */
} ckpt_ctx;

/* Draws `blocks` 128-bit Philox blocks for this stage and describes them in *out. In the first
   forward the range is new; in a recomputation the same draws, in the same order, get the same
   ranges. Only valid in forward callbacks. A recomputation that draws more blocks than the first
   forward did gets CKPT_ERR_RNG_REPLAY; so does one that draws fewer, once the callback returns.
   Either way the step fails with CKPT_ERR_RNG_REPLAY (not CKPT_ERR_CALLBACK), whatever the
   callback returns. In CKPT_MODE_EVAL (ckpt_forward_eval) a draw gets CKPT_ERR_OUT_OF_ORDER and
   fails the evaluation with it, unless CKPT_EVAL_RNG was given; in CKPT_MODE_BACKWARD likewise.
   out->delta is NULL, except while a graph is captured (CUDA GRAPHS): then device code must read
   the range through ckpt_philox_at. On failure *out is zeroed (an empty range). */
CKPT_API ckpt_result ckpt_ctx_rng(ckpt_ctx *ctx, uint64_t blocks, ckpt_philox *out);

typedef struct ckpt_fwd_args {
    ckpt_ctx *ctx;
    const void *in;     /* X[i-1] (the caller's input for stage 0) */
    void *out;          /* X[i], out_bytes */
    void *tape;         /* the tape option's bytes (NULL if 0); always written, kept only if
                           ctx->keep_tape */
    void *workspace;    /* fwd_workspace_bytes of scratch (NULL if 0) */
                        /* out, tape and workspace are NOT zeroed: they hold whatever was there */
    const void *params; /* parameter streaming: the device copy of the stage's host_params; else NULL */
} ckpt_fwd_args;

typedef struct ckpt_bwd_args {
    ckpt_ctx *ctx;
    const void *in;         /* X[i-1] */
    const void *tape;       /* what the forward wrote */
    const void *grad_out;   /* G[i] */
    void *grad_in;          /* G[i-1]; NULL for stage 0 when the caller passed no input gradient.
                               NOT zeroed (the caller's G[0] neither): write it, do not add into it */
    void *workspace;        /* bwd_workspace_bytes of scratch (NULL if 0); NOT zeroed */
    const void *params;     /* parameter streaming: the device copy of host_params; else NULL */
    void *param_grads;      /* parameter streaming with host_grads: param_bytes of device memory
                               holding the stage's host_grads on entry (zeros with
                               ckpt_chain_desc.stream_grads_overwrite); ADD this stage's gradients
                               into it (every microbatch of the op adds into the same buffer).
                               Afterwards the library copies it back into host_grads. Else NULL. */
} ckpt_bwd_args;

/* Return CKPT_OK, or any negative code to abort the step (reported as CKPT_ERR_CALLBACK, or as
   ckpt_ctx_rng's code when it refused a draw in this call). */
typedef ckpt_result (*ckpt_forward_fn)(const ckpt_fwd_args *args);
typedef ckpt_result (*ckpt_backward_fn)(const ckpt_bwd_args *args);

#define CKPT_STAGE_NO_CHECKPOINT 0x1u   /* forbid a checkpoint at this stage's input boundary */
#define CKPT_STAGE_NO_PARAMS 0x2u       /* the stage has no parameters: no grads_ready call (chains
                                           only; ckpt_plan_create's costs refuse it) */

/* A stage's tape options (TAPE OPTIONS in the manual): option 0 is tape_bytes with bwd_time;
   option k (1..n_tape_options) keeps tape_bytes of its own and makes the backward bwd_extra
   slower, for what it leaves out and recomputes there. */
#define CKPT_MAX_TAPE_OPTIONS 4
typedef struct ckpt_tape_option {
    size_t tape_bytes;
    double bwd_extra;   /* >= 0, in the unit of the stage times */
} ckpt_tape_option;

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
    /* Parameter streaming (see PARAMETER STREAMING in the manual): the stage's parameters live
       in host memory (pinned is best: copies overlap only from pinned memory on a GPU) and are
       loaded into a device slot ahead of each op that runs the stage. */
    const void *host_params;        /* NULL: no streaming for this stage */
    size_t param_bytes;
    float *host_grads;              /* float gradients, param_bytes / 4 of them: loaded into
                                       param_grads before each backward (zeroed there instead with
                                       ckpt_chain_desc.stream_grads_overwrite), which adds into it,
                                       and copied back after; NULL: the callback keeps its own */
    int n_tape_options;             /* options beyond option 0: 0..CKPT_MAX_TAPE_OPTIONS - 1 */
    ckpt_tape_option tape_options[CKPT_MAX_TAPE_OPTIONS - 1];   /* options 1..n_tape_options */
} ckpt_stage_desc;

/* >>planner ------------------------------------------------------------------------------------ */
typedef enum ckpt_policy {
    CKPT_POLICY_OPTIMAL = 0,    /* minimum time under the budget (the default) */
    CKPT_POLICY_STORE_ALL = 1,  /* no recomputation */
    CKPT_POLICY_EVERY_K = 2,    /* checkpoint every k-th boundary; k = 0: the best k that fits
                                   (it simulates every k: 2.5 s at 4096 stages, bench/RESULTS.md) */
    CKPT_POLICY_SQRT = 3,       /* about sqrt(n) evenly spaced checkpoints */
    CKPT_POLICY_GREEDY = 4,     /* drop the boundary with most bytes saved per second of recompute */
    CKPT_POLICY_OFFLOAD = 5,    /* per boundary: keep, offload to pinned host memory, or recompute
                                   (needs ckpt_plan_desc.bandwidth; see OFFLOAD in the manual) */
    CKPT_POLICY_COUNT_ = 6,     /* the number of policies above (for loops over them) */
    CKPT_POLICY_CUSTOM = 100    /* not a policy to plan with: info.policy of a schedule given to
                                   ckpt_chain_set_schedule */
} ckpt_policy;

/* "optimal", "store-all", "every-k", "sqrt", "greedy", "offload", and "custom" for
   CKPT_POLICY_CUSTOM; NULL for an unknown value. */
CKPT_API const char *ckpt_policy_name(ckpt_policy p);
/* Parses the names of the six planning policies; CKPT_ERR_BAD_POLICY for anything else ("custom" too). */
CKPT_API ckpt_result ckpt_policy_parse(const char *name, ckpt_policy *out);

/* One stage's costs, as the planner sees them. */
typedef struct ckpt_cost {
    double f, b;                    /* forward and backward time */
    uint64_t a, t, wf, wb;          /* output, tape, forward and backward workspace bytes */
    unsigned flags;                 /* CKPT_STAGE_* */
    int n_options;                  /* tape options beyond option 0 (t, b): 0..CKPT_MAX_TAPE_OPTIONS - 1 */
    uint64_t option_t[CKPT_MAX_TAPE_OPTIONS - 1];       /* option k + 1: tape bytes */
    double option_extra[CKPT_MAX_TAPE_OPTIONS - 1];     /* option k + 1: backward time beyond b */
} ckpt_cost;

typedef struct ckpt_plan_desc {
    uint64_t budget;        /* peak bytes allowed; 0: no limit */
    ckpt_policy policy;     /* default CKPT_POLICY_OPTIMAL */
    int k;                  /* every-k segment length; 0: the best that fits (ignored by the others) */
    uint32_t max_units;     /* optimal, long chains: 0 = exact (in the largest unit that divides
                               every size), up to 200 stages at any budget and beyond that up to
                               65,536 such units, unless the sparse program's frontiers pass
                               their 256 MB cap: then a coarser unit runs and a warning is
                               logged. This can take seconds for hundreds of distinct stages
                               (1.2-1.4 s at 200, 0.7-0.9 s on 2 threads: bench/RESULTS.md);
                               sub-chains that repeat, such as a transformer's layers, are
                               planned once, which makes such chains much faster. N = round
                               sizes up to ceil(budget/N) bytes when coarser: faster, never over
                               budget, optimal only in that unit (a budget equal to the smallest
                               peak plans in the exact unit). A stage's output and tape are
                               first rounded as one sum (as rotor does); if that plan's peak in
                               bytes is over budget, each is rounded up alone. info.unit says
                               which unit was used. */
    ckpt_logger logger;     /* where planning errors go; unset (fn NULL): none for ckpt_plan_create,
                               the chain's logger for ckpt_chain_plan */
    ckpt_allocator allocator;   /* ckpt_plan_create's host memory; ckpt_chain_plan uses the chain's */
    /* offload policy: the link between device and pinned host memory, in bytes per unit of time
       (the unit of the stage times: with times in ms, 25e6 is 25 GB/s). bandwidth is the
       device-to-host direction; bandwidth_h2d the other (0: the same). 0 bandwidth: no link, and
       the offload policy plans what optimal does. host_budget caps the pinned pool (0: no cap),
       all microbatch lanes' pools together. */
    double bandwidth;
    double bandwidth_h2d;
    uint64_t host_budget;
    int keep_old_on_failure;    /* ckpt_chain_plan: 0 (default) frees the old arena and pool before
                                   allocating the new ones, and a failed allocation leaves the chain
                                   with no plan; 1 allocates first, holding both at once, and keeps
                                   the old plan on failure */
    int threads;                /* optimal (and offload), long chains: planning threads, the caller
                                   among them (0 or 1: the caller alone); the plan is the same
                                   with any count. The allocator must then be thread-safe: see
                                   "Planning threads" in COST MODEL. */
} ckpt_plan_desc;

/* F and B compute; O and P copy a buffer to the pinned host pool and back, W waits for an O's
   copy and releases the buffer on the device: boundary X[stage] (tape 0, 1 <= stage <= n-1) or
   stage's tape T[stage] (tape 1). See OFFLOAD in the manual. */
typedef enum ckpt_op_kind { CKPT_OP_F = 0, CKPT_OP_B = 1, CKPT_OP_O = 2, CKPT_OP_P = 3, CKPT_OP_W = 4 } ckpt_op_kind;

typedef struct ckpt_op {
    ckpt_op_kind kind;
    int stage;      /* 1-based, as in the cost model; for O, P and W the boundary */
    int tape;       /* F: keep the tape; O, P and W: 1 = the tape T[stage], 0 = the boundary X[stage] */
    int option;     /* F with tape: its tape option (0..n_options). F without tape runs the
                       stage's scratch option whatever this says (plans write it here); other
                       ops ignore it */
} ckpt_op;

typedef enum ckpt_guarantee {
    CKPT_GUARANTEE_NONE = 0,          /* a heuristic policy, or optimal's plan at its
                                         min_budget where only that plan fits (COST MODEL) */
    CKPT_GUARANTEE_ALL_SCHEDULES = 1, /* optimal over every schedule of the cost model */
    CKPT_GUARANTEE_PERSISTENT = 2     /* optimal over the long-chain program's class, with sizes
                                         rounded up to `unit`: persistent schedules (checkpoints
                                         stay until their segment is back-propagated) and, up to
                                         64 stages, schedules that drop the input of a kept tape
                                         and, up to 20 stages, drop a checkpoint after its last
                                         read, recomputing either later, or make a boundary
                                         again from an earlier one where the next stage has
                                         CKPT_STAGE_NO_CHECKPOINT (>>planner: persistent
                                         dynamic program). On random chains of 3 to 10 stages
                                         it found the optimum over all schedules in 99.9%
                                         without no-checkpoint flags and 99.6% with, and the
                                         smallest peak in all (tests/test_planner_match.c);
                                         with tape options (an option per kept tape) in all
                                         1000 cases of 3 to 8 stages, 192 of them with flags.
                                         Never slower than every-k's best plan or a
                                         two-level plan derived from it (taken when faster:
                                         a coarse unit can make every plan of the class
                                         slower). When `unit` does not
                                         divide every size and max_units was 0, also no slower
                                         than greedy */
} ckpt_guarantee;

typedef struct ckpt_plan_info {
    ckpt_policy policy;     /* CKPT_POLICY_CUSTOM for a schedule given to ckpt_chain_set_schedule */
    uint64_t budget;        /* the budget planned for; for "no limit", the larger of store-all's
                               peak and this plan's (0 only when every size is 0); for a custom
                               schedule its arena (so are fit_budget and min_budget) */
    double time;            /* predicted time of one step: the sum of f and b of the ops, or with
                               offload the makespan of compute and copies */
    uint64_t peak;          /* predicted peak bytes (sizes rounded up to CKPT_ALIGN: COST MODEL) */
    uint64_t arena;         /* bytes of one lane's arena once every buffer is laid out: >= peak,
                               <= budget (ckpt_chain_stats.arena_bytes is lanes x this) */
    uint64_t fit_budget;    /* the budget the policy planned for: budget, or less when the arena
                               of the plan for budget did not fit in it (COST MODEL); the
                               policy's guarantee holds at this budget */
    uint64_t min_budget;    /* a budget from which every larger one plans: the policy's smallest
                               peak, or the arena of a plan at that peak when it needs more
                               (COST MODEL); on success at most budget */
    double store_all_time;  /* for reference */
    uint64_t store_all_peak;
    int k;                  /* every-k: the k used */
    uint64_t unit;          /* optimal: the unit sizes were rounded up to (exact when it divides
                               every size: 1 = bytes) */
    ckpt_guarantee guarantee;
    int n_ops;
    int n_recomputed;       /* F operations beyond the first forward of each stage */
    double compute_time;    /* sum of f and b of the ops (equal to time when nothing is offloaded) */
    uint64_t host_peak;     /* pinned host bytes the offloaded boundaries and tapes need at most */
    int n_offloaded;        /* O operations */
} ckpt_plan_info;

typedef struct ckpt_plan ckpt_plan;

/* Plans a chain from its costs alone (no callbacks: this is what ckpt-plan uses). On success
   *out is a new plan and *out_info (if non-NULL) a copy of its info. On CKPT_ERR_INFEASIBLE *out
   is NULL and out_info (if non-NULL) still receives policy, budget, min_budget and the store-all
   figures, so the caller can say which budget would work; on other errors it is zeroed, or holds
   what was known when planning stopped. */
CKPT_API ckpt_result ckpt_plan_create(const ckpt_cost *costs, int n, const ckpt_plan_desc *desc,
                                      ckpt_plan **out, ckpt_plan_info *out_info);
CKPT_API void ckpt_plan_destroy(ckpt_plan *plan);
CKPT_API const ckpt_plan_info *ckpt_plan_get_info(const ckpt_plan *plan);
/* The schedule: *n_ops operations, valid until the plan is destroyed. */
CKPT_API const ckpt_op *ckpt_plan_ops(const ckpt_plan *plan, int *n_ops);

/* Replays a schedule in the cost model (sizes rounded up to CKPT_ALIGN, all-zero times as 1 and
   2): checks every rule (CKPT_ERR_BAD_SCHEDULE, with the op index in *bad_op when non-NULL) and
   returns its time and peak, which for a plan's schedule are its info's. O, P and W ops are
   replayed untimed: copies take no time, and an offloaded buffer stays on the device until its
   W, or without a W until the op before its P. CKPT_ERR_BAD_ARGUMENT when n_ops is over
   CKPT_MAX_OPS (as for ckpt_schedule_simulate_offload and ckpt_trace_predict). On failure *time
   and *peak are zeroed. */
CKPT_API ckpt_result ckpt_schedule_simulate(const ckpt_cost *costs, int n, const ckpt_op *ops,
                                            int n_ops, double *time, uint64_t *peak, int *bad_op);

/* What ckpt_schedule_simulate_offload reports. */
typedef struct ckpt_sim {
    double time;            /* makespan */
    double compute_time;    /* sum of f and b */
    uint64_t peak;          /* device bytes */
    uint64_t host_peak;     /* pinned host bytes */
} ckpt_sim;

/* The same with the link of the OFFLOAD cost model: bandwidth d2h and h2d in bytes per unit of
   time (h2d 0: as d2h). CKPT_ERR_BAD_ARGUMENT when d2h is not positive and finite, or when a
   bandwidth is so small that the makespan overflows a double. */
CKPT_API ckpt_result ckpt_schedule_simulate_offload(const ckpt_cost *costs, int n, const ckpt_op *ops, int n_ops,
                                                    double bandwidth_d2h, double bandwidth_h2d, ckpt_sim *out,
                                                    int *bad_op);

/* >>split --------------------------------------------------------------------------------------
   Grouping a model's layers into stages. Both write first[g], the first layer of group g, for
   g = 0..*n_groups-1 (first[0] = 0; group g ends where group g+1 starts); first needs room for
   n entries. */

/* Consecutive groups of about equal parameter bytes, for parameter streaming: with target = total / parts, a layer starts a new group when the current
   one is not empty, adding the layer would take it over the target, and groups remain. At most
   min(n, parts) groups. */
CKPT_API ckpt_result ckpt_split_by_bytes(const uint64_t *layer_bytes, int n, int parts, int *first, int *n_groups);

/* Segments for checkpointing that honour the model's structure: end_after[i] != 0 ends a segment after layer i (a feature the model outputs), no_split_before[i]
   != 0 forbids a segment starting at layer i (an in-place op that needs its input). Starting
   from the segments end_after makes (all of them, even more than `segments`), the longest
   segment that can be cut is cut nearest its middle where a cut is allowed, until there are
   `segments` or none can be cut. Either array may be NULL. */
CKPT_API ckpt_result ckpt_split_segments(int n, const unsigned char *end_after, const unsigned char *no_split_before,
                                         int segments, int *first, int *n_groups);

/* >>layout -------------------------------------------------------------------------------------
   Carve one buffer (a tape or a workspace) into aligned pieces. Fill bytes and align (a power of
   two; 0 means 16) for each entry; ckpt_layout_compute sets the offsets and the total, which is
   the size to declare. ckpt_layout_ptr gives entry i's address inside a buffer (like strchr, it
   takes a const base so a backward can carve its const tape; write only where you may). On
   failure *total is 0. */
typedef struct ckpt_layout_entry {
    size_t bytes;
    size_t align;
    size_t offset;      /* set by ckpt_layout_compute */
} ckpt_layout_entry;

CKPT_API ckpt_result ckpt_layout_compute(ckpt_layout_entry *entries, int n, size_t *total);
CKPT_API void *ckpt_layout_ptr(const void *base, const ckpt_layout_entry *entries, int i);

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

/* >>grads_ready: what the hook gets (GRADIENT-READY HOOK in the manual). */
typedef struct ckpt_grads_ready_args {
    ckpt_chain *chain;
    int stage;              /* 0-based */
    void *stream;           /* the compute stream, after the stage's last backward (NULL on the CPU) */
    int in_host_grads;      /* 1: a streamed stage with host_grads: they hold its gradients, copied
                               back and complete; 0: on the device, where its backward put them,
                               once the work queued on stream is done */
    void *user;             /* ckpt_chain_desc.grads_ready_user */
} ckpt_grads_ready_args;
/* Return CKPT_OK, or any negative code to fail the step with CKPT_ERR_GRADS_READY. */
typedef ckpt_result (*ckpt_grads_ready_fn)(const ckpt_grads_ready_args *args);

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
    int microbatches;               /* k: lanes run through every op together (default 1); use
                                       ckpt_forward_microbatches / ckpt_backward_microbatches */
    int graphs;                     /* 1: capture each sweep into a CUDA graph and replay it (CUDA
                                       GRAPHS in the manual); needs the backend's graph entries */
    int check_recompute;            /* 1: checksum every X[i] and T[i] the first forward writes and
                                       fail the step with CKPT_ERR_RECOMPUTE_MISMATCH when a
                                       recomputation writes other bytes (RECOMPUTE CHECK in the
                                       manual); needs the backend's checksum; not with graphs.
                                       0: off (the default) */
    ckpt_grads_ready_fn grads_ready;    /* called once a stage's parameter gradients are final for
                                           the step (GRADIENT-READY HOOK); NULL: none */
    void *grads_ready_user;
    int stream_lookahead;           /* parameter streaming: how many compute ops ahead parameters
                                       (and host_grads) load while an op runs, with one slot more
                                       than that of each kind (PARAMETER STREAMING); 0 means 1;
                                       at most CKPT_MAX_STREAM_LOOKAHEAD */
    int stream_grads_early;         /* parameter streaming: 1 promises that host_grads do not
                                       change between ckpt_forward and ckpt_backward, so the
                                       forward's last ops may load the backward's first host_grads
                                       too; 0 (the default): they load only in the backward */
    int stream_grads_overwrite;     /* parameter streaming: 1: each step's gradients replace what
                                       host_grads held: a B op's gradient slot is zeroed on the
                                       device (the backend's memset_async) instead of loaded from
                                       host_grads, so no host_grads load crosses the link; needs
                                       the backend's memset_async; 0 (the default): the
                                       gradients are added into host_grads */
} ckpt_chain_desc;

CKPT_API ckpt_result ckpt_chain_create(const ckpt_chain_desc *desc, ckpt_chain **out);
/* Frees the chain, its plan and its arena. NULL is a no-op. */
CKPT_API void ckpt_chain_destroy(ckpt_chain *chain);

/* Plans the chain for desc (NULL: optimal, no budget), lays out every buffer and allocates the
   arena through the backend, replacing any previous plan and arena. info may be NULL. A planning
   error (CKPT_ERR_INFEASIBLE, a bad desc, ...) leaves the previous plan in place; on
   CKPT_ERR_INFEASIBLE, info (if non-NULL) still gets min_budget and the store-all figures. The
   old arena and pool are freed before the new ones are allocated, so a failed allocation leaves
   the chain with no plan (CKPT_ERR_NO_PLAN until a plan succeeds), unless
   desc->keep_old_on_failure. The plan is the one ckpt_plan_create makes for the chain's costs
   (all-zero times taken as 1 and 2, see COST MODEL), for the chain's lanes: the budget is per
   lane, host_budget for all lanes. Errors go to desc->logger when set, else to the chain's. */
CKPT_API ckpt_result ckpt_chain_plan(ckpt_chain *chain, const ckpt_plan_desc *desc, ckpt_plan_info *info);
/* What ckpt_chain_plan(chain, desc, info) would return and write to info, allocating nothing
   through the backend and leaving the chain as it is: store_all_peak and store_all_time come
   without allocating store-all. The same errors (CKPT_ERR_OUT_OF_ORDER while a forward is
   pending), except those of the backend's allocations. */
CKPT_API ckpt_result ckpt_chain_plan_dry(const ckpt_chain *chain, const ckpt_plan_desc *desc, ckpt_plan_info *info);
/* Like ckpt_chain_plan, with a schedule of your own (validated by the cost model); info gets
   what a plan's info has, with policy CKPT_POLICY_CUSTOM and budget, fit_budget and min_budget
   equal to its arena. It always frees the old arena first: a failed allocation leaves no plan.
   CKPT_ERR_BAD_ARGUMENT when n_ops is over CKPT_MAX_OPS. */
CKPT_API ckpt_result ckpt_chain_set_schedule(ckpt_chain *chain, const ckpt_op *ops, int n_ops,
                                             ckpt_plan_info *info);

/* Runs the schedule up to and including F(n). *output (if non-NULL) points at X[n] in the arena,
   valid until the next call that runs the chain: ckpt_backward may overwrite it (do not pass a
   grad_output that points into it). input must not be NULL (CKPT_ERR_BAD_ARGUMENT). Returns
   CKPT_ERR_OUT_OF_ORDER when a forward is pending. */
CKPT_API ckpt_result ckpt_forward(ckpt_chain *chain, const void *input, const void **output);
/* Runs the rest given G[n] (grad_output; NULL is CKPT_ERR_BAD_ARGUMENT). grad_input (G[0]) may be
   NULL. After an error in either call the step is abandoned and the chain is ready for a new
   forward; a NULL argument is no such error (the forward stays pending). */
CKPT_API ckpt_result ckpt_backward(ckpt_chain *chain, const void *grad_output, void *grad_input);
/* Abandons a forward whose backward will not run. The random numbers it drew stay consumed: the
   next forward draws new ones, as after a completed step (only a failed step gives its back). */
CKPT_API void ckpt_chain_reset_step(ckpt_chain *chain);

/* Evaluation: runs F(1..n) once on input (lane 0 with microbatches), keeping no tapes, in the
   arena of the plan in use (else CKPT_ERR_NO_PLAN). Callbacks get mode CKPT_MODE_EVAL and
   keep_tape 0. *output (if non-NULL) points at X[n], valid until the next call that runs the
   chain. No random numbers are consumed: a draw fails the call with CKPT_ERR_OUT_OF_ORDER, unless
   flags has CKPT_EVAL_RNG: then the stages draw the ranges a one-lane training forward would draw
   next (the counter is not advanced). Between steps only: while a forward awaits its backward,
   CKPT_ERR_OUT_OF_ORDER. Needs no ckpt_chain_reset_step and leaves the next step unchanged
   (streamed stages load their parameters as in a forward; rng_hooks' state is saved before and
   restored after). */
#define CKPT_EVAL_RNG 0x1u
CKPT_API ckpt_result ckpt_forward_eval(ckpt_chain *chain, const void *input, const void **output, unsigned flags);

/* With ckpt_chain_desc.microbatches = k: every op of the schedule runs for microbatches 0..k-1
   before the next op starts, each microbatch in its own copy (lane) of the arena, so a streamed
   stage's parameters are loaded once per op for all k. inputs[m] is microbatch m's X[0];
   outputs[m] (the array may be NULL) gets its X[n]. The backward takes k output gradients and k
   input-gradient pointers (grad_inputs, or any of its entries, may be NULL). A NULL inputs or
   grad_outputs is CKPT_ERR_NULL_ARGUMENT, a NULL entry in them CKPT_ERR_BAD_ARGUMENT. ckpt_forward and
   ckpt_backward are these with k = 1 and return CKPT_ERR_BAD_ARGUMENT when k > 1. */
CKPT_API ckpt_result ckpt_forward_microbatches(ckpt_chain *chain, const void *const *inputs, const void **outputs);
CKPT_API ckpt_result ckpt_backward_microbatches(ckpt_chain *chain, const void *const *grad_outputs,
                                                void *const *grad_inputs);

typedef struct ckpt_chain_stats {
    uint64_t planned_peak;      /* the plan's predicted peak (ckpt_plan_info.peak, per lane) */
    uint64_t arena_bytes;       /* size of the arena allocated through the backend (all lanes) */
    uint64_t arena_high_water;  /* measured since the plan was installed: the highest end, within
                                   a lane, of an arena buffer the executor handed out (to a
                                   callback, a copy, or as ckpt_forward's output): its offset
                                   plus its size rounded up to CKPT_ALIGN; <= arena_bytes / lanes */
    uint64_t steps;             /* completed forward+backward steps */
    uint64_t ops_run;           /* operations executed */
    int failed_stage;           /* stage (0-based) of the last CKPT_ERR_CALLBACK, else -1 */
    ckpt_result failed_result;  /* what that callback returned */
    uint64_t planned_host_peak; /* offload: the plan's pinned bytes */
    uint64_t pool_bytes;        /* offload: the pinned pool allocated once through the backend */
    uint64_t copies;            /* offload: O and P copies issued */
    uint64_t param_loads;       /* streaming: parameter copies to the device */
    uint64_t grad_stores;       /* streaming: gradient copies to the host (into host_grads) */
    uint64_t slot_bytes;        /* streaming: device bytes of the parameter and gradient slots */
    uint64_t grad_loads;        /* streaming: host_grads copies to the device (one per B op in a
                                   step that succeeds; a failed op's prefetch, and with
                                   stream_grads_early an abandoned forward's, count too; none
                                   with stream_grads_overwrite) */
    uint64_t graph_captures;    /* graphs: sweeps captured (a step that captures both its forward
                                   and its backward counts 2) */
    uint64_t graph_replays;     /* graphs: sweeps replayed from a graph captured earlier */
    uint64_t recompute_checks;  /* check_recompute: buffers of recomputations compared with the
                                   first forward's checksums (X[i] and T[i], per lane) */
} ckpt_chain_stats;

CKPT_API ckpt_result ckpt_chain_get_stats(const ckpt_chain *chain, ckpt_chain_stats *out);
/* The plan in use (NULL before ckpt_chain_plan, and after one whose allocation failed). */
CKPT_API const ckpt_plan *ckpt_chain_get_plan(const ckpt_chain *chain);

/* >>measure ------------------------------------------------------------------------------------
   Measured stage times (see MEASURED TIMES in the manual). */
typedef struct ckpt_stage_time {
    double fwd_time;    /* ms: median over every F op of the stage (first forwards and
                           recomputations alike), one microbatch per sample */
    double bwd_time;    /* ms: median over its B ops */
    int fwd_count;      /* samples behind each median: steps x lanes x F ops of the stage in */
    int bwd_count;      /* the plan (bwd_count: steps x lanes) */
    int bwd_option;     /* the tape option its B ops ran with (TAPE OPTIONS): bwd_time includes
                           that option's bwd_extra */
} ckpt_stage_time;

/* Runs `steps` real training steps (forward, backward) under the plan in use, whatever its
   policy, and times every forward and backward callback. Every microbatch lane gets `input` as
   X[0] and `grad_output` as G[n]; grad_input (may be NULL) receives each lane's G[0] in turn.
   Parameter gradients accumulate as in any step, and the steps draw random numbers as any step
   does. times (n_stages entries) gets each stage's medians; NULL runs the steps untimed (a
   warm-up). Errors: CKPT_ERR_NULL_ARGUMENT (chain, input or grad_output NULL),
   CKPT_ERR_BAD_ARGUMENT (steps < 1), CKPT_ERR_NO_PLAN, CKPT_ERR_OUT_OF_ORDER (a forward is
   pending), CKPT_ERR_OUT_OF_HOST_MEMORY, a backend's error from its events, or what a step
   returns (a callback's CKPT_ERR_CALLBACK...): that step is abandoned as ckpt_forward and
   ckpt_backward abandon one, the chain is ready for a new step, and times is not written. */
CKPT_API ckpt_result ckpt_chain_measure(ckpt_chain *chain, const void *input, const void *grad_output,
                                        void *grad_input, int steps, ckpt_stage_time *times);
/* Gives the chain new stage times (fwd_time and bwd_time of n_stages entries; the counts are
   ignored) as if they had been in its stage descs: the next ckpt_chain_plan plans with them. The
   plan in use stays, with its info. CKPT_ERR_NULL_ARGUMENT; CKPT_ERR_BAD_TIME when a time is
   negative, NaN or infinite, or they add up past the COST MODEL's limit (the log names the
   stage); then nothing changes. All zero: taken as 1 and 2, as in a desc. */
CKPT_API ckpt_result ckpt_chain_set_times(ckpt_chain *chain, const ckpt_stage_time *times);

/* >>trace --------------------------------------------------------------------------------------
   One step's timeline (STEP TIMELINE in the manual): what ran on the compute stream and on the
   two copy streams, and when. */
typedef enum ckpt_trace_kind {
    CKPT_TRACE_F = 0, CKPT_TRACE_B = 1,         /* the schedule's ops (ckpt_op_kind's values) */
    CKPT_TRACE_O = 2, CKPT_TRACE_P = 3, CKPT_TRACE_W = 4,
    CKPT_TRACE_PARAM_LOAD = 5,  /* streaming: a stage's host_params into a parameter slot */
    CKPT_TRACE_GRAD_LOAD = 6,   /* streaming: a stage's host_grads into a gradient slot */
    CKPT_TRACE_GRAD_STORE = 7   /* streaming: a gradient slot back into host_grads */
} ckpt_trace_kind;

typedef enum ckpt_trace_lane {
    CKPT_TRACE_COMPUTE = 0,     /* F, B and W */
    CKPT_TRACE_H2D = 1,         /* P, parameter and gradient loads */
    CKPT_TRACE_D2H = 2          /* O, gradient stores */
} ckpt_trace_lane;

typedef struct ckpt_trace_event {
    ckpt_trace_kind kind;
    ckpt_trace_lane lane;
    int op;             /* the op's index in the schedule (ckpt_plan_ops); loads and stores: the
                           F or B op before which they were issued */
    int stage;          /* 0-based (ckpt_ctx.stage); O, P, W: the stage whose output X or tape T
                           moves (ckpt_op.stage - 1) */
    int tape;           /* F: keeps its tape; O, P, W: 1 = T, 0 = X; else 0 */
    int option;         /* F and B: the tape option that ran (TAPE OPTIONS); else 0 */
    int microbatch;     /* 0..k-1; -1 for W and the streaming copies, one for every lane */
    uint64_t bytes;     /* copies: bytes moved; F, B and W: 0 */
    double start_ms;    /* from the step's start */
    double end_ms;
} ckpt_trace_event;

typedef struct ckpt_trace {
    ckpt_trace_event *events;   /* n_events, in the order they were issued */
    int n_events;
    int n_stages;
    int microbatches;           /* lanes traced (1 for a predicted trace) */
    int predicted;              /* 0: ckpt_chain_trace; 1: ckpt_trace_predict */
    int events_clock;           /* 1: timed by the backend's events; 0: by the host clock, or predicted */
    char **names;               /* n_stages stage names */
    ckpt_allocator allocator;   /* what events and names were allocated with */
} ckpt_trace;

/* Runs one real training step (forward, backward) under the plan in use, as ckpt_chain_measure
   does (every lane gets input, grad_output and grad_input; parameter gradients are added, random
   numbers drawn, ckpt_chain_stats.steps counted; with graphs the callbacks run, no graph), and
   records every F, B, O, P and W op and every streaming copy into *out, which the caller frees
   with ckpt_trace_free. Errors: CKPT_ERR_NULL_ARGUMENT (chain, input, grad_output or out NULL),
   CKPT_ERR_NO_PLAN, CKPT_ERR_OUT_OF_ORDER (a forward is pending), CKPT_ERR_OUT_OF_HOST_MEMORY,
   CKPT_ERR_BAD_ARGUMENT (a step of more than INT_MAX spans: about plan ops x lanes), the
   backend's event errors (creating them: no step ran; recording or reading them: the step ran,
   as in ckpt_chain_measure), or what the step returns (it is abandoned as ckpt_forward and
   ckpt_backward abandon one); *out is then zeroed and holds nothing to free. */
CKPT_API ckpt_result ckpt_chain_trace(ckpt_chain *chain, const void *input, const void *grad_output,
                                      void *grad_input, ckpt_trace *out);
/* The timeline the cost model predicts for a schedule (COST MODEL, OFFLOAD): compute runs F, B
   and W in order; O and P take bytes / bandwidth on their channel (bandwidth_d2h 0: no link,
   copies take no time; bandwidth_h2d 0: as d2h), in the unit of the stage times, which
   ms_per_unit (> 0) turns into ms. names (n entries, or NULL: "stage <i>") are copied. One lane,
   no streaming copies (the cost model has none). Errors: those of
   ckpt_schedule_simulate_offload, CKPT_ERR_NULL_ARGUMENT (out NULL), CKPT_ERR_BAD_ARGUMENT
   (ms_per_unit or a bandwidth out of range, or so large or small that a time in ms would not be
   finite); *out is then zeroed. */
CKPT_API ckpt_result ckpt_trace_predict(const ckpt_cost *costs, int n, const ckpt_op *ops, int n_ops,
                                        double bandwidth_d2h, double bandwidth_h2d, double ms_per_unit,
                                        const char *const *names, ckpt_trace *out);
/* The trace as Chrome trace-event JSON (chrome://tracing, ui.perfetto.dev): one "X" event per
   trace event, ts and dur in microseconds with three decimals (a decimal point whatever
   LC_NUMERIC says; from 9e12 ms on, whole ms and "e3"); pid 1 for a measured trace, 2 for a
   predicted one (so the two files' traceEvents can be joined); tid 0 "compute", 1
   "host-to-device", 2 "device-to-host". Writes at most size bytes (NUL included) into buf (may
   be NULL with size 0), like snprintf, and the full length without the NUL into *length: call
   with size 0 to size the buffer. CKPT_ERR_NULL_ARGUMENT (trace or length NULL, or buf NULL
   with size > 0), CKPT_ERR_BAD_ARGUMENT (an event's start_ms, end_ms or their difference not
   finite: JSON has no infinity). */
CKPT_API ckpt_result ckpt_trace_json(const ckpt_trace *trace, char *buf, size_t size, size_t *length);
/* Frees what a trace holds and zeroes it. NULL, or a zeroed trace, is a no-op. */
CKPT_API void ckpt_trace_free(ckpt_trace *trace);

#ifdef __cplusplus
}
#endif
#endif /* CKPT_H_INCLUDED */

/* ================================================================================================
   IMPLEMENTATION
   ================================================================================================ */
#ifdef CKPT_IMPLEMENTATION
#ifndef CKPT_IMPLEMENTATION_DONE
#define CKPT_IMPLEMENTATION_DONE

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>   /* INFINITY only: the library needs no -lm */
#include <float.h>
#include <limits.h>
#include <time.h>   /* ckpt_chain_measure's host clock */
/* >>threads: ckpt_plan_desc.threads runs on POSIX threads, where the system has them */
#if !defined(CKPT_NO_THREADS) && (defined(__unix__) || defined(__APPLE__))
#include <pthread.h>
#define _CKPT_THREADS 1
#else
#define _CKPT_THREADS 0
#endif

#if defined(CKPT_MALLOC) != defined(CKPT_FREE)
#error "ckpt.h: define both CKPT_MALLOC and CKPT_FREE, or neither"
#endif
#ifndef CKPT_MALLOC
#define CKPT_MALLOC(sz, u) ((void)(u), malloc(sz))
#define CKPT_FREE(p, u) ((void)(u), free(p))
/* >>hugepages: malloc's memory for the planner's large tables, on Linux (MEMORY in the manual) */
#if defined(__linux__) && defined(CKPT_HUGEPAGES)
#include <sys/mman.h>
#define _CKPT_HUGEPAGES 1
#endif
#endif
#ifndef CKPT_ASSERT
#include <assert.h>
#define CKPT_ASSERT(c) assert(c)
#endif

#ifdef __cplusplus
#define _CKPT_STATIC_ASSERT(c, msg) static_assert(c, msg)
#else
#define _CKPT_STATIC_ASSERT(c, msg) _Static_assert(c, msg)
#endif
_CKPT_STATIC_ASSERT(sizeof(uint64_t) == 8, "uint64_t must be 8 bytes");

#define _CKPT_UNUSED(x) (void)(x)

/* >>memory (implementation) ---------------------------------------------------------------------
   Every host allocation goes through _ckpt_malloc with the allocator of the object it belongs to. */
static void *_ckpt_malloc(const ckpt_allocator *a, size_t bytes) {
    if (bytes == 0) bytes = 1;
    if (a && a->alloc) return a->alloc(bytes, a->user);
    return CKPT_MALLOC(bytes, a ? a->user : NULL);
}
static void *_ckpt_calloc(const ckpt_allocator *a, size_t count, size_t size) {
    void *p;
    if (size && count > SIZE_MAX / size) return NULL;
    p = _ckpt_malloc(a, count * size);
    if (p) memset(p, 0, (count * size) != 0 ? count * size : 1);
    return p;
}
static void _ckpt_free(const ckpt_allocator *a, void *p) {
    if (!p) return;
    if (a && a->alloc) { a->free(p, a->user); return; }
    CKPT_FREE(p, a ? a->user : NULL);
}
/* _ckpt_malloc for a large table that is written soon after, page by page. The first write to
   each page is a fault; with CKPT_HUGEPAGES (>>hugepages), one per 2 MiB (400 stages at 500
   units: 45,000 faults of 4 KiB, about 6,000 with the advice). The advice covers the 2 MiB
   pages inside the block, and goes with the block when free unmaps it. */
static void *_ckpt_malloc_big(const ckpt_allocator *a, size_t bytes) {
    void *p = _ckpt_malloc(a, bytes);
#if defined(MADV_HUGEPAGE) && defined(_CKPT_HUGEPAGES)
    const uintptr_t huge = (uintptr_t)1 << 21;
    uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1), hi = ((uintptr_t)p + bytes) & ~(huge - 1);
    if (p && !(a && a->alloc) && hi > lo) (void)madvise((void *)lo, (size_t)(hi - lo), MADV_HUGEPAGE);
#endif
    return p;
}

/* >>results (implementation) */
#define _CKPT_RESULT_NAME(name, value, text) case name: return #name;
#define _CKPT_RESULT_TEXT(name, value, text) case name: return text;
CKPT_API const char *ckpt_result_string(ckpt_result r) {
    switch (r) { CKPT_RESULT_LIST(_CKPT_RESULT_NAME) default: return "CKPT_ERR_UNKNOWN"; }
}
CKPT_API const char *ckpt_result_description(ckpt_result r) {
    switch (r) { CKPT_RESULT_LIST(_CKPT_RESULT_TEXT) default: return "unknown result code"; }
}

/* >>logging (implementation) */
static const char *_ckpt_level_name(ckpt_log_level l) {
    return l == CKPT_LOG_ERROR ? "ERROR" : l == CKPT_LOG_WARN ? "WARN" : "INFO";
}
CKPT_API void ckpt_log_stderr(const char *tag, ckpt_log_level level, ckpt_result item,
                              const char *message, const char *file, int line, void *user) {
    _CKPT_UNUSED(file); _CKPT_UNUSED(line); _CKPT_UNUSED(user);
    fprintf(stderr, "[%s] %s %s: %s\n", tag ? tag : "ckpt", _ckpt_level_name(level),
            ckpt_result_string(item), message ? message : "");
}
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 6, 7)))
#endif
static ckpt_result _ckpt_report(const ckpt_logger *lg, ckpt_log_level level, ckpt_result item, const char *file,
                                int line, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    if (!lg || !lg->fn) return item;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (level == CKPT_LOG_ERROR && item == CKPT_OK) level = CKPT_LOG_INFO;     /* nothing failed */
    lg->fn("ckpt", level, item, msg, file, line, lg->user);
    return item;
}
/* Logs and evaluates to the result, so "return _CKPT_ERR(lg, CODE, ...)" reports and fails. */
#define _CKPT_ERR(lg, code, ...) _ckpt_report((lg), CKPT_LOG_ERROR, (code), __FILE__, __LINE__, __VA_ARGS__)
/* A plan that succeeded with less than the caller may expect (item CKPT_OK). */
#define _CKPT_WARN(lg, ...) _ckpt_report((lg), CKPT_LOG_WARN, CKPT_OK, __FILE__, __LINE__, __VA_ARGS__)

/* >>rng (implementation): the host side of the functions declared inline above */
CKPT_API void ckpt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    out[0] = ctr[0]; out[1] = ctr[1]; out[2] = ctr[2]; out[3] = ctr[3];
    _ckpt_philox_rounds(out, key[0], key[1]);
}
CKPT_API void ckpt_philox_block(const ckpt_philox *p, uint64_t j, uint32_t out[4]) {
    ckpt_philox_gen(p->key, p->base + j, out);
}
CKPT_API uint32_t ckpt_philox_u32(const ckpt_philox *p, uint64_t k) {
    uint32_t w[4];
    ckpt_philox_gen(p->key, p->base + (k >> 2), w);
    return w[k & 3];
}
CKPT_API float ckpt_philox_uniform(const ckpt_philox *p, uint64_t k) {
    return ckpt_uniform_from_u32(ckpt_philox_u32(p, k));
}
CKPT_API void ckpt_philox_fill_uniform(const ckpt_philox *p, float *out, size_t n) {
    size_t i, j;
    uint32_t w[4];
    for (i = 0; i < n; i += 4) {
        ckpt_philox_gen(p->key, p->base + (i >> 2), w);
        for (j = 0; j < 4 && i + j < n; j++) out[i + j] = ckpt_uniform_from_u32(w[j]);
    }
}
CKPT_API void ckpt_philox_fill_normal(const ckpt_philox *p, float *out, size_t n) {
    size_t i, j;
    uint32_t w[4];
    float z[4];
    for (i = 0; i < n; i += 4) {
        ckpt_philox_gen(p->key, p->base + (i >> 2), w);
        ckpt_normal_from_u32(w[0], w[1], &z[0], &z[1]);
        ckpt_normal_from_u32(w[2], w[3], &z[2], &z[3]);
        for (j = 0; j < 4 && i + j < n; j++) out[i + j] = z[j];
    }
}
CKPT_API void ckpt_philox_dropout(const ckpt_philox *p, float p_drop, const float *in, float *out,
                                  uint8_t *mask, size_t n) {
    float scale = ckpt_dropout_scale(p_drop);
    size_t i, j;
    uint32_t w[4];
    for (i = 0; i < n; i += 4) {
        ckpt_philox_gen(p->key, p->base + (i >> 2), w);
        for (j = 0; j < 4 && i + j < n; j++) {
            int keep;
            out[i + j] = ckpt_dropout_from_u32(w[j], p_drop, scale, in[i + j], &keep);
            if (mask) mask[i + j] = (uint8_t)keep;
        }
    }
}

/* >>checksum (implementation) */
CKPT_API uint64_t ckpt_checksum(const void *ptr, size_t bytes) {
    const unsigned char *p = (const unsigned char *)ptr;
    uint64_t h = CKPT_FNV_BASIS;
    size_t off = 0;
    /* four whole chunks at a time: four independent multiply chains instead of one */
    while (bytes - off >= 4 * (size_t)CKPT_CHECKSUM_CHUNK) {
        const unsigned char *q = p + off;
        uint64_t c0 = CKPT_FNV_BASIS, c1 = CKPT_FNV_BASIS, c2 = CKPT_FNV_BASIS, c3 = CKPT_FNV_BASIS;
        size_t i;
        for (i = 0; i < CKPT_CHECKSUM_CHUNK; i++) {
            c0 = ckpt_fnv1a_step(c0, q[i]);
            c1 = ckpt_fnv1a_step(c1, q[CKPT_CHECKSUM_CHUNK + i]);
            c2 = ckpt_fnv1a_step(c2, q[2 * CKPT_CHECKSUM_CHUNK + i]);
            c3 = ckpt_fnv1a_step(c3, q[3 * CKPT_CHECKSUM_CHUNK + i]);
        }
        h = ckpt_fnv1a_step(ckpt_fnv1a_step(ckpt_fnv1a_step(ckpt_fnv1a_step(h, c0), c1), c2), c3);
        off += 4 * (size_t)CKPT_CHECKSUM_CHUNK;
    }
    while (off < bytes) {
        size_t len = bytes - off < CKPT_CHECKSUM_CHUNK ? bytes - off : CKPT_CHECKSUM_CHUNK, i;
        uint64_t c = CKPT_FNV_BASIS;
        for (i = 0; i < len; i++) c = ckpt_fnv1a_step(c, p[off + i]);
        h = ckpt_fnv1a_step(h, c);
        off += len;
    }
    return ckpt_fnv1a_step(h, (uint64_t)bytes);
}

/* >>split (implementation) */
CKPT_API ckpt_result ckpt_split_by_bytes(const uint64_t *layer_bytes, int n, int parts, int *first, int *n_groups) {
    uint64_t total = 0, target, cur = 0;
    int i, g = 0;
    if (!layer_bytes || !first || !n_groups) return CKPT_ERR_NULL_ARGUMENT;
    if (n < 1 || parts < 1) return CKPT_ERR_BAD_INDEX;
    if (parts > n) parts = n;
    for (i = 0; i < n; i++) {
        if (layer_bytes[i] > UINT64_MAX - total) return CKPT_ERR_SIZE_OVERFLOW;
        total += layer_bytes[i];
    }
    target = total / (uint64_t)parts;
    first[0] = 0;
    for (i = 0; i < n; i++) {
        if (i > 0 && g < parts - 1 && (n - i) <= parts - 1 - g) {   /* one layer per remaining group */
            first[++g] = i; cur = 0;
        } else if (cur > 0 && cur + layer_bytes[i] > target && g < parts - 1) {
            first[++g] = i; cur = 0;
        }
        cur += layer_bytes[i];
    }
    *n_groups = g + 1;
    return CKPT_OK;
}

CKPT_API ckpt_result ckpt_split_segments(int n, const unsigned char *end_after, const unsigned char *no_split_before,
                                         int segments, int *first, int *n_groups) {
    int i, g = 1;
    if (!first || !n_groups) return CKPT_ERR_NULL_ARGUMENT;
    if (n < 1 || segments < 1) return CKPT_ERR_BAD_INDEX;
    first[0] = 0;
    for (i = 0; i + 1 < n; i++)     /* the model's own boundaries, all of them */
        if (end_after && end_after[i]) first[g++] = i + 1;
    while (g < segments) {
        int best = -1, best_len = 0, cut = -1, d;
        /* the longest segment that has an allowed cut */
        for (i = 0; i < g; i++) {
            int s0 = first[i], s1 = i + 1 < g ? first[i + 1] : n, len = s1 - s0, c = -1, mid = s0 + len / 2;
            if (len < 2 || len <= best_len) continue;
            for (d = 0; d < len && c < 0; d++) {          /* nearest the middle: mid, mid+1, mid-1, ... */
                int a = mid + (d % 2 ? (d + 1) / 2 : -(d / 2));
                if (a > s0 && a < s1 && !(no_split_before && no_split_before[a])) c = a;
            }
            if (c >= 0) { best = i; best_len = len; cut = c; }
        }
        if (best < 0) break;
        for (i = g; i > best + 1; i--) first[i] = first[i - 1];
        first[best + 1] = cut;
        g++;
    }
    *n_groups = g;
    return CKPT_OK;
}

/* >>layout (implementation) */
CKPT_API ckpt_result ckpt_layout_compute(ckpt_layout_entry *entries, int n, size_t *total) {
    size_t off = 0;
    int i;
    if (total) *total = 0;
    if (!total || (n > 0 && !entries)) return CKPT_ERR_NULL_ARGUMENT;
    if (n < 0) return CKPT_ERR_BAD_INDEX;
    for (i = 0; i < n; i++) {
        size_t al = entries[i].align ? entries[i].align : 16;
        if (al & (al - 1)) return CKPT_ERR_BAD_LAYOUT;
        if (off > SIZE_MAX - (al - 1)) return CKPT_ERR_SIZE_OVERFLOW;
        off = (off + al - 1) & ~(al - 1);
        entries[i].offset = off;
        if (entries[i].bytes > SIZE_MAX - off) return CKPT_ERR_SIZE_OVERFLOW;
        off += entries[i].bytes;
    }
    *total = off;
    return CKPT_OK;
}
CKPT_API void *ckpt_layout_ptr(const void *base, const ckpt_layout_entry *entries, int i) {
    if (!base || !entries || i < 0) return NULL;
    return (char *)(uintptr_t)base + entries[i].offset;
}

/* >>policy names */
static const char *const _ckpt_policy_names[CKPT_POLICY_COUNT_] = {
    "optimal", "store-all", "every-k", "sqrt", "greedy", "offload"};
CKPT_API const char *ckpt_policy_name(ckpt_policy p) {
    if (p == CKPT_POLICY_CUSTOM) return "custom";
    return ((int)p >= 0 && (int)p < CKPT_POLICY_COUNT_) ? _ckpt_policy_names[p] : NULL;
}
CKPT_API ckpt_result ckpt_policy_parse(const char *name, ckpt_policy *out) {
    int i;
    if (!name || !out) return CKPT_ERR_NULL_ARGUMENT;
    for (i = 0; i < CKPT_POLICY_COUNT_; i++)
        if (strcmp(name, _ckpt_policy_names[i]) == 0) { *out = (ckpt_policy)i; return CKPT_OK; }
    return CKPT_ERR_BAD_POLICY;
}

/* >>costs: validation shared by the planner and the chain */
static ckpt_result _ckpt_check_costs(const ckpt_cost *c, int n, const ckpt_logger *lg) {
    uint64_t total = 0;
    double times = 0, max_times;
    int i;
    if (!c) return _CKPT_ERR(lg, CKPT_ERR_NULL_ARGUMENT, "costs is NULL");
    if (n < 1) return _CKPT_ERR(lg, CKPT_ERR_NO_STAGES, "n_stages is %d; it must be at least 1", n);
    if (n > CKPT_MAX_STAGES)
        return _CKPT_ERR(lg, CKPT_ERR_TOO_MANY_STAGES, "n_stages is %d; at most %d (CKPT_MAX_STAGES)",
                         n, CKPT_MAX_STAGES);
    for (i = 0; i < n; i++) {
        uint64_t parts[4 + CKPT_MAX_TAPE_OPTIONS - 1] = {c[i].a, c[i].t, c[i].wf, c[i].wb, 0, 0, 0};
        double b = c[i].b;      /* the slowest backward of the stage */
        int j;
        if (c[i].n_options < 0 || c[i].n_options > CKPT_MAX_TAPE_OPTIONS - 1)
            return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "stage %d: n_tape_options is %d; it must be 0..%d", i,
                             c[i].n_options, CKPT_MAX_TAPE_OPTIONS - 1);
        if (!(c[i].f >= 0.0) || !(c[i].b >= 0.0) || c[i].f > DBL_MAX || c[i].b > DBL_MAX)
            return _CKPT_ERR(lg, CKPT_ERR_BAD_TIME,
                             "stage %d: fwd_time %g and bwd_time %g must be finite and >= 0", i,
                             c[i].f, c[i].b);
        for (j = 0; j < c[i].n_options; j++) {
            double e = c[i].option_extra[j];
            if (!(e >= 0.0) || e > DBL_MAX)
                return _CKPT_ERR(lg, CKPT_ERR_BAD_TIME, "stage %d: tape option %d's bwd_extra %g must be finite and >= 0",
                                 i, j + 1, e);
            if (e > DBL_MAX / 4 - c[i].b)
                return _CKPT_ERR(lg, CKPT_ERR_BAD_TIME, "stage %d: tape option %d's bwd_extra %g is too large", i, j + 1, e);
            if (c[i].b + e > b) b = c[i].b + e;
            parts[4 + j] = c[i].option_t[j];
        }
        /* A schedule runs each F at most n times (each B once) and the offload planner adds
           copies: the sum of all times, n + 1 times over and doubled, must stay finite. */
        max_times = DBL_MAX / (4.0 * ((double)n + 1.0));
        if (c[i].f > max_times - times || b > max_times - times - c[i].f)
            return _CKPT_ERR(lg, CKPT_ERR_BAD_TIME,
                             "stage %d: %s %g takes the sum of all stage times over %g (DBL_MAX / (4 (n + 1))): "
                             "a schedule's time could overflow; use a larger time unit", i,
                             c[i].f > max_times - times ? "fwd_time" : "bwd_time (with its slowest tape option)",
                             c[i].f > max_times - times ? c[i].f : b, max_times);
        times += c[i].f + b;
        if (c[i].flags & ~CKPT_STAGE_NO_CHECKPOINT)
            return _CKPT_ERR(lg, CKPT_ERR_BAD_FLAGS, "stage %d: unknown flags 0x%x", i, c[i].flags);
        /* 2^56 per piece and in total keeps every sum the planner forms far from overflow. */
        for (j = 0; j < 4 + c[i].n_options; j++) {
            if (parts[j] > ((uint64_t)1 << 56) || total + parts[j] > ((uint64_t)1 << 56))
                return _CKPT_ERR(lg, CKPT_ERR_SIZE_OVERFLOW,
                                 "stage %d: sizes add up to more than 2^56 bytes", i);
            total += parts[j];
        }
    }
    return CKPT_OK;
}

static uint64_t _ckpt_align_up(uint64_t v) { return (v + CKPT_ALIGN - 1) / CKPT_ALIGN * CKPT_ALIGN; }

/* >>options: tape option o of a stage (0: t and b); its scratch option is the one with the
   smallest tape (the lowest index among equal ones), which every F without tape runs. */
static uint64_t _ckpt_tape_of(const ckpt_cost *c, int o) { return o ? c->option_t[o - 1] : c->t; }
static double _ckpt_bwd_of(const ckpt_cost *c, int o) { return o ? c->b + c->option_extra[o - 1] : c->b; }
static int _ckpt_scratch_option(const ckpt_cost *c) {
    int o, best = 0;
    for (o = 1; o <= c->n_options; o++)
        if (c->option_t[o - 1] < _ckpt_tape_of(c, best)) best = o;
    return best;
}
/* The most tape options of a stage, option 0 included. */
static int _ckpt_max_options(const ckpt_cost *c, int n) {
    int i, m = 1;
    for (i = 0; i < n; i++) if (c[i].n_options + 1 > m) m = c[i].n_options + 1;
    return m;
}

/* The costs the cost model works with (see COST MODEL): every size rounded up to CKPT_ALIGN and,
   when every stage time is 0, each stage timed 1 (forward) and 2 (backward). Costs checked. */
static void _ckpt_costs_model(const ckpt_cost *c, int n, ckpt_cost *out) {
    int i, j, all_zero = 1;
    for (i = 0; i < n; i++) {
        out[i] = c[i];
        out[i].a = _ckpt_align_up(c[i].a);
        out[i].t = _ckpt_align_up(c[i].t);
        out[i].wf = _ckpt_align_up(c[i].wf);
        out[i].wb = _ckpt_align_up(c[i].wb);
        for (j = 0; j < c[i].n_options; j++) out[i].option_t[j] = _ckpt_align_up(c[i].option_t[j]);
        if (c[i].f != 0 || c[i].b != 0) all_zero = 0;
    }
    if (all_zero)   /* no times given: assume the usual backward = 2 x forward */
        for (i = 0; i < n; i++) { out[i].f = 1.0; out[i].b = 2.0; }
}

/* >>analysis -------------------------------------------------------------------------------------
   Replays a schedule in the cost model. It is the simulator (time, peaks, validity) and, for the
   executor, the source of every buffer's lifetime: buffer b is live during ops start..end (op
   indices, O and P included). Offload ops add a timeline: compute runs the F and B ops in order;
   the device-to-host and host-to-device links each run one copy at a time, in schedule order. */
typedef struct _ckpt_link { double d2h, h2d; } _ckpt_link;   /* bytes per unit of time */

typedef struct _ckpt_buf {
    uint64_t bytes;
    uint64_t offset;        /* set by the layout */
    int start, end;         /* op indices, inclusive */
} _ckpt_buf;

/* Buffer indices an op touches; -1: none, or the caller's (X[0], G[0], G[n]). For O, in is the
   device buffer and out the host one; for P, in is the host buffer and out the new device one. */
typedef struct _ckpt_instr {
    int in, out, tape, ws, gout, gin;
    int first;              /* F: first forward of this stage in the step */
    int opt;                /* F: the tape option it runs; B: its tape's */
    int wait_p, wait_p2;    /* F, B: P ops whose copies this op's inputs wait for; -1: none */
    int wait_o;             /* F, B: first of the O ops (chained by o_next) whose device buffer was
                               released just before this op: it waits for their copies; -1: none */
    int src_op;             /* P, W: its O op; O: the P that brought the buffer back, or -1 */
    int unread;             /* P: nothing reads what it brings back (compute waits for it) */
} _ckpt_instr;

typedef struct _ckpt_analysis {
    _ckpt_buf *bufs;        /* device */
    int n_bufs;
    _ckpt_buf *hbufs;       /* pinned host (offloaded boundaries) */
    int n_hbufs;
    _ckpt_instr *instr;     /* one per op */
    int *o_next;            /* per O op: the next O in the same wait list; -1: end */
    double time;            /* makespan (the sum of f and b when nothing is offloaded) */
    double compute_time;    /* sum of f and b */
    uint64_t peak, host_peak;
    uint64_t host_peak_aligned; /* host_peak with every buffer rounded up to CKPT_ALIGN */
    int fn_op;              /* index of F(n) */
    int n_offloads;         /* O ops */
} _ckpt_analysis;

static void _ckpt_analysis_free(const ckpt_allocator *al, _ckpt_analysis *an) {
    _ckpt_free(al, an->bufs);
    _ckpt_free(al, an->hbufs);
    _ckpt_free(al, an->instr);
    _ckpt_free(al, an->o_next);
    memset(an, 0, sizeof *an);
}

static int _ckpt_new_buf(_ckpt_analysis *an, uint64_t bytes, int k) {
    _ckpt_buf *b = &an->bufs[an->n_bufs];
    b->bytes = bytes; b->offset = 0; b->start = k; b->end = k;
    return an->n_bufs++;
}


/* Peak of the live bytes over ops 0..n_ops-1 of buffers with [start, end] lifetimes; with
   `aligned`, every buffer rounded up to CKPT_ALIGN (what a layout needs at least). */
static uint64_t _ckpt_peak_of(const _ckpt_buf *b, int nb, int n_ops, int aligned, int64_t *delta) {
    int64_t live = 0;
    uint64_t peak = 0;
    int k, i;
    if (nb == 0) return 0;
    memset(delta, 0, ((size_t)n_ops + 2) * sizeof *delta);
    for (i = 0; i < nb; i++) {
        int64_t bytes = (int64_t)(aligned ? _ckpt_align_up(b[i].bytes) : b[i].bytes);
        if (bytes == 0) continue;
        delta[b[i].start] += bytes;
        delta[b[i].end + 1] -= bytes;
    }
    for (k = 0; k < n_ops; k++) {
        live += delta[k];
        if ((uint64_t)live > peak) peak = (uint64_t)live;
    }
    return peak;
}

/* Per-analysis scratch of the structural pass. */
typedef struct _ckpt_an_work {
    int *cur_x, *cur_t, *cur_g;             /* per boundary / stage: live buffer index or -1 */
    int *cur_hx, *cur_ht;                   /* host copies of X[i] and T[i] waiting for a P */
    int *topt;                              /* per stage: the option of its live tape */
    int *o_op;              /* per device buffer: the O op that offloaded it, or -1 */
    int *p_op;              /* per device buffer: the P op that created it, or -1 */
    int *w_op;              /* per device buffer: the W op that released it, or -1 */
    int *last_read;         /* per device buffer: the last F/B op that read it */
    unsigned char *used;
} _ckpt_an_work;

/* A compute op k reads device buffer b. The first read of a prefetched boundary waits for the
   prefetch and ends the life of its host copy. */
static void _ckpt_an_read(_ckpt_analysis *an, _ckpt_an_work *w, int b, int k) {
    if (w->p_op[b] >= 0 && w->last_read[b] < 0) {
        if (an->instr[k].wait_p < 0) an->instr[k].wait_p = w->p_op[b];
        else an->instr[k].wait_p2 = w->p_op[b];
        an->hbufs[an->instr[w->p_op[b]].in].end = k;
    }
    if (an->bufs[b].end < k) an->bufs[b].end = k;
    w->last_read[b] = k;
}

/* The timeline of offload copies (see the cost model): sets the makespan and, for each offloaded
   device buffer, how long it stays (until its copy is done, as seen from the next compute op),
   and the wait lists of the executor. link NULL: untimed; an offloaded buffer then stays until
   its P. span (NULL: not wanted) gets each op's start and end (>>trace). */
static void _ckpt_an_timeline(const ckpt_cost *c, const ckpt_op *ops, int n_ops, const _ckpt_link *link,
                              _ckpt_analysis *an, _ckpt_an_work *w, double *copy_end, int *pending, double *span) {
    double clock = 0, d2h_free = 0, h2d_free = 0, must_wait = 0;
    int k, np = 0, j, kept, forced_head = -1;   /* pending: offloaded buffers, in the order of their O */
    for (k = 0; k < n_ops; k++) {
        const ckpt_op *op = &ops[k];
        _ckpt_instr *in = &an->instr[k];
        if (op->kind == CKPT_OP_O) {
            double start = clock > d2h_free ? clock : d2h_free;
            if (in->src_op >= 0 && copy_end[in->src_op] > start) start = copy_end[in->src_op];
            copy_end[k] = link ? start + (double)an->hbufs[in->out].bytes / link->d2h : start;
            d2h_free = copy_end[k];
            pending[np++] = in->in;
            if (span) { span[2 * k] = start; span[2 * k + 1] = copy_end[k]; }
        } else if (op->kind == CKPT_OP_P) {
            int o = in->src_op, old = an->instr[o].in;
            double start = clock > h2d_free ? clock : h2d_free;
            /* Still on the device: it goes now. A P between here and the next compute op (which
               waits for the copy) may reuse its region: safe, as the host-to-device stream runs
               in order and this P's copy already waits for that O's copy. */
            for (j = 0; j < np; j++)
                if (pending[j] == old) {
                    if (an->bufs[old].end < k - 1) an->bufs[old].end = k - 1;
                    if (copy_end[o] > must_wait) must_wait = copy_end[o];
                    an->o_next[o] = forced_head; forced_head = o;
                    memmove(pending + j, pending + j + 1, (size_t)(--np - j) * sizeof *pending);
                    break;
                }
            if (copy_end[o] > start) start = copy_end[o];
            copy_end[k] = link ? start + (double)an->hbufs[in->in].bytes / link->h2d : start;
            h2d_free = copy_end[k];
            if (span) { span[2 * k] = start; span[2 * k + 1] = copy_end[k]; }
            if (in->unread && copy_end[k] > must_wait) must_wait = copy_end[k];
        } else if (op->kind == CKPT_OP_W) {     /* compute waits for the copy; the buffer goes */
            for (j = 0; j < np; j++)
                if (pending[j] == in->in) {
                    if (an->bufs[in->in].end < k - 1) an->bufs[in->in].end = k - 1;
                    memmove(pending + j, pending + j + 1, (size_t)(--np - j) * sizeof *pending);
                    break;
                }
            if (span) span[2 * k] = clock;
            if (copy_end[in->src_op] > clock) clock = copy_end[in->src_op];
            if (span) span[2 * k + 1] = clock;
        } else {
            double s = clock > must_wait ? clock : must_wait, dur;
            if (in->wait_p >= 0 && copy_end[in->wait_p] > s) s = copy_end[in->wait_p];
            if (in->wait_p2 >= 0 && copy_end[in->wait_p2] > s) s = copy_end[in->wait_p2];
            in->wait_o = forced_head;
            forced_head = -1;
            must_wait = 0;
            if (link) {     /* copies end in the order of their O (one device-to-host channel) */
                for (kept = j = 0; j < np && copy_end[w->o_op[pending[j]]] <= s; j++) {
                    int b = pending[j], o = w->o_op[b];
                    if (w->last_read[b] < k) {  /* copy done: released */
                        if (an->bufs[b].end < k - 1) an->bufs[b].end = k - 1;
                        an->o_next[o] = in->wait_o; in->wait_o = o;
                    } else {
                        pending[kept++] = b;
                    }
                }
                if (kept < j) memmove(pending + kept, pending + j, (size_t)(np - j) * sizeof *pending);
                np -= j - kept;
            }
            dur = op->kind == CKPT_OP_F ? c[op->stage - 1].f : _ckpt_bwd_of(&c[op->stage - 1], in->opt);
            clock = s + dur;
            an->compute_time += dur;
            if (span) { span[2 * k] = s; span[2 * k + 1] = clock; }
        }
    }
    for (j = 0; j < np; j++) an->bufs[pending[j]].end = n_ops - 1;   /* released by the final sync */
    an->time = clock;
    if (d2h_free > an->time) an->time = d2h_free;
    if (h2d_free > an->time) an->time = h2d_free;
}

/* Memory that a planner's loop of analyses reuses (_ckpt_sched_eval_into): one block, grown when
   an analysis needs more. Fresh allocations for each of thousands of analyses cost more in page
   faults and zeroing than the analyses themselves (bench/RESULTS.md). */
typedef struct _ckpt_an_scratch { void *p; size_t size, used; } _ckpt_an_scratch;

/* An array of the analysis: with no scratch, its own zeroed allocation; with one, the next zeroed
   part of its block (pass 0 only counts the bytes, pass 1 hands out the parts). */
static void *_ckpt_an_array(const ckpt_allocator *al, _ckpt_an_scratch *sc, int pass, size_t count, size_t size) {
    size_t bytes = (count * size + 15) / 16 * 16;
    void *p;
    if (!sc) return _ckpt_calloc(al, count, size);
    p = pass ? (unsigned char *)sc->p + sc->used : NULL;
    sc->used += bytes;
    return p;
}

/* Returns CKPT_OK or CKPT_ERR_BAD_SCHEDULE (op index in *bad, reason in *why) or
   CKPT_ERR_OUT_OF_HOST_MEMORY. an may ask for buffers (want_bufs) or only for time and peaks; span
   (2 x n_ops, or NULL) gets the ops' predicted start and end (>>trace). sc: the scratch to take
   the arrays from (NULL: allocate them), only without want_bufs. */
static ckpt_result _ckpt_analyze(const ckpt_cost *c, int n, const ckpt_op *ops, int n_ops, const _ckpt_link *link,
                                 const ckpt_allocator *al, _ckpt_an_scratch *sc, int want_bufs, _ckpt_analysis *an,
                                 int *bad, const char **why, double *span) {
    _ckpt_an_work w;
    int64_t *delta = NULL;
    int *pending = NULL;
    double *copy_end = NULL;
    size_t nb_cap = (size_t)n_ops * 3 + 1;
    int k, next_b = 0, fn_done = 0, pass;
    ckpt_result res = CKPT_OK;
    memset(an, 0, sizeof *an);
    memset(&w, 0, sizeof w);
    an->fn_op = -1;
    *bad = -1; *why = "";
    CKPT_ASSERT(!sc || !want_bufs);
    if (n_ops > CKPT_MAX_OPS) return CKPT_ERR_BAD_ARGUMENT;
    for (pass = sc ? 0 : 1; pass < 2; pass++) {
        if (sc && pass == 1) {
            if (sc->used > sc->size) {
                _ckpt_free(al, sc->p);
                sc->p = _ckpt_malloc(al, sc->used);
                sc->size = sc->p ? sc->used : 0;
                if (!sc->p) return CKPT_ERR_OUT_OF_HOST_MEMORY;
            }
            memset(sc->p, 0, sc->used);
        }
        if (sc) sc->used = 0;
        w.cur_x = (int *)_ckpt_an_array(al, sc, pass, (size_t)n + 1, sizeof(int));
        w.cur_t = (int *)_ckpt_an_array(al, sc, pass, (size_t)n + 1, sizeof(int));
        w.cur_g = (int *)_ckpt_an_array(al, sc, pass, (size_t)n + 1, sizeof(int));
        w.cur_hx = (int *)_ckpt_an_array(al, sc, pass, (size_t)n + 1, sizeof(int));
        w.cur_ht = (int *)_ckpt_an_array(al, sc, pass, (size_t)n + 1, sizeof(int));
        w.used = (unsigned char *)_ckpt_an_array(al, sc, pass, (size_t)n + 1, 1);
        w.topt = (int *)_ckpt_an_array(al, sc, pass, (size_t)n + 1, sizeof(int));
        w.o_op = (int *)_ckpt_an_array(al, sc, pass, nb_cap, sizeof(int));
        w.p_op = (int *)_ckpt_an_array(al, sc, pass, nb_cap, sizeof(int));
        w.w_op = (int *)_ckpt_an_array(al, sc, pass, nb_cap, sizeof(int));
        w.last_read = (int *)_ckpt_an_array(al, sc, pass, nb_cap, sizeof(int));
        an->bufs = (_ckpt_buf *)_ckpt_an_array(al, sc, pass, nb_cap, sizeof(_ckpt_buf));
        an->hbufs = (_ckpt_buf *)_ckpt_an_array(al, sc, pass, (size_t)n_ops + 1, sizeof(_ckpt_buf));
        an->instr = (_ckpt_instr *)_ckpt_an_array(al, sc, pass, (size_t)n_ops + 1, sizeof(_ckpt_instr));
        an->o_next = (int *)_ckpt_an_array(al, sc, pass, (size_t)n_ops + 1, sizeof(int));
        delta = (int64_t *)_ckpt_an_array(al, sc, pass, (size_t)n_ops + 2, sizeof(int64_t));
        pending = (int *)_ckpt_an_array(al, sc, pass, (size_t)n_ops + 1, sizeof(int));
        copy_end = (double *)_ckpt_an_array(al, sc, pass, (size_t)n_ops + 1, sizeof(double));
    }
    if (!w.cur_x || !w.cur_t || !w.cur_g || !w.cur_hx || !w.cur_ht || !w.used || !w.topt || !w.o_op || !w.p_op || !w.w_op || !w.last_read || !an->bufs ||
        !an->hbufs || !an->instr || !an->o_next || !delta || !pending || !copy_end) {
        res = CKPT_ERR_OUT_OF_HOST_MEMORY;
        goto done;
    }
    for (k = 0; k <= n; k++) w.cur_x[k] = w.cur_t[k] = w.cur_g[k] = w.cur_hx[k] = w.cur_ht[k] = -1;
    for (k = 0; k < (int)nb_cap; k++) w.o_op[k] = w.p_op[k] = w.w_op[k] = w.last_read[k] = -1;
#define _CKPT_BAD(text) do { *bad = k; *why = (text); res = CKPT_ERR_BAD_SCHEDULE; goto done; } while (0)
    for (k = 0; k < n_ops; k++) {
        const ckpt_op *op = &ops[k];
        int i = op->stage;
        _ckpt_instr *in = &an->instr[k];
        in->in = in->out = in->tape = in->ws = in->gout = in->gin = -1;
        in->wait_p = in->wait_p2 = in->wait_o = in->src_op = -1;
        an->o_next[k] = -1;
        if (i < 1 || i > n) _CKPT_BAD("stage out of range 1..n");
        if (op->kind == CKPT_OP_F) {
            const ckpt_cost *s = &c[i - 1];
            if (op->tape != 0 && op->tape != 1) _CKPT_BAD("F tape flag must be 0 or 1");
            if (op->tape && (op->option < 0 || op->option > s->n_options)) _CKPT_BAD("F(i, tape) names a tape option the stage does not have");
            if (i == n && fn_done) _CKPT_BAD("F(n) runs more than once");
            if (i == n && !op->tape) _CKPT_BAD("F(n) must keep its tape");
            if (w.cur_hx[i] >= 0) _CKPT_BAD("F(i) recomputes X[i] while its host copy waits for a P(i)");
            if (op->tape && w.cur_ht[i] >= 0) _CKPT_BAD("F(i, tape) recomputes T[i] while its host copy waits for a P(i, tape)");
            if (i >= 2) {
                if (w.cur_x[i - 1] < 0) _CKPT_BAD("F(i) reads X[i-1], which is not live");
                if (w.w_op[w.cur_x[i - 1]] >= 0) _CKPT_BAD("F(i) reads X[i-1] after a W(i-1) released it");
                in->in = w.cur_x[i - 1];
                _ckpt_an_read(an, &w, in->in, k);
            }
            if (s->flags & CKPT_STAGE_NO_CHECKPOINT) {
                if (w.used[i - 1]) _CKPT_BAD("F(i) runs twice from one X[i-1], but stage i forbids a checkpoint at its input");
                w.used[i - 1] = 1;
            }
            in->out = w.cur_x[i] = _ckpt_new_buf(an, s->a, k);
            w.used[i] = 0;
            in->opt = op->tape ? op->option : _ckpt_scratch_option(s);
            if (op->tape) { in->tape = w.cur_t[i] = _ckpt_new_buf(an, _ckpt_tape_of(s, in->opt), k); w.topt[i] = in->opt; }
            else in->tape = _ckpt_new_buf(an, _ckpt_tape_of(s, in->opt), k);
            in->ws = _ckpt_new_buf(an, s->wf, k);
            if (i == n) { fn_done = 1; next_b = n; an->fn_op = k; w.cur_x[n] = -1; }
        } else if (op->kind == CKPT_OP_B) {
            const ckpt_cost *s = &c[i - 1];
            if (!fn_done) _CKPT_BAD("B before F(n)");
            if (i != next_b) _CKPT_BAD("B must run in order n, n-1, ..., 1, each once");
            if (w.cur_t[i] < 0) _CKPT_BAD("B(i) needs T[i], which no F(i, tape) kept");
            if (w.cur_ht[i] >= 0) _CKPT_BAD("B(i) consumes T[i] while its host copy waits for a P(i, tape)");
            in->tape = w.cur_t[i];
            in->opt = w.topt[i];
            _ckpt_an_read(an, &w, in->tape, k);
            w.cur_t[i] = -1;
            if (i >= 2) {
                if (w.cur_x[i - 1] < 0) _CKPT_BAD("B(i) needs X[i-1], which is not live");
                if (w.cur_hx[i - 1] >= 0) _CKPT_BAD("B(i) consumes X[i-1] while its host copy waits for a P(i-1)");
                in->in = w.cur_x[i - 1];
                _ckpt_an_read(an, &w, in->in, k);
                w.cur_x[i - 1] = -1;
                w.used[i - 1] = 0;
            }
            if (i < n) { an->bufs[w.cur_g[i]].end = k; in->gout = w.cur_g[i]; w.cur_g[i] = -1; }
            if (i >= 2) in->gin = w.cur_g[i - 1] = _ckpt_new_buf(an, c[i - 2].a, k);
            in->ws = _ckpt_new_buf(an, s->wb, k);
            next_b--;
        } else if (op->kind == CKPT_OP_O || op->kind == CKPT_OP_P || op->kind == CKPT_OP_W) {
            /* tape 0: boundary X[i] (1..n-1); tape 1: stage i's tape T[i] */
            int *cur = op->tape ? w.cur_t : w.cur_x, *cur_h = op->tape ? w.cur_ht : w.cur_hx;
            if (op->tape != 0 && op->tape != 1) _CKPT_BAD("O/P/W tape flag must be 0 (X[i]) or 1 (T[i])");
            if (!op->tape && i >= n) _CKPT_BAD("O/P/W of a boundary: X[1]..X[n-1]");
            if (op->kind == CKPT_OP_W) {
                if (cur_h[i] < 0 || cur[i] < 0 || w.o_op[cur[i]] < 0) _CKPT_BAD("W without an O before it");
                if (w.w_op[cur[i]] >= 0) _CKPT_BAD("W twice before a P");
                in->in = cur[i];
                in->src_op = w.o_op[cur[i]];
                w.w_op[cur[i]] = k;
            } else if (op->kind == CKPT_OP_O) {
                if (cur[i] < 0) _CKPT_BAD("O copies a buffer that is not live");
                if (cur_h[i] >= 0 || w.o_op[cur[i]] >= 0) _CKPT_BAD("O twice before a P");
                in->in = cur[i];
                in->src_op = w.p_op[in->in];    /* a prefetched buffer: the copy out waits for it */
                w.o_op[in->in] = k;
                in->out = cur_h[i] = an->n_hbufs;
                an->hbufs[an->n_hbufs].bytes = an->bufs[in->in].bytes;
                an->hbufs[an->n_hbufs].start = an->hbufs[an->n_hbufs].end = k;
                an->n_hbufs++;
                an->n_offloads++;
                if (an->bufs[in->in].end < k) an->bufs[in->in].end = k;
            } else {
                int old = cur[i];
                if (cur_h[i] < 0) _CKPT_BAD("P without an O before it");
                if (old >= 0 && w.o_op[old] < 0) _CKPT_BAD("P while the buffer is live and not offloaded");
                in->in = cur_h[i];
                in->src_op = an->hbufs[cur_h[i]].start;     /* the O this P undoes made the host copy */
                cur_h[i] = -1;
                in->out = cur[i] = _ckpt_new_buf(an, an->hbufs[in->in].bytes, k);
                w.p_op[in->out] = k;
                an->hbufs[in->in].end = k;
            }
        } else {
            _CKPT_BAD("unknown op kind");
        }
    }
    k = n_ops;
    if (!fn_done) _CKPT_BAD("the schedule never runs F(n)");
    if (next_b != 0) _CKPT_BAD("the schedule does not run every B down to B(1)");
    for (k = 0; k < n_ops; k++)
        if (ops[k].kind == CKPT_OP_P && w.last_read[an->instr[k].out] < 0) an->instr[k].unread = 1;
    for (k = 1; k <= n; k++)
        if (w.cur_hx[k] >= 0 || w.cur_ht[k] >= 0) {
            k = an->hbufs[w.cur_hx[k] >= 0 ? w.cur_hx[k] : w.cur_ht[k]].start;
            _CKPT_BAD("O without a P after it");
        }
    k = n_ops;
#undef _CKPT_BAD
    /* The first F(i) of the schedule is the first forward; every later one is a replay. */
    {
        unsigned char *seen = w.used;
        memset(seen, 0, (size_t)n + 1);
        for (k = 0; k < n_ops; k++)
            if (ops[k].kind == CKPT_OP_F) {
                an->instr[k].first = !seen[ops[k].stage];
                seen[ops[k].stage] = 1;
            }
    }
    _ckpt_an_timeline(c, ops, n_ops, link, an, &w, copy_end, pending, span);
    an->peak = _ckpt_peak_of(an->bufs, an->n_bufs, n_ops, 0, delta);
    an->host_peak = _ckpt_peak_of(an->hbufs, an->n_hbufs, n_ops, 0, delta);
    /* the pool is laid out in CKPT_ALIGN steps: the planner keeps that bound within the budget */
    an->host_peak_aligned = _ckpt_peak_of(an->hbufs, an->n_hbufs, n_ops, 1, delta);
done:
    if (!sc) {
        _ckpt_free(al, w.cur_x); _ckpt_free(al, w.cur_t); _ckpt_free(al, w.cur_g);
        _ckpt_free(al, w.cur_hx); _ckpt_free(al, w.cur_ht);
        _ckpt_free(al, w.used); _ckpt_free(al, w.topt); _ckpt_free(al, w.o_op); _ckpt_free(al, w.p_op); _ckpt_free(al, w.w_op); _ckpt_free(al, w.last_read);
        _ckpt_free(al, delta); _ckpt_free(al, pending); _ckpt_free(al, copy_end);
    }
    if (res != CKPT_OK || !want_bufs) {
        double t = an->time, ct = an->compute_time;
        uint64_t p = an->peak, hp = an->host_peak, hpa = an->host_peak_aligned;
        int f = an->fn_op, no = an->n_offloads;
        if (sc) memset(an, 0, sizeof *an); else _ckpt_analysis_free(al, an);
        an->time = t; an->compute_time = ct; an->peak = p; an->host_peak = hp; an->host_peak_aligned = hpa;
        an->fn_op = f; an->n_offloads = no;
    }
    return res;
}

/* The public simulators: validate, replay (link NULL: untimed), report; with want_bufs the caller
   frees an (ckpt_trace_predict, which also takes the ops' spans). */
static ckpt_result _ckpt_simulate(const ckpt_cost *costs, int n, const ckpt_op *ops, int n_ops, const _ckpt_link *link,
                                  int want_bufs, double *span, _ckpt_analysis *an, int *bad_op) {
    const char *why;
    int bad;
    ckpt_cost *mc;
    ckpt_result r = _ckpt_check_costs(costs, n, NULL);
    if (bad_op) *bad_op = -1;
    if (r != CKPT_OK) return r;
    if (!ops && n_ops > 0) return CKPT_ERR_NULL_ARGUMENT;
    if (n_ops < 0) return CKPT_ERR_BAD_INDEX;
    if (!(mc = (ckpt_cost *)_ckpt_calloc(NULL, (size_t)n, sizeof *mc))) return CKPT_ERR_OUT_OF_HOST_MEMORY;
    _ckpt_costs_model(costs, n, mc);
    r = _ckpt_analyze(mc, n, ops, n_ops, link, NULL, NULL, want_bufs, an, &bad, &why, span);
    _ckpt_free(NULL, mc);
    if (bad_op) *bad_op = bad;
    return r;
}

CKPT_API ckpt_result ckpt_schedule_simulate(const ckpt_cost *costs, int n, const ckpt_op *ops,
                                            int n_ops, double *time, uint64_t *peak, int *bad_op) {
    _ckpt_analysis an;
    ckpt_result r;
    if (time) *time = 0;
    if (peak) *peak = 0;
    if ((r = _ckpt_simulate(costs, n, ops, n_ops, NULL, 0, NULL, &an, bad_op)) != CKPT_OK) return r;
    if (time) *time = an.time;
    if (peak) *peak = an.peak;
    return CKPT_OK;
}

CKPT_API ckpt_result ckpt_schedule_simulate_offload(const ckpt_cost *costs, int n, const ckpt_op *ops, int n_ops,
                                                    double bandwidth_d2h, double bandwidth_h2d, ckpt_sim *out,
                                                    int *bad_op) {
    _ckpt_analysis an;
    _ckpt_link link;
    ckpt_result r;
    if (bad_op) *bad_op = -1;
    if (!(bandwidth_d2h > 0 && bandwidth_d2h < DBL_MAX) || !(bandwidth_h2d >= 0 && bandwidth_h2d < DBL_MAX))
        return CKPT_ERR_BAD_ARGUMENT;
    link.d2h = bandwidth_d2h;
    link.h2d = bandwidth_h2d > 0 ? bandwidth_h2d : bandwidth_d2h;
    r = _ckpt_simulate(costs, n, ops, n_ops, &link, 0, NULL, &an, bad_op);
    if (r != CKPT_OK) return r;
    if (!(an.time < DBL_MAX)) return CKPT_ERR_BAD_ARGUMENT;     /* a copy's bytes / bandwidth overflowed */
    if (out) {
        out->time = an.time; out->compute_time = an.compute_time;
        out->peak = an.peak; out->host_peak = an.host_peak;
    }
    return CKPT_OK;
}

/* >>planner: schedules from segments ------------------------------------------------------------
   Store-all, every-k, sqrt and greedy all cut the chain into segments. A recomputed segment runs
   forward without tapes (keeping only its input X[p-1]) and is recomputed with tapes just before
   its backward; a stored segment keeps its tapes. The last segment is always stored. */
typedef struct _ckpt_sched {
    ckpt_op *ops;
    int n_ops, cap;
} _ckpt_sched;

/* Appends an op (F with tape: in tape option `option`). */
static int _ckpt_sched_push_o(const ckpt_allocator *al, _ckpt_sched *s, ckpt_op_kind kind, int stage, int tape,
                              int option) {
    if (s->n_ops == s->cap) {
        int cap = s->cap ? s->cap * 2 : 64;
        ckpt_op *o = (ckpt_op *)_ckpt_malloc(al, (size_t)cap * sizeof(ckpt_op));
        if (!o) return 0;
        if (s->n_ops) memcpy(o, s->ops, (size_t)s->n_ops * sizeof(ckpt_op));
        _ckpt_free(al, s->ops);
        s->ops = o; s->cap = cap;
    }
    s->ops[s->n_ops].kind = kind; s->ops[s->n_ops].stage = stage; s->ops[s->n_ops].tape = tape;
    s->ops[s->n_ops].option = option;
    s->n_ops++;
    return 1;
}
static int _ckpt_sched_push(const ckpt_allocator *al, _ckpt_sched *s, ckpt_op_kind kind, int stage, int tape) {
    return _ckpt_sched_push_o(al, s, kind, stage, tape, 0);
}

/* rec[i] (1-based stage) = 1 when stage i belongs to a recomputed segment; start[i] = 1 when a
   segment starts at stage i (start[1] is implied). */
static ckpt_result _ckpt_build_segments(const ckpt_allocator *al, int n, const unsigned char *start,
                                        const unsigned char *rec, _ckpt_sched *out) {
    int i, ok = 1;
    out->n_ops = 0;
    for (i = 1; i <= n && ok; i++) ok = _ckpt_sched_push(al, out, CKPT_OP_F, i, !rec[i]);
    for (i = n; i >= 1 && ok;) {
        int q = i, p = i;
        while (p > 1 && !start[p] && rec[p - 1] == rec[q]) p--;
        if (rec[q]) {
            int j;
            for (j = p; j <= q && ok; j++) ok = _ckpt_sched_push(al, out, CKPT_OP_F, j, 1);
        }
        for (; i >= p && ok; i--) ok = _ckpt_sched_push(al, out, CKPT_OP_B, i, 0);
    }
    return ok ? CKPT_OK : CKPT_ERR_OUT_OF_HOST_MEMORY;
}

/* Recomputed segments may not start at a stage that forbids a checkpoint at its input: such a
   segment merges into the one before it (or, at stage 1, becomes stored). */
static void _ckpt_fix_segments(const ckpt_cost *c, int n, unsigned char *start, unsigned char *rec) {
    int i;
    for (i = n; i >= 1; i--) {
        if (!rec[i] || !(i == 1 || start[i] || !rec[i - 1])) continue;
        if (!(c[i - 1].flags & CKPT_STAGE_NO_CHECKPOINT)) continue;
        if (i == 1) {
            int j;
            for (j = 1; j <= n && rec[j] && (j == 1 || !start[j]); j++) rec[j] = 0;
        } else {
            start[i] = 0;     /* the segment now starts earlier: at the previous segment's */
            rec[i - 1] = 1;   /* start if that one is recomputed, else at stage i-1 */
        }
    }
}

/* Segments of k stages, all recomputed but the last, which starts at stage `last`. */
static ckpt_result _ckpt_segments_sched(const ckpt_allocator *al, const ckpt_cost *c, int n, int k, int last,
                                        _ckpt_sched *out) {
    unsigned char *start = (unsigned char *)_ckpt_calloc(al, (size_t)n + 2, 1);
    unsigned char *rec = (unsigned char *)_ckpt_calloc(al, (size_t)n + 2, 1);
    ckpt_result r = CKPT_ERR_OUT_OF_HOST_MEMORY;
    int i;
    if (start && rec) {
        for (i = 1; i <= n; i++) { start[i] = i < last ? ((i - 1) % k) == 0 : i == last; rec[i] = i < last; }
        _ckpt_fix_segments(c, n, start, rec);
        r = _ckpt_build_segments(al, n, start, rec, out);
    }
    _ckpt_free(al, start); _ckpt_free(al, rec);
    return r;
}
/* Every-k's last segment: its first stage, after the last multiple of k. */
static int _ckpt_every_k_last(int n, int k) { return k >= n ? 1 : ((n - 1) / k) * k + 1; }
static ckpt_result _ckpt_every_k_sched(const ckpt_allocator *al, const ckpt_cost *c, int n, int k,
                                       _ckpt_sched *out) {
    return _ckpt_segments_sched(al, c, n, k, _ckpt_every_k_last(n, k), out);
}

/* sqrt: m = round(sqrt(n)) segments with evenly spaced starts. */
static ckpt_result _ckpt_sqrt_sched(const ckpt_allocator *al, const ckpt_cost *c, int n, _ckpt_sched *out) {
    unsigned char *start = (unsigned char *)_ckpt_calloc(al, (size_t)n + 2, 1);
    unsigned char *rec = (unsigned char *)_ckpt_calloc(al, (size_t)n + 2, 1);
    ckpt_result r = CKPT_ERR_OUT_OF_HOST_MEMORY;
    int i, j, m = 1, last = 1;
    while ((m + 1) * (m + 1) <= n) m++;         /* floor(sqrt(n)) ... */
    if (n - m * m > m) m++;                     /* ... rounded to the nearest integer */
    if (start && rec) {
        for (j = 0; j < m; j++) {
            int s = (int)(((int64_t)j * n) / m) + 1;
            start[s] = 1;
            last = s;
        }
        for (i = 1; i <= n; i++) rec[i] = i < last;
        _ckpt_fix_segments(c, n, start, rec);
        r = _ckpt_build_segments(al, n, start, rec, out);
    }
    _ckpt_free(al, start); _ckpt_free(al, rec);
    return r;
}

/* >>planner: greedy (Capuchin's rule: bytes saved per second of recompute) ---------------------
   Starting from store-all, repeatedly turn the stage that saves the most peak bytes per second of
   added recomputation into a recomputed one (runs of recomputed stages share one checkpoint at
   their input), until the plan fits. The trajectory does not depend on the budget, so the
   smallest budget that works is the smallest peak along it. */
/* Time and peak of a schedule the planner built (so always valid). */
static ckpt_result _ckpt_sched_eval_into(const ckpt_allocator *al, const ckpt_cost *c, int n, const _ckpt_sched *s,
                                         _ckpt_an_scratch *sc, double *t, uint64_t *p) {
    _ckpt_analysis an;
    const char *why;
    int bad;
    ckpt_result r = _ckpt_analyze(c, n, s->ops, s->n_ops, NULL, al, sc, 0, &an, &bad, &why, NULL);
    *t = an.time; *p = an.peak;
    CKPT_ASSERT(r != CKPT_ERR_BAD_SCHEDULE);
    return r;
}
/* Store-all's time and peak: the reference figures of every plan's info. */
static ckpt_result _ckpt_store_all_figures(const ckpt_allocator *al, const ckpt_cost *c, int n, double *t, uint64_t *p) {
    _ckpt_sched s = {NULL, 0, 0};
    ckpt_result r = _ckpt_every_k_sched(al, c, n, n, &s);
    if (r == CKPT_OK) r = _ckpt_sched_eval_into(al, c, n, &s, NULL, t, p);
    _ckpt_free(al, s.ops);
    return r;
}

static int _ckpt_run_start_ok(const ckpt_cost *c, const unsigned char *rec, int i) {
    int p = i;
    while (p > 1 && rec[p - 1]) p--;
    return !(c[p - 1].flags & CKPT_STAGE_NO_CHECKPOINT);
}

/* Fills *out with the first plan on the trajectory that fits budget; *min_peak gets the smallest
   peak on the trajectory. CKPT_ERR_INFEASIBLE when none fits. */
static ckpt_result _ckpt_greedy_sched(const ckpt_allocator *al, const ckpt_cost *c, int n, uint64_t budget,
                                      _ckpt_sched *out, uint64_t *min_peak) {
    unsigned char *start = (unsigned char *)_ckpt_calloc(al, (size_t)n + 2, 1);
    unsigned char *rec = (unsigned char *)_ckpt_calloc(al, (size_t)n + 2, 1);
    unsigned char *best_rec = (unsigned char *)_ckpt_calloc(al, (size_t)n + 2, 1);
    _ckpt_sched tmp = {NULL, 0, 0};
    _ckpt_an_scratch sc = {NULL, 0, 0};
    double cur_t, e_t;
    uint64_t cur_p, e_p;
    ckpt_result r = CKPT_ERR_OUT_OF_HOST_MEMORY;
    int found = 0, i;
    if (!start || !rec || !best_rec) goto done;
    if ((r = _ckpt_build_segments(al, n, start, rec, &tmp)) != CKPT_OK) goto done;
    if ((r = _ckpt_sched_eval_into(al, c, n, &tmp, &sc, &cur_t, &cur_p)) != CKPT_OK) goto done;
    *min_peak = cur_p;
    for (;;) {
        int best = -1;
        double best_score = -1.0;
        uint64_t best_peak = 0;
        if (!found && cur_p <= budget) { found = 1; memcpy(best_rec, rec, (size_t)n + 2); }
        for (i = 1; i < n; i++) {
            double dt, score;
            if (rec[i]) continue;
            rec[i] = 1;
            if (_ckpt_run_start_ok(c, rec, i)) {
                if ((r = _ckpt_build_segments(al, n, start, rec, &tmp)) != CKPT_OK ||
                    (r = _ckpt_sched_eval_into(al, c, n, &tmp, &sc, &e_t, &e_p)) != CKPT_OK) { rec[i] = 0; goto done; }
                dt = e_t - cur_t;
                /* bytes saved per unit of added time; a free recomputation scores highest */
                score = e_p < cur_p ? (double)(cur_p - e_p) / (dt > 0 ? dt : 1e-300) : 0.0;
                if (score > best_score || (score == best_score && e_p < best_peak)) {
                    best = i; best_score = score; best_peak = e_p;
                }
            }
            rec[i] = 0;
        }
        if (best < 0) break;
        rec[best] = 1;
        if ((r = _ckpt_build_segments(al, n, start, rec, &tmp)) != CKPT_OK) goto done;
        if ((r = _ckpt_sched_eval_into(al, c, n, &tmp, &sc, &cur_t, &cur_p)) != CKPT_OK) goto done;
        if (cur_p < *min_peak) *min_peak = cur_p;
    }
    r = found ? _ckpt_build_segments(al, n, start, best_rec, out) : CKPT_ERR_INFEASIBLE;
done:
    _ckpt_free(al, tmp.ops); _ckpt_free(al, sc.p);
    _ckpt_free(al, start); _ckpt_free(al, rec); _ckpt_free(al, best_rec);
    return r;
}

/* >>planner: exact search over all schedules (short chains) -------------------------------------
   Dijkstra over states (phase, live X set, live T options, used-checkpoint bits). Phase 0 is the
   forward phase; phase k >= 1 means the next backward is B(k) and G[k] is live. After each F the
   search may drop X[i-1] or X[i] (a buffer is dropped right after its last read); B frees what
   the model says. Labels are (time, peak) lexicographic, or (peak, time) to find the smallest
   feasible budget; both extend monotonically, so Dijkstra is exact. The live tapes are one digit
   per stage, in radix 2 + n_options: 0 for none, 1 + o for T[i] kept in option o.
   Bounds on what is still to come direct the search (A*). Time: every B(j) not yet run needs
   its tape, so it costs at least B(j) in its option when T[j] is live, else F(j) + B(j) (option
   0 is the fastest backward); an op lowers the bound by at most its own time. Peak: B(j) holds
   at least its smallest tape, X[j-1], G[j] and G[j-1] and its workspace, so a state's peak
   counts as at least the largest of those over the B(j) to come (hp), which no completion can
   go below; states over the budget that way are dropped. Labels stay monotone along every op,
   so the first label popped is still the least; the search skips the states whose time spent
   on recomputation, or whose peak, is already beyond the optimum's. */
struct _ckpt_heap_e { double k1; uint64_t k2; int64_t s; };

typedef struct _ckpt_xs {
    const ckpt_cost *c;
    int n, nu;
    int fb_bit[16];     /* boundary j -> U bit, or -1 (the search takes at most 12 stages) */
    uint64_t hp[16];    /* hp[k]: the peak bound of B(1..k) to come (hp[0] = 0) */
    uint64_t budget;    /* (UINT64_MAX when by_peak) */
    int64_t off[16];    /* first base index of each phase */
    int64_t tw[16];     /* tw[j]: weight of stage j + 1's tape digit (tw[0] = 1) */
    int64_t n_states;
    double *time;
    uint64_t *peak;
    int32_t *parent;
    uint16_t *op;       /* kind | stage << 1 | tape << 6 | option << 7 */
    unsigned char *seen;    /* 0: not reached (its time, peak, parent and op are unset), 1:
                               reached, 2: done */
    struct _ckpt_heap_e *heap;
    int64_t heap_n, heap_cap;
    int by_peak;
} _ckpt_xs;

static int _ckpt_xs_less(const struct _ckpt_heap_e *a, const struct _ckpt_heap_e *b) {
    if (a->k1 != b->k1) return a->k1 < b->k1;
    return a->k2 < b->k2;
}
/* h: the bound on the time still to come (_ckpt_xs_h) */
static int _ckpt_xs_push(const ckpt_allocator *al, _ckpt_xs *x, double t, double h, uint64_t p, int64_t s) {
    struct _ckpt_heap_e e;
    int64_t i;
    if (x->heap_n == x->heap_cap) {
        int64_t cap = x->heap_cap ? x->heap_cap * 2 : 4096;
        struct _ckpt_heap_e *h = (struct _ckpt_heap_e *)_ckpt_malloc(al, (size_t)cap * sizeof *h);
        if (!h) return 0;
        if (x->heap_n) memcpy(h, x->heap, (size_t)x->heap_n * sizeof *h);
        _ckpt_free(al, x->heap);
        x->heap = h; x->heap_cap = cap;
    }
    /* key (time + h, peak), or (peak, time + h) with the time as its bits: for doubles >= 0 the
       bit patterns order like the values. Peaks stay below 2^58, so a double holds them
       exactly. */
    t += h;
    e.k1 = x->by_peak ? (double)p : t;
    e.k2 = p;
    if (x->by_peak) memcpy(&e.k2, &t, sizeof t);
    e.s = s;
    i = x->heap_n++;
    while (i > 0 && _ckpt_xs_less(&e, &x->heap[(i - 1) / 2])) { x->heap[i] = x->heap[(i - 1) / 2]; i = (i - 1) / 2; }
    x->heap[i] = e;
    return 1;
}
static struct _ckpt_heap_e _ckpt_xs_pop(_ckpt_xs *x) {
    struct _ckpt_heap_e top = x->heap[0], last = x->heap[--x->heap_n];
    int64_t i = 0;
    for (;;) {
        int64_t l = 2 * i + 1, m;
        if (l >= x->heap_n) break;
        m = (l + 1 < x->heap_n && _ckpt_xs_less(&x->heap[l + 1], &x->heap[l])) ? l + 1 : l;
        if (!_ckpt_xs_less(&x->heap[m], &last)) break;
        x->heap[i] = x->heap[m]; i = m;
    }
    if (x->heap_n) x->heap[i] = last;
    return top;
}

/* State <-> (phase, X bits, T digits, U bits). X bit j-1 is X[j]; T's digit j-1 is T[j]'s. */
static int64_t _ckpt_xs_encode(const _ckpt_xs *x, int ph, uint32_t X, int64_t T, uint32_t U) {
    int xb = ph == 0 ? x->n - 1 : ph - 1;
    int64_t base = ph > x->n ? x->off[ph] : x->off[ph] + (int64_t)X + (T << xb);
    return (base << x->nu) | U;
}
static void _ckpt_xs_decode(const _ckpt_xs *x, int64_t s, int *ph, uint32_t *X, int64_t *T, uint32_t *U) {
    int64_t base = s >> x->nu;
    int p = 0, xb;
    *U = (uint32_t)(s & (((int64_t)1 << x->nu) - 1));
    while (p + 1 <= x->n + 1 && x->off[p + 1] <= base) p++;
    *ph = p;
    if (p > x->n) { *X = 0; *T = 0; return; }
    xb = p == 0 ? x->n - 1 : p - 1;
    base -= x->off[p];
    *X = (uint32_t)(base & (((int64_t)1 << xb) - 1));
    *T = base >> xb;
}
/* T[i]'s digit: 0 when not live, else 1 + its option. */
static int _ckpt_xs_tdig(const _ckpt_xs *x, int64_t T, int i) { return (int)(T / x->tw[i - 1] % (x->c[i - 1].n_options + 2)); }

/* The bound on the time still to come in phase ph (0: the forward phase) with tapes T: B(j) for
   j up to the phase (all in the forward phase), each after F(j) when T[j] is not live. Summed
   from the state alone, so a state has one bound whichever way it was reached. */
static double _ckpt_xs_h(const _ckpt_xs *x, int ph, int64_t T) {
    double h = 0.0;
    int j, d;
    if (ph > x->n) return 0.0;
    for (j = 1; j <= (ph ? ph : x->n); j++)
        h += (d = _ckpt_xs_tdig(x, T, j)) != 0 ? _ckpt_bwd_of(&x->c[j - 1], d - 1) : x->c[j - 1].f + x->c[j - 1].b;
    return h;
}

static uint64_t _ckpt_xs_live(const _ckpt_xs *x, int ph, uint32_t X, int64_t T) {
    uint64_t L = 0;
    int j, d;
    for (j = 1; j <= x->n; j++) {
        if (X & (1u << (j - 1))) L += x->c[j - 1].a;
        if ((d = _ckpt_xs_tdig(x, T, j)) != 0) L += _ckpt_tape_of(&x->c[j - 1], d - 1);
    }
    if (ph >= 1 && ph < x->n) L += x->c[ph - 1].a;   /* G[k] */
    return L;
}

/* A path reaches state `to` at time t and peak p; h and hp: its bounds (hp: x->hp of its B(j)
   to come). By peak, labels compare max(p, hp), the peak any completion reaches at least. */
static int _ckpt_xs_relax(const ckpt_allocator *al, _ckpt_xs *x, int64_t from, int64_t to, double t, double h,
                          uint64_t p, uint64_t hp, uint16_t op) {
    int better;
    uint64_t pe = p > hp ? p : hp, po;
    if (x->seen[to] == 2 || pe > x->budget) return 1;
    if (!x->seen[to]) better = 1;
    else if (x->by_peak) {
        po = x->peak[to] > hp ? x->peak[to] : hp;
        better = pe < po || (pe == po && t < x->time[to]);
    } else better = t < x->time[to] || (t == x->time[to] && p < x->peak[to]);
    if (!better) return 1;
    x->seen[to] = 1; x->time[to] = t; x->peak[to] = p; x->parent[to] = (int32_t)from; x->op[to] = op;
    return _ckpt_xs_push(al, x, t, h, x->by_peak ? pe : p, to);
}

/* Expands F(i, tape) (in tape option opt; without tape, the scratch option) from a state, with
   every drop choice. */
static int _ckpt_xs_forward(const ckpt_allocator *al, _ckpt_xs *x, int64_t s, int ph, uint32_t X,
                            int64_t T, uint32_t U, uint64_t L, int i, int tape, int opt) {
    const ckpt_cost *c = x->c;
    int n = x->n, ub_in = x->fb_bit[i - 1], ub_out = i < n ? x->fb_bit[i] : -1, d;
    double h;
    int o = tape ? opt : _ckpt_scratch_option(&c[i - 1]);
    uint64_t opk = L + c[i - 1].a + _ckpt_tape_of(&c[i - 1], o) + c[i - 1].wf;
    uint64_t pk = opk > x->peak[s] ? opk : x->peak[s];
    double t = x->time[s] + c[i - 1].f;
    uint16_t code = (uint16_t)(CKPT_OP_F | (i << 1) | (tape << 6) | (o << 7));
    int64_t Tk = tape ? T + (int64_t)(1 + opt) * x->tw[i - 1] : T;   /* T with T[i] kept */
    if (i >= 2 && !(X & (1u << (i - 2)))) return 1;
    if (tape && _ckpt_xs_tdig(x, T, i)) return 1;
    if (ub_in >= 0 && (U & (1u << ub_in))) return 1;
    if (opk > x->budget) return 1;
    h = _ckpt_xs_h(x, ph, Tk);   /* (F(n) enters phase n: the same bound) */
    if (i == n) {   /* F(n): enter the backward phase, keeping X[n-1] or dropping it (B(n) then
                       needs it recomputed) */
        uint32_t U2 = ub_in >= 0 ? (U | (1u << ub_in)) : U;
        if (!_ckpt_xs_relax(al, x, s, _ckpt_xs_encode(x, n, X, Tk, U2), t, h, pk, x->hp[n], code)) return 0;
        if (n < 2) return 1;
        if (ub_in >= 0) U2 &= ~(1u << ub_in);
        return _ckpt_xs_relax(al, x, s, _ckpt_xs_encode(x, n, X & ~(1u << (n - 2)), Tk, U2), t, h, pk, x->hp[n], code);
    }
    if ((ph == 0 || i < ph) && (X & (1u << (i - 1)))) return 1;    /* X[i] already live */
    for (d = 0; d < 4; d++) {
        int drop_in = d & 1, drop_out = (d >> 1) & 1;
        uint32_t X2 = X, U2 = U;
        if (drop_in && i < 2) continue;
        if (ph >= 1 && i == ph) { if (drop_out) continue; drop_out = 1; }   /* X[k] is never needed */
        if (ph == 0 && drop_out && !tape) continue;                         /* would do nothing */
        if (ub_in >= 0) U2 |= 1u << ub_in;
        if (ub_out >= 0) U2 &= ~(1u << ub_out);
        if (drop_in) { X2 &= ~(1u << (i - 2)); if (ub_in >= 0 && i >= 2) U2 &= ~(1u << ub_in); }
        if (!drop_out) X2 |= 1u << (i - 1);
        if (!_ckpt_xs_relax(al, x, s, _ckpt_xs_encode(x, ph, X2, Tk, U2), t, h, pk, x->hp[ph ? ph : n], code))
            return 0;
    }
    return 1;
}

static int _ckpt_xs_expand(const ckpt_allocator *al, _ckpt_xs *x, int64_t s) {
    const ckpt_cost *c = x->c;
    int ph, i, o, n = x->n, last;
    uint32_t X, U;
    int64_t T;
    uint64_t L;
    _ckpt_xs_decode(x, s, &ph, &X, &T, &U);
    if (ph > n) return 1;
    L = _ckpt_xs_live(x, ph, X, T);
    if (ph >= 1) {  /* B(k) */
        int k = ph, d = _ckpt_xs_tdig(x, T, k);
        uint64_t opk = L + (k >= 2 ? c[k - 2].a : 0) + c[k - 1].wb;
        if (d && (k < 2 || (X & (1u << (k - 2)))) && opk <= x->budget) {
            uint64_t pk = opk > x->peak[s] ? opk : x->peak[s];
            uint32_t U2 = U;
            int64_t to;
            if (k >= 2 && x->fb_bit[k - 1] >= 0) U2 &= ~(1u << x->fb_bit[k - 1]);
            to = k == 1 ? _ckpt_xs_encode(x, n + 1, 0, 0, U2)
                        : _ckpt_xs_encode(x, k - 1, X & ~(1u << (k - 2)), T - (int64_t)d * x->tw[k - 1], U2);
            if (!_ckpt_xs_relax(al, x, s, to, x->time[s] + _ckpt_bwd_of(&c[k - 1], d - 1),
                                k == 1 ? 0.0 : _ckpt_xs_h(x, k - 1, T - (int64_t)d * x->tw[k - 1]), pk, x->hp[k - 1],
                                (uint16_t)(CKPT_OP_B | (k << 1))))
                return 0;
        }
    }
    last = ph == 0 ? n : ph;
    for (i = 1; i <= last; i++) {
        for (o = 0; o <= c[i - 1].n_options; o++)
            if (!_ckpt_xs_forward(al, x, s, ph, X, T, U, L, i, 1, o)) return 0;
        if (i < last && !_ckpt_xs_forward(al, x, s, ph, X, T, U, L, i, 0, 0)) return 0;
    }
    return 1;
}

/* The first state index of each phase (off[0..n+2]) and the digit weights; returns the size of
   the state space (off[n+2] << nu), below 2^46 for the at most 12 stages the search takes. */
static int64_t _ckpt_xs_layout(const ckpt_cost *c, int n, int64_t *off, int64_t *tw) {
    int j, nu = 0;
    for (j = 0; j < n; j++) nu += (c[j].flags & CKPT_STAGE_NO_CHECKPOINT) ? 1 : 0;
    tw[0] = 1;
    for (j = 1; j <= n; j++) tw[j] = tw[j - 1] * (c[j - 1].n_options + 2);
    off[0] = 0;
    off[1] = ((int64_t)1 << (n - 1)) * tw[n - 1];
    for (j = 1; j <= n; j++) off[j + 1] = off[j] + ((int64_t)1 << (j - 1)) * tw[j];
    off[n + 2] = off[n + 1] + 1;
    return off[n + 2] << nu;
}
/* Size of the state space, or -1 when it is too large to search: 2^23 states (about 200 MB, and
   seconds), 2^20 with tape options, whose chains the long-chain program plans as well (see
   tests/test_planner_match.c) while the offload policy runs the search at many budgets. */
static int64_t _ckpt_xs_size(const ckpt_cost *c, int n) {
    int64_t off[16], tw[16], size;
    if (n > CKPT_EXACT_SEARCH_MAX_STAGES || n > 12) return -1;
    size = _ckpt_xs_layout(c, n, off, tw);
    return size > ((int64_t)1 << (_ckpt_max_options(c, n) > 1 ? 20 : 23)) ? -1 : size;
}

/* by_peak = 0: minimum time under budget; 1: minimum peak (budget ignored). */
static ckpt_result _ckpt_exact_search(const ckpt_allocator *al, const ckpt_cost *c, int n, uint64_t budget,
                                      int by_peak, _ckpt_sched *out, uint64_t *peak_out) {
    _ckpt_xs x;
    int64_t s, goal;
    int j, nu = 0;
    ckpt_result r = CKPT_ERR_OUT_OF_HOST_MEMORY;
    memset(&x, 0, sizeof x);
    x.c = c; x.n = n; x.by_peak = by_peak;
    for (j = 0; j < n; j++) x.fb_bit[j] = (c[j].flags & CKPT_STAGE_NO_CHECKPOINT) ? nu++ : -1;
    x.nu = nu;
    x.n_states = _ckpt_xs_layout(c, n, x.off, x.tw);
    x.budget = by_peak ? UINT64_MAX : budget;
    for (j = 1; j <= n; j++) {   /* B(j): its smallest tape, X[j-1] and G[j-1], G[j], workspace */
        uint64_t b = _ckpt_tape_of(&c[j - 1], _ckpt_scratch_option(&c[j - 1])) + (j >= 2 ? 2 * c[j - 2].a : 0) +
                     (j < n ? c[j - 1].a : 0) + c[j - 1].wb;
        x.hp[j] = b > x.hp[j - 1] ? b : x.hp[j - 1];
    }
    x.time = (double *)_ckpt_malloc(al, (size_t)x.n_states * sizeof(double));
    x.peak = (uint64_t *)_ckpt_malloc(al, (size_t)x.n_states * sizeof(uint64_t));
    x.parent = (int32_t *)_ckpt_malloc(al, (size_t)x.n_states * sizeof(int32_t));
    x.op = (uint16_t *)_ckpt_malloc(al, (size_t)x.n_states * sizeof(uint16_t));
    x.seen = (unsigned char *)_ckpt_calloc(al, (size_t)x.n_states, 1);
    if (!x.time || !x.peak || !x.parent || !x.op || !x.seen) goto done;
    x.seen[0] = 1; x.time[0] = 0; x.peak[0] = 0; x.parent[0] = -1;
    if (!_ckpt_xs_push(al, &x, 0, _ckpt_xs_h(&x, 0, 0), 0, 0)) goto done;
    r = CKPT_ERR_INFEASIBLE;
    while (x.heap_n) {
        struct _ckpt_heap_e e = _ckpt_xs_pop(&x);
        if (x.seen[e.s] == 2) continue;
        x.seen[e.s] = 2;
        if ((e.s >> nu) == x.off[n + 1]) { r = CKPT_OK; goal = e.s; break; }
        if (!_ckpt_xs_expand(al, &x, e.s)) { r = CKPT_ERR_OUT_OF_HOST_MEMORY; break; }
    }
    if (r == CKPT_OK) {
        int len = 0;
        for (s = goal; x.parent[s] >= 0; s = x.parent[s]) len++;
        out->n_ops = 0;
        for (j = 0; j < len; j++)
            if (!_ckpt_sched_push(al, out, CKPT_OP_F, 1, 0)) { r = CKPT_ERR_OUT_OF_HOST_MEMORY; goto done; }
        for (s = goal, j = len - 1; x.parent[s] >= 0; s = x.parent[s], j--) {
            out->ops[j].kind = (ckpt_op_kind)(x.op[s] & 1);
            out->ops[j].stage = (x.op[s] >> 1) & 31;
            out->ops[j].tape = (x.op[s] >> 6) & 1;
            out->ops[j].option = (x.op[s] >> 7) & 3;
        }
        if (peak_out) *peak_out = x.peak[goal];
    }
done:
    _ckpt_free(al, x.time); _ckpt_free(al, x.peak); _ckpt_free(al, x.parent);
    _ckpt_free(al, x.op); _ckpt_free(al, x.seen); _ckpt_free(al, x.heap);
    return r;
}

/* >>planner: persistent dynamic program (long chains) -------------------------------------------
   Sub-problems, each with X[s-1] and G[t] live at its start (G[n] is not counted) and, when
   k = 1, also T[t] (F(t) already ran with its tape):
     Seg(s,t,k)  processes stages t..s backward, ending with G[s-1];
     Drop(s,t,k) (t > s) processes t..s+1, ending with G[s]; it frees X[s-1] after its last read,
                 and its caller recomputes what it needs.
   A sub-problem's peak counts X[s-1] (s >= 2), G[t] (t < n), T[t] when k = 1 and everything
   inside. Seg's options ("then" runs the sub-problems in order; X[s-1] stays live throughout):
     (a) s == t: F(s,1), B(s); with k = 1 only B(s).
     (b) F(s,1) keeping X[s] and T[s]; Seg(s+1,t,k); B(s).
     (c) F(s..j,0), keeping X[j]; Seg(j+1,t,k); Seg(s,j,0).
     (d) F(s..j,0), F(j+1,1) dropping X[j]; Seg(j+2,t,k) (none when j+1 = t, k = 0);
         Seg(s,j+1,1): X[j] is recomputed with the tapes it needs just before B(j+1).
     (e) F(s..j,0), keeping X[j]; Drop(j+1,t,k); Seg(s,j+1,0).
   Drop's options: (c), (d) and (e) with Drop in place of their last Seg (for (c), j > s), and
     (f) F(s,0) keeping X[s] and freeing X[s-1]; Seg(s+1,t,k).
   (c), (d) and (e) run F(s) twice from X[s-1], a checkpoint: stage s must allow one. (a)-(c)
   are rotor's persistent class; (d)-(f) drop a checkpoint or the input of a kept tape once read
   and recompute it later, which is what the optimum over all schedules does on most chains
   where persistent schedules fall short.
   With no-checkpoint flags the optimum instead makes a fresh copy of a boundary X[q] whose
   stage q+1 forbids a checkpoint, recomputing it from a live X[s-1] after F(q+1) consumed the
   first, so that F(q+1) can run again. For that, on chains with flags (and Drops in a window
   of 3 there, when a flagged stage is near):
     Keep(s,t,k) as Drop, but X[s-1] stays live to its end;
     (e) with j = s - 1 in Seg and Drop: Keep(s,t,k), then their last sub-problem;
     (h) in Drop and Keep: F(s..q), the sweep of an option (c)-(e) of (q+1,t) that consumes
         X[q], X[q] made again (from X[s-1], or in a run of flagged stages from the fresh X[q-1])
         where the peak is least, then that option's sub-problems, the second from the fresh
         X[q] (details at _ckpt_dp_options).
   Every F that keeps a tape ((a), (b), (d), and (f) when it keeps T[s] for its caller) is one
   option per tape option; a sub-problem that starts with a tape live (T[t] when k = 1, T[s + w]
   when a Drop keeps one) carries that tape's option in its family. F without tape runs the
   scratch option.
   Instead of a table indexed by memory units, each sub-problem keeps its Pareto frontier of
   (time, peak) points under the budget, so the program is exact in bytes. If the frontiers grow
   past a cap, sizes are rounded up to a coarser unit (never exceeding the budget). */
typedef struct _ckpt_fp { double t; uint64_t p; } _ckpt_fp;

/* One option of a sub-problem: ops before, sub-problem 1 (its peak shifted by o1: what stays
   live under it), sub-problem 2 (shifted by o2), ops after. Time (c + time1) + time2; peak the
   largest of floor (the ops'), o1 + peak1 and o2 + peak2. A sub-problem is (s, t, family id):
   see _CKPT_FID; s1 = 0 or s2 = 0: none. */
typedef struct _ckpt_opt {
    char kind;              /* 'a'..'h' */
    char ik;                /* (h): the kind of the option whose sweep it runs */
    char m;                 /* (h): q - q0 */
    char rt;                /* (h): 1 + the tape option its last F keeps; 0: no tape */
    int j;                  /* the split of (c), (d), (e) */
    double c;
    uint64_t floor, o1, o2;
    int s1, t1, f1, s2, t2, f2;
    int opt;                /* the tape option of the tape its own F keeps */
    short d0, rp;           /* (h): q0 - s + 1; the op of the sweep its last refresh follows */
} _ckpt_opt;

/* Seg(s,t,k) is family k; Drop(s,t,k) ending at G[s + w] (w = 0..2, 0..3 on chains with
   no-checkpoint flags: _ckpt_dp.win), with T[s + w] kept when ke = 1, is family
   _CKPT_DROP(w, ke, k); Keep(s,t,k) likewise _CKPT_KEEP(w, ke, k). */
#define _CKPT_DROP_WINDOW 3
#define _CKPT_DROP(w, ke, k) (2 + 4 * (w) + 2 * (ke) + (k))
#define _CKPT_KEEP(w, ke, k) (_CKPT_DROP(w, ke, k) + 4 * (_CKPT_DROP_WINDOW + 1))
#define _CKPT_FAMILIES (2 + 8 * (_CKPT_DROP_WINDOW + 1))
/* With tape options a family id also carries the option of T[t] (ok, when k = 1) and of the tape
   a Drop keeps (oke, when ke = 1). */
#define _CKPT_FID(f, ok, oke) ((f) + _CKPT_FAMILIES * ((ok) + CKPT_MAX_TAPE_OPTIONS * (oke)))
#define _CKPT_FIDS (_CKPT_FAMILIES * CKPT_MAX_TAPE_OPTIONS * CKPT_MAX_TAPE_OPTIONS)
static int _ckpt_fk(int fid) { return fid % _CKPT_FAMILIES & 1; }

#define _CKPT_IDXN(n, s, t) ((size_t)(s) * (size_t)((n) + 1) + (size_t)(t))

/* >>repeats: sub-chains that repeat. Stages with equal costs share an id; sub-problem (s,t) gets
   a row from the ids of stages s-1..t and whether t = n (s = 1 has no stage s-1). Sub-problems
   of one row have the same options, sizes and frontiers: the program computes each row once (the
   frontiers at its smallest s, the dense table at its first sub-problem in fill order), and the
   others read it. A chain of L copies of a block of p stages has about
   (p + 2) * n rows instead of n * (n + 1) / 2. */
typedef struct _ckpt_rep {
    int32_t *row;       /* per _CKPT_IDXN(n, s, t) */
    int32_t *first;     /* per row: its smallest s */
    int n_rows;
    double work;        /* the sum over rows of t - s: the splits the program tries */
} _ckpt_rep;

static int _ckpt_cost_eq(const ckpt_cost *x, const ckpt_cost *y) {
    int o;
    if (x->f != y->f || x->b != y->b || x->a != y->a || x->t != y->t || x->wf != y->wf || x->wb != y->wb ||
        x->flags != y->flags || x->n_options != y->n_options)
        return 0;
    for (o = 0; o < x->n_options; o++)
        if (x->option_t[o] != y->option_t[o] || x->option_extra[o] != y->option_extra[o]) return 0;
    return 1;
}

static void _ckpt_rep_free(const ckpt_allocator *al, _ckpt_rep *r) {
    _ckpt_free(al, r->row); _ckpt_free(al, r->first);
    memset(r, 0, sizeof *r);
}

/* Rows from a trie of stage ids (the path s-1, s, ..., t, then "t = n"), in a hash table. */
static ckpt_result _ckpt_rep_make(const ckpt_allocator *al, const ckpt_cost *c, int n, _ckpt_rep *r) {
    size_t nn = (size_t)(n + 2) * (size_t)(n + 1), cap = 64, mask, h;
    size_t nodes = (size_t)n * (size_t)(n + 1) / 2 + (size_t)n + 1;
    int *id = (int *)_ckpt_calloc(al, (size_t)n + 1, sizeof(int)), s, t, k;
    uint64_t *keys;
    int32_t *val, *rowof, n_nodes = 0;
    ckpt_result res = CKPT_OK;
    memset(r, 0, sizeof *r);
    while (cap < 2 * nodes) cap *= 2;
    mask = cap - 1;
    keys = (uint64_t *)_ckpt_calloc(al, cap, sizeof(uint64_t));
    val = (int32_t *)_ckpt_malloc(al, cap * sizeof(int32_t));
    rowof = (int32_t *)_ckpt_malloc(al, nodes * sizeof(int32_t));
    r->row = (int32_t *)_ckpt_calloc(al, nn, sizeof(int32_t));
    r->first = (int32_t *)_ckpt_malloc(al, nodes * sizeof(int32_t));
    if (!id || !keys || !val || !rowof || !r->row || !r->first) { res = CKPT_ERR_OUT_OF_HOST_MEMORY; goto done; }
    for (s = 1; s <= n; s++) {      /* a stage's id: the first stage with equal costs (0: before stage 1) */
        for (k = 1; k < s && !(id[k] == k && _ckpt_cost_eq(&c[k - 1], &c[s - 1])); k++) {}
        id[s] = k;
    }
    for (s = 1; s <= n; s++) {
        int32_t node = -1;
        for (t = s - 1; t <= n; t++) {
            /* edge from node by (stage id, last): stage s-1 first (id 0 for none), then s..t */
            uint64_t key = ((uint64_t)(node + 1) * (uint64_t)(n + 1) + (uint64_t)(t < s ? (s > 1 ? id[s - 1] : 0) : id[t])) * 2 +
                           (uint64_t)(t == n) + 1;
            for (h = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & mask; keys[h] && keys[h] != key; h = (h + 1) & mask) {}
            if (!keys[h]) { keys[h] = key; val[h] = n_nodes; rowof[n_nodes++] = -1; }
            node = val[h];
            if (t < s) continue;
            if (rowof[node] < 0) { rowof[node] = r->n_rows; r->first[r->n_rows++] = s; r->work += (double)(t - s); }
            r->row[_CKPT_IDXN(n, s, t)] = rowof[node];
        }
    }
done:
    _ckpt_free(al, id); _ckpt_free(al, keys); _ckpt_free(al, val); _ckpt_free(al, rowof);
    if (res != CKPT_OK) _ckpt_rep_free(al, r);
    return res;
}

typedef struct _ckpt_dp {
    const ckpt_cost *c;
    const ckpt_allocator *al;
    int n;
    uint64_t budget, unit;
    uint64_t *A, *TS, *WF, *WB;     /* rounded sizes, 1-based; A[0] = 0; TS: the scratch tape */
    uint64_t *TO;                   /* TO[s * CKPT_MAX_TAPE_OPTIONS + o]: option o's tape, rounded */
    _ckpt_rep rep;                  /* >>repeats */
    uint64_t *sweep;                /* sweep[s*(n+1)+j]: peak of F(s..j,0) without G[t] */
    uint64_t *minp[_CKPT_FIDS];     /* min peak per (s,t) of each family; UINT64_MAX: none */
    int64_t *fs[_CKPT_FIDS];        /* frontier start in pool, per (s,t) */
    int32_t *fl[_CKPT_FIDS];        /* frontier length */
    int level, nfam;                /* options (a)-(c); + (d); + Drop */
    int flagged, win;               /* a stage has CKPT_STAGE_NO_CHECKPOINT; the largest Drop window */
    int fam[_CKPT_FIDS];            /* the nfam family ids in use, in the order they are computed */
    int slot[_CKPT_FIDS];           /* family id -> its index in fam (the dense table's) */
    _ckpt_opt *opts;                /* the options of one sub-problem (room for n_opts) */
    size_t n_opts;
    _ckpt_fp *pool, *cand, *cur, *tmp;  /* cand: one option's staircase; cur: the running frontier */
    int64_t pool_n, pool_cap, cand_n, cur_n, buf_cap, pool_limit;
    _ckpt_fp *stage;                /* frontiers made this diagonal, before they go to the pool */
    int64_t stage_n, stage_cap;
    double work, work_limit;        /* points merged so far, and the allowance */
    double *thr;                    /* per >>repeats row, its bound (>>bound; NULL: none) */
} _ckpt_dp;

/* The family ids of a level, for at most M tape options per stage, on a chain with
   no-checkpoint flags or without (flagged: Keep, and Drops to w = 3), into list (may be NULL)
   in the order a (s,t) computes them: k = 1 first, as option (d) of a k = 0 family reads the
   same (s,t) with k = 1; Keep, Drop, then Seg, as (e) with j = s - 1 reads Keep(s,t). Returns
   how many. */
static int _ckpt_dp_families(int level, int M, int flagged, int *list) {
    int n = 0, k, f, i, ok, oke, win = flagged ? 3 : 2;
    for (k = 1; k >= 0; k--)
        for (i = 0; i <= 2 * (_CKPT_DROP_WINDOW + 1) * 2; i++) {
            int ke = i & 1, w = (i >> 1) % (_CKPT_DROP_WINDOW + 1), keep = i < 2 * (_CKPT_DROP_WINDOW + 1);
            if (i == 4 * (_CKPT_DROP_WINDOW + 1)) { f = k; ke = 0; }     /* Seg last */
            else f = keep ? _CKPT_KEEP(w, ke, k) : _CKPT_DROP(w, ke, k);
            if (level == 0 ? f != 0 : level == 1 ? f >= 2 : f >= 2 && (w > win || (keep && !flagged))) continue;
            for (oke = 0; oke < (ke ? M : 1); oke++)
                for (ok = 0; ok < (k ? M : 1); ok++) {
                    if (list) list[n] = _CKPT_FID(f, ok, oke);
                    n++;
                }
        }
    return n;
}

#define _CKPT_IDX(dp, s, t) _CKPT_IDXN((dp)->n, s, t)

static uint64_t _ckpt_dp_x(const _ckpt_dp *d, int s) { return s >= 2 ? d->A[s - 1] : 0; }
static uint64_t _ckpt_dp_g(const _ckpt_dp *d, int t) { return t < d->n ? d->A[t] : 0; }
static uint64_t _ckpt_max3(uint64_t a, uint64_t b, uint64_t c) { uint64_t m = a > b ? a : b; return m > c ? m : c; }

static int _ckpt_dp_grow(_ckpt_dp *d, int64_t need) {
    int64_t cap = d->buf_cap ? d->buf_cap : 1024;
    _ckpt_fp *bufs[3];
    int i;
    if (need <= d->buf_cap) return 1;
    while (cap < need) cap *= 2;
    for (i = 0; i < 3; i++) {
        bufs[i] = (_ckpt_fp *)_ckpt_malloc(d->al, (size_t)cap * sizeof(_ckpt_fp));
        if (!bufs[i]) { while (i--) _ckpt_free(d->al, bufs[i]); return 0; }
    }
    if (d->cand_n) memcpy(bufs[0], d->cand, (size_t)d->cand_n * sizeof(_ckpt_fp));
    if (d->cur_n) memcpy(bufs[1], d->cur, (size_t)d->cur_n * sizeof(_ckpt_fp));
    _ckpt_free(d->al, d->cand); _ckpt_free(d->al, d->cur); _ckpt_free(d->al, d->tmp);
    d->cand = bufs[0]; d->cur = bufs[1]; d->tmp = bufs[2]; d->buf_cap = cap;
    return 1;
}

/* Appends a point of one option's staircase (peaks ascending, times descending). */
static int _ckpt_dp_add(_ckpt_dp *d, double t, uint64_t p) {
    if (p > d->budget) return 1;
    if (d->cand_n && d->cand[d->cand_n - 1].p == p) {   /* same peak: keep the faster */
        if (t < d->cand[d->cand_n - 1].t) d->cand[d->cand_n - 1].t = t;
        return 1;
    }
    if (d->cand_n && !(t < d->cand[d->cand_n - 1].t)) return 1;
    if (!_ckpt_dp_grow(d, d->cand_n + 1)) return 0;
    d->cand[d->cand_n].t = t; d->cand[d->cand_n].p = p; d->cand_n++;
    return 1;
}

/* Folds the option's staircase into the running frontier: a merge by peak that keeps a point
   only if it is faster than every point of lower or equal peak. */
static int _ckpt_dp_fold(_ckpt_dp *d) {
    int64_t i = 0, j = 0, m = 0;
    double last = DBL_MAX;
    if (!_ckpt_dp_grow(d, d->cur_n + d->cand_n + 1)) return 0;
    d->work += (double)(d->cur_n + d->cand_n);
    while (i < d->cur_n || j < d->cand_n) {
        _ckpt_fp q;
        if (j >= d->cand_n || (i < d->cur_n && (d->cur[i].p < d->cand[j].p ||
                                                 (d->cur[i].p == d->cand[j].p && d->cur[i].t <= d->cand[j].t))))
            q = d->cur[i++];
        else
            q = d->cand[j++];
        if (q.t < last) { d->tmp[m++] = q; last = q.t; }
    }
    { _ckpt_fp *x = d->cur; d->cur = d->tmp; d->tmp = x; }
    d->cur_n = m;
    d->cand_n = 0;
    return 1;
}

/* Room for `need` points in *buf, which holds n of *cap (doubled from `first` as needed);
   0: out of memory. */
static int _ckpt_fp_room(const ckpt_allocator *al, _ckpt_fp **buf, int64_t *cap, int64_t n, int64_t need,
                         int64_t first) {
    int64_t c = *cap ? *cap : first;
    _ckpt_fp *p;
    if (need <= *cap) return 1;
    while (c < need) c *= 2;
    if (!(p = (_ckpt_fp *)_ckpt_malloc_big(al, (size_t)c * sizeof *p))) return 0;
    if (n) memcpy(p, *buf, (size_t)n * sizeof *p);
    _ckpt_free(al, *buf);
    *buf = p; *cap = c;
    return 1;
}

/* Moves the running frontier of (s,t) in family f to the stage (fs < 0: -1 - its place there);
   0: out of memory. */
static int _ckpt_dp_stage(_ckpt_dp *d, int s, int t, int f) {
    if (!_ckpt_fp_room(d->al, &d->stage, &d->stage_cap, d->stage_n, d->stage_n + d->cur_n, 1024)) return 0;
    if (d->cur_n) memcpy(d->stage + d->stage_n, d->cur, (size_t)d->cur_n * sizeof *d->cur);
    d->fs[f][_CKPT_IDX(d, s, t)] = -1 - d->stage_n;
    d->fl[f][_CKPT_IDX(d, s, t)] = (int32_t)d->cur_n;
    d->stage_n += d->cur_n;
    d->cur_n = 0;
    return 1;
}

/* The frontier of (s,t) in family f and its length: in the pool, or staged in d's stage (NULL
   when empty: the pool or stage may not exist yet). */
static const _ckpt_fp *_ckpt_dp_front(const _ckpt_dp *d, int s, int t, int f, int64_t *len) {
    int64_t at = d->fs[f][_CKPT_IDX(d, s, t)];
    *len = d->fl[f][_CKPT_IDX(d, s, t)];
    return !*len ? NULL : at < 0 ? d->stage + (-1 - at) : d->pool + at;
}

/* Moves the frontier of (s,t) in family f from the stage of `from` into d's pool. */
static ckpt_result _ckpt_dp_commit(_ckpt_dp *d, const _ckpt_dp *from, int s, int t, int f) {
    int64_t len;
    const _ckpt_fp *src = _ckpt_dp_front(from, s, t, f, &len);
    if (d->pool_n + len > d->pool_cap && d->pool_n + len > d->pool_limit) return CKPT_ERR_TOO_COMPLEX;
    if (!_ckpt_fp_room(d->al, &d->pool, &d->pool_cap, d->pool_n, d->pool_n + len, 4096))
        return CKPT_ERR_OUT_OF_HOST_MEMORY;
    if (len) memcpy(d->pool + d->pool_n, src, (size_t)len * sizeof *src);
    d->fs[f][_CKPT_IDX(d, s, t)] = d->pool_n;
    d->pool_n += len;
    return CKPT_OK;
}

static uint64_t _ckpt_dp_to(const _ckpt_dp *d, int s, int o) { return d->TO[(size_t)s * CKPT_MAX_TAPE_OPTIONS + (size_t)o]; }
static uint64_t _ckpt_dp_c1(const _ckpt_dp *d, int s, int t, uint64_t tape) {   /* F(s) with G[t] live */
    return _ckpt_dp_x(d, s) + _ckpt_dp_g(d, t) + d->A[s] + tape + d->WF[s];
}
static uint64_t _ckpt_dp_c3(const _ckpt_dp *d, int s, uint64_t tape) {   /* B(s) after the rest is done */
    return _ckpt_dp_x(d, s) + tape + d->A[s] + _ckpt_dp_x(d, s) + d->WB[s];
}
static int _ckpt_dp_ckpt_ok(const _ckpt_dp *d, int s) { return !(d->c[s - 1].flags & CKPT_STAGE_NO_CHECKPOINT); }
/* A stage in s+1..s+w+1 (up to t) forbids a checkpoint: Drop(s,t) and Keep(s,t) in window w
   may refresh ((h)). */
static int _ckpt_dp_near(const _ckpt_dp *d, int s, int t, int w) {
    int i;
    for (i = s + 1; i <= s + w + 1 && i <= t; i++) if (!_ckpt_dp_ckpt_ok(d, i)) return 1;
    return 0;
}
static int _ckpt_flagged(const ckpt_cost *c, int n) {
    int i;
    for (i = 0; i < n; i++) if (c[i].flags & CKPT_STAGE_NO_CHECKPOINT) return 1;
    return 0;
}

/* A family id's parts: k, the window w (-1: Seg), ke, keep (1: Keep), and the tape options. */
static void _ckpt_fam(int f, int *k, int *w, int *ke, int *keep, int *ok, int *oke) {
    int b = f % _CKPT_FAMILIES, c = b - 2 - 4 * (_CKPT_DROP_WINDOW + 1);
    *ok = f / _CKPT_FAMILIES % CKPT_MAX_TAPE_OPTIONS;
    *oke = f / (_CKPT_FAMILIES * CKPT_MAX_TAPE_OPTIONS);
    *k = b & 1;
    *keep = c >= 0;
    if (c < 0) c = b - 2;
    *w = b >= 2 ? c >> 2 : -1;
    *ke = b >= 2 ? (c >> 1) & 1 : 0;
}

/* The options of sub-problem (s,t) in family f into op; returns how many. mode 0: all of them;
   1: only (c), (d) and (e), with stage s's flag and the budget ignored (the sweeps (h) runs); 2:
   all but the splits (c)-(e) (level 0 runs its splits without records: >>splits0). */
static int _ckpt_dp_gen(const _ckpt_dp *d, _ckpt_opt *op, int s, int t, int f, int mode) {
    const ckpt_cost *cs = &d->c[s - 1];
    int k, w, ke, keep, ok, oke, r, no = 0;
    int j, w2, k2, o, o2;
    double fsum = 0.0;  /* f_s + ... + f_j, summed in this order so that equal rows get equal sums (>>repeats) */
    uint64_t x = _ckpt_dp_x(d, s), g = _ckpt_dp_g(d, t), e, lim = mode == 1 ? UINT64_MAX : d->budget;
    _ckpt_opt *p;
#define _CKPT_OPT(K, J, C, FLOOR) (memset(&op[no], 0, sizeof op[no]), op[no].kind = (K), op[no].j = (J), \
                                   op[no].c = (C), op[no].floor = (FLOOR), &op[no++])
#define _CKPT_SUB(n_, S, T_, F) (p->s##n_ = (S), p->t##n_ = (T_), p->f##n_ = (F))
/* the family of a Drop's or Keep's last sub-problem, in its own window */
#define _CKPT_LAST(W, KE, K2) (keep ? _CKPT_KEEP(W, KE, K2) : _CKPT_DROP(W, KE, K2))
    _ckpt_fam(f, &k, &w, &ke, &keep, &ok, &oke);
    r = s + w;
    if (w >= 0 && r >= t) return 0;
    if ((k && ok > d->c[t - 1].n_options) || (ke && oke > d->c[r - 1].n_options)) return 0;
    e = k ? _ckpt_dp_to(d, t, ok) : 0;
    if (keep && !_ckpt_dp_ckpt_ok(d, s)) return 0;  /* its caller runs F(s) again */
    if ((keep || w > 2) && !_ckpt_dp_near(d, s, t, w)) return 0;   /* there only for (h) */
    if (mode == 1) goto splits;
    if (s == t) {   /* (a); with k = 1, T[s] is live in option ok */
        for (o = k ? ok : 0; o <= (k ? ok : cs->n_options); o++) {
            uint64_t to = _ckpt_dp_to(d, s, o), pb = x + g + to + x + d->WB[s], pf = _ckpt_dp_c1(d, s, s, to);
            p = _CKPT_OPT('a', 0, k ? _ckpt_bwd_of(cs, o) : cs->f + _ckpt_bwd_of(cs, o), k || pb > pf ? pb : pf);
            p->opt = o;
        }
        return no;
    }
    if (w < 0) {   /* (b) */
        for (o = 0; o <= cs->n_options; o++) {
            uint64_t to = _ckpt_dp_to(d, s, o), c1 = _ckpt_dp_c1(d, s, t, to) + e, c3 = _ckpt_dp_c3(d, s, to);
            p = _CKPT_OPT('b', 0, cs->f + _ckpt_bwd_of(cs, o), c1 > c3 ? c1 : c3);
            _CKPT_SUB(1, s + 1, t, _CKPT_FID(k, ok, 0)); p->o1 = x + to; p->opt = o;
        }
    } else if (keep) {   /* F(s..j,0) keeping X[j]; Drop(j+1,t,k) ending at G[r]; or F(s..r) keeping X[r]
                            (and T[r] when ke); Seg(r+1,t,k) */
        for (j = s; j <= r; j++) {
            uint64_t sw = d->sweep[_CKPT_IDX(d, s, j)] + g + e;
            fsum += d->c[j - 1].f;
            if (j < r) {
                p = _CKPT_OPT('c', j, fsum, sw);
                _CKPT_SUB(1, j + 1, t, _CKPT_FID(_CKPT_DROP(r - j - 1, ke, k), ok, oke)); p->o1 = x;
            } else if (!ke) {
                p = _CKPT_OPT('c', j, fsum, sw);
                _CKPT_SUB(1, j + 1, t, _CKPT_FID(k, ok, 0)); p->o1 = x;
            } else {    /* F(r) keeps T[r]: (d) with j = r - 1 */
                uint64_t to = _ckpt_dp_to(d, r, oke), f1 = x + (r > s ? d->A[r - 1] : 0) + d->A[r] + to + d->WF[r];
                uint64_t sw1 = r > s ? d->sweep[_CKPT_IDX(d, s, r - 1)] : 0;
                p = _CKPT_OPT('d', r - 1, fsum, (sw1 > f1 ? sw1 : f1) + g + e);
                _CKPT_SUB(1, r + 1, t, _CKPT_FID(k, ok, 0)); p->o1 = x + to; p->opt = oke;
            }
        }
        fsum = 0.0;
    } else if (r == s && ke) {   /* (f), keeping T[s] in the family's option */
        p = _CKPT_OPT('g', 0, cs->f, _ckpt_dp_c1(d, s, t, _ckpt_dp_to(d, s, oke)) + e);
        _CKPT_SUB(1, s + 1, t, _CKPT_FID(k, ok, 0)); p->o1 = _ckpt_dp_to(d, s, oke); p->opt = oke;
    } else {       /* (f) */
        p = _CKPT_OPT('f', 0, cs->f, _ckpt_dp_c1(d, s, t, d->TS[s]) + e);
        _CKPT_SUB(1, s + 1, t, r == s ? _CKPT_FID(k, ok, 0) : _CKPT_FID(_CKPT_DROP(w - 1, ke, k), ok, oke));
    }
    if (!_ckpt_dp_ckpt_ok(d, s) || mode == 2) return no;
splits:
    for (j = s; j < t; j++) {
        uint64_t sw0 = d->sweep[_CKPT_IDX(d, s, j)], sw = sw0 + g + e;
        if (sw > lim) break;
        fsum += d->c[j - 1].f;
        if (w < 0 || j > r) {   /* (c) */
            p = _CKPT_OPT('c', j, fsum, sw);
            _CKPT_SUB(1, j + 1, t, _CKPT_FID(k, ok, 0)); p->o1 = x;
            _CKPT_SUB(2, s, j, w < 0 ? 0 : _CKPT_FID(_CKPT_LAST(w, ke, 0), 0, oke));
        }
        if (d->level >= 1 && (j + 1 < t || !k) && j + 1 > r)   /* (d), F(j+1) keeping its tape in option o */
            for (o = 0; o <= d->c[j].n_options; o++) {
                uint64_t to = _ckpt_dp_to(d, j + 1, o), f1 = x + d->A[j] + d->A[j + 1] + to + d->WF[j + 1];
                uint64_t sw2 = (f1 > sw0 ? f1 : sw0) + g + e;
                if (sw2 > lim) continue;
                p = _CKPT_OPT('d', j, fsum + d->c[j].f, sw2);
                p->opt = o;
                if (j + 1 < t) { _CKPT_SUB(1, j + 2, t, _CKPT_FID(k, ok, 0)); p->o1 = x + to; }
                _CKPT_SUB(2, s, j + 1, w < 0 ? _CKPT_FID(1, o, 0) : _CKPT_FID(_CKPT_LAST(w, ke, 1), o, oke));
            }
        for (w2 = 0; d->level >= 2 && w2 <= d->win && j + 1 + w2 < t; w2++)   /* (e) */
            for (k2 = 0; k2 < 2 && j + 1 + w2 > r; k2++)
                for (o2 = 0; o2 <= (k2 ? d->c[j + w2].n_options : 0); o2++) {
                    p = _CKPT_OPT('e', j, fsum, sw);
                    _CKPT_SUB(1, j + 1, t, _CKPT_FID(_CKPT_DROP(w2, k2, k), ok, o2)); p->o1 = x;
                    _CKPT_SUB(2, s, j + 1 + w2, w < 0 ? _CKPT_FID(k2, o2, 0) : _CKPT_FID(_CKPT_LAST(w, ke, k2), o2, oke));
                }
    }
#undef _CKPT_LAST
#undef _CKPT_SUB
#undef _CKPT_OPT
    return no;
}

/* The options (h) of Drop(s,t) or Keep(s,t) (family f) that refresh X[q0], ..., X[q] (see
   _ckpt_dp_options) into op; returns how many. */
static int _ckpt_dp_refresh(const _ckpt_dp *d, _ckpt_opt *op, int s, int t, int f, int q0, int q) {
    int k, w, ke, keep, ok, oke, i, j, n2, tk, a, b, fi;
    uint64_t x = _ckpt_dp_x(d, s), ge, base, before, after, kt, fl, rc = 0, v, term[34], rm[34];
    double f0 = 0.0, cc, cr;
    if (t - q > 32) return 0;   /* (Drops run only on chains of at most 20 stages) */
    _ckpt_fam(f, &k, &w, &ke, &keep, &ok, &oke);
    ge = _ckpt_dp_g(d, t) + (k ? _ckpt_dp_to(d, t, ok) : 0);
    tk = q == s + w && ke;      /* the last refresh keeps the family's T[q] */
    kt = tk ? _ckpt_dp_to(d, q, oke) : 0;
    base = keep ? x : 0;        /* Keep holds X[s-1] to its end */
    fl = d->sweep[_CKPT_IDX(d, s, q0)] + ge;   /* F(s..q0) */
    for (i = s; i <= q0; i++) f0 += d->c[i - 1].f;
    cc = f0;
    /* F(i+1) consumes X[i]; X[i] again: F(s..q0) from X[s-1], else F(i) from the fresh X[i-1] */
    for (i = q0; i < q; i++) {
        uint64_t held = i == q0 ? x : base + d->A[i - 1];
        v = held + d->A[i] + d->A[i + 1] + d->TS[i + 1] + d->WF[i + 1] + ge;
        if (v > fl) fl = v;
        v = i == q0 ? d->A[i + 1] + d->sweep[_CKPT_IDX(d, s, q0)] : held + d->A[i + 1] + d->A[i] + d->TS[i] + d->WF[i];
        if (v + ge > fl) fl = v + ge;
        cc = (cc + d->c[i].f) + (i == q0 ? f0 : d->c[i - 1].f);
    }
    before = q == q0 ? x : base + d->A[q - 1];     /* held besides the sweep until the last refresh */
    after = base + d->A[q] + kt;                   /* and after it */
    if (q == q0) {              /* the last refresh: F(s..q) from X[s-1] */
        for (i = s; i <= q; i++) {
            v = (i > s ? d->A[i - 1] : 0) + d->A[i] + (i == q && tk ? kt : d->TS[i]) + d->WF[i];
            if (v > rc) rc = v;
        }
        cr = f0;
    } else {                    /* F(q) from X[q-1] */
        rc = d->A[q] + (tk ? kt : d->TS[q]) + d->WF[q];
        cr = d->c[q - 1].f;
    }
    for (i = q + 1; i < t; i++) term[i - q] = d->A[i - 1] + d->A[i] + d->TS[i] + d->WF[i] + ge;   /* F(i) */
    fi = q == s + w ? _CKPT_FID(k, ok, 0) : _CKPT_FID(_CKPT_DROP(s + w - q - 1, ke, k), ok, oke);   /* (f)'s, at (q+1,t) */
    n2 = _ckpt_dp_gen(d, op, q + 1, t, fi, 1);
    for (a = 0; a < n2; a++) {
        _ckpt_opt *p = &op[a];
        int last = p->kind == 'd' ? p->j + 1 : p->j, rp, best = p->j;
        uint64_t dt = 0, dk = 0, bf = UINT64_MAX, pre = 0;
        j = p->j;
        if (p->kind == 'd') {   /* F(j+1) keeping its tape; what stays after it */
            uint64_t to = _ckpt_dp_to(d, j + 1, p->opt);
            dt = d->A[j] + d->A[j + 1] + to + d->WF[j + 1] + ge;
            dk = (j + 1 < t ? d->A[j + 1] : 0) + to;
        }
        rm[j - q + 1] = 0;      /* rm[i - q]: the largest term of F(i..j) */
        for (b = j; b > q; b--) rm[b - q] = term[b - q] > rm[b - q + 1] ? term[b - q] : rm[b - q + 1];
        for (rp = q + 1; rp <= last; rp++) {   /* the last refresh right after the op at rp */
            uint64_t fr;
            if (rp <= j && term[rp - q] > pre) pre = term[rp - q];
            fr = before + (rp <= j ? pre : pre > dt ? pre : dt);
            v = before + (rp <= j ? d->A[rp] : dk) + rc + ge;
            if (v > fr) fr = v;
            if (rp < j && after + rm[rp - q + 1] > fr) fr = after + rm[rp - q + 1];
            if (rp <= j && p->kind == 'd' && after + dt > fr) fr = after + dt;
            if (fr <= bf) { bf = fr; best = rp; }
        }
        p->ik = p->kind;
        p->kind = 'h';
        p->m = (char)(q - q0);
        p->d0 = (short)(q0 - s + 1);
        p->rp = (short)best;
        p->rt = (char)(tk ? 1 + oke : 0);
        p->c = (cc + p->c) + cr;
        p->floor = fl > bf ? fl : bf;
        if (p->s1) p->o1 += base + kt;
        p->o2 = base + kt;
    }
    return n2;
}

/* The options of sub-problem (s,t) in family f into d->opts; returns how many. On chains with
   no-checkpoint flags, also:
     (e) with j = s - 1 in Seg and Drop: Keep(s,t) first (when it can refresh, below);
     (h) in Drop and Keep, where stages q0+1..q+1 forbid a checkpoint (s <= q0 <= q <= s + w):
         F(s..q0,0); then for i = q0..q-1, F(i+1,0), which consumes X[i], and X[i] again:
         F(s..q0,0) from X[s-1] for i = q0, F(i,0) from the fresh X[i-1] after, which that
         frees; then the sweep of an option (c), (d) or (e) of (q+1,t) (in the family (f)
         would reach), which consumes X[q], with X[q] made again (as X[i] above, the last F
         keeping T[q] when the family keeps it) right after the op of the sweep where the
         peak is least; then that option's sub-problems, the second from the fresh X[q].
         Drop frees X[s-1] once the first X[q] is made again; Keep holds it to its end.
   Both run only at level 2 (chains of at most _CKPT_DP_DROP_STAGES stages). */
static int _ckpt_dp_options(const _ckpt_dp *d, int s, int t, int f) {
    _ckpt_opt *op = d->opts, *p;
    int no = _ckpt_dp_gen(d, op, s, t, f, 0), k, w, ke, keep, ok, oke, w2, k2, o2, q0, q;
    if (!no || !d->flagged || d->level < 2 || s == t || !_ckpt_dp_ckpt_ok(d, s)) return no;
    _ckpt_fam(f, &k, &w, &ke, &keep, &ok, &oke);
    for (w2 = w + 1; !keep && w2 <= d->win && s + w2 < t; w2++) {    /* (e) with j = s - 1 */
        if (!_ckpt_dp_near(d, s, t, w2)) continue;
        for (k2 = 0; k2 < 2; k2++)
            for (o2 = 0; o2 <= (k2 ? d->c[s + w2 - 1].n_options : 0); o2++) {
                p = &op[no++];
                memset(p, 0, sizeof *p);
                p->kind = 'e'; p->j = s - 1;
                p->s1 = s; p->t1 = t; p->f1 = _CKPT_FID(_CKPT_KEEP(w2, k2, k), ok, o2);
                p->s2 = s; p->t2 = s + w2;
                p->f2 = w < 0 ? _CKPT_FID(k2, o2, 0) : _CKPT_FID(_CKPT_DROP(w, ke, k2), o2, oke);
            }
    }
    for (q0 = s; q0 <= s + w; q0++)     /* (h) */
        for (q = q0; q <= s + w && q + 1 < t && !_ckpt_dp_ckpt_ok(d, q + 1); q++)
            no += _ckpt_dp_refresh(d, op + no, s, t, f, q0, q);
    return no;
}

/* The smallest peak of an option, from its sub-problems' smallest peaks (UINT64_MAX: none). */
static uint64_t _ckpt_dp_opt_minp(const _ckpt_dp *d, const _ckpt_opt *o) {
    uint64_t p1 = 0, p2 = 0;
    if (o->s1) { p1 = d->minp[o->f1][_CKPT_IDX(d, o->s1, o->t1)]; if (p1 == UINT64_MAX) return p1; p1 += o->o1; }
    if (o->s2) { p2 = d->minp[o->f2][_CKPT_IDX(d, o->s2, o->t2)]; if (p2 == UINT64_MAX) return p2; p2 += o->o2; }
    return _ckpt_max3(o->floor, p1, p2);
}

/* >>splits0: at level 0 (rotor's options, one family) the splits (c) are nearly all of the
   program's options, so the smallest peaks and the dense table run them directly, without option
   records: split j of Seg(s,t,0) is F(s..j,0) keeping X[j], Seg(j+1,t,0) over X[s-1], then
   Seg(s,j,0), with floor sweep(s,j) + G[t], which grows with j. The records of the other options
   come from _ckpt_dp_unsplit; _ckpt_dp_options still gives every option (the sparse program,
   emitting a plan). */
static int _ckpt_dp_unsplit(const _ckpt_dp *d, int s, int t, int f) {
    return d->level ? _ckpt_dp_options(d, s, t, f) : _ckpt_dp_gen(d, d->opts, s, t, f, 2);
}
static int _ckpt_dp_splits0(const _ckpt_dp *d, int s) { return !d->level && _ckpt_dp_ckpt_ok(d, s); }

/* The smallest peak of the splits of Seg(s,t,0) (UINT64_MAX: none). */
static uint64_t _ckpt_splits0_minp(const _ckpt_dp *d, int s, int t) {
    const uint64_t *mp = d->minp[0];
    uint64_t best = UINT64_MAX, x = _ckpt_dp_x(d, s), g = _ckpt_dp_g(d, t);
    int j;
    for (j = s; j < t && d->sweep[_CKPT_IDX(d, s, j)] + g < best; j++) {   /* (the floor grows with j) */
        uint64_t p1 = mp[_CKPT_IDX(d, j + 1, t)], p2 = mp[_CKPT_IDX(d, s, j)], v;
        if (p1 == UINT64_MAX || p2 == UINT64_MAX) continue;
        v = _ckpt_max3(d->sweep[_CKPT_IDX(d, s, j)] + g, p1 + x, p2);
        if (v < best) best = v;
    }
    return best;
}

/* >>threads: a team of workers for the program's loops over independent items (ckpt_plan_desc.
   threads). Worker 0 is the caller; workers 1.. are threads started with the team, which wait
   for each run and take items until none is left (if one cannot start, the others take its
   share). Worker w works on its copy wd[w] of the program (wd[0]: the program itself), with its
   own options and frontier buffers: _ckpt_team_sync copies the rest from the program before a
   run. Which worker takes which item changes nothing in the result. */
#if _CKPT_THREADS
typedef struct _ckpt_mate { struct _ckpt_team *t; int w; pthread_t th; } _ckpt_mate;
#endif
typedef struct _ckpt_team {
    _ckpt_dp *d, **wd;          /* the program; per worker, its copy */
    int workers, started;       /* workers wanted (1: the caller alone); threads running */
    int next, n;                /* the run's next item not yet taken, and its item count */
    void (*fn)(struct _ckpt_team *t, int w, int i);
    /* items taken in order, item i only once ready(t, i); fin(t, i) once it is done (both
       under the lock; NULL: items are independent) */
    int (*ready)(struct _ckpt_team *t, int i);
    void (*fin)(struct _ckpt_team *t, int i);
    void *arg;                  /* the run's own data */
#if _CKPT_THREADS
    int gen, busy, quit;        /* runs so far; threads not done with this one; stop */
    pthread_mutex_t mu;
    pthread_cond_t go, done, tick;  /* a run starts; the threads are done; an item is done */
    _ckpt_mate *mate;           /* per worker: its thread (1..) */
#endif
} _ckpt_team;

#if _CKPT_THREADS
/* Worker w takes items until none is left (holding the lock, except while it runs one). An item
   not ready waits for one to be done: the items before it are all taken, so one is running. */
static void _ckpt_team_loop(_ckpt_team *t, int w) {
    while (t->next < t->n) {
        int i = t->next;
        if (t->ready && !t->ready(t, i)) { pthread_cond_wait(&t->tick, &t->mu); continue; }
        t->next++;
        pthread_mutex_unlock(&t->mu);
        t->fn(t, w, i);
        pthread_mutex_lock(&t->mu);
        if (t->fin) { t->fin(t, i); pthread_cond_broadcast(&t->tick); }
    }
}

static void *_ckpt_team_main(void *arg) {
    _ckpt_mate *m = (_ckpt_mate *)arg;
    _ckpt_team *t = m->t;
    int seen = 0;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (t->gen == seen && !t->quit) pthread_cond_wait(&t->go, &t->mu);
        if (t->quit) break;
        seen = t->gen;
        _ckpt_team_loop(t, m->w);
        if (--t->busy == 0) pthread_cond_signal(&t->done);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}
#endif

/* Stops the threads and frees the copies' own buffers (not d's). */
static void _ckpt_team_free(_ckpt_team *t) {
    const ckpt_allocator *al = t->d->al;
    int w;
#if _CKPT_THREADS
    if (t->mate) {
        pthread_mutex_lock(&t->mu);
        t->quit = 1;
        pthread_cond_broadcast(&t->go);
        pthread_mutex_unlock(&t->mu);
        for (w = 1; w <= t->started; w++) pthread_join(t->mate[w].th, NULL);
        pthread_mutex_destroy(&t->mu); pthread_cond_destroy(&t->go); pthread_cond_destroy(&t->done);
        pthread_cond_destroy(&t->tick);
        _ckpt_free(al, t->mate);
    }
#endif
    for (w = 1; t->wd && w < t->workers; w++)
        if (t->wd[w]) {
            _ckpt_free(al, t->wd[w]->opts); _ckpt_free(al, t->wd[w]->cand); _ckpt_free(al, t->wd[w]->cur);
            _ckpt_free(al, t->wd[w]->tmp); _ckpt_free(al, t->wd[w]->stage); _ckpt_free(al, t->wd[w]);
        }
    _ckpt_free(al, t->wd);
    memset(t, 0, sizeof *t);
}

/* A team of up to `threads` workers for d, as many as a chain of d->n stages can use (one per
   _CKPT_TEAM_STAGES stages); 0: out of memory (_ckpt_team_free frees either way). */
#define _CKPT_TEAM_STAGES 16
static int _ckpt_team_init(_ckpt_team *t, _ckpt_dp *d, int threads) {
    const ckpt_allocator *al = d->al;
    int w, most = (d->n + _CKPT_TEAM_STAGES - 1) / _CKPT_TEAM_STAGES;
    memset(t, 0, sizeof *t);
    t->d = d;
    t->workers = _CKPT_THREADS && threads > 1 ? (threads < most ? threads : most) : 1;
    if (!(t->wd = (_ckpt_dp **)_ckpt_calloc(al, (size_t)t->workers, sizeof *t->wd))) return 0;
    t->wd[0] = d;
    for (w = 1; w < t->workers; w++) {
        if (!(t->wd[w] = (_ckpt_dp *)_ckpt_calloc(al, 1, sizeof(_ckpt_dp)))) return 0;
        if (!(t->wd[w]->opts = (_ckpt_opt *)_ckpt_calloc(al, d->n_opts, sizeof(_ckpt_opt)))) return 0;
    }
#if _CKPT_THREADS
    if (t->workers > 1) {
        pthread_cond_t *cv[3];
        int made = -1;      /* the mutex and how many conditions were made; all four: the threads */
        cv[0] = &t->go; cv[1] = &t->done; cv[2] = &t->tick;
        if (!(t->mate = (_ckpt_mate *)_ckpt_calloc(al, (size_t)t->workers, sizeof *t->mate))) return 0;
        if (pthread_mutex_init(&t->mu, NULL) == 0)
            for (made = 0; made < 3 && pthread_cond_init(cv[made], NULL) == 0; made++) {}
        if (made < 3) {     /* (the caller plans alone) */
            while (made > 0) pthread_cond_destroy(cv[--made]);
            if (made == 0) pthread_mutex_destroy(&t->mu);
            _ckpt_free(al, t->mate); t->mate = NULL;
            return 1;
        }
        for (w = 1; w < t->workers; w++) {
            t->mate[w].t = t; t->mate[w].w = w;
            if (pthread_create(&t->mate[w].th, NULL, _ckpt_team_main, &t->mate[w]) != 0) break;
            t->started = w;
        }
    }
#endif
    return 1;
}

#if _CKPT_THREADS
/* Each copy takes the program's fields but keeps its own buffers (opts, cand, cur, tmp, stage)
   and work count (0: what it adds this run). */
static void _ckpt_team_sync(_ckpt_team *t) {
    int w;
    for (w = 1; w < t->workers; w++) {
        _ckpt_dp *c = t->wd[w], keep = *c;
        *c = *t->d;
        c->opts = keep.opts; c->cand = keep.cand; c->cur = keep.cur; c->tmp = keep.tmp;
        c->buf_cap = keep.buf_cap; c->cand_n = c->cur_n = 0; c->work = 0.0;
        c->stage = keep.stage; c->stage_cap = keep.stage_cap; c->stage_n = 0;
    }
}
#endif

/* fn(t, w, i) for i = 0..n-1, by every worker (by the caller alone, in order, with no thread
   running: every item is then ready when taken); returns when all are done. */
static void _ckpt_team_run(_ckpt_team *t, int n, void (*fn)(_ckpt_team *, int, int), int (*ready)(_ckpt_team *, int),
                           void (*fin)(_ckpt_team *, int), void *arg) {
    int i;
    t->fn = fn; t->ready = ready; t->fin = fin; t->arg = arg;
#if _CKPT_THREADS
    if (t->started && n > 1) {
        _ckpt_team_sync(t);
        pthread_mutex_lock(&t->mu);
        t->next = 0; t->n = n; t->gen++; t->busy = t->started;
        pthread_cond_broadcast(&t->go);
        _ckpt_team_loop(t, 0);
        while (t->busy) pthread_cond_wait(&t->done, &t->mu);
        pthread_mutex_unlock(&t->mu);
        return;
    }
#endif
    for (i = 0; i < n; i++) fn(t, 0, i);
}

/* *at += k, under the team's lock where threads run (an item runs without it); returns the old
   *at. */
static int64_t _ckpt_team_add(_ckpt_team *t, int64_t *at, int64_t k) {
    int64_t old;
#if _CKPT_THREADS
    if (t->started) pthread_mutex_lock(&t->mu);
#else
    (void)t;
#endif
    old = *at;
    *at += k;
#if _CKPT_THREADS
    if (t->started) pthread_mutex_unlock(&t->mu);
#endif
    return old;
}

/* A team of one: the caller alone, on d (ptr holds wd[0]). */
static _ckpt_team *_ckpt_team_one(_ckpt_team *t, _ckpt_dp *d, _ckpt_dp **ptr) {
    memset(t, 0, sizeof *t);
    *ptr = d; t->d = d; t->wd = ptr; t->workers = 1;
    return t;
}

/* The smallest peak of every sub-problem: the options with max/min instead of frontiers. (The
   caller alone: run by the team, it was slower, each diagonal's work being small.) */
static void _ckpt_dp_minpeak(_ckpt_dp *d) {
    int n = d->n, len, s, i, q;
    uint64_t saved = d->budget;
    d->budget = UINT64_MAX;   /* the options must not be cut by the budget here */
    for (len = 0; len < n; len++)
        for (s = 1; s + len <= n; s++)
            for (q = 0; q < d->nfam; q++) {
                int f = d->fam[q], no, s0 = d->rep.first[d->rep.row[_CKPT_IDX(d, s, s + len)]];
                uint64_t best = UINT64_MAX;
                if (s0 < s) { d->minp[f][_CKPT_IDX(d, s, s + len)] = d->minp[f][_CKPT_IDX(d, s0, s0 + len)]; continue; }
                no = _ckpt_dp_unsplit(d, s, s + len, f);
                for (i = 0; i < no; i++) {
                    uint64_t v = _ckpt_dp_opt_minp(d, &d->opts[i]);
                    if (v < best) best = v;
                }
                if (_ckpt_dp_splits0(d, s)) {
                    uint64_t v = _ckpt_splits0_minp(d, s, s + len);
                    if (v < best) best = v;
                }
                d->minp[f][_CKPT_IDX(d, s, s + len)] = best;
            }
    d->budget = saved;
}

static const _ckpt_fp _ckpt_fp_zero = {0.0, 0};

/* One option's staircase: the pointwise sum of its sub-problems' step functions above floor,
   walked breakpoint by breakpoint; a point goes into cand only where it is faster than the
   running frontier and than bound (>>bound; INFINITY: none). At a point that is not, the walk
   tries to skip to U, the frontier's _CKPT_MERGE_SKIP-th next breakpoint: the staircase and the
   frontier only fall, so if the staircase just below U is no faster than the frontier here, no
   point below U is faster than the frontier there. work counts the points evaluated and the
   breakpoints skipped (a peak where both sub-problems step counts twice, where the walk evaluated
   it once). */
#define _CKPT_MERGE_SKIP 8
/* The peak of f's breakpoint after i, shifted by x (UINT64_MAX: none). */
static uint64_t _ckpt_fp_next(const _ckpt_fp *f, int64_t i, int64_t n, uint64_t x) {
    return i + 1 < n ? f[i + 1].p + x : UINT64_MAX;
}
static int _ckpt_dp_merge(_ckpt_dp *d, const _ckpt_opt *o, double bound) {
    const _ckpt_fp *f1 = &_ckpt_fp_zero, *f2 = &_ckpt_fp_zero, *cur = d->cur;
    int64_t i1 = 0, i2 = 0, n1 = 1, n2 = 1, ci = 0, lo = 0, hi = d->cur_n, cn = d->cur_n, work = 0;
    uint64_t L, stop, x = o->o1, y = o->o2, q1, q2, cp;
    double tmin, c = o->c, ct;
    if (o->s1) f1 = _ckpt_dp_front(d, o->s1, o->t1, o->f1, &n1);
    if (o->s2) f2 = _ckpt_dp_front(d, o->s2, o->t2, o->f2, &n2);
    if (!n1 || !n2) return 1;
    L = _ckpt_max3(o->floor, f1[0].p + x, f2[0].p + y);
    if (L > d->budget) return 1;
    tmin = (c + f1[n1 - 1].t) + f2[n2 - 1].t;
    if (!(tmin < bound)) return 1;
    /* from peak `stop` on, the frontier is as fast as the staircase's fastest point: the rest of
       the staircase is dominated (all of it when stop <= L) */
    while (lo < hi) { int64_t m = (lo + hi) / 2; if (cur[m].t <= tmin) hi = m; else lo = m + 1; }
    stop = lo < cn ? cur[lo].p : UINT64_MAX;
    if (L >= stop) return 1;
    while (i1 + 1 < n1 && f1[i1 + 1].p + x <= L) i1++;
    while (i2 + 1 < n2 && f2[i2 + 1].p + y <= L) i2++;
    while (ci < cn && cur[ci].p <= L) ci++;
    /* the next breakpoints of the two sub-problems and of the frontier (UINT64_MAX: none), and
       the frontier's time at L (none yet: bound) */
    q1 = _ckpt_fp_next(f1, i1, n1, x);
    q2 = _ckpt_fp_next(f2, i2, n2, y);
    cp = ci < cn ? cur[ci].p : UINT64_MAX;
    ct = ci ? cur[ci - 1].t : bound;
    for (;;) {
        double t = (c + f1[i1].t) + f2[i2].t;
        work++;
        if (t < ct) {
            if (!_ckpt_dp_add(d, t, L)) return 0;
            cur = d->cur;   /* (an add may move the buffers) */
        } else if (ci + _CKPT_MERGE_SKIP - 1 < cn) {
            uint64_t U = cur[ci + _CKPT_MERGE_SKIP - 1].p;     /* (the walk ends at stop or the budget) */
            int64_t j1 = i1, j2 = i2;
            if (U > stop) U = stop;
            if (U > d->budget && d->budget < UINT64_MAX) U = d->budget + 1;
            while (j1 + 1 < n1 && f1[j1 + 1].p + x < U) j1++;
            while (j2 + 1 < n2 && f2[j2 + 1].p + y < U) j2++;
            if (!((c + f1[j1].t) + f2[j2].t < ct)) {
                work += (j1 - i1) + (j2 - i2);
                i1 = j1; i2 = j2;
                q1 = _ckpt_fp_next(f1, i1, n1, x);
                q2 = _ckpt_fp_next(f2, i2, n2, y);
            }
        }
        L = q1 < q2 ? q1 : q2;
        if (L > d->budget || L >= stop) break;     /* (L = UINT64_MAX: no breakpoint left) */
        if (q1 == L) q1 = _ckpt_fp_next(f1, ++i1, n1, x);
        if (q2 == L) q2 = _ckpt_fp_next(f2, ++i2, n2, y);
        if (cp <= L) {
            do ci++; while (ci < cn && cur[ci].p <= L);
            cp = ci < cn ? cur[ci].p : UINT64_MAX;
            ct = cur[ci - 1].t;
        }
    }
    d->work += (double)work;
    return d->cand_n ? _ckpt_dp_fold(d) : 1;
}

/* A diagonal of the sparse program: its length, per s the worker that staged (s, s + len), per
   worker how its items ended. */
typedef struct _ckpt_fdiag { int len; int *who; ckpt_result *res; double work0; } _ckpt_fdiag;

/* Worker w's item of a diagonal, sub-problem (s, s + len) with s = i + 1: its frontiers into the
   worker's stage. A worker stops at its first failure; running out of the work allowance or of
   the pool's cap alone means the diagonal as a whole does too. */
static void _ckpt_frontier_item(_ckpt_team *team, int w, int i) {
    _ckpt_dp *d = team->wd[w];
    _ckpt_fdiag *g = (_ckpt_fdiag *)team->arg;
    int len = g->len, s = i + 1, q, k;
    if (d->rep.first[d->rep.row[_CKPT_IDX(d, s, s + len)]] < s) return;
    g->who[s] = w;
    for (q = 0; q < d->nfam && g->res[w] == CKPT_OK; q++) {
        int f = d->fam[q];
        if (d->minp[f][_CKPT_IDX(d, s, s + len)] <= d->budget) {
            int no = _ckpt_dp_options(d, s, s + len, f);
            double b = d->thr ? d->thr[d->rep.row[_CKPT_IDX(d, s, s + len)]] : INFINITY;
            for (k = 0; k < no && g->res[w] == CKPT_OK; k++)
                if (!_ckpt_dp_merge(d, &d->opts[k], b)) g->res[w] = CKPT_ERR_OUT_OF_HOST_MEMORY;
        }
        if (g->res[w] == CKPT_OK && !_ckpt_dp_stage(d, s, s + len, f)) g->res[w] = CKPT_ERR_OUT_OF_HOST_MEMORY;
        if (g->res[w] == CKPT_OK && (d->pool_n + d->stage_n > d->pool_limit ||
                                     (w ? g->work0 : 0.0) + d->work > d->work_limit))
            g->res[w] = CKPT_ERR_TOO_COMPLEX;
    }
}

/* The frontiers, a diagonal at a time by the team; then its staged frontiers go to the pool in
   order, s ascending. The caller alone also runs a diagonal after one of little work (options
   and points merged, at most _CKPT_TEAM_WORK), where starting the team costs more (as on a
   chain of repeats at its smallest peak). Memory: a diagonal's frontiers are held twice while
   they move to the pool, and each worker checks the pool's cap against its own stage only, so
   with w workers the stages can pass the cap by up to w - 1 times what is left under it before
   the moves refuse (CKPT_ERR_TOO_COMPLEX, as alone).
   (tests/test_planner_threads sets _CKPT_TEAM_WORK to 0: every diagonal by the team.) */
#ifndef _CKPT_TEAM_WORK
#define _CKPT_TEAM_WORK 16384
#endif
static ckpt_result _ckpt_dp_frontiers(_ckpt_dp *d, _ckpt_team *team) {
    int n = d->n, len, s, q, w;
    double last = 0.0;              /* the work of the diagonal before */
    ckpt_result r = CKPT_OK;
    _ckpt_team one, *run;
    _ckpt_dp *ptr;
    _ckpt_fdiag g;
    _ckpt_team_one(&one, d, &ptr);
    g.who = (int *)_ckpt_calloc(d->al, (size_t)n + 1, sizeof(int));
    g.res = (ckpt_result *)_ckpt_calloc(d->al, (size_t)team->workers, sizeof(ckpt_result));
    if (!g.who || !g.res) r = CKPT_ERR_OUT_OF_HOST_MEMORY;
    for (len = 0; len < n && r == CKPT_OK; len++) {
        int owned = 0;
        run = last > _CKPT_TEAM_WORK ? team : &one;
        g.len = len; g.work0 = d->work;
        _ckpt_team_run(run, n - len, _ckpt_frontier_item, NULL, NULL, &g);
        for (w = 0; w < team->workers; w++) {
            if (w) { d->work += team->wd[w]->work; team->wd[w]->work = 0.0; }
            if (g.res[w] != CKPT_OK && (r == CKPT_OK || g.res[w] == CKPT_ERR_OUT_OF_HOST_MEMORY)) r = g.res[w];
        }
        for (s = 1; s + len <= n && r == CKPT_OK; s++) {
            int s0 = d->rep.first[d->rep.row[_CKPT_IDX(d, s, s + len)]];
            owned += s0 == s;
            for (q = 0; q < d->nfam && r == CKPT_OK; q++) {
                int f = d->fam[q];
                if (s0 < s) {
                    d->fs[f][_CKPT_IDX(d, s, s + len)] = d->fs[f][_CKPT_IDX(d, s0, s0 + len)];
                    d->fl[f][_CKPT_IDX(d, s, s + len)] = d->fl[f][_CKPT_IDX(d, s0, s0 + len)];
                } else
                    r = _ckpt_dp_commit(d, team->wd[g.who[s]], s, s + len, f);
            }
        }
        if (r == CKPT_OK && d->work > d->work_limit) r = CKPT_ERR_TOO_COMPLEX;
        last = d->work - g.work0 + (double)owned * (len + 1) * d->nfam;
        for (w = 0; w < team->workers; w++) team->wd[w]->stage_n = 0;
    }
    _ckpt_free(d->al, g.who); _ckpt_free(d->al, g.res);
    return r;
}

/* Minimum time of (s,t) in family f with peak <= L (DBL_MAX if none). */
static double _ckpt_dp_best(const _ckpt_dp *d, int s, int t, int f, uint64_t L) {
    int64_t lo = 0, hi;
    const _ckpt_fp *p = _ckpt_dp_front(d, s, t, f, &hi);
    while (lo < hi) { int64_t m = (lo + hi) / 2; if (p[m].p <= L) lo = m + 1; else hi = m; }
    return lo == 0 ? DBL_MAX : p[lo - 1].t;
}

/* The ops of an option before its sub-problems (push 1) or after them (push 0). */
static int _ckpt_opt_ops(const ckpt_allocator *al, _ckpt_sched *out, const _ckpt_opt *o, int s, int k, int before) {
    int i;
    if (!before) return o->kind == 'a' || o->kind == 'b' ? _ckpt_sched_push(al, out, CKPT_OP_B, s, 0) : 1;
    switch (o->kind) {
    case 'a': return k || _ckpt_sched_push_o(al, out, CKPT_OP_F, s, 1, o->opt);
    case 'b': case 'g': return _ckpt_sched_push_o(al, out, CKPT_OP_F, s, 1, o->opt);
    case 'f': return _ckpt_sched_push(al, out, CKPT_OP_F, s, 0);
    case 'h': {     /* see _ckpt_dp_options */
        int q0 = s + o->d0 - 1, q = q0 + o->m, last = o->ik == 'd' ? o->j + 1 : o->j, l;
        for (i = s; i <= q0; i++)
            if (!_ckpt_sched_push(al, out, CKPT_OP_F, i, 0)) return 0;
        for (i = q0; i < q; i++) {
            if (!_ckpt_sched_push(al, out, CKPT_OP_F, i + 1, 0)) return 0;
            for (l = i == q0 ? s : i; l <= i; l++)
                if (!_ckpt_sched_push(al, out, CKPT_OP_F, l, 0)) return 0;
        }
        for (i = q + 1; i <= last; i++) {
            int tape = o->ik == 'd' && i == last;
            if (!_ckpt_sched_push_o(al, out, CKPT_OP_F, i, tape, tape ? o->opt : 0)) return 0;
            if (i == o->rp)     /* X[q] again, the last F keeping T[q] in option rt - 1 when rt > 0 */
                for (l = q == q0 ? s : q; l <= q; l++) {
                    tape = l == q && o->rt;
                    if (!_ckpt_sched_push_o(al, out, CKPT_OP_F, l, tape, tape ? o->rt - 1 : 0)) return 0;
                }
        }
        return 1;
    }
    default:
        for (i = s; i <= o->j; i++)
            if (!_ckpt_sched_push(al, out, CKPT_OP_F, i, 0)) return 0;
        return o->kind != 'd' || _ckpt_sched_push_o(al, out, CKPT_OP_F, o->j + 1, 1, o->opt);
    }
}

static int _ckpt_dp_emit(_ckpt_dp *d, int s, int t, int f, uint64_t L, _ckpt_sched *out) {
    _ckpt_opt o;
    double best = DBL_MAX;
    int i, no = _ckpt_dp_options(d, s, t, f), choice = -1;
    for (i = 0; i < no; i++) {
        const _ckpt_opt *p = &d->opts[i];
        double t1 = 0.0, t2 = 0.0, v;
        if (p->floor > L || L < p->o1 || L < p->o2) continue;
        if (p->s1 && (t1 = _ckpt_dp_best(d, p->s1, p->t1, p->f1, L - p->o1)) == DBL_MAX) continue;
        if (p->s2 && (t2 = _ckpt_dp_best(d, p->s2, p->t2, p->f2, L - p->o2)) == DBL_MAX) continue;
        v = (p->c + t1) + t2;
        if (v < best) { best = v; choice = i; }
    }
    CKPT_ASSERT(choice >= 0);
    o = d->opts[choice];   /* the recursion below reuses d->opts */
    return _ckpt_opt_ops(d->al, out, &o, s, _ckpt_fk(f), 1) &&
           (!o.s1 || _ckpt_dp_emit(d, o.s1, o.t1, o.f1, L - o.o1, out)) &&
           (!o.s2 || _ckpt_dp_emit(d, o.s2, o.t2, o.f2, L - o.o2, out)) && _ckpt_opt_ops(d->al, out, &o, s, _ckpt_fk(f), 0);
}

/* Sizes in units, rounded up. With sum_round, a tape is rounded so that A[s] + its size is the sum
   a + t rounded up once (as rotor rounds it): never more than t rounded alone, but it may be less
   than t alone, so a plan made that way must be checked in bytes (>>rounding). */
static ckpt_result _ckpt_dp_setup(_ckpt_dp *d, const ckpt_allocator *al, const ckpt_cost *c, int n,
                                  uint64_t budget, uint64_t unit, int level, int sum_round) {
    int s, j, q, o, M = _ckpt_max_options(c, n);
    size_t nn = (size_t)(n + 2) * (size_t)(n + 1), per = (5 + 5 * (size_t)M) * (size_t)n + 5 * (size_t)M + 16;
    memset(d, 0, sizeof *d);
    d->c = c; d->al = al; d->n = n; d->budget = budget; d->unit = unit;
    d->flagged = _ckpt_flagged(c, n);
    d->win = d->flagged ? 3 : 2;
    d->level = level; d->nfam = _ckpt_dp_families(level, M, d->flagged, d->fam);
    for (q = 0; q < d->nfam; q++) d->slot[d->fam[q]] = q;
    d->pool_limit = (int64_t)1 << 22;
    d->work_limit = 3e8;   /* about a second; past it the dense table in a coarser unit runs */
    d->A = (uint64_t *)_ckpt_calloc(al, (size_t)n + 1, sizeof(uint64_t));
    d->TS = (uint64_t *)_ckpt_calloc(al, (size_t)n + 1, sizeof(uint64_t));
    d->TO = (uint64_t *)_ckpt_calloc(al, ((size_t)n + 1) * CKPT_MAX_TAPE_OPTIONS, sizeof(uint64_t));
    d->WF = (uint64_t *)_ckpt_calloc(al, (size_t)n + 1, sizeof(uint64_t));
    d->WB = (uint64_t *)_ckpt_calloc(al, (size_t)n + 1, sizeof(uint64_t));
    d->sweep = (uint64_t *)_ckpt_calloc(al, nn, sizeof(uint64_t));
    /* (h) adds up to 10 sweeps' options per (q0, q) on chains with flags */
    d->n_opts = (d->flagged ? 12 : 1) * per;
    d->opts = (_ckpt_opt *)_ckpt_calloc(al, d->n_opts, sizeof(_ckpt_opt));
    if (!d->A || !d->TS || !d->TO || !d->WF || !d->WB || !d->sweep || !d->opts) return CKPT_ERR_OUT_OF_HOST_MEMORY;
    if (_ckpt_rep_make(al, c, n, &d->rep) != CKPT_OK) return CKPT_ERR_OUT_OF_HOST_MEMORY;
    for (q = 0; q < d->nfam; q++) {
        int f = d->fam[q];
        d->minp[f] = (uint64_t *)_ckpt_calloc(al, nn, sizeof(uint64_t));
        d->fs[f] = (int64_t *)_ckpt_calloc(al, nn, sizeof(int64_t));
        d->fl[f] = (int32_t *)_ckpt_calloc(al, nn, sizeof(int32_t));
        if (!d->minp[f] || !d->fs[f] || !d->fl[f]) return CKPT_ERR_OUT_OF_HOST_MEMORY;
    }
#define _CKPT_ROUND(v) (((v) + unit - 1) / unit * unit)
    for (s = 1; s <= n; s++) {
        const ckpt_cost *cs = &c[s - 1];
        d->A[s] = _CKPT_ROUND(cs->a);
        for (o = 0; o <= cs->n_options; o++)
            d->TO[(size_t)s * CKPT_MAX_TAPE_OPTIONS + (size_t)o] =
                sum_round ? _CKPT_ROUND(cs->a + _ckpt_tape_of(cs, o)) - d->A[s] : _CKPT_ROUND(_ckpt_tape_of(cs, o));
        d->TS[s] = _ckpt_dp_to(d, s, _ckpt_scratch_option(cs));
        d->WF[s] = _CKPT_ROUND(cs->wf); d->WB[s] = _CKPT_ROUND(cs->wb);
    }
#undef _CKPT_ROUND
    for (s = 1; s <= n; s++) {
        uint64_t m = 0;
        for (j = s; j <= n; j++) {
            uint64_t v = _ckpt_dp_x(d, s) + (j > s ? d->A[j - 1] : 0) + d->A[j] + d->TS[j] + d->WF[j];
            if (v > m) m = v;
            d->sweep[_CKPT_IDX(d, s, j)] = m;
        }
    }
    return CKPT_OK;
}

static void _ckpt_dp_free(_ckpt_dp *d) {
    const ckpt_allocator *al = d->al;
    int f;
    _ckpt_free(al, d->A); _ckpt_free(al, d->TS); _ckpt_free(al, d->TO); _ckpt_free(al, d->WF); _ckpt_free(al, d->WB);
    _ckpt_free(al, d->sweep); _ckpt_free(al, d->opts); _ckpt_rep_free(al, &d->rep);
    for (f = 0; f < _CKPT_FIDS; f++) { _ckpt_free(al, d->minp[f]); _ckpt_free(al, d->fs[f]); _ckpt_free(al, d->fl[f]); }
    _ckpt_free(al, d->pool); _ckpt_free(al, d->stage);
    _ckpt_free(al, d->cand); _ckpt_free(al, d->cur); _ckpt_free(al, d->tmp); _ckpt_free(al, d->thr);
}

/* The dense variant: best[f][row][m] for every m = 0..M units, as rotor does, with an inner loop
   over m that compilers vectorise; one row per >>repeats row. Used when M and the rows are small
   enough for the table. Rows are non-increasing in m. Each row also has a summary, its values at
   m = 0, S, 2S, .., M and M again (S = _CKPT_SUM_STEP): small enough to stay in cache, it bounds
   an option from below without reading the rows themselves.
   >>packed: a row is kept from lo to hi, S - 1 values either side of where it changes: its first
   value below its start (INFINITY, or its >>bound), and the first that equals its value at M.
   Below lo it is its start, above hi that last value, so a run of S values is kept whole or is
   constant. A tile computes its rows in full in its worker's scratch, then packs them into the
   table (400 distinct stages at 500 units: 48% of the cells, bench/RESULTS.md); where that scratch
   would not be small beside the table, rows stay in place, M + 1 values each. */
#define _CKPT_SUM_STEP 16
typedef struct _ckpt_drow {
    double *p;              /* the values at lo..hi */
    int64_t lo, hi;         /* lo = M + 1, hi = M: none */
    double start, last;     /* the values below lo, and above hi */
} _ckpt_drow;
typedef struct _ckpt_dense {
    _ckpt_dp *d;
    int64_t M, K;           /* K + 2 summary values per row: row[min(S k, M)], k = 0..K + 1 */
    double *tab;            /* the values: (M+1) doubles per (f, row) in place, or >>packed */
    _ckpt_drow *rows;       /* per (f, row) */
    _ckpt_drow zrow;        /* a missing row: zeros */
    double *sum;            /* (K+2) doubles per (f, row) */
    double *zeros;          /* M+2 zeros: a missing row, or its summary */
    int pack;               /* >>packed (-1: _ckpt_dense_fill decides) */
    double *scr;            /* packed: per worker, scr_rows rows of M+1 doubles */
    int64_t scr_rows, used; /* the most rows a tile computes; packed: doubles of tab in use */
    unsigned char *own;     /* per (s,t): 1 where its row is computed, 2 when family 0 is feasible too */
    int nt;                 /* tiles per side */
    int32_t *need;          /* per tile: the last tile that must be done before it, beyond the
                               two below it (-1: none) */
    unsigned char *fin;     /* per tile: done */
    int prefix;             /* the tiles done first to last: 0..prefix-1 */
    double *fsum;           /* per >>threads worker, per s of a tile, f_s + .. + f_j for j up to its
                               end (n+1 doubles) */
} _ckpt_dense;
#define _CKPT_TILE 16

/* The table of d in M = budget / unit units, for `workers` workers; 0: out of memory
   (_ckpt_dense_free frees either way). */
static int _ckpt_dense_alloc(_ckpt_dense *D, _ckpt_dp *d, int workers) {
    const ckpt_allocator *al = d->al;
    int n = d->n;
    memset(D, 0, sizeof *D);
    D->d = d; D->M = (int64_t)(d->budget / d->unit); D->K = (D->M + _CKPT_SUM_STEP - 1) / _CKPT_SUM_STEP;
    D->nt = (n + _CKPT_TILE - 1) / _CKPT_TILE;
    D->pack = -1;
    D->tab = (double *)_ckpt_malloc_big(al, (size_t)d->nfam * (size_t)d->rep.n_rows * (size_t)(D->M + 1) * sizeof(double));
    D->rows = (_ckpt_drow *)_ckpt_malloc(al, (size_t)d->nfam * (size_t)d->rep.n_rows * sizeof(_ckpt_drow));
    D->sum = (double *)_ckpt_malloc_big(al, (size_t)d->nfam * (size_t)d->rep.n_rows * (size_t)(D->K + 2) * sizeof(double));
    D->zeros = (double *)_ckpt_calloc(al, (size_t)D->M + 2, sizeof(double));
    D->own = (unsigned char *)_ckpt_calloc(al, (size_t)(n + 2) * (size_t)(n + 1), 1);
    D->need = (int32_t *)_ckpt_malloc(al, (size_t)D->nt * (size_t)(D->nt + 1) / 2 * sizeof(int32_t));
    D->fin = (unsigned char *)_ckpt_calloc(al, (size_t)D->nt * (size_t)(D->nt + 1) / 2, 1);
    D->fsum = (double *)_ckpt_malloc(al, (size_t)workers * _CKPT_TILE * (size_t)(n + 1) * sizeof(double));
    D->zrow.p = D->zeros; D->zrow.hi = D->M;
    return D->tab && D->rows && D->sum && D->zeros && D->own && D->need && D->fin && D->fsum;
}
static void _ckpt_dense_free(_ckpt_dense *D) {
    const ckpt_allocator *al = D->d->al;
    _ckpt_free(al, D->tab); _ckpt_free(al, D->rows); _ckpt_free(al, D->sum); _ckpt_free(al, D->zeros);
    _ckpt_free(al, D->own); _ckpt_free(al, D->need); _ckpt_free(al, D->fin); _ckpt_free(al, D->fsum);
    _ckpt_free(al, D->scr);
}

static _ckpt_drow *_ckpt_drow_of(const _ckpt_dense *D, int s, int t, int f) {
    return D->rows + (size_t)D->d->slot[f] * (size_t)D->d->rep.n_rows + (size_t)D->d->rep.row[_CKPT_IDX(D->d, s, t)];
}
static double _ckpt_drow_at(const _ckpt_drow *r, int64_t m) {
    return m < r->lo ? r->start : m > r->hi ? r->last : r->p[m - r->lo];
}
/* The value of (s,t) in family f at m units. */
static double _ckpt_cell(const _ckpt_dense *D, int s, int t, int f, int64_t m) {
    return _ckpt_drow_at(_ckpt_drow_of(D, s, t, f), m);
}
/* Once its row is computed in full at p (non-increasing, at most its start): its last value,
   and if >>packed, lo and hi, p then pointing at lo. */
static void _ckpt_drow_trim(_ckpt_drow *r, int64_t M, int pack) {
    double *v = r->p;
    int64_t lo = 0, hi = M;
    r->last = v[M];
    if (!pack) return;
    while (lo <= M && v[lo] == r->start) lo++;
    while (hi > lo && v[hi - 1] == r->last) hi--;
    if (lo > M) { r->lo = M + 1; r->hi = M; return; }
    r->lo = lo > _CKPT_SUM_STEP - 1 ? lo - (_CKPT_SUM_STEP - 1) : 0;
    r->hi = hi + _CKPT_SUM_STEP - 1 < M ? hi + _CKPT_SUM_STEP - 1 : M;
    r->p = v + r->lo;
}
static double *_ckpt_sum(const _ckpt_dense *D, int s, int t, int f) {
    return D->sum + ((size_t)D->d->slot[f] * (size_t)D->d->rep.n_rows + (size_t)D->d->rep.row[_CKPT_IDX(D->d, s, t)]) *
                    (size_t)(D->K + 2);
}
/* The summary index of the first step at or above m (its value bounds the row at m from below). */
static int64_t _ckpt_sum_k(const _ckpt_dense *D, int64_t m) {
    uint64_t k = ((uint64_t)m + _CKPT_SUM_STEP - 1) / _CKPT_SUM_STEP;
    return k < (uint64_t)D->K ? (int64_t)k : D->K;
}

#if defined(__GNUC__) || defined(__clang__)
#define _CKPT_RESTRICT __restrict__
#else
#define _CKPT_RESTRICT
#endif
/* cur[i] = min(cur[i], (c + a[i]) + b[i]): the inner loop of the table, unrolled for the
   compiler. Where a row is one value on the run (>>packed), a[i] is a[ia i] with ia = 0 (b
   likewise), so that every value is this expression (with FLT_EVAL_METHOD 2, a sum computed
   apart would be rounded apart). */
#define _CKPT_MIN_SUM(name, ia, ib)                                                                                  \
    static void name(double *_CKPT_RESTRICT cur, const double *_CKPT_RESTRICT a, const double *_CKPT_RESTRICT b,      \
                     double c, int64_t len) {                                                                        \
        int64_t i = 0;                                                                                               \
        for (; i + 4 <= len; i += 4) {                                                                               \
            double v0 = (c + a[ia * i]) + b[ib * i], v1 = (c + a[ia * (i + 1)]) + b[ib * (i + 1)];                  \
            double v2 = (c + a[ia * (i + 2)]) + b[ib * (i + 2)], v3 = (c + a[ia * (i + 3)]) + b[ib * (i + 3)];      \
            cur[i] = v0 < cur[i] ? v0 : cur[i];                                                                      \
            cur[i + 1] = v1 < cur[i + 1] ? v1 : cur[i + 1];                                                          \
            cur[i + 2] = v2 < cur[i + 2] ? v2 : cur[i + 2];                                                          \
            cur[i + 3] = v3 < cur[i + 3] ? v3 : cur[i + 3];                                                          \
        }                                                                                                            \
        for (; i < len; i++) {                                                                                       \
            double v = (c + a[ia * i]) + b[ib * i];                                                                  \
            cur[i] = v < cur[i] ? v : cur[i];                                                                        \
        }                                                                                                            \
    }
_CKPT_MIN_SUM(_ckpt_min_sum, 1, 1)
_CKPT_MIN_SUM(_ckpt_min_sum_ak, 1, 0)
_CKPT_MIN_SUM(_ckpt_min_sum_ka, 0, 1)
_CKPT_MIN_SUM(_ckpt_min_sum_kk, 0, 0)

/* An option's value at m units, (c + row1[m - o1]) + row2[m - o2] (a missing row counts 0);
   INFINITY below its floor. */
static double _ckpt_dense_at(const _ckpt_dense *D, const _ckpt_opt *o, int64_t m) {
    uint64_t u = D->d->unit;
    int64_t o1 = (int64_t)(o->o1 / u), o2 = (int64_t)(o->o2 / u);
    if (m < (int64_t)(o->floor / u) || m < o1 || m < o2) return INFINITY;
    return (o->c + (o->s1 ? _ckpt_cell(D, o->s1, o->t1, o->f1, m - o1) : 0.0)) +
           (o->s2 ? _ckpt_cell(D, o->s2, o->t2, o->f2, m - o2) : 0.0);
}

/* cur = min(cur, an option's values): c + (row r1 at m - o1) + (row r2 at m - o2) from m = lo up
   (in units; s1, s2: the rows' summaries). The value at m is at least
   lb(m) = (c + summary 1 at m - o1) + summary 2 at m - o2 (floating-point sums are monotone),
   and cur and the rows are non-increasing in m: nothing changes from the first run that starts
   where cur is at most lb(M), nor on a run of m from m0 to m1 where lb(m1) >= cur[m0], nor at all
   when cur[lo] is at most (c + row 1's last value) + row 2's. The rows are read only on the other
   runs, so cur ends as it would if every value were computed. */
static void _ckpt_dense_run(const _ckpt_dense *D, double *cur, double c, int64_t lo, int64_t o1, int64_t o2,
                            const double *s1, const _ckpt_drow *r1, const double *s2, const _ckpt_drow *r2) {
    int64_t M = D->M, a, e, len;
    /* the rows in locals (cur, written below, could alias their doubles); m in l..h: in place */
    const double *b1, *b2, *p1 = r1->p, *p2 = r2->p, *x1, *x2;
    int64_t l1 = r1->lo + o1, h1 = r1->hi + o1, l2 = r2->lo + o2, h2 = r2->hi + o2;
    double best, k1, k2, st1 = r1->start, la1 = r1->last, st2 = r2->start, la2 = r2->last;
    if (lo < o1) lo = o1;
    if (lo < o2) lo = o2;
    if (lo > M || (c + la1) + la2 >= cur[lo]) return;
    best = (c + s1[_ckpt_sum_k(D, M - o1)]) + s2[_ckpt_sum_k(D, M - o2)];   /* lb(M) */
    if (best == INFINITY) return;
    /* runs end at multiples of S; a run's bound is lb at its last m rounded up to that multiple
       (smaller or equal: still a bound), so its summary values step by one, at most to K + 1 (the
       last run ends before M + S) */
    e = (lo / _CKPT_SUM_STEP + 1) * _CKPT_SUM_STEP;
    b1 = s1 + (e - 2 - o1 + _CKPT_SUM_STEP) / _CKPT_SUM_STEP;
    b2 = s2 + (e - 2 - o2 + _CKPT_SUM_STEP) / _CKPT_SUM_STEP;
    for (a = lo; a <= M && cur[a] > best; a = e, e += _CKPT_SUM_STEP, b1++, b2++)
        if ((c + *b1) + *b2 < cur[a]) {     /* a row's run not within l..h is one value (>>packed) */
            len = (e <= M ? e : M + 1) - a;
            if (a >= l1 && a + len - 1 <= h1) x1 = p1 + (a - l1);
            else { k1 = a < l1 ? st1 : la1; x1 = &k1; }
            if (a >= l2 && a + len - 1 <= h2) x2 = p2 + (a - l2);
            else { k2 = a < l2 ? st2 : la2; x2 = &k2; }
            if (x1 != &k1 && x2 != &k2) _ckpt_min_sum(cur + a, x1, x2, c, len);
            else if (x1 != &k1) _ckpt_min_sum_ak(cur + a, x1, x2, c, len);
            else if (x2 != &k2) _ckpt_min_sum_ka(cur + a, x1, x2, c, len);
            else _ckpt_min_sum_kk(cur + a, x1, x2, c, len);
        }
}

static void _ckpt_dense_option(const _ckpt_dense *D, double *cur, const _ckpt_opt *o) {
    uint64_t u = D->d->unit;
    _ckpt_dense_run(D, cur, o->c, (int64_t)(o->floor / u), (int64_t)(o->o1 / u), (int64_t)(o->o2 / u),
                    o->s1 ? _ckpt_sum(D, o->s1, o->t1, o->f1) : D->zeros, o->s1 ? _ckpt_drow_of(D, o->s1, o->t1, o->f1) : &D->zrow,
                    o->s2 ? _ckpt_sum(D, o->s2, o->t2, o->f2) : D->zeros, o->s2 ? _ckpt_drow_of(D, o->s2, o->t2, o->f2) : &D->zrow);
}
/* The unsplit options of (s,t) in family f into its row cur (>>splits0); d: the worker's copy. */
static void _ckpt_dense_unsplit(const _ckpt_dense *D, _ckpt_dp *d, double *cur, int s, int t, int f) {
    int i, no = _ckpt_dp_unsplit(d, s, t, f);
    for (i = 0; i < no; i++) _ckpt_dense_option(D, cur, &d->opts[i]);
}

/* Split j of Seg(s,t,0) into cur (>>splits0): fsum is f_s + .. + f_j, summed as _ckpt_dp_gen sums
   it (left to right); lo its floor and x X[s-1], in units (sizes are multiples of the unit); s2,
   r2 row (s,j). */
static void _ckpt_dense_split0(const _ckpt_dense *D, double *cur, int t, int j, double fsum, int64_t lo, int64_t x,
                               const double *s2, const _ckpt_drow *r2) {
    _ckpt_dense_run(D, cur, fsum, lo, x, 0, _ckpt_sum(D, j + 1, t, 0), _ckpt_drow_of(D, j + 1, t, 0), s2, r2);
}

/* >>packed: the rows a tile computed (s0..s1, t0..t1), from its scratch into the table. */
static void _ckpt_dense_pack(_ckpt_dense *D, _ckpt_team *team, int s0, int s1, int t0, int t1) {
    const _ckpt_dp *d = D->d;
    int64_t len = 0, at = 0, k;
    int s, t, q, i;
    for (i = 0; i < 2; i++) {       /* the lengths, then the copies */
        if (i) at = _ckpt_team_add(team, &D->used, len);
        for (s = s1; s >= s0; s--)
            for (t = s > t0 ? s : t0; t <= t1; t++)
                for (q = 0; D->own[_CKPT_IDX(d, s, t)] && q < d->nfam; q++) {
                    _ckpt_drow *r = _ckpt_drow_of(D, s, t, d->fam[q]);
                    k = r->hi - r->lo + 1;
                    if (!i) { len += k; continue; }
                    if (k) memcpy(D->tab + at, r->p, (size_t)k * sizeof(double));
                    r->p = D->tab + at;
                    at += k;
                }
    }
}

/* Tile number i counts the tiles in the order below: diagonal dd, then b (s0 = b T + 1). */
static int _ckpt_tile_no(const _ckpt_dense *D, int dd, int b) { return dd * D->nt - dd * (dd - 1) / 2 + b; }
static void _ckpt_tile_at(const _ckpt_dense *D, int i, int *dd, int *b) {
    for (*dd = 0; i >= D->nt - *dd; (*dd)++) i -= D->nt - *dd;
    *b = i;
}

/* Tiles of T x T sub-problems (s in s0..s1, t in t0..t1), by diagonals (the tile's t0 - s0, then
   s0); in a tile, s descending, then t ascending. An option of (s,t) reads sub-problems (s',t')
   with s <= s' <= t' <= t (at (s,t) itself, a family computed before): in earlier diagonals, or
   earlier in this tile. At level 0, for each s, the unsplit options of every t come first (their
   low values at large m then cut the runs the splits fill), then the splits j = s1..t0-1, whose
   two sub-problems lie in earlier tiles, j by j: row (s,j) serves T sub-problems while it is in
   cache; then each t's other splits. A row is computed at its first sub-problem in this order
   (own, set by _ckpt_dense_owners), then >>packed. Worker w runs tile number `tile`. */
static void _ckpt_dense_tile(_ckpt_team *team, int w, int tile) {
    _ckpt_dense *D = (_ckpt_dense *)team->arg;
    _ckpt_dp *d = team->wd[w];
    int n = d->n, T = _CKPT_TILE, dd, b, s, t, j, q, s0, s1, t0, t1;
    int64_t M = D->M, m, k;
    double *fs = D->fsum + (size_t)w * _CKPT_TILE * (size_t)(n + 1);
    double *scr = D->pack ? D->scr + (size_t)w * (size_t)D->scr_rows * (size_t)(M + 1) : NULL;
    const unsigned char *own = D->own;
    _ckpt_tile_at(D, tile, &dd, &b);
    s0 = b * T + 1; s1 = s0 + T - 1 < n ? s0 + T - 1 : n;
    t0 = (b + dd) * T + 1; t1 = t0 + T - 1 < n ? t0 + T - 1 : n;
    for (s = s1; s >= s0; s--) {
        double f = 0.0;
        for (j = s; j <= t1; j++) fs[(s - s0) * (n + 1) + j] = f += d->c[j - 1].f;
        for (t = s > t0 ? s : t0; t <= t1; t++)
            for (q = 0; own[_CKPT_IDX(d, s, t)] && q < d->nfam; q++) {
                _ckpt_drow *r = _ckpt_drow_of(D, s, t, d->fam[q]);
                double v = d->thr ? d->thr[d->rep.row[_CKPT_IDX(d, s, t)]] : INFINITY;
                r->p = scr ? scr : D->tab + (size_t)(r - D->rows) * (size_t)(M + 1);
                if (scr) scr += M + 1;
                r->lo = 0; r->hi = M;
                r->start = r->last = v;
                for (m = 0; m <= M; m++) r->p[m] = v;   /* (v, not r->start: no reload after each store) */
            }
    }
    for (s = s1; s >= s0; s--) {
        int split = _ckpt_dp_splits0(d, s);
        int64_t x = (int64_t)(_ckpt_dp_x(d, s) / d->unit);
        if (split) {    /* (level 0: its one family; the unsplit options read (s+1,t) only) */
            for (t = s > t0 ? s : t0; t <= t1; t++)
                if (own[_CKPT_IDX(d, s, t)] == 2) _ckpt_dense_unsplit(D, d, _ckpt_drow_of(D, s, t, 0)->p, s, t, 0);
            for (j = s1; j < t0; j++) {     /* (none in the diagonal's tiles, where t0 = s0) */
                uint64_t sw = d->sweep[_CKPT_IDX(d, s, j)];
                const double *s2 = _ckpt_sum(D, s, j, 0);
                const _ckpt_drow *r2 = _ckpt_drow_of(D, s, j, 0);
                int64_t lo = (int64_t)(sw / d->unit);
                for (t = t0; t <= t1; t++)
                    if (own[_CKPT_IDX(d, s, t)] == 2 && sw + _ckpt_dp_g(d, t) <= d->budget)
                        _ckpt_dense_split0(D, _ckpt_drow_of(D, s, t, 0)->p, t, j, fs[(s - s0) * (n + 1) + j],
                                           lo + (int64_t)(_ckpt_dp_g(d, t) / d->unit), x, s2, r2);
            }
        }
        for (t = s > t0 ? s : t0; t <= t1; t++)
            for (q = 0; own[_CKPT_IDX(d, s, t)] && q < d->nfam; q++) {
                int f = d->fam[q];
                _ckpt_drow *r = _ckpt_drow_of(D, s, t, f);
                double *cur = r->p, *sum = _ckpt_sum(D, s, t, f);
                if ((int64_t)(d->minp[f][_CKPT_IDX(d, s, t)] / d->unit) <= M) {
                    if (!split) _ckpt_dense_unsplit(D, d, cur, s, t, f);
                    for (j = s; j < t && split; j++) {
                        uint64_t sw = d->sweep[_CKPT_IDX(d, s, j)] + _ckpt_dp_g(d, t);
                        if (sw > d->budget) break;      /* (it grows with j) */
                        if (j < s1 || j >= t0)          /* (the others ran above) */
                            _ckpt_dense_split0(D, cur, t, j, fs[(s - s0) * (n + 1) + j], (int64_t)(sw / d->unit), x,
                                               _ckpt_sum(D, s, j, 0), _ckpt_drow_of(D, s, j, 0));
                    }
                }
                for (k = 0; k <= D->K + 1; k++) sum[k] = cur[k * _CKPT_SUM_STEP < M ? k * _CKPT_SUM_STEP : M];
                _ckpt_drow_trim(r, M, D->pack);
            }
    }
    if (D->pack) _ckpt_dense_pack(D, team, s0, s1, t0, t1);
}

/* Which sub-problem computes each row (own), in the fill's order, the most rows a tile computes
   (scr_rows), and what each tile waits for (need). A sub-problem's options read only
   sub-problems (s',t') with s <= s' <= t' <= t, so tile (b, dd) reads within the tiles (b', dd')
   with b' >= b and b' + dd' <= b + dd: those below it, done once (b, dd - 1) and (b + 1, dd - 1)
   are, and itself. The exception is a >>repeats row computed in another tile (that precedes in
   the order): need is the last such tile. */
static ckpt_result _ckpt_dense_owners(_ckpt_dense *D) {
    _ckpt_dp *d = D->d;
    int n = d->n, T = _CKPT_TILE, nt = D->nt, dd, b, s, t;
    int32_t *v = (int32_t *)_ckpt_malloc(d->al, (size_t)(n + 2) * (size_t)(n + 1) * sizeof(int32_t));
    int32_t *owner = (int32_t *)_ckpt_calloc(d->al, (size_t)d->rep.n_rows, sizeof(int32_t));   /* row: 1 + its tile */
    if (!v || !owner) { _ckpt_free(d->al, v); _ckpt_free(d->al, owner); return CKPT_ERR_OUT_OF_HOST_MEMORY; }
    for (dd = 0; dd < nt; dd++)
        for (b = 0; b + dd < nt; b++) {
            int s0 = b * T + 1, s1 = s0 + T - 1 < n ? s0 + T - 1 : n, t0 = (b + dd) * T + 1, t1 = t0 + T - 1 < n ? t0 + T - 1 : n;
            int32_t tile = _ckpt_tile_no(D, dd, b);
            int64_t rows = 0;
            for (s = s1; s >= s0; s--)
                for (t = s > t0 ? s : t0; t <= t1; t++) {
                    int32_t *o = &owner[d->rep.row[_CKPT_IDX(d, s, t)]];
                    D->own[_CKPT_IDX(d, s, t)] = (unsigned char)(*o ? 0 : 1 + ((int64_t)(d->minp[0][_CKPT_IDX(d, s, t)] / d->unit) <= D->M));
                    if (!*o) { *o = tile + 1; rows += d->nfam; }
                    v[_CKPT_IDX(d, s, t)] = *o - 1 != tile ? *o - 1 : -1;     /* a row from another tile */
                }
            if (rows > D->scr_rows) D->scr_rows = rows;
        }
    /* v(s,t) becomes the largest v(s',t') over s <= s' <= t' <= t */
    for (s = n; s >= 1; s--)
        for (t = s; t <= n; t++) {
            int32_t *x = &v[_CKPT_IDX(d, s, t)];
            if (t > s && v[_CKPT_IDX(d, s, t - 1)] > *x) *x = v[_CKPT_IDX(d, s, t - 1)];
            if (s < t && v[_CKPT_IDX(d, s + 1, t)] > *x) *x = v[_CKPT_IDX(d, s + 1, t)];
        }
    for (dd = 0; dd < nt; dd++)
        for (b = 0; b + dd < nt; b++) {
            int t1 = (b + dd + 1) * T < n ? (b + dd + 1) * T : n;
            D->need[_ckpt_tile_no(D, dd, b)] = v[_CKPT_IDX(d, b * T + 1, t1)];
        }
    _ckpt_free(d->al, v); _ckpt_free(d->al, owner);
    return CKPT_OK;
}

/* (under the team's lock) Tile i may start: the two tiles below it are done, and need. */
static int _ckpt_tile_ready(_ckpt_team *team, int i) {
    const _ckpt_dense *D = (const _ckpt_dense *)team->arg;
    int dd, b;
    _ckpt_tile_at(D, i, &dd, &b);
    return D->need[i] < D->prefix &&
           (dd == 0 || (D->fin[_ckpt_tile_no(D, dd - 1, b)] && D->fin[_ckpt_tile_no(D, dd - 1, b + 1)]));
}
static void _ckpt_tile_fin(_ckpt_team *team, int i) {
    _ckpt_dense *D = (_ckpt_dense *)team->arg;
    D->fin[i] = 1;
    while (D->prefix < D->nt * (D->nt + 1) / 2 && D->fin[D->prefix]) D->prefix++;
}

/* Every tile, by the team: a tile starts once what it reads is done (_ckpt_dense_owners), so
   every row is computed as it would be in order, from the same rows. Rows are >>packed where the
   workers' scratch is at most 1/8 of the table (unless D->pack says). Once per _ckpt_dense_alloc. */
static ckpt_result _ckpt_dense_fill(_ckpt_dense *D, _ckpt_team *team) {
    ckpt_result r = _ckpt_dense_owners(D);
    size_t cells = (size_t)team->workers * (size_t)D->scr_rows * (size_t)(D->M + 1);
    if (D->pack < 0) D->pack = (double)team->workers * (double)D->scr_rows * 8.0 <= (double)D->d->nfam * D->d->rep.n_rows;
    if (r == CKPT_OK && D->pack && !(D->scr = (double *)_ckpt_malloc(D->d->al, cells * sizeof(double))))
        r = CKPT_ERR_OUT_OF_HOST_MEMORY;
    if (r == CKPT_OK)
        _ckpt_team_run(team, D->nt * (D->nt + 1) / 2, _ckpt_dense_tile, _ckpt_tile_ready, _ckpt_tile_fin, D);
    return r;
}

/* >>bound: at level 0 the program need only be exact where it can beat an incumbent, a plan of
   time ub (every-k's best, or >>two-level's: _ckpt_plan_policy). lb(s,t) is the fastest time of
   (s,t) with memory unlimited, over the program's options summed as the program sums them;
   out(s,t) bounds from below what the options above (s,t) add to it on the way from (1,n), each
   sibling at its lb. A value of (s,t) above its bound thr = max(U - out(s,t), lb(s,t)), U = ub
   (1 + 1e-8), is on no plan of time U or less. The dense table starts the row of (s,t) from thr
   instead of INFINITY, and the sparse frontier of (s,t) keeps only points faster than thr; an
   option that reads a value at its sub-problem's bound is then at least its own thr (to rounding),
   which the fill's run tests and the merges skip. So a cell (or point) holds its exact value, or
   it and its exact value are both near thr or above. When the top's best time is at most ub
   (1 + 1e-9), far below U against rounding (a few ulps a level), it and the values the plan is
   emitted from are exact: the plan is the unbounded program's; above, no plan of the program takes
   ub or less (bench/RESULTS.md: 400 distinct stages at 500 units, the fill 0.6 s instead of 1.1).
   0: out of memory. */
static int _ckpt_dp_bounds(_ckpt_dp *d, double ub) {
    int n = d->n, s, t, j, i, no;
    size_t nn = (size_t)(n + 2) * (size_t)(n + 1), x;
    double U = ub + ub * 1e-8, v, *lb = (double *)_ckpt_malloc(d->al, nn * sizeof(double));
    double *out = (double *)_ckpt_malloc(d->al, nn * sizeof(double));
    double *fs = (double *)_ckpt_malloc(d->al, ((size_t)n + 2) * sizeof(double));   /* f_s + .. + f_j, by j */
    double *thr = d->thr = (double *)_ckpt_malloc(d->al, (size_t)d->rep.n_rows * sizeof(double));
    if (!lb || !out || !fs || !thr) { _ckpt_free(d->al, lb); _ckpt_free(d->al, out); _ckpt_free(d->al, fs); return 0; }
    /* lb by rows s from the last; in a row, split j of every (s,t) at once (contiguous rows) */
    for (s = n; s >= 1; s--) {
        int sp = _ckpt_dp_splits0(d, s);
        double f = 0.0;
        for (t = s; t <= n; t++) lb[_CKPT_IDX(d, s, t)] = INFINITY;
        for (j = s; j <= n; j++) {
            double *l = &lb[_CKPT_IDX(d, s, j)];
            no = _ckpt_dp_unsplit(d, s, j, 0);  /* (s,j) is final once its unsplit options are in */
            for (i = 0; i < no; i++) {
                const _ckpt_opt *o = &d->opts[i];
                v = (o->c + (o->s1 ? lb[_CKPT_IDX(d, o->s1, o->t1)] : 0.0)) + (o->s2 ? lb[_CKPT_IDX(d, o->s2, o->t2)] : 0.0);
                if (v < *l) *l = v;
            }
            fs[j] = f += d->c[j - 1].f;
            for (t = j + 1; t <= n && sp; t++) {
                v = (f + lb[_CKPT_IDX(d, j + 1, t)]) + *l;
                if (v < lb[_CKPT_IDX(d, s, t)]) lb[_CKPT_IDX(d, s, t)] = v;
            }
        }
    }
    /* out by rows s from the first, t from the last: an (s,t) is final once the options of the
       rows above it and of (s,t'), t' > t, are in */
    for (x = 0; x < nn; x++) out[x] = INFINITY;
    out[_CKPT_IDX(d, 1, n)] = 0.0;
    for (s = 1; s <= n; s++) {
        int sp = _ckpt_dp_splits0(d, s);
        double f = 0.0;
        for (j = s; j <= n; j++) fs[j] = f += d->c[j - 1].f;
        for (t = n; t >= s; t--) {
            double *p = &out[_CKPT_IDX(d, s, t)];
            for (j = t + 1; j <= n && sp; j++) {     /* (s,t) as the second sub-problem of split t of (s,j) */
                v = (out[_CKPT_IDX(d, s, j)] + fs[t]) + lb[_CKPT_IDX(d, t + 1, j)];
                if (v < *p) *p = v;
            }
            if (*p == INFINITY) continue;
            no = _ckpt_dp_unsplit(d, s, t, 0);
            for (i = 0; i < no; i++) {
                const _ckpt_opt *o = &d->opts[i];
                double *o1 = o->s1 ? &out[_CKPT_IDX(d, o->s1, o->t1)] : NULL, *o2 = o->s2 ? &out[_CKPT_IDX(d, o->s2, o->t2)] : NULL;
                if (o1 && (v = (*p + o->c) + (o2 ? lb[_CKPT_IDX(d, o->s2, o->t2)] : 0.0)) < *o1) *o1 = v;
                if (o2 && (v = (*p + o->c) + (o1 ? lb[_CKPT_IDX(d, o->s1, o->t1)] : 0.0)) < *o2) *o2 = v;
            }
        }
        for (j = s; j < n && sp; j++)     /* (j+1,t) as the first sub-problem of split j of (s,t) */
            for (t = j + 1; t <= n; t++) {
                v = (out[_CKPT_IDX(d, s, t)] + fs[j]) + lb[_CKPT_IDX(d, s, j)];
                if (v < out[_CKPT_IDX(d, j + 1, t)]) out[_CKPT_IDX(d, j + 1, t)] = v;
            }
    }
    for (i = 0; i < d->rep.n_rows; i++) thr[i] = -INFINITY;
    for (s = 1; s <= n; s++)    /* a >>repeats row: the largest thr of the (s,t) that share it */
        for (t = s; t <= n; t++) {
            double *r = &thr[d->rep.row[_CKPT_IDX(d, s, t)]];
            v = U - out[_CKPT_IDX(d, s, t)];
            if (v < lb[_CKPT_IDX(d, s, t)]) v = lb[_CKPT_IDX(d, s, t)];
            if (v > *r) *r = v;
        }
    _ckpt_free(d->al, lb); _ckpt_free(d->al, out); _ckpt_free(d->al, fs);
    return 1;
}

static int _ckpt_dense_emit(const _ckpt_dense *D, int s, int t, int f, int64_t m, _ckpt_sched *out) {
    _ckpt_dp *d = D->d;
    double target = _ckpt_cell(D, s, t, f, m);
    int i, no = _ckpt_dp_options(d, s, t, f);
    for (i = 0; i < no; i++)
        if (_ckpt_dense_at(D, &d->opts[i], m) == target) {
            _ckpt_opt o = d->opts[i];   /* the recursion below reuses d->opts */
            return _ckpt_opt_ops(d->al, out, &o, s, _ckpt_fk(f), 1) &&
                   (!o.s1 || _ckpt_dense_emit(D, o.s1, o.t1, o.f1, m - (int64_t)(o.o1 / d->unit), out)) &&
                   (!o.s2 || _ckpt_dense_emit(D, o.s2, o.t2, o.f2, m - (int64_t)(o.o2 / d->unit), out)) &&
                   _ckpt_opt_ops(d->al, out, &o, s, _ckpt_fk(f), 0);
        }
    CKPT_ASSERT(0);
    return 0;
}

static uint64_t _ckpt_gcd(uint64_t a, uint64_t b) { while (b) { uint64_t r = a % b; a = b; b = r; } return a; }
/* The largest unit that divides every size of the chain (1 when all are 0). */
static uint64_t _ckpt_exact_unit(const ckpt_cost *c, int n) {
    uint64_t g = 0;
    int i, o;
    for (i = 0; i < n; i++) {
        g = _ckpt_gcd(g, c[i].a); g = _ckpt_gcd(g, c[i].wf); g = _ckpt_gcd(g, c[i].wb);
        for (o = 0; o <= c[i].n_options; o++) g = _ckpt_gcd(g, _ckpt_tape_of(&c[i], o));
    }
    return g ? g : 1;
}

/* Limits of the dense table: memory (before >>packed) and work (400 distinct stages at 500 units
   fit: 0.60-0.66 s on 1 thread over six chains, bench/RESULTS.md, 2026-11-28 (eighth session)). */
#define _CKPT_DENSE_MAX_BYTES ((uint64_t)384 << 20)
#define _CKPT_DENSE_MAX_WORK 1.2e10

/* The options the program uses for a chain of n stages: all of them (level 2) up to
   _CKPT_DP_DROP_STAGES stages, (a)-(d) (level 1) up to _CKPT_DP_TAPE_STAGES, else rotor's (a)-(c):
   each level multiplies the work (about 60 and 4 times; level 2 two to three times more on
   chains with no-checkpoint flags, for Keep and (h)). */
#define _CKPT_DP_DROP_STAGES 20
#define _CKPT_DP_TAPE_STAGES 64
static int _ckpt_dp_level(int n) { return n <= _CKPT_DP_DROP_STAGES ? 2 : n <= _CKPT_DP_TAPE_STAGES ? 1 : 0; }

/* rp: the chain's >>repeats rows; nopt: the most tape options of a stage (_ckpt_max_options),
   which multiply the families and, about as much, the work. */
static int _ckpt_dense_fits(const _ckpt_rep *rp, uint64_t M, int level, int nopt, int flagged) {
    double grow = (double)_ckpt_dp_families(level, nopt, flagged, NULL) / _ckpt_dp_families(level, 1, 0, NULL) * nopt *
                  (flagged && level == 2 ? 4.0 : 1.0);
    double bytes = (double)rp->n_rows * _ckpt_dp_families(level, nopt, flagged, NULL) *
                   (double)(M + 1 + (M + _CKPT_SUM_STEP - 1) / _CKPT_SUM_STEP + 2) * 8.0;
    return M <= 65536 && bytes <= (double)_CKPT_DENSE_MAX_BYTES &&
           rp->work * (double)M * (level == 2 ? 60.0 : level == 1 ? 4.0 : 1.0) * grow <= _CKPT_DENSE_MAX_WORK;
}

/* Up to this many stages the sparse program has no work allowance in any unit, only its memory
   cap: exact in bytes where the dense table cannot run (bench/RESULTS.md: seconds for 200
   distinct stages). */
#define _CKPT_DP_EXACT_STAGES 200

/* Runs the dense or the sparse program in one unit. ex (or NULL): the smallest peaks in the
   exact unit (ex->minp, with its unit and level; the rest of ex is freed), copied when the unit
   and level are those and sizes are rounded apart (they depend on nothing else). ub: an
   incumbent's time (INFINITY: none); CKPT_OK with no ops in out then says that every plan of the
   program takes longer than ub (1 + 1e-9) (>>bound; whether or not the bounds were computed). */
static ckpt_result _ckpt_persistent_in(const ckpt_allocator *al, const ckpt_cost *c, int n, uint64_t budget,
                                       uint64_t unit, int level, int sum_round, int dense, int threads, double ub,
                                       const uint64_t *at, int nat, _ckpt_sched *out, uint64_t *min_peak,
                                       const _ckpt_dp *ex) {
    _ckpt_dp d;
    _ckpt_team team;
    int k;
    double accept = ub + ub * 1e-9;     /* the best time at most this: a plan (>>bound) */
    ckpt_result r = _ckpt_dp_setup(&d, al, c, n, budget, unit, level, sum_round);
    memset(&team, 0, sizeof team);
    team.d = &d;
    /* Exactness is owed up to 65,536 units, and in any unit up to _CKPT_DP_EXACT_STAGES stages:
       then only memory may stop the sparse program. */
    if (budget / unit <= 65536 || n <= _CKPT_DP_EXACT_STAGES) { d.work_limit = 1e300; d.pool_limit = (int64_t)1 << 24; }
    if (r == CKPT_OK) {
        int q;
        if (ex && unit == ex->unit && level == ex->level && !sum_round)
            for (q = 0; q < d.nfam; q++)
                memcpy(d.minp[d.fam[q]], ex->minp[d.fam[q]], (size_t)(n + 2) * (size_t)(n + 1) * sizeof(uint64_t));
        else
            _ckpt_dp_minpeak(&d);
        *min_peak = d.minp[0][_CKPT_IDX(&d, 1, n)];
        if (*min_peak > budget) r = CKPT_ERR_INFEASIBLE;
    }
    /* >>bound, where rows are mostly distinct: its O(n^3) costs as much as a chain of repeats
       plans (400 stages of a 4-stage block: 134 ms without, 181-212 with, bench/RESULTS.md) */
    if (r == CKPT_OK && ub < INFINITY && ub > 0 && !level && d.rep.work * 24.0 >= (double)n * n * n &&
        !_ckpt_dp_bounds(&d, ub))
        r = CKPT_ERR_OUT_OF_HOST_MEMORY;
    if (r == CKPT_OK && !_ckpt_team_init(&team, &d, threads)) r = CKPT_ERR_OUT_OF_HOST_MEMORY;
    for (k = 0; k < nat; k++) out[k].n_ops = 0;
    if (r == CKPT_OK && dense) {
        _ckpt_dense D;
        if (!_ckpt_dense_alloc(&D, &d, team.workers))
            r = CKPT_ERR_OUT_OF_HOST_MEMORY;
        else {
            const _ckpt_drow *top = _ckpt_drow_of(&D, 1, n, 0);
            r = _ckpt_dense_fill(&D, &team);
            for (k = 0; k < nat && r == CKPT_OK; k++) {
                int64_t mk = (int64_t)(at[k] / unit), m = 0;
                double v = _ckpt_drow_at(top, mk);
                while (m < mk && _ckpt_drow_at(top, m) != v) m++;  /* the smallest peak at that time */
                if (v < INFINITY && v <= accept && !_ckpt_dense_emit(&D, 1, n, 0, m, &out[k]))
                    r = CKPT_ERR_OUT_OF_HOST_MEMORY;
            }
        }
        _ckpt_dense_free(&D);
    } else if (r == CKPT_OK) {
        r = _ckpt_dp_frontiers(&d, &team);
        for (k = 0; k < nat && r == CKPT_OK; k++) {  /* (no point: every plan takes longer than ub's bound) */
            int nf = d.fl[0][_CKPT_IDX(&d, 1, n)];
            const _ckpt_fp *fr = nf ? &d.pool[d.fs[0][_CKPT_IDX(&d, 1, n)]] : NULL;
            CKPT_ASSERT(nf > 0 || d.thr);
            while (nf > 0 && fr[nf - 1].p > at[k]) nf--;   /* the fastest point within at[k] */
            if (nf > 0 && fr[nf - 1].t <= accept && !_ckpt_dp_emit(&d, 1, n, 0, fr[nf - 1].p, &out[k]))
                r = CKPT_ERR_OUT_OF_HOST_MEMORY;
        }
    }
    _ckpt_team_free(&team);
    _ckpt_dp_free(&d);
    return r;
}

/* Plans in one unit: the dense table if it fits and sparse_first is 0; otherwise the sparse
   frontiers, and if those give up, the dense table in the finest unit that fits. *used gets the
   unit that ran; ex as for _ckpt_persistent_in. */
static ckpt_result _ckpt_persistent_unit(const ckpt_allocator *al, const ckpt_cost *c, int n, uint64_t budget,
                                         uint64_t unit, int level, int sum_round, int sparse_first, int threads, double ub,
                                         const uint64_t *at, int nat, _ckpt_sched *out, uint64_t *used,
                                         const _ckpt_dp *ex) {
    uint64_t mp;
    ckpt_result r;
    int nopt = _ckpt_max_options(c, n), flagged = _ckpt_flagged(c, n), fits;
    _ckpt_rep rp;
    *used = unit;
    if ((r = _ckpt_rep_make(al, c, n, &rp)) != CKPT_OK) return r;
    fits = _ckpt_dense_fits(&rp, budget / unit, level, nopt, flagged);
    if (fits && !sparse_first)
        r = _ckpt_persistent_in(al, c, n, budget, unit, level, sum_round, 1, threads, ub, at, nat, out, &mp, ex);
    else {
        r = _ckpt_persistent_in(al, c, n, budget, unit, level, sum_round, 0, threads, ub, at, nat, out, &mp, ex);
        if (r == CKPT_ERR_TOO_COMPLEX) {
            for (; !fits; fits = _ckpt_dense_fits(&rp, budget / unit, level, nopt, flagged)) unit *= 2;
            *used = unit;
            r = _ckpt_persistent_in(al, c, n, budget, unit, level, sum_round, 1, threads, ub, at, nat, out, &mp, ex);
        }
    }
    _ckpt_rep_free(al, &rp);
    return r;
}

/* unit, or a smaller one where its rounded sizes could sum to 2^60 or more (g: the exact unit, a
   floor) */
static uint64_t _ckpt_unit_capped(uint64_t unit, uint64_t g, int n) {
    uint64_t cap = ((uint64_t)1 << 59) / (4 * (uint64_t)n);
    return unit > cap && cap >= g ? cap : unit;
}

/* The program's optimum under budget (at most store-all's peak: more cannot help). *min_peak is
   always exact for the program's options: their smallest peak, computed in the largest unit that
   divides every size. The plan runs in that unit, or in ceil(budget / max_units) when the caller
   asks for a coarser one, capped so that rounded sizes cannot overflow; if a coarse unit finds
   nothing, the exact unit runs. At the smallest peak (the fastest plan there) only the exact unit
   runs (rounded sizes cannot do better there), and the sparse frontiers first: few of their points
   fit there, while the dense table holds every unit (bench/RESULTS.md: 50 stages of a repeated
   block, 174 ms and 287 MB peak RSS against 19 ms and 4.6 MB). Elsewhere the dense table when it
   fits; else sparse frontiers (exact at any unit count), which stop at a work allowance only beyond
   65,536 units and 200 stages, and at a memory cap (256 MB) in any case; then the dense table in
   the finest unit that fits. Returns CKPT_ERR_TOO_COMPLEX when the budget is feasible but every
   unit tried rounded too coarsely. ub: an incumbent's time (INFINITY: none); CKPT_OK with no ops
   then says that the unit's plans all take longer (>>bound). */
static ckpt_result _ckpt_persistent(const ckpt_allocator *al, const ckpt_cost *c, int n, uint64_t budget,
                                    uint32_t max_units, int threads, double ub, _ckpt_sched *out, uint64_t *min_peak,
                                    uint64_t *unit_out) {
    uint64_t g = _ckpt_exact_unit(c, n), unit;
    ckpt_result r;
    _ckpt_dp d;
    int level = _ckpt_dp_level(n), at_min;
    *unit_out = g;
    r = _ckpt_dp_setup(&d, al, c, n, budget, g, level, 0);
    if (r == CKPT_OK) {     /* keep only the smallest peaks (ex below): free the rest now */
        uint64_t *mp[_CKPT_FIDS];
        _ckpt_dp_minpeak(&d);
        *min_peak = d.minp[0][_CKPT_IDX(&d, 1, n)];
        memcpy(mp, d.minp, sizeof mp);
        memset(d.minp, 0, sizeof d.minp);
        _ckpt_dp_free(&d);
        memset(&d, 0, sizeof d);
        d.al = al; d.unit = g; d.level = level;
        memcpy(d.minp, mp, sizeof mp);
    }
    if (r != CKPT_OK || *min_peak > budget) {
        _ckpt_dp_free(&d);
        return r != CKPT_OK ? r : CKPT_ERR_INFEASIBLE;
    }
    at_min = budget == *min_peak;
    unit = g;
    if (max_units && budget / max_units >= g && !at_min) unit = budget / max_units + (budget % max_units != 0);
    unit = _ckpt_unit_capped(unit, g, n);
    /* >>rounding: in a coarse unit, a + t rounded once first. Its sizes are never larger than
       a and t rounded apart, so its plan is at least as fast; kept if it fits in bytes. */
    r = _ckpt_persistent_unit(al, c, n, budget, unit, level, unit != g, at_min, threads, ub, &budget, 1, out, unit_out,
                               &d);
    if (r == CKPT_OK && unit != g && out->n_ops) {  /* (a and t rounded apart always fit; when no plan
                                                       beats ub, none does with their larger sizes) */
        double t;
        uint64_t p;
        r = _ckpt_sched_eval_into(al, c, n, out, NULL, &t, &p);
        if (r == CKPT_OK && p > budget)
            r = _ckpt_persistent_unit(al, c, n, budget, unit, level, 0, 0, threads, ub, &budget, 1, out, unit_out, &d);
    }
    if (r == CKPT_ERR_INFEASIBLE && *unit_out != g)
        r = _ckpt_persistent_unit(al, c, n, budget, g, level, 0, 0, threads, ub, &budget, 1, out, unit_out, &d);
    _ckpt_dp_free(&d);
    return r == CKPT_ERR_INFEASIBLE ? CKPT_ERR_TOO_COMPLEX : r;
}

/* The program's fastest plans within each budget of at[0..nat-1] (ascending), from one table in
   the unit ceil(at[0] / units), doubled while the dense table would not fit and has over 100
   units (the sparse frontiers cost far more here: 400 distinct stages, bench/RESULTS.md); a + t
   rounded once (>>rounding; a plan's peak in bytes can then pass its budget). out[k] has no ops
   where at[k] is below the smallest peak. */
static ckpt_result _ckpt_persistent_grid(const ckpt_allocator *al, const ckpt_cost *c, int n, const uint64_t *at,
                                         int nat, uint32_t units, int threads, _ckpt_sched *out) {
    uint64_t g = _ckpt_exact_unit(c, n), top = at[nat - 1], unit = at[0] / units + (at[0] % units != 0), used;
    int level = _ckpt_dp_level(n), nopt = _ckpt_max_options(c, n), flagged = _ckpt_flagged(c, n);
    _ckpt_rep rp;
    ckpt_result r = _ckpt_rep_make(al, c, n, &rp);
    if (r != CKPT_OK) return r;
    if (unit < g) unit = g;
    while (top / unit > 100 && !_ckpt_dense_fits(&rp, top / unit, level, nopt, flagged)) unit *= 2;
    _ckpt_rep_free(al, &rp);
    unit = _ckpt_unit_capped(unit, g, n);
    return _ckpt_persistent_unit(al, c, n, top, unit, level, unit != g, 0, threads, INFINITY, at, nat, out, &used,
                                 NULL);
}

/* >>floor: a plan at the program's smallest peak, each sub-problem at its own smallest peak by
   the first option that reaches it. It needs only the smallest peaks, where the fastest plan at
   that peak needs the sparse frontiers in the exact unit (at 400 stages, 20-385 ms): its arena
   names min_budget unless it needs more than the peak (>>fit). */
static int _ckpt_floor_emit(_ckpt_dp *d, int s, int t, int f, _ckpt_sched *out) {
    uint64_t v = d->minp[f][_CKPT_IDX(d, s, t)];
    int i, no = _ckpt_dp_options(d, s, t, f);
    for (i = 0; i < no; i++)
        if (_ckpt_dp_opt_minp(d, &d->opts[i]) == v) {
            _ckpt_opt o = d->opts[i];   /* the recursion below reuses d->opts */
            return _ckpt_opt_ops(d->al, out, &o, s, _ckpt_fk(f), 1) && (!o.s1 || _ckpt_floor_emit(d, o.s1, o.t1, o.f1, out)) &&
                   (!o.s2 || _ckpt_floor_emit(d, o.s2, o.t2, o.f2, out)) && _ckpt_opt_ops(d->al, out, &o, s, _ckpt_fk(f), 0);
        }
    CKPT_ASSERT(0);
    return 0;
}
static ckpt_result _ckpt_persistent_floor(const ckpt_allocator *al, const ckpt_cost *c, int n, _ckpt_sched *out) {
    _ckpt_dp d;
    ckpt_result r = _ckpt_dp_setup(&d, al, c, n, UINT64_MAX, _ckpt_exact_unit(c, n), _ckpt_dp_level(n), 0);
    out->n_ops = 0;
    if (r == CKPT_OK) {
        _ckpt_dp_minpeak(&d);
        if (!_ckpt_floor_emit(&d, 1, n, 0, out)) r = CKPT_ERR_OUT_OF_HOST_MEMORY;
    }
    _ckpt_dp_free(&d);
    return r;
}

/* >>planner: policies dispatched (the plan object, the helpers optimal and every-k share) ------- */
struct ckpt_plan {
    ckpt_allocator al;
    ckpt_plan_info info;
    ckpt_op *ops;
    _ckpt_link link;        /* the link the plan was made for; d2h 0: untimed */
    uint64_t host_budget;   /* the pinned pool may not exceed it (0: no cap) */
    uint64_t arena_target, pool_target;     /* its layouts' targets (>>arena); 0: the bound */
};

/* Every-k with k = 0: the k with the least time that fits (ties: smaller peak). */
static ckpt_result _ckpt_every_k_best(const ckpt_allocator *al, const ckpt_cost *c, int n, uint64_t budget,
                                      _ckpt_sched *out, int *k_out, uint64_t *min_peak) {
    _ckpt_sched tmp = {NULL, 0, 0};
    _ckpt_an_scratch sc = {NULL, 0, 0};
    double best_t = DBL_MAX;
    uint64_t best_p = UINT64_MAX;
    int k, best_k = 0;
    ckpt_result r = CKPT_OK;
    *min_peak = UINT64_MAX;
    for (k = 1; k <= n && r == CKPT_OK; k++) {
        double t; uint64_t p;
        if ((r = _ckpt_every_k_sched(al, c, n, k, &tmp)) != CKPT_OK) break;
        if ((r = _ckpt_sched_eval_into(al, c, n, &tmp, &sc, &t, &p)) != CKPT_OK) break;
        if (p < *min_peak) *min_peak = p;
        if (p <= budget && (t < best_t || (t == best_t && p < best_p))) { best_t = t; best_p = p; best_k = k; }
    }
    _ckpt_free(al, tmp.ops); _ckpt_free(al, sc.p);
    if (r != CKPT_OK) return r;
    *k_out = best_k ? best_k : 1;
    if (!best_k) return CKPT_ERR_INFEASIBLE;
    return _ckpt_every_k_sched(al, c, n, best_k, out);
}

/* >>two-level: every-k's plan with a longer last segment, the one not recomputed: the earliest
   start of the last segment whose plan fits the budget (a binary search up to every-k's own
   start, as if starting earlier always needed more memory), the stages before it in segments of
   every-k's best k. *best (time *bt, peak *bp: every-k's best plan) becomes that plan when it is
   faster (ties: smaller peak). It is the incumbent of >>bound. 400 distinct stages at 500 units:
   3,349.25 instead of every-k's 3,411.75 (the program's plan: 3,217.75); 400 stages of a repeated
   block: 3,003.75 against every-k's 3,075.75 and the program's 3,039.25 in 500 units
   (bench/RESULTS.md). */
static ckpt_result _ckpt_two_level(const ckpt_allocator *al, const ckpt_cost *c, int n, uint64_t budget, int k,
                                   _ckpt_sched *best, double *bt, uint64_t *bp) {
    _ckpt_sched tmp = {NULL, 0, 0};
    _ckpt_an_scratch sc = {NULL, 0, 0};
    ckpt_result r = CKPT_OK;
    int lo = 1, hi = _ckpt_every_k_last(n, k);
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        double t;
        uint64_t p;
        if ((r = _ckpt_segments_sched(al, c, n, k, mid, &tmp)) != CKPT_OK ||
            (r = _ckpt_sched_eval_into(al, c, n, &tmp, &sc, &t, &p)) != CKPT_OK)
            break;
        if (p > budget) { lo = mid + 1; continue; }
        hi = mid - 1;
        if (t < *bt || (t == *bt && p < *bp)) {
            _ckpt_sched x = *best; *best = tmp; tmp = x;
            *bt = t; *bp = p;
        }
    }
    _ckpt_free(al, tmp.ops); _ckpt_free(al, sc.p);
    return r;
}

/* Optimal's incumbent (>>bound): every-k's best plan, or >>two-level's when faster, into *ek, of
   time *t and peak *p; none (ek->n_ops 0) when no every-k plan fits the budget. */
static ckpt_result _ckpt_incumbent(const ckpt_allocator *al, const ckpt_cost *c, int n, uint64_t budget,
                                   _ckpt_sched *ek, double *t, uint64_t *p) {
    int k = 1;
    ckpt_result r = _ckpt_every_k_best(al, c, n, budget, ek, &k, p);
    if (r == CKPT_ERR_INFEASIBLE) { ek->n_ops = 0; return CKPT_OK; }
    if (r == CKPT_OK) r = _ckpt_sched_eval_into(al, c, n, ek, NULL, t, p);
    if (r == CKPT_OK) r = _ckpt_two_level(al, c, n, budget, k, ek, t, p);
    return r;
}

/* Whether every size is a multiple of unit (then the program's rounding changed nothing). */
static int _ckpt_unit_exact(const ckpt_cost *c, int n, uint64_t unit) {
    int i, o;
    for (i = 0; i < n; i++) {
        if (c[i].a % unit || c[i].wf % unit || c[i].wb % unit) return 0;
        for (o = 0; o <= c[i].n_options; o++) if (_ckpt_tape_of(&c[i], o) % unit) return 0;
    }
    return 1;
}

/* After a program in a rounded unit: a heuristic plan in exact bytes may be faster. Keeps the
   fastest (ties: smaller peak) of *s (none when s->n_ops is 0), greedy and ek, the caller's
   incumbent (every-k's best plan or >>two-level's, of time ek_t and peak ek_p; none when
   ek->n_ops is 0); the plan not kept of s and ek ends in ek. */
static ckpt_result _ckpt_best_of_heuristics(const ckpt_allocator *al, const ckpt_cost *c, int n, uint64_t budget,
                                            _ckpt_sched *s, _ckpt_sched *ek, double ek_t, uint64_t ek_p) {
    _ckpt_sched h = {NULL, 0, 0};
    double t, th;
    uint64_t p, ph, mp;
    int pass;
    ckpt_result r = CKPT_OK;
    t = DBL_MAX; p = UINT64_MAX;
    if (s->n_ops) r = _ckpt_sched_eval_into(al, c, n, s, NULL, &t, &p);
    for (pass = 0; pass < 2 && r == CKPT_OK; pass++) {
        _ckpt_sched *x = pass ? ek : &h;
        if (pass == 0) {
            ckpt_result rh = _ckpt_greedy_sched(al, c, n, budget, &h, &mp);
            if (rh == CKPT_ERR_INFEASIBLE) continue;
            if (rh != CKPT_OK) { r = rh; break; }
            if ((r = _ckpt_sched_eval_into(al, c, n, &h, NULL, &th, &ph)) != CKPT_OK) break;
        } else if (!ek->n_ops)
            continue;
        else { th = ek_t; ph = ek_p; }
        if (th < t || (th == t && ph < p)) {
            _ckpt_sched tmp = *s; *s = *x; *x = tmp;
            t = th; p = ph;
        }
    }
    _ckpt_free(al, h.ops);
    return r;
}

/* The persistent program breaks time ties between its own schedules only: the incumbent (an
   every-k plan, or >>two-level's) of the same time and a smaller peak (examples/mlp_cuda.cu's
   chain at 0.4 and 0.6 of store-all) is taken instead, and so is the incumbent when it is faster
   (when the program has none as fast, s has no ops: >>bound; the program's plan can also be
   slower by the 1e-9 that bound allows, or by rounding). ek: the incumbent, of time ek_t and peak
   ek_p (none when ek->n_ops is 0); the plan not kept ends there. */
static ckpt_result _ckpt_every_k_tie(const ckpt_allocator *al, const ckpt_cost *c, int n, _ckpt_sched *s,
                                     _ckpt_sched *ek, double ek_t, uint64_t ek_p) {
    double t = 0.0;
    uint64_t p = 0;
    ckpt_result r = CKPT_OK;
    if (!ek->n_ops) return CKPT_OK;
    if (s->n_ops) r = _ckpt_sched_eval_into(al, c, n, s, NULL, &t, &p);
    if (r == CKPT_OK && (!s->n_ops || ek_t < t || (ek_t == t && ek_p < p))) { _ckpt_sched tmp = *s; *s = *ek; *ek = tmp; }
    return r;
}

/* The offload planner's inputs (see >>planner: offload below). */
typedef struct _ckpt_off {
    const ckpt_allocator *al;
    const ckpt_cost *c;
    int n;
    uint64_t budget, host_budget;
    _ckpt_link link;
} _ckpt_off;
static ckpt_result _ckpt_offload_plan(const _ckpt_off *o, uint32_t max_units, int threads, _ckpt_sched *s, ckpt_plan_info *info);

/* off: the offload policy's link and budgets (NULL for the others). min_peak: optimal's smallest
   peak on this chain when an earlier call found it (0: not known); the exact search then skips
   its search by peak. */
static ckpt_result _ckpt_plan_policy(const ckpt_allocator *al, const ckpt_cost *c, int n, ckpt_policy policy,
                                     int k, uint32_t max_units, int threads, uint64_t budget, uint64_t min_peak,
                                     const _ckpt_off *off, _ckpt_sched *s, ckpt_plan_info *info) {
    ckpt_result r;
    double t = 0.0;
    uint64_t p = 0;
    _ckpt_sched ek = {NULL, 0, 0};     /* optimal: the incumbent (_ckpt_incumbent) */
    info->unit = 1;
    info->guarantee = CKPT_GUARANTEE_NONE;
    switch (policy) {
    case CKPT_POLICY_STORE_ALL:
    case CKPT_POLICY_SQRT:
    case CKPT_POLICY_EVERY_K:
        if (policy == CKPT_POLICY_EVERY_K && k == 0)
            return _ckpt_every_k_best(al, c, n, budget, s, &info->k, &info->min_budget);
        info->k = policy == CKPT_POLICY_EVERY_K ? k : 0;
        r = policy == CKPT_POLICY_STORE_ALL ? _ckpt_every_k_sched(al, c, n, n, s)
          : policy == CKPT_POLICY_SQRT ? _ckpt_sqrt_sched(al, c, n, s)
          : _ckpt_every_k_sched(al, c, n, k, s);
        if (r == CKPT_OK) r = _ckpt_sched_eval_into(al, c, n, s, NULL, &t, &p);
        info->min_budget = p;
        return r == CKPT_OK && p > budget ? CKPT_ERR_INFEASIBLE : r;
    case CKPT_POLICY_GREEDY:
        if (n > CKPT_CUBIC_MAX_STAGES) return CKPT_ERR_TOO_COMPLEX;
        return _ckpt_greedy_sched(al, c, n, budget, s, &info->min_budget);
    case CKPT_POLICY_OFFLOAD:
        if (off && off->link.d2h > 0) {
            _ckpt_off o = *off;
            o.budget = budget < info->store_all_peak ? budget : info->store_all_peak;
            return _ckpt_offload_plan(&o, max_units, threads, s, info);
        }
        return _ckpt_plan_policy(al, c, n, CKPT_POLICY_OPTIMAL, k, max_units, threads, budget, min_peak, NULL, s,
                                 info);   /* no link */
    case CKPT_POLICY_OPTIMAL:
        if (budget > info->store_all_peak) budget = info->store_all_peak;   /* store-all is fastest */
        if (_ckpt_xs_size(c, n) > 0) {
            info->guarantee = CKPT_GUARANTEE_ALL_SCHEDULES;
            info->min_budget = min_peak;
            r = min_peak ? CKPT_OK : _ckpt_exact_search(al, c, n, 0, 1, s, &info->min_budget);
            if (r != CKPT_OK) return r;
            if (info->min_budget > budget) return CKPT_ERR_INFEASIBLE;
            return _ckpt_exact_search(al, c, n, budget, 0, s, NULL);
        }
        if (n > CKPT_CUBIC_MAX_STAGES) return CKPT_ERR_TOO_COMPLEX;
        info->guarantee = CKPT_GUARANTEE_PERSISTENT;
        s->n_ops = 0;
        /* an incumbent first, of time t and peak p: the program need only be exact where it is
           faster (>>bound) */
        r = _ckpt_incumbent(al, c, n, budget, &ek, &t, &p);
        if (r == CKPT_OK)
            r = _ckpt_persistent(al, c, n, budget, max_units, threads, ek.n_ops ? t : INFINITY, s, &info->min_budget,
                                 &info->unit);
        /* rounded by necessity rather than by request, or found nothing in a coarse unit: make
           sure no heuristic beats it */
        if ((r == CKPT_OK && !max_units && !_ckpt_unit_exact(c, n, info->unit)) || r == CKPT_ERR_TOO_COMPLEX) {
            if (r == CKPT_ERR_TOO_COMPLEX) s->n_ops = 0;
            r = _ckpt_best_of_heuristics(al, c, n, budget, s, &ek, t, p);
            if (r == CKPT_OK && s->n_ops == 0) r = CKPT_ERR_TOO_COMPLEX;
        } else if (r == CKPT_OK) {
            r = _ckpt_every_k_tie(al, c, n, s, &ek, t, p);
        }
        _ckpt_free(al, ek.ops);
        return r;
    default:
        return CKPT_ERR_BAD_POLICY;
    }
}

/* >>planner: offload, jointly with recomputation -----------------------------------------------
   A recompute-only plan made for a larger budget B' recomputes less; offloading boundaries that
   sit idle across its peak brings it down to the budget. For B' from the budget itself (no
   offload: the recompute-only optimum) up to store-all's peak (eight budgets above the budget,
   all planned from one table of the long-chain program), the planner takes that plan, then
   repeatedly finds the first op over the budget and offloads the boundary idle across it (O right
   after its last access, P right before its next read), preferring copies that fit in the compute
   of the gap and then the largest boundary, or, with none left, waits there for the copy that
   ends first (W); then it moves each P as early as device memory and the host budget allow. The
   fastest result by makespan wins, so the plan is never predicted slower than the recompute-only
   optimum. */

/* Buffer (i, tape): tape 0 is X[i], read by F(i+1) and B(i+1); tape 1 is T[i], read by B(i). */
static int _ckpt_reads_buf(const ckpt_op *op, int i, int tape) {
    if (tape) return op->kind == CKPT_OP_B && op->stage == i;
    return (op->kind == CKPT_OP_F || op->kind == CKPT_OP_B) && op->stage == i + 1;
}
static int _ckpt_makes_buf(const ckpt_op *op, int i, int tape) {
    if (op->stage != i) return 0;
    if (op->kind == CKPT_OP_P) return op->tape == tape;
    return op->kind == CKPT_OP_F && (!tape || op->tape);
}
static int _ckpt_ends_buf(const ckpt_op *op, int i, int tape) {
    return op->kind == CKPT_OP_B && op->stage == (tape ? i : i + 1);
}

/* Every buffer idle across op k, in one pass each way: buffer b = tape (n + 1) + i gets g[2b], its
   last access before k, and g[2b + 1], its first read after k; g[2b] = -1 when it is not live
   across k, is accessed at k, is offloaded already, or is not read again. opt[i]: the option of
   the last F before k that kept T[i] (0: none). An op touches only (stage, 0), (stage, 1) and
   (stage - 1, 0). st: 2 (n + 1) scratch. */
static void _ckpt_off_gaps(const ckpt_op *ops, int n_ops, int n, int k, int *g, int *opt, unsigned char *st) {
    int j, q, b;
    enum { LIVE = 1, OFFL = 2, OPEN = 4 };
    for (b = 0; b < 2 * (n + 1); b++) { g[2 * b] = -1; st[b] = 0; }
    for (j = 0; j <= n; j++) opt[j] = 0;
    for (j = 0; j <= k && j < n_ops; j++) {
        const ckpt_op *op = &ops[j];
        for (q = 0; q < 3; q++) {
            int i = q == 2 ? op->stage - 1 : op->stage, tape = q == 1;
            if (i < 0 || i > n) continue;
            b = tape * (n + 1) + i;
            if (j == k) {   /* accessed at k */
                if (_ckpt_reads_buf(op, i, tape) || _ckpt_makes_buf(op, i, tape)) st[b] = 0;
            } else if (_ckpt_makes_buf(op, i, tape)) { st[b] = LIVE; g[2 * b] = j; }
            else if (_ckpt_ends_buf(op, i, tape)) st[b] &= (unsigned char)~LIVE;
            else if (_ckpt_reads_buf(op, i, tape) && (st[b] & LIVE)) g[2 * b] = j;
            else if (op->kind == CKPT_OP_O && op->stage == i && op->tape == tape) st[b] |= OFFL;
        }
        if (j < k && op->kind == CKPT_OP_F && op->tape) opt[op->stage] = op->option;
    }
    for (b = 0; b < 2 * (n + 1); b++) st[b] = st[b] == LIVE ? OPEN : 0;
    for (j = k + 1; j < n_ops; j++) {
        const ckpt_op *op = &ops[j];
        for (q = 0; q < 3; q++) {
            int i = q == 2 ? op->stage - 1 : op->stage, tape = q == 1;
            if (i < 0 || i > n || !(st[b = tape * (n + 1) + i] & OPEN)) continue;
            if (_ckpt_reads_buf(op, i, tape)) { g[2 * b + 1] = j; st[b] = LIVE; }
            else if (_ckpt_makes_buf(op, i, tape)) st[b] = 0;
        }
    }
    for (b = 0; b < 2 * (n + 1); b++) if (st[b] != LIVE) g[2 * b] = -1;
}

static void _ckpt_ops_insert(ckpt_op *ops, int *n_ops, int pos, ckpt_op_kind kind, int stage, int tape) {
    memmove(ops + pos + 1, ops + pos, (size_t)(*n_ops - pos) * sizeof *ops);
    ops[pos].kind = kind; ops[pos].stage = stage; ops[pos].tape = tape; ops[pos].option = 0;
    (*n_ops)++;
}

/* Time, peaks and validity of ops; *over gets the first op whose device live bytes exceed the
   budget (-1: none). live: n_ops + 2 scratch. */
static ckpt_result _ckpt_off_eval(const _ckpt_off *o, const ckpt_op *ops, int n_ops, double *t, uint64_t *peak,
                                  uint64_t *host_peak, int *over, int64_t *live) {
    _ckpt_analysis an;
    const char *why;
    int bad, k, b;
    int64_t acc = 0;
    ckpt_result r = _ckpt_analyze(o->c, o->n, ops, n_ops, &o->link, o->al, NULL, over != NULL, &an, &bad, &why, NULL);
    if (r != CKPT_OK) return r;
    *t = an.time; *peak = an.peak; *host_peak = an.host_peak_aligned;
    if (over) {
        *over = -1;
        memset(live, 0, ((size_t)n_ops + 2) * sizeof *live);
        for (b = 0; b < an.n_bufs; b++) {
            live[an.bufs[b].start] += (int64_t)an.bufs[b].bytes;
            live[an.bufs[b].end + 1] -= (int64_t)an.bufs[b].bytes;
        }
        for (k = 0; k < n_ops && *over < 0; k++) { acc += live[k]; if ((uint64_t)acc > o->budget) *over = k; }
        _ckpt_analysis_free(o->al, &an);
    }
    return CKPT_OK;
}

static int _ckpt_off_fits(const _ckpt_off *o, uint64_t peak, uint64_t host_peak) {
    return peak <= o->budget && (!o->host_budget || host_peak <= o->host_budget);
}

/* A W to insert before op k, which is over the budget: of the offloaded buffers still on the
   device during k (their copies not done in time) and not read again before their P, the one
   offloaded first, whose copy ends first. *found 0 when there is none. */
static ckpt_result _ckpt_off_wait_pick(const _ckpt_off *o, const ckpt_op *ops, int n_ops, int k, ckpt_op *w, int *found) {
    _ckpt_analysis an;
    const char *why;
    int bad, j, q;
    ckpt_result r = _ckpt_analyze(o->c, o->n, ops, n_ops, &o->link, o->al, NULL, 1, &an, &bad, &why, NULL);
    *found = 0;
    if (r != CKPT_OK) return r;
    for (j = 0; j < k && !*found; j++) {
        const ckpt_op *op = &ops[j];
        if (op->kind != CKPT_OP_O || an.bufs[an.instr[j].in].end < k) continue;
        for (q = j + 1; q < n_ops; q++) {
            const ckpt_op *x = &ops[q];
            if (x->stage == op->stage && x->tape == op->tape && (x->kind == CKPT_OP_W || x->kind == CKPT_OP_P)) break;
            if (q >= k && _ckpt_reads_buf(x, op->stage, op->tape)) break;
        }
        if (q < n_ops && ops[q].kind == CKPT_OP_P && q > k) {
            w->kind = CKPT_OP_W; w->stage = op->stage; w->tape = op->tape;
            *found = 1;
        }
    }
    _ckpt_analysis_free(o->al, &an);
    return CKPT_OK;
}

/* Adds O/P pairs, then W ops, to ops (room for 8n more) until the device peak fits.
   CKPT_ERR_INFEASIBLE when no idle boundary is left to offload and no copy left to wait for. A
   gap's compute time is a difference of running sums over the ops. */
static ckpt_result _ckpt_off_insert_in(const _ckpt_off *o, ckpt_op *ops, int *n_ops, int64_t *live, int *g, int *opt,
                                       unsigned char *st, double *run) {
    int iter, i, k;
    double t;
    uint64_t peak, hp;
    ckpt_result r = _ckpt_off_eval(o, ops, *n_ops, &t, &peak, &hp, &k, live);
    for (iter = 0; iter < 4 * o->n; iter++) {   /* at most 2 ops each: the caller's room of 8n */
        double best_bytes = 0, best_gap = 0;
        int j, best_hidden = 0, best_i = -1, best_tape = 0, best_p = -1, best_r = -1;
        if (r != CKPT_OK) return r;
        if (k < 0) return _ckpt_off_fits(o, peak, hp) ? CKPT_OK : CKPT_ERR_INFEASIBLE;
        _ckpt_off_gaps(ops, *n_ops, o->n, k, g, opt, st);
        run[0] = 0.0;
        for (j = 0; j < *n_ops; j++)
            run[j + 1] = run[j] + (ops[j].kind == CKPT_OP_F ? o->c[ops[j].stage - 1].f
                                   : ops[j].kind == CKPT_OP_B ? o->c[ops[j].stage - 1].b : 0.0);
        for (i = 1; i <= 2 * o->n; i++) {   /* X[1..n-1], then T[1..n] */
            int tape = i > o->n, s = tape ? i - o->n : i, b = tape * (o->n + 1) + s, p = g[2 * b], q = g[2 * b + 1];
            double gap, copy, bytes;
            int hidden;
            if ((!tape && s >= o->n) || p < 0) continue;
            bytes = (double)(tape ? _ckpt_tape_of(&o->c[s - 1], opt[s]) : o->c[s - 1].a);  /* T[s] in its F's option */
            if (bytes == 0) continue;
            gap = run[q] - run[p + 1];
            copy = bytes / o->link.d2h + bytes / o->link.h2d;
            hidden = gap >= copy;
            /* hidden copies first, then the most bytes, then the longest gap */
            if (best_i < 0 || hidden > best_hidden || (hidden == best_hidden && (bytes > best_bytes ||
                (bytes == best_bytes && gap > best_gap)))) {
                best_hidden = hidden; best_bytes = bytes; best_gap = gap;
                best_i = s; best_tape = tape; best_p = p; best_r = q;
            }
        }
        if (best_i < 0) {       /* nothing idle left: wait for a copy instead */
            ckpt_op w = {CKPT_OP_W, 0, 0, 0};   /* set by the pick; initialised for -O3 -Wmaybe-uninitialized */
            int found;
            if ((r = _ckpt_off_wait_pick(o, ops, *n_ops, k, &w, &found)) != CKPT_OK) return r;   /* out of memory */
            if (!found) return CKPT_ERR_INFEASIBLE;
            _ckpt_ops_insert(ops, n_ops, k, w.kind, w.stage, w.tape);
            r = _ckpt_off_eval(o, ops, *n_ops, &t, &peak, &hp, &k, live);
            continue;
        }
        _ckpt_ops_insert(ops, n_ops, best_p + 1, CKPT_OP_O, best_i, best_tape);
        _ckpt_ops_insert(ops, n_ops, best_r + 1, CKPT_OP_P, best_i, best_tape);
        r = _ckpt_off_eval(o, ops, *n_ops, &t, &peak, &hp, &k, live);    /* (the next round's too) */
        if (r != CKPT_OK) return r == CKPT_ERR_BAD_SCHEDULE ? CKPT_ERR_INFEASIBLE : r;
        if (o->host_budget && hp > o->host_budget) return CKPT_ERR_INFEASIBLE;
    }
    return CKPT_ERR_INFEASIBLE;
}
static ckpt_result _ckpt_off_insert(const _ckpt_off *o, ckpt_op *ops, int *n_ops, int64_t *live) {
    size_t nb = 2 * ((size_t)o->n + 1);
    int *g = (int *)_ckpt_malloc(o->al, (3 * nb) * sizeof(int));    /* 2 per buffer, then opt: n + 1 */
    unsigned char *st = (unsigned char *)_ckpt_malloc(o->al, nb);
    double *run = (double *)_ckpt_malloc(o->al, ((size_t)*n_ops + 8 * (size_t)o->n + 2) * sizeof(double));
    ckpt_result r = g && st && run ? _ckpt_off_insert_in(o, ops, n_ops, live, g, g + 2 * nb, st, run)
                                   : CKPT_ERR_OUT_OF_HOST_MEMORY;
    _ckpt_free(o->al, g); _ckpt_free(o->al, st); _ckpt_free(o->al, run);
    return r;
}

/* Moves each P as early as the budgets allow (not before its O or the previous P), keeping a move
   only if the makespan does not grow. */
static ckpt_result _ckpt_off_hoist(const _ckpt_off *o, ckpt_op *ops, int n_ops) {
    int q, j;
    double t0;
    uint64_t p0, h0;
    ckpt_result r = _ckpt_off_eval(o, ops, n_ops, &t0, &p0, &h0, NULL, NULL);
    if (r != CKPT_OK) return r;
    for (q = 0; q < n_ops; q++) {
        int lo = q, pos;
        if (ops[q].kind != CKPT_OP_P) continue;
        for (j = q - 1; j >= 0; j--) {
            int st = ops[q].stage, tp = ops[q].tape;
            if (ops[j].kind == CKPT_OP_P ||
                ((ops[j].kind == CKPT_OP_O || ops[j].kind == CKPT_OP_W) && ops[j].stage == st && ops[j].tape == tp) ||
                _ckpt_reads_buf(&ops[j], st, tp) || _ckpt_makes_buf(&ops[j], st, tp)) break;
            lo = j;
        }
        for (pos = lo; pos < q; pos++) {     /* earliest first: the first that fits is kept */
            ckpt_op moved = ops[q];
            double t;
            uint64_t pk, hp;
            memmove(ops + pos + 1, ops + pos, (size_t)(q - pos) * sizeof *ops);
            ops[pos] = moved;
            r = _ckpt_off_eval(o, ops, n_ops, &t, &pk, &hp, NULL, NULL);
            if (r == CKPT_OK && _ckpt_off_fits(o, pk, hp) && t <= t0) { t0 = t; break; }
            memmove(ops + pos, ops + pos + 1, (size_t)(q - pos) * sizeof *ops);
            ops[q] = moved;
            if (r != CKPT_OK && r != CKPT_ERR_BAD_SCHEDULE) return r;
        }
    }
    return CKPT_OK;
}

static ckpt_result _ckpt_offload_plan(const _ckpt_off *o, uint32_t max_units, int threads, _ckpt_sched *s, ckpt_plan_info *info) {
    enum { grid = 8 };
    _ckpt_sched cand = {NULL, 0, 0}, gs[grid];
    uint64_t gb[grid];
    ckpt_plan_info ci;
    ckpt_op *ops = NULL;
    int64_t *live = NULL;
    double best_t = DBL_MAX;
    uint64_t best_p = UINT64_MAX, sa = info->store_all_peak, min_budget = UINT64_MAX;
    int j, best_n = 0, ng = 0;
    ckpt_result r = CKPT_OK;
    memset(gs, 0, sizeof gs);
    /* starting points for offload: the persistent program's plans at budgets above this one, all
       from one table (_ckpt_persistent_grid) */
    for (j = 1; j <= grid && o->budget < sa && o->n <= CKPT_CUBIC_MAX_STAGES; j++) {
        uint64_t bj = o->budget + (uint64_t)((double)(sa - o->budget) * j / grid);
        if (bj > o->budget) gb[ng++] = bj;
    }
    if (ng) r = _ckpt_persistent_grid(o->al, o->c, o->n, gb, ng, 1000, threads, gs);
    if (r == CKPT_ERR_INFEASIBLE || r == CKPT_ERR_TOO_COMPLEX) { r = CKPT_OK; ng = 0; }
    for (j = 0; j <= ng + 1 && r == CKPT_OK; j++) {
        const _ckpt_sched *cs = &cand;
        double t;
        uint64_t pk, hp;
        int n_ops;
        ckpt_result rj = CKPT_OK;
        if (j == 0 || j > ng) {     /* the recompute-only optimum itself (at the budget or its smallest) */
            /* below optimal's min_budget: its plan there, with offloads, may still fit */
            if (j > ng && !(min_budget > o->budget && min_budget < sa)) continue;
            ci = *info;
            rj = _ckpt_plan_policy(o->al, o->c, o->n, CKPT_POLICY_OPTIMAL, 0, max_units, threads,
                                   j ? min_budget : o->budget, j ? min_budget : 0, NULL, &cand, &ci);
            if (j == 0) min_budget = ci.min_budget;
        } else if (!(cs = &gs[j - 1])->n_ops) {
            continue;
        }
        if (rj == CKPT_ERR_INFEASIBLE) continue;
        if (rj != CKPT_OK) { r = rj; break; }
        _ckpt_free(o->al, ops); _ckpt_free(o->al, live);
        ops = (ckpt_op *)_ckpt_malloc(o->al, ((size_t)cs->n_ops + 8 * (size_t)o->n + 4) * sizeof *ops);
        live = (int64_t *)_ckpt_malloc(o->al, ((size_t)cs->n_ops + 8 * (size_t)o->n + 8) * sizeof *live);
        if (!ops || !live) { r = CKPT_ERR_OUT_OF_HOST_MEMORY; break; }
        memcpy(ops, cs->ops, (size_t)cs->n_ops * sizeof *ops);
        n_ops = cs->n_ops;
        rj = _ckpt_off_insert(o, ops, &n_ops, live);
        if (rj == CKPT_OK) rj = _ckpt_off_hoist(o, ops, n_ops);
        if (rj == CKPT_OK) rj = _ckpt_off_eval(o, ops, n_ops, &t, &pk, &hp, NULL, NULL);
        if (rj == CKPT_ERR_INFEASIBLE || (rj == CKPT_OK && !_ckpt_off_fits(o, pk, hp))) continue;
        if (rj != CKPT_OK) { r = rj; break; }
        if (t < best_t || (t == best_t && pk < best_p)) {
            ckpt_op *keep = s->ops;
            s->ops = ops; s->n_ops = n_ops; s->cap = n_ops;
            ops = keep;
            best_t = t; best_p = pk; best_n = 1;
        }
    }
    for (j = 0; j < grid; j++) _ckpt_free(o->al, gs[j].ops);
    _ckpt_free(o->al, ops); _ckpt_free(o->al, live); _ckpt_free(o->al, cand.ops);
    info->min_budget = best_n && best_p < min_budget ? best_p : min_budget;
    info->guarantee = CKPT_GUARANTEE_NONE;
    if (r != CKPT_OK) return r;
    return best_n ? CKPT_OK : CKPT_ERR_INFEASIBLE;
}

static ckpt_result _ckpt_layout_bufs(const ckpt_allocator *al, _ckpt_buf *bufs, int n_bufs, int n_ops, uint64_t target,
                                     uint64_t *arena, uint64_t *fixed);

/* The predicted figures of schedule s (time, peaks, offloads) and the sizes of its arena and
   pinned pool once laid out (>>arena) against targets ta and tp, into *info and *pool; *fixed
   (if not NULL): the arena of the fixed orders, which no target changes. */
static ckpt_result _ckpt_plan_measure(const ckpt_allocator *al, const ckpt_cost *c, int n, const _ckpt_sched *s,
                                      const _ckpt_link *link, uint64_t ta, uint64_t tp, ckpt_plan_info *info,
                                      uint64_t *pool, uint64_t *fixed) {
    _ckpt_analysis an;
    const char *why;
    int bad;
    ckpt_result r = _ckpt_analyze(c, n, s->ops, s->n_ops, link, al, NULL, 1, &an, &bad, &why, NULL);
    CKPT_ASSERT(r != CKPT_ERR_BAD_SCHEDULE);
    if (r != CKPT_OK) return r;
    info->time = an.time; info->peak = an.peak; info->compute_time = an.compute_time;
    info->host_peak = an.host_peak; info->n_offloaded = an.n_offloads;
    r = _ckpt_layout_bufs(al, an.bufs, an.n_bufs, s->n_ops, ta, &info->arena, fixed);
    if (r == CKPT_OK) r = _ckpt_layout_bufs(al, an.hbufs, an.n_hbufs, s->n_ops, tp, pool, NULL);
    _ckpt_analysis_free(al, &an);
    return r;
}

/* The target of a plan's pinned-pool layout (>>arena): its cap, if any. */
static uint64_t _ckpt_pool_target(const _ckpt_off *off) {
    return off && off->host_budget ? off->host_budget : UINT64_MAX;
}

/* >>fit: the arena within the budget. A layout can need more than the peak it bounds (buffers
   live at different times cannot always share addresses), so a plan whose arena (or pinned pool,
   against off->host_budget) does not fit is made again below: the policy's budget goes down by
   the excess (the host budget likewise) until it fits. For optimal without offload, the first
   plan that does not fit is followed by one a byte below its peak (the next point down its
   time/peak trade-off, often with a smaller arena); if that does not fit either, the descent
   goes on from the excess as it would have: in exact units, never to a slower plan. Before
   those, in the exact search, a plan at the first plan's own peak (when below the budget) is
   tried aside: as fast, it can be another schedule with another layout; if it does not fit, the
   descent goes on from the first plan. (For the long-chain program that try changed no plan in
   bench/RESULTS.md's runs, and took up to 1.55x as long.) The last try, the floor, is the plan at
   the policy's minimum m with no pinned pool; every budget from max(m, its fixed orders' arena:
   >>arena) up plans (the descent ends at the floor at the latest), so that is min_budget, or the
   budget itself when smaller and planned. For optimal beyond the exact search, the floor is
   >>floor's plan, and the fastest plan at m runs only when no plan was found above (it is
   returned if it fits). */
static ckpt_result _ckpt_plan_fit(const ckpt_allocator *al, const ckpt_cost *c, int n, ckpt_policy policy, int k,
                                  uint32_t max_units, int threads, uint64_t budget, const _ckpt_off *off, _ckpt_sched *s,
                                  ckpt_plan_info *info) {
    const ckpt_plan_info base = *info;
    ckpt_plan_info found = base;
    _ckpt_sched keep = {NULL, 0, 0};
    _ckpt_sched ls = {NULL, 0, 0};     /* >>floor's plan, of info li and min_budget lw */
    ckpt_plan_info li = base;
    uint64_t b = budget, hb = off ? off->host_budget : 0, m = 0, pool = 0, jump = 0, lw = UINT64_MAX, fx = 0, ob = 0;
    int iter, floor = 0, have = 0, walk = 0, own = 0;
    int opt = policy == CKPT_POLICY_OPTIMAL || (policy == CKPT_POLICY_OFFLOAD && !off);   /* (no link: optimal) */
    int xs = opt && _ckpt_xs_size(c, n) > 0;    /* the exact search plans */
    int lex = opt && !xs && n <= CKPT_CUBIC_MAX_STAGES;
    ckpt_result r;
    for (iter = 0;; iter++) {
        ckpt_plan_info ti = base;
        _ckpt_off o;
        if (off) { o = *off; o.host_budget = hb; }
        r = _ckpt_plan_policy(al, c, n, policy, k, max_units, threads, b, opt ? m : 0,
                              off ? &o : NULL, s, &ti);
        if (iter == 0) m = ti.min_budget;
        if (r == CKPT_ERR_INFEASIBLE && floor == 1 && ti.min_budget > b) {
            b = ti.min_budget; floor = 2;   /* offload's minimum was below optimal's: optimal's */
            continue;
        }
        if (r == CKPT_ERR_INFEASIBLE && !floor) goto to_floor;
        if (r == CKPT_OK)
            r = _ckpt_plan_measure(al, c, n, s, off ? &off->link : NULL, budget, _ckpt_pool_target(off), &ti, &pool, &fx);
        if (r != CKPT_OK) {     /* with a plan found, only running out of memory fails */
            if (have && r != CKPT_ERR_OUT_OF_HOST_MEMORY) { *info = found; info->min_budget = m; r = CKPT_OK; }
            else if (!have) { *info = ti; info->min_budget = m; }
            break;
        }
        if (floor) {
            uint64_t w = lex ? lw : fx > b ? fx : b;
            if (!have && ti.arena <= budget) {
                _ckpt_sched tmp = keep; keep = *s; *s = tmp;
                found = ti; have = 1; found.fit_budget = b;
            } else if (!have && lex && li.arena <= budget) {    /* only >>floor's plan fits */
                _ckpt_sched tmp = keep; keep = ls; ls = tmp;
                found = li; have = 1; found.fit_budget = b;
            }
            if (have) { *info = found; info->min_budget = w < budget ? w : budget; }
            else {      /* what the policy says of itself, without a plan's figures */
                *info = base; info->unit = ti.unit; info->guarantee = ti.guarantee; info->k = ti.k;
                info->min_budget = w; r = CKPT_ERR_INFEASIBLE;
            }
            break;
        }
        if (ti.arena <= budget && (!off || !off->host_budget || pool <= off->host_budget)) {
            /* planned; the floor still names min_budget */
            found = ti; have = 1; found.fit_budget = b < budget ? b : budget;
            { _ckpt_sched tmp = keep; keep = *s; *s = tmp; }
            goto to_floor;
        }
        if (off && off->host_budget && pool > off->host_budget) {
            uint64_t h = hb < ti.host_peak ? hb : ti.host_peak, d = pool - off->host_budget;
            hb = h > d ? h - d : 1;    /* 1: nothing offloaded (every offloaded buffer is >= CKPT_ALIGN) */
        } else if (own == 1) {
            b = ob; own = 2;                /* the own peak did not fit: on from the first plan */
        } else if (walk == 1) {
            b = jump; walk = 2;             /* the step did not fit: on as without it */
        } else {
            uint64_t p = b < ti.peak ? b : ti.peak, d = ti.arena - budget;
            int first = xs && !walk && !own && ti.peak < b;
            b = p > d ? p - d : 0;
            if (opt && !walk && d > 1 && p - 1 >= m) { jump = b; b = p - 1; walk = 1; }
            if (first) { ob = b; b = ti.peak; own = 1; }    /* first its own peak: as fast, maybe another layout */
        }
        if (b >= m && iter < 16 + (walk != 0) + (own != 0)) continue;
    to_floor:
        b = m; hb = off ? 1 : 0; floor = 1;
        if (!lex) continue;
        /* >>floor: its plan names min_budget; the fastest plan at m runs only where it could be
           the plan returned (preferred to the floor's) */
        li = base;
        r = _ckpt_persistent_floor(al, c, n, &ls);
        if (r == CKPT_OK) r = _ckpt_plan_measure(al, c, n, &ls, NULL, budget, UINT64_MAX, &li, &pool, &fx);
        if (r != CKPT_OK) {
            if (have && r != CKPT_ERR_OUT_OF_HOST_MEMORY) { *info = found; info->min_budget = m; r = CKPT_OK; }
            else if (!have) { *info = base; info->min_budget = m; }
            break;
        }
        li.unit = _ckpt_exact_unit(c, n); li.guarantee = CKPT_GUARANTEE_NONE;
        lw = fx > m ? fx : m;
        if (have || budget < m) {
            if (have) { *info = found; info->min_budget = lw < budget ? lw : budget; }
            else {
                *info = base; info->unit = li.unit; info->guarantee = CKPT_GUARANTEE_PERSISTENT;
                info->min_budget = lw; r = CKPT_ERR_INFEASIBLE;
            }
            break;
        }
    }
    if (have) { _ckpt_sched tmp = keep; keep = *s; *s = tmp; }     /* the plan found goes to *s */
    _ckpt_free(al, keep.ops); _ckpt_free(al, ls.ops);
    return r;
}

/* The offload policy's fitted plan, or none (ro, its result; pre: the figures before the fit),
   against optimal's fitted plan, which is kept when faster: the offload policy's descent can end
   below a budget where optimal's plan fits, and optimal's >>floor plan can fit where the offload
   policy's floor does not. (Without a descent, optimal's plan at the budget was one of its
   candidates.) min_budget is the smaller of the two. */
static ckpt_result _ckpt_fit_offload_vs_optimal(const ckpt_allocator *al, const ckpt_cost *c, int n,
                                                uint32_t max_units, int threads, const ckpt_plan_info *pre,
                                                ckpt_result ro, _ckpt_sched *s, ckpt_plan_info *info) {
    ckpt_plan_info oi = *pre;
    _ckpt_sched os = {NULL, 0, 0};
    ckpt_result r = _ckpt_plan_fit(al, c, n, CKPT_POLICY_OPTIMAL, 0, max_units, threads, pre->budget, NULL, &os, &oi);
    uint64_t mb = info->min_budget < oi.min_budget ? info->min_budget : oi.min_budget;
    if (r == CKPT_OK && (ro != CKPT_OK || oi.time < info->time)) {
        _ckpt_sched tmp = *s; *s = os; os = tmp;
        *info = oi;
        info->guarantee = CKPT_GUARANTEE_NONE;
        ro = CKPT_OK;
    }
    if (r == CKPT_OK || r == CKPT_ERR_INFEASIBLE) info->min_budget = mb;
    _ckpt_free(al, os.ops);
    if (ro != CKPT_OK) return r == CKPT_ERR_OUT_OF_HOST_MEMORY ? r : ro;
    return r == CKPT_ERR_INFEASIBLE || r == CKPT_ERR_TOO_COMPLEX ? CKPT_OK : r;
}

/* >>planner: public entry points (ckpt_plan_create and the plan's getters) ---------------------- */

/* Plans and fills a new ckpt_plan for lanes microbatch lanes (the host budget is shared by
   their pools); on CKPT_ERR_INFEASIBLE, *info still has the figures. */
static ckpt_result _ckpt_plan_make(const ckpt_allocator *al, const ckpt_logger *lg, const ckpt_cost *user_costs, int n,
                                   const ckpt_plan_desc *desc, int lanes, ckpt_plan **out, ckpt_plan_info *info) {
    _ckpt_sched s = {NULL, 0, 0};
    _ckpt_off off;
    ckpt_plan *plan = NULL;
    ckpt_policy policy = desc ? desc->policy : CKPT_POLICY_OPTIMAL;
    int k = desc ? desc->k : 0;
    ckpt_cost *c = NULL;
    ckpt_result r;
    ckpt_plan_info pre;
    memset(info, 0, sizeof *info);
    *out = NULL;
    if ((r = _ckpt_check_costs(user_costs, n, lg)) != CKPT_OK) return r;
    if ((int)policy < 0 || (int)policy >= CKPT_POLICY_COUNT_)
        return _CKPT_ERR(lg, CKPT_ERR_BAD_POLICY, "ckpt_plan_desc.policy %d is not a ckpt_policy", (int)policy);
    if (policy == CKPT_POLICY_EVERY_K && (k < 0 || k > n))
        return _CKPT_ERR(lg, CKPT_ERR_BAD_K, "ckpt_plan_desc.k is %d; it must be 0 (best) or 1..%d", k, n);
    if (desc && (!(desc->bandwidth >= 0 && desc->bandwidth < DBL_MAX) ||
                 !(desc->bandwidth_h2d >= 0 && desc->bandwidth_h2d < DBL_MAX)))
        return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_plan_desc.bandwidth %g / bandwidth_h2d %g: must be finite and "
                         "not negative", desc->bandwidth, desc->bandwidth_h2d);
    if (desc && desc->threads < 0)
        return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_plan_desc.threads is %d; it must be 0 or more", desc->threads);
    if (!(c = (ckpt_cost *)_ckpt_calloc(al, (size_t)n, sizeof *c))) { r = CKPT_ERR_OUT_OF_HOST_MEMORY; goto fail; }
    _ckpt_costs_model(user_costs, n, c);
    memset(&off, 0, sizeof off);
    off.al = al; off.c = c; off.n = n;
    if (desc && policy == CKPT_POLICY_OFFLOAD) {
        /* each lane's pool, laid out in CKPT_ALIGN steps, gets an equal share (1: none, not "no cap") */
        off.host_budget = desc->host_budget / (uint64_t)lanes / CKPT_ALIGN * CKPT_ALIGN;
        if (desc->host_budget && !off.host_budget) off.host_budget = 1;
        off.link.d2h = desc->bandwidth;
        off.link.h2d = desc->bandwidth_h2d > 0 ? desc->bandwidth_h2d : desc->bandwidth;
        if (off.link.d2h > 0 && !(off.link.h2d > 0)) off.link.d2h = 0;
    }
    info->policy = policy;
    /* store-all first: the reference figures, and the default budget */
    if ((r = _ckpt_store_all_figures(al, c, n, &info->store_all_time, &info->store_all_peak)) != CKPT_OK) goto fail;
    /* budget 0: no limit. A recomputing policy may peak above store-all (a recomputation can
       overlap a live gradient), so "no limit" really is none; the info then names the peak. */
    info->budget = desc && desc->budget ? desc->budget : UINT64_MAX;
    pre = *info;
    r = _ckpt_plan_fit(al, c, n, policy, k, desc ? desc->max_units : 0, desc ? desc->threads : 0, info->budget,
                       off.link.d2h > 0 ? &off : NULL, &s, info);
    if (off.link.d2h > 0 && (r == CKPT_OK || r == CKPT_ERR_INFEASIBLE))
        r = _ckpt_fit_offload_vs_optimal(al, c, n, desc->max_units, desc->threads, &pre, r, &s, info);
    if (r == CKPT_ERR_INFEASIBLE) {
        _CKPT_ERR(lg, r, "budget %llu bytes is infeasible for policy %s; every budget from %llu bytes plans",
                  (unsigned long long)info->budget, ckpt_policy_name(policy), (unsigned long long)info->min_budget);
        goto fail;
    }
    if (r == CKPT_ERR_TOO_COMPLEX && n > CKPT_CUBIC_MAX_STAGES)
        _CKPT_ERR(lg, r, "policy %s plans at most %d stages (CKPT_CUBIC_MAX_STAGES); this chain has %d: use every-k or sqrt",
                  ckpt_policy_name(policy), CKPT_CUBIC_MAX_STAGES, n);
    else if (r == CKPT_ERR_TOO_COMPLEX)
        _CKPT_ERR(lg, r, "budget %llu bytes is at least the policy's smallest peak (min_budget %llu) but planning it "
                  "exceeded the memory limits; a larger budget plans faster", (unsigned long long)info->budget,
                  (unsigned long long)info->min_budget);
    if (r != CKPT_OK) goto fail;
    if (info->guarantee == CKPT_GUARANTEE_PERSISTENT && !(desc && desc->max_units) && !_ckpt_unit_exact(c, n, info->unit))
        _CKPT_WARN(lg, "policy %s: the exact program outgrew its memory or work limits, so sizes were rounded up to "
                   "units of %llu bytes; the plan is optimal only in that unit (no slower than greedy and every-k)",
                   ckpt_policy_name(policy), (unsigned long long)info->unit);
    CKPT_ASSERT(info->peak <= info->budget && info->arena <= info->budget);
    if (!(desc && desc->budget)) info->budget = info->peak > info->store_all_peak ? info->peak : info->store_all_peak;
    if (info->fit_budget > info->budget) info->fit_budget = info->budget;
    plan = (ckpt_plan *)_ckpt_calloc(al, 1, sizeof *plan);
    if (!plan) { r = CKPT_ERR_OUT_OF_HOST_MEMORY; goto fail; }
    plan->al = al ? *al : plan->al;
    info->n_ops = s.n_ops;
    info->n_recomputed = 0;
    {
        int i;
        for (i = 0; i < s.n_ops; i++) {
            info->n_recomputed += s.ops[i].kind == CKPT_OP_F;
            if (s.ops[i].kind == CKPT_OP_F && !s.ops[i].tape) s.ops[i].option = _ckpt_scratch_option(&c[s.ops[i].stage - 1]);
        }
        info->n_recomputed -= n;
    }
    plan->info = *info;
    plan->ops = s.ops;
    plan->link = off.link;
    plan->host_budget = desc && policy == CKPT_POLICY_OFFLOAD ? desc->host_budget : 0;
    plan->arena_target = pre.budget;
    plan->pool_target = _ckpt_pool_target(off.link.d2h > 0 ? &off : NULL);
    _ckpt_free(al, c);
    *out = plan;
    return CKPT_OK;
fail:
    if (r == CKPT_ERR_OUT_OF_HOST_MEMORY) _CKPT_ERR(lg, r, "out of host memory while planning");
    _ckpt_free(al, s.ops);
    _ckpt_free(al, c);
    return r;
}

CKPT_API ckpt_result ckpt_plan_create(const ckpt_cost *costs, int n, const ckpt_plan_desc *desc,
                                      ckpt_plan **out, ckpt_plan_info *out_info) {
    ckpt_plan_info info;
    const ckpt_logger *lg = desc ? &desc->logger : NULL;
    const ckpt_allocator *al = desc ? &desc->allocator : NULL;
    ckpt_result r;
    if (out_info) memset(out_info, 0, sizeof *out_info);
    if (!out) return _CKPT_ERR(lg, CKPT_ERR_NULL_ARGUMENT, "ckpt_plan_create: out is NULL");
    *out = NULL;
    if (al && (!al->alloc) != (!al->free))
        return _CKPT_ERR(lg, CKPT_ERR_NULL_ARGUMENT, "ckpt_plan_desc.allocator: alloc and free must be set together");
    r = _ckpt_plan_make(al, lg, costs, n, desc, 1, out, &info);
    if (out_info) *out_info = info;
    return r;
}

CKPT_API void ckpt_plan_destroy(ckpt_plan *plan) {
    ckpt_allocator al;
    if (!plan) return;
    al = plan->al;
    _ckpt_free(&al, plan->ops);
    _ckpt_free(&al, plan);
}
CKPT_API const ckpt_plan_info *ckpt_plan_get_info(const ckpt_plan *plan) { return plan ? &plan->info : NULL; }
CKPT_API const ckpt_op *ckpt_plan_ops(const ckpt_plan *plan, int *n_ops) {
    if (n_ops) *n_ops = plan ? plan->info.n_ops : 0;
    return plan ? plan->ops : NULL;
}

/* >>arena: offsets fixed at plan time ----------------------------------------------------------
   Offline placement of buffers with known lifetimes: take them in some order and put each at the
   lowest offset where it overlaps no already placed buffer that is live at the same time. The
   lower bound is the largest sum of (aligned) sizes live during one op; orders are tried (largest
   first, earliest first, longest-lived first, then seeded random perturbations of sizes) until
   one reaches the bound or the work allowance is spent, and the smallest arena is kept: the
   fixed orders' arena. If that is over both the bound and the target (the budget), a local
   search from the best order (1 to 3 buffers moved to random places in it, kept when no larger)
   runs until the arena reaches one of them or CKPT_LAYOUT_WORK is spent. Everything is seeded,
   so a schedule and a target always get the same layout: a plan keeps its targets, and
   installing it lays it out again. min_budget takes the fixed orders' arena, the same at every
   budget. */

typedef struct _ckpt_order_key { uint64_t k1, k2; int idx; } _ckpt_order_key;
static int _ckpt_key_cmp(const void *pa, const void *pb) {
    const _ckpt_order_key *x = (const _ckpt_order_key *)pa, *y = (const _ckpt_order_key *)pb;
    if (x->k1 != y->k1) return x->k1 > y->k1 ? -1 : 1;
    if (x->k2 != y->k2) return x->k2 > y->k2 ? -1 : 1;
    return x->idx < y->idx ? -1 : 1;
}
/* The placed buffers live at the same time as a new one are found either by a scan of all of
   them in offset order (scan = 1: lifetimes that overlap a lot, like store-all's) or through time
   buckets: bucket q lists the placed buffers live during some op of [q * bw, (q + 1) * bw)
   (short lifetimes, like the many buffers of a plan that recomputes much). */
typedef struct _ckpt_span { uint64_t o, e; } _ckpt_span;
typedef struct _ckpt_placer {
    int scan;
    int *by_off;                /* scan: the placed buffers by offset, kept sorted as they come */
    int bw, nq;
    int64_t *head;              /* per bucket: its list's start in items (a buffer is in up to 1,024) */
    int *fill, *items;          /* per bucket: its list's length; the lists */
    int *stamp;                 /* per buffer: the last buffer whose search saw it */
    _ckpt_span *cand;           /* one search's live buffers, by offset */
} _ckpt_placer;

/* Sorts spans by offset: a heapsort, since qsort's calls made most of the placement's time. */
static void _ckpt_span_sift(_ckpt_span *v, int root, int n) {
    _ckpt_span t = v[root];
    int child;
    while ((child = 2 * root + 1) < n) {
        if (child + 1 < n && v[child + 1].o > v[child].o) child++;
        if (v[child].o <= t.o) break;
        v[root] = v[child];
        root = child;
    }
    v[root] = t;
}
static void _ckpt_span_sort(_ckpt_span *v, int k) {
    int i;
    for (i = k / 2 - 1; i >= 0; i--) _ckpt_span_sift(v, i, k);
    for (i = k - 1; i > 0; i--) {
        _ckpt_span t = v[0];
        v[0] = v[i]; v[i] = t;
        _ckpt_span_sift(v, 0, i);
    }
}

static void _ckpt_placer_free(const ckpt_allocator *al, _ckpt_placer *P) {
    _ckpt_free(al, P->head); _ckpt_free(al, P->fill); _ckpt_free(al, P->items); _ckpt_free(al, P->stamp); _ckpt_free(al, P->cand);
    _ckpt_free(al, P->by_off);
    memset(P, 0, sizeof *P);
}

/* Buckets of at most 1,024, and room for every buffer of b with bytes in the buckets it spans;
   scan (mode 1), buckets (mode 0), or (mode -1) scan when buffers span more than 16 buckets on
   average. */
static ckpt_result _ckpt_placer_init(const ckpt_allocator *al, const _ckpt_buf *b, int n_bufs, int n_ops, int mode,
                                     _ckpt_placer *P) {
    int i, q;
    memset(P, 0, sizeof *P);
    P->nq = n_ops + 1 < 1024 ? n_ops + 1 : 1024;
    P->bw = (n_ops + P->nq) / P->nq;
    P->head = (int64_t *)_ckpt_calloc(al, (size_t)P->nq + 1, sizeof(int64_t));
    if (P->head) {
        for (i = 0; i < n_bufs; i++)
            for (q = b[i].start / P->bw; b[i].bytes && q <= b[i].end / P->bw; q++) P->head[q + 1]++;
        for (q = 0; q < P->nq; q++) P->head[q + 1] += P->head[q];
        P->scan = mode >= 0 ? mode : P->head[P->nq] > 16 * ((int64_t)n_bufs + 1);
        if (P->scan) P->by_off = (int *)_ckpt_malloc(al, ((size_t)n_bufs + 1) * sizeof(int));
        else {  /* what only the buckets use */
            P->fill = (int *)_ckpt_calloc(al, (size_t)P->nq + 1, sizeof(int));
            P->stamp = (int *)_ckpt_malloc(al, ((size_t)n_bufs + 1) * sizeof(int));
            P->cand = (_ckpt_span *)_ckpt_malloc(al, ((size_t)n_bufs + 1) * sizeof(_ckpt_span));
            P->items = (int *)_ckpt_malloc(al, ((size_t)P->head[P->nq] + 1) * sizeof(int));
        }
    }
    if (!P->head || (P->scan ? !P->by_off : !P->fill || !P->stamp || !P->cand || !P->items)) {
        _ckpt_placer_free(al, P);
        return CKPT_ERR_OUT_OF_HOST_MEMORY;
    }
    return CKPT_OK;
}

/* Places the buffers in order, each at the lowest offset where it overlaps no placed buffer live
   at the same time; returns the extent, or as soon as it passes limit, a value above limit (the
   order is then of no use, and offs incomplete). */
static uint64_t _ckpt_place(const _ckpt_buf *b, const _ckpt_order_key *order, int nb, int n_bufs, uint64_t *offs,
                            uint64_t limit, _ckpt_placer *P) {
    uint64_t extent = 0;
    int i, q;
    int64_t j;
    if (P->scan) {
        int m = 0;
        for (i = 0; i < nb; i++) {
            const _ckpt_buf *x = &b[order[i].idx];
            uint64_t sz = _ckpt_align_up(x->bytes), off = 0;
            int lo = 0, hi = m;
            for (j = 0; j < m; j++) {
                const _ckpt_buf *y = &b[P->by_off[j]];
                uint64_t yo = offs[P->by_off[j]], ye = yo + _ckpt_align_up(y->bytes);
                if (y->end < x->start || x->end < y->start) continue;
                if (yo >= off + sz) break;                  /* fits in the gap before y */
                if (ye > off) off = ye;
            }
            offs[order[i].idx] = off;
            if (off + sz > extent) extent = off + sz;
            if (extent > limit) return extent;
            while (lo < hi) {                               /* after every placed buffer at offset <= off */
                int mid = lo + (hi - lo) / 2;
                if (offs[P->by_off[mid]] <= off) lo = mid + 1; else hi = mid;
            }
            memmove(P->by_off + lo + 1, P->by_off + lo, (size_t)(m - lo) * sizeof *P->by_off);
            P->by_off[lo] = order[i].idx;
            m++;
        }
        return extent;
    }
    for (i = 0; i < n_bufs; i++) P->stamp[i] = -1;
    memset(P->fill, 0, (size_t)P->nq * sizeof *P->fill);
    for (i = 0; i < nb; i++) {
        int bi = order[i].idx, k = 0, q0 = b[bi].start / P->bw, q1 = b[bi].end / P->bw;
        const _ckpt_buf *x = &b[bi];
        uint64_t sz = _ckpt_align_up(x->bytes), off = 0;
        for (q = q0; q <= q1; q++) {
            for (j = P->head[q]; j < P->head[q] + P->fill[q]; j++) {
                int yi = P->items[j];
                const _ckpt_buf *y = &b[yi];
                if (P->stamp[yi] == i || y->end < x->start || x->end < y->start) continue;
                P->stamp[yi] = i;
                P->cand[k].o = offs[yi]; P->cand[k].e = offs[yi] + _ckpt_align_up(y->bytes); k++;
            }
        }
        _ckpt_span_sort(P->cand, k);
        for (j = 0; j < k && P->cand[j].o < off + sz; j++)   /* else it fits in the gap before */
            if (P->cand[j].e > off) off = P->cand[j].e;
        offs[bi] = off;
        if (off + sz > extent) extent = off + sz;
        if (extent > limit) return extent;
        for (q = q0; q <= q1; q++) P->items[P->head[q] + P->fill[q]++] = bi;
    }
    return extent;
}

/* The layout's seeded generator (xorshift64): the next state. */
static uint64_t _ckpt_layout_rng(uint64_t *x) {
    *x ^= *x << 13; *x ^= *x >> 7; *x ^= *x << 17;
    return *x;
}

static ckpt_result _ckpt_layout_bufs(const ckpt_allocator *al, _ckpt_buf *bufs, int n_bufs, int n_ops, uint64_t target,
                                     uint64_t *arena, uint64_t *fixed) {
    int nb = 0, i, pass;
    _ckpt_order_key *order = (_ckpt_order_key *)_ckpt_malloc(al, (size_t)(n_bufs + 1) * sizeof *order);
    _ckpt_order_key *bord = (_ckpt_order_key *)_ckpt_malloc(al, (size_t)(n_bufs + 1) * sizeof *bord);
    uint64_t *offs = (uint64_t *)_ckpt_calloc(al, (size_t)n_bufs + 1, sizeof(uint64_t));
    int64_t *live = (int64_t *)_ckpt_calloc(al, (size_t)n_ops + 2, sizeof(int64_t));
    uint64_t best = UINT64_MAX, bound, rng = 0x2545F4914F6CDD1Dull;
    double work = 0;
    _ckpt_placer P;
    ckpt_result r = _ckpt_placer_init(al, bufs, n_bufs, n_ops, -1, &P);
    if (r == CKPT_OK && (!order || !bord || !offs || !live)) r = CKPT_ERR_OUT_OF_HOST_MEMORY;
    if (r != CKPT_OK) goto done;
    for (i = 0; i < n_bufs; i++)
        if (bufs[i].bytes) order[nb++].idx = i;
    bound = _ckpt_peak_of(bufs, n_bufs, n_ops, 1, live);
    for (pass = 0; best > bound && pass < 256 && (pass < 3 || work < 4e6); pass++) {
        uint64_t ext;
        for (i = 0; i < nb; i++) {
            const _ckpt_buf *x = &bufs[order[i].idx];
            uint64_t sz = _ckpt_align_up(x->bytes), len = (uint64_t)(x->end - x->start);
            switch (pass) {
            case 0: order[i].k1 = sz; order[i].k2 = len; break;
            case 1: order[i].k1 = (uint64_t)(n_ops - x->start); order[i].k2 = sz; break;
            case 2: order[i].k1 = len; order[i].k2 = sz; break;
            default:   /* size scaled by a random factor in [0.5, 1.5) */
                order[i].k1 = sz / 2 + (uint64_t)((double)sz * (double)(_ckpt_layout_rng(&rng) >> 11) / 9007199254740992.0);
                order[i].k2 = len;
            }
        }
        qsort(order, (size_t)nb, sizeof *order, _ckpt_key_cmp);
        ext = _ckpt_place(bufs, order, nb, n_bufs, offs, best, &P);
        work += (double)nb * (double)nb;    /* (the cost of a pass before the buckets: the allowance's unit) */
        if (ext < best) {
            best = ext;
            memcpy(bord, order, (size_t)nb * sizeof *order);
            for (i = 0; i < nb; i++) bufs[order[i].idx].offset = offs[order[i].idx];
        }
    }
    if (fixed) *fixed = best == UINT64_MAX ? 0 : best;
    /* the local search (none for a target below the bound: no layout reaches it); a move takes
       the buffer at position a out and puts it back at position b */
    for (work = target && target < bound ? CKPT_LAYOUT_WORK : 0; best > bound && best > target && nb > 1 &&
         work < CKPT_LAYOUT_WORK; work += (double)nb) {
        uint64_t ext;
        int mv, moves;
        memcpy(order, bord, (size_t)nb * sizeof *order);
        for (moves = 1 + (int)(_ckpt_layout_rng(&rng) % 3), mv = 0; mv < moves; mv++) {
            int a, b;
            _ckpt_order_key x;
            _ckpt_layout_rng(&rng);
            a = (int)((rng >> 8) % (uint64_t)nb); b = (int)((rng >> 36) % (uint64_t)nb);
            x = order[a];
            if (a < b) memmove(order + a, order + a + 1, (size_t)(b - a) * sizeof *order);
            else memmove(order + b + 1, order + b, (size_t)(a - b) * sizeof *order);
            order[b] = x;
        }
        ext = _ckpt_place(bufs, order, nb, n_bufs, offs, best, &P);
        if (ext <= best) {      /* equal: a step across a plateau */
            best = ext;
            memcpy(bord, order, (size_t)nb * sizeof *order);
            for (i = 0; i < nb; i++) bufs[order[i].idx].offset = offs[order[i].idx];
        }
    }
    *arena = best == UINT64_MAX ? 0 : best;
done:
    _ckpt_free(al, order); _ckpt_free(al, bord); _ckpt_free(al, offs); _ckpt_free(al, live);
    _ckpt_placer_free(al, &P);
    return r;
}

/* >>chain (implementation): its state, and installing a plan ----------------------------------- */
enum { _CKPT_IDLE = 0, _CKPT_FORWARD_DONE = 1 };

struct ckpt_chain {
    ckpt_allocator al;
    ckpt_logger lg;
    ckpt_backend be;
    int n;
    ckpt_stage_desc *stages;
    char **names;
    ckpt_cost *costs;               /* as the cost model sees them (_ckpt_costs_model) */
    ckpt_rng_hooks hooks;
    ckpt_grads_ready_fn grads_ready;
    void *grads_ready_user;
    unsigned char *hook_state;      /* n + 1 states: one per stage, then a scratch */
    uint64_t seed, rng_next, rng_step_start;
    uint64_t *rng_base, *rng_count; /* per stage: range drawn in the first forward */
    /* the plan in use */
    ckpt_plan *plan;
    _ckpt_analysis an;
    void *arena;
    uint64_t arena_bytes;
    void *pool;                     /* pinned host pool of offloaded buffers (NULL: none) */
    uint64_t pool_lane_bytes;       /* pool bytes per lane */
    void **ev_done, **ev_pos;       /* per O/P op and lane: copy done; compute reached the op (NULL: no events) */
    /* microbatches: lane m has the arena bytes [m * lane_bytes, (m + 1) * lane_bytes) */
    int lanes;
    uint64_t lane_bytes;
    /* parameter streaming: n_slots parameter slots and n_slots gradient slots on the device
       (stream_lookahead + 1); events order them (async: the backend has copy streams).
       pslot_need: the last position in the sweep (op index) whose op needs the slot's stage;
       gslot_stage: the stage whose host_grads a gradient slot was loaded with for its next B op
       (-1: none); B ops take the gradient slots in turn from next_g. grads_early, grads_overwrite:
       ckpt_chain_desc.stream_grads_early and stream_grads_overwrite. */
    int streaming, async, n_slots, grads_early, grads_overwrite;
    size_t max_params, max_grads;
    void *pslot[CKPT_MAX_STREAM_LOOKAHEAD + 1], *gslot[CKPT_MAX_STREAM_LOOKAHEAD + 1];
    int pslot_stage[CKPT_MAX_STREAM_LOOKAHEAD + 1], pslot_need[CKPT_MAX_STREAM_LOOKAHEAD + 1];
    int pload_pending[CKPT_MAX_STREAM_LOOKAHEAD + 1], pfree_recorded[CKPT_MAX_STREAM_LOOKAHEAD + 1];
    int gslot_stage[CKPT_MAX_STREAM_LOOKAHEAD + 1], gdone_recorded[CKPT_MAX_STREAM_LOOKAHEAD + 1], next_g;
    void *ev_pfree[CKPT_MAX_STREAM_LOOKAHEAD + 1], *ev_pload[CKPT_MAX_STREAM_LOOKAHEAD + 1];
    void *ev_gload[CKPT_MAX_STREAM_LOOKAHEAD + 1], *ev_gdone[CKPT_MAX_STREAM_LOOKAHEAD + 1], *ev_bdone;
    /* the step */
    int state;
    const void **inputs;            /* per lane: X[0] of the step */
    ckpt_chain_stats stats;
    struct _ckpt_measure *meas;     /* set during a step of ckpt_chain_measure: callbacks are timed */
    /* >>graphs: graph mode (ckpt_chain_desc.graphs). gexec[0] is the forward sweep's graph,
       gexec[1] the backward's (NULL: none captured). gkeys holds, per graph, the pointers baked
       into it: per lane the input, then (backward) G[n] and G[0]. */
    int graphs;
    void *gexec[2];
    const void **gkeys;             /* 2 graphs x 3 x lanes */
    uint64_t grng0[2];              /* rng_step_start of the step that captured each graph */
    uint64_t gdraws;                /* Philox blocks the forward graph's step drew */
    uint64_t *grng_base, *grng_count;   /* rng_base, rng_count after the forward's capture */
    uint64_t gops[2], gcopies[2];   /* what a replay adds to stats.ops_run and stats.copies */
    int gcapturing, gcap_from, gcap_to; /* a capture of ops [from, to) is under way */
    const uint64_t *gdelta;         /* the backend's device counter offset (graph_begin) */
    /* >>recheck: ckpt_chain_desc.check_recompute. Per lane and stage (index lane * n + i), the
       checksums of X[i+1] and T[i+1] in this step's first forward, and the tape option T's sum
       was taken in (-1: none). NULL when off. */
    uint64_t *ck_x, *ck_t;
    int *ck_topt;
};

static const char *_ckpt_stage_name(const ckpt_chain *ch, int i) { return ch->names[i]; }

static ckpt_result _ckpt_check_chain_desc(const ckpt_chain_desc *d, const ckpt_logger *lg) {
    int i;
    if (!d->stages) return _CKPT_ERR(lg, CKPT_ERR_NULL_ARGUMENT, "ckpt_chain_desc.stages is NULL");
    if (d->n_stages < 1)
        return _CKPT_ERR(lg, CKPT_ERR_NO_STAGES, "ckpt_chain_desc.n_stages is %d; it must be at least 1", d->n_stages);
    if (d->n_stages > CKPT_MAX_STAGES)
        return _CKPT_ERR(lg, CKPT_ERR_TOO_MANY_STAGES, "ckpt_chain_desc.n_stages is %d; at most %d (CKPT_MAX_STAGES)",
                         d->n_stages, CKPT_MAX_STAGES);
    if (!d->backend) return _CKPT_ERR(lg, CKPT_ERR_NULL_ARGUMENT, "ckpt_chain_desc.backend is NULL");
    if (!d->backend->alloc || !d->backend->free)
        return _CKPT_ERR(lg, CKPT_ERR_BAD_BACKEND, "ckpt_chain_desc.backend: alloc and free are required");
    if ((!d->allocator.alloc) != (!d->allocator.free))
        return _CKPT_ERR(lg, CKPT_ERR_NULL_ARGUMENT, "ckpt_chain_desc.allocator: alloc and free must be set together");
    if ((d->rng_hooks.save || d->rng_hooks.restore || d->rng_hooks.state_bytes) &&
        (!d->rng_hooks.save || !d->rng_hooks.restore || !d->rng_hooks.state_bytes))
        return _CKPT_ERR(lg, CKPT_ERR_BAD_RNG_HOOKS,
                         "ckpt_chain_desc.rng_hooks: save, restore and state_bytes must be given together");
    for (i = 0; i < d->n_stages; i++)
        if (!d->stages[i].forward || !d->stages[i].backward)
            return _CKPT_ERR(lg, CKPT_ERR_MISSING_CALLBACK, "ckpt_chain_desc.stages[%d] (%s) has no %s callback", i,
                             d->stages[i].name ? d->stages[i].name : "unnamed",
                             d->stages[i].forward ? "backward" : "forward");
    if (d->microbatches < 0 || d->microbatches > 65536)
        return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_desc.microbatches is %d; 0 or 1 (one) up to 65536",
                         d->microbatches);
    if (d->graphs != 0 && d->graphs != 1)
        return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_desc.graphs is %d; 0 or 1", d->graphs);
    if (d->stream_lookahead < 0 || d->stream_lookahead > CKPT_MAX_STREAM_LOOKAHEAD)
        return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_desc.stream_lookahead is %d; 0 (one) up to %d",
                         d->stream_lookahead, CKPT_MAX_STREAM_LOOKAHEAD);
    if (d->stream_grads_early != 0 && d->stream_grads_early != 1)
        return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_desc.stream_grads_early is %d; 0 or 1", d->stream_grads_early);
    if (d->stream_grads_overwrite != 0 && d->stream_grads_overwrite != 1)
        return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_desc.stream_grads_overwrite is %d; 0 or 1",
                         d->stream_grads_overwrite);
    if (d->stream_grads_overwrite && !d->backend->memset_async)
        return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_desc.stream_grads_overwrite: the backend (%s) has no "
                         "memset_async to zero the gradient slots", d->backend->name ? d->backend->name : "unnamed");
    if (d->graphs) {
        const ckpt_backend *be = d->backend;
        if (!be->graph_begin || !be->graph_end || !be->graph_launch || !be->graph_destroy)
            return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_desc.graphs: the backend (%s) cannot capture graphs "
                             "(no graph_begin, graph_end, graph_launch and graph_destroy)", be->name ? be->name : "unnamed");
        if (d->rng_hooks.save)
            return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_desc.graphs: rng_hooks cannot be used with graphs (a "
                             "replay calls no callback); draw with ckpt_ctx_rng");
        if (d->grads_ready)
            return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_desc.graphs: a grads_ready hook cannot be used with "
                             "graphs (a replay calls no callback)");
        for (i = 0; i < d->n_stages; i++)
            if (d->stages[i].host_params)
                return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_desc.graphs: stage %d streams its parameters "
                                 "(host_params); parameter streaming cannot be used with graphs", i);
    }
    if (d->check_recompute != 0 && d->check_recompute != 1)     /* >>recheck */
        return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_desc.check_recompute is %d; 0 or 1", d->check_recompute);
    if (d->check_recompute && !d->backend->checksum)
        return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_desc.check_recompute: the backend (%s) has no checksum "
                         "entry", d->backend->name ? d->backend->name : "unnamed");
    if (d->check_recompute && d->graphs)
        return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_desc.check_recompute cannot be used with graphs (a "
                         "replayed sweep runs no callback, and a checksum would wait on the host inside the capture)");
    for (i = 0; i < d->n_stages; i++) {
        const ckpt_stage_desc *st = &d->stages[i];
        if (st->param_bytes && !st->host_params)
            return _CKPT_ERR(lg, CKPT_ERR_NULL_ARGUMENT, "ckpt_chain_desc.stages[%d].param_bytes is %llu but host_params "
                             "is NULL", i, (unsigned long long)st->param_bytes);
        if ((st->flags & CKPT_STAGE_NO_PARAMS) && st->host_params)
            return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_desc.stages[%d] has CKPT_STAGE_NO_PARAMS and streams "
                             "parameters (host_params)", i);
        if (st->host_grads && (!st->host_params || st->param_bytes % sizeof(float)))
            return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_desc.stages[%d].host_grads needs host_params and a "
                             "param_bytes that is a multiple of 4 (float gradients); it is %llu", i,
                             (unsigned long long)st->param_bytes);
    }
    /* Each B op loads its stage's host_grads before the last one's copy back may have landed. */
    for (i = 0; i < d->n_stages; i++) {
        const ckpt_stage_desc *a = &d->stages[i];
        int j;
        if (!a->host_grads || !a->param_bytes) continue;
        for (j = i + 1; j < d->n_stages; j++) {
            const ckpt_stage_desc *b = &d->stages[j];
            uintptr_t a0 = (uintptr_t)a->host_grads, b0 = (uintptr_t)b->host_grads;
            if (b->host_grads && b->param_bytes && a0 < b0 + b->param_bytes && b0 < a0 + a->param_bytes)
                return _CKPT_ERR(lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_desc.stages[%d].host_grads and stages[%d]."
                                 "host_grads overlap: each streamed stage needs gradients of its own (add tied "
                                 "weights' gradients together after ckpt_backward)", i, j);
        }
    }
    return CKPT_OK;
}

static void _ckpt_free_events(ckpt_chain *ch, void **ev, size_t n) {
    size_t k;
    if (!ev) return;
    for (k = 0; k < n; k++) if (ev[k]) ch->be.event_destroy(ch->be.state, ev[k]);
    _ckpt_free(&ch->al, ev);
}

/* Without the backend's synchronize: waits for the copies the slots may have in flight: the last
   copy back into host_grads of each gradient slot, and every load (the host-to-device stream runs
   them in order: an event recorded after them; a forward leaves the backward's first loads in
   flight). */
static ckpt_result _ckpt_slots_wait(ckpt_chain *ch) {
    ckpt_result r = CKPT_OK;
    int g;
    for (g = 0; g < ch->n_slots && r == CKPT_OK; g++)
        if (ch->async && ch->gdone_recorded[g]) r = ch->be.event_synchronize(ch->be.state, ch->ev_gdone[g]);
    if (r == CKPT_OK && ch->async && ch->ev_bdone) {     /* (a chain whose setup failed may have none) */
        r = ch->be.event_record(ch->be.state, ch->ev_bdone, ch->be.copy_stream(ch->be.state, CKPT_COPY_HOST_TO_DEVICE));
        if (r == CKPT_OK) r = ch->be.event_synchronize(ch->be.state, ch->ev_bdone);
    }
    return r;
}

/* Waits for the copies a forward or a failed step left in flight (offloads, prefetches,
   parameter loads, gradient loads and copies back) before their buffers are reused or freed. */
static void _ckpt_sync_copies(ckpt_chain *ch) {
    if ((ch->pool || ch->streaming) && ch->be.synchronize) (void)ch->be.synchronize(ch->be.state, NULL);
    else if (ch->streaming) (void)_ckpt_slots_wait(ch);
}

/* >>graphs: drops graph `which` (0 forward, 1 backward; -1 both), once the device is done with
   it; the next sweep captures again. */
static void _ckpt_graph_drop(ckpt_chain *ch, int which) {
    int g, lo = which < 0 ? 0 : which, hi = which < 0 ? 1 : which;
    if (!ch->gexec[lo] && !ch->gexec[hi]) return;
    if (ch->be.synchronize) (void)ch->be.synchronize(ch->be.state, NULL);
    for (g = lo; g <= hi; g++) {
        if (ch->gexec[g]) ch->be.graph_destroy(ch->be.state, ch->gexec[g]);
        ch->gexec[g] = NULL;
    }
}

static void _ckpt_chain_drop_plan(ckpt_chain *ch) {
    _ckpt_graph_drop(ch, -1);
    _ckpt_sync_copies(ch);
    if (ch->arena) ch->be.free(ch->be.state, ch->arena);
    ch->arena = NULL; ch->arena_bytes = 0;
    if (ch->pool) ch->be.free_pinned(ch->be.state, ch->pool);
    ch->pool = NULL;
    if (ch->plan) {
        _ckpt_free_events(ch, ch->ev_done, (size_t)ch->plan->info.n_ops * ch->lanes);
        _ckpt_free_events(ch, ch->ev_pos, (size_t)ch->plan->info.n_ops * ch->lanes);
    }
    ch->ev_done = ch->ev_pos = NULL;
    ckpt_plan_destroy(ch->plan);
    ch->plan = NULL;
    _ckpt_analysis_free(&ch->al, &ch->an);
    ch->lane_bytes = ch->pool_lane_bytes = 0;
    ch->stats.planned_peak = ch->stats.arena_bytes = ch->stats.arena_high_water = 0;
    ch->stats.planned_host_peak = ch->stats.pool_bytes = 0;
}

/* >>streaming: slots and events (allocated with the chain) */
static void _ckpt_event_drop(ckpt_chain *ch, void **ev) {
    if (*ev) ch->be.event_destroy(ch->be.state, *ev);
    *ev = NULL;
}

static void _ckpt_stream_free(ckpt_chain *ch) {
    int i;
    for (i = 0; i < ch->n_slots; i++) {
        if (ch->pslot[i]) ch->be.free(ch->be.state, ch->pslot[i]);
        if (ch->gslot[i]) ch->be.free(ch->be.state, ch->gslot[i]);
        ch->pslot[i] = ch->gslot[i] = NULL;
        _ckpt_event_drop(ch, &ch->ev_pfree[i]);
        _ckpt_event_drop(ch, &ch->ev_pload[i]);
        _ckpt_event_drop(ch, &ch->ev_gload[i]);
        _ckpt_event_drop(ch, &ch->ev_gdone[i]);
    }
    _ckpt_event_drop(ch, &ch->ev_bdone);
}

/* A forward (or an evaluation) starts with empty parameter and gradient slots: the host
   parameters (and host_grads) may have changed (an optimizer step) since the last step. The
   backward keeps the forward's slots. */
static void _ckpt_sweep_begin(ckpt_chain *ch) {
    int i;
    for (i = 0; i < ch->n_slots; i++) {
        ch->pslot_stage[i] = ch->pslot_need[i] = ch->gslot_stage[i] = -1;
        ch->pload_pending[i] = 0;
    }
}

static ckpt_result _ckpt_stream_setup(ckpt_chain *ch) {
    const ckpt_backend *be = &ch->be;
    ckpt_result r = CKPT_OK;
    int i;
    for (i = 0; i < ch->n; i++) {
        const ckpt_stage_desc *st = &ch->stages[i];
        if (!st->host_params || !st->param_bytes) continue;
        ch->streaming = 1;
        if (st->param_bytes > ch->max_params) ch->max_params = st->param_bytes;
        if (st->host_grads && st->param_bytes > ch->max_grads) ch->max_grads = st->param_bytes;
    }
    _ckpt_sweep_begin(ch);
    if (!ch->streaming) return CKPT_OK;
    if (!be->copy_async)
        return _CKPT_ERR(&ch->lg, CKPT_ERR_BAD_BACKEND, "parameter streaming needs the backend's copy_async (%s has "
                         "none)", be->name ? be->name : "unnamed");
    ch->async = be->copy_stream && be->copy_stream(be->state, CKPT_COPY_HOST_TO_DEVICE) &&
                be->copy_stream(be->state, CKPT_COPY_DEVICE_TO_HOST) && be->event_create && be->event_destroy &&
                be->event_record && be->stream_wait_event && be->event_synchronize;
    for (i = 0; i < ch->n_slots && r == CKPT_OK; i++) {
        r = be->alloc(be->state, ch->max_params, &ch->pslot[i]);
        if (r == CKPT_OK && ch->max_grads) r = be->alloc(be->state, ch->max_grads, &ch->gslot[i]);
        if (r == CKPT_OK && ch->async) r = be->event_create(be->state, &ch->ev_pfree[i]);
        if (r == CKPT_OK && ch->async) r = be->event_create(be->state, &ch->ev_pload[i]);
        if (r == CKPT_OK && ch->async && ch->max_grads) r = be->event_create(be->state, &ch->ev_gload[i]);
        if (r == CKPT_OK && ch->async) r = be->event_create(be->state, &ch->ev_gdone[i]);
    }
    if (r == CKPT_OK && ch->async) r = be->event_create(be->state, &ch->ev_bdone);
    ch->stats.slot_bytes = (uint64_t)ch->n_slots * (uint64_t)(ch->max_params + ch->max_grads);
    if (r != CKPT_OK) return _CKPT_ERR(&ch->lg, r, "parameter streaming: could not allocate the %llu bytes of slots",
                                       (unsigned long long)ch->stats.slot_bytes);
    return CKPT_OK;
}

/* >>lifecycle: ckpt_chain_create, _destroy, _plan, _plan_dry, _set_schedule, _get_stats -------- */
CKPT_API void ckpt_chain_destroy(ckpt_chain *ch) {
    ckpt_allocator al;
    int i;
    if (!ch) return;
    al = ch->al;
    _ckpt_chain_drop_plan(ch);
    if (ch->names)
        for (i = 0; i < ch->n; i++) _ckpt_free(&al, ch->names[i]);
    _ckpt_free(&al, ch->names); _ckpt_free(&al, ch->stages); _ckpt_free(&al, ch->costs);
    _ckpt_free(&al, ch->hook_state); _ckpt_free(&al, ch->rng_base); _ckpt_free(&al, ch->rng_count);
    _ckpt_stream_free(ch);
    _ckpt_free(&al, ch->inputs);
    _ckpt_free(&al, ch->gkeys); _ckpt_free(&al, ch->grng_base); _ckpt_free(&al, ch->grng_count);
    _ckpt_free(&al, ch->ck_x); _ckpt_free(&al, ch->ck_t); _ckpt_free(&al, ch->ck_topt);
    _ckpt_free(&al, ch);
}

CKPT_API ckpt_result ckpt_chain_create(const ckpt_chain_desc *desc, ckpt_chain **out) {
    const ckpt_logger *lg = desc ? &desc->logger : NULL;
    ckpt_chain *ch;
    ckpt_result r;
    int i, j;
    if (!out) return _CKPT_ERR(lg, CKPT_ERR_NULL_ARGUMENT, "ckpt_chain_create: out is NULL");
    *out = NULL;
    if (!desc) return CKPT_ERR_NULL_ARGUMENT;
    if ((r = _ckpt_check_chain_desc(desc, lg)) != CKPT_OK) return r;
    ch = (ckpt_chain *)_ckpt_calloc(&desc->allocator, 1, sizeof *ch);
    if (!ch) return _CKPT_ERR(lg, CKPT_ERR_OUT_OF_HOST_MEMORY, "ckpt_chain_create: out of host memory");
    ch->al = desc->allocator; ch->lg = desc->logger; ch->be = *desc->backend; ch->n = desc->n_stages;
    ch->hooks = desc->rng_hooks; ch->seed = desc->seed; ch->rng_next = desc->rng_offset;
    ch->grads_ready = desc->grads_ready; ch->grads_ready_user = desc->grads_ready_user;
    ch->stats.failed_stage = -1;
    ch->lanes = desc->microbatches > 0 ? desc->microbatches : 1;
    ch->n_slots = (desc->stream_lookahead > 0 ? desc->stream_lookahead : 1) + 1;
    ch->grads_early = desc->stream_grads_early;
    ch->grads_overwrite = desc->stream_grads_overwrite;
    ch->stages = (ckpt_stage_desc *)_ckpt_calloc(&ch->al, (size_t)ch->n, sizeof *ch->stages);
    ch->names = (char **)_ckpt_calloc(&ch->al, (size_t)ch->n, sizeof *ch->names);
    ch->costs = (ckpt_cost *)_ckpt_calloc(&ch->al, (size_t)ch->n, sizeof *ch->costs);
    ch->rng_base = (uint64_t *)_ckpt_calloc(&ch->al, (size_t)ch->n * (size_t)ch->lanes, sizeof(uint64_t));
    ch->rng_count = (uint64_t *)_ckpt_calloc(&ch->al, (size_t)ch->n * (size_t)ch->lanes, sizeof(uint64_t));
    ch->inputs = (const void **)_ckpt_calloc(&ch->al, (size_t)ch->lanes, sizeof(void *));
    ch->graphs = desc->graphs;
    if (ch->graphs) {
        ch->gkeys = (const void **)_ckpt_calloc(&ch->al, 6 * (size_t)ch->lanes, sizeof(void *));
        ch->grng_base = (uint64_t *)_ckpt_calloc(&ch->al, (size_t)ch->n * (size_t)ch->lanes, sizeof(uint64_t));
        ch->grng_count = (uint64_t *)_ckpt_calloc(&ch->al, (size_t)ch->n * (size_t)ch->lanes, sizeof(uint64_t));
        if (!ch->gkeys || !ch->grng_base || !ch->grng_count) goto oom;
    }
    if (desc->check_recompute) {
        size_t nl = (size_t)ch->n * (size_t)ch->lanes;
        ch->ck_x = (uint64_t *)_ckpt_calloc(&ch->al, nl, sizeof(uint64_t));
        ch->ck_t = (uint64_t *)_ckpt_calloc(&ch->al, nl, sizeof(uint64_t));
        ch->ck_topt = (int *)_ckpt_calloc(&ch->al, nl, sizeof(int));
        if (!ch->ck_x || !ch->ck_t || !ch->ck_topt) goto oom;
    }
    if (ch->hooks.state_bytes)
        ch->hook_state = (unsigned char *)_ckpt_calloc(&ch->al, (size_t)ch->n * (size_t)ch->lanes + 1,
                                                       ch->hooks.state_bytes);
    if (!ch->stages || !ch->names || !ch->costs || !ch->rng_base || !ch->rng_count || !ch->inputs ||
        (ch->hooks.state_bytes && !ch->hook_state))
        goto oom;
    memcpy(ch->stages, desc->stages, (size_t)ch->n * sizeof *ch->stages);
    for (i = 0; i < ch->n; i++) {
        const ckpt_stage_desc *s = &desc->stages[i];
        char buf[32];
        const char *nm = s->name;
        size_t len;
        if (!nm) { snprintf(buf, sizeof buf, "stage %d", i); nm = buf; }
        len = strlen(nm);
        if (!(ch->names[i] = (char *)_ckpt_malloc(&ch->al, len + 1))) goto oom;
        memcpy(ch->names[i], nm, len + 1);
        ch->stages[i].name = ch->names[i];
        ch->costs[i].f = s->fwd_time; ch->costs[i].b = s->bwd_time;
        ch->costs[i].a = s->out_bytes; ch->costs[i].t = s->tape_bytes;
        ch->costs[i].wf = s->fwd_workspace_bytes; ch->costs[i].wb = s->bwd_workspace_bytes;
        ch->costs[i].flags = s->flags & ~CKPT_STAGE_NO_PARAMS;
        ch->costs[i].n_options = s->n_tape_options;
        for (j = 0; j < s->n_tape_options && j < CKPT_MAX_TAPE_OPTIONS - 1; j++) {
            ch->costs[i].option_t[j] = s->tape_options[j].tape_bytes;
            ch->costs[i].option_extra[j] = s->tape_options[j].bwd_extra;
        }
    }
    if ((r = _ckpt_check_costs(ch->costs, ch->n, lg)) != CKPT_OK || (r = _ckpt_stream_setup(ch)) != CKPT_OK) {
        ckpt_chain_destroy(ch);
        return r;
    }
    _ckpt_costs_model(ch->costs, ch->n, ch->costs);     /* what the executor's analysis replays */
    *out = ch;
    return CKPT_OK;
oom:
    ckpt_chain_destroy(ch);
    return _CKPT_ERR(lg, CKPT_ERR_OUT_OF_HOST_MEMORY, "ckpt_chain_create: out of host memory");
}

/* Installing a plan takes two steps. Sizing (_ckpt_plan_size) analyses the schedule and lays out
   one lane's arena and pinned pool without allocating through the backend, so its errors leave
   the chain's plan in place; ckpt_chain_plan_dry stops there. _ckpt_chain_install then frees
   the old arena and pool and allocates the new ones (with keep_old, the other way round). */

/* The pinned pool a plan that offloads needs, per lane (0 when it offloads nothing). */
static ckpt_result _ckpt_pool_size(const ckpt_chain *ch, const ckpt_logger *lg, const ckpt_plan *plan,
                                   _ckpt_analysis *an, uint64_t *pool_bytes) {
    const ckpt_backend *be = &ch->be;
    ckpt_result r;
    *pool_bytes = 0;
    if (an->n_hbufs == 0) return CKPT_OK;
    if (!be->alloc_pinned || !be->free_pinned || !be->copy_async)
        return _CKPT_ERR(lg, CKPT_ERR_BAD_BACKEND, "the plan offloads, but the backend (%s) has no pinned memory or copies",
                         be->name ? be->name : "unnamed");
    r = _ckpt_layout_bufs(&ch->al, an->hbufs, an->n_hbufs, plan->info.n_ops, plan->pool_target, pool_bytes, NULL);
    if (r != CKPT_OK) return r;
    if (plan->host_budget && *pool_bytes > plan->host_budget)
        return _CKPT_ERR(lg, CKPT_ERR_INFEASIBLE, "the pinned pool needs %llu bytes once laid out, over the host budget "
                         "of %llu", (unsigned long long)*pool_bytes, (unsigned long long)plan->host_budget);
    *pool_bytes = _ckpt_align_up(*pool_bytes);
    if (plan->host_budget && *pool_bytes * (uint64_t)ch->lanes > plan->host_budget)
        return _CKPT_ERR(lg, CKPT_ERR_INFEASIBLE, "%d lanes of the %llu-byte pinned pool exceed the host budget of %llu",
                         ch->lanes, (unsigned long long)*pool_bytes, (unsigned long long)plan->host_budget);
    if (*pool_bytes > (uint64_t)SIZE_MAX / (uint64_t)ch->lanes) return CKPT_ERR_SIZE_OVERFLOW;
    return CKPT_OK;
}

/* Analyses plan's schedule into *an and sizes one lane's arena and pinned pool (multiples of
   CKPT_ALIGN). Allocates nothing through the backend; on failure *an is empty. */
static ckpt_result _ckpt_plan_size(const ckpt_chain *ch, const ckpt_logger *lg, const ckpt_plan *plan,
                                   _ckpt_analysis *an, uint64_t *arena_bytes, uint64_t *pool_bytes) {
    const char *why;
    int bad;
    ckpt_result r = _ckpt_analyze(ch->costs, ch->n, plan->ops, plan->info.n_ops, plan->link.d2h > 0 ? &plan->link : NULL,
                                  &ch->al, NULL, 1, an, &bad, &why, NULL);
    *arena_bytes = *pool_bytes = 0;
    if (r == CKPT_ERR_BAD_SCHEDULE) return _CKPT_ERR(lg, r, "schedule op %d: %s", bad, why);
    if (r == CKPT_OK)
        r = _ckpt_layout_bufs(&ch->al, an->bufs, an->n_bufs, plan->info.n_ops, plan->arena_target, arena_bytes, NULL);
    if (r != CKPT_OK) {
        _CKPT_ERR(lg, r, "out of host memory while laying out the arena");
    } else if (*arena_bytes > (uint64_t)SIZE_MAX) {
        r = _CKPT_ERR(lg, CKPT_ERR_SIZE_OVERFLOW, "the arena needs %llu bytes, more than SIZE_MAX",
                      (unsigned long long)*arena_bytes);
    } else if ((*arena_bytes = _ckpt_align_up(*arena_bytes)) > (uint64_t)SIZE_MAX / (uint64_t)ch->lanes) {
        r = _CKPT_ERR(lg, CKPT_ERR_SIZE_OVERFLOW, "%d lanes of a %llu-byte arena exceed SIZE_MAX", ch->lanes,
                      (unsigned long long)*arena_bytes);
    } else {
        r = _ckpt_pool_size(ch, lg, plan, an, pool_bytes);
    }
    if (r != CKPT_OK) _ckpt_analysis_free(&ch->al, an);
    return r;
}

/* Allocates the pinned pool of pool_bytes per lane and, when the backend has copy streams, the
   offload events. On failure the caller frees what was allocated. */
static ckpt_result _ckpt_offload_setup(ckpt_chain *ch, const ckpt_logger *lg, const ckpt_plan *plan,
                                       const _ckpt_analysis *an, uint64_t pool_bytes, void **pool, void ***ev_done,
                                       void ***ev_pos) {
    const ckpt_backend *be = &ch->be;
    int n_ops = plan->info.n_ops, k;
    ckpt_result r;
    *pool = NULL; *ev_done = *ev_pos = NULL;
    if (an->n_hbufs == 0) return CKPT_OK;
    if ((r = be->alloc_pinned(be->state, (size_t)(pool_bytes * (uint64_t)ch->lanes), pool)) != CKPT_OK) {
        *pool = NULL;
        return _CKPT_ERR(lg, r == CKPT_ERR_OUT_OF_DEVICE_MEMORY ? CKPT_ERR_OUT_OF_HOST_MEMORY : r,
                         "the backend (%s) could not allocate the %llu-byte pinned pool", be->name ? be->name : "unnamed",
                         (unsigned long long)pool_bytes);
    }
    if (!be->copy_stream || !be->copy_stream(be->state, CKPT_COPY_DEVICE_TO_HOST) ||
        !be->copy_stream(be->state, CKPT_COPY_HOST_TO_DEVICE) || !be->event_create || !be->event_destroy ||
        !be->event_record || !be->stream_wait_event)
        return CKPT_OK;     /* copies on the compute stream: ordered without events */
    *ev_done = (void **)_ckpt_calloc(&ch->al, (size_t)n_ops * (size_t)ch->lanes + 1, sizeof(void *));
    *ev_pos = (void **)_ckpt_calloc(&ch->al, (size_t)n_ops * (size_t)ch->lanes + 1, sizeof(void *));
    if (!*ev_done || !*ev_pos) return CKPT_ERR_OUT_OF_HOST_MEMORY;
    for (k = 0; k < n_ops; k++) {
        int m;
        if (plan->ops[k].kind != CKPT_OP_O && plan->ops[k].kind != CKPT_OP_P) continue;
        for (m = 0; m < ch->lanes; m++) {
            size_t e = (size_t)k * ch->lanes + m;
            if ((r = be->event_create(be->state, &(*ev_done)[e])) != CKPT_OK ||
                (r = be->event_create(be->state, &(*ev_pos)[e])) != CKPT_OK)
                return _CKPT_ERR(lg, r, "the backend could not create the offload events");
        }
    }
    return CKPT_OK;
}

/* Installs a sized plan, taking ownership of plan and *an. The old arena and pool are freed
   before the new ones are allocated, so that the two are never held at once; a failed
   allocation then leaves the chain without a plan. With keep_old they are freed after, and a
   failure leaves the old plan in place. */
static ckpt_result _ckpt_chain_install(ckpt_chain *ch, const ckpt_logger *lg, ckpt_plan *plan, _ckpt_analysis *an,
                                       uint64_t arena_bytes, uint64_t pool_bytes, int keep_old, ckpt_plan_info *info) {
    void *arena = NULL, *pool = NULL, **ev_done = NULL, **ev_pos = NULL;
    ckpt_result r;
    if (!keep_old) _ckpt_chain_drop_plan(ch);
    r = ch->be.alloc(ch->be.state, (size_t)(arena_bytes ? arena_bytes * (uint64_t)ch->lanes : 1), &arena);
    if (r != CKPT_OK) {
        _CKPT_ERR(lg, r, "the backend (%s) could not allocate the %llu-byte arena",
                  ch->be.name ? ch->be.name : "unnamed", (unsigned long long)arena_bytes);
        arena = NULL;
    } else {
        r = _ckpt_offload_setup(ch, lg, plan, an, pool_bytes, &pool, &ev_done, &ev_pos);
    }
    if (r != CKPT_OK) {
        if (arena) ch->be.free(ch->be.state, arena);
        if (pool) ch->be.free_pinned(ch->be.state, pool);
        _ckpt_free_events(ch, ev_done, (size_t)plan->info.n_ops * ch->lanes);
        _ckpt_free_events(ch, ev_pos, (size_t)plan->info.n_ops * ch->lanes);
        _ckpt_analysis_free(&ch->al, an);
        ckpt_plan_destroy(plan);
        return r;
    }
    if (keep_old) _ckpt_chain_drop_plan(ch);
    ch->plan = plan; ch->an = *an; ch->arena = arena; ch->arena_bytes = arena_bytes * (uint64_t)ch->lanes;
    ch->lane_bytes = arena_bytes;
    ch->pool = pool; ch->ev_done = ev_done; ch->ev_pos = ev_pos;
    ch->pool_lane_bytes = pool_bytes;       /* a multiple of CKPT_ALIGN (_ckpt_pool_size) */
    ch->state = _CKPT_IDLE;
    ch->stats.planned_peak = plan->info.peak;
    ch->stats.arena_bytes = ch->arena_bytes;
    ch->stats.arena_high_water = 0;
    ch->stats.planned_host_peak = an->host_peak;
    ch->stats.pool_bytes = pool ? ch->pool_lane_bytes * (uint64_t)ch->lanes : 0;
    if (info) *info = plan->info;
    return CKPT_OK;
}

/* ckpt_chain_plan and ckpt_chain_plan_dry up to the allocation: plans desc for the chain's costs
   and lanes and sizes the result (_ckpt_plan_size). On the planner's CKPT_ERR_INFEASIBLE, *info
   (if non-NULL) gets its figures. */
static ckpt_result _ckpt_chain_plan_sized(const ckpt_chain *ch, const ckpt_logger *lg, const ckpt_plan_desc *desc,
                                          const char *fn, ckpt_plan **plan, _ckpt_analysis *an,
                                          uint64_t *arena_bytes, uint64_t *pool_bytes, ckpt_plan_info *info) {
    ckpt_plan_info tmp;
    ckpt_result r;
    *plan = NULL;
    if (ch->state != _CKPT_IDLE)
        return _CKPT_ERR(lg, CKPT_ERR_OUT_OF_ORDER, "%s: a forward is pending; run backward first", fn);
    r = _ckpt_plan_make(&ch->al, lg, ch->costs, ch->n, desc, ch->lanes, plan, &tmp);
    if (r == CKPT_ERR_INFEASIBLE && info) *info = tmp;   /* what the caller needs to pick a budget */
    if (r != CKPT_OK) return r;
    if ((r = _ckpt_plan_size(ch, lg, *plan, an, arena_bytes, pool_bytes)) != CKPT_OK) {
        ckpt_plan_destroy(*plan);
        *plan = NULL;
    }
    return r;
}

CKPT_API ckpt_result ckpt_chain_plan(ckpt_chain *ch, const ckpt_plan_desc *desc, ckpt_plan_info *info) {
    ckpt_plan *plan;
    _ckpt_analysis an;
    uint64_t arena_bytes, pool_bytes;
    const ckpt_logger *lg;
    ckpt_result r;
    if (!ch) return CKPT_ERR_NULL_ARGUMENT;
    lg = desc && desc->logger.fn ? &desc->logger : &ch->lg;
    r = _ckpt_chain_plan_sized(ch, lg, desc, "ckpt_chain_plan", &plan, &an, &arena_bytes, &pool_bytes, info);
    if (r != CKPT_OK) return r;
    return _ckpt_chain_install(ch, lg, plan, &an, arena_bytes, pool_bytes, desc && desc->keep_old_on_failure,
                               info);  /* writes info only once installed */
}

CKPT_API ckpt_result ckpt_chain_plan_dry(const ckpt_chain *ch, const ckpt_plan_desc *desc, ckpt_plan_info *info) {
    ckpt_plan *plan;
    _ckpt_analysis an;
    uint64_t arena_bytes, pool_bytes;
    const ckpt_logger *lg;
    ckpt_result r;
    if (!ch) return CKPT_ERR_NULL_ARGUMENT;
    lg = desc && desc->logger.fn ? &desc->logger : &ch->lg;
    r = _ckpt_chain_plan_sized(ch, lg, desc, "ckpt_chain_plan_dry", &plan, &an, &arena_bytes, &pool_bytes, info);
    if (r != CKPT_OK) return r;
    if (info) *info = plan->info;
    _ckpt_analysis_free(&ch->al, &an);
    ckpt_plan_destroy(plan);
    return CKPT_OK;
}

CKPT_API ckpt_result ckpt_chain_set_schedule(ckpt_chain *ch, const ckpt_op *ops, int n_ops, ckpt_plan_info *info) {
    ckpt_plan *plan;
    _ckpt_analysis an;
    uint64_t arena_bytes, pool_bytes;
    ckpt_result r;
    double t; uint64_t p;
    int bad, i;
    if (!ch || (!ops && n_ops > 0)) return CKPT_ERR_NULL_ARGUMENT;
    if (n_ops < 0) return _CKPT_ERR(&ch->lg, CKPT_ERR_BAD_INDEX, "ckpt_chain_set_schedule: n_ops is negative");
    if (ch->state != _CKPT_IDLE)
        return _CKPT_ERR(&ch->lg, CKPT_ERR_OUT_OF_ORDER, "ckpt_chain_set_schedule: a forward is pending");
    {
        const char *why;
        r = _ckpt_analyze(ch->costs, ch->n, ops, n_ops, NULL, &ch->al, NULL, 0, &an, &bad, &why, NULL);
        if (r == CKPT_ERR_BAD_SCHEDULE)
            return _CKPT_ERR(&ch->lg, r, "ckpt_chain_set_schedule: op %d breaks the cost model: %s", bad, why);
        if (r == CKPT_ERR_BAD_ARGUMENT)
            return _CKPT_ERR(&ch->lg, r, "ckpt_chain_set_schedule: n_ops %d is over CKPT_MAX_OPS (%d)", n_ops, CKPT_MAX_OPS);
        if (r != CKPT_OK) return _CKPT_ERR(&ch->lg, r, "ckpt_chain_set_schedule: out of host memory");
        t = an.time; p = an.peak;     /* no buffers kept (want_bufs 0) */
    }
    plan = (ckpt_plan *)_ckpt_calloc(&ch->al, 1, sizeof *plan);
    if (plan) plan->ops = (ckpt_op *)_ckpt_malloc(&ch->al, (size_t)(n_ops + 1) * sizeof(ckpt_op));
    if (!plan || !plan->ops) {
        _ckpt_free(&ch->al, plan);
        return _CKPT_ERR(&ch->lg, CKPT_ERR_OUT_OF_HOST_MEMORY, "ckpt_chain_set_schedule: out of host memory");
    }
    plan->al = ch->al;
    memcpy(plan->ops, ops, (size_t)n_ops * sizeof(ckpt_op));
    for (i = 0; i < n_ops; i++)   /* what runs: F without tape in the scratch option */
        if (ops[i].kind == CKPT_OP_F && !ops[i].tape) plan->ops[i].option = _ckpt_scratch_option(&ch->costs[ops[i].stage - 1]);
    plan->info.policy = CKPT_POLICY_CUSTOM;
    plan->info.time = t; plan->info.peak = p;
    plan->info.compute_time = t;
    plan->info.n_ops = n_ops; plan->info.unit = 1;
    for (i = 0; i < n_ops; i++) plan->info.n_recomputed += ops[i].kind == CKPT_OP_F;
    plan->info.n_recomputed -= ch->n;
    if ((r = _ckpt_plan_size(ch, &ch->lg, plan, &an, &arena_bytes, &pool_bytes)) != CKPT_OK) {
        ckpt_plan_destroy(plan);
        return r;
    }
    /* the figures a planned schedule's info has; its budgets are the arena it needs */
    plan->info.arena = plan->info.budget = plan->info.fit_budget = plan->info.min_budget = arena_bytes;
    plan->info.host_peak = an.host_peak; plan->info.n_offloaded = an.n_offloads;
    if ((r = _ckpt_store_all_figures(&ch->al, ch->costs, ch->n, &plan->info.store_all_time, &plan->info.store_all_peak)) !=
        CKPT_OK) {
        _ckpt_analysis_free(&ch->al, &an);
        ckpt_plan_destroy(plan);
        return _CKPT_ERR(&ch->lg, r, "ckpt_chain_set_schedule: out of host memory");
    }
    return _ckpt_chain_install(ch, &ch->lg, plan, &an, arena_bytes, pool_bytes, 0, info);
}

CKPT_API const ckpt_plan *ckpt_chain_get_plan(const ckpt_chain *ch) { return ch ? ch->plan : NULL; }

CKPT_API ckpt_result ckpt_chain_get_stats(const ckpt_chain *ch, ckpt_chain_stats *out) {
    if (!ch || !out) return CKPT_ERR_NULL_ARGUMENT;
    *out = ch->stats;
    return CKPT_OK;
}

/* >>measure: ckpt_chain_measure and ckpt_chain_set_times ----------------------------------------
   While a step of ckpt_chain_measure runs, ch->meas is set and the executor calls
   _ckpt_measure_begin and _ckpt_measure_end around every forward and backward callback, nothing
   else: copies, waits for them and the library's bookkeeping fall outside what is timed.
   ckpt_chain_trace's step (>>trace) sets ch->meas too, with tr: then the same calls, and
   _ckpt_span_begin and _ckpt_trace_span around every copy and W op, record spans instead. */

/* The host clock in ms: monotonic where <time.h> declares CLOCK_MONOTONIC (POSIX), else C11's
   timespec_get, a wall clock (a clock step during a callback skews that sample). */
static double _ckpt_now_ms(void) {
    struct timespec ts;
#if defined(CLOCK_MONOTONIC)
    clock_gettime(CLOCK_MONOTONIC, &ts);
#else
    timespec_get(&ts, TIME_UTC);
#endif
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

typedef struct _ckpt_sample {
    int tag;                /* 2 x stage, + 1 for a backward */
    double ms;
} _ckpt_sample;

typedef struct _ckpt_measure {
    int events;             /* 1: events on the compute stream; 0: the host clock */
    size_t per_step;        /* callbacks a step runs: lanes x (F and B ops) */
    size_t n;               /* callbacks timed so far in this step */
    int step;
    double t0;              /* host clock: start of the running callback */
    _ckpt_sample *s;        /* steps x per_step */
    void **ev;              /* events: start and end of each callback of a step */
    ckpt_result err;        /* the first event error of the step */
    int op;                 /* the op running (_ckpt_run_ops) */
    /* >>trace: per_step spans at most, n so far; events when the backend has them all */
    ckpt_trace_event *tr;   /* NULL in ckpt_chain_measure */
    void *ev0;              /* events: recorded on the compute stream as the step starts */
    double h0;              /* host clock: the step's start */
} _ckpt_measure;

static int _ckpt_tracing(const ckpt_chain *ch) { return ch->meas && ch->meas->tr; }

/* Starts timing work about to be queued on `stream` (NULL: compute): an event recorded there, or
   the host clock. */
static void _ckpt_span_begin(ckpt_chain *ch, void *stream) {
    _ckpt_measure *me = ch->meas;
    CKPT_ASSERT(me->n < me->per_step);
    if (!me->events) me->t0 = _ckpt_now_ms();
    else if (me->err == CKPT_OK) me->err = ch->be.event_record(ch->be.state, me->ev[2 * me->n], stream);
}

/* >>trace: ends the span _ckpt_span_begin started, on the same stream, as a trace event (its
   lane follows from its kind); host-clock times are final here, event times once read. */
static void _ckpt_trace_span(ckpt_chain *ch, void *stream, ckpt_trace_kind kind, int stage, int tape, int option,
                             int microbatch, uint64_t bytes) {
    _ckpt_measure *me = ch->meas;
    ckpt_trace_event *e = &me->tr[me->n];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->lane = kind == CKPT_TRACE_O || kind == CKPT_TRACE_GRAD_STORE ? CKPT_TRACE_D2H
            : kind == CKPT_TRACE_P || kind == CKPT_TRACE_PARAM_LOAD || kind == CKPT_TRACE_GRAD_LOAD ? CKPT_TRACE_H2D
            : CKPT_TRACE_COMPUTE;
    e->op = me->op; e->stage = stage; e->tape = tape; e->option = option; e->microbatch = microbatch; e->bytes = bytes;
    if (!me->events) {
        e->start_ms = me->t0 - me->h0;
        e->end_ms = _ckpt_now_ms() - me->h0;
    } else if (me->err == CKPT_OK) {
        me->err = ch->be.event_record(ch->be.state, me->ev[2 * me->n + 1], stream);
    }
    me->n++;
}

static void _ckpt_measure_begin(ckpt_chain *ch) { _ckpt_span_begin(ch, NULL); }

/* After the callback of the running op for `lane`, in tape option `option`. */
static void _ckpt_measure_end(ckpt_chain *ch, int option, int lane) {
    _ckpt_measure *me = ch->meas;
    const ckpt_op *op = &ch->plan->ops[me->op];
    _ckpt_sample *x;
    if (me->tr) {
        _ckpt_trace_span(ch, NULL, op->kind == CKPT_OP_F ? CKPT_TRACE_F : CKPT_TRACE_B, op->stage - 1,
                         op->kind == CKPT_OP_F && op->tape, option, lane, 0);
        return;
    }
    x = &me->s[(size_t)me->step * me->per_step + me->n];
    x->tag = 2 * (op->stage - 1) + (op->kind == CKPT_OP_B);
    if (!me->events) {
        x->ms = _ckpt_now_ms() - me->t0;
        if (!(x->ms >= 0.0)) x->ms = 0.0;       /* the wall clock stepped back */
    } else if (me->err == CKPT_OK) {
        me->err = ch->be.event_record(ch->be.state, me->ev[2 * me->n + 1], NULL);
    }
    me->n++;
}

/* >>trace: after the step, every span's events (recorded on any stream) relative to ev0. */
static ckpt_result _ckpt_trace_read(ckpt_chain *ch, _ckpt_measure *me) {
    const ckpt_backend *be = &ch->be;
    ckpt_result r = me->err;
    size_t j;
    if (r == CKPT_OK && me->events && be->synchronize) r = be->synchronize(be->state, NULL);
    for (j = 0; me->events && j < me->n && r == CKPT_OK; j++) {
        float a = 0.0f, b = 0.0f;
        r = be->event_synchronize(be->state, me->ev[2 * j + 1]);
        if (r == CKPT_OK) r = be->event_elapsed_ms(be->state, me->ev0, me->ev[2 * j], &a);
        if (r == CKPT_OK) r = be->event_elapsed_ms(be->state, me->ev0, me->ev[2 * j + 1], &b);
        me->tr[j].start_ms = a;
        me->tr[j].end_ms = b;
    }
    return r == CKPT_OK ? r : _CKPT_ERR(&ch->lg, r, "ckpt_chain_trace: the backend's events failed");
}

/* After a step: the events' times into its samples. */
static ckpt_result _ckpt_measure_read(ckpt_chain *ch, _ckpt_measure *me) {
    _ckpt_sample *x = &me->s[(size_t)me->step * me->per_step];
    ckpt_result r = me->err;
    size_t j;
    if (r == CKPT_OK && me->events && me->n) r = ch->be.event_synchronize(ch->be.state, me->ev[2 * me->n - 1]);
    for (j = 0; me->events && j < me->n && r == CKPT_OK; j++) {
        float ms = 0.0f;
        r = ch->be.event_elapsed_ms(ch->be.state, me->ev[2 * j], me->ev[2 * j + 1], &ms);
        x[j].ms = ms >= 0.0f ? (double)ms : 0.0;
    }
    return r == CKPT_OK ? r : _CKPT_ERR(&ch->lg, r, "ckpt_chain_measure: the backend's events failed");
}

static int _ckpt_sample_cmp(const void *pa, const void *pb) {
    const _ckpt_sample *a = (const _ckpt_sample *)pa, *b = (const _ckpt_sample *)pb;
    if (a->tag != b->tag) return a->tag < b->tag ? -1 : 1;
    return (a->ms > b->ms) - (a->ms < b->ms);
}

/* Sorts the samples by stage, kind and time; each run of one tag gives a median. */
static void _ckpt_measure_medians(_ckpt_sample *s, size_t count, int n, ckpt_stage_time *out) {
    size_t lo = 0, hi;
    memset(out, 0, (size_t)n * sizeof *out);
    qsort(s, count, sizeof *s, _ckpt_sample_cmp);
    for (; lo < count; lo = hi) {
        size_t k;
        double med;
        for (hi = lo; hi < count && s[hi].tag == s[lo].tag; hi++) {}
        k = hi - lo;
        med = k % 2 ? s[lo + k / 2].ms : 0.5 * (s[lo + k / 2 - 1].ms + s[lo + k / 2].ms);
        if (s[lo].tag % 2) { out[s[lo].tag / 2].bwd_time = med; out[s[lo].tag / 2].bwd_count = (int)k; }
        else { out[s[lo].tag / 2].fwd_time = med; out[s[lo].tag / 2].fwd_count = (int)k; }
    }
}

static void _ckpt_measure_close(ckpt_chain *ch, _ckpt_measure *me) {
    _ckpt_free_events(ch, me->ev, 2 * me->per_step);
    if (me->ev0) ch->be.event_destroy(ch->be.state, me->ev0);
    _ckpt_free(&ch->al, me->s);
    _ckpt_free(&ch->al, me->tr);
    me->ev = NULL; me->s = NULL; me->tr = NULL; me->ev0 = NULL;
}

/* Samples for every callback of `steps` steps, and events when the backend computes on a stream
   of its own (a GPU): a host clock would time only the launches there. */
static ckpt_result _ckpt_measure_open(ckpt_chain *ch, _ckpt_measure *me, int steps) {
    const ckpt_backend *be = &ch->be;
    size_t k, ops = 0;
    ckpt_result r = CKPT_OK;
    memset(me, 0, sizeof *me);
    for (k = 0; k < (size_t)ch->plan->info.n_ops; k++)
        ops += ch->plan->ops[k].kind == CKPT_OP_F || ch->plan->ops[k].kind == CKPT_OP_B;
    me->per_step = ops * (size_t)ch->lanes;
    me->events = be->compute_stream && be->compute_stream(be->state) && be->event_create && be->event_destroy &&
                 be->event_record && be->event_synchronize && be->event_elapsed_ms;
    if (me->per_step > SIZE_MAX / 2 / sizeof(_ckpt_sample) / (size_t)steps)
        return _CKPT_ERR(&ch->lg, CKPT_ERR_OUT_OF_HOST_MEMORY, "ckpt_chain_measure: %d steps of %llu callbacks are too "
                         "many samples", steps, (unsigned long long)me->per_step);
    me->s = (_ckpt_sample *)_ckpt_calloc(&ch->al, me->per_step * (size_t)steps, sizeof *me->s);
    if (me->events) me->ev = (void **)_ckpt_calloc(&ch->al, 2 * me->per_step, sizeof(void *));
    if (!me->s || (me->events && !me->ev)) {
        _ckpt_measure_close(ch, me);
        return _CKPT_ERR(&ch->lg, CKPT_ERR_OUT_OF_HOST_MEMORY, "ckpt_chain_measure: out of host memory");
    }
    for (k = 0; me->events && k < 2 * me->per_step && r == CKPT_OK; k++) r = be->event_create(be->state, &me->ev[k]);
    if (r != CKPT_OK) {
        _ckpt_measure_close(ch, me);
        return _CKPT_ERR(&ch->lg, r, "ckpt_chain_measure: the backend could not create its %llu events",
                         (unsigned long long)(2 * me->per_step));
    }
    return CKPT_OK;
}

/* What ckpt_chain_measure and ckpt_chain_trace (fn) refuse before running anything. */
static ckpt_result _ckpt_measure_check(ckpt_chain *ch, const char *fn, const void *input, const void *grad_output) {
    if (!input || !grad_output)
        return _CKPT_ERR(&ch->lg, CKPT_ERR_NULL_ARGUMENT, "%s: %s is NULL", fn, input ? "grad_output (G[n])" : "input (X[0])");
    if (!ch->plan) return _CKPT_ERR(&ch->lg, CKPT_ERR_NO_PLAN, "%s: no plan; call ckpt_chain_plan first", fn);
    if (ch->state != _CKPT_IDLE)
        return _CKPT_ERR(&ch->lg, CKPT_ERR_OUT_OF_ORDER, "%s: a forward is pending; run its backward "
                         "(or ckpt_chain_reset_step) first", fn);
    return CKPT_OK;
}

/* Runs `steps` steps, every lane on the same X[0], G[n] and G[0]; timed through me unless NULL. */
static ckpt_result _ckpt_measure_run(ckpt_chain *ch, const void *input, const void *grad_output, void *grad_input,
                                     int steps, _ckpt_measure *me) {
    const void **ins;
    void **gins;
    ckpt_result r = CKPT_OK;
    int s, m;
    /* ins holds the inputs, then the output gradients */
    ins = (const void **)_ckpt_calloc(&ch->al, 2 * (size_t)ch->lanes, sizeof(void *));
    gins = (void **)_ckpt_calloc(&ch->al, (size_t)ch->lanes, sizeof(void *));
    if (!ins || !gins) r = _CKPT_ERR(&ch->lg, CKPT_ERR_OUT_OF_HOST_MEMORY, "ckpt_chain_measure: out of host memory");
    for (m = 0; r == CKPT_OK && m < ch->lanes; m++) {
        ins[m] = input; ins[ch->lanes + m] = grad_output; gins[m] = grad_input;
    }
    for (s = 0; s < steps && r == CKPT_OK; s++) {
        if (me) {
            me->step = s; me->n = 0; me->err = CKPT_OK;
            if (me->tr && me->events) me->err = ch->be.event_record(ch->be.state, me->ev0, NULL);
            me->h0 = _ckpt_now_ms();
            ch->meas = me;
        }
        r = ckpt_forward_microbatches(ch, ins, NULL);
        if (r == CKPT_OK) r = ckpt_backward_microbatches(ch, ins + ch->lanes, gins);
        ch->meas = NULL;
        if (r == CKPT_OK && me) r = me->tr ? _ckpt_trace_read(ch, me) : _ckpt_measure_read(ch, me);
    }
    _ckpt_free(&ch->al, ins);
    _ckpt_free(&ch->al, gins);
    return r;
}

CKPT_API ckpt_result ckpt_chain_measure(ckpt_chain *ch, const void *input, const void *grad_output, void *grad_input,
                                        int steps, ckpt_stage_time *times) {
    _ckpt_measure me;
    ckpt_result r;
    memset(&me, 0, sizeof me);
    if (!ch) return CKPT_ERR_NULL_ARGUMENT;
    if (steps < 1 && input && grad_output)
        return _CKPT_ERR(&ch->lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_measure: steps is %d; at least 1", steps);
    if ((r = _ckpt_measure_check(ch, "ckpt_chain_measure", input, grad_output)) != CKPT_OK) return r;
    if (times && (r = _ckpt_measure_open(ch, &me, steps)) != CKPT_OK) return r;
    r = _ckpt_measure_run(ch, input, grad_output, grad_input, steps, times ? &me : NULL);
    if (times && r == CKPT_OK) {
        int k;
        _ckpt_measure_medians(me.s, me.per_step * (size_t)steps, ch->n, times);
        for (k = 0; k < ch->plan->info.n_ops; k++)   /* each stage's one B */
            if (ch->plan->ops[k].kind == CKPT_OP_B) times[ch->plan->ops[k].stage - 1].bwd_option = ch->an.instr[k].opt;
    }
    _ckpt_measure_close(ch, &me);
    return r;
}

CKPT_API ckpt_result ckpt_chain_set_times(ckpt_chain *ch, const ckpt_stage_time *times) {
    ckpt_cost *c;
    ckpt_result r;
    int i;
    if (!ch) return CKPT_ERR_NULL_ARGUMENT;
    if (!times) return _CKPT_ERR(&ch->lg, CKPT_ERR_NULL_ARGUMENT, "ckpt_chain_set_times: times is NULL");
    for (i = 0; i < ch->n; i++)
        if (!(times[i].fwd_time >= 0.0) || !(times[i].bwd_time >= 0.0) || times[i].fwd_time > DBL_MAX ||
            times[i].bwd_time > DBL_MAX)
            return _CKPT_ERR(&ch->lg, CKPT_ERR_BAD_TIME, "ckpt_chain_set_times: stage %d (%s): fwd_time %g and bwd_time "
                             "%g must be finite and >= 0", i, _ckpt_stage_name(ch, i), times[i].fwd_time,
                             times[i].bwd_time);
    c = (ckpt_cost *)_ckpt_malloc(&ch->al, (size_t)ch->n * sizeof *c);
    if (!c) return _CKPT_ERR(&ch->lg, CKPT_ERR_OUT_OF_HOST_MEMORY, "ckpt_chain_set_times: out of host memory");
    memcpy(c, ch->costs, (size_t)ch->n * sizeof *c);
    for (i = 0; i < ch->n; i++) {
        int o = times[i].bwd_option, n_opt = c[i].n_options;
        if (o < 0 || o > n_opt) {
            _ckpt_free(&ch->al, c);
            return _CKPT_ERR(&ch->lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_set_times: stage %d (%s): bwd_option %d; the "
                             "stage has tape options 0..%d", i, _ckpt_stage_name(ch, i), o, n_opt);
        }
        /* the base backward: the measured one less what its option's tape left out */
        c[i].f = times[i].fwd_time;
        c[i].b = o && times[i].bwd_time > c[i].option_extra[o - 1] ? times[i].bwd_time - c[i].option_extra[o - 1]
               : o ? 0.0 : times[i].bwd_time;
    }
    r = _ckpt_check_costs(c, ch->n, &ch->lg);      /* the sum of the times, which names the stage too */
    if (r == CKPT_OK) {
        _ckpt_costs_model(c, ch->n, ch->costs);     /* all zero: 1 and 2, as at ckpt_chain_create */
        for (i = 0; i < ch->n; i++) {
            ch->stages[i].fwd_time = c[i].f;
            ch->stages[i].bwd_time = c[i].b;
        }
    }
    _ckpt_free(&ch->al, c);
    return r;
}

/* >>trace: ckpt_chain_trace, ckpt_trace_predict, ckpt_trace_json, ckpt_trace_free ---------------
   A traced step is a measuring step (>>measure) whose spans keep their start and end. */

/* An op's name, for profiler ranges and traces: "F3+ name", "F3+/1 name", "F3 name", "B3 name",
   "O X3", "P T3", "W T3"; streaming copies "load params 3 name", "load grads 3 name",
   "store grads 3 name". stage is 1-based, as in the cost model. */
static void _ckpt_op_label(char *label, size_t cap, ckpt_trace_kind kind, int stage, int tape, int option,
                           const char *name) {
    if (kind == CKPT_TRACE_O || kind == CKPT_TRACE_P || kind == CKPT_TRACE_W)
        snprintf(label, cap, "%c %c%d", kind == CKPT_TRACE_O ? 'O' : kind == CKPT_TRACE_P ? 'P' : 'W', tape ? 'T' : 'X', stage);
    else if (kind == CKPT_TRACE_PARAM_LOAD || kind == CKPT_TRACE_GRAD_LOAD || kind == CKPT_TRACE_GRAD_STORE)
        snprintf(label, cap, "%s %d %s", kind == CKPT_TRACE_PARAM_LOAD ? "load params" : kind == CKPT_TRACE_GRAD_LOAD
                 ? "load grads" : "store grads", stage, name);
    else if (kind == CKPT_TRACE_F && tape && option)      /* ckpt-plan's text form: F3+/1 */
        snprintf(label, cap, "F%d+/%d %s", stage, option, name);
    else
        snprintf(label, cap, "%c%d%s %s", kind == CKPT_TRACE_F ? 'F' : 'B', stage, kind == CKPT_TRACE_F && tape ? "+" : "", name);
}

CKPT_API void ckpt_trace_free(ckpt_trace *t) {
    if (!t) return;
    _ckpt_free(&t->allocator, t->events);
    _ckpt_free(&t->allocator, t->names);
    memset(t, 0, sizeof *t);
}

/* Copies n stage names (NULL: "stage <i>") into t->names: one block, the pointers then the text. */
static ckpt_result _ckpt_trace_names(ckpt_trace *t, int n, const char *const *names) {
    size_t bytes = (size_t)n * sizeof(char *), at;
    char num[32];
    int i;
    for (i = 0; i < n; i++) bytes += (names && names[i] ? strlen(names[i]) : (size_t)snprintf(num, sizeof num, "stage %d", i)) + 1;
    if (!(t->names = (char **)_ckpt_malloc(&t->allocator, bytes))) return CKPT_ERR_OUT_OF_HOST_MEMORY;
    at = (size_t)n * sizeof(char *);
    for (i = 0; i < n; i++) {
        t->names[i] = (char *)t->names + at;
        if (names && names[i]) memcpy(t->names[i], names[i], strlen(names[i]) + 1);
        else snprintf(t->names[i], sizeof num, "stage %d", i);
        at += strlen(t->names[i]) + 1;
    }
    t->n_stages = n;
    return CKPT_OK;
}

/* Spans for one step: per F or B op a callback per lane and, when streaming, up to 2 n_slots + 1
   copies (its own parameter and gradient loads and the prefetches, n_slots - 1 of each, and a
   store); per O or P op a copy per lane; per W one.
   Events (two per span and ev0) when the backend has every event entry. */
static ckpt_result _ckpt_trace_open(ckpt_chain *ch, _ckpt_measure *me) {
    const ckpt_backend *be = &ch->be;
    size_t k, cap = 0;
    ckpt_result r = CKPT_OK;
    memset(me, 0, sizeof *me);
    for (k = 0; k < (size_t)ch->plan->info.n_ops; k++) {
        ckpt_op_kind kind = ch->plan->ops[k].kind;
        cap += kind == CKPT_OP_W ? 1 : (size_t)ch->lanes + (kind <= CKPT_OP_B && ch->streaming ? 2 * (size_t)ch->n_slots + 1 : 0);
    }
    if (cap > INT_MAX)
        return _CKPT_ERR(&ch->lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_chain_trace: one step has %llu spans, more than a "
                         "ckpt_trace counts (INT_MAX): trace fewer lanes", (unsigned long long)cap);
    me->per_step = cap;
    me->events = be->event_create && be->event_destroy && be->event_record && be->event_synchronize && be->event_elapsed_ms;
    me->tr = (ckpt_trace_event *)_ckpt_calloc(&ch->al, cap + 1, sizeof *me->tr);
    if (me->events) me->ev = (void **)_ckpt_calloc(&ch->al, 2 * cap + 1, sizeof(void *));
    if (!me->tr || (me->events && !me->ev)) {
        _ckpt_measure_close(ch, me);
        return _CKPT_ERR(&ch->lg, CKPT_ERR_OUT_OF_HOST_MEMORY, "ckpt_chain_trace: out of host memory");
    }
    if (me->events) r = be->event_create(be->state, &me->ev0);
    for (k = 0; me->events && k < 2 * cap && r == CKPT_OK; k++) r = be->event_create(be->state, &me->ev[k]);
    if (r != CKPT_OK) {
        _ckpt_measure_close(ch, me);
        return _CKPT_ERR(&ch->lg, r, "ckpt_chain_trace: the backend could not create its %llu events",
                         (unsigned long long)(2 * cap + 1));
    }
    return CKPT_OK;
}

CKPT_API ckpt_result ckpt_chain_trace(ckpt_chain *ch, const void *input, const void *grad_output, void *grad_input,
                                      ckpt_trace *out) {
    _ckpt_measure me;
    ckpt_result r;
    if (out) memset(out, 0, sizeof *out);
    if (!ch) return CKPT_ERR_NULL_ARGUMENT;
    if (!out) return _CKPT_ERR(&ch->lg, CKPT_ERR_NULL_ARGUMENT, "ckpt_chain_trace: out is NULL");
    if ((r = _ckpt_measure_check(ch, "ckpt_chain_trace", input, grad_output)) != CKPT_OK) return r;
    if ((r = _ckpt_trace_open(ch, &me)) != CKPT_OK) return r;
    r = _ckpt_measure_run(ch, input, grad_output, grad_input, 1, &me);
    out->allocator = ch->al;
    if (r == CKPT_OK && (r = _ckpt_trace_names(out, ch->n, (const char *const *)ch->names)) != CKPT_OK)
        r = _CKPT_ERR(&ch->lg, r, "ckpt_chain_trace: out of host memory");
    if (r == CKPT_OK) {
        out->events = me.tr;
        out->n_events = (int)me.n;
        out->microbatches = ch->lanes;
        out->events_clock = me.events;
        me.tr = NULL;           /* the trace's now */
    } else {
        ckpt_trace_free(out);
    }
    _ckpt_measure_close(ch, &me);
    return r;
}

CKPT_API ckpt_result ckpt_trace_predict(const ckpt_cost *costs, int n, const ckpt_op *ops, int n_ops, double bandwidth_d2h,
                                        double bandwidth_h2d, double ms_per_unit, const char *const *names, ckpt_trace *out) {
    _ckpt_analysis an;
    _ckpt_link link;
    double *span;
    ckpt_result r;
    int k, have_an;
    if (!out) return CKPT_ERR_NULL_ARGUMENT;
    memset(out, 0, sizeof *out);
    if (!(ms_per_unit > 0 && ms_per_unit < DBL_MAX) || !(bandwidth_d2h >= 0 && bandwidth_d2h < DBL_MAX) ||
        !(bandwidth_h2d >= 0 && bandwidth_h2d < DBL_MAX))
        return CKPT_ERR_BAD_ARGUMENT;
    if (n_ops < 0) return CKPT_ERR_BAD_INDEX;
    if (!ops && n_ops > 0) return CKPT_ERR_NULL_ARGUMENT;
    if (n_ops > CKPT_MAX_OPS) return CKPT_ERR_BAD_ARGUMENT;     /* (before its spans are allocated) */
    link.d2h = bandwidth_d2h;
    link.h2d = bandwidth_h2d > 0 ? bandwidth_h2d : bandwidth_d2h;
    if (!(span = (double *)_ckpt_calloc(NULL, 2 * (size_t)n_ops + 1, sizeof *span))) return CKPT_ERR_OUT_OF_HOST_MEMORY;
    r = _ckpt_simulate(costs, n, ops, n_ops, bandwidth_d2h > 0 ? &link : NULL, 1, span, &an, NULL);
    have_an = r == CKPT_OK;
    if (r == CKPT_OK && !(out->events = (ckpt_trace_event *)_ckpt_calloc(NULL, (size_t)n_ops + 1, sizeof *out->events)))
        r = CKPT_ERR_OUT_OF_HOST_MEMORY;
    for (k = 0; r == CKPT_OK && k < n_ops; k++) {
        const ckpt_op *op = &ops[k];
        ckpt_trace_event *e = &out->events[k];
        e->kind = (ckpt_trace_kind)op->kind;
        e->lane = op->kind == CKPT_OP_O ? CKPT_TRACE_D2H : op->kind == CKPT_OP_P ? CKPT_TRACE_H2D : CKPT_TRACE_COMPUTE;
        e->op = k; e->stage = op->stage - 1;
        e->tape = op->kind == CKPT_OP_B ? 0 : op->tape;
        e->option = op->kind <= CKPT_OP_B ? an.instr[k].opt : 0;
        e->microbatch = op->kind == CKPT_OP_W ? -1 : 0;
        e->bytes = op->kind == CKPT_OP_O ? an.hbufs[an.instr[k].out].bytes : op->kind == CKPT_OP_P ? an.hbufs[an.instr[k].in].bytes : 0;
        e->start_ms = span[2 * k] * ms_per_unit;
        e->end_ms = span[2 * k + 1] * ms_per_unit;
        if (!(e->end_ms < DBL_MAX)) r = CKPT_ERR_BAD_ARGUMENT;     /* (start <= end) */
    }
    if (have_an) _ckpt_analysis_free(NULL, &an);
    if (r == CKPT_OK) {
        out->n_events = n_ops;
        out->microbatches = 1;
        out->predicted = 1;
        r = _ckpt_trace_names(out, n, names);
    }
    _ckpt_free(NULL, span);
    if (r != CKPT_OK) ckpt_trace_free(out);
    return r;
}

/* snprintf into a caller's buffer that counts what did not fit. */
typedef struct _ckpt_out { char *buf; size_t size, len; } _ckpt_out;

static void _ckpt_outf(_ckpt_out *o, const char *fmt, ...) {
    va_list ap;
    int k;
    va_start(ap, fmt);
    k = vsnprintf(o->len < o->size ? o->buf + o->len : NULL, o->len < o->size ? o->size - o->len : 0, fmt, ap);
    va_end(ap);
    if (k > 0) o->len += (size_t)k;
}

/* Text inside a JSON string: quotes, backslashes and control characters escaped. */
static void _ckpt_out_json_chars(_ckpt_out *o, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') _ckpt_outf(o, "\\%c", c);
        else if (c < 0x20) _ckpt_outf(o, "\\u%04x", c);
        else _ckpt_outf(o, "%c", c);
    }
}

/* ms (finite) as microseconds with three decimals, written digit by digit: "%.3f" would follow
   the caller's LC_NUMERIC (a decimal comma in some locales: not JSON). From 9e12 ms on, beyond a
   long long of ns, whole ms times 1e3 ("%.0f" prints no decimal point). */
static void _ckpt_out_us(_ckpt_out *o, double ms) {
    double ns = ms * 1e6;
    long long v;
    if (!(ns > -9e18 && ns < 9e18)) { _ckpt_outf(o, "%.0fe3", ms); return; }
    v = (long long)(ns < 0 ? ns - 0.5 : ns + 0.5);
    _ckpt_outf(o, "%s%lld.%03lld", v < 0 ? "-" : "", (v < 0 ? -v : v) / 1000, (v < 0 ? -v : v) % 1000);
}

CKPT_API ckpt_result ckpt_trace_json(const ckpt_trace *t, char *buf, size_t size, size_t *length) {
    static const char *const lanes[3] = { "compute", "host-to-device", "device-to-host" };
    static const char *const cats[8] = { "F", "B", "O", "P", "W", "param_load", "grad_load", "grad_store" };
    _ckpt_out o;
    int i, pid;
    if (!t || !length || (!buf && size)) return CKPT_ERR_NULL_ARGUMENT;
    for (i = 0; i < t->n_events; i++) {
        double a = t->events[i].start_ms, b = t->events[i].end_ms, d = b - a;
        if (!(a >= -DBL_MAX && a <= DBL_MAX && b >= -DBL_MAX && b <= DBL_MAX && d >= -DBL_MAX && d <= DBL_MAX))
            return CKPT_ERR_BAD_ARGUMENT;
    }
    o.buf = buf; o.size = size; o.len = 0;
    pid = t->predicted ? 2 : 1;
    _ckpt_outf(&o, "{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
               "\"args\":{\"name\":\"ckpt step (%s)\"}}", pid, t->predicted ? "predicted" : "measured");
    for (i = 0; i < 3; i++)
        _ckpt_outf(&o, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
                   pid, i, lanes[i]);
    for (i = 0; i < t->n_events; i++) {
        const ckpt_trace_event *e = &t->events[i];
        const char *name = e->stage >= 0 && e->stage < t->n_stages ? t->names[e->stage] : "?";
        char label[64];
        /* the label with an empty name ("F3+ ", "O X3"), then the stage name in full */
        _ckpt_op_label(label, sizeof label, e->kind, e->stage + 1, e->tape, e->option, "");
        _ckpt_outf(&o, ",\n{\"name\":\"");
        _ckpt_out_json_chars(&o, label);
        if (e->kind != CKPT_TRACE_O && e->kind != CKPT_TRACE_P && e->kind != CKPT_TRACE_W) _ckpt_out_json_chars(&o, name);
        _ckpt_outf(&o, "\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":",
                   (unsigned)e->kind < 8 ? cats[e->kind] : "?", pid, (int)e->lane);
        _ckpt_out_us(&o, e->start_ms);
        _ckpt_outf(&o, ",\"dur\":");
        _ckpt_out_us(&o, e->end_ms - e->start_ms);
        _ckpt_outf(&o, ",\"args\":{\"op\":%d,\"stage\":%d,\"stage_name\":\"", e->op, e->stage);
        _ckpt_out_json_chars(&o, name);
        _ckpt_outf(&o, "\",\"tape\":%d,\"option\":%d,\"microbatch\":%d,\"bytes\":%llu}}", e->tape, e->option,
                   e->microbatch, (unsigned long long)e->bytes);
    }
    _ckpt_outf(&o, "\n],\"displayTimeUnit\":\"ms\"}\n");
    if (size) buf[o.len < size ? o.len : size - 1] = '\0';
    *length = o.len;
    return CKPT_OK;
}

/* >>executor ------------------------------------------------------------------------------------ */
CKPT_API ckpt_result ckpt_ctx_rng(ckpt_ctx *ctx, uint64_t blocks, ckpt_philox *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!ctx || !out) return CKPT_ERR_NULL_ARGUMENT;
    if (ctx->_rng_error) return ctx->_rng_error;
    if (ctx->mode == CKPT_MODE_BACKWARD)
        return ctx->_rng_error = _CKPT_ERR(&ctx->chain->lg, CKPT_ERR_OUT_OF_ORDER,
                         "ckpt_ctx_rng: stage %d (%s) drew random numbers in backward; draw them in forward "
                         "and keep what backward needs on the tape", ctx->stage, _ckpt_stage_name(ctx->chain, ctx->stage));
    if (ctx->mode == CKPT_MODE_EVAL && blocks > ctx->_rng_limit - ctx->_rng_cursor)
        return ctx->_rng_error = _CKPT_ERR(&ctx->chain->lg, CKPT_ERR_OUT_OF_ORDER,
                         "ckpt_ctx_rng: stage %d (%s) drew random numbers in ckpt_forward_eval; skip dropout when "
                         "ctx->mode is CKPT_MODE_EVAL, or pass CKPT_EVAL_RNG", ctx->stage,
                         _ckpt_stage_name(ctx->chain, ctx->stage));
    if (ctx->mode == CKPT_MODE_RECOMPUTE && blocks > ctx->_rng_limit - ctx->_rng_cursor)
        return ctx->_rng_error = _CKPT_ERR(&ctx->chain->lg, CKPT_ERR_RNG_REPLAY,
                         "stage %d (%s): the recomputation draws more random numbers than the first forward did",
                         ctx->stage, _ckpt_stage_name(ctx->chain, ctx->stage));
    out->key = ctx->chain->seed;
    out->base = ctx->_rng_cursor;
    out->count = blocks;
    out->delta = ctx->chain->gcapturing ? ctx->chain->gdelta : NULL;
    ctx->_rng_cursor += blocks;
    return CKPT_OK;
}

static ckpt_result _ckpt_fail_stage(ckpt_chain *ch, int stage, const char *what, ckpt_result cb) {
    ch->stats.failed_stage = stage;
    ch->stats.failed_result = cb;
    return _CKPT_ERR(&ch->lg, CKPT_ERR_CALLBACK, "stage %d (%s): %s callback returned %s", stage,
                     _ckpt_stage_name(ch, stage), what, ckpt_result_string(cb));
}

/* >>recheck: after F(i+1) in lane `lane` wrote out (X[i+1]) and tape (T[i+1]). The first forward
   records their checksums (not X[n]'s: F(n) runs once); a recomputation compares X[i+1] always,
   and T[i+1] when it keeps the tape in the option the first forward's sum was taken in. */
static ckpt_result _ckpt_recheck(ckpt_chain *ch, const ckpt_op *op, const _ckpt_instr *in, int lane,
                                 const void *out, const void *tape) {
    int i = op->stage - 1, k;
    size_t ri = (size_t)lane * (size_t)ch->n + (size_t)i;
    const ckpt_stage_desc *st = &ch->stages[i];
    if (in->first) ch->ck_topt[ri] = -1;
    for (k = 0; k < 2; k++) {
        const void *p = k ? tape : out;
        size_t bytes = !k ? st->out_bytes : in->opt ? st->tape_options[in->opt - 1].tape_bytes : st->tape_bytes;
        uint64_t sum = 0, *rec = k ? &ch->ck_t[ri] : &ch->ck_x[ri];
        ckpt_result r;
        if (!p || !bytes || (!k && i == ch->n - 1)) continue;
        if (k && !in->first && (!op->tape || ch->ck_topt[ri] != in->opt)) continue;
        if ((r = ch->be.checksum(ch->be.state, p, bytes, &sum)) != CKPT_OK)
            return _CKPT_ERR(&ch->lg, r, "stage %d (%s): the backend's checksum of %c[%d] failed (check_recompute)", i,
                             _ckpt_stage_name(ch, i), k ? 'T' : 'X', op->stage);
        if (in->first) {
            *rec = sum;
            if (k) ch->ck_topt[ri] = in->opt;
            continue;
        }
        ch->stats.recompute_checks++;
        if (sum != *rec)
            return _CKPT_ERR(&ch->lg, CKPT_ERR_RECOMPUTE_MISMATCH, "stage %d (%s), microbatch %d: the recomputation "
                             "wrote %c[%d] with checksum 0x%016llx, the first forward 0x%016llx (does the forward "
                             "depend on state that changes between calls?)", i, _ckpt_stage_name(ch, i), lane,
                             k ? 'T' : 'X', op->stage, (unsigned long long)sum, (unsigned long long)*rec);
    }
    return CKPT_OK;
}

static void *_ckpt_buf_ptr(ckpt_chain *ch, int b, int lane) {
    const _ckpt_buf *x;
    if (b < 0) return NULL;
    x = &ch->an.bufs[b];
    if (x->bytes == 0) return NULL;
    if (x->offset + _ckpt_align_up(x->bytes) > ch->stats.arena_high_water)
        ch->stats.arena_high_water = x->offset + _ckpt_align_up(x->bytes);
    return (char *)ch->arena + (size_t)lane * ch->lane_bytes + x->offset;
}

static ckpt_result _ckpt_run_forward_op(ckpt_chain *ch, const ckpt_op *op, const _ckpt_instr *in, int lane,
                                        const void *params) {
    int i = op->stage - 1, ri = lane * ch->n + i;
    const ckpt_stage_desc *st = &ch->stages[i];
    size_t hb = ch->hooks.state_bytes;
    /* Without RNG hooks hook_state is NULL, and even a zero offset to it is undefined. */
    unsigned char *own = hb ? ch->hook_state + (size_t)ri * hb : NULL;
    unsigned char *cur = hb ? ch->hook_state + (size_t)ch->n * ch->lanes * hb : NULL;
    ckpt_ctx ctx;
    ckpt_fwd_args a;
    ckpt_result r;
    memset(&ctx, 0, sizeof ctx);
    ctx.chain = ch; ctx.stage = i; ctx.keep_tape = op->tape; ctx.user = st->user; ctx.backend = &ch->be;
    ctx.microbatch = lane; ctx.tape_option = in->opt;
    ctx.stream = ch->be.compute_stream ? ch->be.compute_stream(ch->be.state) : NULL;
    ctx.mode = in->first ? CKPT_MODE_FORWARD : CKPT_MODE_RECOMPUTE;
    if (in->first) {
        ctx._rng_cursor = ch->rng_next;
        if (hb) ch->hooks.save(own, ch->hooks.user);
    } else {
        ctx._rng_cursor = ch->rng_base[ri];
        ctx._rng_limit = ch->rng_base[ri] + ch->rng_count[ri];
        if (hb) { ch->hooks.save(cur, ch->hooks.user); ch->hooks.restore(own, ch->hooks.user); }
    }
    a.ctx = &ctx;
    a.in = i == 0 ? ch->inputs[lane] : _ckpt_buf_ptr(ch, in->in, lane);
    a.out = _ckpt_buf_ptr(ch, in->out, lane);
    a.tape = _ckpt_buf_ptr(ch, in->tape, lane);
    a.workspace = _ckpt_buf_ptr(ch, in->ws, lane);
    a.params = params;
    if (ch->meas) _ckpt_measure_begin(ch);
    r = st->forward(&a);
    if (ch->meas) _ckpt_measure_end(ch, in->opt, lane);
    if (!in->first && hb) ch->hooks.restore(cur, ch->hooks.user);
    if (ctx._rng_error) return ctx._rng_error;     /* a refused draw: reported by ckpt_ctx_rng */
    if (r != CKPT_OK) return _ckpt_fail_stage(ch, i, in->first ? "forward" : "forward (recomputation)", r);
    if (in->first) {
        ch->rng_base[ri] = ch->rng_next;
        ch->rng_count[ri] = ctx._rng_cursor - ch->rng_next;
        ch->rng_next = ctx._rng_cursor;
    } else if (ctx._rng_cursor != ctx._rng_limit) {
        return _CKPT_ERR(&ch->lg, CKPT_ERR_RNG_REPLAY,
                         "stage %d (%s): the recomputation drew %llu Philox blocks, the first forward %llu", i,
                         _ckpt_stage_name(ch, i), (unsigned long long)(ctx._rng_cursor - ch->rng_base[ri]),
                         (unsigned long long)ch->rng_count[ri]);
    }
    return ch->ck_x ? _ckpt_recheck(ch, op, in, lane, a.out, a.tape) : CKPT_OK;
}

static ckpt_result _ckpt_run_backward_op(ckpt_chain *ch, const ckpt_op *op, const _ckpt_instr *in, int lane,
                                         const void *grad_output, void *grad_input, const void *params, void *pgrads) {
    int i = op->stage - 1;
    const ckpt_stage_desc *st = &ch->stages[i];
    ckpt_ctx ctx;
    ckpt_bwd_args a;
    ckpt_result r;
    memset(&ctx, 0, sizeof ctx);
    ctx.chain = ch; ctx.stage = i; ctx.mode = CKPT_MODE_BACKWARD; ctx.user = st->user; ctx.backend = &ch->be;
    ctx.microbatch = lane; ctx.tape_option = in->opt;
    ctx.stream = ch->be.compute_stream ? ch->be.compute_stream(ch->be.state) : NULL;
    a.ctx = &ctx;
    a.in = i == 0 ? ch->inputs[lane] : _ckpt_buf_ptr(ch, in->in, lane);
    a.tape = _ckpt_buf_ptr(ch, in->tape, lane);
    a.grad_out = i == ch->n - 1 ? grad_output : _ckpt_buf_ptr(ch, in->gout, lane);
    a.grad_in = i == 0 ? grad_input : _ckpt_buf_ptr(ch, in->gin, lane);
    a.workspace = _ckpt_buf_ptr(ch, in->ws, lane);
    a.params = params;
    a.param_grads = pgrads;
    if (ch->meas) _ckpt_measure_begin(ch);
    r = st->backward(&a);
    if (ch->meas) _ckpt_measure_end(ch, in->opt, lane);
    if (ctx._rng_error) return ctx._rng_error;
    return r == CKPT_OK ? CKPT_OK : _ckpt_fail_stage(ch, i, "backward", r);
}

/* Names the operation for a profiler (_ckpt_op_label). */
static void _ckpt_range_push(ckpt_chain *ch, const ckpt_op *op) {
    char label[96];
    _ckpt_op_label(label, sizeof label, (ckpt_trace_kind)op->kind, op->stage, op->tape, op->option,
                   _ckpt_stage_name(ch, op->stage - 1));
    ch->be.range_push(ch->be.state, label);
}

/* Whether a stream may wait for op o's copy event now. Always, except during a graph capture
   when op o lies outside the ops being captured: its event was recorded by the other sweep (in
   another capture, or none), a dependency a capture may not cross (cudaErrorStreamCaptureIsolation).
   That sweep's copies are done by then anyway: a captured sweep ends by joining every copy stream
   into the compute stream (graph_end), and graphs run in compute-stream order. */
static int _ckpt_ev_ok(const ckpt_chain *ch, int o) {
    return !ch->gcapturing || (o >= ch->gcap_from && o < ch->gcap_to);
}

/* O and P: a copy between the arena and the pinned pool on the backend's copy stream for that
   direction. The copy stream first waits for compute to reach this op (ev_pos) and, for P, for
   its O's copy (the host data); ev_done marks the copy's end, which compute ops wait for. */
static ckpt_result _ckpt_run_copy_op(ckpt_chain *ch, int k, int lane) {
    const ckpt_op *op = &ch->plan->ops[k];
    const _ckpt_instr *in = &ch->an.instr[k];
    const ckpt_backend *be = &ch->be;
    int is_o = op->kind == CKPT_OP_O;
    size_t e = (size_t)k * ch->lanes + lane;
    ckpt_copy_kind dir = is_o ? CKPT_COPY_DEVICE_TO_HOST : CKPT_COPY_HOST_TO_DEVICE;
    const _ckpt_buf *hb = &ch->an.hbufs[is_o ? in->out : in->in];
    char *host = (char *)ch->pool + (size_t)lane * ch->pool_lane_bytes + hb->offset;
    void *dev = _ckpt_buf_ptr(ch, is_o ? in->in : in->out, lane);
    void *stream = ch->ev_done ? be->copy_stream(be->state, dir) : NULL;
    ckpt_result r = CKPT_OK;
    if (stream) {
        r = be->event_record(be->state, ch->ev_pos[e], NULL);
        if (r == CKPT_OK) r = be->stream_wait_event(be->state, stream, ch->ev_pos[e]);
        if (r == CKPT_OK && in->src_op >= 0 && _ckpt_ev_ok(ch, in->src_op))   /* P: its O's data; O: the P that brought it back */
            r = be->stream_wait_event(be->state, stream, ch->ev_done[(size_t)in->src_op * ch->lanes + lane]);
    }
    if (r == CKPT_OK && _ckpt_tracing(ch)) _ckpt_span_begin(ch, stream);
    if (r == CKPT_OK && hb->bytes)
        r = be->copy_async(be->state, is_o ? (void *)host : dev, is_o ? dev : (const void *)host, (size_t)hb->bytes, dir, stream);
    if (r == CKPT_OK && _ckpt_tracing(ch))
        _ckpt_trace_span(ch, stream, is_o ? CKPT_TRACE_O : CKPT_TRACE_P, op->stage - 1, op->tape, 0, lane, hb->bytes);
    if (r == CKPT_OK && stream) r = be->event_record(be->state, ch->ev_done[e], stream);
    if (r == CKPT_OK && stream && in->unread) r = be->stream_wait_event(be->state, NULL, ch->ev_done[e]);
    if (r != CKPT_OK)
        return _CKPT_ERR(&ch->lg, r, "op %d: the %s of %s[%d] (%llu bytes) failed", k, is_o ? "offload" : "prefetch",
                         op->tape ? "T" : "X", op->stage, (unsigned long long)hb->bytes);
    ch->stats.copies++;
    return CKPT_OK;
}

/* W: compute waits for its O's copy (every lane's), so that what runs after it, copies issued
   later included, may reuse the device buffer. */
static ckpt_result _ckpt_run_wait_op(ckpt_chain *ch, int k) {
    const ckpt_backend *be = &ch->be;
    ckpt_result r = CKPT_OK;
    int m, o = ch->an.instr[k].src_op;
    if (!ch->ev_done || !_ckpt_ev_ok(ch, o)) return CKPT_OK;    /* copies ran on the compute stream, in order */
    for (m = 0; m < ch->lanes && r == CKPT_OK; m++)
        r = be->stream_wait_event(be->state, NULL, ch->ev_done[(size_t)o * ch->lanes + m]);
    return r == CKPT_OK ? r : _CKPT_ERR(&ch->lg, r, "op %d: waiting for the offload of op %d failed", k, o);
}

/* Before a compute op: compute waits for the prefetches it reads and for the offload copies whose
   device buffers it may now overwrite. */
static ckpt_result _ckpt_wait_copies(ckpt_chain *ch, int k, int lane) {
    const _ckpt_instr *in = &ch->an.instr[k];
    const ckpt_backend *be = &ch->be;
    ckpt_result r = CKPT_OK;
    size_t L = (size_t)ch->lanes;
    int o;
    if (!ch->ev_done) return CKPT_OK;
    if (in->wait_p >= 0 && _ckpt_ev_ok(ch, in->wait_p))
        r = be->stream_wait_event(be->state, NULL, ch->ev_done[(size_t)in->wait_p * L + lane]);
    if (r == CKPT_OK && in->wait_p2 >= 0 && _ckpt_ev_ok(ch, in->wait_p2))
        r = be->stream_wait_event(be->state, NULL, ch->ev_done[(size_t)in->wait_p2 * L + lane]);
    for (o = in->wait_o; o >= 0 && r == CKPT_OK; o = ch->an.o_next[o])
        if (_ckpt_ev_ok(ch, o)) r = be->stream_wait_event(be->state, NULL, ch->ev_done[(size_t)o * L + lane]);
    return r == CKPT_OK ? r : _CKPT_ERR(&ch->lg, r, "op %d: waiting for a copy failed", k);
}

/* >>streaming (executor): parameters into device slots, gradients out through as many more */
/* The next F or B op of the step after op k; -1 if none. */
static int _ckpt_next_compute(const ckpt_chain *ch, int k) {
    for (k++; k < ch->plan->info.n_ops; k++)
        if (ch->plan->ops[k].kind == CKPT_OP_F || ch->plan->ops[k].kind == CKPT_OP_B) return k;
    return -1;
}

static ckpt_result _ckpt_param_load(ckpt_chain *ch, int slot, int stage) {
    const ckpt_backend *be = &ch->be;
    const ckpt_stage_desc *st = &ch->stages[stage];
    void *stream = ch->async ? be->copy_stream(be->state, CKPT_COPY_HOST_TO_DEVICE) : NULL;
    ckpt_result r = CKPT_OK;
    if (stream && ch->pfree_recorded[slot]) r = be->stream_wait_event(be->state, stream, ch->ev_pfree[slot]);
    if (r == CKPT_OK && _ckpt_tracing(ch)) _ckpt_span_begin(ch, stream);
    if (r == CKPT_OK) r = be->copy_async(be->state, ch->pslot[slot], st->host_params, st->param_bytes, CKPT_COPY_HOST_TO_DEVICE, stream);
    if (r == CKPT_OK && _ckpt_tracing(ch)) _ckpt_trace_span(ch, stream, CKPT_TRACE_PARAM_LOAD, stage, 0, 0, -1, st->param_bytes);
    if (r == CKPT_OK && stream) r = be->event_record(be->state, ch->ev_pload[slot], stream);
    if (r != CKPT_OK) {
        ch->pslot_stage[slot] = -1;
        return _CKPT_ERR(&ch->lg, r, "stage %d (%s): loading its %llu bytes of parameters failed", stage,
                         _ckpt_stage_name(ch, stage), (unsigned long long)st->param_bytes);
    }
    ch->pslot_stage[slot] = stage;
    ch->pload_pending[slot] = stream != NULL;
    ch->stats.param_loads++;
    return CKPT_OK;
}

/* The slot holding stage's parameters; -1 if none. */
static int _ckpt_pslot_of(const ckpt_chain *ch, int stage) {
    int i;
    for (i = 0; i < ch->n_slots; i++) if (ch->pslot_stage[i] == stage) return i;
    return -1;
}

/* Stage's parameters into a slot for the op at position pos of the sweep, while the op at
   position now runs (or is about to): when no slot has them, they load into the slot that no op
   from now on needs and that was needed longest ago (on a GPU the load waits for that slot's last
   user). *slot (may be NULL) gets the slot, -1 for a stage that streams nothing or when every
   slot is needed. */
static ckpt_result _ckpt_param_prefetch(ckpt_chain *ch, int stage, int pos, int now, int *slot) {
    ckpt_result r;
    int s = -1, i;
    if (slot) *slot = -1;
    if (!ch->stages[stage].host_params || !ch->stages[stage].param_bytes) return CKPT_OK;
    if ((s = _ckpt_pslot_of(ch, stage)) < 0) {
        for (i = 0; i < ch->n_slots; i++)
            if (ch->pslot_need[i] < now && (s < 0 || ch->pslot_need[i] < ch->pslot_need[s])) s = i;
        if (s < 0) return CKPT_OK;
        if ((r = _ckpt_param_load(ch, s, stage)) != CKPT_OK) return r;
    }
    if (ch->pslot_need[s] < pos) ch->pslot_need[s] = pos;
    if (slot) *slot = s;
    return CKPT_OK;
}

/* The slot holding the parameters of the op at position pos, loading them now if no prefetch
   did; compute then waits for the load. -1 for a stage that streams nothing. */
static ckpt_result _ckpt_param_acquire(ckpt_chain *ch, int stage, int pos, int *slot) {
    ckpt_result r = _ckpt_param_prefetch(ch, stage, pos, pos, slot);
    int s = *slot;
    /* the ops before pos are done with their slots, and the prefetches before it took at most
       n_slots - 1 slots for ops from pos on: one is free */
    CKPT_ASSERT(r != CKPT_OK || s >= 0 || !ch->stages[stage].host_params || !ch->stages[stage].param_bytes);
    if (r == CKPT_OK && s >= 0 && ch->pload_pending[s]) {
        if ((r = ch->be.stream_wait_event(ch->be.state, NULL, ch->ev_pload[s])) != CKPT_OK)
            return _CKPT_ERR(&ch->lg, r, "waiting for a parameter load failed");
        ch->pload_pending[s] = 0;
    }
    return r;
}

/* After the op: its slot is free for a load once compute is past it. */
static ckpt_result _ckpt_param_release(ckpt_chain *ch, int slot) {
    ckpt_result r;
    if (slot < 0 || !ch->async) return CKPT_OK;
    if ((r = ch->be.event_record(ch->be.state, ch->ev_pfree[slot], NULL)) != CKPT_OK)
        return _CKPT_ERR(&ch->lg, r, "recording a parameter-slot event failed");
    ch->pfree_recorded[slot] = 1;
    return CKPT_OK;
}

/* Loads stage's host_grads into gradient slot g for its B op, on the host-to-device stream
   after the slot's last copy back (which itself follows that slot's last B op). */
static ckpt_result _ckpt_grad_load(ckpt_chain *ch, int g, int stage) {
    const ckpt_backend *be = &ch->be;
    const ckpt_stage_desc *st = &ch->stages[stage];
    void *stream = ch->async ? be->copy_stream(be->state, CKPT_COPY_HOST_TO_DEVICE) : NULL;
    ckpt_result r = CKPT_OK;
    ch->gslot_stage[g] = -1;
    if (stream && ch->gdone_recorded[g]) r = be->stream_wait_event(be->state, stream, ch->ev_gdone[g]);
    if (r == CKPT_OK && _ckpt_tracing(ch)) _ckpt_span_begin(ch, stream);
    if (r == CKPT_OK) r = be->copy_async(be->state, ch->gslot[g], st->host_grads, st->param_bytes, CKPT_COPY_HOST_TO_DEVICE, stream);
    if (r == CKPT_OK && _ckpt_tracing(ch)) _ckpt_trace_span(ch, stream, CKPT_TRACE_GRAD_LOAD, stage, 0, 0, -1, st->param_bytes);
    if (r == CKPT_OK && stream) r = be->event_record(be->state, ch->ev_gload[g], stream);
    if (r != CKPT_OK) return _CKPT_ERR(&ch->lg, r, "stage %d (%s): loading its host_grads failed", stage, _ckpt_stage_name(ch, stage));
    ch->gslot_stage[g] = stage;
    ch->stats.grad_loads++;
    return CKPT_OK;
}

static int _ckpt_has_grads(const ckpt_chain *ch, int stage) {
    const ckpt_stage_desc *st = &ch->stages[stage];
    return st->host_grads && st->host_params && st->param_bytes;
}

/* Before op k runs (its slots taken): for each of the next n_slots - 1 F or B ops, in order,
   its stage's parameters start loading into a parameter slot (the forward's last ops load for
   the backward's first: a step's two sweeps use the same parameters), and for a B op with
   host_grads before `to` (the end of the running sweep: the host may change host_grads between
   the sweeps, unless grads_early; never with grads_overwrite) those into the gradient slot it
   will take, so that the loads overlap op k and the host-to-device stream runs them in the
   order they are needed. */
static ckpt_result _ckpt_stream_prefetch(ckpt_chain *ch, int k, int to) {
    ckpt_result r = CKPT_OK;
    int j = k, a, c = 0;
    for (a = 0; a < ch->n_slots - 1 && r == CKPT_OK && (j = _ckpt_next_compute(ch, j)) >= 0; a++) {
        int stage = ch->plan->ops[j].stage - 1, g = (ch->next_g + c) % ch->n_slots;
        r = _ckpt_param_prefetch(ch, stage, j, k, NULL);
        if (r == CKPT_OK && (j < to || ch->grads_early) && !ch->grads_overwrite && ch->plan->ops[j].kind == CKPT_OP_B &&
            _ckpt_has_grads(ch, stage)) {
            c++;
            if (ch->gslot_stage[g] != stage) r = _ckpt_grad_load(ch, g, stage);
        }
    }
    return r;
}

/* Before a B op of a stage with host_grads: the gradient slot it takes (*g), into which its
   host_grads start loading unless prefetched (never with grads_overwrite). */
static ckpt_result _ckpt_grad_begin(ckpt_chain *ch, int stage, int *g) {
    ckpt_result r;
    *g = -1;
    if (!_ckpt_has_grads(ch, stage)) return CKPT_OK;
    *g = ch->next_g;
    ch->next_g = (ch->next_g + 1) % ch->n_slots;
    if (ch->grads_overwrite) return CKPT_OK;
    if (ch->gslot_stage[*g] != stage && (r = _ckpt_grad_load(ch, *g, stage)) != CKPT_OK) return r;
    ch->gslot_stage[*g] = -1;
    return CKPT_OK;
}

/* Then compute waits for gradient slot g's load (-1: none), or with grads_overwrite for its last
   copy back, and zeroes it. This runs after the prefetch of the next ops' loads: where waiting
   and zeroing block the host thread (the CPU backend's copy engine), those loads are queued. */
static ckpt_result _ckpt_grad_wait(ckpt_chain *ch, int stage, int g) {
    ckpt_result r;
    if (g < 0) return CKPT_OK;
    if (!ch->grads_overwrite) {
        if (ch->async && (r = ch->be.stream_wait_event(ch->be.state, NULL, ch->ev_gload[g])) != CKPT_OK)
            return _CKPT_ERR(&ch->lg, r, "waiting for a gradient load failed");
        return CKPT_OK;
    }
    if (ch->async && ch->gdone_recorded[g] &&
        (r = ch->be.stream_wait_event(ch->be.state, NULL, ch->ev_gdone[g])) != CKPT_OK)
        return _CKPT_ERR(&ch->lg, r, "waiting for a gradient slot's copy back failed");
    if ((r = ch->be.memset_async(ch->be.state, ch->gslot[g], 0, ch->stages[stage].param_bytes, NULL)) != CKPT_OK)
        return _CKPT_ERR(&ch->lg, r, "stage %d (%s): zeroing its gradient slot failed", stage, _ckpt_stage_name(ch, stage));
    return CKPT_OK;
}

/* After the B op: the slot goes straight back into host_grads on the device-to-host stream. */
static ckpt_result _ckpt_grad_end(ckpt_chain *ch, int stage, int g) {
    const ckpt_backend *be = &ch->be;
    void *stream = ch->async ? be->copy_stream(be->state, CKPT_COPY_DEVICE_TO_HOST) : NULL;
    ckpt_result r = CKPT_OK;
    if (g < 0) return CKPT_OK;
    if (stream) {
        r = be->event_record(be->state, ch->ev_bdone, NULL);
        if (r == CKPT_OK) r = be->stream_wait_event(be->state, stream, ch->ev_bdone);
    }
    if (r == CKPT_OK && _ckpt_tracing(ch)) _ckpt_span_begin(ch, stream);
    if (r == CKPT_OK)
        r = be->copy_async(be->state, ch->stages[stage].host_grads, ch->gslot[g], ch->stages[stage].param_bytes,
                           CKPT_COPY_DEVICE_TO_HOST, stream);
    if (r == CKPT_OK && _ckpt_tracing(ch))
        _ckpt_trace_span(ch, stream, CKPT_TRACE_GRAD_STORE, stage, 0, 0, -1, ch->stages[stage].param_bytes);
    if (r == CKPT_OK && stream) r = be->event_record(be->state, ch->ev_gdone[g], stream);
    if (r != CKPT_OK) return _CKPT_ERR(&ch->lg, r, "stage %d (%s): copying its gradients back failed", stage, _ckpt_stage_name(ch, stage));
    ch->gdone_recorded[g] = stream != NULL;
    ch->stats.grad_stores++;
    return CKPT_OK;
}

/* >>grads_ready: after a stage's B op (its only one in a step) has run for every lane; for a
   streamed stage with host_grads (g >= 0), after its copy back into host_grads has landed. */
static ckpt_result _ckpt_grads_ready(ckpt_chain *ch, int stage, int g) {
    ckpt_grads_ready_args a;
    ckpt_result r;
    if (ch->stages[stage].flags & CKPT_STAGE_NO_PARAMS) return CKPT_OK;
    if (g >= 0 && ch->async && (r = ch->be.event_synchronize(ch->be.state, ch->ev_gdone[g])) != CKPT_OK)
        return _CKPT_ERR(&ch->lg, r, "stage %d (%s): waiting for its gradients' copy back failed", stage,
                         _ckpt_stage_name(ch, stage));
    a.chain = ch; a.stage = stage; a.in_host_grads = g >= 0; a.user = ch->grads_ready_user;
    a.stream = ch->be.compute_stream ? ch->be.compute_stream(ch->be.state) : NULL;
    r = ch->grads_ready(&a);
    if (r != CKPT_OK)
        return _CKPT_ERR(&ch->lg, CKPT_ERR_GRADS_READY, "stage %d (%s): the grads_ready hook returned %s", stage,
                         _ckpt_stage_name(ch, stage), ckpt_result_string(r));
    return CKPT_OK;
}

/* One F or B op for every lane, with its parameters and gradient slots around it. */
static ckpt_result _ckpt_run_compute_op(ckpt_chain *ch, int k, int to, const void *const *gouts, void *const *gins) {
    const ckpt_op *op = &ch->plan->ops[k];
    int stage = op->stage - 1, slot = -1, g = -1, m;
    ckpt_result r = CKPT_OK;
    const void *params = NULL;
    for (m = 0; m < ch->lanes && r == CKPT_OK; m++) r = _ckpt_wait_copies(ch, k, m);
    if (r == CKPT_OK && ch->streaming) {
        r = _ckpt_param_acquire(ch, stage, k, &slot);
        if (slot >= 0) params = ch->pslot[slot];
        if (r == CKPT_OK && op->kind == CKPT_OP_B) r = _ckpt_grad_begin(ch, stage, &g);
        if (r == CKPT_OK) r = _ckpt_stream_prefetch(ch, k, to);
        if (r == CKPT_OK) r = _ckpt_grad_wait(ch, stage, g);
    }
    for (m = 0; m < ch->lanes && r == CKPT_OK; m++)
        r = op->kind == CKPT_OP_F ? _ckpt_run_forward_op(ch, op, &ch->an.instr[k], m, params)
                                  : _ckpt_run_backward_op(ch, op, &ch->an.instr[k], m, gouts ? gouts[m] : NULL,
                                                          gins ? gins[m] : NULL, params, g >= 0 ? ch->gslot[g] : NULL);
    if (r == CKPT_OK && ch->streaming) {
        r = _ckpt_grad_end(ch, stage, g);
        if (r == CKPT_OK) r = _ckpt_param_release(ch, slot);
    }
    if (r == CKPT_OK && op->kind == CKPT_OP_B && ch->grads_ready) r = _ckpt_grads_ready(ch, stage, g);
    return r;
}

/* Runs ops [from, to). */
static ckpt_result _ckpt_run_ops(ckpt_chain *ch, int from, int to, const void *const *gouts, void *const *gins) {
    int k, m;
    for (k = from; k < to; k++) {
        const ckpt_op *op = &ch->plan->ops[k];
        ckpt_result r = CKPT_OK;
        if (ch->be.range_push) _ckpt_range_push(ch, op);
        if (ch->meas) ch->meas->op = k;
        if (op->kind == CKPT_OP_O || op->kind == CKPT_OP_P) {
            for (m = 0; m < ch->lanes && r == CKPT_OK; m++) r = _ckpt_run_copy_op(ch, k, m);
        } else if (op->kind == CKPT_OP_W) {
            if (_ckpt_tracing(ch)) _ckpt_span_begin(ch, NULL);
            r = _ckpt_run_wait_op(ch, k);
            if (r == CKPT_OK && _ckpt_tracing(ch)) _ckpt_trace_span(ch, NULL, CKPT_TRACE_W, op->stage - 1, op->tape, 0, -1, 0);
        } else
            r = _ckpt_run_compute_op(ch, k, to, gouts, gins);
        if (ch->be.range_pop) ch->be.range_pop(ch->be.state);
        if (r != CKPT_OK) return r;
        ch->stats.ops_run++;
    }
    return CKPT_OK;
}


/* >>graphs (executor): a sweep, ops [from, to), captured into graph g (0 forward, 1 backward)
   and launched, or replayed from the graph captured earlier. A graph bakes in every pointer its
   callbacks saw: the arena's (fixed by the plan; a new plan drops the graphs) and the caller's
   input, G[n] and G[0], which gkeys holds; it is captured again when one of those differs. Its
   Philox counters are the capturing step's; each launch sets the backend's device offset to
   this step's rng_step_start less the capturing step's, which kernels add (ckpt_philox_at). */
static ckpt_result _ckpt_graph_sweep(ckpt_chain *ch, int g, int from, int to, const void *const *gouts,
                                     void *const *gins) {
    const ckpt_backend *be = &ch->be;
    size_t L = (size_t)ch->lanes, k, nr = (size_t)ch->n * L;
    const void **keys = ch->gkeys + (size_t)g * 3 * L;
    uint64_t ops0 = ch->stats.ops_run, copies0 = ch->stats.copies;
    void *exec = NULL;
    ckpt_result r, r2;
    int same = ch->gexec[g] != NULL;
    for (k = 0; k < L && same; k++)
        same = keys[k] == ch->inputs[k] &&
               (g == 0 || (keys[L + k] == (const void *)gouts[k] && keys[2 * L + k] == (const void *)(gins ? gins[k] : NULL)));
    if (same) {
        uint64_t delta = ch->rng_step_start - ch->grng0[g];
        if ((r = be->graph_launch(be->state, ch->gexec[g], delta)) != CKPT_OK) {
            _ckpt_graph_drop(ch, -1);
            return _CKPT_ERR(&ch->lg, r, "launching the %s graph failed", g ? "backward" : "forward");
        }
        if (g == 0) {   /* what the forward's callbacks would have drawn, as they drew it at capture */
            for (k = 0; k < nr; k++) { ch->rng_base[k] = ch->grng_base[k] + delta; ch->rng_count[k] = ch->grng_count[k]; }
            ch->rng_next = ch->rng_step_start + ch->gdraws;
        }
        ch->stats.ops_run += ch->gops[g];
        ch->stats.copies += ch->gcopies[g];
        ch->stats.graph_replays++;
        return CKPT_OK;
    }
    _ckpt_graph_drop(ch, g);
    if ((r = be->graph_begin(be->state, &ch->gdelta)) != CKPT_OK)
        return _CKPT_ERR(&ch->lg, r, "the backend (%s) could not begin capturing the %s graph",
                         be->name ? be->name : "unnamed", g ? "backward" : "forward");
    ch->gcapturing = 1; ch->gcap_from = from; ch->gcap_to = to;
    r = _ckpt_run_ops(ch, from, to, gouts, gins);
    ch->gcapturing = 0;
    r2 = be->graph_end(be->state, r == CKPT_OK, &exec);
    if (r != CKPT_OK) return r;     /* the capture is discarded; the caller abandons the step */
    if (r2 != CKPT_OK)
        return _CKPT_ERR(&ch->lg, r2, "capturing the %s graph failed (a callback may have synchronized or "
                         "allocated during the capture)", g ? "backward" : "forward");
    ch->gexec[g] = exec;
    ch->grng0[g] = ch->rng_step_start;
    ch->gops[g] = ch->stats.ops_run - ops0;
    ch->gcopies[g] = ch->stats.copies - copies0;
    for (k = 0; k < L; k++) {
        keys[k] = ch->inputs[k];
        keys[L + k] = g ? (const void *)gouts[k] : NULL;
        keys[2 * L + k] = g && gins ? (const void *)gins[k] : NULL;
    }
    if (g == 0) {
        memcpy(ch->grng_base, ch->rng_base, nr * sizeof(uint64_t));
        memcpy(ch->grng_count, ch->rng_count, nr * sizeof(uint64_t));
        ch->gdraws = ch->rng_next - ch->rng_step_start;
    }
    ch->stats.graph_captures++;
    if ((r = be->graph_launch(be->state, exec, 0)) != CKPT_OK) {    /* a capture records; this runs it */
        _ckpt_graph_drop(ch, -1);
        return _CKPT_ERR(&ch->lg, r, "launching the %s graph just captured failed", g ? "backward" : "forward");
    }
    return CKPT_OK;
}

/* A sweep: in graph mode through _ckpt_graph_sweep, except in ckpt_chain_measure's timed steps
   (which time the callbacks: they must run). */
static ckpt_result _ckpt_sweep(ckpt_chain *ch, int g, int from, int to, const void *const *gouts, void *const *gins) {
    if (ch->graphs && !ch->meas) return _ckpt_graph_sweep(ch, g, from, to, gouts, gins);
    return _ckpt_run_ops(ch, from, to, gouts, gins);
}

/* >>step: ckpt_forward, ckpt_backward, their microbatch forms, ckpt_chain_reset_step ------------ */

/* No step in progress: the chain holds no inputs. */
static void _ckpt_step_clear(ckpt_chain *ch) {
    int m;
    ch->state = _CKPT_IDLE;
    for (m = 0; m < ch->lanes; m++) ch->inputs[m] = NULL;
}

/* After a failure: no copy is left in flight (into host_grads either). */
static void _ckpt_abandon_step(ckpt_chain *ch) {
    if (ch->graphs) _ckpt_graph_drop(ch, -1);     /* whatever failed, the next step captures afresh */
    _ckpt_sync_copies(ch);
    ch->rng_next = ch->rng_step_start;   /* a failed step consumes no random numbers */
    _ckpt_step_clear(ch);
}

CKPT_API ckpt_result ckpt_forward_microbatches(ckpt_chain *ch, const void *const *inputs, const void **outputs) {
    ckpt_result r;
    int m;
    if (!ch) return CKPT_ERR_NULL_ARGUMENT;
    if (!inputs) return _CKPT_ERR(&ch->lg, CKPT_ERR_NULL_ARGUMENT, "ckpt_forward_microbatches: inputs is NULL");
    for (m = 0; m < ch->lanes; m++)
        if (!inputs[m])
            return _CKPT_ERR(&ch->lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_forward: the input (X[0]) of microbatch %d is NULL; "
                             "stage 0 (%s) would read it", m, _ckpt_stage_name(ch, 0));
    if (!ch->plan) return _CKPT_ERR(&ch->lg, CKPT_ERR_NO_PLAN, "ckpt_forward: no plan; call ckpt_chain_plan first");
    if (ch->state != _CKPT_IDLE)
        return _CKPT_ERR(&ch->lg, CKPT_ERR_OUT_OF_ORDER, "ckpt_forward: the previous forward has not been back-propagated "
                         "(call ckpt_backward, or ckpt_chain_reset_step to abandon it)");
    ch->rng_step_start = ch->rng_next;
    for (m = 0; m < ch->lanes; m++) ch->inputs[m] = inputs[m];
    _ckpt_sweep_begin(ch);
    r = _ckpt_sweep(ch, 0, 0, ch->an.fn_op + 1, NULL, NULL);
    if (r != CKPT_OK) { _ckpt_abandon_step(ch); return r; }
    ch->state = _CKPT_FORWARD_DONE;
    if (outputs)
        for (m = 0; m < ch->lanes; m++) outputs[m] = _ckpt_buf_ptr(ch, ch->an.instr[ch->an.fn_op].out, m);
    return CKPT_OK;
}

CKPT_API ckpt_result ckpt_backward_microbatches(ckpt_chain *ch, const void *const *grad_outputs, void *const *grad_inputs) {
    ckpt_result r;
    int m;
    if (!ch) return CKPT_ERR_NULL_ARGUMENT;
    if (!grad_outputs) return _CKPT_ERR(&ch->lg, CKPT_ERR_NULL_ARGUMENT, "ckpt_backward_microbatches: grad_outputs is NULL");
    for (m = 0; m < ch->lanes; m++)
        if (!grad_outputs[m])
            return _CKPT_ERR(&ch->lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_backward: the output gradient (G[n]) of microbatch %d "
                             "is NULL; stage %d (%s) would read it", m, ch->n - 1, _ckpt_stage_name(ch, ch->n - 1));
    if (!ch->plan) return _CKPT_ERR(&ch->lg, CKPT_ERR_NO_PLAN, "ckpt_backward: no plan; call ckpt_chain_plan first");
    if (ch->state != _CKPT_FORWARD_DONE)
        return _CKPT_ERR(&ch->lg, CKPT_ERR_OUT_OF_ORDER, "ckpt_backward: no forward to back-propagate (call ckpt_forward first)");
    r = _ckpt_sweep(ch, 1, ch->an.fn_op + 1, ch->plan->info.n_ops, grad_outputs, grad_inputs);
    if (r != CKPT_OK) { _ckpt_abandon_step(ch); return r; }
    if (ch->be.synchronize ? (r = ch->be.synchronize(ch->be.state, NULL)) != CKPT_OK
                           : ch->streaming && (r = _ckpt_slots_wait(ch)) != CKPT_OK) {
        _ckpt_abandon_step(ch);
        return _CKPT_ERR(&ch->lg, r, "ckpt_backward: the backend failed to synchronize");
    }
    _ckpt_step_clear(ch);
    ch->stats.steps++;
    return CKPT_OK;
}

CKPT_API ckpt_result ckpt_forward(ckpt_chain *ch, const void *input, const void **output) {
    if (ch && ch->lanes > 1)
        return _CKPT_ERR(&ch->lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_forward: the chain has %d microbatches; use "
                         "ckpt_forward_microbatches", ch->lanes);
    return ckpt_forward_microbatches(ch, &input, output);
}

CKPT_API ckpt_result ckpt_backward(ckpt_chain *ch, const void *grad_output, void *grad_input) {
    if (ch && ch->lanes > 1)
        return _CKPT_ERR(&ch->lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_backward: the chain has %d microbatches; use "
                         "ckpt_backward_microbatches", ch->lanes);
    return ckpt_backward_microbatches(ch, &grad_output, &grad_input);
}

CKPT_API void ckpt_chain_reset_step(ckpt_chain *ch) {
    if (ch && ch->state == _CKPT_FORWARD_DONE) {
        _ckpt_sync_copies(ch);      /* the forward's copies must not land in the next step's buffers */
        _ckpt_step_clear(ch);
    }
}

/* >>eval: ckpt_forward_eval. F(1..n) in lane 0 of the arena, no tapes kept: X[i] at the bottom
   of the lane for odd i and at the top for even i, the scratch tape and the workspace between.
   The lane holds the aligned X[i-1], X[i], T[i] and workspace of every F(i) at once (they are live
   together at the first F(i) of any schedule), so they fit. */
static ckpt_result _ckpt_eval_stage(ckpt_chain *ch, int i, const void *in, void *out, void *tape, void *ws,
                                    uint64_t *cursor, unsigned flags) {
    const ckpt_stage_desc *st = &ch->stages[i];
    ckpt_ctx ctx;
    ckpt_fwd_args a;
    ckpt_result r;
    int slot = -1, j;
    if (ch->streaming && (r = _ckpt_param_acquire(ch, i, i, &slot)) != CKPT_OK) return r;
    for (j = i + 1; ch->streaming && j < ch->n && j < i + ch->n_slots; j++)
        if ((r = _ckpt_param_prefetch(ch, j, j, i, NULL)) != CKPT_OK) return r;
    memset(&ctx, 0, sizeof ctx);
    ctx.chain = ch; ctx.stage = i; ctx.mode = CKPT_MODE_EVAL; ctx.keep_tape = 0; ctx.user = st->user;
    ctx.backend = &ch->be; ctx.tape_option = _ckpt_scratch_option(&ch->costs[i]);
    ctx.stream = ch->be.compute_stream ? ch->be.compute_stream(ch->be.state) : NULL;
    ctx._rng_cursor = *cursor;
    ctx._rng_limit = (flags & CKPT_EVAL_RNG) ? UINT64_MAX : *cursor;
    a.ctx = &ctx; a.in = in; a.out = out; a.tape = tape; a.workspace = ws;
    a.params = slot >= 0 ? ch->pslot[slot] : NULL;
    r = st->forward(&a);
    if (ctx._rng_error) return ctx._rng_error;
    if (r != CKPT_OK) return _ckpt_fail_stage(ch, i, "forward (evaluation)", r);
    *cursor = ctx._rng_cursor;
    return ch->streaming ? _ckpt_param_release(ch, slot) : CKPT_OK;
}

CKPT_API ckpt_result ckpt_forward_eval(ckpt_chain *ch, const void *input, const void **output, unsigned flags) {
    uint64_t L, cursor, hi;
    const void *in = input;
    size_t hb;
    ckpt_result r = CKPT_OK;
    int i;
    if (!ch) return CKPT_ERR_NULL_ARGUMENT;
    if (!input) return _CKPT_ERR(&ch->lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_forward_eval: input is NULL; stage 0 (%s) would "
                                 "read it", _ckpt_stage_name(ch, 0));
    if (flags & ~(unsigned)CKPT_EVAL_RNG)
        return _CKPT_ERR(&ch->lg, CKPT_ERR_BAD_ARGUMENT, "ckpt_forward_eval: unknown flags 0x%x", flags);
    if (!ch->plan) return _CKPT_ERR(&ch->lg, CKPT_ERR_NO_PLAN, "ckpt_forward_eval: no plan; call ckpt_chain_plan first");
    if (ch->state != _CKPT_IDLE)
        return _CKPT_ERR(&ch->lg, CKPT_ERR_OUT_OF_ORDER, "ckpt_forward_eval: a forward is pending; run its backward "
                         "(or ckpt_chain_reset_step) first");
    L = ch->lane_bytes / CKPT_ALIGN * CKPT_ALIGN;
    for (i = 0; i < ch->n; i++) {   /* checked first, so that a layout that does not fit runs nothing */
        const ckpt_cost *c = &ch->costs[i];
        uint64_t need = (i ? _ckpt_align_up(ch->costs[i - 1].a) : 0) + _ckpt_align_up(c->a) +
                        _ckpt_tape_of(c, _ckpt_scratch_option(c)) + _ckpt_align_up(c->wf);
        if (need > L)
            return _CKPT_ERR(&ch->lg, CKPT_ERR_OUT_OF_DEVICE_MEMORY, "ckpt_forward_eval: stage %d (%s) needs %llu bytes, "
                             "more than the %llu of one lane of the arena", i, _ckpt_stage_name(ch, i),
                             (unsigned long long)need, (unsigned long long)L);
    }
    hb = ch->hooks.state_bytes;
    if (hb) ch->hooks.save(ch->hook_state + (size_t)ch->n * ch->lanes * hb, ch->hooks.user);
    _ckpt_sweep_begin(ch);
    cursor = ch->rng_next;      /* the ranges the next training forward draws; not consumed */
    for (i = 0; i < ch->n && r == CKPT_OK; i++) {
        const ckpt_cost *c = &ch->costs[i];
        uint64_t a = _ckpt_align_up(c->a), ts = _ckpt_tape_of(c, _ckpt_scratch_option(c)), x_off, t_off;
        char *base = (char *)ch->arena;
        if (i % 2 == 0) {       /* X[i+1] (1-based) at the bottom, X[i] at the top */
            x_off = 0; t_off = a;
        } else {
            x_off = L - a; t_off = _ckpt_align_up(ch->costs[i - 1].a);
        }
        hi = c->a ? x_off + c->a : 0;
        if (ts && t_off + ts > hi) hi = t_off + ts;
        if (c->wf && t_off + ts + c->wf > hi) hi = t_off + ts + c->wf;
        if (hi > ch->stats.arena_high_water) ch->stats.arena_high_water = hi;
        r = _ckpt_eval_stage(ch, i, in, c->a ? base + x_off : NULL, ts ? base + t_off : NULL,
                             c->wf ? base + t_off + ts : NULL, &cursor, flags);
        in = c->a ? base + x_off : NULL;
    }
    if (hb) ch->hooks.restore(ch->hook_state + (size_t)ch->n * ch->lanes * hb, ch->hooks.user);
    if (r != CKPT_OK) { _ckpt_sync_copies(ch); return r; }
    if (output) *output = in;
    return CKPT_OK;
}

/* >>end of the implementation */
#endif /* CKPT_IMPLEMENTATION_DONE */
#endif /* CKPT_IMPLEMENTATION */

/*
MIT License

Copyright (c) 2026 the ckpt.h authors

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
associated documentation files (the "Software"), to deal in the Software without restriction,
including without limitation the rights to use, copy, modify, merge, publish, distribute,
sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all copies or
substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT
NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES
OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
*/
