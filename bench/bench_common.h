/* bench_common.h -- what bench/mlp_cpu_bench.c and bench/mlp_gpu_bench.cu share: the --fracs
   list and the table (text or CSV) of one line per (policy, budget).

   Include it after the example (examples/mlp_cpu.c or examples/mlp_cuda.cu): it uses the
   example's Config, Session, Run, run_name and same_grads. The includer first defines
     BENCH_MEM_LABEL     the text column of the memory the backend allocated ("device MiB"),
     BENCH_MEM_CSV       its CSV column name ("device_peak"),
     BENCH_MEM_BYTES(r)  those bytes for Run *r,
     BENCH_TRAIN         the example's function that trains a Session under a plan desc,
   and optionally
     BENCH_CPU_MS(r)     the median CPU time of Run *r's timed steps, in ms: adds the columns
                         "cpu ms" and "cpu x" (its ratio to store-all's) beside the wall time;
     BENCH_OPTIONS(r)    how many blocks' F kept each tape option in Run *r's plan, a string
                         "n0/n1/...": adds the column "options" (CSV: option_counts, the last);
     BENCH_RUN_FREE(r)   frees what Run *r holds (default: free((r)->grads)). */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#define MAX_FRACS 32

#ifdef BENCH_CPU_MS
#define BENCH_CPU_CSV ",cpu_ms,cpu_ratio"
#else
#define BENCH_CPU_CSV ""
#endif
#ifdef BENCH_OPTIONS
#define BENCH_OPTIONS_CSV ",option_counts"
#else
#define BENCH_OPTIONS_CSV ""
#endif
#ifndef BENCH_RUN_FREE
#define BENCH_RUN_FREE(r) free((r)->grads)
#endif

/* "1,0.8,0.5" into fracs; the count, or 0 when the list is malformed. */
static int parse_fracs(const char *s, double *fracs)
{
    int n = 0;
    while (*s) {
        char *end;
        double f = strtod(s, &end);
        if (end == s || !(f > 0.0) || n == MAX_FRACS) return 0;
        fracs[n++] = f;
        s = end;
        if (*s == ',') s++;
        else if (*s) return 0;
    }
    return n;
}

