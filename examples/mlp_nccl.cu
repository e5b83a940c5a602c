/* mlp_nccl.cu -- data-parallel training of examples/mlp_cuda.cu's model on GPUs with NCCL.

   The GPU counterpart of examples/mlp_mpi.c. The model, its stages and its helpers are
   examples/mlp_cuda.cu's, included with MLP_CUDA_NO_MAIN (as bench/mlp_gpu_bench.cu does): a stack
   of transformer MLP blocks, one ckpt stage each, learning a fixed random teacher (MSE loss, SGD).

   One process, G GPUs (default: every visible one; --gpus G), one rank per GPU. The communicators
   come from ncclCommInitAll, so one GPU gives a single-rank communicator, which still runs the
   whole path (the hook, the events, ncclAllReduce, the wait, the division). Every rank builds the
   same model (same seed, same initial weights) on its GPU, with its own CUDA stream (the
   backend's compute stream), cuBLAS handle, chain and plan, and takes its shard of the global
   batch (rows split evenly; the targets are the teacher's on the whole batch, computed on every
   rank, so that the shards are exactly rows of the whole-batch run's data).

   How the all-reduce is made legal. NCCL wants every rank of a communicator to issue the same
   collectives in the same order, and a single thread that drives several GPUs must group its
   calls (ncclGroupStart/End), because a call may wait for the other ranks to arrive. The hook
   runs inside ckpt_backward, which ends with a host synchronize, so one thread running the ranks'
   backward sweeps one after the other could not issue rank 1's all-reduce of a stage before rank
   0's backward had returned: grouping would need the sweeps interleaved op by op, which the
   library does not expose. So this program runs one host thread per rank (NCCL's "one device
   per thread" model; no group calls needed then): each thread drives its own chain, and its
   gradient-ready hook (GRADIENT-READY HOOK in ckpt.h), called once per block in backward order
   L-1..0 (the same order on every rank: the same plan), records an event on the compute stream
   (args->stream), makes the rank's communicator stream wait for it (cudaStreamWaitEvent) and
   queues ncclAllReduce(sum, in place) of that block's gradients on the communicator stream; the
   blocks before it keep running their backward on the compute stream meanwhile. After
   ckpt_backward returns, the compute stream waits for the communicator stream (an event), the
   gradients are divided by G and the SGD step runs, all on the compute stream. The threads meet
   at a host barrier only outside the steps: to share rank 0's measured stage times (so that every
   rank plans the same schedule), and before and after the timed run with the all-reduce (so that
   the compute-only run that follows does not overlap it).

   Checks (exit status 1 if one fails):
   - after every step, the parameters are bit-identical on every rank (a 64-bit checksum of them);
   - step 1's all-reduced gradients equal a one-GPU run of the same model over the whole batch
     (store-all, on GPU 0, no NCCL), within a relative error of 1e-4 per tensor:
     max |g - ref| / max |ref| over each block's six tensors. Not bit for bit: the whole-batch run
     sums the rows in one order (cuBLAS and the column sums split the rows by the batch size), the
     ranks sum their shards and NCCL adds the sums, another order of float additions; the
     tolerance is looser than mlp_mpi's 1e-5 because cuBLAS may also split the reduction over rows
     differently for the two batch sizes;
   - step 1's local gradients under the checkpointed plan (optimal at --budget-frac of store-all's
     peak) are bit-identical to store-all's on the same rank (ckpt.h's promise, per rank).
   Then the time: the same steps with the hook off and no all-reduce (compute only; the ranks then
   drift apart, which is not checked) against the training steps; medians of the timed steps (the
   first is a warm-up), timed with events on rank 0's compute stream, and "all-reduce adds X ms
   per step (Y%)".

   Differences from mlp_cuda: no dropout (as in mlp_mpi: a rank's mask would have to be the
   whole-batch run's rows); parameters on the device (no --stream); no CUDA graphs (the hook is
   refused with graphs); one plan, not the policy table.

   Build: the CMake target mlp_nccl (when CUDA and NCCL are found), or from the repository root:
       nvcc -O2 -arch=sm_90 -I. examples/mlp_nccl.cu -o mlp_nccl -lcublas -lnccl
   Run:
       ./mlp_nccl [--gpus G] [--width C] [--depth L] [--batch N] [--steps S] [--lr LR] [--seed S]
                  [--budget-frac F] [--tf32]
   (--batch is the global batch: a multiple of G.) Exit status 0: every check passed; 1: one
   failed, or an error; 77: no usable GPU (skipped).
*/
#define MLP_CUDA_NO_MAIN
#include "mlp_cuda.cu"

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>
#include <nccl.h>

