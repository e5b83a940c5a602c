/* ckpt-plan -- the ckpt.h planner as a command-line program.

   Reads a chain's stage costs from a CSV file, plans it for a byte budget with one of the
   library's policies and prints the schedule, its predicted time and peak, the arena it needs
   once every buffer is laid out (within the budget), and min_budget, from which every budget
   plans. Use it to explore budgets before writing any code.

       ckpt-plan [--policy store-all|every-k|sqrt|greedy|optimal|offload] [--k K] [--budget BYTES]
                 [--bandwidth BYTES_PER_S] [--bandwidth-h2d BYTES_PER_S] [--host-budget BYTES]
                 [--time-unit s|ms|us] [--threads N] [--json] [--trace FILE.json] FILE.csv
       ckpt-plan --sweep PREFIX [--points N] [--k K] [--bandwidth BYTES_PER_S] [...] FILE.csv

   The offload policy also moves boundaries and tapes to pinned host memory over a link of
   --bandwidth bytes per second each way (--bandwidth-h2d for a different host-to-device speed),
   within --host-budget bytes of host memory (default: no cap). Stage times are then read in
   seconds, or in the --time-unit given. --threads N plans long chains on N threads
   (ckpt_plan_desc.threads): the same plan, sooner.

   Build:  cc -std=c11 -O2 -o ckpt-plan tools/ckpt-plan.c -lm   (-pthread too with glibc before 2.34)

   Input: the first line names the columns name, fwd_time, bwd_time, out_bytes, tape_bytes,
   fwd_workspace and bwd_workspace in any order (all seven, each once), plus optionally
   no_checkpoint (0 or 1: CKPT_STAGE_NO_CHECKPOINT). One row per stage, first stage first.
   Times are non-negative decimals in any consistent unit, sizes non-negative integers (bytes).
   Blank lines and lines starting with '#' are ignored; CRLF line ends are accepted; a field may
   be double-quoted ("a, ""b""") to hold commas or quotes. Spaces around fields are ignored.

   Tape options (ckpt_stage_desc.tape_options): optionally, column pairs tape_bytes_K and
   bwd_extra_K for K = 1, 2, 3, anywhere in the header like the other columns. Option K of a
   stage keeps a tape of tape_bytes_K bytes instead of tape_bytes, and its backward then takes
   bwd_time + bwd_extra_K (it recomputes what the smaller tape leaves out); option 0 is the
   stage's own tape_bytes and bwd_time. tape_bytes_K is a size like the others; bwd_extra_K is a
   time in the unit of bwd_time (never rescaled, like the other times: --time-unit converts the
   link's bandwidth instead). The header must name both columns of a pair or neither (exit 2
   naming the missing column), and option K's only with option K-1's. In a row, a pair with both
   fields empty means the stage has no option K; one empty field of a pair is an error, and so is
   an option K given where option K-1 is empty (stages may have different numbers of options,
   but always options 1..n). The optimal policy chooses each kept tape's option together with the
   checkpoints (offload adds its copies to such plans); store-all, every-k, sqrt and greedy keep
   every tape in option 0. A forward that does not keep its tape runs in the stage's scratch
   option, the one with the smallest tape. Example: tools/examples/gpt2_options.csv.

   Output: the text schedule writes Fi+ for a forward that keeps its tape, Fi for one that does
   not, Bi for a backward; on a stage with tape options Fi+/k is a forward that keeps its tape in
   option k (k = 0 included). The per-stage table then gains a column "option": the option of the
   tape the stage's backward consumed ("-" for a stage without options). --json prints one object;
   its "ops" are ["F", i, 1, k] (forward keeping its tape, in option k: 0 on a stage without
   options), ["F", i, 0] (forward without its tape), ["B", i], and with offload ["O", i],
   ["P", i], ["W", i], ["OT", i], ["PT", i], ["WT", i]; each "stage_plan" entry has "tape_option",
   the option of the tape its backward consumed (0 on a stage without options).

   Trace: --trace FILE.json also writes the timeline the cost model predicts for the plan
   (ckpt_trace_predict): Chrome trace-event JSON that chrome://tracing and ui.perfetto.dev open,
   with the lanes ("compute", "host-to-device", "device-to-host") and the op names ("F3+ attn",
   "B3 attn", "O X3", "P T3", "W T3") of a measured trace (ckpt_chain_trace), so that the two can
   be compared side by side (their traceEvents arrays may be joined: pid 2 is the prediction, 1
   the measurement). Times are read in --time-unit (default s) and shown in ms. Not with --sweep;
   an infeasible plan writes no file.

   Sweep: --sweep PREFIX plans every policy (store-all, every-k, sqrt, greedy, optimal, and offload
   when --bandwidth is given: without a link it would plan what optimal does) for N budgets
   (--points, 2 to 1000, default 40) spread evenly from the smallest min_budget of any policy
   to store-all's peak (repeats dropped), and writes two files. PREFIX.csv has a header and one
   row per feasible (policy, budget), grouped by policy in the order above, budgets ascending:
       policy,budget,peak,peak_ratio,time,time_ratio,arena,k,recomputed,host_peak
   peak_ratio is peak / store-all's peak, time_ratio time / store-all's time; k is every-k's k
   (0 for the others; --k fixes it, default the best that fits), recomputed the F operations
   beyond each stage's first, host_peak offload's pinned host bytes. Infeasible budgets have no
   row. PREFIX.svg (no dependency: plain SVG 1.1) plots time_ratio against peak_ratio, one <path
   data-policy="NAME"> per policy with a feasible budget through its points ordered by peak, with
   a legend, labelled axes and the input file in the title. A PREFIX ending in .csv or .svg loses
   that ending. stdout gets a summary: the budgets, each policy's feasible count and min_budget
   (every budget from it plans), and the files written. A policy that cannot plan the chain at
   all (too long for it: CKPT_ERR_TOO_COMPLEX) is left out with a warning on stderr, and the
   others are swept.
   --policy and --budget are ignored (a warning); --json is an error.

   Exit status: 0 the plan is feasible (--sweep: both files written); 3 the budget is infeasible
   (stderr names min_budget, from which every budget plans); 2 bad input or usage (stderr names
   the file, line and problem; also a chain too long for the chosen policy, and a --sweep or
   --trace file that cannot be created); 1 an internal or library failure (also a failed
   write). */
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_OK 0
#define EXIT_INTERNAL 1
#define EXIT_USAGE 2
#define EXIT_INFEASIBLE 3

static const char *const PROG = "ckpt-plan";

/* ---------------------------------------------------------------------------------------------
   Small helpers */

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        exit(EXIT_INTERNAL);
    }
    return p;
}

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        exit(EXIT_INTERNAL);
    }
    return q;
}

/* A short, printable rendering of a user value for error messages. */
static const char *show(const char *s, char *buf, size_t bufsz) {
    size_t i = 0, max = bufsz - 4;
    for (; *s && i < max; s++) buf[i++] = ((unsigned char)*s < 0x20 || *s == 0x7f) ? '?' : *s;
    if (*s) {
        buf[i++] = '.';
        buf[i++] = '.';
        buf[i++] = '.';
    }
    buf[i] = '\0';
    return buf;
}

static int is_space(char c) { return c == ' ' || c == '\t'; }

/* Shortest "%.*g" that reads back as the same double (valid JSON for finite values). */
static void fmt_double(double v, char *buf, size_t bufsz) {
    int prec;
    for (prec = 6; prec <= 17; prec++) {
        snprintf(buf, bufsz, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* "120 B" or "402653184 B (384.0 MiB)". */
static void fmt_bytes(uint64_t v, char *buf, size_t bufsz) {
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (v < 1024) {
        snprintf(buf, bufsz, "%" PRIu64 " B", v);
    } else {
        double d = (double)v / 1024.0;
        int u = 0;
        while (d >= 1024.0 && u < 5) {
            d /= 1024.0;
            u++;
        }
        snprintf(buf, bufsz, "%" PRIu64 " B (%.1f %s)", v, d, units[u]);
    }
}

/* ---------------------------------------------------------------------------------------------
   Number parsing: strict, no signs, no garbage, no surrounding text. */

typedef enum { NUM_OK = 0, NUM_EMPTY, NUM_BAD, NUM_RANGE } num_status;

static num_status parse_u64(const char *s, uint64_t *out) {
    const char *p;
    uint64_t v = 0;
    if (!*s) return NUM_EMPTY;
    for (p = s; *p; p++)
        if (*p < '0' || *p > '9') return NUM_BAD;
    for (p = s; *p; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10u) return NUM_RANGE;
        v = v * 10u + d;
    }
    *out = v;
    return NUM_OK;
}

/* digits [. digits] | . digits, then optionally [eE][+-]digits. */
static num_status parse_time(const char *s, double *out) {
    const char *p = s;
    int mant = 0;
    char *end;
    double v;
    if (!*s) return NUM_EMPTY;
    while (*p >= '0' && *p <= '9') p++, mant++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') p++, mant++;
    }
    if (!mant) return NUM_BAD;
    if (*p == 'e' || *p == 'E') {
        int exp = 0;
        p++;
        if (*p == '+' || *p == '-') p++;
        while (*p >= '0' && *p <= '9') p++, exp++;
        if (!exp) return NUM_BAD;
    }
    if (*p) return NUM_BAD;
    errno = 0;
    v = strtod(s, &end);
    if (*end || !isfinite(v) || v < 0) return NUM_RANGE;
    *out = v;
    return NUM_OK;
}

/* BYTES for --budget: an integer with an optional unit KB, MB, GB, TB (powers of 1000) or
   KiB, MiB, GiB, TiB (powers of 1024), case-insensitive. */
static int parse_budget(const char *s, uint64_t *out) {
    static const struct { const char *name; uint64_t mult; } units[] = {
        {"", 1},
        {"b", 1},
        {"kb", 1000ull},
        {"mb", 1000000ull},
        {"gb", 1000000000ull},
        {"tb", 1000000000000ull},
        {"kib", 1ull << 10},
        {"mib", 1ull << 20},
        {"gib", 1ull << 30},
        {"tib", 1ull << 40},
    };
    char digits[32], unit[8];
    size_t nd = 0, nu = 0, i;
    const char *p = s;
    uint64_t v;
    while (*p >= '0' && *p <= '9') {
        if (nd + 1 >= sizeof digits) return 0;
        digits[nd++] = *p++;
    }
    digits[nd] = '\0';
    if (!nd) return 0;
    while (*p) {
        char c = *p++;
        if (nu + 1 >= sizeof unit) return 0;
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        unit[nu++] = c;
    }
    unit[nu] = '\0';
    if (parse_u64(digits, &v) != NUM_OK) return 0;
    for (i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(unit, units[i].name) == 0) {
            if (v > UINT64_MAX / units[i].mult) return 0;
            *out = v * units[i].mult;
            return 1;
        }
    }
    return 0;
}

