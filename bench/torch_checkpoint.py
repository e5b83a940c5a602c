#!/usr/bin/env python3
"""torch_checkpoint.py -- the MLP stack of examples/mlp_cuda.cu in PyTorch, under
torch.utils.checkpoint.checkpoint_sequential: the baseline for ckpt.h's time/memory trade-off.

The model (the same as examples/mlp_cpu.c and examples/mlp_cuda.cu): L blocks on activations of
N rows by C columns, each

    y = x + Dropout(W2 * GELU(W1 * LN(x) + b1) + b2)        (hidden width H = 4C)

with GELU in its tanh approximation, LayerNorm eps 1e-5, FP32, MSE loss against a fixed random
teacher of the same shape (no dropout), plain SGD. Initialisation follows the C example in
distribution (LN gain 1; W1 ~ N(0, 1/C); W2 ~ N(0, 0.01/H) for the student, N(0, 1/H) for the
teacher; biases 0 for the student, N(0, 0.01) for the teacher), not bit for bit: the C example
draws from ckpt.h's Philox, this script from torch's generator. The gradient of the chain's
input is computed too, as the C example does (ckpt_backward with a grad_in buffer).

What it measures, for store-all (plain forward and backward) and then for each --variants entry
at every segment count 1..L (or the --segments list):

  reentrant        torch.utils.checkpoint.checkpoint_sequential(blocks, segments, x), PyTorch's
                   stock function with its default settings (in torch 1.13: the reentrant
                   checkpoint, preserve_rng_state=True); on a PyTorch whose
                   checkpoint_sequential takes use_reentrant, use_reentrant=True is passed.
  nonreentrant     where checkpoint_sequential takes use_reentrant (PyTorch 2.x): the stock
                   checkpoint_sequential(..., use_reentrant=False). Where it does not (1.11-1.13:
                   it rejects the keyword), the stock torch.utils.checkpoint.checkpoint(...,
                   use_reentrant=False) applied to the segments checkpoint_sequential makes
                   (see below), and the header says so. Before 1.11 there is none: skipped.

  step ms          median over --steps steps (after --warmup) of one training step's wall time:
                   zero the gradients, forward, loss, backward, SGD update;
                   torch.cuda.synchronize() before and after each timed step on CUDA.
  cpu ms           median of the same steps' CPU time of the whole process, every thread
                   (time.process_time()): on a shared machine, the figure to trust.
  time ratio       step ms / store-all's step ms; cpu ratio: cpu ms / store-all's cpu ms.
  --rounds R       everything above R times in the process, then each row's cpu ratio to the
                   same round's store-all run: the median over the rounds, the smallest and the
                   largest (the table shows round 1).
  minflt           median minor page faults per step (getrusage), a sign of memory being
                   mapped and unmapped.
  activation B     on CUDA, torch.cuda.max_memory_allocated() during a step minus
                   torch.cuda.memory_allocated() just before it (reset_peak_memory_stats() before
                   every measured step; the largest over the measured steps). On the CPU, the
                   same figure for PyTorch's CPU allocator: the peak of the bytes it has handed
                   out (and not yet taken back) during the step minus the level just before it,
                   counted by the preloaded shim bench/alloc_peak.c (see "Memory on the CPU"
                   below). Parameters, gradients (kept allocated: zeroed, never set to None), the
                   input, its gradient and the teacher's target are allocated before the step, so
                   this is the step's activation memory: saved tensors, block outputs,
                   recomputation and autograd temporaries.
  memory ratio     activation B / store-all's activation B.
  grads equal      whether every parameter gradient (and the input gradient) after one step from
                   the initial weights, with the same RNG seed, is torch.equal to store-all's.
                   Dropout masks are reproduced in the recomputation by preserve_rng_state=True
                   (the default); whether the result is bit-identical is PyTorch's business and is
                   reported as found.

checkpoint_sequential's semantics, which decide what it can reach: the blocks are split into
`segments` runs of L // segments blocks, the last run takes the remainder, and the last run is
never checkpointed (it stores all its activations; its input is saved by the checkpoint before
it). So segments=1 checkpoints nothing (the same schedule as store-all) and segments=L
checkpoints every block but the last; the other segment boundaries are the only tensors kept
between forward and backward.

Run on a GPU (from the repository root; needs a CUDA build of PyTorch):

    python3 bench/torch_checkpoint.py --device cuda --width 768 --depth 12 --batch 4096 \\
        --dropout 0.1 --steps 20 --warmup 3 [--tf32] [--csv]

Reading it against bench/mlp_gpu_bench (ckpt.h's side; on the CPU, bench/mlp_cpu_bench): pass both
the same --width --depth --batch --dropout and the same model is built (same parameter and
activation sizes). The comparison is of ratios, each system against its own store-all run, so
kernel quality does not decide it: plot (memory ratio, time ratio) for both. For every PyTorch
row, find ckpt.h's run at the same or a lower memory ratio; ckpt.h wins that point if its time
ratio is lower. Memory ratios below this table's smallest are ones checkpoint_sequential cannot
reach at any segment count. The two memory figures are defined a little differently (ckpt.h: its
arena's peak, i.e. chain inputs, outputs, tapes and workspace; PyTorch: every byte the caching
allocator hands out during the step, rounded to its 512-byte blocks (on the CPU: every byte
c10::alloc_cpu hands out, not rounded), including temporaries such as the loss gradient and the
per-step parameter gradients before they are accumulated), which is one more reason to compare
ratios and not bytes.

On the CPU (the comparison with ckpt.h's CPU side, bench/mlp_cpu_bench and examples/mlp_cpu,
run with the same --threads):

    /usr/bin/python3 bench/torch_checkpoint.py --device cpu --width 512 --depth 16 --batch 512 \\
        --segments 2,4,8,16 --steps 3 --warmup 1 [--threads 1] [--csv]

--threads N (default 1) gives PyTorch N threads as its users would: OMP_NUM_THREADS and
OPENBLAS_NUM_THREADS are set to N before torch is imported, torch.set_num_threads(N) (its OpenMP
intra-op threads; --torch-threads M sets M instead) and, where PyTorch's BLAS is OpenBLAS
(Debian's python3-torch), openblas_set_num_threads(N), which torch.set_num_threads does not
reach. With more than one thread, OMP_WAIT_POLICY=PASSIVE is set before the import unless the
environment sets it (--omp-wait-policy overrides): PyTorch's OpenMP threads otherwise spin after
each parallel op while OpenBLAS's threads want the same cores (examples/blas.h does the same for
ckpt.h's side). The header says what was set, and the load average at the start and the end.
On CUDA it only concerns the host side.

Memory on the CPU. PyTorch allocates every CPU tensor's storage with c10::alloc_cpu (libc10.so),
which on Linux is posix_memalign(64, nbytes), and frees it with c10::free_cpu, i.e. free(); in
torch 1.13 every posix_memalign of a training step comes from there (checked by tracing the
callers; the only other large blocks in a step are OpenBLAS's per-call workspaces, from
malloc). bench/alloc_peak.c defines posix_memalign and free, passes both on to glibc, and keeps
a table of the blocks that libc10 asked for (pointer -> requested size, under a mutex, as
PyTorch's intra-op threads allocate too): the bytes handed out now and their peak, which the
script reads and resets through ctypes. So on the CPU:

    activation B = (peak of counted bytes during the step) - (counted bytes just before it)

in the tensors' own sizes (nbytes as requested, not malloc_usable_size: no glibc chunk headers, no
page rounding; CUDA's caching allocator rounds to 512-byte blocks instead, which for this model's
tensors, N*C floats and up, is a fraction of a percent). With --device cpu the script compiles the
shim (cc -O2 -shared -fPIC ... -ldl, $CC if set) into $XDG_CACHE_HOME/ckpt-h (or ~/.cache/ckpt-h,
else the temporary directory), keyed by a hash of its source, and re-executes itself under
LD_PRELOAD=<that .so> before PyTorch is imported; already preloaded, it is used as it is. Before
measuring it checks that a torch.empty of 1001 floats is counted as exactly 4004 bytes. Limits:
only what c10::alloc_cpu hands out is counted (another allocator that PyTorch might be built with,
such as mimalloc, or the mobile caching allocator, is not seen; ALLOC_PEAK_CALLER='' counts every
posix_memalign in the process instead of libc10's only); memory that libraries take outside
PyTorch's allocator (OpenBLAS's and oneDNN's workspaces, Python objects) is not, as it is not on
CUDA either (cuBLAS workspaces); the peak is exact, not sampled, since every allocation passes
through the shim. With no C compiler, a failed build, a preload that did not take (a setuid
interpreter, a statically linked PyTorch) or --no-cpu-memory, the memory columns are "n/a", with
the reason in the header.

What the CPU figure holds, in torch 1.13 (checked to the byte at C, L, N, dropout = 64, 6, 256,
0.1 and 0; 32, 3, 100, 0.1; 48, 5, 200, 0; H = 4C; S = 44C + 8 with dropout, 40C + 8 without):
a block saves N*S bytes for backward (its output, LN's output, mean and rstd, W1's output, GELU's
output and, with dropout, the dropout mask, which CPU dropout keeps as a float tensor, 4 B a
value), mse_loss's 0-dim loss keeps its N x C unreduced buffer (4NC), and the peak is reached in
the last block's backward (the gradients of the loss and of W2's input, and W2's gradient before
it is accumulated), so store-all's activation B = L*N*S + 24NC + 16C^2 + 4C + 4. With k segments
of s = L // k blocks, the last segment (L - s*(k-1) blocks) stores everything and every
checkpoint keeps its input (4NC) and its CPU RNG state (5056 B); where the peak is still in the
last block's backward (as at those sizes), activation B = (L - s*(k-1))*N*S
+ (k-1)*(4NC + 5056) + 24NC + 16C^2 + 4C + 4.

PyTorch versions: checkpoint_sequential takes use_reentrant only from PyTorch 2.0 on (1.11-1.13
accept it on checkpoint() but checkpoint_sequential rejects it with "Unexpected keyword
arguments"). The "reentrant" rows always run the stock checkpoint_sequential. The
"nonreentrant" rows on 1.11-1.13 run the stock checkpoint(..., use_reentrant=False) on the
segments listed above (segment_bounds below: s = L // segments blocks each, the last segment
taking the rest and run without checkpoint); they are labelled so. An earlier version of this
script ran that variant alone and called it checkpoint_sequential; in torch 1.13 it is the
slower of the two on the CPU (see bench/RESULTS.md, 2026-11-24).
"""

