/* mlp_gpu_bench.cu -- memory against time for every planner policy, on the GPU.

   Trains examples/mlp_cuda.cu's model (a stack of transformer MLP blocks, one ckpt stage each)
   under each policy at several budgets, given as fractions of store-all's planned peak, and
   prints one line per (policy, budget): the planned peak, the device bytes the CUDA backend
   allocated (the arena), the predicted step time (the plan's time: the sum of the measured
   per-block forward and backward times, in ms) and the measured one (median over the timed
   steps, after a warm-up step), both as ratios to store-all, the activation memory ratio (planned
   peak / store-all's planned peak), and whether the last step's gradients are bit-identical to
   store-all's. Store-all itself is infeasible below a fraction of 1; those lines say so.

   The measured step also includes what the plan does not count: zeroing the gradients, the loss,
   the SGD update and the executor's own work; the predicted time counts only the blocks.

   --bandwidth GB_PER_S adds an offload line at every budget: the offload policy planned for a link
   of that many GB/s each way (bytes per ms in the plan, as the stage times are in ms), copying
   boundaries and tapes to the CUDA backend's pinned pool and back; its "pinned MiB" column (CSV:
   pinned_bytes) is that pool, ckpt_chain_stats.pool_bytes. --stream runs every line, the
   reference included, with parameter streaming as examples/mlp_cuda.cu --stream does (parameters
   and gradients in pinned host memory, SGD on the host outside the timed part of the step; the
   gradients compared are the host ones); "loads" is parameter loads per step and "slot MiB" the
   streaming slots on the device, which "device MiB" includes. The CSV always has the columns
   pinned_bytes, loads_per_step and slot_bytes, last (0 when not offloading or not streaming),
   then option_counts.

   Tape options as in examples/mlp_cuda.cu: each block declares option 1 (no GELU output in the
   tape, recomputed in the backward); column options (CSV: option_counts) counts the blocks whose
   F kept options 0 and 1 ("n0/n1"). One more line after the header: "store-all opt1", store-all's schedule with every F keeping
   option 1 (CSV policy "custom", frac its peak over store-all's), whose gradients must be
   store-all's bits. --no-options declares no option (nor the forward workspace), and drops that
   line.

   Build (from the repository root):
       nvcc -O2 -arch=sm_90 -I. bench/mlp_gpu_bench.cu -o mlp_gpu_bench -lcublas
   Run:
       ./mlp_gpu_bench [--width C] [--depth L] [--batch N] [--steps S] [--dropout P] [--seed S]
                       [--fracs 1,0.8,...] [--bandwidth GB_PER_S] [--stream] [--tf32] [--no-options]
                       [--csv]
   Exit status 0; 1 if some policy's gradients differ from store-all's, or on an error; 77 when
   there is no usable GPU (skipped).
*/
#define MLP_CUDA_NO_MAIN
#include "../examples/mlp_cuda.cu"

/* A feasible run's blocks that kept tape options 0 and 1, as "n0/n1" (bench_common.h's column). */
static const char *opt_counts(const Run *r)
{
    static char buf[32];
    snprintf(buf, sizeof buf, "%d/%d", (int)strlen(r->tape_opts) - r->n_opt1, r->n_opt1);
    return buf;
}

#define BENCH_MEM_LABEL "device MiB"
#define BENCH_MEM_CSV "device_peak"
#define BENCH_MEM_BYTES(r) ((r)->device_peak)
#define BENCH_TRAIN train
#define BENCH_OPTIONS(r) opt_counts(r)
#define BENCH_RUN_FREE(r) run_free(r)
#include "bench_common.h"

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--width C] [--depth L] [--batch N] [--steps S] [--dropout P] [--seed S]\n"
            "          [--fracs F1,F2,...] [--bandwidth GB_PER_S] [--stream] [--tf32] [--no-options] [--csv]\n"
            "defaults: --width 768 --depth 12 --batch 4096 --steps 10 (timed, after 1 warm-up step)\n"
            "          --dropout 0.1 --seed 42 --fracs 1,0.8,0.6,0.5,0.4,0.3,0.25,0.2 (of store-all's peak);\n"
            "          no offload lines; parameters on the device; tape option 1 declared\n",
            prog);
    exit(2);
}

