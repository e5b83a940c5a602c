/* mlp_mpi.c -- data-parallel training of examples/mlp_cpu.c's model with MPI, on the CPU.

   The model, its stages and its helpers are examples/mlp_cpu.c's, included with MLP_CPU_NO_MAIN
   (as bench/mlp_cpu_bench.c does): a stack of transformer MLP blocks, one ckpt stage each,
   learning a fixed random teacher (MSE loss, SGD). Here every rank builds the same model (same
   seed, same initial weights), takes its shard of a global batch (rows split evenly across the
   ranks), plans with checkpointing (the optimal policy at --budget-frac of store-all's peak, sized
   with ckpt_chain_plan_dry) and trains. The gradient-ready hook (GRADIENT-READY HOOK in ckpt.h)
   starts MPI_Iallreduce(MPI_IN_PLACE, ..., MPI_SUM) on each block's gradients as soon as its
   backward is done, while the blocks before it still run theirs; after ckpt_backward returns the
   program waits for every request (MPI_Waitall), divides by the number of ranks and takes the SGD
   step. (Open MPI progresses a non-blocking collective only inside MPI calls: the hook also calls
   MPI_Testall on the requests already started, to move them along.)

   Checks (exit status 1 if one fails, on every rank):
   - after every step, the parameters are bit-identical on every rank (a 64-bit checksum of them,
     MPI_Allreduce MIN and MAX must agree);
   - step 1's all-reduced gradients equal a single-process run of the same model over the whole
     batch (rank 0 runs it, store-all, no MPI), within a relative error of 1e-5 per tensor:
     max |g - ref| / max |ref| over each block's six tensors. Not bit for bit: the whole-batch run
     sums the rows' contributions in one order, the ranks sum their shards and MPI adds the sums,
     another order of float additions (about 1e-7 relative per addition);
   - step 1's local gradients under the checkpointed plan are bit-identical to store-all's on the
     same rank (ckpt.h's promise, per rank).
   Then the time: the same steps with the hook off and no all-reduce (compute only; the ranks then
   drift apart, which is not checked) against the training steps; medians of the timed steps (the
   first is a warm-up), wall and CPU time (CLOCK_PROCESS_CPUTIME_ID: Open MPI's waits spin, so
   they cost CPU time too), rank 0's, and "all-reduce adds X ms per step (Y%)".

   Differences from mlp_cpu: no dropout (each rank's mask would have to be the whole-batch run's
   rows, which the chain's per-stage random ranges do not give; a rank-dependent seed would break
   the comparison); the stage times are measured on rank 0 and broadcast, so every rank plans the
   same schedule; one thread per rank by default, and OpenMP's wait policy is left as it is
   (mlp_cpu re-executes itself for it, which an MPI process must not).

   Build: the CMake target mlp_mpi (when find_package(MPI) finds MPI for C), or from the repository
   root with Open MPI's wrapper:
       mpicc -std=c11 -O2 examples/mlp_mpi.c -o mlp_mpi -lm
   Run:
       mpirun --oversubscribe -np 2 ./mlp_mpi [--width C] [--depth L] [--batch N] [--steps S]
                 [--lr LR] [--seed S] [--budget-frac F] [--stream 0|1] [--threads T]
   (--batch is the global batch: a multiple of the number of ranks; as root add --allow-run-as-root)
*/
#define MLP_CPU_NO_MAIN
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"   /* mlp_cpu.c's table and option helpers */
#endif
#include "mlp_cpu.c"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#include <mpi.h>

#define MPI_CHECK(call)                                                                         \
    do {                                                                                        \
        int mpi_rc_ = (call);                                                                   \
        if (mpi_rc_ != MPI_SUCCESS) {                                                           \
            fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #call, mpi_rc_);     \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                       \
        }                                                                                       \
    } while (0)

static const double grad_tolerance = 1e-5;  /* step 1's gradients against one process (printed) */

/* What the hook needs: the model (where each block's gradients are), one request per stage. */
typedef struct Reducer {
    Model *m;
    MPI_Comm comm;
    MPI_Request *req;           /* L, MPI_REQUEST_NULL when not started this step */
    int started;                /* requests started this step */
} Reducer;

static size_t block_floats(const Model *m) { return m->n_params / (size_t)m->L; }

