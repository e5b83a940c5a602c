/* offload_cpu_bench -- offload against recomputation on the CPU backend's throttled copy engine.

   A chain of stages that spin for fixed times (forward F ms, backward 2F ms) and write real
   outputs and tapes. For each device budget (a fraction of store-all's peak) and each link speed
   (given as copy time / compute time per stage: how long one stage's output and tape take to go
   one way, over that stage's forward plus backward), it plans recompute-only (optimal) and
   offload, runs both on a copy engine throttled to that speed, and prints predicted and measured
   step time relative to store-all, and the gradients' bit-identity to store-all.

   Build: cc -std=c11 -O2 -I. bench/offload_cpu_bench.c -o offload_cpu_bench -lm
          (or `cmake --build build/default --target offload_cpu_bench`)
   Run:   ./offload_cpu_bench [stages] [fwd_ms] [steps] [trace_prefix]      (defaults 12 2 3, none)
          trace_prefix: the streaming table also traces one step per lookahead and bandwidth
          into trace_prefix_L<lookahead>[e|o]_<GB/s>.json (Chrome trace JSON, STEP TIMELINE in
          ckpt.h; e: stream_grads_early, o: stream_grads_overwrite)
*/
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"
#include "../backends/ckpt_cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W (64 * 1024)           /* floats per boundary: 256 KiB */
#define TW (4 * W)              /* floats per tape: 1 MiB */
#define MAXN 64

static double f_ms = 2.0;
static float dw[MAXN];

static void spin(double ms) {
    double t0 = ckpt_cpu_now_ms();
    while (ckpt_cpu_now_ms() - t0 < ms) {}
}
static ckpt_result fwd(const ckpt_fwd_args *a) {
    const float *x = (const float *)a->in;
    float *y = (float *)a->out, *t = (float *)a->tape;
    int j;
    for (j = 0; j < W; j++) y[j] = 0.5f * x[j] + 1.0f;
    for (j = 0; j < TW; j++) t[j] = x[j % W];
    spin(f_ms);
    return CKPT_OK;
}
static ckpt_result bwd(const ckpt_bwd_args *a) {
    const float *g = (const float *)a->grad_out, *t = (const float *)a->tape;
    float *gx = (float *)a->grad_in, s = 0;
    int j;
    for (j = 0; j < TW; j += 64) s += g[j % W] * t[j];
    dw[a->ctx->stage] += s;
    if (gx) for (j = 0; j < W; j++) gx[j] = 0.5f * g[j];
    spin(2 * f_ms);
    return CKPT_OK;
}

static float x0[W], gy[W], gx[W];

/* Parameter streaming: stages with P floats of parameters on the host, read in forward and
   backward, gradients added into host_grads. */
#define P (1024 * 1024)         /* 4 MiB of parameters per stage */
static float *params[MAXN], *grads[MAXN];
static ckpt_result sfwd(const ckpt_fwd_args *a) {
    const float *x = (const float *)a->in, *p = (const float *)a->params;
    float *y = (float *)a->out, s = 0;
    int j;
    for (j = 0; j < P; j += 1024) s += p[j];
    for (j = 0; j < W; j++) y[j] = 0.5f * x[j] + s * 1e-6f;
    spin(f_ms);
    return CKPT_OK;
}
static ckpt_result sbwd(const ckpt_bwd_args *a) {
    const float *g = (const float *)a->grad_out;
    float *gx_ = (float *)a->grad_in, *pg = (float *)a->param_grads;
    int j;
    for (j = 0; j < P; j += 1024) pg[j] += g[j % W];
    if (gx_) for (j = 0; j < W; j++) gx_[j] = 0.5f * g[j];
    spin(2 * f_ms);
    return CKPT_OK;
}

/* The summed span of one lane's events in a trace (its busy time; the lane runs one thing at a time). */
static double lane_busy(const ckpt_trace *t, ckpt_trace_lane lane) {
    double busy = 0;
    int i;
    for (i = 0; i < t->n_events; i++)
        if (t->events[i].lane == lane) busy += t->events[i].end_ms - t->events[i].start_ms;
    return busy;
}

