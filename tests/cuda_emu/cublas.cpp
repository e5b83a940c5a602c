/* cublas.cpp -- a host emulation of the cuBLAS calls examples/mlp_cuda.cu makes.

   cublasSgemm is a device operation of the handle's stream, as a fiber-launched kernel is
   (emu_device_op in emu.cpp): it runs at once after every queued operation, or, with
   EMU_ASYNC, is queued on the stream; it reads and writes device memory in device mode only. It checks what cuBLAS would reject (CUBLAS_STATUS_INVALID_VALUE:
   negative sizes, leading dimensions too small, an unknown operation) and aborts with an "EMU:"
   message on what a GPU would not report: a matrix that is not inside one device allocation,
   C overlapping A or B, alpha or beta on the wrong side for the pointer mode.

   The product is a plain reference: each element of C is one dot product of length k in FP32,
   accumulated in order l = 0, 1, ..., k - 1, then alpha * dot (+ beta * C, and C is not read
   when beta is 0, as BLAS specifies). It is deterministic (the same bits for the same inputs),
   as cuBLAS is on one GPU model with one configuration, but its bits differ from cuBLAS's. The
   math mode is recorded and otherwise ignored: TF32 mode computes in FP32. */
#include "cublas_v2.h"

#include <stdio.h>

#include <algorithm>
#include <vector>

struct emu_cublas {
    cudaStream_t stream = 0;
    cublasMath_t math = CUBLAS_DEFAULT_MATH;
    cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
};

static std::vector<emu_cublas *> handles;

static bool valid(cublasHandle_t h) { return h && std::find(handles.begin(), handles.end(), h) != handles.end(); }

cublasStatus_t cublasCreate(cublasHandle_t *handle) {
    int count = 0;
    if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        (void)cudaGetLastError();
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    *handle = new emu_cublas();
    handles.push_back(*handle);
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t h) {
    if (!valid(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    handles.erase(std::find(handles.begin(), handles.end(), h));
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) {
    if (!valid(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!emu_stream_valid(s)) return CUBLAS_STATUS_INVALID_VALUE;
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetStream(cublasHandle_t h, cudaStream_t *s) {
    if (!valid(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    *s = h->stream;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
    if (!valid(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    switch ((int)mode & ~(int)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) {
    case CUBLAS_DEFAULT_MATH: case CUBLAS_TENSOR_OP_MATH: case CUBLAS_PEDANTIC_MATH: case CUBLAS_TF32_TENSOR_OP_MATH:
        h->math = mode;
        return CUBLAS_STATUS_SUCCESS;
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t cublasGetMathMode(cublasHandle_t h, cublasMath_t *mode) {
    if (!valid(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    *mode = h->math;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetPointerMode(cublasHandle_t h, cublasPointerMode_t mode) {
    if (!valid(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE) return CUBLAS_STATUS_INVALID_VALUE;
    h->pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetPointerMode(cublasHandle_t h, cublasPointerMode_t *mode) {
    if (!valid(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    *mode = h->pointer_mode;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusName(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}
const char *cublasGetStatusString(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    default: return "an emulated cuBLAS error";
    }
}

/* The bytes a column-major rows x cols matrix with leading dimension ld spans (0 if empty). */
static size_t span(int rows, int cols, int ld) {
    return rows && cols ? ((size_t)(cols - 1) * (size_t)ld + (size_t)rows) * sizeof(float) : 0;
}
static bool overlap(const void *a, size_t na, const void *b, size_t nb) {
    return na && nb && (const char *)a < (const char *)b + nb && (const char *)b < (const char *)a + na;
}

/* The reference product (see the top of this file). */
static void sgemm(bool at, bool bt, int m, int n, int k, float a, const float *A, int lda, const float *B, int ldb,
                  float b, float *C, int ldc) {
    /* op(A) row by row and op(B) column by column, each contiguous: dot products in order. */
    std::vector<float> arow, bcol;
    if (a != 0.0f && k > 0) {
        arow.resize((size_t)m * (size_t)k);
        bcol.resize((size_t)n * (size_t)k);
        for (int i = 0; i < m; i++)
            for (int l = 0; l < k; l++)
                arow[(size_t)i * k + l] = at ? A[(size_t)i * lda + l] : A[(size_t)l * lda + i];
        for (int j = 0; j < n; j++)
            for (int l = 0; l < k; l++)
                bcol[(size_t)j * k + l] = bt ? B[(size_t)l * ldb + j] : B[(size_t)j * ldb + l];
    }
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float dot = 0.0f;
            if (a != 0.0f && k > 0) {
                const float *x = &arow[(size_t)i * k], *y = &bcol[(size_t)j * k];
                for (int l = 0; l < k; l++) dot += x[l] * y[l];
            }
            float *c = &C[(size_t)j * ldc + i];
            *c = b == 0.0f ? a * dot : a * dot + b * *c;
        }
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                           float *C, int ldc) {
    if (!valid(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    bool at = ta != CUBLAS_OP_N, bt = tb != CUBLAS_OP_N;    /* real: C = T */
    int a_rows = at ? k : m, a_cols = at ? m : k, b_rows = bt ? n : k, b_cols = bt ? k : n;
    if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T && ta != CUBLAS_OP_C) ||
        (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T && tb != CUBLAS_OP_C) || m < 0 || n < 0 || k < 0 ||
        lda < std::max(1, a_rows) || ldb < std::max(1, b_rows) || ldc < std::max(1, m) || !alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!emu_stream_valid(h->stream)) return CUBLAS_STATUS_EXECUTION_FAILED;
    bool dev_scalars = h->pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
    if (emu_is_device(alpha, sizeof *alpha) != dev_scalars || emu_is_device(beta, sizeof *beta) != dev_scalars)
        emu_fatal("cublasSgemm: alpha or beta is %s memory, but the pointer mode is %s", dev_scalars ? "host" : "device",
                  dev_scalars ? "CUBLAS_POINTER_MODE_DEVICE" : "CUBLAS_POINTER_MODE_HOST");
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    size_t sa = span(a_rows, a_cols, lda), sb = span(b_rows, b_cols, ldb), sc = span(m, n, ldc);
    if ((sa && !emu_is_device(A, sa)) || (sb && !emu_is_device(B, sb)) || !emu_is_device(C, sc))
        emu_fatal("cublasSgemm(m %d, n %d, k %d): A %p (%zu bytes), B %p (%zu bytes) or C %p (%zu bytes) is not inside "
                  "one device allocation", m, n, k, (const void *)A, sa, (const void *)B, sb, (void *)C, sc);
    if (overlap(C, sc, A, sa) || overlap(C, sc, B, sb))
        emu_fatal("cublasSgemm: C %p (%zu bytes) overlaps A %p or B %p", (void *)C, sc, (const void *)A, (const void *)B);

    /* Host pointer mode: the scalars are read now, as cuBLAS does; device mode: when it runs. */
    float host_a = dev_scalars ? 0.0f : *alpha, host_b = dev_scalars ? 0.0f : *beta;
    emu_device_op(h->stream, [=] {
        emu_device_enter();
        float a = dev_scalars ? *alpha : host_a, b = dev_scalars ? *beta : host_b;
        sgemm(at, bt, m, n, k, a, A, lda, B, ldb, b, C, ldc);
        emu_device_leave();
    });
    return CUBLAS_STATUS_SUCCESS;
}

static struct emu_cublas_check {
    ~emu_cublas_check() {
        if (!handles.empty()) fprintf(stderr, "EMU: %zu cuBLAS handles not destroyed\n", handles.size());
    }
} emu_cublas_check_at_exit;