/* The gradient-ready hook: the stage's gradients are final; start their sum over the ranks. With
   --stream 1 they are in host_grads (in_host_grads), which are m->g[stage] here, as the stage's
   gradients are without streaming: one buffer either way. */
static ckpt_result grads_ready(const ckpt_grads_ready_args *args)
{
    Reducer *rd = args->user;
    const int l = args->stage;
    if (rd->req[l] != MPI_REQUEST_NULL) return CKPT_ERR_BAD_ARGUMENT;      /* twice in a step */
    if (MPI_Iallreduce(MPI_IN_PLACE, rd->m->g[l].ln_g, (int)block_floats(rd->m), MPI_FLOAT, MPI_SUM,
                       rd->comm, &rd->req[l]) != MPI_SUCCESS)
        return CKPT_ERR_CALLBACK;
    rd->started++;
    int done;
    MPI_Testall(rd->m->L, rd->req, &done, MPI_STATUSES_IGNORE);    /* progress only */
    return CKPT_OK;
}

typedef struct Shard {          /* the global batch and this rank's rows of it */
    Model teacher;              /* N_global rows: the targets of the whole batch */
    Batch full;                 /* x, target, tmp, tape of the whole batch */
    int rank, size, n_local;
    Rng data;
} Shard;

/* The next global batch and its targets; this rank's rows into b->x and b->target. */
static void next_batch(Shard *sh, Batch *b)
{
    const size_t C = (size_t)sh->teacher.C, nc = (size_t)sh->n_local * C;
    randn(&sh->data, sh->full.x, (size_t)sh->teacher.N * C, 0.0f, 1.0f);
    teacher_forward(&sh->teacher, &sh->full);
    memcpy(b->x, sh->full.x + (size_t)sh->rank * nc, nc * sizeof(float));
    memcpy(b->target, sh->full.target + (size_t)sh->rank * nc, nc * sizeof(float));
}