static int parse_int_arg(const char *s, int *out) {
    uint64_t v;
    if (parse_u64(s, &v) != NUM_OK || v > (uint64_t)INT_MAX) return 0;
    *out = (int)v;
    return 1;
}

/* ---------------------------------------------------------------------------------------------
   UTF-8 check (names go into JSON verbatim). */

static int utf8_valid(const unsigned char *s) {
    while (*s) {
        unsigned c = *s, need, cp, min;
        if (c < 0x80) {
            s++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            need = 1, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            need = 2, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            need = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return 0;
        }
        s++;
        while (need--) {
            if ((*s & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (*s++ & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    }
    return 1;
}

/* ---------------------------------------------------------------------------------------------
   CSV input */

enum {
    COL_NAME,
    COL_FWD_TIME,
    COL_BWD_TIME,
    COL_OUT,
    COL_TAPE,
    COL_FWD_WS,
    COL_BWD_WS,
    COL_NO_CKPT,
    COL_OPT_FIRST, /* tape option k = 1..N_OPTIONS: tape_bytes_k at COL_OPT_TAPE(k), bwd_extra_k next */
    COL_COUNT = COL_OPT_FIRST + 2 * (CKPT_MAX_TAPE_OPTIONS - 1)
};
#define N_REQUIRED_COLS 7 /* all but no_checkpoint and the tape options */
#define N_OPTIONS (CKPT_MAX_TAPE_OPTIONS - 1) /* tape options beyond option 0 */
#define COL_OPT_TAPE(k) (COL_OPT_FIRST + 2 * ((k) - 1))
#define COL_OPT_EXTRA(k) (COL_OPT_FIRST + 2 * ((k) - 1) + 1)
_Static_assert(N_OPTIONS == 3, "COL_NAMES names three tape options");

static const char *const COL_NAMES[COL_COUNT] = {
    "name", "fwd_time", "bwd_time", "out_bytes", "tape_bytes", "fwd_workspace", "bwd_workspace",
    "no_checkpoint", "tape_bytes_1", "bwd_extra_1", "tape_bytes_2", "bwd_extra_2", "tape_bytes_3",
    "bwd_extra_3"};

/* A time column: fwd_time, bwd_time or a bwd_extra_k. */
static int is_time_col(int col) {
    return col == COL_FWD_TIME || col == COL_BWD_TIME || (col >= COL_OPT_FIRST && (col - COL_OPT_FIRST) % 2 == 1);
}

typedef struct model {
    int n, cap;
    char **names;   /* point into the file buffer */
    ckpt_cost *costs;
    char *text;     /* the file's contents (owned) */
} model;

typedef struct fields {
    char **v;
    int n, cap;
} fields;

static void fields_push(fields *f, char *s) {
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 16;
        f->v = (char **)xrealloc(f->v, (size_t)f->cap * sizeof *f->v);
    }
    f->v[f->n++] = s;
}

/* Splits one line (NUL-terminated, no line end) in place into fields. Returns NULL or a
   description of the problem. */
static const char *split_fields(char *line, fields *out) {
    char *p = line;
    out->n = 0;
    for (;;) {
        char *start, *fend, sep;
        while (is_space(*p)) p++;
        if (*p == '"') {
            char *w = p, *r = p + 1;
            int closed = 0;
            start = p;
            while (*r) {
                if (*r == '"') {
                    if (r[1] == '"') {
                        *w++ = '"';
                        r += 2;
                    } else {
                        r++;
                        closed = 1;
                        break;
                    }
                } else {
                    *w++ = *r++;
                }
            }
            if (!closed) return "unterminated quoted field";
            while (is_space(*r)) r++;
            if (*r != ',' && *r != '\0') return "unexpected text after the closing quote of a field";
            fend = w;
            p = r;
        } else {
            start = p;
            while (*p && *p != ',') p++;
            fend = p;
            while (fend > start && is_space(fend[-1])) fend--;
        }
        sep = *p;
        fields_push(out, start);
        *fend = '\0'; /* may overwrite the separator: it was saved */
        if (sep != ',') break;
        p++;
    }
    return NULL;
}

static int input_error(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return EXIT_USAGE;
}

static int read_all(FILE *f, char **out, size_t *out_len) {
    size_t cap = 1 << 16, len = 0;
    char *buf = (char *)xmalloc(cap + 1);
    for (;;) {
        size_t got;
        if (len == cap) {
            cap *= 2;
            buf = (char *)xrealloc(buf, cap + 1);
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        free(buf);
        return 0;
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return 1;
}

static int column_error(const char *file, int line, int col, const char *value, num_status st) {
    char b[64];
    const char *what;
    if (st == NUM_EMPTY) return input_error(file, line, "column %s: empty field", COL_NAMES[col]);
    if (is_time_col(col))
        what = st == NUM_RANGE ? "is too large" : "is not a non-negative number";
    else if (col == COL_NO_CKPT)
        what = "is not 0 or 1";
    else
        what = st == NUM_RANGE ? "is too large (the largest size is 18446744073709551615)"
                               : "is not a non-negative integer";
    return input_error(file, line, "column %s: '%s' %s", COL_NAMES[col], show(value, b, sizeof b),
                       what);
}

/* Reads and validates the CSV. Returns 0 on success or an exit status after printing why. */
static int load_model(const char *path, model *m) {
    const char *file = strcmp(path, "-") == 0 ? "<stdin>" : path;
    FILE *f;
    char *text;
    size_t len, pos = 0;
    int lineno = 0, have_header = 0, n_cols = 0;
    int col_at[COL_COUNT]; /* column kind -> field index, -1 when absent */
    int kind_of[COL_COUNT];  /* field index -> column kind */
    fields fl = {NULL, 0, 0};
    uint64_t total_bytes = 0;
    int i, rc = 0;

    memset(m, 0, sizeof *m);
    if (strcmp(path, "-") == 0) {
        f = stdin;
    } else {
        errno = 0;
        f = fopen(path, "rb");
        if (!f) {
            fprintf(stderr, "%s: cannot open '%s': %s\n", PROG, path,
                    errno ? strerror(errno) : "unknown error");
            return EXIT_USAGE;
        }
    }
    if (!read_all(f, &text, &len)) {
        fprintf(stderr, "%s: cannot read '%s': %s\n", PROG, file, strerror(errno));
        if (f != stdin) fclose(f);
        return EXIT_USAGE;
    }
    if (f != stdin) fclose(f);
    m->text = text;

    if (len >= 3 && (unsigned char)text[0] == 0xEF && (unsigned char)text[1] == 0xBB &&
        (unsigned char)text[2] == 0xBF)
        pos = 3; /* UTF-8 byte order mark */

    for (i = 0; i < COL_COUNT; i++) col_at[i] = -1;

    while (pos < len) {
        char *line = text + pos, *nl, *q;
        size_t ll;
        const char *err;
        lineno++;
        nl = (char *)memchr(line, '\n', len - pos);
        ll = nl ? (size_t)(nl - line) : len - pos;
        pos += ll + (nl ? 1 : 0);
        if (memchr(line, '\0', ll)) {
            rc = input_error(file, lineno, "contains a NUL byte (is this a text file?)");
            goto done;
        }
        if (ll && line[ll - 1] == '\r') ll--;
        line[ll] = '\0';
        for (q = line; is_space(*q); q++) {
        }
        if (*q == '\0' || *q == '#') continue;

        err = split_fields(line, &fl);
        if (err) {
            rc = input_error(file, lineno, "%s", err);
            goto done;
        }

        if (!have_header) {
            for (i = 0; i < fl.n; i++) {
                int k;
                char b[64];
                if (fl.v[i][0] == '\0') {
                    rc = input_error(file, lineno, "header field %d is empty (expected a column name)",
                                     i + 1);
                    goto done;
                }
                for (k = 0; k < COL_COUNT; k++)
                    if (strcmp(fl.v[i], COL_NAMES[k]) == 0) break;
                if (k == COL_COUNT) {
                    rc = input_error(file, lineno,
                                     "unknown column '%s' (the columns are name, fwd_time, "
                                     "bwd_time, out_bytes, tape_bytes, fwd_workspace, "
                                     "bwd_workspace and optionally no_checkpoint and the tape "
                                     "option pairs tape_bytes_K, bwd_extra_K for K = 1, 2, 3)",
                                     show(fl.v[i], b, sizeof b));
                    goto done;
                }
                if (col_at[k] >= 0) {
                    rc = input_error(file, lineno, "duplicate column '%s' (fields %d and %d)",
                                     COL_NAMES[k], col_at[k] + 1, i + 1);
                    goto done;
                }
                col_at[k] = i;
                kind_of[i] = k;
            }
            for (i = 0; i < N_REQUIRED_COLS; i++) {
                if (col_at[i] < 0) {
                    rc = input_error(file, lineno, "missing column '%s' in the header", COL_NAMES[i]);
                    goto done;
                }
            }
            for (i = 1; i <= N_OPTIONS; i++) {   /* option columns come in pairs, from option 1 up */
                int ht = col_at[COL_OPT_TAPE(i)] >= 0, he = col_at[COL_OPT_EXTRA(i)] >= 0;
                if (ht != he) {
                    rc = input_error(file, lineno,
                                     "column '%s' without column '%s' (a tape option needs both)",
                                     COL_NAMES[ht ? COL_OPT_TAPE(i) : COL_OPT_EXTRA(i)],
                                     COL_NAMES[ht ? COL_OPT_EXTRA(i) : COL_OPT_TAPE(i)]);
                    goto done;
                }
                if (ht && i > 1 && col_at[COL_OPT_TAPE(i - 1)] < 0) {
                    rc = input_error(file, lineno,
                                     "column '%s' without the columns of tape option %d (%s, %s): "
                                     "options are numbered from 1 without gaps",
                                     COL_NAMES[COL_OPT_TAPE(i)], i - 1, COL_NAMES[COL_OPT_TAPE(i - 1)],
                                     COL_NAMES[COL_OPT_EXTRA(i - 1)]);
                    goto done;
                }
            }
            n_cols = fl.n;
            have_header = 1;
            continue;
        }

        /* a stage row */
        if (fl.n != n_cols) {
            rc = input_error(file, lineno, "expected %d fields (as in the header), found %d", n_cols,
                             fl.n);
            goto done;
        }
        if (m->n == CKPT_MAX_STAGES) {
            rc = input_error(file, lineno, "too many stages (at most %d, CKPT_MAX_STAGES)",
                             CKPT_MAX_STAGES);
            goto done;
        }
        if (m->n == m->cap) {
            m->cap = m->cap ? m->cap * 2 : 16;
            m->names = (char **)xrealloc(m->names, (size_t)m->cap * sizeof *m->names);
            m->costs = (ckpt_cost *)xrealloc(m->costs, (size_t)m->cap * sizeof *m->costs);
        }
        {
            ckpt_cost c;
            uint64_t row_bytes = 0;
            int has_opt[2 * N_OPTIONS]; /* per option column: a value was given */
            memset(&c, 0, sizeof c);
            memset(has_opt, 0, sizeof has_opt);
            for (i = 0; i < n_cols; i++) {
                const char *v = fl.v[i];
                int k = kind_of[i];
                num_status st = NUM_OK;
                uint64_t u = 0;
                switch (k) {
                case COL_NAME:
                    if (!*v) {
                        rc = input_error(file, lineno, "column name: empty field");
                        goto done;
                    }
                    if (!utf8_valid((const unsigned char *)v)) {
                        rc = input_error(file, lineno, "column name: not valid UTF-8");
                        goto done;
                    }
                    m->names[m->n] = (char *)v;
                    break;
                case COL_FWD_TIME:
                    st = parse_time(v, &c.f);
                    break;
                case COL_BWD_TIME:
                    st = parse_time(v, &c.b);
                    break;
                case COL_NO_CKPT:
                    if (!*v)
                        st = NUM_EMPTY;
                    else if (strcmp(v, "0") == 0)
                        c.flags = 0;
                    else if (strcmp(v, "1") == 0)
                        c.flags = CKPT_STAGE_NO_CHECKPOINT;
                    else
                        st = NUM_BAD;
                    break;
                default:
                    if (k >= COL_OPT_FIRST) {   /* an option column: empty = no such option */
                        int j = (k - COL_OPT_FIRST) / 2;
                        if (!*v) break;
                        has_opt[k - COL_OPT_FIRST] = 1;
                        if (is_time_col(k)) {
                            st = parse_time(v, &c.option_extra[j]);
                            break;
                        }
                        st = parse_u64(v, &u);
                        if (st == NUM_OK) {
                            c.option_t[j] = u;
                            if (row_bytes > UINT64_MAX - u) st = NUM_RANGE;
                            else row_bytes += u;
                        }
                        break;
                    }
                    st = parse_u64(v, &u);
                    if (st == NUM_OK) {
                        if (k == COL_OUT) c.a = u;
                        else if (k == COL_TAPE) c.t = u;
                        else if (k == COL_FWD_WS) c.wf = u;
                        else c.wb = u;
                        if (row_bytes > UINT64_MAX - u) st = NUM_RANGE;
                        else row_bytes += u;
                    }
                    break;
                }
                if (st != NUM_OK) {
                    rc = column_error(file, lineno, k, v, st);
                    goto done;
                }
            }
            /* Tape options: each pair both given or both empty, given ones from option 1 up. */
            for (i = 1; i <= N_OPTIONS; i++) {
                int ht = has_opt[COL_OPT_TAPE(i) - COL_OPT_FIRST], he = has_opt[COL_OPT_EXTRA(i) - COL_OPT_FIRST];
                if (ht != he) {
                    rc = input_error(file, lineno,
                                     "column %s: empty field, but %s is given (a tape option needs "
                                     "both, or neither for no option %d)",
                                     COL_NAMES[ht ? COL_OPT_EXTRA(i) : COL_OPT_TAPE(i)],
                                     COL_NAMES[ht ? COL_OPT_TAPE(i) : COL_OPT_EXTRA(i)], i);
                    goto done;
                }
                if (!ht) continue;
                if (c.n_options != i - 1) {
                    rc = input_error(file, lineno,
                                     "column %s: tape option %d without option %d (options are "
                                     "numbered from 1 without gaps)",
                                     COL_NAMES[COL_OPT_TAPE(i)], i, c.n_options + 1);
                    goto done;
                }
                c.n_options = i;
            }
            if (total_bytes > UINT64_MAX - row_bytes) {
                rc = input_error(file, lineno, "the byte sizes of the stages add up to more than 2^64-1");
                goto done;
            }
            total_bytes += row_bytes;
            m->costs[m->n++] = c;
        }
    }

    if (!have_header) {
        rc = input_error(file, lineno ? lineno : 1,
                         "empty file (expected a header line naming the columns)");
    } else if (m->n == 0) {
        rc = input_error(file, lineno, "no stages (the file has a header but no rows)");
    }
done:
    free(fl.v);
    return rc;
}

static void free_model(model *m) {
    free(m->names);
    free(m->costs);
    free(m->text);
    memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------------------------------------
   What the schedule does to each stage, derived from the ops. */

typedef struct stage_view {
    int fwd_runs;       /* how many F(i) */
    int tape_first;     /* the first F(i) keeps its tape */
    int checkpoint;     /* X[i] written in the first forward is still live when F(n) ends */
    int tape_option;    /* the tape option of the tape B(i) consumes (its F(i, tape)'s) */
} stage_view;

/* Returns 0 if the ops are malformed (out-of-range stage, no F(n)). */
static int derive_views(const ckpt_op *ops, int n_ops, int n, stage_view *sv) {
    int k, i, p_fn = -1;
    for (i = 0; i < n; i++) sv[i].fwd_runs = sv[i].tape_first = sv[i].checkpoint = sv[i].tape_option = 0;
    for (k = 0; k < n_ops; k++) {
        int s = ops[k].stage;
        if (s < 1 || s > n || ops[k].kind < CKPT_OP_F || ops[k].kind > CKPT_OP_W) return 0;
        if (ops[k].kind != CKPT_OP_F && ops[k].kind != CKPT_OP_B) continue;     /* O, P, W */
        if (ops[k].kind == CKPT_OP_F) {
            if (sv[s - 1].fwd_runs++ == 0) sv[s - 1].tape_first = ops[k].tape != 0;
            if (ops[k].tape) sv[s - 1].tape_option = ops[k].option; /* the last one is B's */
            if (s == n && p_fn < 0) p_fn = k;
        }
    }
    if (p_fn < 0) return 0;
    /* X[i] (i < n) is a checkpoint when, after F(n), it is read (by F(i+1) or B(i+1)) before it
       is written again (by F(i)): it stays live through the rest of the first forward. */
    for (i = 1; i < n; i++) {
        for (k = p_fn + 1; k < n_ops; k++) {
            if (ops[k].kind == CKPT_OP_F && ops[k].stage == i) break;
            if ((ops[k].kind == CKPT_OP_F || ops[k].kind == CKPT_OP_B) && ops[k].stage == i + 1) {
                sv[i - 1].checkpoint = 1;
                break;
            }
        }
    }
    return 1;
}

/* ---------------------------------------------------------------------------------------------
   Output */

/* The letter of an offload op: O (offload), P (prefetch), W (wait for the offload). */
static char copy_op_letter(ckpt_op_kind kind) {
    return kind == CKPT_OP_O ? 'O' : kind == CKPT_OP_P ? 'P' : 'W';
}

static void json_string(FILE *o, const char *s) {
    fputc('"', o);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '"': fputs("\\\"", o); break;
        case '\\': fputs("\\\\", o); break;
        case '\b': fputs("\\b", o); break;
        case '\f': fputs("\\f", o); break;
        case '\n': fputs("\\n", o); break;
        case '\r': fputs("\\r", o); break;
        case '\t': fputs("\\t", o); break;
        default:
            if (c < 0x20 || c == 0x7f) fprintf(o, "\\u%04x", c);
            else fputc(c, o);
        }
    }
    fputc('"', o);
}

static void json_double(FILE *o, double v) {
    char b[40];
    if (!isfinite(v)) {
        fputs("null", o);
        return;
    }
    fmt_double(v, b, sizeof b);
    fputs(b, o);
}

static const char *guarantee_key(ckpt_guarantee g) {
    switch (g) {
    case CKPT_GUARANTEE_ALL_SCHEDULES: return "all-schedules";
    case CKPT_GUARANTEE_PERSISTENT: return "persistent";
    default: return "heuristic";
    }
}

static const char *guarantee_text(ckpt_guarantee g) {
    switch (g) {
    case CKPT_GUARANTEE_ALL_SCHEDULES: return "all schedules (minimum time over every schedule)";
    case CKPT_GUARANTEE_PERSISTENT:
        return "persistent (minimum time over schedules that keep checkpoints until used)";
    default: return "heuristic (no optimality guarantee)";
    }
}

typedef struct run_result {
    const char *file;
    const model *m;
    ckpt_policy policy;
    double bandwidth, bandwidth_h2d;   /* bytes per second, as given (0: none) */
    uint64_t host_budget;
    const char *time_unit;
    int k_requested;
    int budget_given;
    int feasible;
    ckpt_plan_info info;
    const ckpt_op *ops;
    int n_ops;
    const stage_view *sv;
} run_result;

static double ratio(double a, double b) { return b > 0 ? a / b : NAN; }

static void print_json(FILE *o, const run_result *r) {
    const ckpt_plan_info *in = &r->info;
    int i;
    fputs("{\n  \"file\": ", o);
    json_string(o, r->file);
    fputs(",\n  \"policy\": ", o);
    json_string(o, ckpt_policy_name(r->policy) ? ckpt_policy_name(r->policy) : "?");
    fprintf(o, ",\n  \"budget\": %" PRIu64, in->budget);
    fprintf(o, ",\n  \"budget_default\": %s", r->budget_given ? "false" : "true");
    fprintf(o, ",\n  \"feasible\": %s", r->feasible ? "true" : "false");
    fputs(",\n  \"time\": ", o);
    if (r->feasible) json_double(o, in->time);
    else fputs("null", o);
    fputs(",\n  \"peak\": ", o);
    if (r->feasible) fprintf(o, "%" PRIu64, in->peak);
    else fputs("null", o);
    fputs(",\n  \"arena\": ", o);
    if (r->feasible) fprintf(o, "%" PRIu64, in->arena);
    else fputs("null", o);
    fprintf(o, ",\n  \"min_budget\": %" PRIu64, in->min_budget);
    fputs(",\n  \"store_all_time\": ", o);
    json_double(o, in->store_all_time);
    fprintf(o, ",\n  \"store_all_peak\": %" PRIu64, in->store_all_peak);
    fputs(",\n  \"time_ratio\": ", o);
    json_double(o, r->feasible ? ratio(in->time, in->store_all_time) : NAN);
    fputs(",\n  \"peak_ratio\": ", o);
    json_double(o, r->feasible ? ratio((double)in->peak, (double)in->store_all_peak) : NAN);
    fputs(",\n  \"k\": ", o);
    if (r->policy != CKPT_POLICY_EVERY_K) fputs("null", o);
    else fprintf(o, "%d", r->feasible ? in->k : r->k_requested);
    fputs(",\n  \"unit\": ", o);
    if (r->feasible && r->policy == CKPT_POLICY_OPTIMAL) fprintf(o, "%" PRIu64, in->unit);
    else fputs("null", o);
    fputs(",\n  \"guarantee\": ", o);
    if (r->feasible) json_string(o, guarantee_key(in->guarantee));
    else fputs("null", o);
    fprintf(o, ",\n  \"n_stages\": %d", r->m->n);
    fputs(",\n  \"n_ops\": ", o);
    if (r->feasible) fprintf(o, "%d", r->n_ops);
    else fputs("null", o);
    fputs(",\n  \"n_recomputed\": ", o);
    if (r->feasible) fprintf(o, "%d", in->n_recomputed);
    else fputs("null", o);
    fputs(",\n  \"compute_time\": ", o);
    if (r->feasible) json_double(o, in->compute_time);
    else fputs("null", o);
    fputs(",\n  \"n_offloaded\": ", o);
    if (r->feasible) fprintf(o, "%d", in->n_offloaded);
    else fputs("null", o);
    fputs(",\n  \"host_peak\": ", o);
    if (r->feasible) fprintf(o, "%" PRIu64, in->host_peak);
    else fputs("null", o);
    fputs(",\n  \"bandwidth\": ", o);
    if (r->bandwidth > 0) json_double(o, r->bandwidth);
    else fputs("null", o);
    fputs(",\n  \"bandwidth_h2d\": ", o);
    if (r->bandwidth > 0) json_double(o, r->bandwidth_h2d > 0 ? r->bandwidth_h2d : r->bandwidth);
    else fputs("null", o);
    fputs(",\n  \"host_budget\": ", o);
    if (r->host_budget) fprintf(o, "%" PRIu64, r->host_budget);
    else fputs("null", o);
    fputs(",\n  \"time_unit\": ", o);
    if (r->bandwidth > 0) json_string(o, r->time_unit);
    else fputs("null", o);
    fputs(",\n  \"stages\": [", o);
    for (i = 0; i < r->m->n; i++) {
        if (i) fputs(", ", o);
        json_string(o, r->m->names[i]);
    }
    fputs("],\n  \"ops\": [", o);
    if (r->feasible) {
        for (i = 0; i < r->n_ops; i++) {
            const ckpt_op *op = &r->ops[i];
            fputs(i == 0 ? "\n    " : (i % 8 == 0 ? ",\n    " : ", "), o);
            if (op->kind == CKPT_OP_F && op->tape) fprintf(o, "[\"F\", %d, 1, %d]", op->stage, op->option);
            else if (op->kind == CKPT_OP_F) fprintf(o, "[\"F\", %d, 0]", op->stage);
            else if (op->kind == CKPT_OP_B) fprintf(o, "[\"B\", %d]", op->stage);
            else fprintf(o, "[\"%c%s\", %d]", copy_op_letter(op->kind), op->tape ? "T" : "", op->stage);
        }
        if (r->n_ops) fputs("\n  ", o);
    }
    fputs("],\n  \"stage_plan\": [", o);
    if (r->feasible) {
        for (i = 0; i < r->m->n; i++) {
            fputs(i ? ",\n    " : "\n    ", o);
            fprintf(o, "{\"stage\": %d, \"name\": ", i + 1);
            json_string(o, r->m->names[i]);
            fprintf(o, ", \"tape_kept\": %s, \"forward_runs\": %d, \"checkpoint\": %s, \"tape_option\": %d}",
                    r->sv[i].tape_first ? "true" : "false", r->sv[i].fwd_runs,
                    (i + 1 < r->m->n && r->sv[i].checkpoint) ? "true" : "false", r->sv[i].tape_option);
        }
        fputs("\n  ", o);
    }
    fputs("]\n}\n", o);
}

/* A name for the terminal: control characters shown as '?'. */
static void print_name(FILE *o, const char *s, int width) {
    int len = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        fputc(c < 0x20 || c == 0x7f ? '?' : c, o);
        if ((c & 0xC0) != 0x80) len++; /* count code points, roughly the display width */
    }
    for (; len < width; len++) fputc(' ', o);
}

static int name_width(const char *s) {
    int len = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) len++;
    return len;
}

static void print_text(FILE *o, const run_result *r) {
    const ckpt_plan_info *in = &r->info;
    const model *m = r->m;
    char b1[64], b2[64], t1[40], t2[40];
    int i, n_with_options = 0;

    for (i = 0; i < m->n; i++) n_with_options += m->costs[i].n_options > 0;
    fprintf(o, "%s: %d stage%s\n\n", r->file, m->n, m->n == 1 ? "" : "s");
    fprintf(o, "policy         %s", ckpt_policy_name(r->policy) ? ckpt_policy_name(r->policy) : "?");
    if (r->policy == CKPT_POLICY_EVERY_K) {
        if (r->feasible) fprintf(o, " (k = %d%s)", in->k, r->k_requested == 0 ? ", the best that fits" : "");
        else if (r->k_requested) fprintf(o, " (k = %d)", r->k_requested);
    }
    fputc('\n', o);
    fmt_bytes(in->budget, b1, sizeof b1);
    fprintf(o, "budget         %s%s\n", b1, r->budget_given ? "" : "  [default: the store-all peak]");
    fprintf(o, "feasible       %s\n", r->feasible ? "yes" : "no");
    snprintf(t2, sizeof t2, "%.6g", in->store_all_time);
    fmt_bytes(in->store_all_peak, b2, sizeof b2);
    if (r->feasible) {
        double tr = ratio(in->time, in->store_all_time);
        double pr = ratio((double)in->peak, (double)in->store_all_peak);
        snprintf(t1, sizeof t1, "%.6g", in->time);
        fmt_bytes(in->peak, b1, sizeof b1);
        if (isfinite(tr)) fprintf(o, "time           %s  (%.3fx store-all)\n", t1, tr);
        else fprintf(o, "time           %s\n", t1);
        if (isfinite(pr)) fprintf(o, "peak           %s  (%.3fx store-all)\n", b1, pr);
        else fprintf(o, "peak           %s\n", b1);
        fmt_bytes(in->arena, b1, sizeof b1);
        fprintf(o, "arena          %s  (every buffer laid out)\n", b1);
    }
    fprintf(o, "store-all      time %s, peak %s\n", t2, b2);
    fmt_bytes(in->min_budget, b1, sizeof b1);
    fprintf(o, "min budget     %s\n", b1);
    if (!r->feasible) return;
    if (r->policy == CKPT_POLICY_OPTIMAL) {
        if (in->unit <= 1) fprintf(o, "unit           1 B (exact in bytes)\n");
        else fprintf(o, "unit           %" PRIu64 " B (sizes rounded up to this unit)\n", in->unit);
    }
    if (r->bandwidth > 0) {
        char hb[64];
        fmt_bytes(in->host_peak, hb, sizeof hb);
        fprintf(o, "link           %.6g B/s to host, %.6g B/s back; times in %s\n", r->bandwidth,
                r->bandwidth_h2d > 0 ? r->bandwidth_h2d : r->bandwidth, r->time_unit);
        fprintf(o, "offloaded      %d buffer%s, host peak %s", in->n_offloaded, in->n_offloaded == 1 ? "" : "s", hb);
        if (r->host_budget) { fmt_bytes(r->host_budget, hb, sizeof hb); fprintf(o, " (host budget %s)", hb); }
        fprintf(o, "\ncompute time   %.6g (time above is the makespan with copies)\n", in->compute_time);
    }
    fprintf(o, "guarantee      %s\n", guarantee_text(in->guarantee));
    fprintf(o, "ops            %d (%d recomputed forward%s)\n", r->n_ops, in->n_recomputed,
            in->n_recomputed == 1 ? "" : "s");
    if (n_with_options) {
        int n_nonzero = 0;
        for (i = 0; i < m->n; i++) n_nonzero += r->sv[i].tape_option != 0;
        fprintf(o, "tape options   %d stage%s with options; %d tape%s kept in an option other than 0\n",
                n_with_options, n_with_options == 1 ? "" : "s", n_nonzero, n_nonzero == 1 ? "" : "s");
    }

    /* per-stage table */
    {
        int wn = 4, wf = 3, wb = 3, wa = 9, wt = 10;
        char cell[64];
        for (i = 0; i < m->n; i++) {
            int l = name_width(m->names[i]);
            if (l > wn) wn = l;
            fmt_double(m->costs[i].f, cell, sizeof cell);
            if ((int)strlen(cell) > wf) wf = (int)strlen(cell);
            fmt_double(m->costs[i].b, cell, sizeof cell);
            if ((int)strlen(cell) > wb) wb = (int)strlen(cell);
            snprintf(cell, sizeof cell, "%" PRIu64, m->costs[i].a);
            if ((int)strlen(cell) > wa) wa = (int)strlen(cell);
            snprintf(cell, sizeof cell, "%" PRIu64, m->costs[i].t);
            if ((int)strlen(cell) > wt) wt = (int)strlen(cell);
        }
        fputc('\n', o);
        fprintf(o, "%5s  ", "stage");
        print_name(o, "name", wn);
        fprintf(o, "  %*s  %*s  %*s  %*s  %-9s  %s%-8s  %s\n", wf, "f", wb, "b", wa, "out_bytes", wt,
                "tape_bytes", "tape kept", n_with_options ? "option  " : "", "fwd runs", "output stored");
        for (i = 0; i < m->n; i++) {
            char f[40], bt[40], opt[24];
            const char *stored;
            fmt_double(m->costs[i].f, f, sizeof f);
            fmt_double(m->costs[i].b, bt, sizeof bt);
            if (i + 1 == m->n) stored = "(chain output)";
            else stored = r->sv[i].checkpoint ? "yes (checkpoint)" : "no";
            if (!n_with_options) opt[0] = '\0';
            else if (m->costs[i].n_options == 0) snprintf(opt, sizeof opt, "%-6s  ", "-");
            else snprintf(opt, sizeof opt, "%-6d  ", r->sv[i].tape_option);
            fprintf(o, "%5d  ", i + 1);
            print_name(o, m->names[i], wn);
            fprintf(o, "  %*s  %*s  %*" PRIu64 "  %*" PRIu64 "  %-9s  %s%-8d  %s%s\n", wf, f, wb, bt,
                    wa, m->costs[i].a, wt, m->costs[i].t, r->sv[i].tape_first ? "yes" : "no", opt,
                    r->sv[i].fwd_runs, stored,
                    (m->costs[i].flags & CKPT_STAGE_NO_CHECKPOINT) ? "  [no_checkpoint]" : "");
        }
    }

    /* compact schedule */
    {
        int col = 10;
        fputs("\nschedule  ", o);
        for (i = 0; i < r->n_ops; i++) {
            char op[32];
            int l;
            if (r->ops[i].kind == CKPT_OP_F && r->ops[i].tape && m->costs[r->ops[i].stage - 1].n_options > 0)
                l = snprintf(op, sizeof op, "F%d+/%d", r->ops[i].stage, r->ops[i].option);
            else if (r->ops[i].kind == CKPT_OP_F)
                l = snprintf(op, sizeof op, "F%d%s", r->ops[i].stage, r->ops[i].tape ? "+" : "");
            else if (r->ops[i].kind == CKPT_OP_B)
                l = snprintf(op, sizeof op, "B%d", r->ops[i].stage);
            else
                l = snprintf(op, sizeof op, "%c%s%d", copy_op_letter(r->ops[i].kind), r->ops[i].tape ? "T" : "",
                             r->ops[i].stage);
            if (col + l + 1 > 100) {
                fputs("\n          ", o);
                col = 10;
            } else if (i) {
                fputc(' ', o);
                col++;
            }
            fputs(op, o);
            col += l;
        }
        fputs("\n          (Fi+ forward keeping its tape, Fi forward without, Bi backward", o);
        if (n_with_options)
            fputs(";\n           Fi+/k forward keeping its tape in tape option k (stages with options; 0 is\n"
                  "           tape_bytes with bwd_time, k > 0 tape_bytes_k with bwd_time + bwd_extra_k)", o);
        if (in->n_offloaded)
            fputs(";\n           Oi / Pi / Wi offload / prefetch / wait for the offload of X[i], OTi / PTi / WTi the\n"
                  "           same for stage i's tape", o);
        fputs(")\n", o);
    }
}

/* ---------------------------------------------------------------------------------------------
   Library log capture: the library's message explains errors other than infeasibility. */

static char g_libmsg[512];

static void capture_log(const char *tag, ckpt_log_level level, ckpt_result item, const char *message,
                        const char *file, int line, void *user) {
    (void)tag, (void)item, (void)file, (void)line, (void)user;
    if (level == CKPT_LOG_ERROR && message) snprintf(g_libmsg, sizeof g_libmsg, "%s", message);
}

/* Prints why planning failed (other than infeasibility) and returns the exit status. */
static int plan_failure(const char *file, ckpt_result r) {
    int input_fault = r == CKPT_ERR_BAD_TIME || r == CKPT_ERR_BAD_FLAGS ||
                      r == CKPT_ERR_SIZE_OVERFLOW || r == CKPT_ERR_BAD_K ||
                      r == CKPT_ERR_NO_STAGES || r == CKPT_ERR_TOO_MANY_STAGES ||
                      r == CKPT_ERR_BAD_POLICY ||
                      r == CKPT_ERR_TOO_COMPLEX; /* the library names a policy that works */
    fprintf(stderr, "%s: %s: planning failed: %s (%s)%s%s\n", PROG, file,
            ckpt_result_description(r), ckpt_result_string(r), g_libmsg[0] ? ": " : "", g_libmsg);
    return input_fault ? EXIT_USAGE : EXIT_INTERNAL;
}

/* ---------------------------------------------------------------------------------------------
   --sweep: every policy over a range of budgets, written as PREFIX.csv and PREFIX.svg. */

#define SWEEP_MAX_POINTS 1000
#define SWEEP_DEFAULT_POINTS 40

typedef struct sweep_point {
    uint64_t budget, peak, arena, host_peak;
    double time;
    int k, n_recomputed;
} sweep_point;

typedef struct sweep_line {
    ckpt_policy policy;
    uint64_t min_budget;   /* 0: no budget is feasible */
    int n;                 /* feasible points, in budget order */
    sweep_point *pt;
} sweep_line;

/* Fixed per policy (indexed by ckpt_policy): colour, line width and dashes. optimal and offload
   are drawn first and wide, the heuristics narrow and dashed on top, so that lines that coincide
   stay visible. */
static const struct { const char *colour, *dash; double width; } SWEEP_STYLE[CKPT_POLICY_COUNT_] = {
    {"#1f77b4", NULL, 5},      /* optimal: blue */
    {"#555555", NULL, 2},      /* store-all: grey */
    {"#2ca02c", "7 4", 2},     /* every-k: green */
    {"#ff7f0e", "2 3", 2},     /* sqrt: orange */
    {"#9467bd", "9 3 2 3", 2}, /* greedy: purple */
    {"#d62728", NULL, 5},      /* offload: red */
};

static void svg_stroke(FILE *o, ckpt_policy p) {
    fprintf(o, "stroke=\"%s\" stroke-width=\"%g\"", SWEEP_STYLE[p].colour, SWEEP_STYLE[p].width);
    if (SWEEP_STYLE[p].width > 2) fputs(" stroke-opacity=\"0.55\"", o);
    if (SWEEP_STYLE[p].dash) fprintf(o, " stroke-dasharray=\"%s\"", SWEEP_STYLE[p].dash);
}

/* "2.9 GiB", "120 B". */
static void fmt_bytes_short(uint64_t v, char *buf, size_t bufsz) {
    char *paren;
    fmt_bytes(v, buf, bufsz);
    paren = strchr(buf, '(');
    if (paren) {
        memmove(buf, paren + 1, strlen(paren + 1) + 1);
        buf[strlen(buf) - 1] = '\0';
    }
}

/* Text for XML: & < > " escaped, control characters as '?', and every byte above 0x7f as '?'
   unless the whole string is valid UTF-8. */
static void xml_text(FILE *o, const char *s) {
    int utf8 = utf8_valid((const unsigned char *)s);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '&') fputs("&amp;", o);
        else if (c == '<') fputs("&lt;", o);
        else if (c == '>') fputs("&gt;", o);
        else if (c == '"') fputs("&quot;", o);
        else if (c < 0x20 || c == 0x7f || (c >= 0x80 && !utf8)) fputc('?', o);
        else fputc(c, o);
    }
}

