/* test_planner_bruteforce.c -- checks the planner against an independent brute force.

   Everything the library is checked against here is written from the cost model in the manual at
   the top of ckpt.h (COST MODEL), not from ckpt.h's planner:

   1. sim(): a simulator of the cost model. It replays a schedule, rejects every rule violation
      and returns its time and peak. Liveness follows "any buffer is freed right after its last
      read before it is written again", so it looks ahead at the whole schedule.
   2. search(): an exhaustive Dijkstra over every schedule (states: live X set, live T set with
      each live tape's option, which B runs next, no-checkpoint bits), with the freedom to drop
      any X after an op that read or wrote it, and every tape option for each F that keeps its
      tape. Lexicographic (time, peak) gives the optimum with its tie-break; a bottleneck search
      gives the smallest feasible budget. Times are exact integers (each chain's times and option
      extras are integer multiples of one quantum), so ties are exact.
   3. Hundreds of random heterogeneous chains (1..7 stages, plus a few of 8..10), each at several
      budgets, planned with every policy: OPTIMAL must match the search exactly (feasibility,
      time, tie-broken peak, min_budget) and every plan must replay in sim() with the time and
      peak it reports. ckpt_schedule_simulate must agree with sim() on every schedule checked,
      and on random walks through the schedule space and mutations of them (which also give F
      ops random tape options, some out of range).
   Tape options (ckpt_cost.n_options, option_t, option_extra): every third chain of 1..6 stages
   and every sixth of 7 is checked again with options added (1..3 per stage on some stages, at
   most two stages of 6 or 7 and one 8-stage chain: the search's key holds options for all 10
   stages, but its time and the library's grow with them), plus the four-stage example with an
   option on every stage (hand figures; also with every time 0). The same checks hold for them;
   besides, the optimal plans must keep some tape in a non-zero option (else nothing here would
   test options), store-all, every-k, sqrt and greedy keep every tape in option 0, and every plan
   writes the stage's scratch option on each F without tape. Sizes off CKPT_ALIGN (option tapes
   too) must plan exactly as their rounding (check_unaligned). Option chains draw from their own
   PRNG streams, so the chains, budgets and walks without options are the ones drawn before.
   The two references are checked against each other too: the four-stage example's figures, a few
   hand-made schedules, and on tiny chains (with and without options) an enumeration of every op
   sequence (using sim() alone) that must find exactly what search() finds.

   Exit 0 on success, 1 on any failure (the first 25 print the chain's costs, the budget, the
   figures expected and got, and the ops). Environment: CKPT_BRUTEFORCE_SCALE=k runs k times as
   many chains; CKPT_BRUTEFORCE_VERBOSE=1 prints the tie-breaks that float rounding split.
   Reduced builds (TEST_REDUCED: sanitizers, unoptimised) check half as many option chains. */
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXN 10              /* largest chain the search handles */
#define MAX_OPS 4096         /* longest schedule the test stores */
/* PRNG (test_util.h): xorshift64*, fixed seed, so every run sees the same chains. The failure
   reporting is this file's own (fail_begin, n_failures), not CHECK. */
#define TEST_XORSHIFT64STAR_SEED 0x9e3779b97f4a7c15ull
#define TEST_UTIL_NO_CHECK
#include "test_util.h"

static double now_s(void) { return (double)clock() / (double)CLOCKS_PER_SEC; }   /* CPU seconds */

/* ------------------------------------------------------------------------------------------
   A test chain: library costs (0-based, as ckpt_plan_create wants them) plus the same times as
   integers in units of `quantum` (f = fq * quantum exactly as a rational number). */
typedef struct chain {
    int n;
    ckpt_cost c[MAXN];
    long long fq[MAXN + 1], bq[MAXN + 1];   /* 1-based integer times */
    /* tape options: eq[i][o] is option o's extra backward time in quanta (eq[i][0] = 0); their
       tapes and counts are c[i-1].option_t and n_options (option_extra = eq * quantum) */
    long long eq[MAXN + 1][CKPT_MAX_TAPE_OPTIONS];
    int has_options;                        /* some stage has n_options > 0 */
    int zero_times;                         /* every f and b is 0 in c[] (the model takes 1 and 2;
                                               fq and bq hold those) */
    double quantum;
    int dyadic;                             /* quantum is a power of two: doubles sum exactly */
    uint64_t unit;
    char name[64];
} chain;

static double chain_time(const chain *ch, long long units) { return (double)units * ch->quantum; }

/* A second and a third PRNG stream (xorshift64*, as test_util.h's), so that the tape options add
   chains and draws without moving the main stream: every chain, budget and walk drawn without
   options is the one drawn before options existed. swap_streams() makes rnd() draw from the
   option chains' stream (and back); aux_*() draw option parameters and op options. */
static uint64_t opt_stream_state = 0x243f6a8885a308d3ull, aux_state = 0x13198a2e03707344ull;
static void swap_streams(void) {
    uint64_t s = rng_state;
    rng_state = opt_stream_state;
    opt_stream_state = s;
}
static uint64_t aux_rnd(void) {
    aux_state ^= aux_state >> 12;
    aux_state ^= aux_state << 25;
    aux_state ^= aux_state >> 27;
    return aux_state * 0x2545f4914f6cdd1dull;
}
static int aux_int(int lo, int hi) { return lo + (int)(aux_rnd() % (uint64_t)(hi - lo + 1)); }
static int aux_chance(int percent) { return (int)(aux_rnd() % 100u) < percent; }

/* 1-based accessors for the cost model's names. */
#define A(ch, i) ((ch)->c[(i) - 1].a)
#define T_(ch, i) ((ch)->c[(i) - 1].t)
#define WF(ch, i) ((ch)->c[(i) - 1].wf)
#define WB(ch, i) ((ch)->c[(i) - 1].wb)
#define NOCK(ch, i) (((ch)->c[(i) - 1].flags & CKPT_STAGE_NO_CHECKPOINT) != 0u)
#define NOPT(ch, i) ((ch)->c[(i) - 1].n_options)

/* Tape option o of a stage (0: t and b), and its scratch option (COST MODEL, tape options): the
   one with the smallest tape (sizes rounded up to CKPT_ALIGN, as the model counts them), the
   lowest index among equal ones. F without tape runs it. */
static uint64_t align_up(uint64_t x) { return (x + CKPT_ALIGN - 1) / CKPT_ALIGN * CKPT_ALIGN; }
static uint64_t opt_tape(const ckpt_cost *c, int o) { return o ? c->option_t[o - 1] : c->t; }
static int scratch_option(const ckpt_cost *c) {
    int o, best = 0;
    for (o = 1; o <= c->n_options; o++)
        if (align_up(opt_tape(c, o)) < align_up(opt_tape(c, best))) best = o;
    return best;
}
#define TO_(ch, i, o) opt_tape(&(ch)->c[(i) - 1], (o))

/* ------------------------------------------------------------------------------------------
   Failure reporting. */
static int n_failures = 0;
static int n_tie_notes = 0;   /* tie-breaks split by float rounding (non-dyadic times) */
static int n_layout_limited = 0;   /* optimal plans where the arena, not the peak, set the budget */
static int n_sim_notes = 0;   /* validity differences on degenerate schedules */
#define MAX_PRINTED_FAILURES 25

static void print_ops(FILE *f, const ckpt_op *ops, int n_ops) {
    int k;
    for (k = 0; k < n_ops; k++) {
        if (ops[k].kind == CKPT_OP_F && ops[k].tape && ops[k].option != 0)
            fprintf(f, " F%d*:%d", ops[k].stage, ops[k].option);
        else if (ops[k].kind == CKPT_OP_F)
            fprintf(f, " F%d%s", ops[k].stage, ops[k].tape ? "*" : "");
        else if (ops[k].kind == CKPT_OP_B)
            fprintf(f, " B%d", ops[k].stage);
        else
            fprintf(f, " ?%d/%d", (int)ops[k].kind, ops[k].stage);
    }
    fprintf(f, "   (F<i>* keeps its tape, F<i>*:<o> in tape option o)\n");
}

/* "  library ops: ..." for a plan, on stderr. */
static void print_plan_ops(const ckpt_plan *plan) {
    int no;
    const ckpt_op *ops = ckpt_plan_ops(plan, &no);
    fprintf(stderr, "  library ops:");
    print_ops(stderr, ops, no);
}

static void print_chain(FILE *f, const chain *ch) {
    int i;
    fprintf(f, "  chain %s: n=%d quantum=%g unit=%llu\n", ch->name, ch->n, ch->quantum,
            (unsigned long long)ch->unit);
    fprintf(f, "  ckpt_cost costs[%d] = {  /* f, b, a, t, wf, wb, flags */\n", ch->n);
    for (i = 0; i < ch->n; i++)
        fprintf(f, "    {%.17g, %.17g, %llu, %llu, %llu, %llu, %u},\n", ch->c[i].f, ch->c[i].b,
                (unsigned long long)ch->c[i].a, (unsigned long long)ch->c[i].t,
                (unsigned long long)ch->c[i].wf, (unsigned long long)ch->c[i].wb, ch->c[i].flags);
    fprintf(f, "  };\n");
    if (ch->has_options) {
        fprintf(f, "  tape options (stage: n_options, {option_t}, {option_extra}; extras in quanta):\n");
        for (i = 0; i < ch->n; i++)
            if (ch->c[i].n_options > 0) {
                int o;
                fprintf(f, "    stage %d: %d, {", i + 1, ch->c[i].n_options);
                for (o = 0; o < ch->c[i].n_options; o++)
                    fprintf(f, "%s%llu", o ? ", " : "", (unsigned long long)ch->c[i].option_t[o]);
                fprintf(f, "}, {");
                for (o = 0; o < ch->c[i].n_options; o++)
                    fprintf(f, "%s%.17g (%lld)", o ? ", " : "", ch->c[i].option_extra[o], ch->eq[i + 1][o + 1]);
                fprintf(f, "}\n");
            }
    }
    if (ch->zero_times) fprintf(f, "  (every f and b is 0: the model takes 1 and 2)\n");
}

/* Prints the header of a failure; returns 1 when details should follow. */
static int fail_begin(const chain *ch, const char *policy, int k, uint64_t budget) {
    n_failures++;
    if (n_failures > MAX_PRINTED_FAILURES) return 0;
    fprintf(stderr, "FAIL #%d: policy %s", n_failures, policy);
    if (k >= 0) fprintf(stderr, " k=%d", k);
    fprintf(stderr, " budget %llu\n", (unsigned long long)budget);
    if (ch) print_chain(stderr, ch);
    return 1;
}

static int time_eq(double x, double y) {
    double m = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
    return fabs(x - y) <= 1e-9 * m + 1e-12;
}

/* ==========================================================================================
   1. The simulator, written from the manual's COST MODEL.

   Buffers: X[1..n-1] (a_i), T[1..n] (t_i), G[1..n-1] (a_i); X[n] lives during F(n) only; X[0],
   G[0], G[n] are the caller's. Each write of a buffer starts a version that lives from that op
   to its last read before the next write (its write alone if never read). B(i) additionally
   ends the versions of T[i], G[i] and X[i-1] it reads. A read needs a version alive at that
   point. Peak is the largest sum, during one op, of live versions plus that op's transients
   (wf_i, the unkept tape t_i, wb_i). Every size counts rounded up to CKPT_ALIGN.
   Tape options: F(i, tape, o) keeps a T[i] version of option o's bytes (o must be 0..n_options);
   B(i) takes b_i plus the extra of the option of the version it reads; F(i) without tape has
   the scratch option's tape as its transient (op.option ignored). When every f and b is 0 the
   times are 1 and 2 (extras unchanged). */
typedef struct sim_result {
    int ok;
    double time;
    uint64_t peak;
    int bad_op;         /* first offending op, -1 if none or structural at the end */
    int degenerate;     /* writes an unread buffer that is rewritten, or a useless op */
    char msg[160];
} sim_result;

static int sim_fail(sim_result *r, int k, const char *fmt, int i) {
    r->ok = 0;
    r->bad_op = k;
    snprintf(r->msg, sizeof r->msg, fmt, i);
    return 0;
}

typedef struct version { int start, last, nreads; } version;  /* start -1: no live version */

