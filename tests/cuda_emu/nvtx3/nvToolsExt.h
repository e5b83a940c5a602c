#pragma once
extern int emu_nvtx_depth;
static inline int nvtxRangePushA(const char *m) { (void)m; return emu_nvtx_depth++; }
static inline int nvtxRangePop(void) { return --emu_nvtx_depth; }