/* A round tick step for about five ticks over span (> 0). */
static double nice_step(double span) {
    double raw = span / 5, mag = pow(10, floor(log10(raw))), norm = raw / mag;
    return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
}

/* Axis range [*lo, *hi] of round ticks covering [vmin, vmax]; returns the step. */
static double axis_range(double vmin, double vmax, double *lo, double *hi) {
    double span = vmax - vmin, step;
    if (!(span > 1e-9 * fabs(vmax))) span = vmax > 0 ? 0.1 * vmax : 1;
    step = nice_step(span);
    *lo = floor(vmin / step + 1e-9) * step;
    *hi = ceil(vmax / step - 1e-9) * step;
    if (*hi <= *lo) *hi = *lo + step;
    return step;
}

static int tick_decimals(double step) {
    int d = (int)-floor(log10(step) + 1e-9);
    return d > 0 ? d : 0;
}

static int write_sweep_csv(FILE *o, const sweep_line *ln, int n_lines, uint64_t sa_peak, double sa_time) {
    int p, i;
    fputs("policy,budget,peak,peak_ratio,time,time_ratio,arena,k,recomputed,host_peak\n", o);
    for (p = 0; p < n_lines; p++) {
        for (i = 0; i < ln[p].n; i++) {
            const sweep_point *q = &ln[p].pt[i];
            char t[40], pr[40], tr[40];
            fmt_double(q->time, t, sizeof t);
            fmt_double((double)q->peak / (double)sa_peak, pr, sizeof pr);
            fmt_double(q->time / sa_time, tr, sizeof tr);
            fprintf(o, "%s,%" PRIu64 ",%" PRIu64 ",%s,%s,%s,%" PRIu64 ",%d,%d,%" PRIu64 "\n",
                    ckpt_policy_name(ln[p].policy), q->budget, q->peak, pr, t, tr, q->arena, q->k,
                    q->n_recomputed, q->host_peak);
        }
    }
    return 0;
}