static int sim(const ckpt_cost *costs, int n, const ckpt_op *ops, int n_ops, sim_result *r) {
    static uint64_t add[MAX_OPS + 1], sub[MAX_OPS + 1], trans[MAX_OPS + 1];
    ckpt_cost c[MAXN];          /* the costs with every size rounded up to CKPT_ALIGN */
    version xv[MAXN + 1], tv[MAXN + 1];
    uint64_t tv_bytes[MAXN + 1];    /* the live T[i] version's bytes (its option's tape) */
    double tv_extra[MAXN + 1];      /* and its option's extra backward time */
    int nock_used[MAXN + 2];    /* F(i) already ran from the current X[i-1] version */
    int fn_at = -1, next_b = n, k, i, zero_times = 1;
    uint64_t cur;

    memset(r, 0, sizeof *r);
    r->bad_op = -1;
    r->ok = 1;
    if (n < 1 || n > MAXN || n_ops < 0 || n_ops > MAX_OPS) return sim_fail(r, -1, "bad sizes%d", 0);
    for (i = 0; i < n; i++) {
        int o;
        c[i] = costs[i];
        c[i].a = align_up(c[i].a);
        c[i].t = align_up(c[i].t);
        c[i].wf = align_up(c[i].wf);
        c[i].wb = align_up(c[i].wb);
        for (o = 0; o < CKPT_MAX_TAPE_OPTIONS - 1; o++) c[i].option_t[o] = align_up(c[i].option_t[o]);
    }
    memset(add, 0, sizeof(uint64_t) * (size_t)(n_ops + 1));
    memset(sub, 0, sizeof(uint64_t) * (size_t)(n_ops + 1));
    memset(trans, 0, sizeof(uint64_t) * (size_t)(n_ops + 1));
    for (i = 0; i <= MAXN; i++) {
        xv[i].start = tv[i].start = -1;
        xv[i].last = tv[i].last = -1;
        xv[i].nreads = tv[i].nreads = 0;
    }
    for (i = 0; i < MAXN + 2; i++) nock_used[i] = 0;
    for (i = 0; i <= MAXN; i++) {
        tv_bytes[i] = 0;
        tv_extra[i] = 0.0;
    }
    for (i = 0; i < n; i++)
        if (c[i].f != 0.0 || c[i].b != 0.0) zero_times = 0;

#define END_VERSION(v, bytes)                                                            \
    do {                                                                                 \
        add[(v).start] += (bytes);                                                       \
        sub[(v).nreads ? (v).last : (v).start] += (bytes);                               \
        (v).start = -1;                                                                  \
    } while (0)

    for (k = 0; k < n_ops; k++) {
        const ckpt_op *op = &ops[k];
        i = op->stage;
        if (i < 1 || i > n) return sim_fail(r, k, "stage %d out of range", i);
        if (op->kind == CKPT_OP_F) {
            const ckpt_cost *s = &c[i - 1];
            if (op->tape != 0 && op->tape != 1) return sim_fail(r, k, "F tape flag %d not 0/1", op->tape);
            if (next_b == 0) r->degenerate = 1;                  /* op after B(1) */
            if (fn_at >= 0 && i > next_b) r->degenerate = 1;     /* its B already ran */
            if (i == n) {
                if (fn_at >= 0) return sim_fail(r, k, "F(%d) runs twice", n);
                if (!op->tape) return sim_fail(r, k, "F(%d) must keep its tape", n);
            }
            if (op->tape && (op->option < 0 || op->option > s->n_options))
                return sim_fail(r, k, "F(%d, tape) names a tape option the stage does not have", i);
            r->time += zero_times ? 1.0 : s->f;
            /* read X[i-1] */
            if (i >= 2) {
                if (xv[i - 1].start < 0) return sim_fail(r, k, "F(%d) reads X[i-1], which is not live", i);
                xv[i - 1].last = k;
                xv[i - 1].nreads++;
            }
            if (s->flags & CKPT_STAGE_NO_CHECKPOINT) {
                if (nock_used[i])
                    return sim_fail(r, k, "F(%d) runs twice from the same input (no-checkpoint stage)", i);
                nock_used[i] = 1;
            }
            /* write X[i] */
            if (i < n) {
                if (xv[i].start >= 0) {
                    if (xv[i].nreads == 0) r->degenerate = 1;
                    END_VERSION(xv[i], s->a);
                }
                xv[i].start = k;
                xv[i].last = k;
                xv[i].nreads = 0;
                nock_used[i + 1] = 0;
            } else {
                add[k] += s->a;     /* X[n]: the caller reads it right after F(n) */
                sub[k] += s->a;
                fn_at = k;
            }
            /* the tape */
            if (op->tape) {
                if (tv[i].start >= 0) {
                    r->degenerate = 1;
                    END_VERSION(tv[i], tv_bytes[i]);
                }
                tv[i].start = k;
                tv[i].last = k;
                tv[i].nreads = 0;
                tv_bytes[i] = opt_tape(s, op->option);
                tv_extra[i] = op->option ? s->option_extra[op->option - 1] : 0.0;
            } else {
                trans[k] += opt_tape(s, scratch_option(s));
            }
            trans[k] += s->wf;
        } else if (op->kind == CKPT_OP_B) {
            const ckpt_cost *s = &c[i - 1];
            if (fn_at < 0) return sim_fail(r, k, "B(%d) before F(n)", i);
            if (i != next_b) return sim_fail(r, k, "B(%d) out of order", i);
            if (tv[i].start < 0) return sim_fail(r, k, "B(%d) needs T[i], which is not live", i);
            if (i >= 2 && xv[i - 1].start < 0) return sim_fail(r, k, "B(%d) needs X[i-1], which is not live", i);
            r->time += (zero_times ? 2.0 : s->b) + tv_extra[i];
            tv[i].last = k;
            tv[i].nreads++;
            END_VERSION(tv[i], tv_bytes[i]);
            if (i >= 2) {
                xv[i - 1].last = k;
                xv[i - 1].nreads++;
                END_VERSION(xv[i - 1], c[i - 2].a);
                add[k] += c[i - 2].a;       /* G[i-1] is written now ... */
            }
            if (i < n) sub[k] += s->a;      /* ... G[i] (written by B(i+1)) is freed */
            trans[k] += s->wb;
            next_b--;
        } else {
            return sim_fail(r, k, "unknown op kind %d", (int)op->kind);
        }
    }
    if (fn_at < 0) return sim_fail(r, -1, "no F(%d)", n);
    if (next_b != 0) return sim_fail(r, -1, "B(%d) never runs", next_b);
    for (i = 1; i <= n; i++) {
        if (xv[i].start >= 0) END_VERSION(xv[i], c[i - 1].a);
        if (tv[i].start >= 0) {
            r->degenerate = 1;      /* a kept tape nobody reads */
            END_VERSION(tv[i], tv_bytes[i]);
        }
    }
#undef END_VERSION
    cur = 0;
    for (k = 0; k < n_ops; k++) {
        uint64_t during;
        cur += add[k];
        during = cur + trans[k];
        if (during > r->peak) r->peak = during;
        cur -= sub[k];
    }
    if (cur != 0) return sim_fail(r, -1, "internal: %d bytes left live at the end", (int)cur);
    return 1;
}

/* ==========================================================================================
   2. The exhaustive search.

   State (packed in 64 bits): X = live X[1..n-1] (bits 0..9), T = live T[1..n] (bits 10..20),
   phase (bits 24..27: 0 forward, 1+j after F(n) with j B's done, so the next B is B(n-j);
   n+1 is the end), C = no-checkpoint bits (bits 32..42: bit i set when F(i) of a flagged stage
   already ran from the live X[i-1]; kept only while X[i-1] is live, so states stay canonical),
   O = the tape option of each live T[i] (bits 44..63, two per stage: bits 44 + 2(i-1); 0 while
   T[i] is not live, so chains without options have the same states as before options existed).
   Live bytes of a state: its X's and T's (each in its option's bytes) plus G[p] for the next B(p)
   with p < n. */
#define ST_X(s) ((unsigned)((s) & 0x3ffu))
#define ST_T(s) ((unsigned)(((s) >> 10) & 0x7ffu))
#define ST_PH(s) ((int)(((s) >> 24) & 0xfu))
#define ST_C(s) ((unsigned)(((s) >> 32) & 0x7ffu))
#define ST_O(s) ((unsigned)((s) >> 44))
#define OPT_OF(ow, i) ((int)(((ow) >> (2 * ((i) - 1))) & 3u))   /* T[i]'s option in an O word */
#define OPT_SET(ow, i, o) (((ow) & ~(3u << (2 * ((i) - 1)))) | ((unsigned)(o) << (2 * ((i) - 1))))
#define ST_MAKE(x, t, ph, cb, ow)                                                                 \
    ((uint64_t)(x) | ((uint64_t)(t) << 10) | ((uint64_t)(ph) << 24) | ((uint64_t)(cb) << 32) | \
     ((uint64_t)(ow) << 44))

typedef struct node {
    uint64_t key;
    long long time, bound;
    uint64_t peak;
    int parent;
    ckpt_op op;     /* the op that reached this node */
    int closed;
} node;

/* key = time + a lower bound on the time still to go (A*; the bound is consistent, so this is
   Dijkstra on reduced costs and the lexicographic tie-break stays exact). */
typedef struct heap_item { long long key, time; uint64_t peak; int idx; } heap_item;

static node *nodes;
static int n_nodes, cap_nodes;
static int *htab;           /* open addressing, node index + 1, 0 empty */
static size_t htab_cap;
static heap_item *heap;
static int heap_len, heap_cap;
static long long search_expanded_total;

static size_t hash_slot(uint64_t key) {
    key ^= key >> 31;
    key *= 0x9e3779b97f4a7c15ull;
    key ^= key >> 29;
    return (size_t)key & (htab_cap - 1);
}

static void search_reset(void) {
    n_nodes = 0;
    heap_len = 0;
    if (!htab) {
        htab_cap = 1u << 12;
        htab = (int *)calloc(htab_cap, sizeof(int));
    } else {
        memset(htab, 0, htab_cap * sizeof(int));
    }
}

static void htab_grow(void) {
    size_t i;
    free(htab);
    htab_cap *= 2;
    htab = (int *)calloc(htab_cap, sizeof(int));
    for (i = 0; i < (size_t)n_nodes; i++) {
        size_t s = hash_slot(nodes[i].key);
        while (htab[s]) s = (s + 1) & (htab_cap - 1);
        htab[s] = (int)i + 1;
    }
}

/* Finds or creates the node for key; returns its index. */
static int node_get(uint64_t key, int *created) {
    size_t s;
    if ((size_t)(n_nodes + 1) * 2 > htab_cap) htab_grow();
    s = hash_slot(key);
    while (htab[s]) {
        if (nodes[htab[s] - 1].key == key) {
            *created = 0;
            return htab[s] - 1;
        }
        s = (s + 1) & (htab_cap - 1);
    }
    if (n_nodes == cap_nodes) {
        cap_nodes = cap_nodes ? cap_nodes * 2 : 4096;
        nodes = (node *)realloc(nodes, sizeof(node) * (size_t)cap_nodes);
    }
    nodes[n_nodes].key = key;
    nodes[n_nodes].closed = 0;
    htab[s] = n_nodes + 1;
    *created = 1;
    return n_nodes++;
}

/* mode 0: lexicographic (time, peak); mode 1: (peak, time) = smallest feasible budget. */
static int search_mode;
static int item_less(const heap_item *x, const heap_item *y) {
    if (search_mode == 0) {
        if (x->key != y->key) return x->key < y->key;
        return x->peak < y->peak;
    }
    if (x->peak != y->peak) return x->peak < y->peak;
    return x->time < y->time;
}

static void heap_push(heap_item it) {
    int j;
    if (heap_len == heap_cap) {
        heap_cap = heap_cap ? heap_cap * 2 : 4096;
        heap = (heap_item *)realloc(heap, sizeof(heap_item) * (size_t)heap_cap);
    }
    j = heap_len++;
    while (j > 0 && item_less(&it, &heap[(j - 1) / 2])) {
        heap[j] = heap[(j - 1) / 2];
        j = (j - 1) / 2;
    }
    heap[j] = it;
}

static heap_item heap_pop(void) {
    heap_item top = heap[0], last = heap[--heap_len];
    int j = 0;
    for (;;) {
        int l = 2 * j + 1, m;
        if (l >= heap_len) break;
        m = (l + 1 < heap_len && item_less(&heap[l + 1], &heap[l])) ? l + 1 : l;
        if (!item_less(&heap[m], &last)) break;
        heap[j] = heap[m];
        j = m;
    }
    if (heap_len > 0) heap[j] = last;
    return top;
}

static uint64_t state_live(const chain *ch, uint64_t s) {
    unsigned x = ST_X(s), t = ST_T(s), ow = ST_O(s);
    int ph = ST_PH(s), n = ch->n, i;
    uint64_t live = 0;
    for (i = 1; i < n; i++)
        if (x & (1u << i)) live += A(ch, i);
    for (i = 1; i <= n; i++)
        if (t & (1u << i)) live += TO_(ch, i, OPT_OF(ow, i));
    if (ph >= 1 && ph <= n) {
        int p = n - (ph - 1);
        if (p < n) live += A(ch, p);
    }
    return live;
}

/* A lower bound on the time from state s to the end: every B still to run (with the extra of
   its tape's option when the tape is live; option 0's none otherwise), plus one F for each stage
   whose tape is still missing or that lies between the highest live X below the next B(p) and p
   while T[p] is missing. An op lowers it by at most its own time (consistent: keeping a tape in
   option o raises it by that option's extra, which is >= 0). */
static long long state_bound(const chain *ch, uint64_t s) {
    unsigned x = ST_X(s), t = ST_T(s), ow = ST_O(s);
    int ph = ST_PH(s), n = ch->n, p, m, j;
    long long h = 0;
    if (ph == n + 1) return 0;
    p = ph == 0 ? n : n - (ph - 1);
    for (m = p - 1; m > 0 && !(x & (1u << m)); m--) {}
    for (j = 1; j <= p; j++) {
        int need = !(t & (1u << j)) || (!(t & (1u << p)) && j > m);
        h += ch->bq[j];
        if (t & (1u << j)) h += ch->eq[j][OPT_OF(ow, j)];
        if (need) h += ch->fq[j];
    }
    return h;
}

