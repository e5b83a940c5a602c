/* >>hugepages: with CKPT_HUGEPAGES (tests/test_hugepages_on.c includes this file after defining
   it), the planner's dense table is advised MADV_HUGEPAGE, so that writing it takes about one page
   fault per 2 MiB instead of one per 4 KiB; by default it is not.
   - A 200-stage chain at max_units 500 has a table of 20,100 rows of 500 doubles (80 MB, 19,600
     pages of 4 KiB), of which the fill writes about half (>>packed: 10,400 faults without huge
     pages here).
   - With CKPT_HUGEPAGES, planning it with malloc's memory takes under a quarter of the table's
     pages in minor faults (getrusage; not checked under the sanitizers, whose own memory faults
     too). Where the system gives huge pages only on advice ("[madvise]" in
     /sys/kernel/mm/transparent_hugepage/enabled), the same plan with an allocator of the user's
     (which gets no advice) takes more faults than a third of the table's pages, and a quarter of
     them more than with malloc's: the advice is what makes the difference. With "[always]", that
     check is skipped (every large block gets huge pages).
   - By default, in "[madvise]" mode, malloc's memory takes more faults than a third of the
     table's pages too: no advice (not checked under the sanitizers).
   - The plans are the same (the advice changes nothing but the faults).
   Skips (77) off Linux, where <sys/mman.h> does not declare MADV_HUGEPAGE, where transparent
   huge pages are off ("[never]" or no such file), or where their defrag setting does not make
   them at fault time ("[never]" or "[defer]"). */
#define _DEFAULT_SOURCE     /* madvise and getrusage in <sys/mman.h> and <sys/resource.h> */
#define CKPT_IMPLEMENTATION
#include "../ckpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_XORSHIFT64_SEED 0x6875676570616765ull
#include "test_util.h"

#ifdef __linux__
#include <sys/mman.h>
#endif
#if defined(__linux__) && defined(MADV_HUGEPAGE)
#include <sys/resource.h>

static long minor_faults(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt : -1;
}
/* The first line of a file ("" when it cannot be read), without its newline. */
static void first_line(const char *path, char *buf, int size) {
    FILE *f = fopen(path, "r");
    buf[0] = 0;
    if (f) { if (!fgets(buf, size, f)) buf[0] = 0; fclose(f); }
    buf[strcspn(buf, "\n")] = 0;
}
static void *user_alloc(size_t bytes, void *user) { (void)user; return malloc(bytes); }
static void user_free(void *p, void *user) { (void)user; free(p); }

int main(void) {
    enum { N = 200 };
    static ckpt_cost c[N];
    const long pages = (long)N * (N + 1) / 2 * 500 * 8 / 4096;
    char mode[256], defrag[256];
    ckpt_plan_desc pd;
    ckpt_plan_info sa, info, info_user;
    ckpt_plan *p = NULL, *q = NULL;
    long f0, f1, fm, fu;    /* faults: before, after; of the plan with malloc's memory, with the user's */
    int i;
    first_line("/sys/kernel/mm/transparent_hugepage/enabled", mode, sizeof mode);
    first_line("/sys/kernel/mm/transparent_hugepage/defrag", defrag, sizeof defrag);
    if (!strstr(mode, "[always]") && !strstr(mode, "[madvise]")) {
        printf("test_hugepages: transparent huge pages are off here ('%s'); skipped\n", mode);
        return 77;
    }
    /* "never" and "defer" do not compact memory at the fault of an advised range: a huge page may
       then not be there, and the faults say nothing of the advice */
    if (strstr(defrag, "[never]") || strstr(defrag, "[defer]")) {
        printf("test_hugepages: huge pages are not made at fault time here ('%s'); skipped\n", defrag);
        return 77;
    }
    for (i = 0; i < N; i++) {     /* distinct stages: every row of the table is its own */
        c[i].a = 512 * (256 + rnd() % 16384);
        c[i].t = 512 * (rnd() % 32768);
        c[i].wf = 512 * (rnd() % 2048);
        c[i].wb = 512 * (rnd() % 4096);
        c[i].f = 0.5 + (double)(rnd() % 8) * 0.5;
        c[i].b = c[i].f * (1.5 + (double)(rnd() % 3) * 0.5);
    }
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_STORE_ALL;
    CHECK(ckpt_plan_create(c, N, &pd, &p, &sa) == CKPT_OK, "store-all plans");
    ckpt_plan_destroy(p);
    p = NULL;

    pd.policy = CKPT_POLICY_OPTIMAL;
    pd.budget = sa.store_all_peak / 3;
    pd.max_units = 500;
    f0 = minor_faults();
    CHECK(ckpt_plan_create(c, N, &pd, &p, &info) == CKPT_OK, "optimal plans");
    f1 = minor_faults();
    fm = f1 - f0;
    CHECK(f0 >= 0 && f1 >= 0, "getrusage");
    printf("malloc's memory: %ld minor faults; the table has %ld pages of 4 KiB\n", fm, pages);
#ifndef CKPT_TEST_SANITIZED     /* (the sanitizers' own memory faults too: 27,000 more here) */
#ifdef CKPT_HUGEPAGES
    CHECK(fm < pages / 4, "%ld faults, not under %ld", fm, pages / 4);
#else
    if (strstr(mode, "[madvise]")) CHECK(fm > pages / 3, "%ld faults, not over %ld", fm, pages / 3);
#endif
#endif

    pd.allocator.alloc = user_alloc;
    pd.allocator.free = user_free;
    f0 = minor_faults();
    CHECK(ckpt_plan_create(c, N, &pd, &q, &info_user) == CKPT_OK, "optimal plans, the user's allocator");
    fu = minor_faults() - f0;
    printf("the user's allocator: %ld minor faults (transparent huge pages: %s)\n", fu, mode);
#ifdef CKPT_HUGEPAGES
    if (strstr(mode, "[madvise]"))
        CHECK(fu > pages / 3 && fu - fm > pages / 4, "%ld faults, not over %ld and %ld more than %ld", fu, pages / 3,
              pages / 4, fm);
#endif

    CHECK(p && q && info.time == info_user.time && info.peak == info_user.peak && info.unit == info_user.unit,
          "the same plan");
    if (p && q) {
        int n_p, n_q;
        const ckpt_op *op = ckpt_plan_ops(p, &n_p), *oq = ckpt_plan_ops(q, &n_q);
        CHECK(n_p == n_q && n_p > 0 && !memcmp(op, oq, (size_t)n_p * sizeof *op), "the same ops");
    }
    ckpt_plan_destroy(p);
    ckpt_plan_destroy(q);
    printf("test_hugepages: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
#else
int main(void) {
    printf("test_hugepages: no MADV_HUGEPAGE on this system; skipped\n");
    return 77;
}
#endif