static int cmp_point_peak(const void *a, const void *b) {
    const sweep_point *x = (const sweep_point *)a, *y = (const sweep_point *)b;
    if (x->peak != y->peak) return x->peak < y->peak ? -1 : 1;
    if (x->time != y->time) return x->time < y->time ? -1 : 1;
    return x->budget < y->budget ? -1 : x->budget > y->budget;
}

static void write_sweep_svg(FILE *o, const char *file, sweep_line *ln, int n_lines, uint64_t sa_peak,
                            double sa_time, const char *time_unit, uint64_t b_lo, uint64_t b_hi, int n_budgets) {
    /* Canvas 800 x 500; the plot area leaves room for the title, the axes and the legend. */
    const double W = 800, H = 500, L = 80, R = 620, T = 70, B = 430, PAD = 8;
    double xmin = 1, xmax = 1, ymin = 1, ymax = 1, x0, x1, y0, y1, xs, ys, v;
    int p, i, q, xd, yd;
    char bytes[64], blo[64], bhi[64];

    for (p = 0; p < n_lines; p++)
        for (i = 0; i < ln[p].n; i++) {
            double xr = (double)ln[p].pt[i].peak / (double)sa_peak, yr = ln[p].pt[i].time / sa_time;
            if (xr < xmin) xmin = xr;
            if (xr > xmax) xmax = xr;
            if (yr < ymin) ymin = yr;
            if (yr > ymax) ymax = yr;
        }
    xs = axis_range(xmin, xmax, &x0, &x1);
    ys = axis_range(ymin, ymax, &y0, &y1);
    xd = tick_decimals(xs);
    yd = tick_decimals(ys);
#define SX(x) (L + PAD + ((x) - x0) / (x1 - x0) * (R - L - 2 * PAD))
#define SY(y) (B - PAD - ((y) - y0) / (y1 - y0) * (B - T - 2 * PAD))

    fprintf(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n",
            W, H, W, H);
    fprintf(o, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", W, H);
    fputs("<text x=\"400\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">ckpt-plan --sweep ", o);
    xml_text(o, file);
    fputs("</text>\n", o);
    fmt_bytes_short(sa_peak, bytes, sizeof bytes);
    fmt_bytes_short(b_lo, blo, sizeof blo);
    fmt_bytes_short(b_hi, bhi, sizeof bhi);
    fprintf(o, "<text x=\"400\" y=\"44\" text-anchor=\"middle\" fill=\"#444\">store-all: peak %s, time %.4g%s%s; "
               "%d budgets from %s to %s (infeasible ones left out)</text>\n",
            bytes, sa_time, time_unit ? " " : "", time_unit ? time_unit : "", n_budgets, blo, bhi);

    /* grid, ticks and tick labels */
    fputs("<g stroke=\"#e0e0e0\" stroke-width=\"1\">\n", o);
    for (v = x0; v <= x1 + xs * 1e-6; v += xs)
        fprintf(o, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n", SX(v), T, SX(v), B);
    for (v = y0; v <= y1 + ys * 1e-6; v += ys)
        fprintf(o, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n", L, SY(v), R, SY(v));
    fputs("</g>\n<g fill=\"#222\">\n", o);
    for (v = x0; v <= x1 + xs * 1e-6; v += xs)
        fprintf(o, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%.*f</text>\n", SX(v), B + 16, xd,
                fabs(v) < xs * 1e-6 ? 0.0 : v);
    for (v = y0; v <= y1 + ys * 1e-6; v += ys)
        fprintf(o, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">%.*f</text>\n", L - 6, SY(v) + 4, yd,
                fabs(v) < ys * 1e-6 ? 0.0 : v);
    fputs("</g>\n", o);
    fprintf(o, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#222\"/>\n", L, T,
            R - L, B - T);
    fprintf(o, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">peak / store-all peak</text>\n", (L + R) / 2,
            B + 40);
    fprintf(o, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\" transform=\"rotate(-90 %.0f %.0f)\">"
               "predicted time / store-all time</text>\n",
            L - 50, (T + B) / 2, L - 50, (T + B) / 2);

    /* one path per policy with a feasible budget, its points ordered by peak, then markers; the
       wide lines first */
    for (i = 0; i < 2 * n_lines; i++) {
        const char *name, *col;
        int wide;
        p = i % n_lines;
        wide = SWEEP_STYLE[ln[p].policy].width > 2;
        if (!ln[p].n || wide != (i < n_lines)) continue;
        name = ckpt_policy_name(ln[p].policy);
        col = SWEEP_STYLE[ln[p].policy].colour;
        qsort(ln[p].pt, (size_t)ln[p].n, sizeof *ln[p].pt, cmp_point_peak);
        fprintf(o, "<path data-policy=\"%s\" fill=\"none\" ", name);
        svg_stroke(o, ln[p].policy);
        fputs(" stroke-linejoin=\"round\" d=\"", o);
        for (q = 0; q < ln[p].n; q++)
            fprintf(o, "%s%.2f %.2f", q ? " L" : "M", SX((double)ln[p].pt[q].peak / (double)sa_peak),
                    SY(ln[p].pt[q].time / sa_time));
        fputs("\"/>\n", o);
        fprintf(o, "<g fill=\"%s\">\n", col);
        for (q = 0; q < ln[p].n; q++)
            fprintf(o, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%s\"/>\n", SX((double)ln[p].pt[q].peak / (double)sa_peak),
                    SY(ln[p].pt[q].time / sa_time), wide ? "3.5" : "2.5");
        fputs("</g>\n", o);
    }

    /* legend */
    for (p = 0; p < n_lines; p++) {
        double y = T + 10 + 22 * p;
        const char *name = ckpt_policy_name(ln[p].policy);
        if (ln[p].n) {
            fprintf(o, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" ", R + 20, y, R + 50, y);
            svg_stroke(o, ln[p].policy);
            fprintf(o, "/>\n<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", R + 58, y + 4, name);
        } else
            fprintf(o, "<text x=\"%.0f\" y=\"%.0f\" fill=\"#888\">%s: no feasible budget</text>\n", R + 20,
                    y + 4, name);
    }
    fputs("</svg>\n", o);
#undef SX
#undef SY
}

/* Opens PREFIX + ext for writing; NULL after a message. */
static FILE *open_out(const char *prefix, const char *ext, char **name) {
    size_t l = strlen(prefix);
    FILE *f;
    *name = (char *)xmalloc(l + strlen(ext) + 1);
    memcpy(*name, prefix, l);
    strcpy(*name + l, ext);
    errno = 0;
    f = fopen(*name, "wb");
    if (!f) fprintf(stderr, "%s: cannot write '%s': %s\n", PROG, *name, errno ? strerror(errno) : "unknown error");
    return f;
}

/* Closes f; 0 after a message when something failed to write. */
static int close_out(FILE *f, const char *name) {
    int bad = ferror(f) != 0;
    if (fclose(f) != 0) bad = 1;
    if (bad) fprintf(stderr, "%s: error writing '%s'\n", PROG, name);
    return !bad;
}

static int run_sweep(const model *m, const char *file, const char *prefix, int n_points, const ckpt_plan_desc *base,
                     const char *time_unit) {
    static const ckpt_policy order[] = {CKPT_POLICY_STORE_ALL, CKPT_POLICY_EVERY_K, CKPT_POLICY_SQRT,
                                        CKPT_POLICY_GREEDY,    CKPT_POLICY_OPTIMAL, CKPT_POLICY_OFFLOAD};
    sweep_line ln[sizeof order / sizeof order[0]];
    int n_lines = 0, n_budgets = 0, p, j, rc = EXIT_OK;
    uint64_t *budgets = NULL, lo = UINT64_MAX, hi, sa_peak;
    double sa_time;
    ckpt_plan_desc pd = *base;
    ckpt_plan_info info;
    ckpt_plan *plan = NULL;
    ckpt_result r;
    FILE *f;
    char *csv_name = NULL, *svg_name = NULL;

    /* store-all's figures: the top of the range and the denominators of the ratios */
    pd.policy = CKPT_POLICY_STORE_ALL;
    pd.budget = 0;
    r = ckpt_plan_create(m->costs, m->n, &pd, &plan, &info);
    ckpt_plan_destroy(plan);
    plan = NULL;
    if (r != CKPT_OK) return plan_failure(file, r);
    hi = sa_peak = info.store_all_peak;
    sa_time = info.store_all_time;
    if (sa_peak == 0 || !(sa_time > 0)) {
        fprintf(stderr, "%s: %s: --sweep: store-all's %s is 0, so there is nothing to sweep\n", PROG, file,
                sa_peak == 0 ? "peak" : "time");
        return EXIT_USAGE;
    }

    /* each policy's min_budget (planning for 1 byte reports it) */
    for (p = 0; p < (int)(sizeof order / sizeof order[0]); p++) {
        if (order[p] == CKPT_POLICY_OFFLOAD && !(base->bandwidth > 0)) continue; /* no link: offload is optimal */
        memset(&ln[n_lines], 0, sizeof ln[n_lines]);
        ln[n_lines].policy = order[p];
        pd.policy = order[p];
        pd.k = order[p] == CKPT_POLICY_EVERY_K ? base->k : 0;
        pd.budget = 1;
        g_libmsg[0] = '\0';
        r = ckpt_plan_create(m->costs, m->n, &pd, &plan, &info);
        ckpt_plan_destroy(plan);
        plan = NULL;
        if (r == CKPT_OK) info.min_budget = 1;
        else if (r == CKPT_ERR_TOO_COMPLEX) {   /* a chain too long for this policy: the others still plot */
            fprintf(stderr, "%s: warning: --sweep: policy %s left out: %s%s%s\n", PROG, ckpt_policy_name(order[p]),
                    ckpt_result_description(r), g_libmsg[0] ? ": " : "", g_libmsg);
            continue;
        } else if (r != CKPT_ERR_INFEASIBLE) {
            fprintf(stderr, "%s: --sweep: policy %s\n", PROG, ckpt_policy_name(order[p]));
            return plan_failure(file, r);
        }
        ln[n_lines].min_budget = info.min_budget == UINT64_MAX ? 0 : info.min_budget;
        if (ln[n_lines].min_budget && ln[n_lines].min_budget < lo) lo = ln[n_lines].min_budget;
        n_lines++;
    }
    if (lo > hi) lo = hi;

    /* n_points budgets spread evenly from lo to hi, repeats dropped */
    budgets = (uint64_t *)xmalloc((size_t)n_points * sizeof *budgets);
    for (j = 0; j < n_points; j++) {
        uint64_t b = j == n_points - 1 ? hi : lo + (uint64_t)((double)(hi - lo) * j / (n_points - 1));
        if (b > hi) b = hi;
        if (!n_budgets || b > budgets[n_budgets - 1]) budgets[n_budgets++] = b;
    }

    for (p = 0; p < n_lines; p++) {
        ln[p].pt = (sweep_point *)xmalloc((size_t)n_budgets * sizeof *ln[p].pt);
        pd.policy = ln[p].policy;
        pd.k = ln[p].policy == CKPT_POLICY_EVERY_K ? base->k : 0;
        for (j = 0; j < n_budgets && rc == EXIT_OK; j++) {
            pd.budget = budgets[j];
            g_libmsg[0] = '\0';
            r = ckpt_plan_create(m->costs, m->n, &pd, &plan, &info);
            if (r == CKPT_OK) {
                sweep_point *q = &ln[p].pt[ln[p].n++];
                q->budget = budgets[j];
                q->peak = info.peak;
                q->arena = info.arena;
                q->host_peak = info.host_peak;
                q->time = info.time;
                q->k = ln[p].policy == CKPT_POLICY_EVERY_K ? info.k : 0;
                q->n_recomputed = info.n_recomputed;
                if (info.peak > budgets[j] || info.arena > budgets[j])
                    fprintf(stderr, "%s: warning: policy %s at budget %" PRIu64 " plans peak %" PRIu64
                                    ", arena %" PRIu64 ", over the budget\n",
                            PROG, ckpt_policy_name(ln[p].policy), budgets[j], info.peak, info.arena);
            } else if (r != CKPT_ERR_INFEASIBLE) {
                fprintf(stderr, "%s: --sweep: policy %s, budget %" PRIu64 "\n", PROG,
                        ckpt_policy_name(ln[p].policy), budgets[j]);
                rc = plan_failure(file, r);
            }
            ckpt_plan_destroy(plan);
            plan = NULL;
        }
    }

    if (rc == EXIT_OK && (f = open_out(prefix, ".csv", &csv_name)) != NULL) {
        write_sweep_csv(f, ln, n_lines, sa_peak, sa_time);
        if (!close_out(f, csv_name)) rc = EXIT_INTERNAL;
    } else if (rc == EXIT_OK) {
        rc = EXIT_USAGE;
    }
    if (rc == EXIT_OK && (f = open_out(prefix, ".svg", &svg_name)) != NULL) {
        write_sweep_svg(f, file, ln, n_lines, sa_peak, sa_time, base->bandwidth > 0 ? time_unit : NULL, lo, hi,
                        n_budgets);
        if (!close_out(f, svg_name)) rc = EXIT_INTERNAL;
    } else if (rc == EXIT_OK) {
        rc = EXIT_USAGE;
    }

    if (rc == EXIT_OK) {
        int rows = 0;
        char b1[64], b2[64];
        fmt_bytes(lo, b1, sizeof b1);
        fmt_bytes(hi, b2, sizeof b2);
        printf("%s: %d budgets from %s to %s (store-all's peak)\n", file, n_budgets, b1, b2);
        for (p = 0; p < n_lines; p++) {
            rows += ln[p].n;
            printf("  %-10s %3d feasible", ckpt_policy_name(ln[p].policy), ln[p].n);
            if (ln[p].min_budget) {
                fmt_bytes(ln[p].min_budget, b1, sizeof b1);
                printf(", every budget from %s plans\n", b1);
            } else {
                printf(", no budget is feasible\n");
            }
        }
        printf("wrote %s (%d rows) and %s\n", csv_name, rows, svg_name);
    }
    for (p = 0; p < n_lines; p++) free(ln[p].pt);
    free(budgets);
    free(csv_name);
    free(svg_name);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
   --trace: the plan's predicted timeline as Chrome trace-event JSON. Returns an exit status. */
static int write_trace(const char *path, const model *m, const ckpt_op *ops, int n_ops, double bw, double bw_h2d,
                       double ms_per_unit) {
    ckpt_trace t;
    size_t len = 0;
    char *json;
    FILE *f;
    int ok;
    ckpt_result r = ckpt_trace_predict(m->costs, m->n, ops, n_ops, bw, bw_h2d, ms_per_unit,
                                       (const char *const *)m->names, &t);
    if (r == CKPT_OK) r = ckpt_trace_json(&t, NULL, 0, &len);
    if (r != CKPT_OK) {
        fprintf(stderr, "%s: --trace: %s\n", PROG, ckpt_result_description(r));
        ckpt_trace_free(&t);
        return EXIT_INTERNAL;
    }
    json = (char *)xmalloc(len + 1);
    ckpt_trace_json(&t, json, len + 1, &len);
    ckpt_trace_free(&t);
    f = fopen(path, "wb");
    ok = f && fwrite(json, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = 0;
    free(json);
    if (!ok) {
        fprintf(stderr, "%s: --trace: cannot write '%s': %s\n", PROG, path, strerror(errno));
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

/* ---------------------------------------------------------------------------------------------
   main */

static void usage(FILE *o) {
    fprintf(o,
            "usage: %s [--policy store-all|every-k|sqrt|greedy|optimal|offload] [--k K] [--budget BYTES]\n"
            "                 [--bandwidth BYTES_PER_S] [--bandwidth-h2d BYTES_PER_S] [--host-budget BYTES]\n"
            "                 [--time-unit s|ms|us] [--threads N] [--json] [--trace FILE.json] FILE.csv\n"
            "       %s --sweep PREFIX [--points N] [--k K] [--bandwidth BYTES_PER_S] [...] FILE.csv\n"
            "\n"
            "Plans activation checkpointing for a chain of stages (ckpt.h's planner).\n"
            "\n"
            "  --policy P     planner policy (default optimal)\n"
            "  --k K          every-k segment length; 0 = the best k that fits (default 0)\n"
            "  --budget BYTES peak bytes allowed (default: the store-all peak; 0 = no limit);\n"
            "                 accepts units KB MB GB TB (10^3n) and KiB MiB GiB TiB (2^10n)\n"
            "  --bandwidth B  offload: link bytes per second, device to host (and back unless\n"
            "                 --bandwidth-h2d is given); stage times are read in --time-unit\n"
            "  --bandwidth-h2d B  offload: host-to-device bytes per second\n"
            "  --host-budget BYTES  offload: pinned host bytes allowed (default: no cap)\n"
            "  --time-unit U  the unit of the CSV times for --bandwidth: s (default), ms or us\n"
            "  --threads N    planning threads for long chains (default 1); the plan is the same\n"
            "  --json         print one JSON object instead of the summary and table\n"
            "  --trace FILE   also write the plan's predicted timeline to FILE as Chrome\n"
            "                 trace-event JSON (chrome://tracing, ui.perfetto.dev); times are\n"
            "                 read in --time-unit\n"
            "  --sweep PREFIX plan every policy (offload only with --bandwidth) for N budgets from\n"
            "                 the smallest min_budget to store-all's peak; write PREFIX.csv (one row\n"
            "                 per feasible policy and budget) and PREFIX.svg (time / store-all\n"
            "                 against peak / store-all, one line per policy)\n"
            "  --points N     --sweep: the number of budgets, 2 to 1000 (default 40)\n"
            "  --help         print this help\n"
            "\n"
            "FILE.csv ('-' for standard input) has a header line naming the columns\n"
            "  name,fwd_time,bwd_time,out_bytes,tape_bytes,fwd_workspace,bwd_workspace\n"
            "in any order, optionally no_checkpoint (0/1) and tape options: column pairs\n"
            "tape_bytes_K,bwd_extra_K for K = 1..3 (option K keeps a tape of tape_bytes_K\n"
            "bytes and makes the backward bwd_extra_K slower; both fields empty: no option K),\n"
            "then one row per stage, first stage first. Times are non-negative decimals (any\n"
            "consistent unit), sizes byte counts. Blank lines and lines starting with '#' are\n"
            "ignored.\n"
            "\n"
            "Exit status: 0 feasible, 3 the budget is infeasible, 2 bad input or usage,\n"
            "1 internal error.\n",
            PROG, PROG);
}

static int usage_error(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", PROG);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n", stderr);
    usage(stderr);
    return EXIT_USAGE;
}

/* "--opt VALUE" or "--opt=VALUE". Returns 1 and sets *val when argv[*i] is that option. */
static int take_value(int argc, char **argv, int *i, const char *opt, const char **val, int *missing) {
    size_t l = strlen(opt);
    const char *a = argv[*i];
    if (strncmp(a, opt, l) != 0) return 0;
    if (a[l] == '=') {
        *val = a + l + 1;
        return 1;
    }
    if (a[l] != '\0') return 0;
    if (*i + 1 >= argc) {
        *missing = 1;
        return 1;
    }
    *val = argv[++*i];
    return 1;
}

int main(int argc, char **argv) {
    ckpt_policy policy = CKPT_POLICY_OPTIMAL;
    const char *policy_arg = NULL, *path = NULL;
    int k = 0, k_given = 0, json = 0, budget_given = 0, threads = 1, i, rc;
    uint64_t budget = 0, host_budget = 0;
    double bandwidth = 0, bandwidth_h2d = 0, per_unit = 1;
    const char *time_unit = "s", *sweep = NULL, *trace = NULL;
    int opts_done = 0, points = SWEEP_DEFAULT_POINTS, points_given = 0;
    model m;
    ckpt_plan_desc pd;
    ckpt_plan *plan = NULL;
    run_result res;
    stage_view *sv = NULL;
    ckpt_result r;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        int missing = 0;
        if (!opts_done && a[0] == '-' && a[1] != '\0') {
            if (strcmp(a, "--") == 0) {
                opts_done = 1;
            } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
                usage(stdout);
                return EXIT_OK;
            } else if (strcmp(a, "--json") == 0) {
                json = 1;
            } else if (take_value(argc, argv, &i, "--policy", &val, &missing)) {
                if (missing) return usage_error("option --policy needs a value");
                policy_arg = val;
            } else if (take_value(argc, argv, &i, "--k", &val, &missing)) {
                if (missing) return usage_error("option --k needs a value");
                if (!parse_int_arg(val, &k))
                    return usage_error("--k: '%s' is not a non-negative integer", val);
                k_given = 1;
            } else if (take_value(argc, argv, &i, "--budget", &val, &missing)) {
                if (missing) return usage_error("option --budget needs a value");
                if (!parse_budget(val, &budget))
                    return usage_error("--budget: '%s' is not a byte count (a non-negative integer, "
                                       "optionally with a unit such as MiB or GB)", val);
                budget_given = 1;
            } else if (take_value(argc, argv, &i, "--bandwidth", &val, &missing) ||
                       take_value(argc, argv, &i, "--bandwidth-h2d", &val, &missing)) {
                double *dst = strncmp(a, "--bandwidth-h2d", 15) == 0 ? &bandwidth_h2d : &bandwidth;
                char *end = NULL;
                if (missing) return usage_error("option %s needs a value", a);
                errno = 0;
                *dst = strtod(val, &end);
                if (errno || end == val || *end || !(*dst > 0) || !isfinite(*dst))
                    return usage_error("%s: '%s' is not a positive number of bytes per second", a, val);
            } else if (take_value(argc, argv, &i, "--threads", &val, &missing)) {
                if (missing) return usage_error("option --threads needs a value");
                if (!parse_int_arg(val, &threads))
                    return usage_error("--threads: '%s' is not a non-negative integer", val);
            } else if (take_value(argc, argv, &i, "--host-budget", &val, &missing)) {
                if (missing) return usage_error("option --host-budget needs a value");
                if (!parse_budget(val, &host_budget))
                    return usage_error("--host-budget: '%s' is not a byte count", val);
            } else if (take_value(argc, argv, &i, "--trace", &val, &missing)) {
                if (missing) return usage_error("option --trace needs a value (a file name)");
                trace = val;
            } else if (take_value(argc, argv, &i, "--sweep", &val, &missing)) {
                if (missing) return usage_error("option --sweep needs a value (a file prefix)");
                sweep = val;
            } else if (take_value(argc, argv, &i, "--points", &val, &missing)) {
                if (missing) return usage_error("option --points needs a value");
                if (!parse_int_arg(val, &points) || points < 2 || points > SWEEP_MAX_POINTS) {
                    char b[64];
                    return usage_error("--points: '%s' is not an integer from 2 to %d", show(val, b, sizeof b),
                                       SWEEP_MAX_POINTS);
                }
                points_given = 1;
            } else if (take_value(argc, argv, &i, "--time-unit", &val, &missing)) {
                if (missing) return usage_error("option --time-unit needs a value");
                if (strcmp(val, "s") == 0) { per_unit = 1; time_unit = "s"; }
                else if (strcmp(val, "ms") == 0) { per_unit = 1e-3; time_unit = "ms"; }
                else if (strcmp(val, "us") == 0) { per_unit = 1e-6; time_unit = "us"; }
                else return usage_error("--time-unit: '%s' is not s, ms or us", val);
            } else {
                return usage_error("unknown option '%s'", a);
            }
        } else {
            if (path) return usage_error("more than one input file ('%s' and '%s')", path, a);
            path = a;
        }
    }
    if (policy_arg) {
        if (ckpt_policy_parse(policy_arg, &policy) != CKPT_OK) {
            char b[64];
            return usage_error("unknown policy '%s' (use store-all, every-k, sqrt, greedy, optimal or offload)",
                               show(policy_arg, b, sizeof b));
        }
    }
    if (!path) return usage_error("no input file");
    if (sweep) {
        char b[64];
        size_t l = strlen(sweep);
        if (l == 0) return usage_error("--sweep: empty file prefix");
        if (sweep[l - 1] == '/')
            return usage_error("--sweep: '%s' names a directory; give a file prefix such as '%ssweep'",
                               show(sweep, b, sizeof b), show(sweep, b, sizeof b));
        if (json) return usage_error("--sweep writes files; it does not combine with --json");
        if (trace) return usage_error("--sweep writes files; it does not combine with --trace");
        if (policy_arg || budget_given)
            fprintf(stderr, "%s: warning: --sweep plans every policy over a range of budgets; "
                            "--policy and --budget are ignored\n", PROG);
        if ((bandwidth_h2d > 0 || host_budget) && !(bandwidth > 0))
            fprintf(stderr, "%s: warning: --bandwidth-h2d and --host-budget are for policy offload, which "
                            "--sweep plans only with --bandwidth; ignored\n", PROG);
        rc = load_model(path, &m);
        if (!rc) {
            char *pre = (char *)xmalloc(l + 1);
            memcpy(pre, sweep, l + 1);
            if (l > 4 && (strcmp(pre + l - 4, ".csv") == 0 || strcmp(pre + l - 4, ".svg") == 0))
                pre[l - 4] = '\0'; /* "--sweep out.svg" writes out.csv and out.svg */
            memset(&pd, 0, sizeof pd);
            pd.k = k;
            pd.bandwidth = bandwidth * per_unit;
            pd.bandwidth_h2d = bandwidth > 0 ? bandwidth_h2d * per_unit : 0;
            pd.host_budget = bandwidth > 0 ? host_budget : 0;
            pd.logger.fn = capture_log;
            pd.threads = threads;
            rc = run_sweep(&m, strcmp(path, "-") == 0 ? "<stdin>" : path, pre, points, &pd, time_unit);
            free(pre);
        }
        free_model(&m);
        if (!rc && (fflush(stdout) != 0 || ferror(stdout))) {
            fprintf(stderr, "%s: error writing the output\n", PROG);
            return EXIT_INTERNAL;
        }
        return rc;
    }
    if (points_given) fprintf(stderr, "%s: warning: --points is for --sweep; ignored\n", PROG);
    if ((bandwidth > 0 || bandwidth_h2d > 0 || host_budget) && policy != CKPT_POLICY_OFFLOAD)
        fprintf(stderr, "%s: warning: --bandwidth, --bandwidth-h2d and --host-budget are for policy offload; ignored\n", PROG);
    if (policy == CKPT_POLICY_OFFLOAD && !(bandwidth > 0))
        fprintf(stderr, "%s: warning: policy offload without --bandwidth has no link: it plans what optimal does\n", PROG);
    if (policy != CKPT_POLICY_OFFLOAD) bandwidth = bandwidth_h2d = 0, host_budget = 0;
    if (k_given && policy != CKPT_POLICY_EVERY_K)
        fprintf(stderr, "%s: warning: --k is ignored with policy %s\n", PROG,
                ckpt_policy_name(policy) ? ckpt_policy_name(policy) : "?");

    rc = load_model(path, &m);
    if (rc) {
        free_model(&m);
        return rc;
    }

    memset(&pd, 0, sizeof pd);
    if (!budget_given) {   /* the default budget is store-all's peak (0 would mean no limit) */
        ckpt_plan_info sa;
        pd.policy = CKPT_POLICY_STORE_ALL;
        if (ckpt_plan_create(m.costs, m.n, &pd, &plan, &sa) == CKPT_OK) budget = sa.store_all_peak;
        ckpt_plan_destroy(plan);
        plan = NULL;
    }
    pd.policy = policy;
    pd.budget = budget;
    pd.k = policy == CKPT_POLICY_EVERY_K ? k : 0;
    pd.threads = threads;
    pd.bandwidth = bandwidth * per_unit;           /* bytes per unit of the CSV's times */
    pd.bandwidth_h2d = bandwidth_h2d * per_unit;
    pd.host_budget = host_budget;
    pd.logger.fn = capture_log;

    memset(&res, 0, sizeof res);
    res.file = strcmp(path, "-") == 0 ? "<stdin>" : path;
    res.m = &m;
    res.policy = policy;
    res.k_requested = pd.k;
    res.budget_given = budget_given;
    res.bandwidth = bandwidth;
    res.bandwidth_h2d = bandwidth_h2d;
    res.host_budget = host_budget;
    res.time_unit = time_unit;

    r = ckpt_plan_create(m.costs, m.n, &pd, &plan, &res.info);
    if (r == CKPT_ERR_INFEASIBLE) {
        char kdesc[48] = "";
        if (policy == CKPT_POLICY_EVERY_K && pd.k > 0) snprintf(kdesc, sizeof kdesc, " (k = %d)", pd.k);
        if (res.info.budget == 0) res.info.budget = budget;
        res.feasible = 0;
        if (json) print_json(stdout, &res);
        else print_text(stdout, &res);
        fflush(stdout);
        if (res.info.min_budget == 0 || res.info.min_budget == UINT64_MAX)
            fprintf(stderr, "%s: budget %" PRIu64 " bytes is infeasible for policy %s%s; no budget is "
                            "feasible\n",
                    PROG, res.info.budget, ckpt_policy_name(policy), kdesc);
        else
            fprintf(stderr,
                    "%s: budget %" PRIu64 " bytes is infeasible for policy %s%s; every budget from "
                    "%" PRIu64 " bytes plans\n",
                    PROG, res.info.budget, ckpt_policy_name(policy), kdesc, res.info.min_budget);
        free_model(&m);
        return EXIT_INFEASIBLE;
    }
    if (r != CKPT_OK) {
        free_model(&m);
        return plan_failure(res.file, r);
    }

    res.feasible = 1;
    res.ops = ckpt_plan_ops(plan, &res.n_ops);
    sv = (stage_view *)xmalloc((size_t)m.n * sizeof *sv);
    if (!res.ops || !derive_views(res.ops, res.n_ops, m.n, sv)) {
        fprintf(stderr, "%s: %s: internal error: the planner returned a malformed schedule\n", PROG,
                res.file);
        free(sv);
        ckpt_plan_destroy(plan);
        free_model(&m);
        return EXIT_INTERNAL;
    }
    res.sv = sv;

    /* Self-check: replay the schedule in the cost model; it must match the plan's prediction. */
    {
        double t = 0;
        uint64_t peak = 0;
        int bad = -1;
        ckpt_result sr;
        if (pd.bandwidth > 0) {
            ckpt_sim sim;
            sr = ckpt_schedule_simulate_offload(m.costs, m.n, res.ops, res.n_ops, pd.bandwidth, pd.bandwidth_h2d, &sim, &bad);
            t = sim.time; peak = sim.peak;
        } else {
            sr = ckpt_schedule_simulate(m.costs, m.n, res.ops, res.n_ops, &t, &peak, &bad);
        }
        if (sr != CKPT_OK)
            fprintf(stderr, "%s: warning: the planned schedule fails the cost-model check at op %d (%s)\n",
                    PROG, bad, ckpt_result_string(sr));
        else if (peak != res.info.peak || fabs(t - res.info.time) > 1e-9 * (1.0 + fabs(t)))
            fprintf(stderr,
                    "%s: warning: the planned schedule simulates to time %.17g, peak %" PRIu64
                    " but the plan predicts time %.17g, peak %" PRIu64 "\n",
                    PROG, t, peak, res.info.time, res.info.peak);
    }

    if (json) print_json(stdout, &res);
    else print_text(stdout, &res);
    if (trace) rc = write_trace(trace, &m, res.ops, res.n_ops, pd.bandwidth, pd.bandwidth_h2d, per_unit * 1e3);

    free(sv);
    ckpt_plan_destroy(plan);
    free_model(&m);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "%s: error writing the output\n", PROG);
        return EXIT_INTERNAL;
    }
    return rc;
}