static const double grad_tolerance = 1e-4;  /* step 1's gradients against one GPU (printed) */

#define NCCL(call) nccl_result((call), #call, __FILE__, __LINE__)

static ckpt_result nccl_result(ncclResult_t r, const char *what, const char *file, int line)
{
    if (r == ncclSuccess) return CKPT_OK;
    fprintf(stderr, "%s:%d: %s: %s\n", file, line, what, ncclGetErrorString(r));
    return CKPT_ERR_BACKEND;
}

/* All G threads wait here until the last one arrives. */
class Barrier {
public:
    explicit Barrier(int n) : n_(n) {}
    void wait()
    {
        std::unique_lock<std::mutex> lock(mu_);
        long gen = gen_;
        if (++arrived_ == n_) { arrived_ = 0; gen_++; cv_.notify_all(); return; }
        cv_.wait(lock, [&] { return gen != gen_; });
    }
private:
    std::mutex mu_;
    std::condition_variable cv_;
    int n_, arrived_ = 0;
    long gen_ = 0;
};

/* What every rank shares: the configuration, the communicators, the results. */
typedef struct Shared {
    Config cfg;                 /* cfg.N: the global batch */
    int G, n_local;
    ncclComm_t *comms;          /* G, from ncclCommInitAll */
    Barrier *barrier;
    double fwd_ms, bwd_ms, bwd_extra_ms;    /* rank 0's measured block: every rank plans with it */
    uint64_t *sums;             /* G x steps: parameter checksums after each step */
    int *local_same;            /* G: checkpointed vs store-all bit-identical on that rank */
    double grad_err;            /* rank 0: step 1 against the one-GPU whole-batch run */
    double ms_ar, ms_c, loss_ar;    /* rank 0: medians with and without the all-reduce; final loss */
    uint64_t peak, store_all_peak;
    int *hooks_bad;             /* G: the hook not called once per block in step 1 */
} Shared;

/* One rank's hook state. */
typedef struct Reducer {
    Model *m;
    ncclComm_t comm;
    cudaStream_t comm_stream;
    cudaEvent_t ready;          /* recorded on the compute stream in the hook (reused: each wait
                                   takes the latest record) */
    cudaEvent_t done;           /* recorded on the comm stream after the step's last all-reduce */
    int started;                /* all-reduces queued this step */
} Reducer;

/* The gradient-ready hook: block args->stage's gradients are final once the compute stream's
   work so far is done; queue their sum over the ranks on the communicator stream after it. */
static ckpt_result grads_ready(const ckpt_grads_ready_args *args)
{
    Reducer *rd = (Reducer *)args->user;
    if (args->in_host_grads) return CKPT_ERR_BAD_ARGUMENT;     /* no streaming here */
    float *g = rd->m->g[args->stage].ln_g;                      /* the block's flat gradients */
    TRY(CU(cudaEventRecord(rd->ready, (cudaStream_t)args->stream)));
    TRY(CU(cudaStreamWaitEvent(rd->comm_stream, rd->ready, 0)));
    TRY(NCCL(ncclAllReduce(g, g, rd->m->block_floats, ncclFloat, ncclSum, rd->comm, rd->comm_stream)));
    rd->started++;
    return CKPT_OK;
}

__global__ static void scale_kernel(float *p, float s, size_t n)
{
    GRID_STRIDE(i, n) p[i] *= s;
}

/* The whole batch on this rank's GPU: x, the teacher's targets, scratch. */
typedef struct Global {
    Model teacher;              /* n_global rows */
    Batch b;
} Global;

/* The next global batch (the same on every rank: one data stream), the teacher's targets for it,
   and this rank's rows into ss->batch. */
static void next_batch(Session *ss, Global *gl, Rng *data, int rank)
{
    cudaStream_t s = ss->stream;
    const size_t C = (size_t)ss->cfg.C, nc = (size_t)ss->cfg.N * C;
    CHECK(randn(&ss->be, data, gl->b.x, (size_t)gl->teacher.N * C, 0.0f, 1.0f, s));
    CHECK(teacher_forward(&gl->teacher, &gl->b, s));
    CHECK(CU(cudaMemcpyAsync(ss->batch.x, gl->b.x + (size_t)rank * nc, nc * sizeof(float),
                             cudaMemcpyDeviceToDevice, s)));
    CHECK(CU(cudaMemcpyAsync(ss->batch.target, gl->b.target + (size_t)rank * nc, nc * sizeof(float),
                             cudaMemcpyDeviceToDevice, s)));
}

