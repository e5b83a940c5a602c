/* gpu_graph_bench.cu -- launch overhead: training steps with and without CUDA graphs.

   Trains examples/mlp_cuda.cu's model (a stack of transformer MLP blocks, one ckpt stage each)
   at small batches, where a step is mostly kernel launches, under store-all and under optimal at
   a fraction of store-all's peak, each once without and once with ckpt_chain_desc.graphs (the
   chain captures its forward and backward sweeps in the first, untimed, step and replays them).
   One line per (batch, policy, graphs): the step time on the GPU (events around the step, median
   of the timed steps), the host CPU time of ckpt_forward + loss + ckpt_backward (clock(), median;
   the device is set to block on synchronization, cudaDeviceScheduleBlockingSync, so that waiting
   for the GPU costs no CPU time), the graphs captured and replayed, and whether the last step's
   gradients (parameters and input) are bit-identical to the same policy without graphs.

   Build (from the repository root):
       nvcc -O2 -arch=sm_90 -I. bench/gpu_graph_bench.cu -o gpu_graph_bench -lcublas
   Run:
       ./gpu_graph_bench [--width C] [--depth L] [--batches 64,256] [--steps S] [--dropout P]
                         [--seed S] [--budget-frac F] [--tf32]
   Exit status 0; 1 if graphs change some gradients, or on an error; 77 when there is no usable
   GPU (skipped).
*/
#define MLP_CUDA_NO_MAIN
#include "../examples/mlp_cuda.cu"

enum { MAX_BATCHES = 8 };

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--width C] [--depth L] [--batches N1,N2,...] [--steps S] [--dropout P] [--seed S]\n"
            "          [--budget-frac F] [--tf32]\n"
            "defaults: --width 768 --depth 12 --batches 64,256 --steps 20 (timed, after 1 warm-up step that\n"
            "          captures) --dropout 0.1 --seed 42 --budget-frac 0.4 (optimal's budget, of store-all's peak)\n",
            prog);
    exit(2);
}

int main(int argc, char **argv)
{
    Config cfg = default_config();
    int batches[MAX_BATCHES] = { 64, 256 }, n_batches = 2, all_same = 1;
    cfg.steps = 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--tf32")) { cfg.tf32 = 1; continue; }
        if (i + 1 >= argc) usage(argv[0]);
        const char *v = argv[++i];
        if (!strcmp(a, "--batches")) {
            char buf[256], *tok, *save = NULL;
            snprintf(buf, sizeof buf, "%s", v);
            n_batches = 0;
            for (tok = strtok_r(buf, ",", &save); tok && n_batches < MAX_BATCHES; tok = strtok_r(NULL, ",", &save))
                if ((batches[n_batches++] = atoi(tok)) < 1) usage(argv[0]);
            if (n_batches == 0) usage(argv[0]);
        } else if (!strcmp(a, "--budget-frac")) {
            cfg.budget_frac = atof(v);
        } else if (!parse_model_flag(&cfg, a, v)) {
            usage(argv[0]);
        }
    }
    if (!config_ok(&cfg) || cfg.bandwidth_gbs > 0.0) usage(argv[0]);
    {
        int count = 0;
        ckpt_result r = ckpt_cuda_device_count(&count);
        if (r == CKPT_ERR_NO_DEVICE) exit_no_gpu("gpu_graph_bench", r);
        CHECK(r);
    }
    /* waiting in ckpt_backward's synchronize sleeps instead of spinning: CPU time is host work */
    CHECK(CU(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync)));

    cudaDeviceProp prop;
    CHECK(CU(cudaGetDeviceProperties(&prop, 0)));
    printf("%s, %s GEMMs; %d blocks of width %d (hidden %d), dropout %.2f, %d+%d steps (warm-up+timed)\n",
           prop.name, cfg.tf32 ? "TF32" : "FP32", cfg.L, cfg.C, 4 * cfg.C, cfg.p_drop, cfg.warmup, cfg.steps);
    printf("\n%6s %-16s %6s %9s %9s %8s %8s %5s %7s %s\n", "batch", "policy", "graphs", "ms/step", "cpu ms", "speedup",
           "captures", "repl", "ops", "grads bit-identical to no graphs");
    for (int bi = 0; bi < n_batches; bi++) {
        Config c = cfg;
        Session ss;
        c.N = batches[bi];
        session_open(&ss, &c, "gpu_graph_bench");
        uint64_t budget = 0;
        for (int pi = 0; pi < 2; pi++) {
            Run runs[2];
            ckpt_plan_desc pd;
            memset(&pd, 0, sizeof pd);
            pd.policy = pi == 0 ? CKPT_POLICY_STORE_ALL : CKPT_POLICY_OPTIMAL;
            pd.budget = pi == 0 ? 0 : budget;
            for (int g = 0; g < 2; g++) {
                ss.cfg.graphs = g;
                train(&ss, &pd, &runs[g]);
                if (pi == 0 && g == 0) budget = (uint64_t)(cfg.budget_frac * (double)runs[0].info.peak) + 1;
            }
            if (!runs[0].feasible || !runs[1].feasible) {
                printf("%6d %-16s infeasible at %llu bytes\n", c.N, ckpt_policy_name(pd.policy), (unsigned long long)budget);
                continue;
            }
            int same = same_grads(&ss, &runs[0], &runs[1]);
            all_same &= same;
            for (int g = 0; g < 2; g++) {
                const Run *r = &runs[g];
                char name[48];
                if (pi) snprintf(name, sizeof name, "optimal@%.2f", cfg.budget_frac);
                else snprintf(name, sizeof name, "store-all");
                printf("%6d %-16s %6s %9.3f %9.3f %8.2f %8llu %5llu %7.1f %s\n", c.N, name, g ? "yes" : "no",
                       r->ms_per_step, r->cpu_ms_per_step, runs[0].ms_per_step / r->ms_per_step,
                       (unsigned long long)r->stats.graph_captures, (unsigned long long)r->stats.graph_replays,
                       r->stats.steps ? (double)r->stats.ops_run / (double)r->stats.steps : 0.0,
                       g ? (same ? "yes" : "NO") : "-");
            }
            free(runs[0].grads);
            free(runs[1].grads);
        }
        session_close(&ss);
    }
    printf("\n(ms/step: GPU time of a whole step (data, teacher, zeroing, forward, loss, backward, SGD), events "
           "on the stream; cpu ms: host CPU time of ckpt_forward + loss + ckpt_backward; speedup: ms/step "
           "without graphs / with; captures, repl: sweeps captured and replayed; ops: schedule ops per step)\n");
    return all_same ? 0 : 1;
}
