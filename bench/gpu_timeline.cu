/* gpu_timeline.cu -- one training step of examples/mlp_cuda.cu's model on the GPU's own clock.

   Wraps the CUDA backend's vtable so that every scheduled op is timed with CUDA events where it
   runs: each F and B op between two events on the compute stream (the executor's range_push and
   range_pop around the op), and each copy the library issues (offload's O and P, parameter loads,
   gradient stores) between two events on the stream it was issued on. The model, its kernels and
   the measured stage times are mlp_cuda.cu's (included with MLP_CUDA_NO_MAIN). After --warmup
   unrecorded steps it records one step and prints (an F or B op's interval starts where the
   compute stream reaches the op, so it includes the op's waits for the copies it needs):
     - one line per op: lane, label, start and end in ms from the step's first event, length;
     - per lane: busy time, and for the copy lanes the part of it that overlaps compute ops;
     - the makespan of the chain's ops (first F start to last B end, less the loss between
       ckpt_forward and ckpt_backward) beside the plan's predicted step time (ckpt_plan_info.time),
       and the compute lane's idle time inside it.
   With --trace FILE it also writes the step as Chrome trace JSON (Perfetto, chrome://tracing):
   one complete event ("ph":"X") per op, one thread per lane.

   Build (from the repository root):
       nvcc -O2 -arch=sm_90 -I. bench/gpu_timeline.cu -o gpu_timeline -lcublas
   Run:
       ./gpu_timeline [model flags of mlp_cuda: --width --depth --batch --dropout --seed --tf32
                       --no-options --check-recompute]
                      [--policy store-all|every-k|sqrt|greedy|optimal|offload] [--budget-frac F]
                      [--bandwidth GB_PER_S] [--stream [--grads-early] [--grads-overwrite]]
                      [--warmup W] [--trace FILE]
   Exit status 0; 1 on an error; 77 when there is no usable GPU (skipped).
*/
#define MLP_CUDA_NO_MAIN
#include "../examples/mlp_cuda.cu"

enum { LANE_COMPUTE, LANE_H2D, LANE_D2H, N_LANES };
static const char *lane_names[N_LANES] = { "compute", "copy h2d", "copy d2h" };

typedef struct TlOp {
    char label[48];
    int lane;
    size_t bytes;
    cudaEvent_t a, b;
    float t0, t1;               /* ms from the step's first event */
} TlOp;

/* The recorder: a global, since the wrapped vtable entries get the inner backend's state. */
static struct {
    ckpt_backend inner;
    cudaStream_t compute;
    int recording;
    TlOp *ops;
    int n, cap;
    char range[48];             /* the executor's current op label ("" outside one) */
    int fb_open;                /* an F or B op's start event is recorded */
} g_tl;

static TlOp *tl_new(const char *label, int lane, size_t bytes)
{
    if (g_tl.n == g_tl.cap) {
        int cap = g_tl.cap ? 2 * g_tl.cap : 256;
        TlOp *ops = (TlOp *)realloc(g_tl.ops, (size_t)cap * sizeof *ops);
        if (!ops) { fprintf(stderr, "out of host memory\n"); exit(1); }
        g_tl.ops = ops;
        g_tl.cap = cap;
    }
    TlOp *o = &g_tl.ops[g_tl.n++];
    memset(o, 0, sizeof *o);
    snprintf(o->label, sizeof o->label, "%s", label);
    o->lane = lane;
    o->bytes = bytes;
    CHECK(CU(cudaEventCreate(&o->a)));
    CHECK(CU(cudaEventCreate(&o->b)));
    return o;
}

static void tl_range_push(void *state, const char *label)
{
    (void)state;
    snprintf(g_tl.range, sizeof g_tl.range, "%s", label);
    g_tl.fb_open = 0;
    if (g_tl.recording && (label[0] == 'F' || label[0] == 'B')) {
        TlOp *o = tl_new(label, LANE_COMPUTE, 0);
        CHECK(CU(cudaEventRecord(o->a, g_tl.compute)));
        g_tl.fb_open = 1;
    }
}

static void tl_range_pop(void *state)
{
    (void)state;
    if (g_tl.recording && g_tl.fb_open) CHECK(CU(cudaEventRecord(g_tl.ops[g_tl.n - 1].b, g_tl.compute)));
    g_tl.fb_open = 0;
    g_tl.range[0] = 0;
}