/* Note: X bit i is bit i of the mask (bit 0 unused: X[0] is always live); T likewise. */
typedef struct search_result {
    int feasible;
    long long time;     /* in quanta */
    uint64_t peak;
    ckpt_op ops[MAX_OPS];
    int n_ops;
    int states;
} search_result;

static const chain *search_chain;
static void relax(int from, uint64_t key, long long time, uint64_t peak, ckpt_op op) {
    int created, idx = node_get(key, &created);
    heap_item it;
    node *nd = &nodes[idx];
    if (created) nd->bound = state_bound(search_chain, key);
    it.key = time + nd->bound;
    it.time = time;
    it.peak = peak;
    it.idx = idx;
    if (!created) {
        heap_item old;
        if (nd->closed) return;
        old.key = nd->time + nd->bound;
        old.time = nd->time;
        old.peak = nd->peak;
        old.idx = idx;
        if (!item_less(&it, &old)) return;
    }
    nd->time = time;
    nd->peak = peak;
    nd->parent = from;
    nd->op = op;
    heap_push(it);
}

static void search(const chain *ch, uint64_t budget, int mode, search_result *res) {
    int n = ch->n, goal = -1;
    int created;
    int start;
    search_mode = mode;
    search_chain = ch;
    search_reset();
    start = node_get(ST_MAKE(0, 0, 0, 0, 0), &created);
    nodes[start].time = 0;
    nodes[start].peak = 0;
    nodes[start].parent = -1;
    {
        heap_item it;
        nodes[start].bound = state_bound(ch, nodes[start].key);
        it.key = nodes[start].bound;
        it.time = 0;
        it.peak = 0;
        it.idx = start;
        heap_push(it);
    }
    while (heap_len > 0) {
        heap_item it = heap_pop();
        node *nd = &nodes[it.idx];
        uint64_t s, live;
        unsigned x, t, cb, ow;
        int ph, p, i, cur = it.idx;
        if (nd->closed || nd->time != it.time || nd->peak != it.peak) continue;
        nd->closed = 1;
        search_expanded_total++;
        s = nd->key;
        if (ST_PH(s) == n + 1) {
            goal = cur;
            break;
        }
        x = ST_X(s);
        t = ST_T(s);
        ph = ST_PH(s);
        cb = ST_C(s);
        ow = ST_O(s);
        live = state_live(ch, s);
        p = ph == 0 ? n : n - (ph - 1);     /* next B (in the forward phase: none yet) */
        /* F(i, tape) in each tape option (without tape: the scratch option), dropping or keeping
           its input and output */
        for (i = 1; i <= n; i++) {
            int v, keep_in, keep_out, scr = scratch_option(&ch->c[i - 1]);
            if (ph > 0 && (i >= n || i > p)) continue;          /* F(n) once; useless F after its B */
            if (i >= 2 && !(x & (1u << (i - 1)))) continue;     /* input not live */
            if (i < n && (x & (1u << i))) continue;             /* output already live */
            if (NOCK(ch, i) && (cb & (1u << i))) continue;      /* no-checkpoint stage */
            for (v = 0; v <= NOPT(ch, i) + 1; v++) {      /* v = 0: no tape; v = 1 + o: option o */
                int tape = v > 0, o = tape ? v - 1 : scr;
                uint64_t during = live + A(ch, i) + TO_(ch, i, o) + WF(ch, i);
                if (during > budget) continue;
                if (i == n && !tape) continue;
                if (tape && (t & (1u << i))) continue;
                for (keep_out = 0; keep_out <= 1; keep_out++) {
                    if (i == n && keep_out) continue;           /* X[n] goes to the caller */
                    if (ph > 0 && i == p && keep_out) continue; /* X[p] has no reader left */
                    if (i < n && !keep_out && !tape) continue;  /* useless */
                    for (keep_in = (i >= 2 ? 0 : 1); keep_in <= 1; keep_in++) {
                        unsigned nx = x, nt = t, nc = cb, now = ow;
                        int nph = ph;
                        ckpt_op op;
                        if (!keep_in) {
                            nx &= ~(1u << (i - 1));
                            nc &= ~(1u << i);
                        } else if (NOCK(ch, i)) {
                            nc |= 1u << i;
                        }
                        if (i == 1 && NOCK(ch, 1)) nc |= 1u << 1;   /* X[0] is never rewritten */
                        if (i < n) {
                            nc &= ~(1u << (i + 1));                 /* X[i] is a new version */
                            if (keep_out) nx |= 1u << i;
                        }
                        if (tape) {
                            nt |= 1u << i;
                            now = OPT_SET(now, i, o);
                        }
                        if (i == n) nph = 1;
                        op.kind = CKPT_OP_F;
                        op.stage = i;
                        op.tape = tape;
                        op.option = o;      /* without tape: the scratch option, as plans write */
                        relax(cur, ST_MAKE(nx, nt, nph, nc, now), it.time + ch->fq[i],
                              during > it.peak ? during : it.peak, op);
                    }
                }
            }
        }
        /* B(p) */
        if (ph > 0 && (t & (1u << p)) && (p == 1 || (x & (1u << (p - 1))))) {
            uint64_t during = live + (p > 1 ? A(ch, p - 1) : 0) + WB(ch, p);
            if (during <= budget) {
                unsigned nx = x & ~(1u << (p - 1)), nt = t & ~(1u << p), nc = cb & ~(1u << p);
                unsigned now = OPT_SET(ow, p, 0);
                ckpt_op op;
                if (p == 1) nc &= ~(1u << 1);
                op.kind = CKPT_OP_B;
                op.stage = p;
                op.tape = 0; op.option = 0;
                if (p == 1) nx = 0;
                relax(cur, ST_MAKE(nx, nt, ph + 1, p == 1 ? 0u : nc, now),
                      it.time + ch->bq[p] + ch->eq[p][OPT_OF(ow, p)], during > it.peak ? during : it.peak, op);
            }
        }
    }
    res->states = n_nodes;
    res->n_ops = 0;
    if (goal < 0) {
        res->feasible = 0;
        return;
    }
    res->feasible = 1;
    res->time = nodes[goal].time;
    res->peak = nodes[goal].peak;
    {
        int len = 0, j;
        for (j = goal; nodes[j].parent >= 0; j = nodes[j].parent) len++;
        if (len > MAX_OPS) len = MAX_OPS;
        res->n_ops = len;
        for (j = goal; nodes[j].parent >= 0 && len > 0; j = nodes[j].parent) res->ops[--len] = nodes[j].op;
    }
}

/* ==========================================================================================
   3. Checks against the library. */
static int n_chains, n_checks, n_infeasible_checks, n_policy_plans, n_policy_infeasible;
static int n_sim_compares, n_fuzz, n_fuzz_invalid, n_fuzz_bad_option;
/* tape options: chains checked, optimal checks on them (feasible ones), how many of those the
   library's plan and the reference optimum keep some tape in an option other than 0, and the
   enumeration's option chains and budgets */
static int n_opt_chains, n_opt_checks, n_opt_feasible, n_opt_lib_nonzero, n_opt_ref_nonzero;
static int n_opt_enum_chains, n_opt_enum_cases;

/* ckpt_schedule_simulate must agree with sim() (validity; time and peak when valid). When
   `fatal_if_degenerate` is 0, a validity disagreement on a degenerate schedule is only a note. */
static void compare_library_sim(const chain *ch, const ckpt_op *ops, int n_ops, const sim_result *mine,
                                const char *what, int fatal_if_degenerate) {
    double lt = -1.0;
    uint64_t lp = 0;
    int bad = -2;
    ckpt_result r = ckpt_schedule_simulate(ch->c, ch->n, ops, n_ops, &lt, &lp, &bad);
    n_sim_compares++;
    if (mine->ok && r == CKPT_OK && time_eq(lt, mine->time) && lp == mine->peak) return;
    if (!mine->ok && r == CKPT_ERR_BAD_SCHEDULE) return;
    if (mine->ok != (r == CKPT_OK) && mine->degenerate && !fatal_if_degenerate) {
        n_sim_notes++;
        if (n_sim_notes <= 5) {
            fprintf(stderr, "NOTE: %s: degenerate schedule, validity differs: mine %s, library %s (bad_op %d)\n",
                    what, mine->ok ? "valid" : mine->msg, ckpt_result_string(r), bad);
            print_chain(stderr, ch);
            fprintf(stderr, "  ops:");
            print_ops(stderr, ops, n_ops);
        }
        return;
    }
    if (fail_begin(ch, what, -1, 0)) {
        fprintf(stderr, "  ckpt_schedule_simulate disagrees with the reference simulator\n");
        fprintf(stderr, "  reference: %s time %.17g peak %llu (op %d)\n", mine->ok ? "valid" : mine->msg,
                mine->time, (unsigned long long)mine->peak, mine->bad_op);
        fprintf(stderr, "  library:   %s time %.17g peak %llu bad_op %d\n", ckpt_result_string(r), lt,
                (unsigned long long)lp, bad);
        fprintf(stderr, "  ops:");
        print_ops(stderr, ops, n_ops);
    }
}

typedef struct chain_facts {
    uint64_t min_budget;        /* smallest feasible budget over all schedules */
    double store_all_time;
    uint64_t store_all_peak;
    ckpt_op min_ops[256];       /* a schedule whose peak is min_budget */
    int min_n_ops;
} chain_facts;

static void print_min_schedule(const chain_facts *facts) {
    fprintf(stderr, "  a schedule of peak %llu:", (unsigned long long)facts->min_budget);
    print_ops(stderr, facts->min_ops, facts->min_n_ops);
}

static void store_all_ops(int n, ckpt_op *ops, int *n_ops) {
    int i, k = 0;
    for (i = 1; i <= n; i++) {
        ops[k].kind = CKPT_OP_F;
        ops[k].stage = i;
        ops[k].tape = 1; ops[k].option = 0;
        k++;
    }
    for (i = n; i >= 1; i--) {
        ops[k].kind = CKPT_OP_B;
        ops[k].stage = i;
        ops[k].tape = 0; ops[k].option = 0;
        k++;
    }
    *n_ops = k;
}

/* How many F with tape keep their tape in an option other than 0; *scratch_ok: every F without
   tape names its stage's scratch option (as plans write). */
static int nonzero_options(const chain *ch, const ckpt_op *ops, int n_ops, int *scratch_ok) {
    int j, nz = 0;
    if (scratch_ok) *scratch_ok = 1;
    for (j = 0; j < n_ops; j++) {
        if (ops[j].kind != CKPT_OP_F) continue;
        if (ops[j].tape) nz += ops[j].option != 0;
        else if (scratch_ok && ops[j].option != scratch_option(&ch->c[ops[j].stage - 1])) *scratch_ok = 0;
    }
    return nz;
}

/* Checks one library plan of any policy: replays in sim(), reported figures, ckpt_schedule_simulate,
   the scratch option written on every F without tape, and (every policy but optimal) every tape
   kept in option 0. */
static int check_plan_replay(const chain *ch, const char *pname, int kk, uint64_t budget, const ckpt_plan *plan,
                             const ckpt_plan_info *info, sim_result *sr) {
    int n_ops = -1, ok = 1, n_f = 0, j;
    const ckpt_op *ops = ckpt_plan_ops(plan, &n_ops);
    const ckpt_plan_info *gi = ckpt_plan_get_info(plan);
    if (!ops || n_ops < 0 || n_ops > MAX_OPS) {
        if (fail_begin(ch, pname, kk, budget))
            fprintf(stderr, "  ckpt_plan_ops returned %p with n_ops %d\n", (const void *)ops, n_ops);
        return 0;
    }
    sim(ch->c, ch->n, ops, n_ops, sr);
    for (j = 0; j < n_ops; j++) n_f += ops[j].kind == CKPT_OP_F;
    {
        int scratch_ok, nz = nonzero_options(ch, ops, n_ops, &scratch_ok);
        if ((!scratch_ok || (nz && info->policy != CKPT_POLICY_OPTIMAL)) && fail_begin(ch, pname, kk, budget)) {
            fprintf(stderr, "  %s\n", !scratch_ok ? "an F without tape does not name its stage's scratch option"
                                                  : "a policy other than optimal keeps a tape in an option other than 0");
            fprintf(stderr, "  ops:");
            print_ops(stderr, ops, n_ops);
        }
    }
    if (!sr->ok || sr->peak > budget || !time_eq(sr->time, info->time) || sr->peak != info->peak ||
        info->n_ops != n_ops || info->n_recomputed != n_f - ch->n || info->budget != budget || !gi ||
        gi->peak != info->peak || !time_eq(gi->time, info->time)) {
        ok = 0;
        if (fail_begin(ch, pname, kk, budget)) {
            fprintf(stderr, "  plan does not replay as reported\n");
            fprintf(stderr, "  reference sim: %s, time %.17g, peak %llu (op %d)\n", sr->ok ? "valid" : sr->msg,
                    sr->time, (unsigned long long)sr->peak, sr->bad_op);
            fprintf(stderr, "  info: time %.17g peak %llu budget %llu n_ops %d n_recomputed %d (ops %d, F %d)\n",
                    info->time, (unsigned long long)info->peak, (unsigned long long)info->budget, info->n_ops,
                    info->n_recomputed, n_ops, n_f);
            fprintf(stderr, "  ops:");
            print_ops(stderr, ops, n_ops);
        }
    }
    compare_library_sim(ch, ops, n_ops, sr, pname, 1);
    return ok;
}