static ckpt_chain *make_chain(const ckpt_stage_desc *stages, int L, size_t input_bytes, ckpt_backend *be,
                              uint64_t seed, Reducer *rd)
{
    ckpt_chain_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.stages = stages;
    cd.n_stages = L;
    cd.input_bytes = input_bytes;
    cd.backend = be;
    cd.seed = seed;
    cd.logger.fn = log_errors;
    if (rd) {
        cd.grads_ready = grads_ready;
        cd.grads_ready_user = rd;
    }
    ckpt_chain *chain;
    CHECK(ckpt_chain_create(&cd, &chain));
    return chain;
}

/* One forward and backward of the chain on b (gradients zeroed first), on stream s. With rd:
   then the compute stream waits for the all-reduces and the sums become means over G ranks. */
static void step_grads(ckpt_chain *chain, Model *m, Batch *b, cudaStream_t s, Reducer *rd, int G)
{
    const size_t n = (size_t)m->N * m->C;
    CHECK(CU(cudaMemsetAsync(m->grads, 0, m->n_params * sizeof(float), s)));
    const void *out;
    CHECK(ckpt_forward(chain, b->x, &out));
    CHECK(mse((const float *)out, b, n, s));
    CHECK(ckpt_backward(chain, b->dy, b->dx));
    if (!rd) return;
    CHECK(CU(cudaEventRecord(rd->done, rd->comm_stream)));
    CHECK(CU(cudaStreamWaitEvent(s, rd->done, 0)));
    scale_kernel<<<blocks_for(m->n_params), THREADS, 0, s>>>(m->grads, 1.0f / (float)G, m->n_params);
    CHECK(LAUNCHED(scale_kernel));
}

static float *grads_to_host(const Model *m, cudaStream_t s)
{
    float *h = (float *)xcalloc(m->n_params, sizeof(float));
    CHECK(CU(cudaStreamSynchronize(s)));
    CHECK(CU(cudaMemcpy(h, m->grads, m->n_params * sizeof(float), cudaMemcpyDeviceToHost)));
    return h;
}

/* Rank 0: step 1's gradients of the same model over the whole batch on this GPU (store-all). */
static float *reference_grads(Session *ss, Global *gl)
{
    const Config *cfg = &ss->cfg;
    const int n_global = gl->teacher.N;
    Model ref;
    model_create(&ref, cfg->C, cfg->L, n_global, 0.0f, 1, ss->blas);
    CHECK(CU(cudaMemcpy(ref.params, ss->init, ref.n_params * sizeof(float), cudaMemcpyDeviceToDevice)));
    ckpt_stage_desc *st = (ckpt_stage_desc *)xcalloc((size_t)cfg->L, sizeof *st);
    for (int l = 0; l < cfg->L; l++) {
        st[l] = ss->stages[l];
        st[l].user = &ref;
        st[l].out_bytes = (size_t)n_global * ref.C * sizeof(float);
        st[l].tape_bytes = ref.tape_bytes[0];
        st[l].bwd_workspace_bytes = ref.ws_bytes;
        if (st[l].n_tape_options) {
            st[l].tape_options[0].tape_bytes = ref.tape_bytes[1];
            st[l].fwd_workspace_bytes = ref.fws_bytes;
        }
    }
    const size_t nc = (size_t)n_global * ref.C;
    Batch b;
    memset(&b, 0, sizeof b);
    b.x = gl->b.x;
    b.target = gl->b.target;
    b.dy = (float *)dev_alloc(nc * sizeof(float));
    b.dx = (float *)dev_alloc(nc * sizeof(float));
    b.loss_part = (double *)dev_alloc(LOSS_BLOCKS * sizeof(double));
    b.loss = (double *)dev_alloc(sizeof(double));
    ckpt_chain *chain = make_chain(st, ref.L, nc * sizeof(float), &ss->be, cfg->seed, NULL);
    ckpt_plan_desc pd;
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_STORE_ALL;
    CHECK(ckpt_chain_plan(chain, &pd, NULL));
    step_grads(chain, &ref, &b, ss->stream, NULL, 1);
    float *g = grads_to_host(&ref, ss->stream);
    ckpt_chain_destroy(chain);
    CHECK(CU(cudaFree(b.dy))); CHECK(CU(cudaFree(b.dx)));
    CHECK(CU(cudaFree(b.loss_part))); CHECK(CU(cudaFree(b.loss)));
    free(st);
    model_destroy(&ref);
    return g;
}