int main(int argc, char **argv)
{
    Config cfg = default_config();
    double fracs[MAX_FRACS] = { 1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.25, 0.2 };
    int n_fracs = 8, csv = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--csv")) { csv = 1; continue; }
        if (parse_model_switch(&cfg, a)) continue;
        if (i + 1 >= argc) usage(argv[0]);
        const char *v = argv[++i];
        if (parse_model_flag(&cfg, a, v)) continue;
        if (!strcmp(a, "--fracs")) { if (!(n_fracs = parse_fracs(v, fracs))) usage(argv[0]); }
        else usage(argv[0]);
    }
    if (!config_ok(&cfg)) usage(argv[0]);

    Session ss;
    session_open(&ss, &cfg, "mlp_gpu_bench");

    /* The reference: store-all, no budget. Its peak scales the budgets; its times the ratios. */
    Run ref;
    ckpt_plan_desc pd;
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_STORE_ALL;
    train(&ss, &pd, &ref);

    cudaDeviceProp prop;
    CHECK(CU(cudaGetDeviceProperties(&prop, 0)));
    const char *lead = csv ? "# " : "";
    printf("%s%s, %s GEMMs; %d blocks of width %d (hidden %d), %d rows, dropout %.2f, %d+%d steps "
           "(warm-up+timed)\n", lead, prop.name, cfg.tf32 ? "TF32" : "FP32", cfg.L, cfg.C, 4 * cfg.C, cfg.N,
           cfg.p_drop, cfg.warmup, cfg.steps);
    printf("%sone block: fwd %.3f ms, bwd %.3f ms; store-all: planned peak %llu bytes (%.1f MiB), device "
           "%llu bytes, predicted %.3f ms, measured %.3f ms per step\n", lead, ss.fwd_ms, ss.bwd_ms,
           (unsigned long long)ref.info.peak, mib(ref.info.peak), (unsigned long long)ref.device_peak,
           ref.info.time, ref.ms_per_step);
    if (cfg.no_options)
        printf("%stape options off (--no-options): every block keeps option 0, %zu bytes of tape\n", lead,
               ss.model.tape_bytes[0]);
    else
        printf("%stape option 1 (no GELU output, recomputed in backward): tape %zu bytes per block (option 0: %zu), "
               "bwd_extra %.3f ms (backward in option 1 %.3f ms less option 0's; the GELU recompute alone %.3f ms)\n",
               lead, ss.model.tape_bytes[1], ss.model.tape_bytes[0], ss.bwd_extra_ms, ss.bwd1_ms, ss.gelu_ms);
    if (cfg.bandwidth_gbs > 0.0)
        printf("%soffload: planned for a link of %.3g GB/s each way\n", lead, cfg.bandwidth_gbs);
    if (cfg.stream)
        printf("%sparameter streaming: %zu bytes of parameters per block in pinned host memory; store-all: %.1f "
               "loads per step, %llu bytes of slots\n", lead, ss.model.block_floats * sizeof(float),
               loads_per_step(&ref), (unsigned long long)ref.stats.slot_bytes);
    if (!csv) printf("\n");
    print_header(&cfg, csv);
    int all_same = 1;
    if (!cfg.no_options) {  /* store-all's schedule keeping every tape in option 1 (CSV: "custom") */
        Run all1;
        train_store_all(&ss, 1, "store-all opt1", &all1);
        int same = same_grads(&ss, &all1, &ref);
        all_same &= same && all1.n_opt1 == cfg.L;
        print_run(&cfg, csv, &all1, &ref, (double)all1.info.peak / (double)ref.info.peak, all1.info.peak, same);
        run_free(&all1);
        if (!csv) printf("\n");
    }

    /* The offload line (last) only with --bandwidth. */
    const ckpt_policy policies[] = { CKPT_POLICY_STORE_ALL, CKPT_POLICY_EVERY_K, CKPT_POLICY_SQRT,
                                     CKPT_POLICY_GREEDY, CKPT_POLICY_OPTIMAL, CKPT_POLICY_OFFLOAD };
    int n_policies = (int)(sizeof policies / sizeof policies[0]) - (cfg.bandwidth_gbs > 0.0 ? 0 : 1);
    all_same &= bench_sweep(&ss, &cfg, csv, &ref, fracs, n_fracs, policies, n_policies, NULL);

    run_free(&ref);
    session_close(&ss);
    if (!all_same) fprintf(stderr, "mlp_gpu_bench: some gradients differ from store-all's\n");
    return all_same ? 0 : 1;
}
