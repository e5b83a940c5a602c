/* test_offload_planner.c -- checks the offload cost model and planner against an independent
   simulator.

   Everything here is written from the manual at the top of ckpt.h (COST MODEL and OFFLOAD), not
   from ckpt.h's _ckpt_analyze / _ckpt_an_timeline or its offload planner:

   1. osim(): a second implementation of the documented model with F, B, O and P ops: every
      validity rule, the makespan with one device-to-host and one host-to-device channel, the
      device peak with the release rule for offloaded copies, and the pinned host peak.
   2. Hand-made schedules whose figures are worked out in the comments: osim() and
      ckpt_schedule_simulate_offload must both give them.
   3. Invalid schedules: both must reject each one (CKPT_ERR_BAD_SCHEDULE), and a bad link
      bandwidth is CKPT_ERR_BAD_ARGUMENT.
   4. Random chains (1..12 stages) planned with CKPT_POLICY_OFFLOAD at random budgets, link
      speeds and host budgets: every plan replays in osim() with the time, peak and host peak it
      reports, fits its budgets and is never slower than CKPT_POLICY_OPTIMAL at the same budget
      (and with bandwidth 0 plans what optimal does). Its min_budget is at most optimal's, and at
      most the budget when it planned. Below optimal's min_budget the result is
      CKPT_ERR_INFEASIBLE, and then the min_budget it names plans, or a valid plan within the
      budget. Prints, per link class, how often offloading is strictly faster and the mean time
      ratio.
      4b. Differential: O/P pairs inserted at random into planned F/B schedules, plus random
      mutations; osim() and ckpt_schedule_simulate_offload must agree on validity and figures,
      and ckpt_schedule_simulate (untimed) must agree with osim() keeping every copy until its P.
      4c. (The one part that calls ckpt.h's internals.) In those schedules, the buffers the offload
      planner may offload at an op (_ckpt_off_gaps) are those of their definition.
   5. A fixed chain where offloading must beat recomputation (both times printed).
   6. Host allocations of planning a 15-stage chain fail in turn (every one, or every k-th of
      offload's 15,569), for every policy: the same plan or CKPT_ERR_OUT_OF_HOST_MEMORY.

   Usage: test_offload_planner [n_chains] (default 100, 12 in sanitizer builds; part 4b uses twice as many).
   Exit 0 on success, 1 on any failure (each failure prints what was expected and got). */

/* The exact search over all schedules costs about a second per plan at 10 stages (ten times more
   under ASan); here chains of 9..12 stages get the persistent program instead (as chains over 10
   stages always do). Optimised, the whole test takes about a minute on 2 cores. */
#define CKPT_EXACT_SEARCH_MAX_STAGES 8
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXN 16             /* largest chain the simulator handles */
#define MAX_OPS 4096        /* longest schedule it handles */
/* PRNG (test_util.h): xorshift64*, fixed seed, so every run sees the same chains. */
#define TEST_XORSHIFT64STAR_SEED 0x2545f4914f6cdd1dull
#include "test_util.h"

static double now_s(void) { return (double)clock() / (double)CLOCKS_PER_SEC; }

static int time_eq(double x, double y) {
    double m = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
    return fabs(x - y) <= 1e-9 * m + 1e-12;
}

/* ------------------------------------------------------------------------------------------
   Printing schedules: F<i>+ keeps its tape, O<i>/P<i>/W<i> move X[i] (W: wait for its O),
   O<i>t/P<i>t/W<i>t move T[i]. */
static void fprint_ops(FILE *f, const ckpt_op *ops, int n_ops) {
    int k;
    for (k = 0; k < n_ops; k++) {
        switch (ops[k].kind) {
        case CKPT_OP_F: fprintf(f, " F%d%s", ops[k].stage, ops[k].tape ? "+" : ""); break;
        case CKPT_OP_B: fprintf(f, " B%d", ops[k].stage); break;
        case CKPT_OP_O: fprintf(f, " O%d%s", ops[k].stage, ops[k].tape ? "t" : ""); break;
        case CKPT_OP_P: fprintf(f, " P%d%s", ops[k].stage, ops[k].tape ? "t" : ""); break;
        case CKPT_OP_W: fprintf(f, " W%d%s", ops[k].stage, ops[k].tape ? "t" : ""); break;
        default: fprintf(f, " ?%d/%d", (int)ops[k].kind, ops[k].stage); break;
        }
    }
    fprintf(f, "\n");
}

static void fprint_costs(FILE *f, const ckpt_cost *c, int n) {
    int i;
    fprintf(f, "  ckpt_cost costs[%d] = {  /* f, b, a, t, wf, wb, flags */\n", n);
    for (i = 0; i < n; i++)
        fprintf(f, "    {%.17g, %.17g, %llu, %llu, %llu, %llu, %u},\n", c[i].f, c[i].b,
                (unsigned long long)c[i].a, (unsigned long long)c[i].t, (unsigned long long)c[i].wf,
                (unsigned long long)c[i].wb, c[i].flags);
    fprintf(f, "  };\n");
}

/* Parses "F1+ O1t F2+ F3+ B3 B2 P1t B1" into ops; returns the count (-1 on a typo). */
static int parse_ops(const char *s, ckpt_op *ops, int cap) {
    int n = 0;
    while (*s) {
        ckpt_op op;
        char *end;
        long v;
        if (*s == ' ') { s++; continue; }
        memset(&op, 0, sizeof op);
        switch (*s) {
        case 'F': op.kind = CKPT_OP_F; break;
        case 'B': op.kind = CKPT_OP_B; break;
        case 'O': op.kind = CKPT_OP_O; break;
        case 'P': op.kind = CKPT_OP_P; break;
        case 'W': op.kind = CKPT_OP_W; break;
        default: return -1;
        }
        v = strtol(s + 1, &end, 10);
        if (end == s + 1 || n >= cap) return -1;
        op.stage = (int)v;
        s = end;
        if (*s == '+' || *s == 't') { op.tape = 1; op.option = 0; s++; }
        ops[n++] = op;
    }
    return n;
}

/* ==========================================================================================
   1. The simulator, written from the manual (COST MODEL and OFFLOAD).

   Buffers are X[1..n-1] (a_i), T[1..n] (t_i) and G[1..n-1] (a_i); X[0], G[0] and G[n] are the
   caller's, X[n] lives during F(n) only. Every write of X[i] or T[i] (by F) and every P starts a
   *version*: it counts from that op through its last read (its start alone if never read); a B
   consumes the versions it reads. An offloaded version (one that O copied) counts instead
   through its release point:
     r = the later of its O and its last read (no read of it can come after its P);
     at each compute op c after r and before its P, in order: if the O copy has ended by the
     time c starts (a tie counts as done), it counts through c-1 and is released;
     a W of the pair before that releases it instead: it counts through the op before the W;
     if neither exists, it counts through the op before its P, and the first compute op after
     that P waits for the O copy.
   A W(i) needs an O(i) whose P has not come yet, once per pair; no read of the device copy may
   follow it. Compute (and every copy issued after it) resumes only when the O's copy is done.
   Host bytes of a pair count from its O through the first read of the version its P brings
   back; when that copy is never read (a P hoisted above a rewrite of the buffer) the host copy
   ends with the device copy, at the P itself, and the next compute op waits for the P's copy.
   An O of a version that a P brought back starts no earlier than that P's copy ends.

   Timing: compute ops run back to back in schedule order; O and P each use their own channel,
   one copy at a time in schedule order. O starts at max(end of the compute before it, d2h
   free); P at max(end of the compute before it, h2d free, its O's end). A compute op starts at
   max(previous compute end, end of the P of every prefetched version it reads, pending waits
   of forced releases). Makespan = the largest end of any compute op or copy. */
typedef struct osim_result {
    int ok;
    int bad_op;             /* first offending op; -1 when structural at the end */
    char msg[200];
    double time, compute_time;
    uint64_t peak, host_peak;
    int n_o;                /* O ops */
} osim_result;

#define BX(i) (i)               /* buffer id of X[i] */
#define BT(i) (MAXN + 1 + (i))  /* buffer id of T[i] */
#define NBUF (2 * MAXN + 2)

typedef struct version {
    uint64_t bytes;
    int start;      /* op that wrote it (F) or brought it back (P) */
    int last;       /* last op that read it; start when never read */
    int first_read; /* -1 if never read */
    int offload;    /* pair whose O copied it to the host, -1 */
    int from;       /* pair whose P created it, -1 */
    int waited;     /* a W released it: no more reads */
} version;

typedef struct pairrec {
    uint64_t bytes;
    int o, p;           /* op indices */
    int oldv, newv;     /* version copied out, version brought back */
    int release;        /* last op the old device copy counts in */
    int w;              /* the W op of the pair, -1 */
    double o_end, p_end;
} pairrec;

static int sim_fail(osim_result *r, int k, const char *fmt, int i) {
    r->ok = 0;
    r->bad_op = k;
    snprintf(r->msg, sizeof r->msg, fmt, i);
    return 0;
}

static version V[2 * MAX_OPS];              /* an F makes up to two (X[i], T[i]), a P one */
static pairrec PR[MAX_OPS];
static int rd[MAX_OPS][2];                  /* versions each compute op reads */
static int op_pair[MAX_OPS];                /* the pair of each O or P op */
static uint64_t add_[MAX_OPS + 1], sub_[MAX_OPS + 1], trans_[MAX_OPS + 1];
static uint64_t hadd[MAX_OPS + 1], hsub[MAX_OPS + 1];
static int nv, np;
static int copies_never_done = 0;   /* 1: every release is forced (ckpt_schedule_simulate's model) */

static int new_version(uint64_t bytes, int k) {
    V[nv].bytes = bytes;
    V[nv].start = k;
    V[nv].last = k;
    V[nv].first_read = -1;
    V[nv].offload = -1;
    V[nv].from = -1;
    V[nv].waited = 0;
    return nv++;
}
static void read_version(int v, int k) {
    V[v].last = k;
    if (V[v].first_read < 0) V[v].first_read = k;
}