/* max |g - r| / max |r| over each tensor of each block (padding excluded); the largest. */
static double max_rel_error(const Model *m, const float *g, const float *r)
{
    const size_t C = (size_t)m->C, H = (size_t)m->H;
    const size_t sizes[6] = { C, C, H * C, H, C * H, C };
    double worst = 0.0;
    for (int l = 0; l < m->L; l++) {
        size_t off = (size_t)l * m->block_floats;
        for (int t = 0; t < 6; t++) {
            double diff = 0.0, mag = 0.0;
            for (size_t i = off; i < off + sizes[t]; i++) {
                double d = fabs((double)g[i] - r[i]), a = fabs((double)r[i]);
                if (d > diff) diff = d;
                if (a > mag) mag = a;
            }
            double e = mag > 0.0 ? diff / mag : diff;
            if (e > worst) worst = e;
            off += pad64(sizes[t]);     /* carve's layout */
        }
    }
    return worst;
}

/* Trains cfg.steps steps from the initial weights on the same batches (the data stream restarts);
   rd NULL: compute only. Step times (events on the compute stream) into ms; with rd, parameter
   checksums after each step into sums. Returns the last step's local loss. */
static double train_steps(Session *ss, Global *gl, const ckpt_plan_desc *pd, Reducer *rd, int rank, int G,
                          float *ms, uint64_t *sums)
{
    Model *m = &ss->model;
    cudaStream_t s = ss->stream;
    const size_t nc = (size_t)m->N * m->C;
    CHECK(CU(cudaMemcpyAsync(m->params, ss->init, m->n_params * sizeof(float), cudaMemcpyDeviceToDevice, s)));
    Rng data = { ss->cfg.seed ^ 0xda7aULL, 0 };
    ckpt_chain *chain = make_chain(ss->stages, m->L, nc * sizeof(float), &ss->be, ss->cfg.seed, rd);
    CHECK(ckpt_chain_plan(chain, pd, NULL));
    cudaEvent_t ev[2];
    CHECK(CU(cudaEventCreate(&ev[0])));
    CHECK(CU(cudaEventCreate(&ev[1])));
    float *host = sums ? (float *)xcalloc(m->n_params, sizeof(float)) : NULL;
    double loss = 0.0;
    for (int step = 0; step < ss->cfg.steps; step++) {
        next_batch(ss, gl, &data, rank);
        CHECK(CU(cudaEventRecord(ev[0], s)));
        if (rd) rd->started = 0;
        step_grads(chain, m, &ss->batch, s, rd, G);
        sgd_kernel<<<blocks_for(m->n_params), THREADS, 0, s>>>(m->params, m->grads, ss->cfg.lr, m->n_params);
        CHECK(LAUNCHED(sgd_kernel));
        CHECK(CU(cudaEventRecord(ev[1], s)));
        CHECK(CU(cudaEventSynchronize(ev[1])));
        CHECK(CU(cudaEventElapsedTime(&ms[step], ev[0], ev[1])));
        if (rd && rd->started != m->L) {
            fprintf(stderr, "error: rank %d step %d: the hook queued %d all-reduces, expected %d\n", rank, step + 1,
                    rd->started, m->L);
            exit(1);
        }
        CHECK(CU(cudaMemcpy(&loss, ss->batch.loss, sizeof(double), cudaMemcpyDeviceToHost)));
        if (sums) {
            CHECK(CU(cudaMemcpy(host, m->params, m->n_params * sizeof(float), cudaMemcpyDeviceToHost)));
            sums[step] = ckpt_checksum(host, m->n_params * sizeof(float));
        }
    }
    free(host);
    CHECK(CU(cudaEventDestroy(ev[0])));
    CHECK(CU(cudaEventDestroy(ev[1])));
    ckpt_chain_destroy(chain);
    return loss;
}

