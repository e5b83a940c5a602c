#!/usr/bin/env bash
# Compiles ckpt.h + backends/ckpt_cpu.h the ways users will: as C11 under gcc and clang, as C++17
# under g++ and clang++ (-x c++), every time with -Wall -Wextra -Wpedantic -Werror, and links
# the result. Checks per compiler:
#   one-tu     one translation unit with CKPT_IMPLEMENTATION
#   static     the same with CKPT_STATIC (every function static)
#   two-tu     one unit with CKPT_IMPLEMENTATION, one without, both calling the API, linked
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