import argparse
import ctypes
import hashlib
import inspect
import math
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


# ---- arguments (parsed before torch is imported: see preload_alloc_peak) ------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="The ckpt.h MLP example in PyTorch under checkpoint_sequential: step time "
                    "and activation memory, each relative to store-all.")
    ap.add_argument("--width", type=int, default=768, help="C, columns (hidden 4C); 768")
    ap.add_argument("--depth", type=int, default=12, help="L, blocks; 12")
    ap.add_argument("--batch", type=int, default=4096, help="N, rows; 4096 (as examples/mlp_cuda.cu)")
    ap.add_argument("--dropout", type=float, default=0.1, help="dropout probability; 0.1")
    ap.add_argument("--steps", type=int, default=20, help="measured steps; 20")
    ap.add_argument("--warmup", type=int, default=3, help="unmeasured steps first; 3")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run store-all and every variant this many times and end with each "
                         "row's cpu ratio to the same round's store-all: median [smallest, "
                         "largest]; 1")
    ap.add_argument("--lr", type=float, default=0.1, help="SGD learning rate; 0.1")
    ap.add_argument("--seed", type=int, default=42, help="weights, data and dropout seed; 42")
    ap.add_argument("--segments", type=str, default=None,
                    help="comma-separated segment counts (default: every one of 1..L)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--threads", type=int, default=1,
                    help="CPU threads: OMP/OpenBLAS env, torch.set_num_threads and OpenBLAS's; 1")
    ap.add_argument("--torch-threads", type=int, default=None,
                    help="torch.set_num_threads (intra-op) only; default: --threads")
    ap.add_argument("--omp-wait-policy", default=None,
                    help="OMP_WAIT_POLICY to set before importing torch (default: PASSIVE when "
                         "--threads > 1 and the environment sets none)")
    ap.add_argument("--variants", default="reentrant,nonreentrant",
                    help="checkpointing variants to run: reentrant,nonreentrant (both)")
    ap.add_argument("--no-cpu-memory", dest="cpu_memory", action="store_false",
                    help="on --device cpu, do not count allocations (no shim, no re-exec): "
                         "memory columns n/a")
    ap.add_argument("--tf32", action="store_true",
                    help="allow TF32 in matmuls (default: strict FP32)")
    ap.add_argument("--csv", action="store_true",
                    help="CSV on stdout (the header and notes go to stderr)")
    args = ap.parse_args(argv)
    if (args.width < 1 or args.depth < 1 or args.batch < 1 or args.steps < 1 or args.warmup < 0
            or args.threads < 1 or args.rounds < 1 or (args.torch_threads is not None and args.torch_threads < 1)
            or not 0.0 <= args.dropout < 1.0):
        ap.error("need width, depth, batch, steps, threads, rounds >= 1, warmup >= 0, "
                 "0 <= dropout < 1")
    args.variant_list = [v for v in args.variants.split(",") if v]
    if not args.variant_list or any(v not in ("reentrant", "nonreentrant")
                                    for v in args.variant_list):
        ap.error("--variants: a comma-separated list of reentrant, nonreentrant")
    if args.segments is None:
        args.segment_list = list(range(1, args.depth + 1))
    else:
        try:
            args.segment_list = [int(s) for s in args.segments.split(",") if s.strip()]
        except ValueError:
            ap.error("--segments: a comma-separated list of integers")
        if not args.segment_list or any(not 1 <= s <= args.depth for s in args.segment_list):
            ap.error("--segments: every count must lie in 1..depth (%d)" % args.depth)
    return args


