#!/usr/bin/env bash
# Compiles ckpt.h + backends/ckpt_cpu.h the ways users will: as C11 under gcc and clang, as C++17
# under g++ and clang++ (-x c++), every time with -Wall -Wextra -Wpedantic -Werror, and links
# the result. Checks per compiler:
#   one-tu     one translation unit with CKPT_IMPLEMENTATION
#   static     the same with CKPT_STATIC (every function static)
#   two-tu     one unit with CKPT_IMPLEMENTATION, one without, both calling the API, linked
#   -O3        (C compilers) one-tu at -O3, where inlining brings warnings of its own
#   max-stages (C compilers) one-tu with the user's own CKPT_MAX_STAGES (the manual allows it)
#   no-threads (C compilers) one-tu with CKPT_NO_THREADS (no <pthread.h>)
#   gnu11      (C compilers) one-tu at -O3 as -std=gnu11 with CKPT_HUGEPAGES, where <sys/mman.h>
#              declares madvise on Linux: the planner's huge-page advice (>>hugepages) compiles in
#   c-impl     (C++ compilers) the implementation built as C by the matching C compiler, called
#              from a C++ unit, linked by the C++ compiler
# A compiler that is not installed is skipped, not failed.
# Usage: bash tests/compile_check.sh        (CC_LIST / CXX_LIST override the compilers)
# Exit: 0 all passed, 1 something failed, 77 no compiler found.
set -u

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
flags=(-Wall -Wextra -Wpedantic -Werror -I"$root")
read -r -a c_compilers <<< "${CC_LIST:-gcc clang}"
read -r -a cxx_compilers <<< "${CXX_LIST:-g++ clang++}"

work=$(mktemp -d "${TMPDIR:-/tmp}/ckpt_compile_check.XXXXXX")
trap 'rm -rf "$work"' EXIT

passed=0
failed=0
skipped=0

# --- the translation units (valid C11 and C++17) ---------------------------------------------------
# impl.c: the implementation plus a function that uses the API, so nothing is trivially unused.
cat > "$work/impl.c" <<'EOF'
#define CKPT_IMPLEMENTATION
#include "ckpt.h"
#include "backends/ckpt_cpu.h"
#include <string.h>

#ifdef __cplusplus
extern "C"
#endif
int use_impl(void);
/* The manual's patterns, which -O3 also checks: an output read after a CKPT_OK test. */
static ckpt_result dropout_fwd(const ckpt_fwd_args *a) {
    ckpt_philox p;
    ckpt_result r = ckpt_ctx_rng(a->ctx, 1, &p);
    if (r != CKPT_OK) return r;
    *(float *)a->out = ckpt_philox_uniform(&p, 0);
    return CKPT_OK;
}
static double outputs(const ckpt_cost *c, int n, const ckpt_op *ops, int n_ops) {
    ckpt_plan_desc pd;
    ckpt_plan *plan = NULL;
    ckpt_plan_info info;
    double t;
    uint64_t peak;
    memset(&pd, 0, sizeof pd);
    if (ckpt_schedule_simulate(c, n, ops, n_ops, &t, &peak, NULL) != CKPT_OK) return -1;
    if (ckpt_plan_create(c, n, &pd, &plan, &info) != CKPT_OK) return -1;
    ckpt_plan_destroy(plan);
    return t + (double)peak + info.time;
}
ckpt_result (*volatile keep_fwd)(const ckpt_fwd_args *) = dropout_fwd;
int use_impl(void) {
    ckpt_backend be;
    ckpt_cost c[4];
    ckpt_plan_desc pd;
    ckpt_plan *plan = NULL;
    ckpt_plan_info info;
    ckpt_policy p;
    int i, bad = 0;
    if (ckpt_cpu_backend_create(NULL, &be) != CKPT_OK) return 1;
    ckpt_cpu_backend_destroy(&be);
    memset(c, 0, sizeof c);
    for (i = 0; i < 4; i++) { c[i].f = 1; c[i].b = 2; c[i].a = 10; c[i].t = 20; }
    memset(&pd, 0, sizeof pd);
    pd.policy = CKPT_POLICY_STORE_ALL;
    if (ckpt_plan_create(c, 4, &pd, &plan, &info) == CKPT_OK) ckpt_plan_destroy(plan);
    else bad = 1;
    if (ckpt_policy_parse("sqrt", &p) != CKPT_OK) bad = 1;
    {
        ckpt_op ops[4] = {{CKPT_OP_F, 1, 1, 0}, {CKPT_OP_F, 2, 1, 0}, {CKPT_OP_B, 2, 0, 0}, {CKPT_OP_B, 1, 0, 0}};
        if (!(outputs(c, 2, ops, 4) > 0)) bad = 1;
    }
    {   /* planning threads (the caller alone without them) */
        ckpt_cost lc[40];
        memset(lc, 0, sizeof lc);
        for (i = 0; i < 40; i++) { lc[i].f = 1 + i % 3; lc[i].b = 2; lc[i].a = 512 * (1 + i % 5); lc[i].t = 1024; }
        pd.policy = CKPT_POLICY_OPTIMAL; pd.budget = 20000; pd.threads = 2;
        if (ckpt_plan_create(lc, 40, &pd, &plan, &info) == CKPT_OK) ckpt_plan_destroy(plan);
        else bad = 1;
    }
    return bad + (ckpt_result_string(CKPT_OK) == NULL);
}
EOF