/* A model whose parameters are 4x the device memory it trains in (slots + activations), on a
   copy engine at several bandwidths: step time against the bound the link sets and against
   compute. The link bound counts the copies the chain made (ckpt_chain_stats per step): on the
   host-to-device stream every parameter load and every host_grads load (a streamed B adds into
   its stage's host_grads, loaded first), on the device-to-host stream every gradient store;
   bound = the largest of the two streams' times and the compute. Each step is timed from
   ckpt_forward to the end of ckpt_backward (the bench zeroes host_grads before, untimed). Rows
   for stream_lookahead 1 (the default), 2 and 4, for 2 and 4 with stream_grads_early = 1
   (column early: host_grads are not touched between the two calls here), and for 1 and 2 with
   stream_grads_overwrite = 1 (column over: no host_grads loads; the bench's zeroing is then
   not needed, but it runs as in the other rows). With trace_prefix, one more step is traced
   (ckpt_chain_trace) and written to PREFIX_L<lookahead>[e|o]_<GB/s>.json (e: early, o:
   overwrite), and the step's makespan, each lane's busy time and compute's idle time are
   printed: where the time goes. */
static void streaming(int n, int steps, const char *trace_prefix) {
    static const double gbps[] = {0.5, 1.0, 2.0, 4.0};
    static const int looks[] = {1, 2, 4, 2, 4, 1, 2}, early[] = {0, 0, 0, 1, 1, 0, 0};
    static const int over[] = {0, 0, 0, 0, 0, 1, 1};
    static ckpt_stage_desc st[MAXN];
    int i, bi, k, li;
    printf("\nparameter streaming: %d stages of %d MiB parameters each, %d microbatch(es)\n", n, (int)(P * 4 >> 20), 1);
    for (i = 0; i < n; i++) {
        params[i] = (float *)calloc(P, sizeof(float));
        grads[i] = (float *)calloc(P, sizeof(float));
        st[i].forward = sfwd; st[i].backward = sbwd;
        st[i].out_bytes = W * sizeof(float); st[i].tape_bytes = 0;
        st[i].fwd_time = f_ms; st[i].bwd_time = 2 * f_ms;
        st[i].host_params = params[i]; st[i].param_bytes = P * sizeof(float); st[i].host_grads = grads[i];
    }
    printf("%5s %5s %5s %8s %10s %10s %10s %10s %10s %8s %6s %6s %6s %12s %12s\n", "look", "early", "over", "GB/s",
           "meas ms", "compute", "h2d bound", "d2h bound", "bound", "x bound", "p-ld", "g-ld", "g-st", "device B", "params B");
    for (li = 0; li < (int)(sizeof looks / sizeof looks[0]); li++)
    for (bi = 0; bi < (int)(sizeof gbps / sizeof gbps[0]); bi++) {
        ckpt_backend be;
        ckpt_cpu_desc bd;
        ckpt_chain_desc cd;
        ckpt_chain *ch;
        ckpt_plan_desc pd;
        ckpt_plan_info info;
        ckpt_chain_stats cs;
        double t[16], compute, h2d, d2h, bound, pl, gl, gs;
        uint64_t total = (uint64_t)n * P * sizeof(float);
        memset(&bd, 0, sizeof bd);
        memset(&cs, 0, sizeof cs);
        bd.copy_engine = 1; bd.copy_bandwidth = gbps[bi] * 1e9;
        ckpt_cpu_backend_create(&bd, &be);
        memset(&cd, 0, sizeof cd);
        cd.stages = st; cd.n_stages = n; cd.input_bytes = sizeof x0; cd.backend = &be;
        cd.stream_lookahead = looks[li];
        cd.stream_grads_early = early[li];
        cd.stream_grads_overwrite = over[li];
        if (ckpt_chain_create(&cd, &ch) != CKPT_OK) { printf("chain failed\n"); return; }
        memset(&pd, 0, sizeof pd);
        pd.policy = CKPT_POLICY_STORE_ALL;
        ckpt_chain_plan(ch, &pd, &info);
        for (k = 0; k <= steps; k++) {
            const void *out;
            double t0;
            for (i = 0; i < n; i++) memset(grads[i], 0, P * sizeof(float));
            t0 = ckpt_cpu_now_ms();
            if (ckpt_forward(ch, x0, &out) != CKPT_OK || ckpt_backward(ch, gy, gx) != CKPT_OK) { printf("step failed\n"); break; }
            if (k > 0) t[k - 1] = ckpt_cpu_now_ms() - t0;
        }
        for (i = 1; i < steps; i++) { int j; for (j = i; j > 0 && t[j - 1] > t[j]; j--) { double x = t[j]; t[j] = t[j - 1]; t[j - 1] = x; } }
        ckpt_chain_get_stats(ch, &cs);
        pl = (double)cs.param_loads / (steps + 1); gl = (double)cs.grad_loads / (steps + 1); gs = (double)cs.grad_stores / (steps + 1);
        compute = info.store_all_time;
        h2d = (pl + gl) * P * sizeof(float) / (gbps[bi] * 1e9) * 1e3;
        d2h = gs * P * sizeof(float) / (gbps[bi] * 1e9) * 1e3;
        bound = compute > h2d ? compute : h2d;
        if (d2h > bound) bound = d2h;
        printf("%5d %5d %5d %8.2f %10.2f %10.2f %10.2f %10.2f %10.2f %8.3f %6.0f %6.0f %6.0f %12llu %12llu\n",
               looks[li], early[li], over[li], gbps[bi], t[steps / 2], compute,
               h2d, d2h, bound, t[steps / 2] / bound, pl, gl, gs, (unsigned long long)(cs.slot_bytes + cs.arena_bytes),
               (unsigned long long)total);
        if (trace_prefix) {
            ckpt_trace tr;
            size_t len = 0;
            char path[512], *json;
            FILE *f;
            for (i = 0; i < n; i++) memset(grads[i], 0, P * sizeof(float));
            if (ckpt_chain_trace(ch, x0, gy, gx, &tr) != CKPT_OK) { printf("trace failed\n"); break; }
            {
                double end = 0, cb = lane_busy(&tr, CKPT_TRACE_COMPUTE);
                for (i = 0; i < tr.n_events; i++) if (tr.events[i].end_ms > end) end = tr.events[i].end_ms;
                printf("               trace: makespan %.2f ms; busy: compute %.2f (idle %.2f), h2d %.2f, d2h %.2f ms\n", end, cb,
                       end - cb, lane_busy(&tr, CKPT_TRACE_H2D), lane_busy(&tr, CKPT_TRACE_D2H));
            }
            snprintf(path, sizeof path, "%s_L%d%s_%g.json", trace_prefix, looks[li],
                     early[li] ? "e" : over[li] ? "o" : "", gbps[bi]);
            if (ckpt_trace_json(&tr, NULL, 0, &len) == CKPT_OK && (json = (char *)malloc(len + 1)) != NULL) {
                ckpt_trace_json(&tr, json, len + 1, &len);
                if ((f = fopen(path, "wb")) != NULL) { fwrite(json, 1, len, f); fclose(f); }
                free(json);
            }
            ckpt_trace_free(&tr);
        }
        ckpt_chain_destroy(ch);
        ckpt_cpu_backend_destroy(&be);
    }
    for (i = 0; i < n; i++) { free(params[i]); free(grads[i]); }
    printf("h2d bound: the step's parameter loads (p-ld) and host_grads loads (g-ld) at that bandwidth;\n"
           "d2h bound: its gradient stores (g-st); bound: the largest of them and the compute;\n"
           "device B: slots + activation arena; look: ckpt_chain_desc.stream_lookahead (slots: look + 1 of each kind);\n"
           "early: ckpt_chain_desc.stream_grads_early; over: ckpt_chain_desc.stream_grads_overwrite.\n");
}

