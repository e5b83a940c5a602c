/* mlp_cpu_bench.c -- memory against time for every planner policy, on the CPU backend.

   The CPU counterpart of bench/mlp_gpu_bench.cu, and ckpt.h's side of the comparison with
   bench/torch_checkpoint.py on a machine without a GPU. It trains examples/mlp_cpu.c's model (a
   stack of transformer MLP blocks, one ckpt stage each) under each policy
   at several budgets, given as fractions of store-all's planned peak, and prints one line per
   (policy, budget): the planned peak, the arena the executor allocated, the predicted step time
   (the plan's time: the sum of the measured per-block forward and backward times, in ms) and the
   measured one (median over the timed steps, after one warm-up step; wall time, and the process's
   CPU time over all its threads, CLOCK_PROCESS_CPUTIME_ID: on a shared machine the CPU time is
   the figure to trust), all as ratios to store-all, the activation memory ratio (planned peak / store-all's planned peak), and whether
   the last step's gradients (parameters and the input's) are bit-identical to store-all's.

   The measured step is what bench/torch_checkpoint.py times: zero the gradients, forward, loss,
   backward, SGD update. It also includes what the plan does not count (the loss, the update,
   the executor's own work); the predicted time counts only the blocks.

   Comparing with PyTorch: run both with the same --width --depth --batch --dropout, e.g.

       ./build/default/mlp_cpu_bench --threads 1 --width 512 --depth 16 --batch 512
       /usr/bin/python3 bench/torch_checkpoint.py --device cpu --threads 1 --width 512 --depth 16 \
           --batch 512

   --threads T (default: $OPENBLAS_NUM_THREADS if set, else 1) gives OpenBLAS and the example's
   OpenMP loops T threads (example_set_threads); the gradients are the same bits at every T.

   and compare ratios, each system against its own store-all run (see torch_checkpoint.py).
   --fracs takes PyTorch's memory ratios directly, to put ckpt.h at the same points.

   --rounds R runs store-all and the whole sweep R times (default 1) and ends with each line's
   CPU-time ratio, the median over the rounds of its ratio to the same round's store-all run, with
   the smallest and the largest: on a machine whose speed drifts over minutes, a ratio taken
   against a store-all run minutes away moves with the drift.

   --bandwidth GB_PER_S adds an offload line at every budget, on the CPU backend's copy engine
   throttled to that many GB/s each way ("pinned MiB": the pool). --stream 1 streams the
   parameters on every line, the reference included.

   Tape options: every block declares examples/mlp_cpu.c's tape options 1-3 (its tape without the
   GELU output; also without the LN output; only the row statistics and the dropout mask: the
   backward recomputes what is left out; each bwd_extra is the recompute's time, measured at
   start-up as the example does). The optimal policy (and offload, from optimal's plans) keeps
   each tape in the option that pays; the other policies keep option 0; under every policy an F
   that keeps no tape runs option 3, the smallest. "options" (CSV: option_counts, the last
   column) counts the blocks whose F kept options 0/1/2/3 in each plan.
   Store-all, the reference, keeps option 0; the three lines after it, "store-all optk" (CSV
   policy "custom", frac its memory ratio), run store-all's schedule keeping every tape in option
   k, for k = 1, 2, 3.
   --no-options declares no option (nor the forward workspace, nor the backward's room for option
   3's h): the stages are what they were before options, to compare.

   Build: the CMake target mlp_cpu_bench (OpenBLAS when found, else examples/blas.h's SGEMM;
   OpenMP when found), or from the repository root (Debian's OpenBLAS)
       cc -std=c11 -O2 -fopenmp -DCKPT_EXAMPLE_OPENBLAS -I/usr/include/x86_64-linux-gnu/openblas-pthread \
           -I. bench/mlp_cpu_bench.c -o mlp_cpu_bench -lopenblas -lm -lpthread
   Run:
       ./mlp_cpu_bench [--width C] [--depth L] [--batch N] [--steps S] [--dropout P] [--seed S]
                       [--fracs 1,0.8,...] [--policies optimal,every-k,...] [--bandwidth GB_PER_S]
                       [--stream 0|1] [--threads T] [--rounds R] [--no-options] [--csv]
   Exit status 0; 1 if some policy's gradients differ from store-all's; 2 on bad arguments.
*/
#define MLP_CPU_NO_MAIN
#include "../examples/mlp_cpu.c"

