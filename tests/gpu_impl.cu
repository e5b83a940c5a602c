/* The CUDA backend's implementation, alone in a .cu file: the layout a C program uses (its own
   files compiled by the C compiler, this one by nvcc). See tests/gpu_from_c.c. */
#define CKPT_CUDA_IMPLEMENTATION
#include "../backends/ckpt_cuda.h"