static void rank_main(Shared *sh, int rank)
{
    Config cfg = sh->cfg;
    const int n_global = cfg.N, G = sh->G;
    cfg.N = sh->n_local;
    cfg.device = rank;
    Session ss;
    session_open(&ss, &cfg, "mlp_nccl");
    Model *m = &ss.model;
    const size_t nc = (size_t)cfg.N * cfg.C, ngc = (size_t)n_global * cfg.C;

    /* rank 0's measured block for every rank: the same stage times, the same plan */
    if (rank == 0) { sh->fwd_ms = ss.fwd_ms; sh->bwd_ms = ss.bwd_ms; sh->bwd_extra_ms = ss.bwd_extra_ms; }
    sh->barrier->wait();
    for (int l = 0; l < cfg.L; l++) {
        ss.stages[l].fwd_time = sh->fwd_ms;
        ss.stages[l].bwd_time = sh->bwd_ms;
        if (ss.stages[l].n_tape_options) ss.stages[l].tape_options[0].bwd_extra = sh->bwd_extra_ms;
    }

    Global gl;
    memset(&gl, 0, sizeof gl);
    model_create(&gl.teacher, cfg.C, cfg.L, n_global, 0.0f, 0, ss.blas);
    Rng teacher_rng = { cfg.seed + 1, 0 };
    model_init(&gl.teacher, &ss.be, &teacher_rng, 1.0f, 0.1f, ss.stream);     /* mlp_cuda's teacher */
    gl.b.x = (float *)dev_alloc(ngc * sizeof(float));
    gl.b.target = (float *)dev_alloc(ngc * sizeof(float));
    gl.b.tmp[0] = (float *)dev_alloc(ngc * sizeof(float));
    gl.b.tmp[1] = (float *)dev_alloc(ngc * sizeof(float));
    gl.b.tape = dev_alloc(gl.teacher.tape_bytes[0]);

    /* The plan: optimal at budget_frac of store-all's peak. */
    ckpt_plan_desc pd, all;
    memset(&pd, 0, sizeof pd);
    memset(&all, 0, sizeof all);
    all.policy = CKPT_POLICY_STORE_ALL;
    pd.policy = CKPT_POLICY_OPTIMAL;
    ckpt_plan_info info;
    {
        ckpt_chain *chain = make_chain(ss.stages, cfg.L, nc * sizeof(float), &ss.be, cfg.seed, NULL);
        CHECK(ckpt_chain_plan_dry(chain, &all, &info));
        pd.budget = (uint64_t)(cfg.budget_frac * (double)info.store_all_peak) + 1;
        CHECK(ckpt_chain_plan_dry(chain, &pd, &info));
        ckpt_chain_destroy(chain);
    }
    if (rank == 0) { sh->peak = info.peak; sh->store_all_peak = info.store_all_peak; }

    /* Step 1, local: the checkpointed plan's gradients against store-all's, bit for bit. */
    {
        float *g[2];
        for (int k = 0; k < 2; k++) {
            CHECK(CU(cudaMemcpyAsync(m->params, ss.init, m->n_params * sizeof(float), cudaMemcpyDeviceToDevice,
                                     ss.stream)));
            Rng data = { cfg.seed ^ 0xda7aULL, 0 };
            next_batch(&ss, &gl, &data, rank);
            ckpt_chain *chain = make_chain(ss.stages, cfg.L, nc * sizeof(float), &ss.be, cfg.seed, NULL);
            CHECK(ckpt_chain_plan(chain, k == 0 ? &all : &pd, NULL));
            step_grads(chain, m, &ss.batch, ss.stream, NULL, G);
            g[k] = grads_to_host(m, ss.stream);
            ckpt_chain_destroy(chain);
        }
        sh->local_same[rank] = memcmp(g[0], g[1], m->n_params * sizeof(float)) == 0;
        free(g[0]); free(g[1]);
    }

    Reducer rd;
    memset(&rd, 0, sizeof rd);
    rd.m = m;
    rd.comm = sh->comms[rank];
    CHECK(CU(cudaStreamCreateWithFlags(&rd.comm_stream, cudaStreamNonBlocking)));
    CHECK(CU(cudaEventCreateWithFlags(&rd.ready, cudaEventDisableTiming)));
    CHECK(CU(cudaEventCreateWithFlags(&rd.done, cudaEventDisableTiming)));

    /* Step 1 with the all-reduce against one GPU over the whole batch. */
    {
        CHECK(CU(cudaMemcpyAsync(m->params, ss.init, m->n_params * sizeof(float), cudaMemcpyDeviceToDevice,
                                 ss.stream)));
        Rng data = { cfg.seed ^ 0xda7aULL, 0 };
        next_batch(&ss, &gl, &data, rank);
        ckpt_chain *chain = make_chain(ss.stages, cfg.L, nc * sizeof(float), &ss.be, cfg.seed, &rd);
        CHECK(ckpt_chain_plan(chain, &pd, NULL));
        rd.started = 0;
        step_grads(chain, m, &ss.batch, ss.stream, &rd, G);
        sh->hooks_bad[rank] = rd.started != cfg.L;
        float *g = grads_to_host(m, ss.stream);
        ckpt_chain_destroy(chain);
        if (rank == 0) {    /* the batch on this GPU is still step 1's */
            float *ref = reference_grads(&ss, &gl);
            sh->grad_err = max_rel_error(m, g, ref);
            free(ref);
        }
        free(g);
    }

    /* Training with the all-reduce, then compute only, from the same weights and data. */
    float *ms_ar = (float *)xcalloc((size_t)cfg.steps, sizeof(float));
    float *ms_c = (float *)xcalloc((size_t)cfg.steps, sizeof(float));
    sh->barrier->wait();    /* rank 0's reference is done: the steps start together */
    double loss = train_steps(&ss, &gl, &pd, &rd, rank, G, ms_ar, sh->sums + (size_t)rank * cfg.steps);
    sh->barrier->wait();    /* every rank's all-reduced run is done before the compute-only runs */
    train_steps(&ss, &gl, &pd, NULL, rank, G, ms_c, NULL);
    if (rank == 0) {
        sh->ms_ar = median(ms_ar + 1, cfg.steps - 1);
        sh->ms_c = median(ms_c + 1, cfg.steps - 1);
        sh->loss_ar = loss;
    }
    free(ms_ar); free(ms_c);

    CHECK(CU(cudaStreamSynchronize(rd.comm_stream)));
    CHECK(CU(cudaEventDestroy(rd.ready)));
    CHECK(CU(cudaEventDestroy(rd.done)));
    CHECK(CU(cudaStreamDestroy(rd.comm_stream)));
    CHECK(CU(cudaFree(gl.b.x))); CHECK(CU(cudaFree(gl.b.target)));
    CHECK(CU(cudaFree(gl.b.tmp[0]))); CHECK(CU(cudaFree(gl.b.tmp[1]))); CHECK(CU(cudaFree(gl.b.tape)));
    model_destroy(&gl.teacher);
    session_close(&ss);
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--gpus G] [--width C] [--depth L] [--batch N] [--steps S] [--lr LR] [--seed S]\n"
            "          [--budget-frac F] [--tf32]\n"
            "defaults: --gpus (every visible GPU) --width 256 --depth 8 --batch 1024 (global: a multiple\n"
            "          of G) --steps 10 (the first a warm-up) --lr 0.1 --seed 42 --budget-frac 0.4\n"
            "          (of store-all's peak); FP32 GEMMs (--tf32: TF32 tensor cores)\n",
            prog);
    exit(2);
}