# user.c: what every other file of a program looks like: the headers, no implementation.
cat > "$work/user.c" <<'EOF'
#include "ckpt.h"
#include "backends/ckpt_cpu.h"
#include <stdio.h>

#ifdef __cplusplus
extern "C"
#endif
int use_impl(void);

int main(void) {
    ckpt_layout_entry e[2] = {{10, 16, 0}, {20, 64, 0}};
    size_t total = 0;
    const char *name = ckpt_policy_name(CKPT_POLICY_OPTIMAL);
    if (ckpt_layout_compute(e, 2, &total) != CKPT_OK) return 1;
    printf("%s %s %d\n", ckpt_result_string(CKPT_ERR_INFEASIBLE), name ? name : "?", (int)total);
    return use_impl();
}
EOF

# single.c: one unit that is the whole program (used for one-tu and static).
cat "$work/impl.c" "$work/user.c" > "$work/single.c"

# --- running the checks ------------------------------------------------------------------------------
# check NAME COMMAND...: runs COMMAND in $work, prints PASS/FAIL and, on failure, its output.
check() {
    local name=$1; shift
    local log="$work/log.txt"
    if (cd "$work" && "$@") > "$log" 2>&1; then
        echo "PASS $name"
        passed=$((passed + 1))
    else
        echo "FAIL $name"
        echo "     command: $*"
        sed 's/^/     | /' "$log" | head -n 60
        failed=$((failed + 1))
    fi
}

# build_and_run OUT COMPILER-ARGS...: compiles and links, then runs the program.
build_and_run() {
    local out=$1; shift
    "$@" -o "$out" -lm && "./$out" > /dev/null
}

# c_impl_cxx_user CC CXX OUT: impl.c built as C, user.c as C++, linked by the C++ compiler.
c_impl_cxx_user() {
    "$1" "${c_mode[@]}" "${flags[@]}" -c impl.c -o "$3.o" &&
        build_and_run "$3" "$2" "${cxx_mode[@]}" "${flags[@]}" user.c -x none "$3.o"
}

c_mode=(-std=c11)
cxx_mode=(-std=c++17 -x c++)

for cc in "${c_compilers[@]}"; do
    if ! command -v "$cc" > /dev/null 2>&1; then
        echo "SKIP $cc (not installed)"
        skipped=$((skipped + 1))
        continue
    fi
    check "$cc c11 one-tu" build_and_run "a_$cc" "$cc" "${c_mode[@]}" "${flags[@]}" single.c
    check "$cc c11 static" build_and_run "b_$cc" "$cc" "${c_mode[@]}" "${flags[@]}" -DCKPT_STATIC single.c
    check "$cc c11 two-tu" build_and_run "c_$cc" "$cc" "${c_mode[@]}" "${flags[@]}" impl.c user.c
    # optimisers warn on their own (-Wmaybe-uninitialized after inlining): users build at -O3 too
    check "$cc c11 -O3" build_and_run "o_$cc" "$cc" "${c_mode[@]}" "${flags[@]}" -O3 single.c
    check "$cc c11 max-stages" build_and_run "m_$cc" "$cc" "${c_mode[@]}" "${flags[@]}" -DCKPT_MAX_STAGES=100 single.c
    check "$cc c11 no-threads" build_and_run "t_$cc" "$cc" "${c_mode[@]}" "${flags[@]}" -DCKPT_NO_THREADS single.c
    check "$cc gnu11 -O3" build_and_run "g_$cc" "$cc" -std=gnu11 "${flags[@]}" -DCKPT_HUGEPAGES -O3 single.c