static int osim(const ckpt_cost *user_costs, int n, const ckpt_op *ops, int n_ops, double bw_d2h, double bw_h2d,
                osim_result *r) {
    ckpt_cost c[MAXN] = {{0}};  /* the model's sizes: each rounded up to CKPT_ALIGN (all-zero times: 1, 2) */
    int cur[NBUF];      /* current version of each buffer, -1 none */
    int off[NBUF];      /* pair holding the buffer offloaded, -1 none */
    int nock_used[MAXN + 2];
    int fn_at = -1, next_b = n, k, i, j;
    double cend, d2h_free, h2d_free, pending;
    uint64_t cur_dev, cur_host;

    memset(r, 0, sizeof *r);
    r->ok = 1;
    r->bad_op = -1;
    if (n < 1 || n > MAXN || n_ops < 0 || n_ops > MAX_OPS) return sim_fail(r, -1, "bad sizes%d", 0);
    {
        int zero = 1;
        for (i = 0; i < n; i++) {
            c[i] = user_costs[i];
            c[i].a = (c[i].a + 255) / 256 * 256; c[i].t = (c[i].t + 255) / 256 * 256;
            c[i].wf = (c[i].wf + 255) / 256 * 256; c[i].wb = (c[i].wb + 255) / 256 * 256;
            zero &= c[i].f == 0 && c[i].b == 0;
        }
        for (i = 0; zero && i < n; i++) { c[i].f = 1; c[i].b = 2; }
    }
    if (bw_h2d <= 0) bw_h2d = bw_d2h;
    nv = np = 0;
    for (j = 0; j < NBUF; j++) cur[j] = off[j] = -1;
    for (j = 0; j < MAXN + 2; j++) nock_used[j] = 0;
    memset(add_, 0, sizeof add_);
    memset(sub_, 0, sizeof sub_);
    memset(trans_, 0, sizeof trans_);
    memset(hadd, 0, sizeof hadd);
    memset(hsub, 0, sizeof hsub);

    /* ---- pass 1: validity, versions, pairs ---- */
    for (k = 0; k < n_ops; k++) {
        const ckpt_op *op = &ops[k];
        i = op->stage;
        rd[k][0] = rd[k][1] = -1;
        if (op->kind == CKPT_OP_F) {
            const ckpt_cost *s;
            int v;
            if (i < 1 || i > n) return sim_fail(r, k, "F stage %d out of range", i);
            s = &c[i - 1];
            if (op->tape != 0 && op->tape != 1) return sim_fail(r, k, "F tape flag %d not 0/1", op->tape);
            if (i == n) {
                if (fn_at >= 0) return sim_fail(r, k, "F(%d) runs twice", n);
                if (!op->tape) return sim_fail(r, k, "F(%d) must keep its tape", n);
            }
            r->compute_time += s->f;
            if (i >= 2) {   /* reads X[i-1]: its device copy, offloaded or not */
                v = cur[BX(i - 1)];
                if (v < 0) return sim_fail(r, k, "F(%d) reads X[i-1], which is not live", i);
                if (V[v].waited) return sim_fail(r, k, "F(%d) reads X[i-1] after a W released it", i);
                read_version(v, k);
                rd[k][0] = v;
            }
            if (s->flags & CKPT_STAGE_NO_CHECKPOINT) {
                if (nock_used[i]) return sim_fail(r, k, "F(%d) runs twice from the same X[i-1] (no-checkpoint)", i);
                nock_used[i] = 1;
            }
            if (i < n) {    /* writes X[i] */
                if (off[BX(i)] >= 0) return sim_fail(r, k, "F(%d) rewrites X[i] while its host copy waits", i);
                cur[BX(i)] = new_version(s->a, k);
                nock_used[i + 1] = 0;   /* X[i] recomputed: F(i+1) may run from it again */
            } else {
                add_[k] += s->a;        /* X[n] lives during F(n) only */
                sub_[k] += s->a;
                fn_at = k;
            }
            if (op->tape) {
                if (off[BT(i)] >= 0) return sim_fail(r, k, "F(%d, tape) rewrites T[i] while its host copy waits", i);
                cur[BT(i)] = new_version(s->t, k);
            } else {
                trans_[k] += s->t;
            }
            trans_[k] += s->wf;
        } else if (op->kind == CKPT_OP_B) {
            const ckpt_cost *s;
            int v;
            if (i < 1 || i > n) return sim_fail(r, k, "B stage %d out of range", i);
            s = &c[i - 1];
            if (fn_at < 0) return sim_fail(r, k, "B(%d) before F(n)", i);
            if (i != next_b) return sim_fail(r, k, "B(%d) out of order", i);
            r->compute_time += s->b;
            v = cur[BT(i)];
            if (v < 0) return sim_fail(r, k, "B(%d) needs T[i], which is not live", i);
            if (off[BT(i)] >= 0) return sim_fail(r, k, "B(%d) consumes T[i] while it is offloaded", i);
            read_version(v, k);
            rd[k][0] = v;
            cur[BT(i)] = -1;
            if (i >= 2) {
                v = cur[BX(i - 1)];
                if (v < 0) return sim_fail(r, k, "B(%d) needs X[i-1], which is not live", i);
                if (off[BX(i - 1)] >= 0) return sim_fail(r, k, "B(%d) consumes X[i-1] while it is offloaded", i);
                read_version(v, k);
                rd[k][1] = v;
                cur[BX(i - 1)] = -1;
                add_[k] += c[i - 2].a;  /* G[i-1] written now, lives through B(i-1) */
            }
            if (i < n) sub_[k] += s->a; /* G[i] (written by B(i+1)) freed after B(i) */
            trans_[k] += s->wb;
            next_b--;
        } else if (op->kind == CKPT_OP_O || op->kind == CKPT_OP_P || op->kind == CKPT_OP_W) {
            int b, v, p;
            uint64_t bytes;
            if (op->tape != 0 && op->tape != 1) return sim_fail(r, k, "O/P/W tape flag %d not 0/1", op->tape);
            if (op->tape ? (i < 1 || i > n) : (i < 1 || i > n - 1))
                return sim_fail(r, k, "O/P/W buffer index %d out of range", i);
            b = op->tape ? BT(i) : BX(i);
            bytes = op->tape ? c[i - 1].t : c[i - 1].a;
            if (op->kind == CKPT_OP_W) {
                p = off[b];
                if (p < 0) return sim_fail(r, k, "W(%d) without an O waiting for its P", i);
                if (PR[p].w >= 0) return sim_fail(r, k, "W(%d) twice for one O", i);
                PR[p].w = k;
                V[PR[p].oldv].waited = 1;
                op_pair[k] = p;
            } else if (op->kind == CKPT_OP_O) {
                if (off[b] >= 0) return sim_fail(r, k, "O(%d) of a buffer already offloaded", i);
                if (cur[b] < 0) return sim_fail(r, k, "O(%d) of a buffer that is not live", i);
                p = np++;
                PR[p].bytes = bytes;
                PR[p].o = k;
                PR[p].p = -1;
                PR[p].oldv = cur[b];
                PR[p].newv = -1;
                PR[p].release = -1;
                PR[p].w = -1;
                V[cur[b]].offload = p;
                off[b] = p;
                op_pair[k] = p;
                r->n_o++;
            } else {
                p = off[b];
                if (p < 0) return sim_fail(r, k, "P(%d) without an O of the same buffer", i);
                v = new_version(bytes, k);
                V[v].from = p;
                op_pair[k] = p;
                PR[p].p = k;
                PR[p].newv = v;
                cur[b] = v;
                off[b] = -1;
            }
        } else {
            return sim_fail(r, k, "unknown op kind %d", (int)op->kind);
        }
    }
    for (j = 0; j < NBUF; j++)
        if (off[j] >= 0) return sim_fail(r, -1, "O at op %d has no P", PR[off[j]].o);
    if (fn_at < 0) return sim_fail(r, -1, "no F(%d)", n);
    if (next_b != 0) return sim_fail(r, -1, "B(%d) never runs", next_b);

    /* ---- pass 2: the timeline and the release points ---- */
    cend = d2h_free = h2d_free = 0;
    pending = 0;
    r->time = 0;
    for (k = 0; k < n_ops; k++) {
        const ckpt_op *op = &ops[k];
        if (op->kind == CKPT_OP_F || op->kind == CKPT_OP_B) {
            double start = cend, dur;
            int q;
            if (pending > start) start = pending;   /* a forced release waits for its O copy */
            pending = 0;
            for (q = 0; q < 2; q++)                 /* prefetched inputs */
                if (rd[k][q] >= 0 && V[rd[k][q]].from >= 0 && PR[V[rd[k][q]].from].p_end > start)
                    start = PR[V[rd[k][q]].from].p_end;
            for (j = 0; j < np; j++) {              /* releases once the copy is done */
                int rr = PR[j].o > V[PR[j].oldv].last ? PR[j].o : V[PR[j].oldv].last;
                if (PR[j].release < 0 && rr < k && k < PR[j].p && PR[j].o_end <= start && !copies_never_done)
                    PR[j].release = k - 1;
            }
            dur = op->kind == CKPT_OP_F ? c[op->stage - 1].f : c[op->stage - 1].b;
            cend = start + dur;
            if (cend > r->time) r->time = cend;
        } else {
            j = op_pair[k];
            if (op->kind == CKPT_OP_W) {        /* release now (unless done), compute waits */
                if (PR[j].release < 0) PR[j].release = k - 1;
                if (PR[j].o_end > cend) cend = PR[j].o_end;
            } else if (op->kind == CKPT_OP_O) {
                double s = cend > d2h_free ? cend : d2h_free;
                int from = V[PR[j].oldv].from;      /* a version a P brought back: after that copy */
                if (from >= 0 && PR[from].p_end > s) s = PR[from].p_end;
                PR[j].o_end = s + (double)PR[j].bytes / bw_d2h;
                d2h_free = PR[j].o_end;
                if (d2h_free > r->time) r->time = d2h_free;
            } else {
                double s = cend;
                if (h2d_free > s) s = h2d_free;
                if (PR[j].o_end > s) s = PR[j].o_end;
                if (PR[j].release < 0) {    /* forced at the op before P */
                    PR[j].release = k - 1;
                    if (PR[j].o_end > pending) pending = PR[j].o_end;
                }
                PR[j].p_end = s + (double)PR[j].bytes / bw_h2d;
                h2d_free = PR[j].p_end;
                if (V[PR[j].newv].first_read < 0 && PR[j].p_end > pending) pending = PR[j].p_end;  /* unread */
                if (h2d_free > r->time) r->time = h2d_free;
            }
        }
    }

    /* ---- pass 3: device and host bytes ---- */
    for (j = 0; j < nv; j++) {
        int end = V[j].offload >= 0 ? PR[V[j].offload].release : V[j].last;
        if (end < V[j].start) return sim_fail(r, -1, "internal: version ends before it starts%d", 0);
        add_[V[j].start] += V[j].bytes;
        sub_[end] += V[j].bytes;
    }
    for (j = 0; j < np; j++) {
        int fr = V[PR[j].newv].first_read;
        hadd[PR[j].o] += PR[j].bytes;
        hsub[fr >= 0 ? fr : PR[j].p] += PR[j].bytes;
    }
    cur_dev = cur_host = 0;
    for (k = 0; k < n_ops; k++) {
        uint64_t during;
        cur_dev += add_[k];
        during = cur_dev + trans_[k];
        if (during > r->peak) r->peak = during;
        cur_dev -= sub_[k];
        cur_host += hadd[k];
        if (cur_host > r->host_peak) r->host_peak = cur_host;
        cur_host -= hsub[k];
    }
    if (cur_dev != 0 || cur_host != 0) return sim_fail(r, -1, "internal: bytes left at the end%d", 0);
    return 1;
}

