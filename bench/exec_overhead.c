/* Executor overhead per scheduled operation: a chain of empty stages (callbacks that return at
   once, 256-byte buffers), planned at a third of store-all's peak so that recomputation adds
   operations, run for many steps. Prints ns per operation.
   Usage: exec_overhead [stages] [steps] */
#define _POSIX_C_SOURCE 199309L
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"
#include "../backends/ckpt_cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static ckpt_result fwd(const ckpt_fwd_args *a) { (void)a; return CKPT_OK; }
static ckpt_result bwd(const ckpt_bwd_args *a) { (void)a; return CKPT_OK; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 64, steps = argc > 2 ? atoi(argv[2]) : 20000, i, pass;
    ckpt_backend be;
    ckpt_stage_desc *st = (ckpt_stage_desc *)calloc((size_t)n, sizeof *st);
    ckpt_chain_desc cd = {0};
    ckpt_chain *ch;
    ckpt_chain_stats cs = {0};
    char x[256] = {0}, g[256] = {0};
    if (!st || n < 1 || steps < 1) return 2;
    ckpt_cpu_backend_create(NULL, &be);
    for (i = 0; i < n; i++) {
        st[i].forward = fwd; st[i].backward = bwd;
        st[i].out_bytes = 256; st[i].tape_bytes = 256;
    }
    cd.stages = st; cd.n_stages = n; cd.backend = &be;
    if (ckpt_chain_create(&cd, &ch) != CKPT_OK) return 1;
    for (pass = 0; pass < 2; pass++) {
        ckpt_plan_desc pd = {0};
        ckpt_plan_info info;
        double t0, dt;
        uint64_t ops0;
        pd.policy = pass == 0 ? CKPT_POLICY_STORE_ALL : CKPT_POLICY_OPTIMAL;
        if (pass == 1) { ckpt_plan_info sa; ckpt_chain_plan_dry(ch, NULL, &sa); pd.budget = sa.store_all_peak / 3; }
        if (ckpt_chain_plan(ch, &pd, &info) != CKPT_OK) return 1;
        ckpt_chain_get_stats(ch, &cs);
        ops0 = cs.ops_run;
        t0 = now();
        for (i = 0; i < steps; i++)
            if (ckpt_forward(ch, x, NULL) != CKPT_OK || ckpt_backward(ch, g, NULL) != CKPT_OK) return 1;
        dt = now() - t0;
        ckpt_chain_get_stats(ch, &cs);
        printf("%-10s stages %d ops/step %d: %.1f ns per operation (%.2f us per step)\n", ckpt_policy_name(pd.policy), n,
               info.n_ops, dt * 1e9 / (double)(cs.ops_run - ops0), dt * 1e6 / steps);
    }
    ckpt_chain_destroy(ch);
    ckpt_cpu_backend_destroy(&be);
    free(st);
    return 0;
}