#define BENCH_MEM_LABEL "arena MiB"
#define BENCH_MEM_CSV "arena_bytes"
#define BENCH_MEM_BYTES(r) ((r)->stats.arena_bytes)
#define BENCH_TRAIN session_train
#define BENCH_CPU_MS(r) ((r)->cpu_ms_per_step)
#define BENCH_OPTIONS(r) ((r)->opt_counts)
#define BENCH_RUN_FREE(r) run_free(r)
#include "bench_common.h"

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--width C] [--depth L] [--batch N] [--steps S] [--dropout P] [--seed S]\n"
            "          [--fracs F1,F2,...] [--policies P1,P2,...] [--bandwidth GB_PER_S] [--stream 0|1]\n"
            "          [--threads T] [--rounds R] [--no-options] [--csv]\n"
            "defaults: --width 64 --depth 8 --batch 256 --steps 6 (1 warm-up, then timed; the median)\n"
            "          --dropout 0.1 --seed 42 --fracs 1,0.8,0.6,0.5,0.4,0.3,0.25,0.2 (of store-all's peak)\n"
            "          --policies every-k,sqrt,greedy,optimal (and offload with --bandwidth)\n"
            "          --threads $OPENBLAS_NUM_THREADS if set, else 1; --rounds 1 (at most 64); tape options 1-3 declared\n",
            prog);
    exit(2);
}

/* "optimal,every-k" into policies (ckpt_policy_name's spellings); the count, or 0. */
static int parse_policies(const char *s, ckpt_policy *out)
{
    int n = 0;
    while (*s) {
        size_t len = strcspn(s, ",");
        int found = 0;
        for (int p = 0; p < CKPT_POLICY_COUNT_ && !found; p++) {
            const char *name = ckpt_policy_name((ckpt_policy)p);
            if (strlen(name) == len && !strncmp(name, s, len) && n < CKPT_POLICY_COUNT_) {
                out[n++] = (ckpt_policy)p;
                found = 1;
            }
        }
        if (!found) return 0;
        s += len;
        if (*s == ',') s++;
    }
    return n;
}