done

for cxx in "${cxx_compilers[@]}"; do
    if ! command -v "$cxx" > /dev/null 2>&1; then
        echo "SKIP $cxx (not installed)"
        skipped=$((skipped + 1))
        continue
    fi
    check "$cxx c++17 one-tu" build_and_run "a_$cxx" "$cxx" "${cxx_mode[@]}" "${flags[@]}" single.c
    check "$cxx c++17 static" build_and_run "b_$cxx" "$cxx" "${cxx_mode[@]}" "${flags[@]}" -DCKPT_STATIC single.c
    check "$cxx c++17 two-tu" build_and_run "c_$cxx" "$cxx" "${cxx_mode[@]}" "${flags[@]}" impl.c user.c
    # The C compiler of the same family builds the implementation; the C++ unit calls it.
    case "$cxx" in
        g++*) cc=${cxx/g++/gcc} ;;
        clang++*) cc=${cxx/clang++/clang} ;;
        *) cc= ;;
    esac
    if [ -n "$cc" ] && command -v "$cc" > /dev/null 2>&1; then
        check "$cxx c++17 c-impl" c_impl_cxx_user "$cc" "$cxx" "d_$cxx"
    fi
done

# --- GPU backend headers -----------------------------------------------------------------------------
# The declarations of ckpt_cuda.h and ckpt_hip.h need no GPU header: every C and C++ compiler takes
# them. Their implementations refuse any compiler but nvcc / hipcc, with a message saying so.
cat > "$work/gpu_user.c" <<'EOF'
#include "backends/ckpt_cuda.h"
#include "backends/ckpt_hip.h"
#include <string.h>
int gpu_user(ckpt_backend *be);
int gpu_user(ckpt_backend *be) {
    ckpt_cuda_desc c;
    ckpt_hip_desc h;
    memset(&c, 0, sizeof c);
    memset(&h, 0, sizeof h);
    return (int)ckpt_cuda_backend_create(&c, be) + (int)ckpt_hip_backend_create(&h, be);
}
EOF
printf '#define CKPT_CUDA_IMPLEMENTATION\n#include "backends/ckpt_cuda.h"\n' > "$work/cuda_guard.c"
printf '#define CKPT_HIP_IMPLEMENTATION\n#include "backends/ckpt_hip.h"\n' > "$work/hip_guard.c"

# must_refuse COMPILER ARGS...: the compile fails and says which compiler it needs.
must_refuse() {
    local out
    if out=$("$@" -c -o /dev/null 2>&1); then echo "compiled, but must not"; return 1; fi
    echo "$out" | grep -q "must be compiled by" || { echo "$out"; return 1; }
}

for cc in "${c_compilers[@]}"; do
    command -v "$cc" > /dev/null 2>&1 || continue
    check "$cc c11 gpu-headers" "$cc" "${c_mode[@]}" "${flags[@]}" -c gpu_user.c -o "gpu_$cc.o"
    check "$cc refuses cuda impl" must_refuse "$cc" "${c_mode[@]}" "${flags[@]}" cuda_guard.c
    check "$cc refuses hip impl" must_refuse "$cc" "${c_mode[@]}" "${flags[@]}" hip_guard.c
done
for cxx in "${cxx_compilers[@]}"; do
    command -v "$cxx" > /dev/null 2>&1 || continue
    check "$cxx c++17 gpu-headers" "$cxx" "${cxx_mode[@]}" "${flags[@]}" -c gpu_user.c -o "gpu_$cxx.o"
done