static void check_common_info(const chain *ch, const char *pname, int kk, uint64_t budget,
                              const ckpt_plan_info *info, const chain_facts *facts, ckpt_policy pol) {
    if (info->policy != pol || info->budget != budget || !time_eq(info->store_all_time, facts->store_all_time) ||
        info->store_all_peak != facts->store_all_peak) {
        if (fail_begin(ch, pname, kk, budget))
            fprintf(stderr, "  info: policy %d (want %d) budget %llu store_all %.17g/%llu (want %.17g/%llu)\n",
                    (int)info->policy, (int)pol, (unsigned long long)info->budget, info->store_all_time,
                    (unsigned long long)info->store_all_peak, facts->store_all_time,
                    (unsigned long long)facts->store_all_peak);
    }
}

/* Whether the library's plan of policy pol at budget b succeeds with its arena within b (what a
   reported min_budget promises). */
static int plans_at(const chain *ch, ckpt_policy pol, uint64_t b) {
    ckpt_plan_desc d;
    ckpt_plan *plan = NULL;
    ckpt_plan_info info;
    ckpt_result r;
    memset(&d, 0, sizeof d);
    d.policy = pol;
    d.budget = b;
    r = ckpt_plan_create(ch->c, ch->n, &d, &plan, &info);
    ckpt_plan_destroy(plan);
    return r == CKPT_OK && info.arena <= b;
}

/* The layout can need more than the peak: then the library plans for a lower info.fit_budget (where
   its guarantee holds) or, below its floor, reports INFEASIBLE. What it must give: an arena within
   the budget, the reference optimum at fit_budget, and a min_budget no lower than the reference's
   smallest peak, equal to it unless the arena set it, and at which it plans. */
static int min_budget_ok(const chain *ch, const ckpt_plan_info *info, const chain_facts *facts) {
    if (info->min_budget == facts->min_budget) return 1;
    if (info->min_budget < facts->min_budget || !plans_at(ch, CKPT_POLICY_OPTIMAL, info->min_budget)) return 0;
    n_layout_limited++;
    return 1;
}

static void check_optimal(const chain *ch, uint64_t budget, const chain_facts *facts, search_result *best,
                          double *opt_time) {
    static search_result mine, at_fit;
    ckpt_plan_desc d;
    ckpt_plan *plan = NULL;
    ckpt_plan_info info;
    ckpt_result r;
    sim_result sr;

    /* Below the smallest feasible budget (from the bottleneck search) nothing fits; the full
       search confirms it on short chains and is skipped on long ones, where it is slow. */
    if (budget < facts->min_budget && ch->n > 7) {
        mine.feasible = 0;
        mine.n_ops = 0;
    } else {
        search(ch, budget, 0, &mine);
        if (mine.feasible != (budget >= facts->min_budget) && fail_begin(ch, "reference-self-check", -1, budget))
            fprintf(stderr, "  the time search says %s, the min-peak search says min budget %llu\n",
                    mine.feasible ? "feasible" : "infeasible", (unsigned long long)facts->min_budget);
    }
    *best = mine;
    memset(&d, 0, sizeof d);
    d.policy = CKPT_POLICY_OPTIMAL;
    d.budget = budget;
    memset(&info, 0, sizeof info);
    r = ckpt_plan_create(ch->c, ch->n, &d, &plan, &info);
    n_checks++;
    *opt_time = mine.feasible ? chain_time(ch, mine.time) : -1.0;
    if (ch->has_options) {
        n_opt_checks++;
        if (mine.feasible) {
            n_opt_feasible++;
            if (nonzero_options(ch, mine.ops, mine.n_ops, NULL)) n_opt_ref_nonzero++;
            if (r == CKPT_OK && plan) {
                int no;
                const ckpt_op *ops = ckpt_plan_ops(plan, &no);
                if (ops && nonzero_options(ch, ops, no, NULL)) n_opt_lib_nonzero++;
            }
        }
    }

    /* the search's own schedule must replay in sim() (checks the two references against each other) */
    if (mine.feasible) {
        sim(ch->c, ch->n, mine.ops, mine.n_ops, &sr);
        if (!sr.ok || !time_eq(sr.time, *opt_time) || sr.peak > mine.peak) {
            if (fail_begin(ch, "reference-self-check", -1, budget)) {
                fprintf(stderr, "  search path: time %.17g peak %llu; sim: %s time %.17g peak %llu\n", *opt_time,
                        (unsigned long long)mine.peak, sr.ok ? "valid" : sr.msg, sr.time,
                        (unsigned long long)sr.peak);
                fprintf(stderr, "  ops:");
                print_ops(stderr, mine.ops, mine.n_ops);
            }
        }
        compare_library_sim(ch, mine.ops, mine.n_ops, &sr, "simulate(search path)", 1);
    }

    if (!mine.feasible) {
        n_infeasible_checks++;
        if (r != CKPT_ERR_INFEASIBLE || plan != NULL || !min_budget_ok(ch, &info, facts)) {
            if (fail_begin(ch, "optimal", -1, budget)) {
                fprintf(stderr, "  expected CKPT_ERR_INFEASIBLE with min_budget %llu; got %s, plan %p, min_budget %llu\n",
                        (unsigned long long)facts->min_budget, ckpt_result_string(r), (void *)plan,
                        (unsigned long long)info.min_budget);
                print_min_schedule(facts);
                if (r == CKPT_OK && plan) {
                    int no;
                    const ckpt_op *ops = ckpt_plan_ops(plan, &no);
                    fprintf(stderr, "  library time %.17g peak %llu ops:", info.time, (unsigned long long)info.peak);
                    if (ops) print_ops(stderr, ops, no);
                    else fprintf(stderr, " (null)\n");
                }
            }
        }
        check_common_info(ch, "optimal", -1, budget, &info, facts, CKPT_POLICY_OPTIMAL);
        ckpt_plan_destroy(plan);
        return;
    }
    if (r == CKPT_ERR_INFEASIBLE && !plan && info.min_budget > budget && min_budget_ok(ch, &info, facts)) {
        check_common_info(ch, "optimal", -1, budget, &info, facts, CKPT_POLICY_OPTIMAL);
        return;     /* the optimum at budget exists in the cost model but no plan lays out within it */
    }
    if (r != CKPT_OK || !plan) {
        if (fail_begin(ch, "optimal", -1, budget)) {
            fprintf(stderr, "  expected a plan of time %.17g peak %llu; got %s (min_budget %llu)\n", *opt_time,
                    (unsigned long long)mine.peak, ckpt_result_string(r), (unsigned long long)info.min_budget);
            fprintf(stderr, "  an optimal schedule:");
            print_ops(stderr, mine.ops, mine.n_ops);
            if (info.min_budget != facts->min_budget) print_min_schedule(facts);
        }
        ckpt_plan_destroy(plan);
        return;
    }
    check_common_info(ch, "optimal", -1, budget, &info, facts, CKPT_POLICY_OPTIMAL);
    if (check_plan_replay(ch, "optimal", -1, budget, plan, &info, &sr)) {
        const search_result *ref = &mine;
        double ref_time = *opt_time;
        int tie_ok;
        if (info.fit_budget < budget) {     /* the arena made it plan lower: compare there */
            search(ch, info.fit_budget, 0, &at_fit);
            ref = &at_fit;
            ref_time = at_fit.feasible ? chain_time(ch, at_fit.time) : -1.0;
            n_layout_limited++;
        }
        tie_ok = info.peak == ref->peak;
        if (info.arena > budget || info.fit_budget > budget || !ref->feasible || !time_eq(info.time, ref_time) ||
            !min_budget_ok(ch, &info, facts) ||
            (ch->n <= CKPT_EXACT_SEARCH_MAX_STAGES && info.guarantee != CKPT_GUARANTEE_ALL_SCHEDULES)) {
            if (fail_begin(ch, "optimal", -1, budget)) {
                fprintf(stderr, "  expected time %.17g (peak %llu) at fit_budget %llu, arena within the budget, "
                                "min_budget %llu (or one that plans) guarantee ALL_SCHEDULES\n",
                        ref_time, (unsigned long long)ref->peak, (unsigned long long)info.fit_budget,
                        (unsigned long long)facts->min_budget);
                fprintf(stderr, "  got      time %.17g (peak %llu, arena %llu) min_budget %llu guarantee %d unit %llu\n",
                        info.time, (unsigned long long)info.peak, (unsigned long long)info.arena,
                        (unsigned long long)info.min_budget, (int)info.guarantee, (unsigned long long)info.unit);
                print_plan_ops(plan);
                fprintf(stderr, "  an optimal schedule:");
                print_ops(stderr, ref->ops, ref->n_ops);
                if (info.min_budget != facts->min_budget) print_min_schedule(facts);
            }
        } else if (!tie_ok) {
            /* Ties go to the smaller peak. Exact when the chain's times are dyadic; with times
               like 0.1 the library's float sums may legitimately split a tie. */
            if (ch->dyadic) {
                if (fail_begin(ch, "optimal (tie-break)", -1, budget)) {
                    fprintf(stderr, "  time %.17g is optimal, but its peak %llu is not the smallest among "
                                    "optimal-time schedules (%llu)\n",
                            info.time, (unsigned long long)info.peak, (unsigned long long)ref->peak);
                    print_plan_ops(plan);
                    fprintf(stderr, "  smaller-peak schedule:");
                    print_ops(stderr, ref->ops, ref->n_ops);
                }
            } else {
                n_tie_notes++;
                if (getenv("CKPT_BRUTEFORCE_VERBOSE")) {
                    int no;
                    const ckpt_op *ops = ckpt_plan_ops(plan, &no);
                    fprintf(stderr, "NOTE: tie-break with non-dyadic times: library time %.17g peak %llu, reference "
                                    "time %.17g peak %llu (budget %llu)\n",
                            info.time, (unsigned long long)info.peak, ref_time, (unsigned long long)ref->peak,
                            (unsigned long long)budget);
                    print_chain(stderr, ch);
                    fprintf(stderr, "  library ops:");
                    print_ops(stderr, ops, no);
                    fprintf(stderr, "  reference ops:");
                    print_ops(stderr, ref->ops, ref->n_ops);
                }
            }
        }
    }
    ckpt_plan_destroy(plan);
}

static void check_policy(const chain *ch, uint64_t budget, const chain_facts *facts, ckpt_policy pol, int k,
                         double opt_time, const char *pname) {
    ckpt_plan_desc d;
    ckpt_plan *plan = NULL;
    ckpt_plan_info info;
    ckpt_result r;
    sim_result sr;
    int kk = pol == CKPT_POLICY_EVERY_K ? k : -1;
    memset(&d, 0, sizeof d);
    d.policy = pol;
    d.budget = budget;
    d.k = k;
    memset(&info, 0, sizeof info);
    r = ckpt_plan_create(ch->c, ch->n, &d, &plan, &info);
    n_policy_plans++;
    if (r == CKPT_ERR_INFEASIBLE) {
        n_policy_infeasible++;
        check_common_info(ch, pname, kk, budget, &info, facts, pol);
        if (plan != NULL || !(budget < info.min_budget) || info.min_budget < facts->min_budget ||
            (pol == CKPT_POLICY_STORE_ALL && info.min_budget != facts->store_all_peak &&
             (info.min_budget < facts->store_all_peak || !plans_at(ch, pol, info.min_budget)))) {
            if (fail_begin(ch, pname, kk, budget))
                fprintf(stderr, "  CKPT_ERR_INFEASIBLE but min_budget %llu (budget %llu, optimal min_budget %llu, "
                                "store-all peak %llu), plan %p\n",
                        (unsigned long long)info.min_budget, (unsigned long long)budget,
                        (unsigned long long)facts->min_budget, (unsigned long long)facts->store_all_peak,
                        (void *)plan);
        }
        ckpt_plan_destroy(plan);
        return;
    }
    if (r != CKPT_OK || !plan) {
        if (fail_begin(ch, pname, kk, budget))
            fprintf(stderr, "  unexpected result %s\n", ckpt_result_string(r));
        ckpt_plan_destroy(plan);
        return;
    }
    check_common_info(ch, pname, kk, budget, &info, facts, pol);
    if (check_plan_replay(ch, pname, kk, budget, plan, &info, &sr)) {
        int bad = 0;
        if (opt_time < 0.0) bad = 1;    /* a plan where the search proved none exists */
        else if (info.time < opt_time && !time_eq(info.time, opt_time)) bad = 1;
        if (budget < info.min_budget || info.min_budget < facts->min_budget) bad = 1;
        /* store-all's min_budget is its peak, or its arena when the layout needs more (COST
           MODEL), as in the infeasible case above */
        if (pol == CKPT_POLICY_STORE_ALL &&
            (info.peak != facts->store_all_peak || !time_eq(info.time, facts->store_all_time) ||
             (info.min_budget != facts->store_all_peak &&
              (info.min_budget < facts->store_all_peak || !plans_at(ch, pol, info.min_budget))) ||
             info.n_recomputed != 0))
            bad = 1;
        if (pol == CKPT_POLICY_EVERY_K && k > 0 && info.k != k) bad = 1;
        if (bad && fail_begin(ch, pname, kk, budget)) {
            int no;
            const ckpt_op *ops = ckpt_plan_ops(plan, &no);
            fprintf(stderr, "  got time %.17g peak %llu min_budget %llu k %d; optimal time %.17g, optimal min_budget "
                            "%llu, store-all %.17g/%llu\n",
                    info.time, (unsigned long long)info.peak, (unsigned long long)info.min_budget, info.k, opt_time,
                    (unsigned long long)facts->min_budget, facts->store_all_time,
                    (unsigned long long)facts->store_all_peak);
            fprintf(stderr, "  ops:");
            print_ops(stderr, ops, no);
        }
    }
    ckpt_plan_destroy(plan);
}