/* ==========================================================================================
   2. Hand-made schedules. */

/* Checks osim() and the library against hand figures (time < 0: do not check the time). */
static void check_hand(const char *name, const ckpt_cost *hand, int n, const char *sched, double bw, double bwh,
                       double want_time, uint64_t want_peak, uint64_t want_host) {
    /* The figures are worked out in bytes; the model rounds every size up to CKPT_ALIGN (256), so
       the chain runs with sizes and link 256 times the hand ones: same times, peaks x 256. */
    ckpt_cost c[MAXN] = {{0}};
    int i;
    ckpt_op ops[256];
    int n_ops = parse_ops(sched, ops, 256), bad = -7;
    osim_result *r = (osim_result *)malloc(sizeof *r);
    ckpt_sim s;
    ckpt_result res;
    memset(&s, 0, sizeof s);
    for (i = 0; i < n; i++) {
        c[i] = hand[i];
        c[i].a *= 256; c[i].t *= 256; c[i].wf *= 256; c[i].wb *= 256;
    }
    bw *= 256; bwh *= 256; want_peak *= 256; want_host *= 256;
    CHECK(n_ops > 0, "%s: cannot parse '%s'", name, sched);
    if (n_ops <= 0) { free(r); return; }
    CHECK(osim(c, n, ops, n_ops, bw, bwh, r), "%s: osim rejects it at op %d: %s", name, r->bad_op, r->msg);
    CHECK(time_eq(r->time, want_time), "%s: osim time %.17g, want %.17g", name, r->time, want_time);
    CHECK(r->peak == want_peak, "%s: osim peak %llu, want %llu", name, (unsigned long long)r->peak,
          (unsigned long long)want_peak);
    CHECK(r->host_peak == want_host, "%s: osim host %llu, want %llu", name, (unsigned long long)r->host_peak,
          (unsigned long long)want_host);
    res = ckpt_schedule_simulate_offload(c, n, ops, n_ops, bw, bwh, &s, &bad);
    CHECK(res == CKPT_OK, "%s: library rejects it: %s at op %d", name, ckpt_result_string(res), bad);
    if (res == CKPT_OK) {
        CHECK(time_eq(s.time, want_time), "%s: library time %.17g, want %.17g", name, s.time, want_time);
        CHECK(s.peak == want_peak, "%s: library peak %llu, want %llu", name, (unsigned long long)s.peak,
              (unsigned long long)want_peak);
        CHECK(s.host_peak == want_host, "%s: library host %llu, want %llu", name, (unsigned long long)s.host_peak,
              (unsigned long long)want_host);
        CHECK(time_eq(s.compute_time, r->compute_time), "%s: library compute time %.17g, osim %.17g", name,
              s.compute_time, r->compute_time);
    }
    {   /* the untimed replay accepts it too, with the compute time */
        double t = -1;
        uint64_t pk = 0;
        res = ckpt_schedule_simulate(c, n, ops, n_ops, &t, &pk, &bad);
        CHECK(res == CKPT_OK && time_eq(t, r->compute_time), "%s: ckpt_schedule_simulate: %s, time %g (want %g)",
              name, ckpt_result_string(res), t, r->compute_time);
    }
    free(r);
}

static void fill_chain(ckpt_cost *c, int n, double f, double b, uint64_t a, uint64_t t) {
    int i;
    memset(c, 0, sizeof(ckpt_cost) * (size_t)n);
    for (i = 0; i < n; i++) { c[i].f = f; c[i].b = b; c[i].a = a; c[i].t = t; }
}