int main(int argc, char **argv)
{
    Config cfg = { .C = 64, .L = 8, .N = 256, .steps = 6, .p_drop = 0.1f, .lr = 0.1f,
                   .budget_frac = 1.0, .bandwidth_gbs = 0, .budget = 0, .seed = 42 };
    double fracs[MAX_FRACS] = { 1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.25, 0.2 };
    ckpt_policy policies[CKPT_POLICY_COUNT_] = { CKPT_POLICY_EVERY_K, CKPT_POLICY_SQRT, CKPT_POLICY_GREEDY,
                                                 CKPT_POLICY_OPTIMAL };
    int n_fracs = 8, n_policies = 4, csv = 0, policies_given = 0, rounds = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--csv")) { csv = 1; continue; }
        if (!strcmp(a, "--no-options")) { cfg.no_options = 1; continue; }
        if (i + 1 >= argc) usage(argv[0]);
        const char *v = argv[++i];
        if (!strcmp(a, "--width")) cfg.C = atoi(v);
        else if (!strcmp(a, "--depth")) cfg.L = atoi(v);
        else if (!strcmp(a, "--batch")) cfg.N = atoi(v);
        else if (!strcmp(a, "--steps")) cfg.steps = atoi(v);
        else if (!strcmp(a, "--dropout")) cfg.p_drop = (float)atof(v);
        else if (!strcmp(a, "--seed")) cfg.seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--bandwidth")) cfg.bandwidth_gbs = atof(v);
        else if (!strcmp(a, "--stream")) cfg.stream = atoi(v);
        else if (!strcmp(a, "--threads")) { if ((cfg.threads = atoi(v)) < 1) usage(argv[0]); }
        else if (!strcmp(a, "--rounds")) { if ((rounds = atoi(v)) < 1 || rounds > 64) usage(argv[0]); }
        else if (!strcmp(a, "--fracs")) { if (!(n_fracs = parse_fracs(v, fracs))) usage(argv[0]); }
        else if (!strcmp(a, "--policies")) {
            if (!(n_policies = parse_policies(v, policies))) usage(argv[0]);
            policies_given = 1;
        } else usage(argv[0]);
    }
    if (cfg.C < 1 || cfg.L < 1 || cfg.N < 1 || cfg.steps < 2 || !(cfg.p_drop >= 0.0f) || !(cfg.p_drop < 1.0f) ||
        !(cfg.bandwidth_gbs >= 0.0))
        usage(argv[0]);
    if (!policies_given && cfg.bandwidth_gbs > 0.0) policies[n_policies++] = CKPT_POLICY_OFFLOAD;
    example_openmp_passive(cfg.threads ? cfg.threads : default_threads(), argv);

    Session ss;
    session_open(&ss, &cfg);

    /* The reference: store-all, no budget. Its peak scales the budgets; its times the ratios. */
    Run ref;
    ckpt_plan_desc pd;
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_STORE_ALL;
    session_train(&ss, &pd, &ref);

    const char *lead = csv ? "# " : "";
    printf("%sCPU backend, %s, %d thread%s (%s); %d blocks of width %d (hidden %d), %d rows, dropout %.2f, "
           "1+%d steps (warm-up+timed, median)\n", lead, EXAMPLE_BLAS, ss.cfg.threads, ss.cfg.threads == 1 ? "" : "s",
#ifdef _OPENMP
           "BLAS and OpenMP loops",
#else
           "BLAS only: built without OpenMP",
#endif
           cfg.L, cfg.C, 4 * cfg.C, cfg.N, cfg.p_drop, cfg.steps - 1);
    printf("%sblocks (mean of the measured medians): fwd %.3f ms, bwd %.3f ms; store-all: planned peak %llu bytes (%.2f MiB), predicted "
           "%.3f ms, measured %.3f ms (CPU %.3f ms) per step\n", lead, ss.fwd_ms, ss.bwd_opt_ms[0],
           (unsigned long long)ref.info.peak, mib(ref.info.peak), ref.info.time, ref.ms_per_step, ref.cpu_ms_per_step);
    print_options(&ss, lead);
    printf("%sstore-all's last gradients: checksum %016llx\n", lead,
           (unsigned long long)ckpt_checksum(ref.grads, (ss.model.n_params + (size_t)cfg.N * cfg.C) * sizeof(float)));
    if (cfg.bandwidth_gbs > 0.0)
        printf("%soffload: copy engine throttled to %.3g GB/s each way\n", lead, cfg.bandwidth_gbs);
    if (cfg.stream)
        printf("%sparameter streaming: store-all %.1f loads per step, %llu bytes of slots\n", lead,
               loads_per_step(&ref), (unsigned long long)ref.stats.slot_bytes);
    if (!csv) printf("\n");
    print_header(&cfg, csv);
    print_run(&cfg, csv, &ref, &ref, 1.0, ref.info.peak, 1);
    int all_same = 1;
    for (int o = 1; !cfg.no_options && o < N_OPTIONS; o++) {  /* store-all's schedule keeping every tape in
                                                                option o (CSV: "custom") */
        Run all;
        session_train_store_all(&ss, o, &all);
        int same = same_grads(&ss, &all, &ref);
        all_same &= same && all.n_opt[o] == cfg.L;
        print_run(&cfg, csv, &all, &ref, (double)all.info.peak / (double)ref.info.peak, all.info.peak, same);
        run_free(&all);
    }
    if (!csv) printf("\n");

    /* --rounds: the store-all run and the sweep again; each round's CPU ratios are to its own
       store-all run, so that a machine whose speed drifts over minutes moves both sides */
    size_t cells = (size_t)n_fracs * (size_t)n_policies;
    double *cpu_x = (double *)malloc((size_t)rounds * cells * sizeof(double));
    if (!cpu_x) { fprintf(stderr, "mlp_cpu_bench: out of memory\n"); return 1; }
    all_same &= bench_sweep(&ss, &cfg, csv, &ref, fracs, n_fracs, policies, n_policies, cpu_x);
    for (int r = 1; r < rounds; r++) {
        Run ref_r;
        printf("%sround %d of %d\n", lead, r + 1, rounds);
        session_train(&ss, &pd, &ref_r);
        print_run(&cfg, csv, &ref_r, &ref_r, 1.0, ref_r.info.peak, 1);
        if (!csv) printf("\n");
        all_same &= same_grads(&ss, &ref_r, &ref);
        all_same &= bench_sweep(&ss, &cfg, csv, &ref_r, fracs, n_fracs, policies, n_policies, cpu_x + (size_t)r * cells);
        run_free(&ref_r);
    }
    if (rounds > 1) {
        printf("%s%d rounds: CPU-time ratio to the same round's store-all, median [smallest, largest]\n", lead, rounds);
        for (size_t c = 0; c < cells; c++) {
            double v[64];
            int n = 0;
            for (int r = 0; r < rounds; r++)
                if (cpu_x[(size_t)r * cells + c] == cpu_x[(size_t)r * cells + c]) v[n++] = cpu_x[(size_t)r * cells + c];
            printf("%s%-14s %5.3f ", lead, ckpt_policy_name(policies[c % (size_t)n_policies]), fracs[c / (size_t)n_policies]);
            if (!n) printf("infeasible\n");
            else {
                double med = median(v, n);      /* sorts v */
                printf("%.3f [%.3f, %.3f]\n", med, v[0], v[n - 1]);
            }
        }
    }
    free(cpu_x);

    run_free(&ref);
    session_close(&ss);
    if (!all_same) fprintf(stderr, "mlp_cpu_bench: some gradients differ from store-all's\n");
    return all_same ? 0 : 1;
}