/* Random valid schedules (random walks through the search's state space, no budget) and
   mutations of them: ckpt_schedule_simulate must agree with sim(). */
static void random_walk(const chain *ch, ckpt_op *ops, int *n_ops) {
    int n = ch->n, len = 0;
    unsigned x = 0, t = 0, cb = 0;
    int ph = 0;
    while (ph != n + 1 && len < 200) {
        ckpt_op cand[8 * MAXN];
        unsigned cx[8 * MAXN], ctp[8 * MAXN], cc[8 * MAXN];
        int nc = 0, i, p = ph == 0 ? n : n - (ph - 1), pick, want_b;
        for (i = 1; i <= n; i++) {
            int tape, keep_in, keep_out;
            if (ph > 0 && (i >= n || i > p)) continue;
            if (i >= 2 && !(x & (1u << (i - 1)))) continue;
            if (i < n && (x & (1u << i))) continue;
            if (NOCK(ch, i) && (cb & (1u << i))) continue;
            for (tape = 0; tape <= 1; tape++) {
                if ((i == n && !tape) || (tape && (t & (1u << i)))) continue;
                for (keep_out = 0; keep_out <= 1; keep_out++) {
                    if ((i == n && keep_out) || (ph > 0 && i == p && keep_out) || (i < n && !keep_out && !tape))
                        continue;
                    for (keep_in = (i >= 2 ? 0 : 1); keep_in <= 1; keep_in++) {
                        unsigned nx = x, nt = t, ncb = cb;
                        if (!keep_in) {
                            nx &= ~(1u << (i - 1));
                            ncb &= ~(1u << i);
                        } else if (NOCK(ch, i)) {
                            ncb |= 1u << i;
                        }
                        if (i == 1 && NOCK(ch, 1)) ncb |= 1u << 1;
                        if (i < n) {
                            ncb &= ~(1u << (i + 1));
                            if (keep_out) nx |= 1u << i;
                        }
                        if (tape) nt |= 1u << i;
                        cand[nc].kind = CKPT_OP_F;
                        cand[nc].stage = i;
                        cand[nc].tape = tape; cand[nc].option = 0;
                        cx[nc] = nx;
                        ctp[nc] = nt;
                        cc[nc] = ncb;
                        nc++;
                    }
                }
            }
        }
        want_b = ph > 0 && (t & (1u << p)) && (p == 1 || (x & (1u << (p - 1))));
        if (want_b && (nc == 0 || rnd_chance(45))) {
            ops[len].kind = CKPT_OP_B;
            ops[len].stage = p;
            ops[len].tape = 0; ops[len].option = 0;
            len++;
            x &= ~(1u << (p - 1));
            t &= ~(1u << p);
            cb &= ~(1u << p);
            ph++;
            continue;
        }
        if (nc == 0) break;     /* dead end (e.g. a no-checkpoint stage 1 already used) */
        /* prefer progress: the highest stage with some probability */
        pick = rnd_chance(40) ? nc - 1 : rnd_int(0, nc - 1);
        /* its tape option (from the aux stream, so the walk itself is drawn as without options):
           with tape one of the stage's, without tape mostly the scratch option, sometimes any
           number (ignored) */
        if (cand[pick].tape) cand[pick].option = aux_int(0, NOPT(ch, cand[pick].stage));
        else cand[pick].option = aux_chance(70) ? scratch_option(&ch->c[cand[pick].stage - 1]) : aux_int(-1, 5);
        ops[len++] = cand[pick];
        x = cx[pick];
        t = ctp[pick];
        cb = cc[pick];
        if (cand[pick].stage == n) ph = 1;
    }
    *n_ops = len;
}

static void fuzz_simulate(const chain *ch, int rounds) {
    ckpt_op ops[256], mut[260];
    int r;
    for (r = 0; r < rounds; r++) {
        int n_ops, m, j, kind, pos;
        sim_result sr;
        random_walk(ch, ops, &n_ops);
        sim(ch->c, ch->n, ops, n_ops, &sr);
        n_fuzz++;
        if (!sr.ok) n_fuzz_invalid++;
        compare_library_sim(ch, ops, n_ops, &sr, "simulate(random walk)", 0);
        /* one mutation */
        if (n_ops == 0) continue;
        memcpy(mut, ops, sizeof(ckpt_op) * (size_t)n_ops);
        m = n_ops;
        kind = rnd_int(0, 4);
        pos = rnd_int(0, n_ops - 1);
        if (kind == 0) {                                    /* delete */
            for (j = pos; j + 1 < m; j++) mut[j] = mut[j + 1];
            m--;
        } else if (kind == 1) {                             /* duplicate */
            for (j = m; j > pos; j--) mut[j] = mut[j - 1];
            m++;
        } else if (kind == 2 && pos + 1 < m) {              /* swap neighbours */
            ckpt_op tmp = mut[pos];
            mut[pos] = mut[pos + 1];
            mut[pos + 1] = tmp;
        } else if (kind == 3) {                             /* flip a tape flag */
            if (mut[pos].kind == CKPT_OP_F) mut[pos].tape ^= 1;
        } else {                                            /* insert a random F */
            for (j = m; j > pos; j--) mut[j] = mut[j - 1];
            mut[pos].kind = CKPT_OP_F;
            mut[pos].stage = rnd_int(1, ch->n);
            mut[pos].tape = rnd_int(0, 1);
            mut[pos].option = aux_int(0, NOPT(ch, mut[pos].stage));
            m++;
        }
        /* and, often, a random tape option on one F (some out of range: invalid with a tape) */
        if (m > 0 && aux_chance(40)) {
            int q = aux_int(0, m - 1);
            if (mut[q].kind == CKPT_OP_F) {
                int w = aux_int(0, 9);
                mut[q].option = w < 7 ? aux_int(-1, NOPT(ch, mut[q].stage) + 1)
                                      : w == 7 ? CKPT_MAX_TAPE_OPTIONS : w == 8 ? -1000 : 1 << 30;
                if (mut[q].tape && (mut[q].option < 0 || mut[q].option > NOPT(ch, mut[q].stage)))
                    n_fuzz_bad_option++;
            }
        }
        sim(ch->c, ch->n, mut, m, &sr);
        n_fuzz++;
        if (!sr.ok) n_fuzz_invalid++;
        compare_library_sim(ch, mut, m, &sr, "simulate(mutated)", 0);
    }
}

/* ------------------------------------------------------------------------------------------
   Chains and budgets. */
/* The cost model counts every size rounded up to CKPT_ALIGN: the chains are built in units of
   CKPT_ALIGN bytes (sizes x CKPT_ALIGN), so this file's model needs no rounding and keeps every
   hand figure (peaks and budgets x CKPT_ALIGN). */
static void chain_finish(chain *ch) {
    int i;
    ch->unit *= CKPT_ALIGN;
    for (i = 1; i <= ch->n; i++) {
        ch->c[i - 1].a *= CKPT_ALIGN; ch->c[i - 1].t *= CKPT_ALIGN;
        ch->c[i - 1].wf *= CKPT_ALIGN; ch->c[i - 1].wb *= CKPT_ALIGN;
        ch->c[i - 1].f = (double)ch->fq[i] * ch->quantum;
        ch->c[i - 1].b = (double)ch->bq[i] * ch->quantum;
    }
}

/* Gives tape options (aux stream) to a finished chain (sizes in bytes): each stage with probability `percent`,
   at most max_stages of them (at least one), 1..max_per_stage options each. Tapes are mostly
   smaller than option 0's, sometimes equal (the scratch option's tie-break) or larger; extras
   are 0..10 quanta, 0 about a fifth of the time (then a smaller tape beats option 0 outright). */
static void add_options(chain *ch, int percent, int max_stages, int max_per_stage) {
    int i, o, given = 0;
    for (i = 1; i <= ch->n; i++) {
        ckpt_cost *c = &ch->c[i - 1];
        uint64_t t0 = c->t / ch->unit;
        if (given >= max_stages || !aux_chance(percent)) continue;
        c->n_options = aux_int(1, max_per_stage);
        for (o = 1; o <= c->n_options; o++) {
            int w = aux_int(0, 99);
            uint64_t tu = w < 60 ? (t0 > 0 ? (uint64_t)aux_int(0, (int)t0 - 1) : 0u)
                          : w < 75 ? t0 : t0 + (uint64_t)aux_int(1, 4);
            c->option_t[o - 1] = tu * ch->unit;
            ch->eq[i][o] = aux_chance(20) ? 0 : aux_int(1, 10);
            c->option_extra[o - 1] = (double)ch->eq[i][o] * ch->quantum;
        }
        given++;
    }
    if (!given) {   /* at least one stage: a smaller tape for a little more backward time */
        ckpt_cost *c;
        i = aux_int(1, ch->n);
        c = &ch->c[i - 1];
        c->n_options = 1;
        c->option_t[0] = c->t / 2 / ch->unit * ch->unit;
        ch->eq[i][1] = aux_int(1, 4);
        c->option_extra[0] = (double)ch->eq[i][1] * ch->quantum;
    }
    ch->has_options = 1;
    snprintf(ch->name + strlen(ch->name), sizeof ch->name - strlen(ch->name), " + options");
}

static void random_chain(chain *ch, int n, int idx) {
    static const uint64_t units[] = {1, 1, 2, 3, 7, 16, 64, 100, 256, 1000, 4096, 1u << 20};
    static const double quanta[] = {1.0, 1.0, 0.5, 0.25, 0.125, 0.1, 0.3};
    int i, any_f = 0, any_b = 0, heavy = rnd_chance(30);
    memset(ch, 0, sizeof *ch);
    ch->n = n;
    ch->unit = units[rnd_int(0, (int)(sizeof units / sizeof units[0]) - 1)];
    {
        int qi = rnd_int(0, (int)(sizeof quanta / sizeof quanta[0]) - 1);
        ch->quantum = quanta[qi];
        ch->dyadic = qi <= 4;
    }
    for (i = 1; i <= n; i++) {
        ckpt_cost *c = &ch->c[i - 1];
        ch->fq[i] = rnd_chance(12) ? 0 : rnd_int(1, heavy ? 9 : 4);
        ch->bq[i] = rnd_chance(8) ? 0 : rnd_int(1, heavy ? 12 : 6);
        c->a = ch->unit * (uint64_t)(rnd_chance(10) ? 0 : rnd_int(1, 6));
        c->t = ch->unit * (uint64_t)(rnd_chance(10) ? 0 : rnd_int(1, 8));
        c->wf = ch->unit * (uint64_t)(rnd_chance(70) ? 0 : rnd_int(1, 4));
        c->wb = ch->unit * (uint64_t)(rnd_chance(70) ? 0 : rnd_int(1, 5));
        c->flags = rnd_chance(8) ? CKPT_STAGE_NO_CHECKPOINT : 0u;
        any_f |= ch->fq[i] != 0;
        any_b |= ch->bq[i] != 0;
    }
    /* not all times zero (a chain of zero times means "unknown" to the library) */
    if (!any_f) ch->fq[rnd_int(1, n)] = 1;
    if (!any_b) ch->bq[rnd_int(1, n)] = 1;
    chain_finish(ch);
    snprintf(ch->name, sizeof ch->name, "random #%d", idx);
}

static void uniform_chain(chain *ch, int n, long long f, long long b, uint64_t a, uint64_t t, const char *name) {
    int i;
    memset(ch, 0, sizeof *ch);
    ch->n = n;
    ch->quantum = 1.0;
    ch->dyadic = 1;
    ch->unit = 1;
    for (i = 1; i <= n; i++) {
        ch->fq[i] = f;
        ch->bq[i] = b;
        ch->c[i - 1].a = a;
        ch->c[i - 1].t = t;
    }
    chain_finish(ch);
    snprintf(ch->name, sizeof ch->name, "%s", name);
}

static void facts_of(const chain *ch, chain_facts *facts) {
    static search_result sr;
    ckpt_op ops[2 * MAXN];
    int n_ops;
    sim_result s;
    search(ch, UINT64_MAX, 1, &sr);
    facts->min_budget = sr.feasible ? sr.peak : UINT64_MAX;
    facts->min_n_ops = sr.n_ops < 256 ? sr.n_ops : 256;
    memcpy(facts->min_ops, sr.ops, sizeof(ckpt_op) * (size_t)facts->min_n_ops);
    store_all_ops(ch->n, ops, &n_ops);
    sim(ch->c, ch->n, ops, n_ops, &s);
    facts->store_all_time = s.time;
    facts->store_all_peak = s.peak;
    if (!sr.feasible || !s.ok || sr.peak > s.peak) {
        if (fail_begin(ch, "reference-self-check", -1, 0))
            fprintf(stderr, "  min-peak search %s peak %llu; store-all %s peak %llu\n",
                    sr.feasible ? "feasible" : "infeasible", (unsigned long long)sr.peak, s.ok ? "valid" : s.msg,
                    (unsigned long long)s.peak);
    }
    compare_library_sim(ch, ops, n_ops, &s, "simulate(store-all)", 1);
}

