/* test_hugepages.c with CKPT_NO_HUGEPAGES: the planner's tables get no huge-page advice. */
#define CKPT_NO_HUGEPAGES
#include "test_hugepages.c"