static ckpt_chain *make_chain(const ckpt_stage_desc *stages, int L, size_t input_bytes, ckpt_backend *be,
                              uint64_t seed, Reducer *rd)
{
    ckpt_chain_desc cd = {0};
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

/* One forward and backward of the chain on b (gradients zeroed first); returns the local loss. */
static double step_grads(ckpt_chain *chain, Model *m, Batch *b)
{
    memset(m->grads, 0, m->n_params * sizeof(float));
    const void *out;
    CHECK(ckpt_forward(chain, b->x, &out));
    double loss = mse(out, b->target, b->dy, m->N, m->C);
    CHECK(ckpt_backward(chain, b->dy, b->dx));
    return loss;
}

/* Waits for the step's all-reduces and makes the sums means. */
static void finish_allreduce(Reducer *rd, int size)
{
    MPI_CHECK(MPI_Waitall(rd->m->L, rd->req, MPI_STATUSES_IGNORE));
    if (rd->started != rd->m->L) {
        fprintf(stderr, "error: the hook started %d all-reduces, expected %d\n", rd->started, rd->m->L);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    rd->started = 0;
    const float inv = 1.0f / (float)size;
    for (size_t i = 0; i < rd->m->n_params; i++) rd->m->grads[i] *= inv;
}

/* Rank 0: step 1's gradients of the same model over the whole batch, one process (store-all). */
static float *reference_grads(const Session *ss, const Shard *sh)
{
    Model ref;
    model_create(&ref, ss->cfg.C, ss->cfg.L, sh->teacher.N, 0.0f, ss->stages[0].n_tape_options > 0);
    memcpy(ref.params, ss->init, ref.n_params * sizeof(float));
    ckpt_stage_desc *st = xcalloc((size_t)ss->cfg.L, sizeof *st);
    for (int l = 0; l < ss->cfg.L; l++) {
        st[l] = ss->stages[l];
        st[l].user = &ref;
        st[l].out_bytes = (size_t)ref.N * ref.C * sizeof(float);
        st[l].tape_bytes = ref.tape_bytes[0];
        st[l].bwd_workspace_bytes = ref.ws_bytes;
        for (int o = 1; o <= st[l].n_tape_options; o++) {
            st[l].tape_options[o - 1].tape_bytes = ref.tape_bytes[o];
            st[l].fwd_workspace_bytes = ref.fws_bytes;
        }
        if (ss->cfg.stream) {
            st[l].host_params = ref.p[l].ln_g;
            st[l].host_grads = ref.g[l].ln_g;
        }
    }
    size_t nc = (size_t)ref.N * ref.C;
    Batch b = { .x = sh->full.x, .target = sh->full.target, .dy = xcalloc(nc, sizeof(float)),
                .dx = xcalloc(nc, sizeof(float)) };
    ckpt_backend be;
    CHECK(ckpt_cpu_backend_create(NULL, &be));
    ckpt_chain *chain = make_chain(st, ref.L, nc * sizeof(float), &be, ss->cfg.seed, NULL);
    ckpt_plan_desc pd = {0};
    pd.policy = CKPT_POLICY_STORE_ALL;
    CHECK(ckpt_chain_plan(chain, &pd, NULL));
    step_grads(chain, &ref, &b);
    float *g = xcalloc(ref.n_params, sizeof(float));
    memcpy(g, ref.grads, ref.n_params * sizeof(float));
    ckpt_chain_destroy(chain);
    ckpt_cpu_backend_destroy(&be);
    free(b.dy); free(b.dx); free(st);
    model_destroy(&ref);
    return g;
}

/* max |g - r| / max |r| over each tensor of each block; the largest. */
static double max_rel_error(const Model *m, const float *g, const float *r)
{
    const size_t C = (size_t)m->C, H = (size_t)m->H;
    const size_t sizes[6] = { C, C, H * C, H, C * H, C };
    double worst = 0.0;
    size_t off = 0;
    for (int l = 0; l < m->L; l++)
        for (int t = 0; t < 6; t++) {
            double diff = 0.0, mag = 0.0;
            for (size_t i = off; i < off + sizes[t]; i++) {
                double d = fabs((double)g[i] - r[i]), a = fabs((double)r[i]);
                if (d > diff) diff = d;
                if (a > mag) mag = a;
            }
            double e = mag > 0.0 ? diff / mag : diff;
            if (e > worst) worst = e;
            off += sizes[t];
        }
    return worst;
}

/* Trains `steps` steps from the initial weights on the shard's batches (the same for every call:
   the data stream restarts); rd NULL: compute only (no hook, no all-reduce). Medians of the timed
   steps into *ms and *cpu. Returns the number of steps whose parameters differed across ranks. */
static int train_steps(Session *ss, Shard *sh, const ckpt_plan_desc *pd, Reducer *rd, int steps,
                       double *ms, double *cpu, double *last_loss)
{
    Model *m = &ss->model;
    Batch *b = &ss->batch;
    memcpy(m->params, ss->init, m->n_params * sizeof(float));
    sh->data = (Rng){ ss->cfg.seed ^ 0xda7aULL, 0 };
    ckpt_chain *chain = make_chain(ss->stages, m->L, (size_t)m->N * m->C * sizeof(float), &ss->be,
                                   ss->cfg.seed, rd);
    CHECK(ckpt_chain_plan(chain, pd, NULL));
    double *t_ms = xcalloc((size_t)steps, sizeof(double)), *t_cpu = xcalloc((size_t)steps, sizeof(double));
    int timed = 0, differ = 0;
    for (int s = 0; s < steps; s++) {
        next_batch(sh, b);
        MPI_CHECK(MPI_Barrier(rd ? rd->comm : MPI_COMM_WORLD));    /* start the step together */
        double t0 = now_ms(), c0 = cpu_ms();
        double loss = step_grads(chain, m, b);
        if (rd) finish_allreduce(rd, sh->size);
        sgd_update(m->params, m->grads, m->n_params, ss->cfg.lr);
        if (s > 0 || steps == 1) {
            t_cpu[timed] = cpu_ms() - c0;
            t_ms[timed++] = now_ms() - t0;
        }
        if (rd) {
            unsigned long long sum = ckpt_checksum(m->params, m->n_params * sizeof(float)), lo, hi;
            MPI_CHECK(MPI_Allreduce(&sum, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, rd->comm));
            MPI_CHECK(MPI_Allreduce(&sum, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, rd->comm));
            if (lo != hi) {
                differ++;
                if (sh->rank == 0)
                    fprintf(stderr, "error: step %d: parameters differ across ranks (checksums %016llx..%016llx)\n",
                            s + 1, lo, hi);
            }
            double global;
            MPI_CHECK(MPI_Allreduce(&loss, &global, 1, MPI_DOUBLE, MPI_SUM, rd->comm));
            loss = global / sh->size;
        }
        *last_loss = loss;
    }
    *ms = median(t_ms, timed);
    *cpu = median(t_cpu, timed);
    free(t_ms); free(t_cpu);
    ckpt_chain_destroy(chain);
    return differ;
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: mpirun -np R %s [--width C] [--depth L] [--batch N] [--steps S] [--lr LR] [--seed S]\n"
            "          [--budget-frac F] [--stream 0|1] [--threads T]\n"
            "defaults: --width 64 --depth 8 --batch 256 (global: a multiple of R) --steps 10 --lr 0.1\n"
            "          --seed 42 --budget-frac 0.4 (of store-all's peak) --threads 1 (per rank)\n",
            prog);
}

int main(int argc, char **argv)
{
    MPI_CHECK(MPI_Init(&argc, &argv));
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Config cfg = { .C = 64, .L = 8, .N = 256, .steps = 10, .p_drop = 0.0f, .lr = 0.1f,
                   .budget_frac = 0.4, .seed = 42, .threads = 1 };
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) { bad = 1; break; }
        const char *v = argv[++i];
        if (!strcmp(a, "--width")) cfg.C = atoi(v);
        else if (!strcmp(a, "--depth")) cfg.L = atoi(v);
        else if (!strcmp(a, "--batch")) cfg.N = atoi(v);
        else if (!strcmp(a, "--steps")) cfg.steps = atoi(v);
        else if (!strcmp(a, "--lr")) cfg.lr = (float)atof(v);
        else if (!strcmp(a, "--seed")) cfg.seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--budget-frac")) cfg.budget_frac = atof(v);
        else if (!strcmp(a, "--stream")) cfg.stream = atoi(v);
        else if (!strcmp(a, "--threads")) cfg.threads = atoi(v);
        else bad = 1;
    }
    if (bad || cfg.C < 1 || cfg.L < 1 || cfg.N < size || cfg.N % size || cfg.steps < 2 || cfg.threads < 1 ||
        !(cfg.budget_frac > 0.0)) {
        if (rank == 0) usage(argv[0]);
        MPI_Finalize();
        return 2;
    }
    const int n_global = cfg.N;
    cfg.N = n_global / size;

    /* The local model (n_global / size rows) and its stages, as mlp_cpu sets them up; rank 0's
       measured stage times for every rank, so that all plan the same schedule. */
    Session ss;
    session_open(&ss, &cfg);
    for (int l = 0; l < cfg.L; l++) {
        double t[2 + N_OPTIONS - 1] = { ss.stages[l].fwd_time, ss.stages[l].bwd_time };
        for (int o = 1; o < N_OPTIONS; o++) t[1 + o] = ss.stages[l].tape_options[o - 1].bwd_extra;
        MPI_CHECK(MPI_Bcast(t, 2 + N_OPTIONS - 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
        ss.stages[l].fwd_time = t[0];
        ss.stages[l].bwd_time = t[1];
        for (int o = 1; o < N_OPTIONS; o++) ss.stages[l].tape_options[o - 1].bwd_extra = t[1 + o];
    }
    Model *m = &ss.model;
    const size_t nc = (size_t)cfg.N * cfg.C, ngc = (size_t)n_global * cfg.C;

    Shard sh = { .rank = rank, .size = size, .n_local = cfg.N };
    model_create(&sh.teacher, cfg.C, cfg.L, n_global, 0.0f, 0);
    Rng teacher_rng = { cfg.seed + 1, 0 };
    model_init(&sh.teacher, &teacher_rng, 1.0f, 0.1f);     /* mlp_cpu's teacher, whole batch */
    sh.full = (Batch){ .x = xcalloc(ngc, sizeof(float)), .target = xcalloc(ngc, sizeof(float)),
                       .tmp = { xcalloc(ngc, sizeof(float)), xcalloc(ngc, sizeof(float)) },
                       .tape = xcalloc(1, sh.teacher.tape_bytes[0]) };

    /* The plan: optimal at budget_frac of store-all's peak. */
    ckpt_plan_desc pd = {0}, all = {0};
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
    int failed = 0;

    /* Step 1, local: the checkpointed plan's gradients against store-all's, bit for bit. */
    {
        float *ga = xcalloc(m->n_params, sizeof(float));
        for (int k = 0; k < 2; k++) {
            memcpy(m->params, ss.init, m->n_params * sizeof(float));
            sh.data = (Rng){ cfg.seed ^ 0xda7aULL, 0 };
            next_batch(&sh, &ss.batch);
            ckpt_chain *chain = make_chain(ss.stages, cfg.L, nc * sizeof(float), &ss.be, cfg.seed, NULL);
            CHECK(ckpt_chain_plan(chain, k == 0 ? &all : &pd, NULL));
            step_grads(chain, m, &ss.batch);
            ckpt_chain_destroy(chain);
            if (k == 0) memcpy(ga, m->grads, m->n_params * sizeof(float));
        }
        int same = memcmp(ga, m->grads, m->n_params * sizeof(float)) == 0, all_same;
        MPI_CHECK(MPI_Allreduce(&same, &all_same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
        if (rank == 0)
            printf("step 1 local gradients, optimal plan vs store-all: %s on every rank\n",
                   all_same ? "bit-identical" : "DIFFERENT");
        failed |= !all_same;
        free(ga);
    }

    /* Step 1 with the all-reduce against one process over the whole batch. */
    {
        Reducer rd = { .m = m, .comm = MPI_COMM_WORLD, .req = xcalloc((size_t)cfg.L, sizeof(MPI_Request)) };
        for (int l = 0; l < cfg.L; l++) rd.req[l] = MPI_REQUEST_NULL;
        memcpy(m->params, ss.init, m->n_params * sizeof(float));
        sh.data = (Rng){ cfg.seed ^ 0xda7aULL, 0 };
        next_batch(&sh, &ss.batch);
        ckpt_chain *chain = make_chain(ss.stages, cfg.L, nc * sizeof(float), &ss.be, cfg.seed, &rd);
        CHECK(ckpt_chain_plan(chain, &pd, NULL));
        step_grads(chain, m, &ss.batch);
        finish_allreduce(&rd, size);
        ckpt_chain_destroy(chain);
        int ok = 1;
        if (rank == 0) {
            float *ref = reference_grads(&ss, &sh);
            double err = max_rel_error(m, m->grads, ref);
            ok = err <= grad_tolerance;
            printf("step 1 gradients, %d ranks (all-reduced mean) vs one process over the whole batch: "
                   "max relative error %.3e per tensor (tolerance %.0e: float sums in another order) %s\n",
                   size, err, grad_tolerance, ok ? "ok" : "FAILED");
            free(ref);
        }
        MPI_CHECK(MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD));
        failed |= !ok;

        /* Training with the all-reduce, then compute only, from the same weights and data. */
        double ms_ar, cpu_ar, ms_c, cpu_c, loss_ar, loss_c;
        int differ = train_steps(&ss, &sh, &pd, &rd, cfg.steps, &ms_ar, &cpu_ar, &loss_ar);
        train_steps(&ss, &sh, &pd, NULL, cfg.steps, &ms_c, &cpu_c, &loss_c);
        failed |= differ != 0;
        if (rank == 0) {
            printf("%d ranks, %d rows each (global batch %d), %d blocks of width %d; optimal plan at %.2f of "
                   "store-all's peak: %llu of %llu bytes; %s, %d thread(s) per rank\n",
                   size, cfg.N, n_global, cfg.L, cfg.C, cfg.budget_frac, (unsigned long long)info.peak,
                   (unsigned long long)info.store_all_peak, EXAMPLE_BLAS, ss.cfg.threads);
            printf("parameters bit-identical across ranks after each of %d steps: %s; final loss %.6e\n",
                   cfg.steps, differ ? "NO" : "yes", loss_ar);
            printf("step time (rank 0, median of %d after a warm-up): with all-reduce %.3f ms wall, %.3f ms CPU; "
                   "compute only %.3f ms wall, %.3f ms CPU\n", cfg.steps - 1, ms_ar, cpu_ar, ms_c, cpu_c);
            printf("all-reduce adds %.3f ms per step (%.1f%%) wall, %.3f ms (%.1f%%) CPU\n", ms_ar - ms_c,
                   100.0 * (ms_ar - ms_c) / ms_c, cpu_ar - cpu_c, 100.0 * (cpu_ar - cpu_c) / cpu_c);
        }
        free(rd.req);
    }

    free(sh.full.x); free(sh.full.target); free(sh.full.tmp[0]); free(sh.full.tmp[1]); free(sh.full.tape);
    model_destroy(&sh.teacher);
    session_close(&ss);
    int any;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}