# ---- the CPU allocation counter: bench/alloc_peak.c, preloaded --------------------------------

ALLOC_PEAK_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "alloc_peak.c")
# Set in the re-executed process: the shim it was given, and LD_PRELOAD as it was before.
ALLOC_PEAK_ENV = "TORCH_CHECKPOINT_ALLOC_PEAK"
ALLOC_PEAK_OLD_PRELOAD = "TORCH_CHECKPOINT_OLD_LD_PRELOAD"


def alloc_peak_lib():
    """The preloaded shim's functions (a ctypes library), or None when it is not loaded."""
    try:
        lib = ctypes.CDLL(None)
        lib.alloc_peak_current
    except (OSError, AttributeError):
        return None
    for name in ("alloc_peak_current", "alloc_peak_max", "alloc_peak_blocks",
                 "alloc_peak_other_bytes"):
        getattr(lib, name).restype = ctypes.c_ulonglong
        getattr(lib, name).argtypes = []
    lib.alloc_peak_reset.restype = None
    lib.alloc_peak_reset.argtypes = []
    lib.alloc_peak_caller_found.restype = ctypes.c_int
    lib.alloc_peak_caller_found.argtypes = []
    return lib


def build_alloc_peak():
    """(path of alloc_peak.so, None), built if not cached, or (None, why not)."""
    try:
        with open(ALLOC_PEAK_SRC, "rb") as f:
            src = f.read()
    except OSError as e:
        return None, "cannot read %s (%s)" % (ALLOC_PEAK_SRC, e.strerror)
    tag = hashlib.sha256(src).hexdigest()[:16]
    dirs = [os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                         "ckpt-h"),
            os.path.join(tempfile.gettempdir(), "ckpt-h-%d" % os.getuid())]
    for d in dirs:
        so = os.path.join(d, "alloc_peak-%s.so" % tag)
        if os.path.isfile(so):
            return so, None
    cc = shlex.split(os.environ.get("CC", "")) or [shutil.which("cc") or shutil.which("gcc")]
    if not cc[0]:
        return None, "no C compiler (cc) to build bench/alloc_peak.c"
    why = "no writable cache directory for alloc_peak.so"
    for d in dirs:
        so = os.path.join(d, "alloc_peak-%s.so" % tag)
        try:
            os.makedirs(d, exist_ok=True)
            tmp = tempfile.NamedTemporaryFile(dir=d, prefix=".alloc_peak-", suffix=".so",
                                              delete=False)
            tmp.close()
        except OSError:
            continue
        try:
            r = subprocess.run(cc + ["-std=c11", "-O2", "-shared", "-fPIC", "-o", tmp.name,
                                ALLOC_PEAK_SRC, "-ldl"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True)
        except OSError as e:
            os.unlink(tmp.name)
            return None, "cannot run %s (%s)" % (cc[0], e.strerror)
        if r.returncode != 0:
            os.unlink(tmp.name)
            first = (r.stdout.strip().splitlines() or ["exit status %d" % r.returncode])[0]
            return None, "%s could not build bench/alloc_peak.c: %s" % (cc[0], first)
        os.replace(tmp.name, so)    # atomic: a concurrent run sees the old or the whole file
        return so, None
    return None, why


def preload_alloc_peak(args):
    """On --device cpu, unless --no-cpu-memory or the shim is loaded already: build the shim and
    re-execute this script with it in LD_PRELOAD (does not return then). Returns why memory will
    not be counted, or None. Runs before torch is imported, so that every tensor is seen."""
    if args.device != "cpu" or not args.cpu_memory:
        return None
    if alloc_peak_lib() is not None:
        return None
    if os.environ.get(ALLOC_PEAK_ENV):
        return "LD_PRELOAD=%s did not take" % os.environ[ALLOC_PEAK_ENV]
    so, why = build_alloc_peak()
    if so is None:
        return why
    env = dict(os.environ)
    env[ALLOC_PEAK_ENV] = so
    env[ALLOC_PEAK_OLD_PRELOAD] = env.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = so + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    argv = getattr(sys, "orig_argv", None) or [sys.executable] + sys.argv
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, [sys.executable] + list(argv[1:]), env)
    except OSError as e:
        return "cannot re-execute %s under LD_PRELOAD (%s)" % (sys.executable, e.strerror)