static void test_hand(void) {
    ckpt_cost c[3] = {{0}}, cx[3] = {{0}};
    /* Chain H: 3 stages, f = 1, b = 2, a = 10, t = 90. Store-all: during F3+ X1 T1 X2 T2, X3 (X[n]
       counts during F(n)) and T3: 10+90+10+90+10+90 = 300; time 3 x (1 + 2) = 9. */
    fill_chain(c, 3, 1, 2, 10, 90);
    check_hand("store-all", c, 3, "F1+ F2+ F3+ B3 B2 B1", 100, 0, 9, 300, 0);

    /* Offload T1 at bandwidth 100 (T copy 0.9). Ops: 0 F1+ [0,1]; 1 O1t: copy [1,1.9]; 2 F2+ [1,2]
       starts at 1 < 1.9: T1 still counts; 3 F3+ starts at 2 >= 1.9: T1 released, counts through
       op 2. F3+ [2,3]; 4 B3 [3,5]; 5 B2 [5,7]; 6 P1t: copy [7,7.9]; 7 B1 waits for it: [7.9,9.9].
       Time 9.9. Bytes: F1+ 100, O1t 100, F2+ 200, F3+ X1 X2 T2 X3 T3 = 210, B3 X1 X2 T2 T3 G2 =
       210, B2 X1 T2 G2 G1 = 120, P1t X1 G1 T1 = 110, B1 T1 G1 = 100: peak 210. Host: T1, 90. */
    check_hand("T1 offload, fast link", c, 3, "F1+ O1t F2+ F3+ B3 B2 P1t B1", 100, 0, 9.9, 210, 90);

    /* Tie: bandwidth 90, copy 1.0 exactly: O1t [1,2]; F3+ starts at 2 = the copy's end: done by
       then, so released before F3 as above. P1t [7,8], B1 [8,10]: time 10, peak 210. */
    check_hand("T1 offload, copy ends as F3 starts", c, 3, "F1+ O1t F2+ F3+ B3 B2 P1t B1", 90, 0, 10, 210, 90);

    /* Slow link (bandwidth 10, copy 9): O1t [1,10]; no compute op after it starts by 10 (F2 1, F3 2,
       B3 3, B2 5), so T1 counts until the op before P1t (B2) and the peak stays store-all's 300
       (F3+ and B3 both hold T1). P1t [10,19], B1 [19,21]: time 21. */
    check_hand("T1 offload, slow link: release forced at the op before P", c, 3,
               "F1+ O1t F2+ F3+ B3 B2 P1t B1", 10, 0, 21, 300, 90);

    /* Forced release, then the next compute op waits for the O copy: d2h 20 (copy 4.5), h2d 900
       (copy 0.1). O1t [1,5.5]; F2+ starts 1, F3+ 2: neither after 5.5, so at P1t (op 4) T1 is
       released at the op before (F3+) and the next compute op, B3, waits until 5.5. P1t [5.5,5.6].
       B3 [5.5,7.5], B2 [7.5,9.5], B1 [9.5,11.5]: time 11.5 (without that wait it would be 9).
       Bytes: F3+ X1 T1 X2 T2 X3 T3 = 300; P1t: X1 X2 T2 T3 T1' = 290; B3 + G2 = 300. */
    check_hand("T1 offload, forced release delays the next compute op", c, 3,
               "F1+ O1t F2+ F3+ P1t B3 B2 B1", 20, 900, 11.5, 300, 90);

    /* P hoisted before B2 removes the stall: bandwidth 100. O1t [1,1.9], T1 released before F3+
       as in the fast case; P1t (op 5) starts when B3 ends (5): [5,5.9], B2 [5,7], B1 [7,9]: no
       wait, time 9 = the compute time. Bytes: P1t X1 T2 G2 T1 = 200, B2 + G1 = 210, peak 210. */
    check_hand("T1 offload, P hoisted", c, 3, "F1+ O1t F2+ F3+ B3 P1t B2 B1", 100, 0, 9, 210, 90);

    /* Two tapes share the d2h channel; bandwidth 100. O1t [1,1.9]; F2+ [1,2]; O2t (op 3) starts at
       max(2, 1.9) = 2: [2,2.9]. F3+ (op 4) starts at 2 >= 1.9: T1 released, counts through op 3
       (O2t); T2 (read last at... never read, r = 3) not done by 2. B3 (op 5) starts at 3 >= 2.9:
       T2 counts through op 4. P2t [5,5.9]; B2 [5.9,7.9]; P1t [7.9,8.8]; B1 [8.8,10.8]. Time 10.8.
       Bytes: F2+ 200, O2t 200 (T1 still counted), F3+ X1 X2 T2 X3 T3 = 210, B3 X1 X2 T3 G2 = 120,
       P2t X1 G2 T2 = 110, B2 +G1 = 120, P1t G1 T1 = 100, B1 100: peak 210. Host: T1 from op 1 to
       B1, T2 from op 3 to B2: 180. */
    check_hand("two tapes, one channel", c, 3, "F1+ O1t F2+ O2t F3+ B3 P2t B2 P1t B1", 100, 0, 10.8, 210, 180);

    /* T[n] may be offloaded: bandwidth 100. O3t (op 3) [3,3.9]; P3t (op 4) comes before any
       compute op, so T3 counts through O3t and B3 waits for the O copy (3.9) and for P3t [3.9,4.8]:
       B3 [4.8,6.8], B2 [6.8,8.8], B1 [8.8,10.8]. Peak 300 (F3+, O3t, P3t), host 90. */
    check_hand("T[n] offload", c, 3, "F1+ F2+ F3+ O3t P3t B3 B2 B1", 100, 0, 10.8, 300, 90);

    /* Boundary offload X1 on chain HX (f 1, b 2, a 100, t 10), bandwidth 125 (X copy 0.8).
       0 F1+ [0,1]; 1 O1 [1,1.8]; 2 F2+ [1,2] still reads the device copy of X1 (r = 2);
       3 F3+ starts at 2 >= 1.8: X1 released, counts through op 2. F3+ [2,3], B3 [3,5].
       5 P1 [5,5.8]; 6 B2 reads the prefetched X1: [5.8,7.8]; B1 [7.8,9.8]. Time 9.8.
       Bytes: F1+ 110, O1 110, F2+ 220, F3+ T1 X2 T2 X3 T3 = 230, B3 T1 X2 T2 T3 G2 = 230,
       P1 T1 T2 G2 X1 = 220, B2 + G1 = 320, B1 T1 G1 = 110: peak 320 (store-all: 330).
       Host: X1, 100. */
    fill_chain(cx, 3, 1, 2, 100, 10);
    check_hand("store-all HX", cx, 3, "F1+ F2+ F3+ B3 B2 B1", 125, 0, 9, 330, 0);
    check_hand("X1 offload, read between O and P", cx, 3, "F1+ O1 F2+ F3+ B3 P1 B2 B1", 125, 0, 9.8, 320, 100);

    /* The same with a recompute: X2 dropped and recomputed from X1 after P1. Bandwidth 125.
       0 F1+ [0,1]; 1 F2 (no tape) [1,2]; 2 O1 [2,2.8] (r = 2); 3 F3+ starts at 2 < 2.8: X1 still
       counts; 4 B3 starts at 3 >= 2.8: X1 counts through op 3. F3+ [2,3], B3 [3,5]; 5 P1 [5,5.8];
       6 F2+ reads the prefetched X1: [5.8,6.8]; B2 [6.8,8.8]; B1 [8.8,10.8]. Time 10.8.
       Bytes: F1+ 110, F2 X1 T1 X2 +t2 = 220, O1 X1 T1 X2 = 210, F3+ X1 T1 X2 X3 T3 = 320,
       B3 T1 X2 T3 G2 = 220, P1 T1 G2 X1 = 210, F2+ T1 G2 X1 X2 T2 = 320 (X2 unread: freed after),
       B2 T1 G2 X1 T2 G1 = 320, B1 110: peak 320. Host 100. */
    check_hand("X1 offload with a recompute of X2", cx, 3, "F1+ F2 O1 F3+ B3 P1 F2+ B2 B1", 125, 0, 10.8, 320, 100);

    /* W: the slow link of above (bandwidth 10, T copy 9), with W1t right after O1t: compute waits
       for the copy and T1 goes. 0 F1+ [0,1]; 1 O1t [1,10]; 2 W1t: T1 counts through op 1,
       compute resumes at 10; F2+ [10,11], F3+ [11,12], B3 [12,14], B2 [14,16]; P1t [16,25];
       B1 waits: [25,27]. Time 27 (21 without the W). Bytes: F1+ 100, O1t 100, W1t X1 = 10,
       F2+ 110, F3+ X1 X2 T2 X3 T3 = 210, B3 X1 X2 T2 T3 G2 = 210, B2 120, P1t X1 G1 T1 = 110,
       B1 100: peak 210 (300 without the W). Host: T1, 90. */
    check_hand("W on a slow link: time for memory", c, 3, "F1+ O1t W1t F2+ F3+ B3 B2 P1t B1", 10, 0, 27, 210, 90);

    /* A W after the copy released T1 anyway changes nothing: bandwidth 100, as "T1 offload, fast
       link" (T1 released before F3+); W1t (op 4) waits for 1.9, compute is at 3 already. */
    check_hand("W after the release", c, 3, "F1+ O1t F2+ F3+ W1t B3 B2 P1t B1", 100, 0, 9.9, 210, 90);

    /* W of a boundary on chain HX, bandwidth 125 (X copy 0.8): 0 F1+ [0,1]; 1 F2+ [1,2];
       2 O1 [2,2.8]; 3 W1: X1 counts through op 2, compute waits until 2.8; F3+ [2.8,3.8],
       B3 [3.8,5.8]; 6 P1 [5.8,6.6]; B2 waits: [6.6,8.6]; B1 [8.6,10.6]. Time 10.6. Bytes: F1+
       110, F2+ 220, O1 220, W1 T1 X2 T2 = 120, F3+ T1 X2 T2 X3 T3 = 230, B3 T1 X2 T2 T3 G2 = 230,
       P1 T1 T2 G2 X1 = 220, B2 + G1 = 320, B1 110: peak 320. Host: X1, 100. */
    check_hand("W of a boundary", cx, 3, "F1+ F2+ O1 W1 F3+ B3 P1 B2 B1", 125, 0, 10.6, 320, 100);
}

/* ==========================================================================================
   3. Invalid schedules. */
static void check_bad(const char *name, const ckpt_cost *c, int n, const ckpt_op *ops, int n_ops) {
    osim_result *r = (osim_result *)malloc(sizeof *r);
    ckpt_sim s;
    int bad = -7, ok;
    ckpt_result res;
    ok = osim(c, n, ops, n_ops, 100, 0, r);
    CHECK(!ok, "%s: osim accepts it", name);
    res = ckpt_schedule_simulate_offload(c, n, ops, n_ops, 100, 0, &s, &bad);
    CHECK(res == CKPT_ERR_BAD_SCHEDULE, "%s: library returns %s (want CKPT_ERR_BAD_SCHEDULE)", name,
          ckpt_result_string(res));
    if (!ok && res == CKPT_ERR_BAD_SCHEDULE && r->bad_op != bad)
        printf("  note: %s: osim stops at op %d (%s), the library at op %d\n", name, r->bad_op, r->msg, bad);
    free(r);
}

static void check_bad_str(const char *name, const ckpt_cost *c, int n, const char *sched) {
    ckpt_op ops[64];
    int n_ops = parse_ops(sched, ops, 64);
    CHECK(n_ops > 0, "%s: cannot parse", name);
    if (n_ops > 0) check_bad(name, c, n, ops, n_ops);
}

static void test_invalid(void) {
    ckpt_cost c[3] = {{0}}, cn[3] = {{0}};
    ckpt_op ops[64];
    int n_ops, bad;
    ckpt_sim s;
    ckpt_result res;
    double bws[5];
    int j;

    fill_chain(c, 3, 1, 2, 10, 90);
    check_bad_str("O of X1 after B2 consumed it", c, 3, "F1+ F2+ F3+ B3 B2 O1 P1 B1");
    check_bad_str("O of T1 before F1", c, 3, "O1t F1+ P1t F2+ F3+ B3 B2 B1");
    check_bad_str("O of T1 never kept (F1 without tape)", c, 3, "F1 O1t F2+ F3+ B3 B2 P1t B1");
    check_bad_str("O twice", c, 3, "F1+ O1t O1t F2+ F3+ B3 B2 P1t B1");
    check_bad_str("O twice, P twice", c, 3, "F1+ O1t O1t F2+ F3+ B3 B2 P1t P1t B1");
    check_bad_str("P without O", c, 3, "F1+ F2+ F3+ B3 B2 P1t B1");
    check_bad_str("P twice after one O", c, 3, "F1+ O1t F2+ F3+ B3 B2 P1t P1t B1");
    check_bad_str("O without P (B1 consumes the tape)", c, 3, "F1+ O1t F2+ F3+ B3 B2 B1");
    check_bad_str("O without P (a stray recomputed X2)", c, 3, "F1+ F2+ F3+ B3 F2 O2 B2 B1");
    check_bad_str("F1 recomputes X1 while its host copy waits", c, 3, "F1+ F2+ O1 F3+ F1 B3 P1 B2 B1");
    check_bad_str("F1+ rewrites T1 while its host copy waits", c, 3, "F1+ O1t F1+ F2+ F3+ B3 B2 P1t B1");
    check_bad_str("B2 consumes X1 while offloaded", c, 3, "F1+ F2+ O1 F3+ B3 B2 P1 B1");
    check_bad_str("B1 consumes T1 while offloaded", c, 3, "F1+ O1t F2+ F3+ B3 B2 B1 P1t");
    check_bad_str("O of X[n]", c, 3, "F1+ F2+ F3+ O3 B3 P3 B2 B1");
    check_bad_str("O of X[0]", c, 3, "O0 F1+ F2+ F3+ B3 B2 P0 B1");
    check_bad_str("O of T[n+1]", c, 3, "F1+ F2+ F3+ O4t B3 P4t B2 B1");
    check_bad_str("W without O", c, 3, "F1+ W1t F2+ F3+ B3 B2 B1");
    check_bad_str("W twice for one O", c, 3, "F1+ O1t W1t W1t F2+ F3+ B3 B2 P1t B1");
    check_bad_str("W after its P", c, 3, "F1+ O1t F2+ F3+ B3 B2 P1t W1t B1");
    check_bad_str("F2 reads X1 after W1 released it", c, 3, "F1+ O1 W1 F2+ F3+ B3 P1 B2 B1");
    check_bad_str("W of X[n]", c, 3, "F1+ F2+ F3+ W3 B3 B2 B1");

    /* Bad tape flags on O and P. */
    n_ops = parse_ops("F1+ O1t F2+ F3+ B3 B2 P1t B1", ops, 64);
    ops[1].tape = 2; ops[1].option = 0;
    check_bad("O with tape flag 2", c, 3, ops, n_ops);
    ops[1].tape = 1; ops[1].option = 0;
    ops[6].tape = -1; ops[6].option = 0;
    check_bad("P with tape flag -1", c, 3, ops, n_ops);
    ops[6].tape = 0; ops[6].option = 0;
    check_bad("O of T1, P of X1", c, 3, ops, n_ops);

    /* No-checkpoint stage 2: F2 may not run twice from the same X1. Bringing X1 back with P is
       not a recomputation of it, so F2 after P1 still runs from the same X1. */
    memcpy(cn, c, sizeof c);
    cn[1].flags = CKPT_STAGE_NO_CHECKPOINT;
    check_bad_str("no-checkpoint: F2 twice from the same X1", cn, 3, "F1+ F2 F3+ B3 F2+ B2 B1");
    check_bad_str("no-checkpoint: F2 twice from X1 brought back by P1", cn, 3, "F1+ F2 O1 F3+ B3 P1 F2+ B2 B1");

    /* Bandwidth: d2h must be positive and finite. */
    n_ops = parse_ops("F1+ O1t F2+ F3+ B3 B2 P1t B1", ops, 64);
    bws[0] = 0; bws[1] = -1; bws[2] = NAN; bws[3] = INFINITY; bws[4] = -INFINITY;
    for (j = 0; j < 5; j++) {
        res = ckpt_schedule_simulate_offload(c, 3, ops, n_ops, bws[j], 0, &s, &bad);
        CHECK(res == CKPT_ERR_BAD_ARGUMENT, "bandwidth %g: %s (want CKPT_ERR_BAD_ARGUMENT)", bws[j],
              ckpt_result_string(res));
    }
    /* h2d: 0 means "as d2h"; NaN or negative is a bad argument too (not stated for h2d). */
    res = ckpt_schedule_simulate_offload(c, 3, ops, n_ops, 100, NAN, &s, &bad);
    CHECK(res == CKPT_ERR_BAD_ARGUMENT, "bandwidth_h2d NaN: %s", ckpt_result_string(res));
    res = ckpt_schedule_simulate_offload(c, 3, ops, n_ops, 100, -5, &s, &bad);
    CHECK(res == CKPT_ERR_BAD_ARGUMENT, "bandwidth_h2d -5: %s", ckpt_result_string(res));
    /* The planner: NaN or negative bandwidth is a bad argument. */
    {
        ckpt_plan_desc pd;
        ckpt_plan *pl = NULL;
        memset(&pd, 0, sizeof pd);
        pd.policy = CKPT_POLICY_OFFLOAD;
        pd.bandwidth = NAN;
        res = ckpt_plan_create(c, 3, &pd, &pl, NULL);
        CHECK(res == CKPT_ERR_BAD_ARGUMENT && !pl, "plan with bandwidth NaN: %s", ckpt_result_string(res));
        if (pl) ckpt_plan_destroy(pl);
        pl = NULL;
        pd.bandwidth = -1;
        res = ckpt_plan_create(c, 3, &pd, &pl, NULL);
        CHECK(res == CKPT_ERR_BAD_ARGUMENT && !pl, "plan with bandwidth -1: %s", ckpt_result_string(res));
        if (pl) ckpt_plan_destroy(pl);
    }
}