static ckpt_result tl_copy_async(void *state, void *dst, const void *src, size_t bytes, ckpt_copy_kind kind, void *stream)
{
    if (!g_tl.recording) return g_tl.inner.copy_async(state, dst, src, bytes, kind, stream);
    cudaStream_t s = stream ? (cudaStream_t)stream : g_tl.compute;
    int lane = !stream ? LANE_COMPUTE : kind == CKPT_COPY_HOST_TO_DEVICE ? LANE_H2D : LANE_D2H;
    char label[48];
    if (g_tl.range[0] == 'O' || g_tl.range[0] == 'P')      /* offload's copy op: "O T3", "P X5" */
        snprintf(label, sizeof label, "%s", g_tl.range);
    else                                                   /* streaming, inside F/B op "F3+ mlp" */
        snprintf(label, sizeof label, "%s %.12s", kind == CKPT_COPY_HOST_TO_DEVICE ? "load" : "store", g_tl.range);
    /* an F/B op's copies are not part of its compute interval: pop the F/B event pair around them */
    TlOp *o = tl_new(label, lane, bytes);
    CHECK(CU(cudaEventRecord(o->a, s)));
    ckpt_result r = g_tl.inner.copy_async(state, dst, src, bytes, kind, stream);
    CHECK(CU(cudaEventRecord(o->b, s)));
    if (g_tl.fb_open) {         /* keep the open F/B op last: it is closed by range_pop */
        TlOp tmp = g_tl.ops[g_tl.n - 1];
        g_tl.ops[g_tl.n - 1] = g_tl.ops[g_tl.n - 2];
        g_tl.ops[g_tl.n - 2] = tmp;
    }
    return r;
}

static int cmp_interval(const void *a, const void *b)
{
    const float *x = (const float *)a, *y = (const float *)b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Length of [a, b) covered by the union of the sorted intervals iv[0..n) (pairs). */
static double covered(const float *iv, int n, double a, double b)
{
    double c = 0, lo, hi;
    for (int i = 0; i < n; i++) {
        lo = iv[2 * i] > a ? iv[2 * i] : a;
        hi = iv[2 * i + 1] < b ? iv[2 * i + 1] : b;
        if (hi > lo) c += hi - lo;
    }
    return c;
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if ((unsigned char)*s >= 0x20) fputc(*s, f);
    }
    fputc('"', f);
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--width C] [--depth L] [--batch N] [--dropout P] [--seed S] [--tf32] [--no-options]\n"
            "          [--check-recompute] [--policy store-all|every-k|sqrt|greedy|optimal|offload]\n"
            "          [--budget-frac F] [--bandwidth GB_PER_S] [--stream [--grads-early] [--grads-overwrite]]\n"
            "          [--warmup W] [--trace FILE]\n", prog);
    exit(2);
}