static int add_budget(uint64_t *list, int len, uint64_t b) {
    int i;
    if (b == 0) return len;     /* 0 means "no limit" to the library */
    for (i = 0; i < len; i++)
        if (list[i] == b) return len;
    list[len] = b;
    return len + 1;
}

/* Budgets from below the smallest feasible one up to store-all's peak, plus the Pareto
   frontier's corners (each optimal peak and one byte below it) for the first few. */
static void check_chain(const chain *ch, int n_random_budgets, int frontier_steps, int all_policies, int light) {
    chain_facts facts;
    uint64_t budgets[64];
    int nb = 0, j;
    uint64_t lo, hi;
    static search_result best;
    double opt_time;

    n_chains++;
    n_opt_chains += ch->has_options;
    facts_of(ch, &facts);
    lo = facts.min_budget;
    hi = facts.store_all_peak;
    if (lo > 0) nb = add_budget(budgets, nb, lo - 1);
    if (lo > ch->unit && !light) nb = add_budget(budgets, nb, lo - ch->unit);
    nb = add_budget(budgets, nb, lo);
    nb = add_budget(budgets, nb, hi);
    if (!light) nb = add_budget(budgets, nb, hi + ch->unit);
    if (hi > lo + 1 && !light) nb = add_budget(budgets, nb, hi - 1);
    for (j = 0; j < n_random_budgets && hi > lo; j++)
        nb = add_budget(budgets, nb, lo + 1 + rnd() % (hi - lo));
    /* the frontier's corners, walking down from store-all's peak */
    {
        uint64_t fb = hi;
        for (j = 0; j < frontier_steps && fb >= lo && nb < 60; j++) {
            search(ch, fb, 0, &best);
            if (!best.feasible) break;
            nb = add_budget(budgets, nb, best.peak);
            if (best.peak == 0) break;
            nb = add_budget(budgets, nb, best.peak - 1);
            fb = best.peak - 1;
        }
    }

    for (j = 0; j < nb; j++) {
        uint64_t b = budgets[j];
        check_optimal(ch, b, &facts, &best, &opt_time);
        if (all_policies) {
            static const int ks[] = {1, 2, 3, 5};
            int q;
            check_policy(ch, b, &facts, CKPT_POLICY_STORE_ALL, 0, opt_time, "store-all");
            check_policy(ch, b, &facts, CKPT_POLICY_EVERY_K, 0, opt_time, "every-k");
            for (q = 0; q < (int)(sizeof ks / sizeof ks[0]); q++)
                if (ks[q] <= ch->n) check_policy(ch, b, &facts, CKPT_POLICY_EVERY_K, ks[q], opt_time, "every-k");
            check_policy(ch, b, &facts, CKPT_POLICY_SQRT, 0, opt_time, "sqrt");
            check_policy(ch, b, &facts, CKPT_POLICY_GREEDY, 0, opt_time, "greedy");
        }
    }
}

/* ------------------------------------------------------------------------------------------
   The four-stage example (tools/examples/four.csv, in its own units), checked with the references
   alone (and then with the library). */
static int check_design_example(void) {
    chain ch;
    static search_result sr;
    ckpt_op ops[2 * MAXN];
    int n_ops, bad = 0, j;
    sim_result s;
    static const struct { uint64_t budget; long long time; } want[] = {{120 * CKPT_ALIGN, 12}, {80 * CKPT_ALIGN, 14}, {60 * CKPT_ALIGN, 15}, {50 * CKPT_ALIGN, 16},
                                                                       {40 * CKPT_ALIGN, -1}};
    uniform_chain(&ch, 4, 1, 2, 10, 20, "four-stage example");
    store_all_ops(4, ops, &n_ops);
    sim(ch.c, 4, ops, n_ops, &s);
    if (!s.ok || s.time != 12.0 || s.peak != 120 * CKPT_ALIGN) {
        fprintf(stderr, "FAIL: reference sim of the four-stage example's store-all: %s time %g peak %llu (want 12, 120)\n",
                s.ok ? "valid" : s.msg, s.time, (unsigned long long)s.peak);
        bad = 1;
    }
    for (j = 0; j < (int)(sizeof want / sizeof want[0]); j++) {
        search(&ch, want[j].budget, 0, &sr);
        if ((want[j].time < 0) != !sr.feasible || (sr.feasible && sr.time != want[j].time)) {
            fprintf(stderr, "FAIL: reference search on the four-stage example, budget %llu: %s time %lld (want %lld)\n",
                    (unsigned long long)want[j].budget, sr.feasible ? "feasible" : "infeasible", sr.time,
                    want[j].time);
            bad = 1;
        }
        if (sr.feasible) {
            sim(ch.c, 4, sr.ops, sr.n_ops, &s);
            if (!s.ok || s.time != (double)sr.time || s.peak > want[j].budget) {
                fprintf(stderr, "FAIL: reference search path does not replay (budget %llu): %s\n",
                        (unsigned long long)want[j].budget, s.ok ? "valid" : s.msg);
                print_ops(stderr, sr.ops, sr.n_ops);
                bad = 1;
            }
        }
    }
    search(&ch, UINT64_MAX, 1, &sr);
    if (!sr.feasible || sr.peak <= 40 * CKPT_ALIGN || sr.peak > 50 * CKPT_ALIGN) {
        fprintf(stderr, "FAIL: reference min budget of the four-stage example is %llu (want in 41..50)\n",
                (unsigned long long)sr.peak);
        bad = 1;
    }
    /* a few hand-made violations the reference must reject */
    {
        static const ckpt_op bad1[] = {{CKPT_OP_F, 1, 1, 0}, {CKPT_OP_F, 3, 1, 0}, {CKPT_OP_F, 4, 1, 0},
                                       {CKPT_OP_B, 4, 0, 0}, {CKPT_OP_B, 3, 0, 0}, {CKPT_OP_B, 2, 0, 0},
                                       {CKPT_OP_B, 1, 0, 0}};   /* F3 without X[2] */
        static const ckpt_op bad2[] = {{CKPT_OP_F, 1, 1, 0}, {CKPT_OP_F, 2, 1, 0}, {CKPT_OP_F, 3, 1, 0},
                                       {CKPT_OP_F, 4, 0, 0}, {CKPT_OP_B, 4, 0, 0}, {CKPT_OP_B, 3, 0, 0},
                                       {CKPT_OP_B, 2, 0, 0}, {CKPT_OP_B, 1, 0, 0}};   /* F(n) without tape */
        static const ckpt_op bad3[] = {{CKPT_OP_F, 1, 1, 0}, {CKPT_OP_F, 2, 1, 0}, {CKPT_OP_F, 3, 0, 0},
                                       {CKPT_OP_F, 4, 1, 0}, {CKPT_OP_B, 4, 0, 0}, {CKPT_OP_B, 3, 0, 0},
                                       {CKPT_OP_B, 2, 0, 0}, {CKPT_OP_B, 1, 0, 0}};   /* B3 without T[3] */
        static const ckpt_op bad4[] = {{CKPT_OP_F, 1, 1, 0}, {CKPT_OP_F, 2, 1, 0}, {CKPT_OP_F, 3, 1, 0},
                                       {CKPT_OP_F, 4, 1, 0}, {CKPT_OP_B, 4, 0, 0}, {CKPT_OP_B, 2, 0, 0},
                                       {CKPT_OP_B, 3, 0, 0}, {CKPT_OP_B, 1, 0, 0}};   /* B out of order */
        static const ckpt_op good[] = {{CKPT_OP_F, 1, 0, 0}, {CKPT_OP_F, 2, 1, 0}, {CKPT_OP_F, 3, 1, 0},
                                       {CKPT_OP_F, 4, 1, 0}, {CKPT_OP_B, 4, 0, 0}, {CKPT_OP_B, 3, 0, 0},
                                       {CKPT_OP_B, 2, 0, 0}, {CKPT_OP_F, 1, 1, 0}, {CKPT_OP_B, 1, 0, 0}};
        const ckpt_op *cases[] = {bad1, bad2, bad3, bad4};
        const int lens[] = {7, 8, 8, 8};
        for (j = 0; j < 4; j++) {
            sim(ch.c, 4, cases[j], lens[j], &s);
            if (s.ok) {
                fprintf(stderr, "FAIL: reference sim accepts invalid schedule #%d\n", j + 1);
                bad = 1;
            }
        }
        /* X[1] (kept from F1) feeds F2 and B2; T[1] recomputed after B2. Peak: during F4 live =
           X1 X2 X3 T2 T3 = 70, +30 = 100. */
        sim(ch.c, 4, good, 9, &s);
        if (!s.ok || s.time != 13.0 || s.peak != 100 * CKPT_ALIGN) {
            fprintf(stderr, "FAIL: reference sim of a hand-made schedule: %s time %g peak %llu (want 13, 100)\n",
                    s.ok ? "valid" : s.msg, s.time, (unsigned long long)s.peak);
            bad = 1;
        }
    }
    return bad;
}

static void check_no_checkpoint_examples(void) {
    /* no-checkpoint on stage 1: F(1) may run once only, so T[1] must be kept from the start */
    chain ch;
    static search_result sr;
    ckpt_op ops[] = {{CKPT_OP_F, 1, 0, 0}, {CKPT_OP_F, 2, 1, 0}, {CKPT_OP_B, 2, 0, 0}, {CKPT_OP_F, 1, 1, 0}, {CKPT_OP_B, 1, 0, 0}};
    sim_result s;
    uniform_chain(&ch, 2, 1, 2, 10, 20, "no-checkpoint stage 1");
    ch.c[0].flags = CKPT_STAGE_NO_CHECKPOINT;
    sim(ch.c, 2, ops, 5, &s);
    if (s.ok) {
        fprintf(stderr, "FAIL: reference sim runs F(1) twice on a no-checkpoint stage 1\n");
        n_failures++;
    }
    compare_library_sim(&ch, ops, 5, &s, "simulate(no-checkpoint stage 1)", 1);
    search(&ch, UINT64_MAX, 1, &sr);
    if (!sr.feasible || sr.peak != 60 * CKPT_ALIGN) {   /* store-all: during F2 X1+T1+a2+t2 = 60 units */
        fprintf(stderr, "FAIL: reference min budget with no-checkpoint stage 1: %llu (want 60)\n",
                (unsigned long long)sr.peak);
        n_failures++;
    }
    check_chain(&ch, 3, 4, 1, 0);
    /* no-checkpoint on stage 3 of the four-stage example */
    uniform_chain(&ch, 4, 1, 2, 10, 20, "four-stage example, stage 3 no-checkpoint");
    ch.c[2].flags = CKPT_STAGE_NO_CHECKPOINT;
    check_chain(&ch, 4, 8, 1, 0);
}


/* The four-stage example with a second tape option on every stage: 5 units of tape for one more
   unit of backward time. Figures worked by hand, checked with the references and the library;
   then the same chain with every f and b 0 (the model takes 1 and 2, the extras stay). */
static void option_example(chain *ch, int zero_times, const char *name) {
    int i;
    uniform_chain(ch, 4, 1, 2, 10, 20, name);
    for (i = 1; i <= 4; i++) {
        ch->c[i - 1].n_options = 1;
        ch->c[i - 1].option_t[0] = 5 * CKPT_ALIGN;
        ch->eq[i][1] = 1;
        ch->c[i - 1].option_extra[0] = 1.0;
        if (zero_times) ch->c[i - 1].f = ch->c[i - 1].b = 0.0;
    }
    ch->has_options = 1;
    ch->zero_times = zero_times;
}