/* ==========================================================================================
   4. Random chains planned with the offload policy. */
typedef struct bw_class {
    const char *name;
    double lo, hi;      /* a copy of an average stage's a+t takes lo..hi times its f */
    int plans, faster, offloading;
    double ratio_sum;   /* sum of offload time / optimal time */
} bw_class;

static bw_class classes[3] = {
    {"slow (copies 3-10x compute)", 3, 10, 0, 0, 0, 0},
    {"medium (0.5-2x)", 0.5, 2, 0, 0, 0, 0},
    {"fast (0.02-0.2x)", 0.02, 0.2, 0, 0, 0, 0},
};

static int n_plan_fail_printed = 0;

static void report_plan(const char *what, const ckpt_cost *c, int n, uint64_t budget, double bw, double bwh,
                        uint64_t host_budget, const ckpt_op *ops, int n_ops) {
    if (n_plan_fail_printed++ >= 10) return;
    printf("  %s: n=%d budget %llu bandwidth %.17g h2d %.17g host_budget %llu\n", what, n,
           (unsigned long long)budget, bw, bwh, (unsigned long long)host_budget);
    fprint_costs(stdout, c, n);
    if (ops) { printf("  ops:"); fprint_ops(stdout, ops, n_ops); }
}

static uint64_t rnd_size(void) {
    int kind = rnd_int(0, 9);
    if (kind < 4) return 256u * rnd_u64(1, 4096);  /* multiples of 256 */
    if (kind < 8) return rnd_u64(1, 1000000) | 1u;  /* odd */
    if (kind < 9) return rnd_u64(1, 300);           /* tiny */
    return 0;                                        /* none */
}

static void random_chain(ckpt_cost *c, int n) {
    int i;
    memset(c, 0, sizeof(ckpt_cost) * (size_t)n);
    for (i = 0; i < n; i++) {
        c[i].f = 0.1 + 1.9 * rnd_unit();
        c[i].b = c[i].f * (1.0 + 2.0 * rnd_unit());
        c[i].a = rnd_size();
        c[i].t = rnd_chance(20) ? rnd_size() : rnd_size() * (uint64_t)rnd_int(1, 8);
        c[i].wf = rnd_chance(25) ? rnd_size() / 4 : 0;
        c[i].wb = rnd_chance(25) ? rnd_size() / 4 : 0;
        c[i].flags = (i > 0 && rnd_chance(10)) ? CKPT_STAGE_NO_CHECKPOINT : 0u;
    }
}

/* Plans with policy and checks the plan in osim(). Returns the plan's time (or -1). */
static int plan_and_check(const ckpt_cost *c, int n, ckpt_policy pol, uint64_t budget, double bw, double bwh,
                          uint64_t host_budget, ckpt_plan_info *info, int *n_o) {
    ckpt_plan_desc pd;
    ckpt_plan *pl = NULL;
    ckpt_result res;
    const ckpt_op *ops;
    int n_ops = 0, good = 1;
    static osim_result r;
    memset(&pd, 0, sizeof pd);
    memset(info, 0, sizeof *info);
    pd.policy = pol;
    pd.budget = budget;
    pd.bandwidth = bw;
    pd.bandwidth_h2d = bwh;
    pd.host_budget = host_budget;
    res = ckpt_plan_create(c, n, &pd, &pl, info);
    if (res != CKPT_OK) return (int)res;
    ops = ckpt_plan_ops(pl, &n_ops);
    if (!osim(c, n, ops, n_ops, bw > 0 ? bw : 1.0, bwh, &r)) {   /* (no O or P without a link) */
        CHECK(0, "%s plan does not replay in osim: op %d: %s", ckpt_policy_name(pol), r.bad_op, r.msg);
        good = 0;
    } else {
        int ok_t = time_eq(r.time, info->time), ok_p = r.peak == info->peak, ok_h = r.host_peak == info->host_peak;
        CHECK(ok_t, "%s: osim time %.17g, info.time %.17g", ckpt_policy_name(pol), r.time, info->time);
        CHECK(ok_p, "%s: osim peak %llu, info.peak %llu", ckpt_policy_name(pol), (unsigned long long)r.peak,
              (unsigned long long)info->peak);
        CHECK(ok_h, "%s: osim host %llu, info.host_peak %llu", ckpt_policy_name(pol),
              (unsigned long long)r.host_peak, (unsigned long long)info->host_peak);
        CHECK(time_eq(r.compute_time, info->compute_time), "%s: osim compute %.17g, info %.17g",
              ckpt_policy_name(pol), r.compute_time, info->compute_time);
        CHECK(r.n_o == info->n_offloaded, "%s: %d O ops, info.n_offloaded %d", ckpt_policy_name(pol), r.n_o,
              info->n_offloaded);
        CHECK(info->n_ops == n_ops, "n_ops %d vs %d", info->n_ops, n_ops);
        good = ok_t && ok_p && ok_h;
        if (pol == CKPT_POLICY_OFFLOAD && bw > 0) {
            ckpt_sim s;
            int bad = -1;
            ckpt_result rs = ckpt_schedule_simulate_offload(c, n, ops, n_ops, bw, bwh, &s, &bad);
            CHECK(rs == CKPT_OK && time_eq(s.time, info->time) && s.peak == info->peak &&
                      s.host_peak == info->host_peak,
                  "ckpt_schedule_simulate_offload on the plan: %s, time %.17g peak %llu host %llu",
                  ckpt_result_string(rs), s.time, (unsigned long long)s.peak, (unsigned long long)s.host_peak);
        }
        if (n_o) *n_o = r.n_o;
    }
    if (budget) CHECK(info->peak <= budget, "%s: peak %llu over budget %llu", ckpt_policy_name(pol),
                      (unsigned long long)info->peak, (unsigned long long)budget);
    if (host_budget) CHECK(info->host_peak <= host_budget, "host peak %llu over host budget %llu",
                           (unsigned long long)info->host_peak, (unsigned long long)host_budget);
    if (!good || (budget && info->peak > budget) || (host_budget && info->host_peak > host_budget))
        report_plan(ckpt_policy_name(pol), c, n, budget, bw, bwh, host_budget, ops, n_ops);
    ckpt_plan_destroy(pl);
    return CKPT_OK;
}

