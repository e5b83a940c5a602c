/* gpu_link.cu -- the host-device link as the CUDA backend uses it: pinned copies each way.

   Copies between the backend's pinned host memory and device memory on its copy streams (the
   streams offload and parameter streaming use), timed with the backend's events, for sizes from
   1 MiB to 256 MiB: host to device alone, device to host alone, and both directions at once (each
   on its own stream, timed from the first start to the last end). Each figure is the median of
   --reps copies, after one untimed copy. The last line gives the figure to pass to offload plans
   (mlp_cuda --bandwidth, ckpt_plan_desc.bandwidth in bytes per ms): the smaller of the two
   directions' rates, each taken at the largest size, while the other direction also copies.

   Build (from the repository root):
       nvcc -O2 -arch=sm_90 -I. bench/gpu_link.cu -o gpu_link
   Run:
       ./gpu_link [--reps R]            (default 20)
   Exit status 0; 1 on an error; 77 when there is no usable GPU (skipped).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CKPT_IMPLEMENTATION
#define CKPT_CUDA_IMPLEMENTATION
#include "../ckpt.h"
#include "../backends/ckpt_cuda.h"

#define CHECK(call) do { ckpt_result r_ = (call); if (r_ != CKPT_OK) { \
    fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, ckpt_result_string(r_)); exit(1); } } while (0)

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static float median(float *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_float);
    return v[n / 2];
}

/* One timed round: dirs bit 0 host to device, bit 1 device to host. Per direction, the time from
   a start event on its stream to its end event; with both, each direction's own time. */
static void round_ms(ckpt_backend *be, void *dev[2], void *host[2], size_t bytes, int dirs, void *ev[4], float ms[2])
{
    for (int d = 0; d < 2; d++) {
        if (!(dirs & (1 << d))) continue;
        ckpt_copy_kind kind = d == 0 ? CKPT_COPY_HOST_TO_DEVICE : CKPT_COPY_DEVICE_TO_HOST;
        void *s = be->copy_stream(be->state, kind);
        CHECK(be->event_record(be->state, ev[2 * d], s));
        CHECK(d == 0 ? be->copy_async(be->state, dev[0], host[0], bytes, kind, s)
                     : be->copy_async(be->state, host[1], dev[1], bytes, kind, s));
        CHECK(be->event_record(be->state, ev[2 * d + 1], s));
    }
    for (int d = 0; d < 2; d++) {
        if (!(dirs & (1 << d))) continue;
        CHECK(be->event_synchronize(be->state, ev[2 * d + 1]));
        CHECK(be->event_elapsed_ms(be->state, ev[2 * d], ev[2 * d + 1], &ms[d]));
    }
}

int main(int argc, char **argv)
{
    int reps = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else { fprintf(stderr, "usage: %s [--reps R]\n", argv[0]); return 2; }
    }
    if (reps < 1 || reps > 10000) { fprintf(stderr, "--reps: 1 to 10000\n"); return 2; }
    int count = 0;
    ckpt_result r = ckpt_cuda_device_count(&count);
    if (r == CKPT_ERR_NO_DEVICE) { printf("gpu_link: no usable GPU: skipped\n"); return 77; }
    CHECK(r);
    ckpt_cuda_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.logger.fn = ckpt_log_stderr;
    ckpt_backend be;
    r = ckpt_cuda_backend_create(&cd, &be);
    if (r == CKPT_ERR_NO_DEVICE) { printf("gpu_link: no usable GPU: skipped\n"); return 77; }
    CHECK(r);

    const size_t max_bytes = (size_t)256 << 20;
    void *dev[2], *host[2], *ev[4];
    for (int i = 0; i < 2; i++) {
        CHECK(be.alloc(be.state, max_bytes, &dev[i]));
        CHECK(be.alloc_pinned(be.state, max_bytes, &host[i]));
        memset(host[i], 0x5a + i, max_bytes);   /* touched: no first-use cost in the timing */
        CHECK(be.memset_async(be.state, dev[i], 0x3c, max_bytes, NULL));
    }
    for (int i = 0; i < 4; i++) CHECK(be.event_create(be.state, &ev[i]));
    CHECK(be.synchronize(be.state, NULL));

    float *t = (float *)malloc(sizeof(float) * 3 * (size_t)reps);
    float *t_h2d = t, *t_d2h = t + reps, *t_both = t + 2 * reps;
    double last_h2d_both = 0, last_d2h_both = 0;
    printf("pinned copies on the CUDA backend's copy streams, median of %d, GB/s (1e9 bytes per s)\n", reps);
    printf("%10s %10s %10s %14s %14s\n", "MiB", "h2d", "d2h", "h2d (both)", "d2h (both)");
    for (size_t bytes = (size_t)1 << 20; bytes <= max_bytes; bytes <<= 2) {
        float ms[2], both_d2h[10000];
        round_ms(&be, dev, host, bytes, 3, ev, ms);     /* untimed */
        for (int k = 0; k < reps; k++) { round_ms(&be, dev, host, bytes, 1, ev, ms); t_h2d[k] = ms[0]; }
        for (int k = 0; k < reps; k++) { round_ms(&be, dev, host, bytes, 2, ev, ms); t_d2h[k] = ms[1]; }
        for (int k = 0; k < reps; k++) {
            round_ms(&be, dev, host, bytes, 3, ev, ms);
            t_both[k] = ms[0];
            both_d2h[k] = ms[1];
        }
        double gb = (double)bytes / 1e9;
        double h2d = gb / (median(t_h2d, reps) / 1e3), d2h = gb / (median(t_d2h, reps) / 1e3);
        double h2d_both = gb / (median(t_both, reps) / 1e3), d2h_both = gb / (median(both_d2h, reps) / 1e3);
        printf("%10zu %10.2f %10.2f %14.2f %14.2f\n", bytes >> 20, h2d, d2h, h2d_both, d2h_both);
        last_h2d_both = h2d_both;
        last_d2h_both = d2h_both;
    }
    double plan = last_h2d_both < last_d2h_both ? last_h2d_both : last_d2h_both;
    printf("link for offload plans: %.2f GB/s each way (both directions at once, 256 MiB)\n", plan);
    printf("bandwidth_gbs %.3f\n", plan);
    free(t);
    for (int i = 0; i < 4; i++) be.event_destroy(be.state, ev[i]);
    for (int i = 0; i < 2; i++) { be.free(be.state, dev[i]); be.free_pinned(be.state, host[i]); }
    ckpt_cuda_backend_destroy(&be);
    return 0;
}