static void check_option_examples(void) {
    chain ch;
    static search_result sr;
    sim_result s;
    int j, z;
    /* store-all in option 1: peak during F4 (X1..X3 30, T1..T3 15, a4 + t4 15) and B4 (X1..X3,
       T1..T4 20, G3 10) = 60 units; time 4 + 4 x (2 + 1) = 16 */
    static const ckpt_op sa1[] = {{CKPT_OP_F, 1, 1, 1}, {CKPT_OP_F, 2, 1, 1}, {CKPT_OP_F, 3, 1, 1},
                                  {CKPT_OP_F, 4, 1, 1}, {CKPT_OP_B, 4, 0, 0}, {CKPT_OP_B, 3, 0, 0},
                                  {CKPT_OP_B, 2, 0, 0}, {CKPT_OP_B, 1, 0, 0}};
    /* the hand-made schedule of check_design_example (time 13, peak 100 in option 0) with F4 in
       option 1 and F1's ignored option set to 3: peak 85 (during F4: X1 X2 X3 T2 T3 70 + 15;
       during B4: 70 + T4 5 + G3 10); F1 without tape has the scratch option's 5 as transient;
       time 13 + 1 = 14 */
    static const ckpt_op mixed[] = {{CKPT_OP_F, 1, 0, 3}, {CKPT_OP_F, 2, 1, 0}, {CKPT_OP_F, 3, 1, 0},
                                    {CKPT_OP_F, 4, 1, 1}, {CKPT_OP_B, 4, 0, 0}, {CKPT_OP_B, 3, 0, 0},
                                    {CKPT_OP_B, 2, 0, 0}, {CKPT_OP_F, 1, 1, 0}, {CKPT_OP_B, 1, 0, 0}};
    /* invalid: option 2 (the stages have options 0 and 1), option -1 */
    static const ckpt_op bad1[] = {{CKPT_OP_F, 1, 1, 0}, {CKPT_OP_F, 2, 1, 2}, {CKPT_OP_F, 3, 1, 0},
                                   {CKPT_OP_F, 4, 1, 0}, {CKPT_OP_B, 4, 0, 0}, {CKPT_OP_B, 3, 0, 0},
                                   {CKPT_OP_B, 2, 0, 0}, {CKPT_OP_B, 1, 0, 0}};
    static const ckpt_op bad2[] = {{CKPT_OP_F, 1, 1, 0}, {CKPT_OP_F, 2, 1, 0}, {CKPT_OP_F, 3, 1, 0},
                                   {CKPT_OP_F, 4, 1, -1}, {CKPT_OP_B, 4, 0, 0}, {CKPT_OP_B, 3, 0, 0},
                                   {CKPT_OP_B, 2, 0, 0}, {CKPT_OP_B, 1, 0, 0}};
    for (z = 0; z <= 1; z++) {
        option_example(&ch, z, z ? "four-stage example, option 1, times all 0" : "four-stage example, option 1");
        sim(ch.c, 4, sa1, 8, &s);
        if (!s.ok || s.time != 16.0 || s.peak != 60 * CKPT_ALIGN) {
            fprintf(stderr, "FAIL: reference sim of %s's store-all in option 1: %s time %g peak %llu (want 16, 60)\n",
                    ch.name, s.ok ? "valid" : s.msg, s.time, (unsigned long long)s.peak);
            n_failures++;
        }
        compare_library_sim(&ch, sa1, 8, &s, "simulate(store-all in option 1)", 1);
        sim(ch.c, 4, mixed, 9, &s);
        if (!s.ok || s.time != 14.0 || s.peak != 85 * CKPT_ALIGN) {
            fprintf(stderr, "FAIL: reference sim of a hand-made schedule with options on %s: %s time %g peak %llu "
                            "(want 14, 85)\n", ch.name, s.ok ? "valid" : s.msg, s.time, (unsigned long long)s.peak);
            n_failures++;
        }
        compare_library_sim(&ch, mixed, 9, &s, "simulate(hand-made, options)", 1);
        for (j = 0; j < 2; j++) {
            sim(ch.c, 4, j ? bad2 : bad1, 8, &s);
            if (s.ok) {
                fprintf(stderr, "FAIL: reference sim accepts an F with tape option %d\n", j ? -1 : 2);
                n_failures++;
            }
            compare_library_sim(&ch, j ? bad2 : bad1, 8, &s, "simulate(tape option out of range)", 1);
        }
        /* the search: at budget 60 option 0 alone takes 15 (check_design_example) and store-all in
           option 1 16; the smallest budget drops below option 0's 41..50 (F1 F2 F3 F4*:1 ... keeps
           no X and small tapes) */
        search(&ch, 60 * CKPT_ALIGN, 0, &sr);
        if (!sr.feasible || sr.time > 15) {
            fprintf(stderr, "FAIL: reference search on %s at budget 60: %s time %lld (want <= 15)\n", ch.name,
                    sr.feasible ? "feasible" : "infeasible", sr.time);
            n_failures++;
        }
        search(&ch, UINT64_MAX, 1, &sr);
        if (!sr.feasible || sr.peak > 40 * CKPT_ALIGN) {
            fprintf(stderr, "FAIL: reference min budget of %s is %llu (want <= 40)\n", ch.name,
                    (unsigned long long)sr.peak);
            n_failures++;
        }
        check_chain(&ch, 4, 8, 1, 0);
    }
}

/* Sizes that are not multiples of CKPT_ALIGN: the model rounds each up, option tapes too. A chain
   whose sizes are shaved by less than CKPT_ALIGN from a chain of whole units must plan exactly as
   that chain (which check_chain checks against the references), with every policy; its plans must
   replay in sim() (which rounds) and in ckpt_schedule_simulate; and its scratch option is the
   smallest tape after rounding: where an option's tape rounds to option 0's, option 0, even with
   fewer raw bytes (one stage is made so). */
static int n_unaligned_plans;
static void check_unaligned(int count) {
    static const ckpt_policy pols[] = {CKPT_POLICY_OPTIMAL, CKPT_POLICY_STORE_ALL, CKPT_POLICY_EVERY_K,
                                       CKPT_POLICY_SQRT, CKPT_POLICY_GREEDY};
    static search_result sr;
    int k;
    for (k = 0; k < count; k++) {
        chain ch, raw;
        int n = 2 + k % 4, i, o, j, q, tie = 0, nb = 0, n_sa;
        uint64_t budgets[4], hi;
        ckpt_op sa[2 * MAXN];
        sim_result s;
        random_chain(&ch, n, 1200 + k);
        add_options(&ch, 70, n, 3);
        for (i = 1; i <= n && !tie; i++)
            if (ch.c[i - 1].n_options > 0 && ch.c[i - 1].t > 0) {
                ch.c[i - 1].option_t[0] = ch.c[i - 1].t;
                tie = i;
            }
        raw = ch;
        snprintf(raw.name, sizeof raw.name, "%.48s, shaved", ch.name);
        for (i = 0; i < n; i++) {
            ckpt_cost *c = &raw.c[i];
            uint64_t *sz[4];
            sz[0] = &c->a; sz[1] = &c->t; sz[2] = &c->wf; sz[3] = &c->wb;
            for (j = 0; j < 4; j++)
                if (*sz[j]) *sz[j] -= (uint64_t)aux_int(0, CKPT_ALIGN - 1);
            for (o = 0; o < c->n_options; o++)
                if (c->option_t[o]) c->option_t[o] -= (uint64_t)aux_int(0, CKPT_ALIGN - 1);
        }
        if (tie) {
            raw.c[tie - 1].t = ch.c[tie - 1].t - 1;
            raw.c[tie - 1].option_t[0] = ch.c[tie - 1].t - (CKPT_ALIGN - 1);
        }
        check_chain(&ch, 2, 0, 1, 0);
        search(&ch, UINT64_MAX, 1, &sr);
        store_all_ops(n, sa, &n_sa);
        sim(ch.c, n, sa, n_sa, &s);
        hi = s.peak;
        if (sr.peak > 1) budgets[nb++] = sr.peak - 1;
        if (sr.peak > 0) budgets[nb++] = sr.peak;
        budgets[nb++] = sr.peak + (hi - sr.peak) / 2 + 1;
        budgets[nb++] = hi;
        for (j = 0; j < nb; j++)
            for (q = 0; q < (int)(sizeof pols / sizeof pols[0]); q++) {
                ckpt_plan_desc d;
                ckpt_plan *p1 = NULL, *p2 = NULL;
                ckpt_plan_info i1, i2;
                ckpt_result r1, r2;
                const ckpt_op *o1 = NULL, *o2 = NULL;
                int n1 = 0, n2 = 0, same;
                memset(&d, 0, sizeof d);
                d.policy = pols[q];
                d.budget = budgets[j];
                memset(&i1, 0, sizeof i1);
                memset(&i2, 0, sizeof i2);
                r1 = ckpt_plan_create(ch.c, n, &d, &p1, &i1);
                r2 = ckpt_plan_create(raw.c, n, &d, &p2, &i2);
                n_unaligned_plans++;
                if (p1) o1 = ckpt_plan_ops(p1, &n1);
                if (p2) o2 = ckpt_plan_ops(p2, &n2);
                same = r1 == r2 && i1.min_budget == i2.min_budget && n1 == n2 && (!o1) == (!o2);
                if (same && r1 == CKPT_OK)
                    same = i1.time == i2.time && i1.peak == i2.peak && i1.arena == i2.arena &&
                           i1.fit_budget == i2.fit_budget && o1 && o2 &&
                           memcmp(o1, o2, sizeof(ckpt_op) * (size_t)n1) == 0;
                if (!same && fail_begin(&raw, "unaligned sizes", -1, budgets[j])) {
                    fprintf(stderr, "  policy %s plans the shaved chain (above) unlike the chain it rounds to:\n",
                            ckpt_policy_name(pols[q]));
                    print_chain(stderr, &ch);
                    fprintf(stderr, "  rounded: %s time %.17g peak %llu min_budget %llu ops:", ckpt_result_string(r1),
                            i1.time, (unsigned long long)i1.peak, (unsigned long long)i1.min_budget);
                    if (o1) print_ops(stderr, o1, n1);
                    else fprintf(stderr, " none\n");
                    fprintf(stderr, "  shaved:  %s time %.17g peak %llu min_budget %llu ops:", ckpt_result_string(r2),
                            i2.time, (unsigned long long)i2.peak, (unsigned long long)i2.min_budget);
                    if (o2) print_ops(stderr, o2, n2);
                    else fprintf(stderr, " none\n");
                }
                if (r2 == CKPT_OK && p2) check_plan_replay(&raw, ckpt_policy_name(pols[q]), -1, budgets[j], p2, &i2, &s);
                ckpt_plan_destroy(p1);
                ckpt_plan_destroy(p2);
            }
    }
}

/* ------------------------------------------------------------------------------------------
   Self-check of the two references against each other: on tiny chains, enumerate every op
   sequence up to a length (checking each with sim() alone) and compare the best one under each
   budget with search(). A search path no longer than the limit must be matched exactly. */
static const chain *enum_chain;
static ckpt_op enum_seq[16];
static uint64_t enum_budget[16];
static int enum_nb, enum_best_len[16];
static double enum_best_t[16];
static uint64_t enum_best_p[16];

static void enum_dfs(int len, int limit, int fn_done, int next_b) {
    int i, v, j;
    if (next_b == 0) {
        sim_result r;
        sim(enum_chain->c, enum_chain->n, enum_seq, len, &r);
        if (!r.ok) return;
        for (j = 0; j < enum_nb; j++) {
            if (r.peak > enum_budget[j]) continue;
            if (enum_best_t[j] < 0 || (r.time < enum_best_t[j] && !time_eq(r.time, enum_best_t[j])) ||
                (time_eq(r.time, enum_best_t[j]) && r.peak < enum_best_p[j])) {
                enum_best_t[j] = r.time;
                enum_best_p[j] = r.peak;
                enum_best_len[j] = len;
            }
        }
        return;
    }
    if (len >= limit) return;
    if (fn_done) {
        enum_seq[len].kind = CKPT_OP_B;
        enum_seq[len].stage = next_b;
        enum_seq[len].tape = 0; enum_seq[len].option = 0;
        enum_dfs(len + 1, limit, 1, next_b - 1);
    }
    for (i = 1; i <= enum_chain->n; i++)
        for (v = 0; v <= NOPT(enum_chain, i) + 1; v++) {     /* v = 0: no tape; v = 1 + o: option o */
            int tape = v > 0;
            if (i == enum_chain->n && (fn_done || !tape)) continue;
            if (fn_done && i > next_b) continue;
            enum_seq[len].kind = CKPT_OP_F;
            enum_seq[len].stage = i;
            enum_seq[len].tape = tape;
            enum_seq[len].option = tape ? v - 1 : 0;   /* without tape: ignored */
            enum_dfs(len + 1, limit, fn_done || i == enum_chain->n, next_b);
        }
}

/* n_chains_to_check chains without options, then n_option_chains with (drawn from the option
   stream, so the first ones are those drawn before options existed). */
static void check_references_by_enumeration(int n_chains_to_check, int n_option_chains) {
    static search_result sr;
    chain ch;
    int c, j;
    for (c = 0; c < n_chains_to_check + n_option_chains; c++) {
        int with_options = c >= n_chains_to_check;
        int n = 1 + c % 3, limit = n == 1 ? 4 : n == 2 ? 8 : 9;
        chain_facts f;
        uint64_t b, step;
        if (with_options) swap_streams();
        random_chain(&ch, n, 2000 + c);
        if (c % 4 == 3) ch.c[rnd_int(0, n - 1)].flags = CKPT_STAGE_NO_CHECKPOINT;
        if (n == 3) ch.c[0].wf = ch.c[1].wb = ch.unit;   /* unit: already x CKPT_ALIGN */   /* a little variety where it is costly */
        if (with_options) {
            swap_streams();
            /* on three stages, one option on two stages at most (the enumeration grows fast) */
            add_options(&ch, 60, n == 3 ? 2 : n, n == 3 ? 1 : 3);
            n_opt_enum_chains++;
        }
        facts_of(&ch, &f);
        enum_chain = &ch;
        enum_nb = 0;
        step = (f.store_all_peak - f.min_budget) / 10 + 1;
        for (b = f.min_budget > 1 ? f.min_budget - 1 : 1; b <= f.store_all_peak && enum_nb < 16; b += step)
            enum_budget[enum_nb++] = b;
        for (j = 0; j < enum_nb; j++) enum_best_t[j] = -1.0;
        enum_dfs(0, limit, 0, n);
        for (j = 0; j < enum_nb; j++) {
            double st;
            int ok;
            n_opt_enum_cases += with_options;
            search(&ch, enum_budget[j], 0, &sr);
            st = sr.feasible ? chain_time(&ch, sr.time) : -1.0;
            if (enum_best_t[j] < 0) ok = !sr.feasible || sr.n_ops > limit;
            else if (!sr.feasible) ok = 0;
            else if (sr.n_ops <= limit) ok = time_eq(st, enum_best_t[j]) && sr.peak == enum_best_p[j];
            else ok = st < enum_best_t[j] || time_eq(st, enum_best_t[j]);
            if (!ok && fail_begin(&ch, "reference-self-check (enumeration)", -1, enum_budget[j])) {
                fprintf(stderr, "  enumeration: time %.17g peak %llu (%d ops); search: %s time %.17g peak %llu\n",
                        enum_best_t[j], (unsigned long long)enum_best_p[j], enum_best_len[j],
                        sr.feasible ? "feasible" : "infeasible", st, (unsigned long long)sr.peak);
                fprintf(stderr, "  search ops:");
                print_ops(stderr, sr.ops, sr.n_ops);
            }
        }
    }
}

