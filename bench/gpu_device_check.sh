#!/usr/bin/env bash
# gpu_device_check.sh -- the GPU checks of one session with a lent device, in one call.
#
#   bench/gpu_device_check.sh BIN OUT [SECONDS]
#
# BIN holds the CUDA programs built elsewhere (cmake -DCMAKE_BUILD_TYPE=Release
# -DCMAKE_CUDA_ARCHITECTURES=90, targets test_gpu test_gpu_from_c mlp_cuda mlp_nccl gpu_link);
# OUT receives summary.txt (one line per step: name, exit status, seconds) and logs.tar.gz (each
# step's whole output). Steps run in order of importance, each under its own time limit, and a
# step that would end after SECONDS (default 420) from the start is skipped, so that the call
# ends inside the device tool's limit. libnccl.so.2 is looked for beside PyTorch's CUDA libraries
# when the dynamic linker does not find it.
set -u
export PATH="$PATH:/usr/local/cuda/bin"
BIN=${1:?usage: gpu_device_check.sh BIN OUT [SECONDS]}
OUT=${2:?usage: gpu_device_check.sh BIN OUT [SECONDS]}
LIMIT=${3:-420}
LOGS="$OUT/logs"
mkdir -p "$LOGS"
start=$(date +%s)
summary="$OUT/summary.txt"
: >"$summary"

if ldd "$BIN/mlp_nccl" 2>/dev/null | grep -q "libnccl.so.2 => not found"; then
    lib=$(find /usr /opt -name 'libnccl.so.2' 2>/dev/null | head -1)
    if [ -n "$lib" ]; then export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
    echo "libnccl.so.2: ${lib:-not found}" >>"$summary"
fi

# step NAME SECONDS COMMAND...: runs COMMAND with its output in $LOGS/NAME.log.
step() {
    local name=$1 secs=$2 t0 rc
    shift 2
    t0=$(date +%s)
    if [ $((t0 - start + secs)) -gt "$LIMIT" ]; then
        echo "$name skipped (would pass ${LIMIT} s)" | tee -a "$summary"
        return
    fi
    timeout "$secs" "$@" >"$LOGS/$name.log" 2>&1
    rc=$?
    echo "$name rc=$rc $(( $(date +%s) - t0 )) s: $*" | tee -a "$summary"
    tail -n 4 "$LOGS/$name.log"
}

step info 30 bash -c 'nvidia-smi; nvidia-smi -q | grep -E "Product Name|Link Gen|Link Width|Driver Version" | sort -u;
                      nproc; free -g | head -2; python3 -c "import torch; print(torch.__version__)"'
step test_gpu 240 "$BIN/test_gpu"
step test_gpu_from_c 60 "$BIN/test_gpu_from_c"
# issue 10 item 3: the ctest's arguments, then GPT-2 small's width
step nccl_small 60 "$BIN/mlp_nccl" --width 64 --depth 6 --batch 256 --steps 5
step nccl_gpt2 120 "$BIN/mlp_nccl" --width 768 --depth 12 --batch 16384 --steps 10
# the recompute check's cost on the GPU: the same runs with and without it
step mlp_plain 120 "$BIN/mlp_cuda" --batch 32768 --steps 5 --bandwidth 43.7
step mlp_check 120 "$BIN/mlp_cuda" --batch 32768 --steps 5 --bandwidth 43.7 --check-recompute
# streaming, with and without early host_grads
step stream 60 "$BIN/mlp_cuda" --batch 512 --steps 10 --stream --budget-frac 0.5
step stream_early 60 "$BIN/mlp_cuda" --batch 512 --steps 10 --stream --budget-frac 0.5 --grads-early
step link 60 "$BIN/gpu_link"
step sanitizer 120 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 "$BIN/test_gpu_from_c"

tar czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$LOGS"
echo "total $(( $(date +%s) - start )) s" | tee -a "$summary"