def thread_env(args):
    """Sets the thread environment before torch is imported (so also before the re-execution);
    returns the lines for the header."""
    n = str(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.torch_threads or args.threads)
    os.environ["OPENBLAS_NUM_THREADS"] = n
    if args.omp_wait_policy:
        os.environ["OMP_WAIT_POLICY"] = args.omp_wait_policy
    elif args.threads > 1 and "OMP_WAIT_POLICY" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return "env: OMP_NUM_THREADS=%s OPENBLAS_NUM_THREADS=%s OMP_WAIT_POLICY=%s" % (
        os.environ["OMP_NUM_THREADS"], n, os.environ.get("OMP_WAIT_POLICY", "(unset)"))


NO_CPU_MEMORY_WHY = None    # why the shim is not there, when preload_alloc_peak knows
THREAD_ENV = ""
LOAD_AT_START = os.getloadavg()
if __name__ == "__main__":
    THREAD_ENV = thread_env(parse_args(sys.argv[1:]))
    NO_CPU_MEMORY_WHY = preload_alloc_peak(parse_args(sys.argv[1:]))
    if ALLOC_PEAK_ENV in os.environ:    # children (uname, cc) need not carry the shim
        if os.environ.get(ALLOC_PEAK_OLD_PRELOAD):
            os.environ["LD_PRELOAD"] = os.environ[ALLOC_PEAK_OLD_PRELOAD]
        else:
            os.environ.pop("LD_PRELOAD", None)