int main(int argc, char **argv)
{
    (void)train; (void)train_store_all; (void)run_free; (void)same_grads; (void)run_name;  /* for mlp_cuda's other includers */
    Config cfg = default_config();
    const char *trace = NULL, *policy_name = "optimal";
    int warmup = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (parse_model_switch(&cfg, a)) continue;
        if (i + 1 >= argc) usage(argv[0]);
        const char *v = argv[++i];
        if (parse_model_flag(&cfg, a, v)) continue;
        if (!strcmp(a, "--policy")) policy_name = v;
        else if (!strcmp(a, "--warmup")) warmup = atoi(v);
        else if (!strcmp(a, "--trace")) trace = v;
        else if (!strcmp(a, "--budget-frac")) cfg.budget_frac = atof(v);
        else usage(argv[0]);
    }
    ckpt_policy policy;
    if (!strcmp(policy_name, "store-all")) policy = CKPT_POLICY_STORE_ALL;
    else if (!strcmp(policy_name, "every-k")) policy = CKPT_POLICY_EVERY_K;
    else if (!strcmp(policy_name, "sqrt")) policy = CKPT_POLICY_SQRT;
    else if (!strcmp(policy_name, "greedy")) policy = CKPT_POLICY_GREEDY;
    else if (!strcmp(policy_name, "optimal")) policy = CKPT_POLICY_OPTIMAL;
    else if (!strcmp(policy_name, "offload")) policy = CKPT_POLICY_OFFLOAD;
    else usage(argv[0]);
    if (!config_ok(&cfg) || cfg.graphs || warmup < 0 || (policy == CKPT_POLICY_OFFLOAD && cfg.bandwidth_gbs <= 0)) usage(argv[0]);

    Session ss;
    session_open(&ss, &cfg, "gpu_timeline");
    Model *m = &ss.model;
    Batch *b = &ss.batch;
    cudaStream_t s = ss.stream;
    size_t nc = (size_t)m->N * m->C, param_bytes = m->n_params * sizeof(float);

    /* the wrapped backend: the CUDA backend's entries and state, three of them recorded */
    g_tl.inner = ss.be;
    g_tl.compute = s;
    ckpt_backend wrapped = ss.be;
    wrapped.range_push = tl_range_push;
    wrapped.range_pop = tl_range_pop;
    wrapped.copy_async = tl_copy_async;

    ckpt_chain_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.stages = ss.stages;
    cd.n_stages = m->L;
    cd.input_bytes = nc * sizeof(float);
    cd.backend = &wrapped;
    cd.seed = cfg.seed;
    cd.logger.fn = ckpt_log_stderr;
    cd.check_recompute = cfg.check_recompute;
    cd.stream_grads_early = cfg.grads_early;
    cd.stream_grads_overwrite = cfg.grads_overwrite;
    ckpt_chain *chain;
    CHECK(ckpt_chain_create(&cd, &chain));
    ckpt_plan_desc pd;
    ckpt_plan_info info;
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_STORE_ALL;
    CHECK(ckpt_chain_plan_dry(chain, &pd, &info));
    pd.policy = policy;
    if (policy != CKPT_POLICY_STORE_ALL) pd.budget = (uint64_t)(cfg.budget_frac * (double)info.peak) + 1;
    if (policy == CKPT_POLICY_OFFLOAD) pd.bandwidth = cfg.bandwidth_gbs * 1e9 / 1e3;
    CHECK(ckpt_chain_plan(chain, &pd, &info));

    cudaEvent_t step0, loss0, loss1;
    CHECK(CU(cudaEventCreate(&step0)));
    CHECK(CU(cudaEventCreate(&loss0)));
    CHECK(CU(cudaEventCreate(&loss1)));
    Rng data = { cfg.seed ^ 0xda7aULL, 0 };
    for (int step = 0; step <= warmup; step++) {
        CHECK(randn(&ss.be, &data, b->x, nc, 0.0f, 1.0f, s));
        CHECK(teacher_forward(&ss.teacher, b, s));
        if (!ss.host_grads) CHECK(CU(cudaMemsetAsync(m->grads, 0, param_bytes, s)));
        else if (!cfg.grads_overwrite) memset(ss.host_grads, 0, param_bytes);
        g_tl.recording = step == warmup;
        g_tl.n = 0;
        CHECK(CU(cudaEventRecord(step0, s)));
        const void *out;
        CHECK(ckpt_forward(chain, b->x, &out));
        CHECK(CU(cudaEventRecord(loss0, s)));
        CHECK(mse((const float *)out, b, nc, s));
        CHECK(CU(cudaEventRecord(loss1, s)));
        CHECK(ckpt_backward(chain, b->dy, b->dx));
        if (ss.host_params) host_sgd(ss.host_params, ss.host_grads, cfg.lr, m->n_params);
        else {
            sgd_kernel<<<blocks_for(m->n_params), THREADS, 0, s>>>(m->params, m->grads, cfg.lr, m->n_params);
            CHECK(LAUNCHED(sgd_kernel));
        }
        CHECK(CU(cudaStreamSynchronize(s)));
    }
    g_tl.recording = 0;

    /* times from the step's first event; the chain's ops span [first F, last B] less the loss */
    float loss_a, loss_b;
    CHECK(CU(cudaEventElapsedTime(&loss_a, step0, loss0)));
    CHECK(CU(cudaEventElapsedTime(&loss_b, step0, loss1)));
    double first = 1e30, last = 0, busy[N_LANES] = { 0 }, overlap[N_LANES] = { 0 };
    int count[N_LANES] = { 0 };
    float *iv = (float *)xcalloc(2 * (size_t)g_tl.n + 2, sizeof(float));
    int n_iv = 0;
    for (int i = 0; i < g_tl.n; i++) {
        TlOp *o = &g_tl.ops[i];
        CHECK(CU(cudaEventElapsedTime(&o->t0, step0, o->a)));
        CHECK(CU(cudaEventElapsedTime(&o->t1, step0, o->b)));
        if (o->t0 < first) first = o->t0;
        if (o->t1 > last) last = o->t1;
        busy[o->lane] += o->t1 - o->t0;
        count[o->lane]++;
        if (o->lane == LANE_COMPUTE) { iv[2 * n_iv] = o->t0; iv[2 * n_iv + 1] = o->t1; n_iv++; }
    }
    qsort(iv, (size_t)n_iv, 2 * sizeof(float), cmp_interval);
    for (int i = 0; i < g_tl.n; i++)
        if (g_tl.ops[i].lane != LANE_COMPUTE)
            overlap[g_tl.ops[i].lane] += covered(iv, n_iv, g_tl.ops[i].t0, g_tl.ops[i].t1);
    /* compute ops overlapping one another would mean the events are wrong */
    int overlapping = 0;
    for (int i = 1; i < n_iv; i++) overlapping += iv[2 * i] < iv[2 * i - 1] - 1e-3f;

    printf("%s, %s GEMMs; %d blocks of width %d, %d rows; policy %s at %llu bytes (store-all %llu)%s\n",
           "mlp_cuda model", cfg.tf32 ? "TF32" : "FP32", cfg.L, cfg.C, cfg.N, policy_name,
           (unsigned long long)pd.budget, (unsigned long long)info.store_all_peak, cfg.stream ? ", streamed parameters" : "");
    printf("%-8s %-24s %12s %10s %10s %10s\n", "lane", "op", "bytes", "start ms", "end ms", "ms");
    for (int i = 0; i < g_tl.n; i++) {
        const TlOp *o = &g_tl.ops[i];
        printf("%-8s %-24s %12zu %10.3f %10.3f %10.3f\n", lane_names[o->lane], o->label, o->bytes, o->t0, o->t1, o->t1 - o->t0);
    }
    double loss_ms = loss_b - loss_a, makespan = last - first - loss_ms;
    printf("\nlane       ops   busy ms   overlapping compute ms\n");
    for (int l = 0; l < N_LANES; l++)
        printf("%-9s %4d %9.3f %9.3f\n", lane_names[l], count[l], busy[l], l == LANE_COMPUTE ? busy[l] : overlap[l]);
    printf("\nmakespan of the chain's ops %.3f ms (loss %.3f ms excluded); predicted %.3f ms (compute %.3f): "
           "measured / predicted %.3f; compute lane idle %.3f ms; overlapping compute ops: %d\n",
           makespan, loss_ms, info.time, info.compute_time, makespan / info.time, makespan - busy[LANE_COMPUTE], overlapping);

    if (trace) {
        FILE *f = fopen(trace, "w");
        if (!f) { fprintf(stderr, "cannot write %s\n", trace); return 1; }
        fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
        for (int l = 0; l < N_LANES; l++)
            fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"%s\"}},\n", l, lane_names[l]);
        fprintf(f, "{\"name\":\"loss (outside the chain)\",\"ph\":\"X\",\"pid\":1,\"tid\":0,\"ts\":%.3f,\"dur\":%.3f}",
                loss_a * 1e3, (loss_b - loss_a) * 1e3);
        for (int i = 0; i < g_tl.n; i++) {
            const TlOp *o = &g_tl.ops[i];
            fprintf(f, ",\n{\"name\":");
            json_string(f, o->label);
            fprintf(f, ",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"bytes\":%zu}}", o->lane,
                    o->t0 * 1e3, (o->t1 - o->t0) * 1e3, o->bytes);
        }
        fprintf(f, "\n]}\n");
        fclose(f);
        printf("trace: %s\n", trace);
    }

    for (int i = 0; i < g_tl.n; i++) {
        CHECK(CU(cudaEventDestroy(g_tl.ops[i].a)));
        CHECK(CU(cudaEventDestroy(g_tl.ops[i].b)));
    }
    free(g_tl.ops);
    free(iv);
    CHECK(CU(cudaEventDestroy(step0)));
    CHECK(CU(cudaEventDestroy(loss0)));
    CHECK(CU(cudaEventDestroy(loss1)));
    ckpt_chain_destroy(chain);
    session_close(&ss);
    return overlapping ? 1 : 0;
}