/* The arena's descent (>>fit) must not make a larger budget plan slower. Every budget from
   min_budget to store-all's peak is planned, in steps of CKPT_ALIGN: sizes are multiples of 128,
   and the planner rounds them up to CKPT_ALIGN, so a budget plans as the multiple below it. Each
   chain must see the descent (a plan made below its budget) and its min_budget and store-all's
   peak as recorded (else the chain no longer tests what it was chosen for). A larger budget can
   still plan slower where the exact search returns, among schedules of the same time, one whose
   arena does not fit, and the try at its own peak returns it again: on the 8-stage chain
   (f, b, a, t, wf, wb) = (7,1,1280,2048,0,1536), (8,1,2560,1280,0,0), (1,1,5376,6912,1024,0),
   (5,5,4096,3840,0,0), (7,3,4864,5120,2304,3584), (5,3,6144,3328,0,0), (2,7,2048,6400,1792,0),
   (1,1,3328,4608,2304,2304), budget 33280 plans time 79 (arena 33024) and 33536 time 80. */
static void descent_sweep(const char *what, const double *f, const double *bt, const uint64_t *a, const uint64_t *t,
                          const uint64_t *wf, const uint64_t *wb, uint64_t want_lo, uint64_t want_hi) {
    ckpt_cost c[7];
    ckpt_plan_desc pd;
    ckpt_plan_info info;
    ckpt_plan *plan = NULL;
    uint64_t b, lo, hi, lowered = 0;
    double prev = -1.0;
    int bad = 0, i;
    memset(c, 0, sizeof c);
    memset(&pd, 0, sizeof pd);
    for (i = 0; i < 7; i++) { c[i].f = f[i]; c[i].b = bt[i]; c[i].a = a[i]; c[i].t = t[i]; c[i].wf = wf[i]; c[i].wb = wb[i]; }
    pd.budget = 1;
    if (ckpt_plan_create(c, 7, &pd, &plan, &info) != CKPT_ERR_INFEASIBLE) bad = 1;
    lo = info.min_budget; hi = info.store_all_peak;
    for (b = lo; b <= hi && !bad; b += CKPT_ALIGN) {
        pd.budget = b;
        if (ckpt_plan_create(c, 7, &pd, &plan, &info) != CKPT_OK) { bad = 2; break; }
        ckpt_plan_destroy(plan); plan = NULL;
        if (info.fit_budget < b) lowered++;
        if (prev >= 0 && info.time > prev) { bad = 3; break; }
        prev = info.time;
    }
    if (bad || lowered == 0 || lo != want_lo || hi != want_hi) {
        n_failures++;
        fprintf(stderr, "FAIL: the arena's descent (%s), budgets %llu..%llu: %s at budget %llu (time %g, fit_budget %llu, "
                "%llu budgets lowered)\n", what, (unsigned long long)lo, (unsigned long long)hi,
                bad == 3 ? "slower than a budget below" : bad ? "no plan" : "the chain changed", (unsigned long long)b,
                info.time, (unsigned long long)info.fit_budget, (unsigned long long)lowered);
    }
}

static void check_fit_descent(void) {
    /* The optimum at 18688 (time 80, peak 18688) needs an arena of 18944 even after the layout's
       search; a byte below its peak plans in time 82 within 17920 bytes of arena. */
    static const double f1[7] = {1, 4, 5, 3, 5, 5, 5}, b1[7] = {8, 1, 4, 1, 8, 4, 4};
    static const uint64_t a1[7] = {3072, 2816, 2560, 2944, 640, 2816, 2944}, t1[7] = {2816, 3200, 4096, 5248, 4480, 4736, 4224};
    static const uint64_t wf1[7] = {0, 0, 2304, 0, 0, 0, 0}, wb1[7] = {256, 1536, 0, 1024, 0, 1280, 1024};
    /* Two schedules of time 83 and peak 13312: the exact search returns one with an arena of
       13312 at 13567, and one with an arena of 13824 at 13568 (and 13823), where a byte below
       the peak plans in time 87. Planning at the plan's own peak first finds the other schedule
       again. */
    static const double f2[7] = {5, 2, 3, 5, 4, 7, 1}, b2[7] = {8, 1, 3, 6, 2, 3, 4};
    static const uint64_t a2[7] = {2816, 128, 384, 1408, 1920, 2944, 2560}, t2[7] = {4992, 1408, 4480, 5760, 1920, 1920, 3840};
    static const uint64_t wf2[7] = {0, 2304, 0, 0, 0, 0, 0}, wb2[7] = {1024, 2560, 2048, 0, 0, 0, 0};
    descent_sweep("a byte below the peak", f1, b1, a1, t1, wf1, wb1, 15104, 48384);
    descent_sweep("the plan's own peak", f2, b2, a2, t2, wf2, wb2, 11520, 38400);
}

/* Chains that once exposed library bugs, checked whatever the random sweep draws. */
static void check_regressions(void) {
    chain ch;
    /* Optimal needs to drop X[n-1] after F(n) and recompute it with its tape before B(n):
       F1 F2 F3* F2* B3 F1* B2 B1 has peak 60 (min_budget 60, not 63). */
    static const long long f226[] = {2, 4, 0}, b226[] = {11, 0, 12};
    static const uint64_t a226[] = {3, 15, 12}, t226[] = {3, 24, 6}, wf226[] = {0, 12, 6};
    /* Ten stages with two no-checkpoint flags: the exact search must still cover all schedules
       (optimal time 78 at budget 105, found through a non-persistent schedule). */
    static const long long f1002[] = {4, 0, 3, 4, 4, 0, 4, 2, 2, 0}, b1002[] = {2, 6, 6, 4, 2, 5, 5, 5, 5, 6};
    static const uint64_t a1002[] = {6, 18, 18, 12, 0, 0, 18, 3, 0, 3}, t1002[] = {24, 0, 12, 18, 0, 21, 0, 9, 15, 21},
                          wf1002[] = {6, 9, 9, 6, 6, 9, 0, 0, 0, 0}, wb1002[] = {0, 0, 0, 0, 0, 12, 0, 0, 0, 6};
    int i;
    uniform_chain(&ch, 3, 0, 0, 0, 0, "regression: drop X[n-1] at F(n)");
    ch.unit = 3;
    for (i = 1; i <= 3; i++) {
        ch.fq[i] = f226[i - 1];
        ch.bq[i] = b226[i - 1];
        ch.c[i - 1].a = a226[i - 1];
        ch.c[i - 1].t = t226[i - 1];
        ch.c[i - 1].wf = wf226[i - 1];
    }
    chain_finish(&ch);
    check_chain(&ch, 3, 6, 1, 0);
    uniform_chain(&ch, 10, 0, 0, 0, 0, "regression: 10 stages, 2 no-checkpoint");
    ch.unit = 3;
    for (i = 1; i <= 10; i++) {
        ch.fq[i] = f1002[i - 1];
        ch.bq[i] = b1002[i - 1];
        ch.c[i - 1].a = a1002[i - 1];
        ch.c[i - 1].t = t1002[i - 1];
        ch.c[i - 1].wf = wf1002[i - 1];
        ch.c[i - 1].wb = wb1002[i - 1];
        ch.c[i - 1].flags = (i == 1 || i == 8) ? CKPT_STAGE_NO_CHECKPOINT : 0u;
    }
    chain_finish(&ch);
    {
        /* one budget only: the library's exact search of this chain is big (slow under ASan) */
        chain_facts facts;
        static search_result best;
        double opt_time;
        n_chains++;
        facts_of(&ch, &facts);
        check_optimal(&ch, 105 * CKPT_ALIGN, &facts, &best, &opt_time);
    }
}

int main(void) {
    double t0 = now_s(), t_small, t_big;
    int i, scale = 1;
    chain ch;
    const char *env = getenv("CKPT_BRUTEFORCE_SCALE");   /* > 1: a longer, deeper run */
    if (env && atoi(env) > 1) scale = atoi(env);

    if (check_design_example()) n_failures++;
    check_references_by_enumeration(12, 9);
    uniform_chain(&ch, 4, 1, 2, 10, 20, "four-stage example");
    check_chain(&ch, 4, 8, 1, 0);
    check_no_checkpoint_examples();
    swap_streams();     /* the option examples' budgets from the option stream */
    check_option_examples();
    check_unaligned(TEST_REDUCED ? 4 : 8);
    swap_streams();
    check_regressions();
    check_fit_descent();

    /* the main sweep: 1..7 stages, every policy; every third chain again with tape options (every
       sixth of 7 stages; half as many in reduced builds), its budgets and walks from the option
       stream */
    for (i = 0; i < 320 * scale; i++) {
        int n = i < 14 ? 1 + i % 7 : rnd_int(1, 7);
        random_chain(&ch, n, i);
        if (n <= 5) check_chain(&ch, 4, i % 3 == 0 ? 6 : 0, 1, 0);
        else check_chain(&ch, 1, i % 4 == 0 ? 2 : 0, 1, 1);
        fuzz_simulate(&ch, 4);
        if (TEST_REDUCED ? i % 6 == 1 && (n < 7 || i % 12 == 1) : i % 3 == 1 && (n < 7 || i % 6 == 1)) {
            add_options(&ch, n <= 5 ? 60 : 40, n <= 5 ? n : 2, n <= 5 ? 3 : 2);
            swap_streams();
            if (n <= 5) check_chain(&ch, 4, i % 2 ? 6 : 0, 1, 0);
            else check_chain(&ch, 1, i % 4 == 0 ? 2 : 0, 1, 1);
            fuzz_simulate(&ch, 4);
            swap_streams();
        }
    }
    t_small = now_s();

    /* a few longer chains: the library promises exactness up to CKPT_EXACT_SEARCH_MAX_STAGES
       (check_regressions has one of 10 stages with no-checkpoint flags) */
    for (i = 0; i < 2 * scale - 1; i++) {
        random_chain(&ch, 8 + i % 2, 1000 + i);
        check_chain(&ch, 1, 0, 0, 1);
    }
    uniform_chain(&ch, 10, 1, 2, 10, 20, "uniform 10");
    check_chain(&ch, 0, 0, 0, 1);
    /* and 8 stages with tape options (on two stages, from the option stream) */
    swap_streams();
    for (i = 0; i < scale; i++) {
        random_chain(&ch, 8, 1100 + i);
        add_options(&ch, 30, 2, 2);
        check_chain(&ch, 1, 0, 0, 1);
    }
    swap_streams();
    t_big = now_s();

    /* the tape options must have been exercised: optimal plans that keep some tape in an option
       other than 0 (else this file would not be testing them) */
    if (n_opt_lib_nonzero == 0 || n_opt_ref_nonzero == 0) {
        fprintf(stderr, "FAIL: no optimal plan (library %d, reference %d) of the %d feasible option cases keeps a tape "
                        "in an option other than 0\n", n_opt_lib_nonzero, n_opt_ref_nonzero, n_opt_feasible);
        n_failures++;
    }

    printf("test_planner_bruteforce: %d chains, %d optimal plans checked (%d infeasible), %d other-policy plans "
           "(%d infeasible), %d simulate comparisons (%d fuzzed schedules, %d invalid, %d with a bad tape option), "
           "%lld search states; tape options: %d chains, %d optimal checks (%d feasible; optimal plans with a "
           "non-zero option: library %d, reference %d), enumeration %d chains / %d budgets, %d plans of "
           "unaligned sizes; "
           "%d failures, notes: %d float tie-breaks, %d degenerate-schedule verdicts, %d optimal checks where the arena "
           "set the budget; %.2f s CPU (checks and 1..7 stages %.2f s, 8..10 stages %.2f s)\n",
           n_chains, n_checks, n_infeasible_checks, n_policy_plans, n_policy_infeasible, n_sim_compares, n_fuzz,
           n_fuzz_invalid, n_fuzz_bad_option, search_expanded_total, n_opt_chains, n_opt_checks, n_opt_feasible,
           n_opt_lib_nonzero, n_opt_ref_nonzero, n_opt_enum_chains, n_opt_enum_cases, n_unaligned_plans, n_failures, n_tie_notes,
           n_sim_notes, n_layout_limited, t_big - t0, t_small - t0, t_big - t_small);
    free(nodes);
    free(htab);
    free(heap);
    return n_failures ? 1 : 0;
}
