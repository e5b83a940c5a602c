#!/usr/bin/env python3
"""rotor_plan_bench.py -- rotor's planner timed live beside ckpt.h's, on the same chains.

rotor (Rematerializing Optimally with pyTORch, Inria) is not part of this project: give the path of
a rotor checkout in which its own build has run (`python3 setup.py build`, or `build_ext
--inplace`) with --rotor PATH or the ROTOR_DIR environment variable. The script looks for the
`rotor` package and rotor's C extension `dynamic_programs` in PATH, then in PATH/build/lib*, and
imports them from there. Without them it says so and exits 77 (skipped).

What it does:
  1. Runs bench/plan_bench (built by CMake: build/default/plan_bench, or --plan-bench EXE) once as
         plan_bench --csv DIR --units 500 REPS MAX_STAGES [CHAIN]
     (CHAIN only when --chains names one kind: "hetero", every stage drawn at random; "repeat", an
     embedding stage, copies of one block of 4 random stages, a head stage; with both, the chains
     are those of `plan_bench REPS MAX_STAGES`). plan_bench writes every chain it
     plans to DIR/<chain>_<stages>.csv (ckpt-plan's CSV format, tools/ckpt-plan.c, with the
     budget -- a third of store-all's peak -- in a comment) and prints ckpt.h's figures for it:
     the median CPU and wall time of ckpt_plan_create with max_units = 500 (the whole call: the
     program, the arena layout and min_budget's plan), the unit and units it planned in, and the
     predicted time / store-all's.
  2. For each chain of the chosen lengths, converts it to rotor's chain (below) and times rotor's
     persistent_compute_table(chain, 500) -- the C dynamic program that rotor.Checkpointable's
     compute_sequence() runs through rotor.algorithms.persistent() with its default
     mem_slots = 500 -- REPS times: median process CPU time (time.process_time) and wall time
     (time.perf_counter). The call includes building the Python lists and dicts it returns, as
     rotor's users get it. Then it times once what persistent() does after the table
     (persistent_rec: the sequence), and reads the plan's predicted makespan (the table's optimum,
     checked against the sequence's get_makespan) and rotor's simulated peak.
  3. Prints one table with both sides. Both are single-threaded programs; OMP_NUM_THREADS=1 and
     torch.set_num_threads(1) are set all the same (importing rotor imports torch).

Chain mapping. ckpt.h's stage i (1-based; a = output bytes, t = tape bytes, f, b = forward and
backward time, wf, wb = forward and backward workspace bytes) is rotor's stage i - 1; rotor's
chain of length L = n has lists (rotor.algorithms.Chain(fw, bw, cw, cbw, ftmp, btmp)):
  fweigth[i-1]  = f_i                   forward time
  bweigth[i-1]  = b_i; bweigth[n] = 0   backward time; entry n is rotor's loss stage: none in
                                        ckpt.h (Checkpointable also appends 0)
  cweigth[i]    = a_i; cweigth[0] = 0   size of x_i (and of its gradient); x_0 and its gradient
                                        are the caller's in ckpt.h and not counted
  cbweigth[i]   = a_i + t_i; [0] = 0    size of xbar_i, what a forward with grad keeps: rotor
                                        measures it as the output plus what autograd saves
  fwd_tmp[i-1]  = wf_i                  forward temporary memory
  bwd_tmp[i-1]  = wb_i; bwd_tmp[n] = 0  backward temporary memory; entry n: the loss's, none
Sizes are then discretized as Checkpointable.makeParams does: mem_unit = budget // 500 and every
size ceil(size / mem_unit); the memory limit is 500 units (the whole budget, as cweigth[0] = 0).
What has no counterpart, so the two programs plan slightly different models of the same chain:
  - ckpt.h frees X[i] after its last read (B(i+1) at the latest, in ckpt.h's numbering); rotor
    keeps x_i inside xbar_i until stage i's own backward B(i): during B(i) rotor counts a_i more.
  - ckpt.h does not count the gradient of the last output (G[n]); rotor's loss stage counts it
    (cweigth[n] as the gradient of x_n) from the loss through B(n).
  - ckpt.h rounds to ceil(budget / 500) bytes (and falls back to a coarser unit when its table
    would be too large: the "units" column); rotor to floor(budget / 500).
  - ckpt.h plans over a larger class than rotor's persistent schedules (it may also drop a
    checkpoint or a kept tape's input and recompute it); tape options and no-checkpoint flags
    (unused by these chains) have no counterpart in rotor.
So compare the predicted time/store-all columns as "both planned the same chain", not as equal.

rotor's table is (L + 1)^2 x 501 entries, returned as Python dicts: at 400 stages one call took
22 to 45 s of CPU time and the process 8.5 GiB of memory (peak RSS) on the 2-core VM dev-2c
(bench/RESULTS.md); keep --rotor-reps small.

Usage (from the repository root, after `cmake --build build/default --target plan_bench`):
    ROTOR_DIR=/path/to/rotor python3 bench/rotor_plan_bench.py [--reps 3] [--rotor-reps 3]
        [--stages 100,200,400] [--chains hetero,repeat] [--plan-bench EXE] [--keep DIR] [--no-gc]
"""
import argparse
import gc
import glob
import importlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