import torch    # noqa: E402  (after the re-execution above)
import torch.nn as nn    # noqa: E402
import torch.nn.functional as F    # noqa: E402
import torch.utils.checkpoint as tuc    # noqa: E402


# ---- the model ---------------------------------------------------------------------------------

class GeluTanh(nn.Module):
    """GELU, tanh approximation, for PyTorch before 1.12 (no nn.GELU(approximate='tanh'))."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def make_gelu():
    try:
        return nn.GELU(approximate="tanh")
    except TypeError:
        return GeluTanh()


class Block(nn.Module):
    """y = x + Dropout(W2 * GELU(W1 * LN(x) + b1) + b2)."""

    def __init__(self, C, p_drop):
        super().__init__()
        H = 4 * C
        self.ln = nn.LayerNorm(C, eps=1e-5)
        self.fc1 = nn.Linear(C, H)
        self.act = make_gelu()
        self.fc2 = nn.Linear(H, C)
        # p = 0: no dropout at all, as the C example (no RNG, no mask) does.
        self.drop = nn.Dropout(p_drop) if p_drop > 0.0 else nn.Identity()

    def forward(self, x):
        return x + self.drop(self.fc2(self.act(self.fc1(self.ln(x)))))


@torch.no_grad()
def init_blocks(blocks, gen, w2_scale, bias_std):
    """LN gain 1; W1 ~ N(0, 1/C), W2 ~ N(0, w2_scale^2/H); biases (LN's too) ~ N(0, bias_std^2)."""
    def randn(t, std):
        t.copy_(torch.randn(t.shape, generator=gen) * std)

    for b in blocks:
        C, H = b.fc1.in_features, b.fc1.out_features
        b.ln.weight.fill_(1.0)
        randn(b.ln.bias, bias_std)
        randn(b.fc1.weight, 1.0 / math.sqrt(C))
        randn(b.fc1.bias, bias_std)
        randn(b.fc2.weight, w2_scale / math.sqrt(H))
        randn(b.fc2.bias, bias_std)


# ---- the checkpointing variants ----------------------------------------------------------------

def _has_param(fn, name):
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def segment_bounds(L, segments):
    """checkpoint_sequential's split of L blocks into `segments` runs, as (first, last) pairs:
    segments - 1 runs of L // segments blocks, each checkpointed, then the rest, not."""
    size = L // segments
    runs = [(start, start + size - 1) for start in range(0, size * (segments - 1), size)]
    return runs, (runs[-1][1] + 1 if runs else 0, L - 1)


def pick_variant(name):
    """(function(blocks, segments, x), exact description), or (None, why not)."""
    seq_has = _has_param(tuc.checkpoint_sequential, "use_reentrant")
    if name == "reentrant":
        if seq_has:
            return ((lambda blocks, s, x: tuc.checkpoint_sequential(blocks, s, x,
                                                                    use_reentrant=True)),
                    "torch.utils.checkpoint.checkpoint_sequential(blocks, segments, x, "
                    "use_reentrant=True)")
        return ((lambda blocks, s, x: tuc.checkpoint_sequential(blocks, s, x)),
                "torch.utils.checkpoint.checkpoint_sequential(blocks, segments, x): stock, "
                "default settings (reentrant, preserve_rng_state=True)")
    if seq_has:
        return ((lambda blocks, s, x: tuc.checkpoint_sequential(blocks, s, x,
                                                                use_reentrant=False)),
                "torch.utils.checkpoint.checkpoint_sequential(blocks, segments, x, "
                "use_reentrant=False)")
    if not _has_param(tuc.checkpoint, "use_reentrant"):
        return None, "torch %s has no non-reentrant checkpoint" % torch.__version__

    def run(blocks, segments, x):
        def span(first, last):
            def forward(h):
                for j in range(first, last + 1):
                    h = blocks[j](h)
                return h
            return forward
        runs, rest = segment_bounds(len(blocks), segments)
        for first, last in runs:
            x = tuc.checkpoint(span(first, last), x, use_reentrant=False)
        return span(*rest)(x)
    return run, ("torch.utils.checkpoint.checkpoint(f, x, use_reentrant=False) on each of "
                 "checkpoint_sequential's checkpointed segments, the last segment plain "
                 "(torch %s's checkpoint_sequential takes no use_reentrant)" % torch.__version__)


# ---- one configuration -------------------------------------------------------------------------

def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


class CpuMemory:
    """PyTorch's CPU allocator as the preloaded bench/alloc_peak.c sees it: the CPU's
    memory_allocated(), reset_peak_memory_stats() and max_memory_allocated(), in bytes."""

    def __init__(self, lib):
        self.lib = lib

    def allocated(self):
        return self.lib.alloc_peak_current()

    def reset_peak(self):
        self.lib.alloc_peak_reset()

    def max_allocated(self):
        return self.lib.alloc_peak_max()

    def other_bytes(self):
        """posix_memalign bytes from outside libc10 (not counted), summed since the start."""
        return self.lib.alloc_peak_other_bytes()

    def self_test(self):
        """None if a tensor of known size is counted exactly, else what went wrong."""
        base, blocks = self.allocated(), self.lib.alloc_peak_blocks()
        t = torch.empty(1001, dtype=torch.float32)
        got, nblocks = self.allocated() - base, self.lib.alloc_peak_blocks() - blocks
        del t
        left = self.allocated() - base
        if got == 4004 and nblocks == 1 and left == 0:
            return None
        return ("the shim's self-test failed: torch.empty(1001) counted as %d B in %d blocks, "
                "%d B left after del (expected 4004 B in 1 block, 0 left)%s"
                % (got, nblocks, left, "" if self.lib.alloc_peak_caller_found() else
                   "; no posix_memalign from libc10.so seen (set ALLOC_PEAK_CALLER?)"))


def open_cpu_memory(args):
    """(CpuMemory or None, the header's line about memory on the CPU)."""
    if not args.cpu_memory:
        return None, "memory columns n/a: --no-cpu-memory"
    lib = alloc_peak_lib()
    if lib is None:
        return None, "memory columns n/a: %s" % (
            NO_CPU_MEMORY_WHY or "bench/alloc_peak.c is not preloaded")
    mem = CpuMemory(lib)
    why = mem.self_test()
    if why is not None:
        return None, "memory columns n/a: %s" % why
    where = os.environ.get(ALLOC_PEAK_ENV) or "LD_PRELOAD"
    return mem, ("memory: bytes PyTorch's CPU allocator (c10::alloc_cpu) hands out, requested "
                 "sizes, peak during the step minus the level before it, counted by "
                 "bench/alloc_peak.c (%s; self-test exact)" % where)


def set_threads(n, torch_n):
    """torch.set_num_threads(torch_n), and OpenBLAS's count n where OpenBLAS is in the process
    (Debian's torch: torch.set_num_threads does not reach it). The header's line about threads."""
    torch.set_num_threads(torch_n)
    line = "threads: %d (torch.set_num_threads(%d); torch.get_num_threads() = %d)" % (
        n, torch_n, torch.get_num_threads())
    blas = None
    try:
        with open("/proc/self/maps") as f:
            for l in f:
                path = l.split()[-1] if len(l.split()) >= 6 else ""
                if os.path.basename(path).startswith("libopenblas"):
                    blas = path
                    break
    except OSError:
        pass
    if blas is None:
        return line + "; no OpenBLAS loaded"
    try:
        ob = ctypes.CDLL(blas)
        ob.openblas_set_num_threads(ctypes.c_int(n))
        return line + "; OpenBLAS %d (openblas_set_num_threads)" % ob.openblas_get_num_threads()
    except (OSError, AttributeError):
        return line + "; OpenBLAS (%s) not set" % blas


class Trainer:
    def __init__(self, args, dev, mem=None):
        self.args, self.dev, self.mem = args, dev, mem
        self.other_bytes = 0    # posix_memalign bytes outside PyTorch's allocator in the steps
        C, L, N = args.width, args.depth, args.batch
        gen = torch.Generator().manual_seed(args.seed)
        self.blocks = nn.Sequential(*[Block(C, args.dropout) for _ in range(L)])
        init_blocks(self.blocks, gen, w2_scale=0.1, bias_std=0.0)
        teacher = nn.Sequential(*[Block(C, 0.0) for _ in range(L)])
        init_blocks(teacher, torch.Generator().manual_seed(args.seed + 1), w2_scale=1.0,
                    bias_std=0.1)
        self.blocks.to(dev).train()
        teacher.to(dev).eval()
        self.params = list(self.blocks.parameters())
        self.init = [p.detach().clone() for p in self.params]     # every run starts here
        self.n_params = sum(p.numel() for p in self.params)
        data = torch.Generator().manual_seed(args.seed ^ 0xDA7A)
        self.x = torch.randn(N, C, generator=data).to(dev).requires_grad_(True)
        with torch.no_grad():
            self.target = teacher(self.x.detach())
        del teacher
        for p in self.params + [self.x]:     # allocated once, zeroed, never set to None
            p.grad = torch.zeros_like(p)

    def reset_weights(self):
        with torch.no_grad():
            for p, p0 in zip(self.params, self.init):
                p.copy_(p0)

    def zero_grads(self):
        for p in self.params + [self.x]:
            p.grad.zero_()

    def step(self, forward, update=True):
        self.zero_grads()
        y = forward(self.x)
        loss = F.mse_loss(y, self.target)
        loss.backward()
        if update:
            with torch.no_grad():
                for p in self.params:
                    p.add_(p.grad, alpha=-self.args.lr)
        return loss

    def grads(self):
        return [p.grad.detach().cpu().clone() for p in self.params + [self.x]]

    def run(self, forward):
        """(gradients of one step from the initial weights, median wall ms, median CPU ms,
        activation bytes or None, loss after the last step, median minor faults per step)."""
        dev, args = self.dev, self.args
        # The gradient check: the initial weights, the same seed (CPU and every CUDA device).
        self.reset_weights()
        torch.manual_seed(args.seed)
        self.step(forward, update=False)
        sync(dev)
        grads = self.grads()
        # Then training from the initial weights: warmup, then the measured steps.
        self.reset_weights()
        torch.manual_seed(args.seed)
        for _ in range(args.warmup):
            self.step(forward)
        sync(dev)
        times, cpu, faults, peak = [], [], [], None
        for _ in range(args.steps):
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
                torch.cuda.reset_peak_memory_stats(dev)
                base = torch.cuda.memory_allocated(dev)
            elif self.mem is not None:
                self.mem.reset_peak()
                base, other = self.mem.allocated(), self.mem.other_bytes()
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            c0, t0 = time.process_time(), time.perf_counter()
            loss = self.step(forward)
            sync(dev)
            times.append((time.perf_counter() - t0) * 1e3)
            cpu.append((time.process_time() - c0) * 1e3)
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
            if dev.type == "cuda":
                used = torch.cuda.max_memory_allocated(dev) - base
                peak = used if peak is None else max(peak, used)
            elif self.mem is not None:
                used = self.mem.max_allocated() - base
                peak = used if peak is None else max(peak, used)
                self.other_bytes += self.mem.other_bytes() - other
        return (grads, statistics.median(times), statistics.median(cpu), peak, float(loss),
                statistics.median(faults))


# ---- main --------------------------------------------------------------------------------------

def device_name(dev):
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return name


def main(argv):
    args = parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("torch %s has no CUDA device here; use --device cpu" % torch.__version__)
    dev = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    threads = set_threads(args.threads, args.torch_threads or args.threads)
    cpu_mem, mem_note = open_cpu_memory(args) if dev.type == "cpu" else (None, None)

    tr = Trainer(args, dev, cpu_mem)
    C, L, N = args.width, args.depth, args.batch

    runs, labels = [("store-all", None, tr.blocks)], []
    for v in args.variant_list:
        fn, how = pick_variant(v)
        labels.append("%s: %s" % (v, how))
        if fn is None:
            continue
        for s in args.segment_list:
            runs.append((v, s, (lambda fn, s: lambda x: fn(tr.blocks, s, x))(fn, s)))
    results, round_cpu = [], []
    for rnd in range(args.rounds):
        cpu_ms = []
        for mode, seg, fwd in runs:
            res = tr.run(fwd)
            if rnd == 0:
                results.append((mode, seg) + res)
            cpu_ms.append(res[2])
            if dev.type == "cuda":
                torch.cuda.empty_cache()
        round_cpu.append([c / cpu_ms[0] for c in cpu_ms])

    ref_grads, ref_ms, ref_cpu, ref_mem = results[0][2], results[0][3], results[0][4], results[0][5]
    notes = [
        "%d blocks of width %d (hidden %d), %d rows, dropout %.2f, %s, %d params; "
        "%d steps after %d warmup, lr %g, seed %d"
        % (L, C, 4 * C, N, args.dropout, "TF32 allowed" if args.tf32 else "FP32 (no TF32)",
           tr.n_params, args.steps, args.warmup, args.lr, args.seed),
        "device: %s %s; torch %s" % (args.device, device_name(dev), torch.__version__),
        threads,
        THREAD_ENV,
    ] + labels + [
        "the last segment is never checkpointed: segments=1 is store-all's schedule; "
        "segments=L checkpoints L-1 blocks",
        "load average (1, 5, 15 min): start %.2f %.2f %.2f, end %.2f %.2f %.2f"
        % (LOAD_AT_START + os.getloadavg()),
    ]
    if mem_note:
        notes.append(mem_note)
    if tr.other_bytes:
        notes.append("not counted: %d B of posix_memalign from outside libc10 during the measured "
                     "steps (another library's own aligned allocations)" % tr.other_bytes)
    rows = []
    for mode, seg, grads, ms, cms, mem, loss, flt in results:
        equal = len(grads) == len(ref_grads) and all(
            torch.equal(a, b) for a, b in zip(grads, ref_grads))
        rows.append((mode, "" if seg is None else str(seg), "%.3f" % ms, "%.3f" % cms,
                     "%.3f" % (ms / ref_ms), "%.3f" % (cms / ref_cpu),
                     "n/a" if mem is None else str(mem),
                     "n/a" if mem is None or not ref_mem else "%.3f" % (mem / ref_mem),
                     "%d" % flt, "yes" if equal else "no", "%.6e" % loss))
    cols = ("mode", "segments", "step ms", "cpu ms", "time ratio", "cpu ratio", "activation B",
            "memory ratio", "minflt", "grads equal", "final loss")

    if args.csv:
        for n in notes:
            print(n, file=sys.stderr)
        print(",".join(c.replace(" ", "_") for c in cols))
        for r in rows:
            print(",".join(r))
    else:
        for n in notes:
            print(n)
        print()
        fmt = "%-12s %8s %10s %10s %10s %9s %12s %12s %7s %11s %13s"
        print(fmt % cols)
        for r in rows:
            print(fmt % ((r[0], r[1] or "-") + r[2:]))
    if args.rounds > 1:
        out = sys.stderr if args.csv else sys.stdout
        print("\n%d rounds: cpu ratio to the same round's store-all, median [smallest, largest]"
              % args.rounds, file=out)
        for i, (mode, seg) in enumerate((r[0], r[1]) for r in results):
            v = [rc[i] for rc in round_cpu]
            print("%-12s %8s %.3f [%.3f, %.3f]" % (mode, "-" if seg is None else seg,
                                                   statistics.median(v), min(v), max(v)), file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
