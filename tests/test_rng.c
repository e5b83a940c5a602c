/* RNG: Philox4x32-10 against the Random123 known-answer vectors; ranges drawn in a first forward
   replayed exactly in every recomputation; user generators saved and restored around each
   recomputation through the hooks; a recomputation that draws differently is an error. The
   fixed-point normal against libm's Box-Muller in double, and its moments; the chunked checksum
   against a direct transcription of its definition. */
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"
#include "../backends/ckpt_cpu.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"

static void kat(void) {
    static const uint32_t v[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
        {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu,
         0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
        {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u,
         0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}};
    int i, j;
    for (i = 0; i < 3; i++) {
        uint32_t out[4];
        ckpt_philox4x32_10(v[i], v[i] + 4, out);
        for (j = 0; j < 4; j++)
            CHECK(out[j] == v[i][6 + j], "KAT %d word %d: got %08x want %08x", i, j, out[j], v[i][6 + j]);
    }
    /* the range helpers are the block function at counter base + j with the 64-bit key split */
    {
        ckpt_philox p;
        uint32_t w[4], ctr[4], key[2];
        float u[9];
        p.key = 0x299f31d0a4093822ull; p.base = 0xfffffffffull; p.count = 3;
        ckpt_philox_block(&p, 2, w);
        ctr[0] = (uint32_t)(p.base + 2); ctr[1] = (uint32_t)((p.base + 2) >> 32); ctr[2] = ctr[3] = 0;
        key[0] = 0xa4093822u; key[1] = 0x299f31d0u;
        {
            uint32_t ref[4];
            ckpt_philox4x32_10(ctr, key, ref);
            CHECK(memcmp(w, ref, sizeof w) == 0, "ckpt_philox_block differs from the block function");
            CHECK(ckpt_philox_u32(&p, 9) == ref[1], "ckpt_philox_u32(9) is not block 2 word 1");
        }
        ckpt_philox_fill_uniform(&p, u, 9);
        for (j = 0; j < 9; j++) {
            CHECK(u[j] >= 0.0f && u[j] < 1.0f, "uniform %d out of [0,1): %g", j, (double)u[j]);
            CHECK(u[j] == ckpt_philox_uniform(&p, (uint64_t)j), "fill_uniform[%d] != uniform(%d)", j, j);
        }
    }
}

/* dropout: keep rate close to 1-p over many draws, kept values scaled by 1/(1-p) */
static void dropout_stats(void) {
    ckpt_philox p;
    static float in[40000], out[40000];
    static uint8_t mask[40000];
    int i, kept = 0, wrong = 0;
    p.key = 7; p.base = 0; p.count = 10000;
    for (i = 0; i < 40000; i++) in[i] = 1.0f + (float)(i % 7);
    ckpt_philox_dropout(&p, 0.25f, in, out, mask, 40000);
    for (i = 0; i < 40000; i++) {
        kept += mask[i];
        wrong += out[i] != (mask[i] ? in[i] * (1.0f / 0.75f) : 0.0f);
        wrong += mask[i] != (ckpt_philox_uniform(&p, (uint64_t)i) >= 0.25f);
    }
    CHECK(wrong == 0, "%d dropout outputs or mask bits disagree with the uniforms", wrong);
    CHECK(kept > 29400 && kept < 30600, "kept %d of 40000 at p=0.25", kept);
}

/* A chain whose stages draw from both ckpt's Philox and a user generator (an LCG behind hooks),
   and record what they saw in each mode. */
#define N 6
static uint64_t user_gen = 12345;           /* the user's own generator state */
static uint32_t seen_first[N][4], seen_user_first[N];
static int replays[N], mismatches = 0, draw_extra = -1, draw_fewer = -1, swallow = 0;

static void save_gen(void *state, void *user) { (void)user; memcpy(state, &user_gen, sizeof user_gen); }
static void restore_gen(const void *state, void *user) { (void)user; memcpy(&user_gen, state, sizeof user_gen); }
static uint32_t user_next(void) { user_gen = user_gen * 6364136223846793005ull + 1442695040888963407ull; return (uint32_t)(user_gen >> 33); }

static ckpt_result fwd(const ckpt_fwd_args *a) {
    int i = a->ctx->stage;
    ckpt_philox p;
    uint32_t w[4], u;
    ckpt_result r = ckpt_ctx_rng(a->ctx, i == draw_fewer && a->ctx->mode == CKPT_MODE_RECOMPUTE ? 1 : 2, &p);
    if (r != CKPT_OK) return r;
    if (i == draw_extra && a->ctx->mode == CKPT_MODE_RECOMPUTE) {
        ckpt_philox q;
        if ((r = ckpt_ctx_rng(a->ctx, 1, &q)) != CKPT_OK && !swallow) return r;
    }
    ckpt_philox_block(&p, 1, w);
    u = user_next();
    if (a->ctx->mode == CKPT_MODE_FORWARD) {
        memcpy(seen_first[i], w, sizeof w);
        seen_user_first[i] = u;
    } else {
        replays[i]++;
        if (memcmp(seen_first[i], w, sizeof w) != 0 || seen_user_first[i] != u) mismatches++;
    }
    memcpy(a->out, w, 16);
    return CKPT_OK;
}
static ckpt_result bwd(const ckpt_bwd_args *a) {
    if (a->grad_in) memcpy(a->grad_in, a->grad_out, 16);
    return CKPT_OK;
}

static void replay(void) {
    ckpt_backend be;
    ckpt_stage_desc st[N];
    ckpt_chain_desc cd;
    ckpt_chain *ch;
    ckpt_plan_desc pd;
    ckpt_plan_info info;
    uint32_t x[4] = {1, 2, 3, 4}, g[4] = {0}, gi[4];
    uint32_t step1[N][4];
    int i, total = 0;
    uint64_t gen_after_forward;
    ckpt_result r;
    ckpt_cpu_backend_create(NULL, &be);
    memset(st, 0, sizeof st);
    for (i = 0; i < N; i++) { st[i].forward = fwd; st[i].backward = bwd; st[i].out_bytes = 16; st[i].tape_bytes = 16; }
    memset(&cd, 0, sizeof cd);
    cd.stages = st; cd.n_stages = N; cd.backend = &be; cd.seed = 99; cd.rng_offset = 1000;
    cd.rng_hooks.state_bytes = sizeof user_gen; cd.rng_hooks.save = save_gen; cd.rng_hooks.restore = restore_gen;
    CHECK(ckpt_chain_create(&cd, &ch) == CKPT_OK, "chain_create");
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_OPTIMAL; pd.budget = CKPT_ALIGN * 6;   /* tight: forces recomputation (16-byte buffers count CKPT_ALIGN) */
    r = ckpt_chain_plan(ch, &pd, &info);
    CHECK(r == CKPT_OK && info.n_recomputed > 0, "plan: %s, %d recomputed", ckpt_result_string(r), info.n_recomputed);
    /* first forward draws consecutive ranges starting at rng_offset */
    CHECK(ckpt_forward(ch, x, NULL) == CKPT_OK, "forward");
    {
        ckpt_philox p;
        uint32_t w[4];
        p.key = 99; p.count = 2;
        for (i = 0; i < N; i++) {
            p.base = 1000 + 2 * (uint64_t)i;
            ckpt_philox_block(&p, 1, w);
            CHECK(memcmp(w, seen_first[i], sizeof w) == 0, "stage %d drew from the wrong counter range", i);
        }
    }
    gen_after_forward = user_gen;
    CHECK(ckpt_backward(ch, g, gi) == CKPT_OK, "backward");
    for (i = 0; i < N; i++) total += replays[i];
    CHECK(total == info.n_recomputed, "replays %d, plan recomputes %d", total, info.n_recomputed);
    CHECK(mismatches == 0, "%d recomputations saw different random numbers", mismatches);
    CHECK(user_gen == gen_after_forward, "the user generator was not restored after recomputations");
    /* the next step draws fresh ranges */
    memcpy(step1, seen_first, sizeof step1);
    CHECK(ckpt_forward(ch, x, NULL) == CKPT_OK, "forward 2");
    CHECK(memcmp(step1, seen_first, sizeof step1) != 0, "step 2 reused step 1's random numbers");
    CHECK(ckpt_backward(ch, g, gi) == CKPT_OK && mismatches == 0, "backward 2");
    /* a recomputation that draws more blocks than the first forward, or fewer, fails the step with
       CKPT_ERR_RNG_REPLAY (also when the callback ignores the failed draw), and the next step is clean */
    {
        const ckpt_op *ops;
        int n_ops, k, victim = -1;
        ckpt_chain_stats cs = {0};
        ops = ckpt_plan_ops(ckpt_chain_get_plan(ch), &n_ops);
        for (k = 0; k < n_ops; k++) if (ops[k].kind == CKPT_OP_F && k > 0) {
            int j, first = 1;
            for (j = 0; j < k; j++) if (ops[j].kind == CKPT_OP_F && ops[j].stage == ops[k].stage) first = 0;
            if (!first) { victim = ops[k].stage - 1; break; }
        }
        CHECK(victim >= 0, "no recomputed stage");
        for (k = 0; k < 3; k++) {
            draw_extra = k < 2 ? victim : -1; swallow = k == 1; draw_fewer = k == 2 ? victim : -1;
            CHECK(ckpt_forward(ch, x, NULL) == CKPT_OK, "forward 3");
            r = ckpt_backward(ch, g, gi);
            CHECK(r == CKPT_ERR_RNG_REPLAY, "%s recomputation gave %s", k == 2 ? "under-drawing" : "over-drawing",
                  ckpt_result_string(r));
            ckpt_chain_get_stats(ch, &cs);
            CHECK(cs.failed_stage == -1, "a replay failure is no callback failure (failed stage %d)", cs.failed_stage);
            draw_extra = draw_fewer = -1; swallow = 0;
            CHECK(ckpt_forward(ch, x, NULL) == CKPT_OK && ckpt_backward(ch, g, gi) == CKPT_OK, "clean step after failure");
        }
    }
    /* an abandoned forward keeps what it drew: the next forward starts where it ended */
    {
        uint32_t before[N][4];
        ckpt_philox p;
        uint32_t w[4];
        uint64_t used = 0;
        CHECK(ckpt_forward(ch, x, NULL) == CKPT_OK, "forward to abandon");
        memcpy(before, seen_first, sizeof before);
        ckpt_chain_reset_step(ch);
        CHECK(ckpt_forward(ch, x, NULL) == CKPT_OK, "forward after reset");
        CHECK(memcmp(before, seen_first, sizeof before) != 0, "the forward after a reset redrew the abandoned numbers");
        /* the abandoned forward drew blocks 1..2N after those before it: find its base by search */
        p.key = 99; p.count = 2;
        for (used = 1000; used < 1000 + 100 * 2 * N; used += 2) {
            p.base = used; ckpt_philox_block(&p, 1, w);
            if (memcmp(w, before[0], sizeof w) == 0) break;
        }
        p.base = used + 2 * N; ckpt_philox_block(&p, 1, w);
        CHECK(memcmp(w, seen_first[0], sizeof w) == 0, "after a reset, stage 0 did not draw right after the abandoned forward");
        CHECK(ckpt_backward(ch, g, gi) == CKPT_OK, "backward after reset");
    }
    ckpt_chain_destroy(ch);
    ckpt_cpu_backend_destroy(&be);
}

/* normal: each value within 4e-7 (half a float ulp at |z| < 8) of Box-Muller in double from the same words; moments of 400k
   draws; fill_normal is the pairwise function on blocks. */
static void normal_accuracy(void) {
    static float z[400000];
    ckpt_philox p;
    double worst = 0, sum = 0, sum2 = 0, sum4 = 0, maxabs = 0;
    int i, tail = 0;
    uint32_t w[4];
    /* edge words: u = 1 (w0 = 2^32-1 gives x = 2^32), the smallest u, every octant boundary */
    static const uint32_t edge0[] = {0u, 1u, 0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu};
    for (i = 0; i < 6 * 9; i++) {
        uint32_t w0 = edge0[i % 6], w1 = (uint32_t)(i / 6) * 0x20000000u - (i / 6 == 8 ? 1u : 0u);
        double r = sqrt(-2.0 * log(((double)w0 + 1.0) / 4294967296.0)), th = 6.283185307179586 * (double)w1 / 4294967296.0;
        float z0, z1;
        ckpt_normal_from_u32(w0, w1, &z0, &z1);
        CHECK(fabs(z0 - r * cos(th)) < 4e-7 && fabs(z1 - r * sin(th)) < 4e-7, "edge w0=%08x w1=%08x: %.9g %.9g want %.9g %.9g",
              w0, w1, (double)z0, (double)z1, r * cos(th), r * sin(th));
    }
    p.key = 99; p.base = 5; p.count = 100000;
    for (i = 0; i < 100000; i++) {
        int j;
        ckpt_philox_block(&p, (uint64_t)i, w);
        for (j = 0; j < 4; j += 2) {
            double r = sqrt(-2.0 * log(((double)w[j] + 1.0) / 4294967296.0));
            double th = 6.283185307179586 * (double)w[j + 1] / 4294967296.0;
            float z0, z1;
            double e0, e1;
            ckpt_normal_from_u32(w[j], w[j + 1], &z0, &z1);
            e0 = fabs(z0 - r * cos(th)); e1 = fabs(z1 - r * sin(th));
            if (e0 > worst) worst = e0;
            if (e1 > worst) worst = e1;
        }
    }
    CHECK(worst < 4e-7, "fixed-point normal differs from double Box-Muller by %g", worst);
    ckpt_philox_fill_normal(&p, z, 400000);
    for (i = 0; i < 400000; i++) {
        double v = z[i];
        sum += v; sum2 += v * v; sum4 += v * v * v * v;
        if (fabs(v) > maxabs) maxabs = fabs(v);
        if (fabs(v) > 1.959964) tail++;
    }
    sum /= 400000; sum2 /= 400000; sum4 /= 400000;
    CHECK(fabs(sum) < 0.006 && fabs(sum2 - 1) < 0.01 && fabs(sum4 - 3) < 0.06,
          "normal moments: mean %g, var %g, 4th %g", sum, sum2, sum4);
    CHECK(tail > 19200 && tail < 20800, "%d of 400000 beyond 1.96 (expect about 20000)", tail);
    CHECK(maxabs < 6.67, "max |z| %g", maxabs);
    {
        float pair[4], odd[7];
        ckpt_philox_block(&p, 1, w);
        ckpt_normal_from_u32(w[2], w[3], &pair[2], &pair[3]);
        CHECK(z[6] == pair[2] && z[7] == pair[3], "fill_normal[6..7] is not block 1 words 2,3");
        ckpt_philox_fill_normal(&p, odd, 7);
        CHECK(memcmp(odd, z, sizeof odd) == 0, "a short fill differs from the long one's prefix");
    }
    printf("normal: worst difference from double Box-Muller %.3g, max |z| %.4f\n", worst, maxabs);
}

/* checksum: the definition written out directly; every byte and its position matter */
static uint64_t checksum_ref(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    size_t c;
    for (c = 0; c * 4096 < n; c++) {
        uint64_t hc = 1469598103934665603ull;
        size_t i;
        for (i = c * 4096; i < n && i < (c + 1) * 4096; i++) { hc ^= p[i]; hc *= 1099511628211ull; }
        h ^= hc; h *= 1099511628211ull;
    }
    h ^= (uint64_t)n; h *= 1099511628211ull;
    return h;
}
static void checksum(void) {
    static unsigned char buf[9 * 4096 + 123];   /* up to two groups of four whole chunks, and a tail */
    static const size_t sizes[] = {0, 1, 7, 4095, 4096, 4097, 8192, 3 * 4096 + 123, 4 * 4096 - 1, 4 * 4096,
                                   4 * 4096 + 1, 5 * 4096 + 9, 8 * 4096, 9 * 4096 + 123};
    ckpt_backend be;
    size_t i;
    uint64_t a, b;
    for (i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(i * 131u + (i >> 7));
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        CHECK(ckpt_checksum(buf, sizes[i]) == checksum_ref(buf, sizes[i]) &&
              ckpt_checksum(buf + 3, sizes[i] - (sizes[i] > 3 ? 3 : sizes[i])) ==
                  checksum_ref(buf + 3, sizes[i] - (sizes[i] > 3 ? 3 : sizes[i])),
              "checksum of %zu bytes", sizes[i]);
    CHECK(ckpt_checksum(buf, 0) != ckpt_checksum(buf, 1), "length not mixed in");
    a = ckpt_checksum(buf, sizeof buf);
    buf[5000] ^= 1;
    CHECK(ckpt_checksum(buf, sizeof buf) != a, "one flipped bit went unnoticed");
    buf[5000] ^= 1;
    { unsigned char t = buf[10]; buf[10] = buf[4096 + 10]; buf[4096 + 10] = t; }
    b = ckpt_checksum(buf, sizeof buf);
    CHECK(b != a || buf[10] == buf[4096 + 10], "swapping bytes across chunks went unnoticed");
    ckpt_cpu_backend_create(NULL, &be);
    CHECK(be.checksum(be.state, buf, sizeof buf, &a) == CKPT_OK && a == b, "the CPU backend's checksum is ckpt_checksum");
    ckpt_cpu_backend_destroy(&be);
}

int main(void) {
    kat();
    dropout_stats();
    replay();
    normal_accuracy();
    checksum();
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