# nvcc / hipcc: the core and the backend in one .cu (also with CKPT_STATIC); and the backend alone
# in its object, linked into a program whose other files the C compiler built, by the C compiler
# with -lstdc++ (what the headers' documentation tells users to do).
cat > "$work/gpu_main.c" <<'EOF'
#include "ckpt.h"
#include <stdio.h>
#ifdef USE_HIP
#include "backends/ckpt_hip.h"
#define COUNT ckpt_hip_device_count
#else
#include "backends/ckpt_cuda.h"
#define COUNT ckpt_cuda_device_count
#endif
int main(void) {
    int n = -1;
    ckpt_result r = COUNT(&n);
    printf("%s, %d devices\n", ckpt_result_string(r), n);
    return r == CKPT_OK || r == CKPT_ERR_NO_DEVICE ? 0 : 1;
}
EOF
printf '#define CKPT_IMPLEMENTATION\n#include "ckpt.h"\n' > "$work/core.c"
printf '#define CKPT_CUDA_IMPLEMENTATION\n#include "backends/ckpt_cuda.h"\n' > "$work/cuda_impl.cu"
printf '#define CKPT_HIP_IMPLEMENTATION\n#include "backends/ckpt_hip.h"\n' > "$work/hip_impl.hip"
{ printf '#define CKPT_IMPLEMENTATION\n#define CKPT_CUDA_IMPLEMENTATION\n'; cat "$work/gpu_main.c"; } > "$work/cuda_one.cu"
{ printf '#define CKPT_IMPLEMENTATION\n#define CKPT_HIP_IMPLEMENTATION\n#define USE_HIP\n'; cat "$work/gpu_main.c"; } > "$work/hip_one.hip"

# c_link_gpu NAME DEFINE LIBS...: gpu_main.c and core.c by gcc, linked by gcc with the GPU object.
c_link_gpu() {
    local name=$1 def=$2 obj=$3; shift 3
    gcc "${c_mode[@]}" "${flags[@]}" -c core.c -o "core_$name.o" &&
        gcc "${c_mode[@]}" "${flags[@]}" $def -c gpu_main.c -o "main_$name.o" &&
        gcc "main_$name.o" "core_$name.o" "$obj" "$@" -o "$name" && "./$name" > /dev/null
}

nvcc_bin=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ -x "$nvcc_bin" ]; then
    # libcudart's directory: CMake's CUDAToolkit_LIBRARY_DIR when the test runs under CTest;
    # otherwise the toolkit nvcc itself reports (nvcc may be a wrapper script outside the toolkit,
    # e.g. /usr/local/bin/nvcc, so its own path says nothing).
    cuda_lib=${CUDA_LIBDIR:-}
    if [ -z "$cuda_lib" ]; then
        cuda_top=$("$nvcc_bin" --dryrun -c -x cu /dev/null -o /dev/null 2>&1 |
                   sed -n 's/^#\$ TOP=//p' | head -n 1)
        for d in "$cuda_top/targets/x86_64-linux/lib" "$cuda_top/lib64" \
                 "$(dirname "$(dirname "$nvcc_bin")")/lib64"; do
            if [ -e "$d/libcudart.so" ]; then cuda_lib=$d; break; fi
        done
    fi
    nv_flags=(-std=c++17 -Xcompiler=-Wall,-Wextra -Werror=all-warnings -I"$root")
    check "nvcc one-tu" build_and_run cuda_one "$nvcc_bin" "${nv_flags[@]}" cuda_one.cu
    check "nvcc static" build_and_run cuda_static "$nvcc_bin" "${nv_flags[@]}" -DCKPT_STATIC cuda_one.cu
    check "nvcc impl" "$nvcc_bin" "${nv_flags[@]}" -c cuda_impl.cu -o cuda_impl.o
    check "gcc + nvcc object" c_link_gpu gpu_c_cuda "" cuda_impl.o -L"$cuda_lib" -lcudart -lstdc++
else
    echo "SKIP nvcc (not installed)"
    skipped=$((skipped + 1))
fi

hipcc_bin=${HIPCC:-$(command -v hipcc || true)}
if [ -n "$hipcc_bin" ] && [ -x "$hipcc_bin" ]; then
    hip_flags=(--offload-arch="${HIP_ARCH:-gfx90a}" -std=c++17 -Wall -Wextra -Werror -I"$root")
    check "hipcc one-tu" build_and_run hip_one "$hipcc_bin" "${hip_flags[@]}" hip_one.hip
    check "hipcc static" build_and_run hip_static "$hipcc_bin" "${hip_flags[@]}" -DCKPT_STATIC hip_one.hip
    check "hipcc impl" "$hipcc_bin" "${hip_flags[@]}" -c hip_impl.hip -o hip_impl.o
    check "gcc + hipcc object" c_link_gpu gpu_c_hip -DUSE_HIP hip_impl.o -lamdhip64 -lstdc++
else
    echo "SKIP hipcc (not installed)"
    skipped=$((skipped + 1))
fi

if [ $((passed + failed)) -eq 0 ]; then
    echo "no compiler found"
    echo "0 passed, 0 failed, $skipped skipped"
    exit 77
fi
if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