SLOTS = 500     # rotor's default mem_slots; plan_bench runs with --units 500
SKIP = 77


def find_rotor(path):
    """Puts rotor's package and C extension on sys.path; returns (persistent module, dp module)."""
    if not path:
        print("rotor_plan_bench: no rotor given (--rotor PATH or ROTOR_DIR): skipped")
        sys.exit(SKIP)
    dirs = [path] + sorted(glob.glob(os.path.join(path, "build", "lib*")))
    pkg = [d for d in dirs if os.path.isfile(os.path.join(d, "rotor", "algorithms", "persistent.py"))]
    ext = [d for d in dirs if glob.glob(os.path.join(d, "dynamic_programs*.so"))]
    if not pkg or not ext:
        why = ("rotor not found" if not pkg and not ext else "the rotor package not found" if not pkg else
               "rotor's C extension dynamic_programs not built (run `python3 setup.py build` there)")
        print("rotor_plan_bench: %s under %s: skipped" % (why, path))
        sys.exit(SKIP)
    for d in reversed(ext + pkg):
        sys.path.insert(0, d)
    os.environ["OMP_NUM_THREADS"] = "1"     # before torch is imported (rotor imports it)
    try:
        persistent = importlib.import_module("rotor.algorithms.persistent")
        dp = importlib.import_module("dynamic_programs")
    except ImportError as e:
        print("rotor_plan_bench: cannot import rotor from %s (%s): skipped" % (path, e))
        sys.exit(SKIP)
    if not persistent.c_version_present:
        print("rotor_plan_bench: rotor's C extension does not load: skipped")
        sys.exit(SKIP)
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        pass
    return persistent, dp


def read_chain(path):
    """ckpt-plan's CSV as plan_bench writes it: (stages as dicts, budget, store-all time)."""
    budget = sa_time = None
    rows, header = [], None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("#"):
                m = re.search(r"budget=(\d+) store_all_peak=\d+ store_all_time=(\S+)", line)
                if m:
                    budget, sa_time = int(m.group(1)), float(m.group(2))
                continue
            if not line:
                continue
            fields = [x.strip() for x in line.split(",")]
            if header is None:
                header = fields
                continue
            rows.append(dict(zip(header, fields)))
    if budget is None:
        raise ValueError("%s: no budget comment (not written by plan_bench --csv)" % path)
    stages = [dict(f=float(r["fwd_time"]), b=float(r["bwd_time"]), a=int(r["out_bytes"]), t=int(r["tape_bytes"]),
                   wf=int(r["fwd_workspace"]), wb=int(r["bwd_workspace"])) for r in rows]
    return stages, budget, sa_time