/* Median step time in ms over `steps` steps after one warm-up; gradients into g (dx then dw). */
static double run(ckpt_chain *ch, int steps, float *g, int n) {
    double t[16];
    int s, i, j;
    for (s = 0; s <= steps; s++) {
        const void *out;
        double t0 = ckpt_cpu_now_ms();
        memset(dw, 0, sizeof dw);
        if (ckpt_forward(ch, x0, &out) != CKPT_OK || ckpt_backward(ch, gy, gx) != CKPT_OK) return -1;
        if (s > 0) t[s - 1] = ckpt_cpu_now_ms() - t0;
    }
    for (i = 1; i < steps; i++)
        for (j = i; j > 0 && t[j - 1] > t[j]; j--) { double x = t[j]; t[j] = t[j - 1]; t[j - 1] = x; }
    memcpy(g, gx, sizeof gx);
    memcpy(g + W, dw, (size_t)n * sizeof(float));
    return t[steps / 2];
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 12, steps = argc > 3 ? atoi(argv[3]) : 3, i, fi, li;
    static const double fracs[] = {0.6, 0.4, 0.25};
    static const double link[] = {0.25, 0.5, 0.9, 2.0};   /* copy time / compute time per stage */
    static ckpt_stage_desc st[MAXN];
    static float ref[W + MAXN], got[W + MAXN];
    ckpt_plan_info sa;
    double sa_ms;
    if (argc > 2) f_ms = atof(argv[2]);
    if (n < 2 || n > MAXN || steps < 1 || steps > 15 || !(f_ms > 0)) {
        fprintf(stderr, "usage: %s [stages 2..%d] [fwd_ms] [steps 1..15]\n", argv[0], MAXN);
        return 2;
    }
    for (i = 0; i < n; i++) {
        st[i].forward = fwd; st[i].backward = bwd;
        st[i].out_bytes = W * sizeof(float); st[i].tape_bytes = TW * sizeof(float);
        st[i].fwd_time = f_ms; st[i].bwd_time = 2 * f_ms;
    }
    for (i = 0; i < W; i++) { x0[i] = (float)(i % 13); gy[i] = 1.0f; }
    {   /* store-all on the plain backend: the reference */
        ckpt_backend be;
        ckpt_chain_desc cd;
        ckpt_chain *ch;
        ckpt_plan_desc pd;
        ckpt_cpu_backend_create(NULL, &be);
        memset(&cd, 0, sizeof cd);
        cd.stages = st; cd.n_stages = n; cd.input_bytes = sizeof x0; cd.backend = &be;
        ckpt_chain_create(&cd, &ch);
        memset(&pd, 0, sizeof pd);
        pd.policy = CKPT_POLICY_STORE_ALL;
        ckpt_chain_plan(ch, &pd, &sa);
        sa_ms = run(ch, steps, ref, n);
        ckpt_chain_destroy(ch);
        ckpt_cpu_backend_destroy(&be);
    }
    printf("%d stages, fwd %.2f ms, bwd %.2f ms, output %zu B, tape %zu B; store-all: %.2f ms measured, %.2f predicted, "
           "peak %llu B\n\n", n, f_ms, 2 * f_ms, st[0].out_bytes, st[0].tape_bytes, sa_ms, sa.store_all_time,
           (unsigned long long)sa.store_all_peak);
    printf("%5s %6s %10s | %-27s | %-34s | %s\n", "mem", "link", "GB/s", "optimal: pred x  meas x  grads",
           "offload: pred x  meas x  grads  O", "host B");
    for (fi = 0; fi < (int)(sizeof fracs / sizeof fracs[0]); fi++) {
        for (li = 0; li < (int)(sizeof link / sizeof link[0]); li++) {
            /* one stage's output + tape one way in link[li] x (f + b) */
            double bytes = (double)(st[0].out_bytes + st[0].tape_bytes), bps = bytes / (link[li] * 3 * f_ms * 1e-3);
            double opt_ms = 0, off_ms = 0;   /* both set when both plans are feasible */
            int p;
            ckpt_plan_info oi, fi_;
            ckpt_backend be;
            ckpt_cpu_desc bd;
            memset(&bd, 0, sizeof bd);
            bd.copy_engine = 1; bd.copy_bandwidth = bps;
            ckpt_cpu_backend_create(&bd, &be);
            for (p = 0; p < 2; p++) {
                ckpt_chain_desc cd;
                ckpt_chain *ch;
                ckpt_plan_desc pd;
                ckpt_plan_info *info = p ? &fi_ : &oi;
                double ms;
                memset(&cd, 0, sizeof cd);
                cd.stages = st; cd.n_stages = n; cd.input_bytes = sizeof x0; cd.backend = &be;
                ckpt_chain_create(&cd, &ch);
                memset(&pd, 0, sizeof pd);
                pd.policy = p ? CKPT_POLICY_OFFLOAD : CKPT_POLICY_OPTIMAL;
                pd.budget = (uint64_t)(fracs[fi] * (double)sa.store_all_peak);
                pd.bandwidth = bps / 1e3;
                if (ckpt_chain_plan(ch, &pd, info) != CKPT_OK) { ckpt_chain_destroy(ch); info->time = -1; continue; }
                ms = run(ch, steps, got, n);
                if (p) off_ms = ms; else opt_ms = ms;
                info->unit = memcmp(got, ref, (W + (size_t)n) * sizeof(float)) == 0;   /* unit: reused as "grads equal" */
                ckpt_chain_destroy(ch);
            }
            ckpt_cpu_backend_destroy(&be);
            if (oi.time < 0 || fi_.time < 0) { printf("%5.2f %6.2f infeasible\n", fracs[fi], link[li]); continue; }
            printf("%5.2f %6.2f %10.3f | %15.3f %7.3f  %-5s | %15.3f %7.3f  %-5s %2d | %llu\n", fracs[fi], link[li], bps / 1e9,
                   oi.time / sa.store_all_time, opt_ms / sa_ms, oi.unit ? "yes" : "NO", fi_.time / sa.store_all_time,
                   off_ms / sa_ms, fi_.unit ? "yes" : "NO", fi_.n_offloaded, (unsigned long long)fi_.host_peak);
        }
    }
    printf("\nmem: budget / store-all peak; link: one stage's output + tape, one way, over its fwd + bwd time.\n");
    streaming(n, steps, argc > 4 ? argv[4] : NULL);
    return 0;
}