static double mib(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

/* Parameter loads per step (streaming), 0 without any step. */
static double loads_per_step(const Run *r)
{
    return r->stats.steps ? (double)r->stats.param_loads / (double)r->stats.steps : 0.0;
}

/* The text table shows "pinned MiB" only with --bandwidth and "loads", "slot MiB" only with
   --stream; the CSV always has every column. */
static void print_header(const Config *cfg, int csv)
{
    if (csv) {
        printf("policy,k,frac,budget_bytes,feasible,planned_peak,arena_high_water," BENCH_MEM_CSV ",n_recomputed,"
               "pred_ms,meas_ms,pred_ratio,meas_ratio,mem_ratio,min_budget,grads_identical,"
               "pinned_bytes,loads_per_step,slot_bytes" BENCH_CPU_CSV BENCH_OPTIONS_CSV "\n");
        return;
    }
    printf("%-14s %5s %12s %12s", "policy", "frac", "planned MiB", BENCH_MEM_LABEL);
    if (cfg->bandwidth_gbs > 0.0) printf(" %10s", "pinned MiB");
    if (cfg->stream) printf(" %6s %9s", "loads", "slot MiB");
    printf(" %6s %9s %9s", "recomp", "pred ms", "meas ms");
#ifdef BENCH_CPU_MS
    printf(" %9s", "cpu ms");
#endif
    printf(" %7s %7s", "pred x", "meas x");
#ifdef BENCH_CPU_MS
    printf(" %7s", "cpu x");
#endif
    printf(" %6s", "mem x");
#ifdef BENCH_OPTIONS
    printf(" %9s", "options");
#endif
    printf(" %s\n", "grads");
}

/* One line: run r at budget (frac of store-all's peak), against the store-all run ref; same:
   whether its gradients are bit-identical to ref's. */
static void print_run(const Config *cfg, int csv, const Run *r, const Run *ref, double frac, uint64_t budget,
                      int same)
{
    char name[32];
    run_name(r, name, sizeof name);
    if (csv && !r->feasible) {
        printf("%s,,%g,%llu,0,,,,,,,,,,%llu,,,,%s%s\n", ckpt_policy_name(r->policy), frac, (unsigned long long)budget,
               (unsigned long long)r->info.min_budget, BENCH_CPU_CSV[0] ? ",," : "", BENCH_OPTIONS_CSV[0] ? "," : "");
        return;
    }
    if (!r->feasible) {
        printf("%-14s %5.2f infeasible (min budget %.2f MiB = %.3f of store-all)\n", name, frac,
               mib(r->info.min_budget), (double)r->info.min_budget / (double)ref->info.peak);
        return;
    }
    double pred_x = r->info.time / ref->info.time, meas_x = r->ms_per_step / ref->ms_per_step;
    double mem_x = (double)r->info.peak / (double)ref->info.peak;
    if (csv) {
        printf("%s,%d,%g,%llu,1,%llu,%llu,%llu,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%llu,%d,%llu,%.2f,%llu",
               ckpt_policy_name(r->policy), r->info.k, frac, (unsigned long long)budget,
               (unsigned long long)r->info.peak, (unsigned long long)r->stats.arena_high_water,
               (unsigned long long)BENCH_MEM_BYTES(r), r->info.n_recomputed, r->info.time, r->ms_per_step,
               pred_x, meas_x, mem_x, (unsigned long long)r->info.min_budget, same,
               (unsigned long long)r->stats.pool_bytes, loads_per_step(r), (unsigned long long)r->stats.slot_bytes);
#ifdef BENCH_CPU_MS
        printf(",%.4f,%.4f", BENCH_CPU_MS(r), BENCH_CPU_MS(r) / BENCH_CPU_MS(ref));
#endif
#ifdef BENCH_OPTIONS
        printf(",%s", BENCH_OPTIONS(r));
#endif
        printf("\n");
        return;
    }
    printf("%-14s %5.2f %12.2f %12.2f", name, frac, mib(r->info.peak), mib(BENCH_MEM_BYTES(r)));
    if (cfg->bandwidth_gbs > 0.0) printf(" %10.2f", mib(r->stats.pool_bytes));
    if (cfg->stream) printf(" %6.1f %9.2f", loads_per_step(r), mib(r->stats.slot_bytes));
    printf(" %6d %9.3f %9.3f", r->info.n_recomputed, r->info.time, r->ms_per_step);
#ifdef BENCH_CPU_MS
    printf(" %9.3f", BENCH_CPU_MS(r));
#endif
    printf(" %7.3f %7.3f", pred_x, meas_x);
#ifdef BENCH_CPU_MS
    printf(" %7.3f", BENCH_CPU_MS(r) / BENCH_CPU_MS(ref));
#endif
    printf(" %6.3f", mem_x);
#ifdef BENCH_OPTIONS
    printf(" %9s", BENCH_OPTIONS(r));
#endif
    printf(" %s\n", same ? "same" : "DIFFER");
}

/* Every policy at every budget (fracs of ref's planned peak), a line each, the offload policy
   planned for --bandwidth. Returns 1 when every feasible run's gradients are bit-identical to
   ref's. cpu_x, when not NULL (and BENCH_CPU_MS is defined), gets each run's CPU-time ratio to
   ref's, NAN where infeasible, at [f * n_policies + i]. */
static int bench_sweep(Session *ss, const Config *cfg, int csv, const Run *ref, const double *fracs, int n_fracs,
                       const ckpt_policy *policies, int n_policies, double *cpu_x)
{
    int all_same = 1;
    for (int f = 0; f < n_fracs; f++) {
        uint64_t budget = (uint64_t)(fracs[f] * (double)ref->info.peak);
        if (budget == 0) budget = 1;        /* 0 would mean "no limit" */
        for (int i = 0; i < n_policies; i++) {
            Run run;
            ckpt_plan_desc pd;
            memset(&pd, 0, sizeof pd);
            pd.policy = policies[i];
            pd.budget = budget;             /* every-k gets k = 0: the best k that fits */
            if (pd.policy == CKPT_POLICY_OFFLOAD)
                pd.bandwidth = cfg->bandwidth_gbs * 1e9 / 1e3;   /* bytes per ms: stage times are in ms */
            BENCH_TRAIN(ss, &pd, &run);
            int same = run.feasible ? same_grads(ss, &run, ref) : 0;
            if (run.feasible) all_same &= same;
            print_run(cfg, csv, &run, ref, fracs[f], budget, same);
#ifdef BENCH_CPU_MS
            if (cpu_x) cpu_x[f * n_policies + i] = run.feasible ? BENCH_CPU_MS(&run) / BENCH_CPU_MS(ref) : NAN;
#else
            (void)cpu_x;
#endif
            fflush(stdout);
            BENCH_RUN_FREE(&run);
        }
        if (!csv) printf("\n");
    }
    return all_same;
}

#endif /* BENCH_COMMON_H */