def rotor_chain(alg, stages, budget):
    """rotor's discretized chain (see the mapping above) and its memory unit in bytes."""
    unit = budget // SLOTS
    units = lambda v: -(-v // unit)     # ceil, as Checkpointable.discretize
    fw = [s["f"] for s in stages]
    bw = [s["b"] for s in stages] + [0]
    cw = [0] + [units(s["a"]) for s in stages]
    cbw = [0] + [units(s["a"] + s["t"]) for s in stages]
    ftmp = [units(s["wf"]) for s in stages]
    btmp = [units(s["wb"]) for s in stages] + [0]
    return alg.Chain(fw, bw, cw, cbw, ftmp, btmp), unit


def run_plan_bench(exe, reps, max_n, kinds, csv_dir):
    """One run for every chain kind (no kind argument when both: the chains of plain `plan_bench
    REPS MAX_STAGES`, as the random draws follow one another)."""
    cmd = [exe, "--csv", csv_dir, "--units", str(SLOTS), str(reps), str(max_n)] + (kinds if len(kinds) == 1 else [])
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
    lines = out.splitlines()
    head = lines[0].split()
    rows = {}
    for line in lines[1:]:
        fields = line.split(None, len(head) - 1)
        if len(fields) == len(head) and fields[2] == str(SLOTS):
            r = dict(zip(head, fields))
            rows[(r["chain"], int(r["stages"]))] = r
    return " ".join(cmd), rows


def time_rotor(persistent, dp, alg, stages, budget, sa_time, reps, no_gc):
    chain, unit = rotor_chain(alg, stages, budget)
    mem = SLOTS - chain.cweigth[0]
    cpu, wall, table = [], [], None
    if no_gc:
        gc.disable()
    for _ in range(reps):
        table = None                    # the previous table is freed outside the timed call
        w0, c0 = time.perf_counter(), time.process_time()
        table = dp.persistent_compute_table(chain, SLOTS)
        c1, w1 = time.process_time(), time.perf_counter()
        cpu.append(c1 - c0)
        wall.append(w1 - w0)
    opt = table[0][mem][0][chain.length]
    if opt == float("inf"):
        gc.enable()
        return dict(cpu=statistics.median(cpu), wall=statistics.median(wall), unit=unit, feasible=False)
    w0, c0 = time.perf_counter(), time.process_time()
    seq = persistent.persistent_rec(chain, 0, chain.length, mem, table)
    seq_cpu, seq_wall = time.process_time() - c0, time.perf_counter() - w0
    gc.enable()
    makespan = seq.get_makespan(chain)
    peak = alg.simulate_sequence(seq, None, chain=chain, display=False)
    rotor_sa = sum(chain.fweigth) + sum(chain.bweigth)
    if abs(makespan - opt) > 1e-9 * max(1.0, opt) or abs(rotor_sa - sa_time) > 1e-9 * sa_time:
        raise RuntimeError("rotor's makespan %r vs its table %r, store-all %r vs ckpt.h's %r"
                           % (makespan, opt, rotor_sa, sa_time))
    return dict(cpu=statistics.median(cpu), wall=statistics.median(wall), cpu_all=cpu, seq_cpu=seq_cpu,
                seq_wall=seq_wall, unit=unit, feasible=True, ratio=opt / sa_time,
                peak=peak * unit / budget)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rotor", default=os.environ.get("ROTOR_DIR"),
                    help="rotor checkout with its build done (default: $ROTOR_DIR)")
    ap.add_argument("--plan-bench", default=os.path.join(root, "build", "default", "plan_bench"))
    ap.add_argument("--reps", type=int, default=3, help="ckpt.h's runs per chain (median)")
    ap.add_argument("--rotor-reps", type=int, default=3, help="rotor's runs per chain (median)")
    ap.add_argument("--stages", default="100,200,400")
    ap.add_argument("--chains", default="hetero,repeat")
    ap.add_argument("--no-gc", action="store_true",
                    help="time rotor's calls with Python's cyclic garbage collector off (gc.disable(): "
                    "not rotor's default; shows what the collector costs while the table is built)")
    ap.add_argument("--keep", help="write the chains' CSV files here (default: a temporary folder)")
    args = ap.parse_args()
    persistent, dp = find_rotor(args.rotor)
    alg = importlib.import_module("rotor.algorithms")
    if not os.access(args.plan_bench, os.X_OK):
        print("rotor_plan_bench: %s not found (cmake --build build/default --target plan_bench)" % args.plan_bench)
        return 2
    lengths = [int(x) for x in args.stages.split(",")]
    tmp = None
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        csv_dir = args.keep
    else:
        tmp = tempfile.TemporaryDirectory()
        csv_dir = tmp.name
    print("rotor: %s (rotor.algorithms.persistent from %s)" % (args.rotor, persistent.__file__))
    results = []
    kinds = args.chains.split(",")
    cmd, ck = run_plan_bench(args.plan_bench, args.reps, max(lengths), kinds, csv_dir)
    print("ckpt.h: %s" % cmd)
    sys.stdout.flush()
    for kind in kinds:
        for n in lengths:
            stages, budget, sa_time = read_chain(os.path.join(csv_dir, "%s_%d.csv" % (kind, n)))
            r = time_rotor(persistent, dp, alg, stages, budget, sa_time, args.rotor_reps, args.no_gc)
            results.append((kind, n, ck[(kind, n)], r))
            print("rotor: %s %d: persistent_compute_table CPU ms %s" % (kind, n, " ".join(
                "%.1f" % (x * 1e3) for x in r.get("cpu_all", [r["cpu"]]))))
            sys.stdout.flush()
    print()
    print("ckpt.h: ckpt_plan_create, max_units %d, median of %d; rotor: persistent_compute_table at %d "
          "slots, median of %d%s; seq: rotor's persistent_rec after it, one run"
          % (SLOTS, args.reps, SLOTS, args.rotor_reps, ", garbage collector off" if args.no_gc else ""))
    fmt = "%-7s %-6s | %-9s %-9s %-6s %-8s %-8s | %-9s %-10s %-7s %-8s %-8s %-10s | %s"
    print(fmt % ("chain", "stages", "ckpt_cpu", "ckpt_wall", "units", "time/sa", "peak/bud",
                 "rotor_cpu", "rotor_wall", "seq_ms", "time/sa", "peak/bud", "rotor_unit", "rotor/ckpt cpu"))
    for kind, n, c, r in results:
        ok = r["feasible"]
        print(fmt % (kind, n, c["cpu_ms"], c["wall_ms"], c["units"], c["time/sa"], c["peak/budget"],
                     "%.1f" % (r["cpu"] * 1e3), "%.1f" % (r["wall"] * 1e3),
                     "%.1f" % (r["seq_cpu"] * 1e3) if ok else "-", "%.4f" % r["ratio"] if ok else "infeas.",
                     "%.4f" % r["peak"] if ok else "-", r["unit"], "%.2f" % (r["cpu"] * 1e3 / float(c["cpu_ms"]))))
    print("(ms; cpu = process CPU time; time/sa = predicted step time / store-all's, each in its own "
          "cost model; peak/bud: ckpt.h's predicted peak / budget, rotor's simulated peak in its units x unit / budget)")
    if tmp:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
