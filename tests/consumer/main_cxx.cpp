// The implementation compiled as C++ in a program found through find_package(ckpt).
#define CKPT_IMPLEMENTATION
#include "ckpt.h"
#include "backends/ckpt_cpu.h"

#include <cstdio>
#include <cstring>

int main() {
    if (std::strcmp(ckpt_result_string(CKPT_ERR_INFEASIBLE), "CKPT_ERR_INFEASIBLE") != 0) {
        std::printf("ckpt_result_string(CKPT_ERR_INFEASIBLE) = %s\n",
                    ckpt_result_string(CKPT_ERR_INFEASIBLE));
        return 1;
    }
    ckpt_backend be;
    ckpt_result r = ckpt_cpu_backend_create(nullptr, &be);
    if (r != CKPT_OK) {
        std::printf("ckpt_cpu_backend_create: %s\n", ckpt_result_string(r));
        return 1;
    }
    ckpt_cpu_backend_destroy(&be);
    std::printf("ckpt %d.%d.%d from C++: ok\n", CKPT_VERSION_MAJOR, CKPT_VERSION_MINOR,
                CKPT_VERSION_PATCH);
    return 0;
}