static void test_random(int n_chains) {
    ckpt_cost c[MAXN] = {{0}};
    int ch, j, below_feasible = 0, below_infeasible = 0, plans = 0, with_host = 0;
    for (ch = 0; ch < n_chains; ch++) {
        int n = ch < 12 ? ch + 1 : rnd_int(1, 12);
        ckpt_plan_info oi, fi;
        uint64_t minb, sap;
        double avg_f = 0, avg_bytes = 0;
        int res;
        random_chain(c, n);
        for (j = 0; j < n; j++) { avg_f += c[j].f / n; avg_bytes += (double)(c[j].a + c[j].t) / n; }
        if (avg_bytes < 1) avg_bytes = 1;
        res = plan_and_check(c, n, CKPT_POLICY_OPTIMAL, 0, 0, 0, 0, &oi, NULL);
        CHECK(res == CKPT_OK, "optimal without a budget: %s", ckpt_result_string((ckpt_result)res));
        if (res != CKPT_OK) continue;
        minb = oi.min_budget;
        sap = oi.store_all_peak;
        for (j = 0; j < 4; j++) {
            bw_class *cl = &classes[rnd_int(0, 2)];
            double ratio = cl->lo * pow(cl->hi / cl->lo, rnd_unit());
            double bw = avg_bytes / (ratio * avg_f), bwh = 0;
            uint64_t budget, host_budget = 0;
            int n_o = 0;
            if (rnd_chance(30)) bwh = bw * (0.25 + 3.75 * rnd_unit());
            if (rnd_chance(35)) host_budget = (uint64_t)((double)sap * (0.05 + 0.9 * rnd_unit())) + 1;
            budget = sap > minb ? rnd_u64(minb, sap) : minb;
            if (j == 3 && minb > 2) {   /* below optimal's smallest budget */
                budget = rnd_u64(minb / 2, minb - 1);
                res = plan_and_check(c, n, CKPT_POLICY_OFFLOAD, budget, bw, bwh, host_budget, &fi, &n_o);
                CHECK(res == CKPT_OK || res == CKPT_ERR_INFEASIBLE, "offload below min_budget: %s",
                      ckpt_result_string((ckpt_result)res));
                if (res == CKPT_OK) below_feasible++;
                else below_infeasible++;
                CHECK(fi.min_budget <= minb && (res != CKPT_OK || fi.min_budget <= budget),
                      "offload below min_budget: its min_budget %llu, optimal's %llu, budget %llu",
                      (unsigned long long)fi.min_budget, (unsigned long long)minb, (unsigned long long)budget);
                if (res == CKPT_ERR_INFEASIBLE && fi.min_budget > budget) {   /* the budget it names plans */
                    uint64_t named = fi.min_budget;
                    res = plan_and_check(c, n, CKPT_POLICY_OFFLOAD, named, bw, bwh, host_budget, &fi, &n_o);
                    CHECK(res == CKPT_OK, "offload at the min_budget %llu it named: %s", (unsigned long long)named,
                          ckpt_result_string((ckpt_result)res));
                }
                continue;
            }
            res = plan_and_check(c, n, CKPT_POLICY_OPTIMAL, budget, 0, 0, 0, &oi, NULL);
            CHECK(res == CKPT_OK, "optimal at budget %llu >= min_budget %llu: %s", (unsigned long long)budget,
                  (unsigned long long)minb, ckpt_result_string((ckpt_result)res));
            if (res != CKPT_OK) continue;
            res = plan_and_check(c, n, CKPT_POLICY_OFFLOAD, budget, bw, bwh, host_budget, &fi, &n_o);
            CHECK(res == CKPT_OK, "offload at budget %llu where optimal plans: %s", (unsigned long long)budget,
                  ckpt_result_string((ckpt_result)res));
            if (res != CKPT_OK) {
                report_plan("offload infeasible", c, n, budget, bw, bwh, host_budget, NULL, 0);
                continue;
            }
            plans++;
            if (host_budget) with_host++;
            CHECK(fi.min_budget <= minb && fi.min_budget <= budget, "offload's min_budget %llu above optimal's %llu or "
                  "the budget %llu", (unsigned long long)fi.min_budget, (unsigned long long)minb,
                  (unsigned long long)budget);
            CHECK(fi.time >= fi.store_all_time * (1 - 1e-12), "offload time %.17g below store-all's %.17g", fi.time,
                  fi.store_all_time);
            if (j == 0) {   /* bandwidth 0: no link, the offload policy plans what optimal does */
                ckpt_plan_info zi;
                res = plan_and_check(c, n, CKPT_POLICY_OFFLOAD, budget, 0, 0, host_budget, &zi, &n_o);
                CHECK(res == CKPT_OK && zi.n_offloaded == 0 && time_eq(zi.time, oi.time) && zi.peak == oi.peak,
                      "offload at bandwidth 0: %s time %.17g peak %llu, optimal %.17g %llu",
                      ckpt_result_string((ckpt_result)res), zi.time, (unsigned long long)zi.peak, oi.time,
                      (unsigned long long)oi.peak);
                n_o = fi.n_offloaded;
            }
            CHECK(fi.time <= oi.time * (1 + 1e-12) + 1e-12, "offload time %.17g slower than optimal %.17g",
                  fi.time, oi.time);
            if (fi.time > oi.time * (1 + 1e-12) + 1e-12)
                report_plan("offload slower than optimal", c, n, budget, bw, bwh, host_budget, NULL, 0);
            cl->plans++;
            if (n_o) cl->offloading++;
            if (fi.time < oi.time * (1 - 1e-9)) cl->faster++;
            cl->ratio_sum += oi.time > 0 ? fi.time / oi.time : 1;
        }
    }
    printf("random: %d chains, %d offload plans (%d with a host budget); below optimal's min_budget: %d planned, "
           "%d infeasible\n", n_chains, plans, with_host, below_feasible, below_infeasible);
    for (j = 0; j < 3; j++)
        printf("  %-28s %4d plans, %4d offload something, %4d strictly faster than optimal, mean time "
               "ratio offload/optimal %.4f\n",
               classes[j].name, classes[j].plans, classes[j].offloading, classes[j].faster,
               classes[j].plans ? classes[j].ratio_sum / classes[j].plans : 1.0);
}

/* ------------------------------------------------------------------------------------------
   4b. Differential: random schedules with O/P pairs (some with a W) inserted into planned F/B
   schedules (valid by construction: each pair sits inside the life of one version, before its
   consumer or its next write), and random mutations of them (dropped, duplicated or swapped ops, a flipped tape
   flag). osim() and ckpt_schedule_simulate_offload must agree on validity and, when valid, on
   time, peak and host peak. */
typedef struct ins { int before, order; ckpt_op op; } ins;