int main(int argc, char **argv)
{
    Config cfg = default_config();
    cfg.C = 256; cfg.L = 8; cfg.N = 1024; cfg.steps = 10; cfg.p_drop = 0.0f;
    int G = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--tf32")) { cfg.tf32 = 1; continue; }
        if (i + 1 >= argc) usage(argv[0]);
        const char *v = argv[++i];
        if (!strcmp(a, "--gpus")) G = atoi(v);
        else if (!strcmp(a, "--width")) cfg.C = atoi(v);
        else if (!strcmp(a, "--depth")) cfg.L = atoi(v);
        else if (!strcmp(a, "--batch")) cfg.N = atoi(v);
        else if (!strcmp(a, "--steps")) cfg.steps = atoi(v);
        else if (!strcmp(a, "--lr")) cfg.lr = (float)atof(v);
        else if (!strcmp(a, "--seed")) cfg.seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--budget-frac")) cfg.budget_frac = atof(v);
        else usage(argv[0]);
    }
    if (!config_ok(&cfg) || cfg.steps < 2 || G < 0) usage(argv[0]);

    int count = 0;
    ckpt_result r = ckpt_cuda_device_count(&count);
    if (r == CKPT_ERR_NO_DEVICE) exit_no_gpu("mlp_nccl", r);
    CHECK(r);
    if (G == 0) G = count;
    if (G > count) {
        fprintf(stderr, "mlp_nccl: --gpus %d but %d GPU(s) visible\n", G, count);
        return 2;
    }
    if (cfg.N < G || cfg.N % G) usage(argv[0]);

    Shared sh;
    memset(&sh, 0, sizeof sh);
    sh.cfg = cfg;
    sh.G = G;
    sh.n_local = cfg.N / G;
    sh.comms = (ncclComm_t *)xcalloc((size_t)G, sizeof(ncclComm_t));
    std::vector<int> devs((size_t)G);
    for (int i = 0; i < G; i++) devs[(size_t)i] = i;
    CHECK(NCCL(ncclCommInitAll(sh.comms, G, devs.data())));
    Barrier barrier(G);
    sh.barrier = &barrier;
    sh.sums = (uint64_t *)xcalloc((size_t)G * cfg.steps, sizeof(uint64_t));
    sh.local_same = (int *)xcalloc((size_t)G, sizeof(int));
    sh.hooks_bad = (int *)xcalloc((size_t)G, sizeof(int));

    std::vector<std::thread> threads;
    for (int rank = 0; rank < G; rank++) threads.emplace_back(rank_main, &sh, rank);
    for (auto &t : threads) t.join();

    int failed = 0, differ = 0, local_all = 1, hooks_bad = 0;
    for (int rank = 0; rank < G; rank++) {
        local_all &= sh.local_same[rank];
        hooks_bad |= sh.hooks_bad[rank];
    }
    for (int s = 0; s < cfg.steps; s++)
        for (int rank = 1; rank < G; rank++)
            if (sh.sums[(size_t)rank * cfg.steps + s] != sh.sums[s]) {
                differ++;
                fprintf(stderr, "error: step %d: rank %d's parameters differ from rank 0's (checksums %016llx, "
                        "%016llx)\n", s + 1, rank, (unsigned long long)sh.sums[(size_t)rank * cfg.steps + s],
                        (unsigned long long)sh.sums[s]);
                break;
            }
    int grad_ok = sh.grad_err <= grad_tolerance;
    failed = !local_all || differ || !grad_ok || hooks_bad;

    cudaDeviceProp prop;
    CHECK(CU(cudaGetDeviceProperties(&prop, 0)));
    int nccl_version = 0;
    CHECK(NCCL(ncclGetVersion(&nccl_version)));
    printf("%d GPU(s) (%s on rank 0), NCCL %d, one thread per rank; %d rows each (global batch %d), %d blocks "
           "of width %d; optimal plan at %.2f of store-all's peak: %llu of %llu bytes; %s GEMMs\n",
           G, prop.name, nccl_version, sh.n_local, cfg.N, cfg.L, cfg.C, cfg.budget_frac,
           (unsigned long long)sh.peak, (unsigned long long)sh.store_all_peak, cfg.tf32 ? "TF32" : "FP32");
    printf("step 1 local gradients, optimal plan vs store-all: %s on every rank\n",
           local_all ? "bit-identical" : "DIFFERENT");
    printf("step 1 gradients, %d ranks (all-reduced mean) vs one GPU over the whole batch: max relative error "
           "%.3e per tensor (tolerance %.0e: float sums in another order) %s\n",
           G, sh.grad_err, grad_tolerance, grad_ok ? "ok" : "FAILED");
    if (hooks_bad) printf("error: the hook was not called once per block\n");
    printf("parameters bit-identical across ranks after each of %d steps: %s; final loss (rank 0's shard) %.6e\n",
           cfg.steps, differ ? "NO" : "yes", sh.loss_ar);
    printf("step time (rank 0, median of %d after a warm-up): with all-reduce %.3f ms, compute only %.3f ms\n",
           cfg.steps - 1, sh.ms_ar, sh.ms_c);
    printf("all-reduce adds %.3f ms per step (%.1f%%)\n", sh.ms_ar - sh.ms_c, 100.0 * (sh.ms_ar - sh.ms_c) / sh.ms_c);

    for (int i = 0; i < G; i++) CHECK(NCCL(ncclCommDestroy(sh.comms[i])));
    free(sh.comms); free(sh.sums); free(sh.local_same); free(sh.hooks_bad);
    return failed ? 1 : 0;
}
