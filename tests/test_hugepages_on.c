/* test_hugepages.c with CKPT_HUGEPAGES: the planner's tables are advised MADV_HUGEPAGE. */
#define CKPT_HUGEPAGES
#include "test_hugepages.c"