static int cmp_ins(const void *x, const void *y) {
    const ins *a = (const ins *)x, *b = (const ins *)y;
    if (a->before != b->before) return a->before < b->before ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* Inserts random O/P pairs (some with a W) into the F/B schedule src; returns the new length. */
static int insert_pairs(const ckpt_cost *c, int n, const ckpt_op *src, int n_src, ckpt_op *dst, int percent) {
    static ins list[2 * MAX_OPS];
    const int cap = 2 * MAX_OPS - 4, out_cap = MAX_OPS - 8;
    int n_ins = 0, k, j, m, out = 0;
    (void)c;
    for (k = 0; k < n_src; k++) {
        const ckpt_op *w = &src[k];
        int buf;
        if (w->kind != CKPT_OP_F) continue;
        for (buf = 0; buf < 2; buf++) {     /* 0: X[i], 1: T[i] */
            int i = w->stage, e = -1, o_at, p_at;
            if (buf == 0 && i >= n) continue;
            if (buf == 1 && !w->tape) continue;
            for (j = k + 1; j < n_src && e < 0; j++) {   /* consumer or next write */
                const ckpt_op *q = &src[j];
                if (buf == 0 && ((q->kind == CKPT_OP_F && q->stage == i) || (q->kind == CKPT_OP_B && q->stage == i + 1)))
                    e = j;
                if (buf == 1 && ((q->kind == CKPT_OP_F && q->stage == i && q->tape) || (q->kind == CKPT_OP_B && q->stage == i)))
                    e = j;
            }
            if (e < 0 || !rnd_chance(percent) || n_ins > cap || n_src + n_ins + 6 > out_cap) continue;
            if (rnd_chance(15)) {   /* out, back, out again, back again */
                int at[4], x, y;
                for (x = 0; x < 4; x++) at[x] = rnd_int(k + 1, e);
                for (x = 0; x < 4; x++)
                    for (y = x + 1; y < 4; y++)
                        if (at[y] < at[x]) { int t = at[x]; at[x] = at[y]; at[y] = t; }
                for (x = 0; x < 4; x++) {
                    list[n_ins].before = at[x];
                    list[n_ins].order = n_ins;
                    list[n_ins].op.kind = (x & 1) ? CKPT_OP_P : CKPT_OP_O;
                    list[n_ins].op.stage = i;
                    list[n_ins].op.tape = buf; list[n_ins].op.option = 0;
                    n_ins++;
                }
                continue;
            }
            o_at = rnd_int(k + 1, e);
            p_at = rnd_chance(50) ? e : rnd_int(o_at, e);   /* just in time, or hoisted */
            list[n_ins].before = o_at;
            list[n_ins].order = n_ins;     /* (at one position, ops keep the order they were made in) */
            list[n_ins].op.kind = CKPT_OP_O;
            list[n_ins].op.stage = i;
            list[n_ins].op.tape = buf; list[n_ins].op.option = 0;
            n_ins++;
            if (rnd_chance(30)) {   /* a W between them, after the last read of X[i] (by F(i+1)) */
                int lo = o_at;
                for (j = k + 1; j < p_at; j++)
                    if (buf == 0 && src[j].kind == CKPT_OP_F && src[j].stage == i + 1 && j + 1 > lo) lo = j + 1;
                if (lo <= p_at) {
                    list[n_ins].before = rnd_int(lo, p_at);
                    list[n_ins].order = n_ins;
                    list[n_ins].op.kind = CKPT_OP_W;
                    list[n_ins].op.stage = i;
                    list[n_ins].op.tape = buf; list[n_ins].op.option = 0;
                    n_ins++;
                }
            }
            list[n_ins].before = p_at;
            list[n_ins].order = n_ins;
            list[n_ins].op.kind = CKPT_OP_P;
            list[n_ins].op.stage = i;
            list[n_ins].op.tape = buf; list[n_ins].op.option = 0;
            n_ins++;
        }
    }
    qsort(list, (size_t)n_ins, sizeof list[0], cmp_ins);
    for (k = 0, m = 0; k <= n_src; k++) {
        while (m < n_ins && list[m].before == k) dst[out++] = list[m++].op;
        if (k < n_src) dst[out++] = src[k];
    }
    return out;
}

static int n_diff_printed = 0;

/* Returns 1 when both accept. */
static int compare_sims(const char *what, const ckpt_cost *c, int n, const ckpt_op *ops, int n_ops, double bw,
                        double bwh) {
    static osim_result r;
    ckpt_sim s;
    int bad = -7, ok, same;
    ckpt_result res;
    ok = osim(c, n, ops, n_ops, bw, bwh, &r);
    res = ckpt_schedule_simulate_offload(c, n, ops, n_ops, bw, bwh, &s, &bad);
    same = ok ? (res == CKPT_OK && time_eq(r.time, s.time) && r.peak == s.peak && r.host_peak == s.host_peak &&
                 time_eq(r.compute_time, s.compute_time))
              : res == CKPT_ERR_BAD_SCHEDULE;
    CHECK(same, "%s: osim %s (time %.17g peak %llu host %llu%s%s), library %s (time %.17g peak %llu host %llu, "
                "bad op %d)", what, ok ? "accepts" : "rejects", r.time, (unsigned long long)r.peak,
          (unsigned long long)r.host_peak, ok ? "" : ": ", ok ? "" : r.msg, ckpt_result_string(res),
          res == CKPT_OK ? s.time : 0.0, res == CKPT_OK ? (unsigned long long)s.peak : 0ull,
          res == CKPT_OK ? (unsigned long long)s.host_peak : 0ull, bad);
    if (ok) {   /* the untimed replay: compute time, and every offloaded copy kept until its P */
        static osim_result slow;
        double t = -1;
        uint64_t pk = 0;
        int b3 = -1;
        ckpt_result r3 = ckpt_schedule_simulate(c, n, ops, n_ops, &t, &pk, &b3);
        copies_never_done = 1;
        osim(c, n, ops, n_ops, bw, bwh, &slow);
        copies_never_done = 0;
        CHECK(r3 == CKPT_OK && time_eq(t, r.compute_time) && pk == slow.peak,
              "%s: ckpt_schedule_simulate %s time %.17g peak %llu; osim compute %.17g, peak with copies kept to P %llu",
              what, ckpt_result_string(r3), t, (unsigned long long)pk, r.compute_time, (unsigned long long)slow.peak);
        if (!(r3 == CKPT_OK && time_eq(t, r.compute_time) && pk == slow.peak)) same = 0;
    } else {
        double t = -1;
        uint64_t pk = 0;
        int b3 = -1;
        ckpt_result r3 = ckpt_schedule_simulate(c, n, ops, n_ops, &t, &pk, &b3);
        CHECK(r3 == CKPT_ERR_BAD_SCHEDULE, "%s: ckpt_schedule_simulate returns %s where osim rejects (%s)", what,
              ckpt_result_string(r3), r.msg);
        if (r3 != CKPT_ERR_BAD_SCHEDULE) same = 0;
    }
    if (!same && n_diff_printed++ < 10) {
        printf("  bandwidth %.17g h2d %.17g\n", bw, bwh);
        fprint_costs(stdout, c, n);
        printf("  ops:");
        fprint_ops(stdout, ops, n_ops);
    }
    return ok && res == CKPT_OK;
}

/* 4c (internal). The offload planner's idle buffers at an op k (_ckpt_off_gaps, one pass each
   way over the ops) against their definition, buffer by buffer: (i, tape) is live across k when
   an op before k made it (an F, or its P) and no B ended it since; it is a candidate when it is
   also not offloaded since it was made, not read or made at k, and read again after k before it
   is made again. Its gap runs from its last access before k to that read. opt[i]: the option of
   the last F before k that kept T[i]. Returns the number of candidates. */
static int gaps_checked, gaps_found;
static int op_makes(const ckpt_op *op, int i, int tape) {
    return op->stage == i &&
           ((op->kind == CKPT_OP_P && op->tape == tape) || (op->kind == CKPT_OP_F && (!tape || op->tape)));
}
static int op_reads(const ckpt_op *op, int i, int tape) {
    return tape ? op->kind == CKPT_OP_B && op->stage == i
                : (op->kind == CKPT_OP_F || op->kind == CKPT_OP_B) && op->stage == i + 1;
}
static int check_gaps(int n, const ckpt_op *ops, int n_ops, int k) {
    static int g[4 * (MAXN + 1)], opt[MAXN + 1];
    static unsigned char st[2 * (MAXN + 1)];
    int i, tape, j, found = 0;
    _ckpt_off_gaps(ops, n_ops, n, k, g, opt, st);
    for (tape = 0; tape < 2; tape++)
        for (i = 0; i <= n; i++) {
            int b = tape * (n + 1) + i, live = 0, offl = 0, last = -1, read = -1;
            for (j = 0; j < k; j++) {
                const ckpt_op *op = &ops[j];
                if (op_makes(op, i, tape)) { live = 1; offl = 0; last = j; }
                else if (op->kind == CKPT_OP_B && op->stage == (tape ? i : i + 1)) live = 0;     /* ends it */
                else if (op_reads(op, i, tape) && live) last = j;
                else if (op->kind == CKPT_OP_O && op->stage == i && op->tape == tape) offl = 1;
            }
            for (j = k; live && !offl && j < n_ops; j++) {
                int reads = op_reads(&ops[j], i, tape), makes = op_makes(&ops[j], i, tape);
                if (j == k && (reads || makes)) break;
                if (j > k && reads) { read = j; break; }
                if (j > k && makes) break;
            }
            gaps_checked++;
            if (read < 0) {
                CHECK(g[2 * b] == -1, "gaps: buffer (%d, %d) at op %d of %d: none expected, got %d..%d", i, tape, k,
                      n_ops, g[2 * b], g[2 * b + 1]);
                continue;
            }
            found++;
            CHECK(g[2 * b] == last && g[2 * b + 1] == read, "gaps: buffer (%d, %d) at op %d of %d: %d..%d expected, "
                  "got %d..%d", i, tape, k, n_ops, last, read, g[2 * b], g[2 * b + 1]);
        }
    for (i = 1; i <= n; i++) {
        int o = 0;
        for (j = 0; j < k; j++)
            if (ops[j].kind == CKPT_OP_F && ops[j].tape && ops[j].stage == i) o = ops[j].option;
        CHECK(opt[i] == o, "gaps: T[%d]'s option at op %d: %d expected, got %d", i, k, o, opt[i]);
    }
    gaps_found += found;
    return found;
}

static void test_random_schedules(int n_chains) {
    ckpt_cost c[MAXN] = {{0}};
    static ckpt_op ops[MAX_OPS], mut[MAX_OPS];
    int ch, valid = 0, mutants = 0, mutants_valid = 0, n_waits = 0;
    for (ch = 0; ch < n_chains; ch++) {
        int n = rnd_int(1, 8), rep;
        ckpt_plan_desc pd;
        ckpt_plan *pl = NULL;
        ckpt_plan_info info;
        const ckpt_op *src;
        int n_src = 0;
        random_chain(c, n);
        memset(&pd, 0, sizeof pd);
        pd.policy = rnd_chance(50) ? CKPT_POLICY_OPTIMAL : CKPT_POLICY_STORE_ALL;
        if (ckpt_plan_create(c, n, &pd, &pl, &info) != CKPT_OK) { CHECK(0, "plan for the differential"); continue; }
        if (pd.policy == CKPT_POLICY_OPTIMAL && info.store_all_peak > info.min_budget) {  /* a random budget */
            ckpt_plan_destroy(pl);
            pl = NULL;
            pd.budget = rnd_u64(info.min_budget, info.store_all_peak);
            if (ckpt_plan_create(c, n, &pd, &pl, &info) != CKPT_OK) { CHECK(0, "plan for the differential"); continue; }
        }
        src = ckpt_plan_ops(pl, &n_src);
        for (rep = 0; rep < 6; rep++) {
            double avg_f = 0, avg_bytes = 1, bw, bwh = 0;
            int j, n_ops = insert_pairs(c, n, src, n_src, ops, rnd_int(10, 90)), m;
            for (j = 0; j < n; j++) { avg_f += c[j].f / n; avg_bytes += (double)(c[j].a + c[j].t) / n; }
            bw = avg_bytes / (avg_f * (0.02 * pow(500.0, rnd_unit())));
            if (rnd_chance(30)) bwh = bw * (0.25 + 3.75 * rnd_unit());
            CHECK(compare_sims("random pairs", c, n, ops, n_ops, bw, bwh), "a schedule built valid is rejected");
            valid++;
            for (j = 0; j < 4; j++) check_gaps(n, ops, n_ops, rnd_int(0, n_ops - 1));
            for (j = 0; j < n_ops; j++) n_waits += ops[j].kind == CKPT_OP_W;
            for (m = 0; m < 4; m++) {   /* mutants */
                int n_mut = n_ops, a = rnd_int(0, n_ops - 1), b2 = rnd_int(0, n_ops - 1);
                ckpt_op t;
                memcpy(mut, ops, sizeof(ckpt_op) * (size_t)n_ops);
                switch (rnd_int(0, 4)) {
                case 0: memmove(mut + a, mut + a + 1, sizeof(ckpt_op) * (size_t)(n_ops - a - 1)); n_mut--; break;
                case 1: memmove(mut + a + 1, mut + a, sizeof(ckpt_op) * (size_t)(n_ops - a)); n_mut++; break;
                case 2: t = mut[a]; mut[a] = mut[b2]; mut[b2] = t; break;
                case 3: if (mut[a].kind != CKPT_OP_B) mut[a].tape ^= 1; break;
                default: t = mut[a]; memmove(mut + a, mut + a + 1, sizeof(ckpt_op) * (size_t)(n_ops - a - 1));
                         mut[n_ops - 1] = t; break;   /* move one op to the end */
                }
                mutants++;
                mutants_valid += compare_sims("mutant", c, n, mut, n_mut, bw, bwh);
            }
        }
        ckpt_plan_destroy(pl);
    }
    printf("differential: %d random valid offload schedules (%d W ops in them), %d mutants (%d of them valid) "
           "compared\n", valid, n_waits,
           mutants, mutants_valid);
    CHECK(gaps_found > 0, "gaps: no idle buffer found in %d checked", gaps_checked);
    printf("idle buffers (the planner's offload candidates): %d checked at random ops, %d of them idle\n", gaps_checked,
           gaps_found);
}

/* ==========================================================================================
   5. A chain where offloading must win: 12 equal stages with large tapes, f = 0.8, b = 1.6,
   a = 12 MiB, t = 9a, budget 0.4 x store-all's peak, link 200e6 bytes per time unit (a tape
   copy takes 0.57, an output copy 0.063: less than a forward). Recomputation must redo about
   half the forwards; offloading hides the copies behind compute. */
static void test_must_win(void) {
    ckpt_cost c[12] = {{0}};
    ckpt_plan_info oi, fi;
    uint64_t budget;
    int res, n_o = 0;
    fill_chain(c, 12, 0.8, 1.6, 12582912, 9ull * 12582912);
    res = plan_and_check(c, 12, CKPT_POLICY_OPTIMAL, 0, 0, 0, 0, &oi, NULL);
    CHECK(res == CKPT_OK, "store-all figures");
    budget = (uint64_t)(0.4 * (double)oi.store_all_peak);
    res = plan_and_check(c, 12, CKPT_POLICY_OPTIMAL, budget, 0, 0, 0, &oi, NULL);
    CHECK(res == CKPT_OK, "optimal at 0.4 x store-all: %s", ckpt_result_string((ckpt_result)res));
    res = plan_and_check(c, 12, CKPT_POLICY_OFFLOAD, budget, 200e6, 0, 0, &fi, &n_o);
    CHECK(res == CKPT_OK, "offload at 0.4 x store-all: %s", ckpt_result_string((ckpt_result)res));
    CHECK(fi.time < oi.time, "offload %.6g not faster than optimal %.6g", fi.time, oi.time);
    /* store-all's time is 12 x 2.4 = 28.8; optimal recomputes, offload should come close to 28.8 */
    printf("must-win chain (12 x f 0.8 b 1.6, a 12 MiB, t 9a, budget %llu = 0.4 x store-all %llu, 200e6/unit):\n"
           "  optimal  time %.6g peak %llu (%d recomputed)\n"
           "  offload  time %.6g peak %llu host %llu (%d offloaded, compute %.6g)\n",
           (unsigned long long)budget, (unsigned long long)oi.store_all_peak, oi.time, (unsigned long long)oi.peak,
           oi.n_recomputed, fi.time, (unsigned long long)fi.peak, (unsigned long long)fi.host_peak,
           fi.n_offloaded, fi.compute_time);
}

/* 5b. A chain where the offload policy's fastest plan at the budget needs an arena above it, so
   the arena rule (COST MODEL) lowers its budget, and its descent ends on a plan slower than
   optimal's at the budget, whose arena fits (32.85 against 32.24 before the offload policy
   compared the two). The offload policy must take optimal's plan then: never slower. */
static void test_fit_not_slower(void) {
    static const double ft[8][2] = {
        {0.682554219224634, 0.90529121554705461}, {0.17862613853411374, 0.2911111212553058},
        {1.5409921150191943, 2.414387261661544},  {1.2970004289274053, 3.5200275532050971},
        {1.3398099746556502, 3.0277341846618517}, {1.3308893353784008, 2.7053904680837348},
        {0.31691053535918956, 0.93957041987618461}, {1.0389441656050817, 1.1893001208752521}};
    static const uint64_t sz[8][4] = {
        {740864, 915671, 61680, 62127}, {15105, 563712, 0, 0},  {592863, 1847272, 0, 0},
        {815872, 1565092, 0, 138891},   {764247, 879857, 85005, 0}, {290560, 1884160, 0, 0},
        {688640, 513024, 0, 0},         {912545, 3699176, 31031, 23135}};
    ckpt_cost c[8];
    ckpt_plan_info oi, fi;
    int i, res, n_o = 0;
    memset(c, 0, sizeof c);
    for (i = 0; i < 8; i++) {
        c[i].f = ft[i][0]; c[i].b = ft[i][1];
        c[i].a = sz[i][0]; c[i].t = sz[i][1]; c[i].wf = sz[i][2]; c[i].wb = sz[i][3];
    }
    c[3].flags = CKPT_STAGE_NO_CHECKPOINT;
    res = plan_and_check(c, 8, CKPT_POLICY_OPTIMAL, 5992849, 0, 0, 0, &oi, NULL);
    CHECK(res == CKPT_OK, "fit chain: optimal: %s", ckpt_result_string((ckpt_result)res));
    res = plan_and_check(c, 8, CKPT_POLICY_OFFLOAD, 5992849, 597459.93611802184, 1864138.4226667855, 0, &fi, &n_o);
    CHECK(res == CKPT_OK, "fit chain: offload: %s", ckpt_result_string((ckpt_result)res));
    CHECK(fi.time <= oi.time, "fit chain: offload time %.17g slower than optimal %.17g", fi.time, oi.time);
    CHECK(fi.min_budget <= oi.min_budget, "fit chain: offload min_budget %llu above optimal's %llu",
          (unsigned long long)fi.min_budget, (unsigned long long)oi.min_budget);
    printf("fit chain (8 stages, budget 5992849): optimal time %.6g fit_budget %llu, offload time %.6g\n", oi.time,
           (unsigned long long)oi.fit_budget, fi.time);
}

/* 6. Host allocation failures while planning: the N-th allocation fails, for every N up to the
   count a clean plan makes, on a 15-stage chain with every policy. Each run gives the clean plan
   (same ops, time and peak) or CKPT_ERR_OUT_OF_HOST_MEMORY, never a different plan, and frees
   everything it allocated. */
static long af_live = 0, af_calls = 0, af_fail_at = 0;
static void *af_alloc(size_t bytes, void *u) {
    (void)u;
    if (++af_calls == af_fail_at) return NULL;
    af_live++;
    return malloc(bytes);
}
static void af_free(void *p, void *u) { (void)u; if (p) { af_live--; free(p); } }

/* Sanitizer builds plan about 10 times slower: they walk a tenth of the failure points and an
   eighth of the random chains (one of each length, 1-12 stages). */
#if !TEST_REDUCED
#define FAIL_POINTS 2000
#define RANDOM_CHAINS 100
#else
#define FAIL_POINTS 200
#define RANDOM_CHAINS 12
#endif

static void test_alloc_failures(void) {
    ckpt_cost c[15] = {{0}};
    int pol;
    fill_chain(c, 15, 1.0, 2.0, 4096, 4096);   /* at 0.2 x store-all and 4000 B/unit: 24 O, 19 W */
    for (pol = 0; pol < CKPT_POLICY_COUNT_; pol++) {
        ckpt_plan_desc pd;
        ckpt_plan *ref = NULL, *got;
        ckpt_plan_info ri, gi;
        long calls, k, base, stride;
        int ref_n = 0, got_n, bad = 0, oom = 0;
        const ckpt_op *ref_ops;
        memset(&pd, 0, sizeof pd);
        pd.policy = (ckpt_policy)pol;
        pd.allocator.alloc = af_alloc; pd.allocator.free = af_free;
        pd.bandwidth = 4000;
        af_fail_at = 0; af_calls = 0;
        CHECK(ckpt_plan_create(c, 15, &pd, &ref, &ri) == CKPT_OK, "store-all figures");
        ckpt_plan_destroy(ref);
        pd.budget = pol == CKPT_POLICY_STORE_ALL ? 0 : pol == CKPT_POLICY_OFFLOAD ? ri.store_all_peak / 5 : ri.store_all_peak / 2;
        af_calls = 0;
        if (ckpt_plan_create(c, 15, &pd, &ref, &ri) != CKPT_OK) { CHECK(0, "%s: no clean plan", ckpt_policy_name(pd.policy)); continue; }
        calls = af_calls;
        base = af_live;
        ref_ops = ckpt_plan_ops(ref, &ref_n);
        stride = 1 + calls / FAIL_POINTS;  /* offload makes about 19,500 allocations: every 10th of them */
        for (k = 1; k <= calls; k += stride) {
            ckpt_result r;
            af_calls = 0; af_fail_at = k;
            r = ckpt_plan_create(c, 15, &pd, &got, &gi);
            if (r == CKPT_OK) {
                const ckpt_op *ops = ckpt_plan_ops(got, &got_n);
                if (got_n != ref_n || memcmp(ops, ref_ops, (size_t)ref_n * sizeof *ops) != 0 || gi.time != ri.time ||
                    gi.peak != ri.peak) {
                    if (bad++ < 3) printf("  %s: allocation %ld of %ld failed, yet a different plan came back "
                                          "(time %.6g, not %.6g)\n", ckpt_policy_name(pd.policy), k, calls, gi.time, ri.time);
                }
                ckpt_plan_destroy(got);
            } else {
                CHECK(r == CKPT_ERR_OUT_OF_HOST_MEMORY && got == NULL, "%s: allocation %ld failed: %s",
                      ckpt_policy_name(pd.policy), k, ckpt_result_string(r));
                oom++;
            }
            CHECK(af_live == base, "%s: allocation %ld failed: %ld blocks leaked", ckpt_policy_name(pd.policy), k,
                  af_live - base);
            af_live = base;     /* the reference plan's */
        }
        CHECK(bad == 0, "%s: %d of %ld failed allocations gave a different plan", ckpt_policy_name(pd.policy), bad, calls);
        printf("allocation failures, %s on 15 stages: %ld allocations (failed in turn with stride %ld), %d runs out of "
               "memory, %d different plans\n", ckpt_policy_name(pd.policy), calls, stride, oom, bad);
        af_fail_at = 0;
        ckpt_plan_destroy(ref);
        CHECK(af_live == 0, "%s: %ld blocks live at the end", ckpt_policy_name(pd.policy), af_live);
        af_live = 0;
    }
}

int main(int argc, char **argv) {
    double t0 = now_s();
    int n_chains = argc > 1 ? atoi(argv[1]) : RANDOM_CHAINS;
    test_hand();
    test_invalid();
    test_must_win();
    test_fit_not_slower();
    test_alloc_failures();
    test_random(n_chains);
    test_random_schedules(n_chains * 2);
    printf("%d checks, %d failures, %.2f s\n", checks, failures, now_s() - t0);
    return failures ? 1 : 0;
}
