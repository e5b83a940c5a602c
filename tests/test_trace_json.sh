#!/usr/bin/env bash
# The step timeline's JSON, parsed by python3's json module (STEP TIMELINE in ckpt.h).
#
#   usage: tests/test_trace_json.sh PATH_TO_ckpt-plan PATH_TO_test_trace
#
# test_trace writes measured traces (CPU backend: synchronous copies and the copy engine, with
# offload, streaming, 2 microbatch lanes, a W) and predicted ones, each with the schedule's op
# counts (.expect); ckpt-plan --trace writes predicted traces of its plans, checked against the
# plan its --json prints. Every file must be Chrome trace-event JSON: the process and the three
# lanes named, "X" events with ts, dur >= 0 and args; each kind on its lane; F, B, O and P once
# per op and lane, W once per op; names as in the ranges ("F3+ name", "O T3"). For ckpt-plan the
# exact sequence of each lane and the makespan must match the plan; --trace with --sweep, into an
# unwritable file and at an infeasible budget fails with the documented exit status and writes
# nothing. Exit 0 when all pass, 1 otherwise, 77 (skipped) without python3.

set -u
if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
    echo "usage: $0 PATH_TO_ckpt-plan PATH_TO_test_trace" >&2
    exit 1
fi
PY=$(command -v python3) || { echo "SKIP: python3 is needed to parse the JSON"; exit 77; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-trace.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

"$2" "$TMP" >"$TMP/test_trace.log" 2>&1 || { cat "$TMP/test_trace.log"; echo "FAIL: test_trace"; exit 1; }

# The JSON's numbers under a locale with a decimal comma (ckpt_trace_json must not follow
# LC_NUMERIC): de_DE.UTF-8 compiled into $TMP with localedef (Debian's libc-bin, sources from the
# locales package), and test_trace run again with LOCPATH pointing there.
if command -v localedef >/dev/null 2>&1 && [ -e /usr/share/i18n/locales/de_DE ] &&
    mkdir -p "$TMP/loc" && localedef -i de_DE -f UTF-8 "$TMP/loc/de_DE.UTF-8" >/dev/null 2>&1; then
    LOCPATH=$TMP/loc "$2" >"$TMP/test_trace_de.log" 2>&1 || { cat "$TMP/test_trace_de.log"; echo "FAIL: test_trace under de_DE.UTF-8"; exit 1; }
    if grep -q "also checked under LC_NUMERIC=de_DE" "$TMP/test_trace_de.log"; then
        echo "PASS: test_trace's JSON numbers under LC_NUMERIC=de_DE.UTF-8 (a decimal comma)"
    else
        echo "FAIL: test_trace did not set LC_NUMERIC=de_DE.UTF-8 from LOCPATH=$TMP/loc"; exit 1
    fi
else
    echo "NOTE: no de_DE locale could be compiled (localedef, the locales package): JSON numbers checked under C only"
fi

# ckpt-plan: NAME ARGS... writes $TMP/plan_NAME.json (the trace) and plan_NAME.plan (--json)
plan() {
    local name=$1
    shift
    "$1" "${@:2}" --json --trace "$TMP/plan_$name.json" >"$TMP/plan_$name.plan" 2>"$TMP/plan_$name.err" ||
        { cat "$TMP/plan_$name.err"; echo "FAIL: ckpt-plan $name"; exit 1; }
}
plan offload "$1" --policy offload --bandwidth 25e9 --time-unit ms --budget 400MiB "$ROOT/tools/examples/offload.csv"
plan options "$1" --policy optimal --budget 1GiB --time-unit ms "$ROOT/tools/examples/gpt2_options.csv"
plan storeall "$1" --policy store-all "$ROOT/tools/examples/four.csv"

# --trace refused with --sweep (2), an unwritable file (2), nothing written for an infeasible budget (3)
expect_exit() {
    local want=$1 what=$2
    shift 2
    "$@" >/dev/null 2>"$TMP/err"
    local rc=$?
    [ "$rc" -eq "$want" ] || { cat "$TMP/err"; echo "FAIL: ckpt-plan $what exits $rc, expected $want"; exit 1; }
}
expect_exit 2 "--sweep with --trace" "$1" --sweep "$TMP/sw" --trace "$TMP/sw.json" "$ROOT/tools/examples/four.csv"
expect_exit 2 "--trace into a missing folder" "$1" --trace "$TMP/no/such/dir.json" "$ROOT/tools/examples/four.csv"
expect_exit 3 "--trace at an infeasible budget" "$1" --budget 1 --trace "$TMP/infeasible.json" "$ROOT/tools/examples/four.csv"
[ ! -e "$TMP/infeasible.json" ] && [ ! -e "$TMP/sw.json" ] || { echo "FAIL: ckpt-plan wrote a trace it should not have"; exit 1; }

"$PY" - "$TMP" <<'EOF'
import glob, json, os, re, sys

tmp = sys.argv[1]
passed = failed = 0

def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)

LANES = {0: "compute", 1: "host-to-device", 2: "device-to-host"}
LANE_OF = {"F": 0, "B": 0, "W": 0, "P": 1, "param_load": 1, "grad_load": 1, "O": 2, "grad_store": 2}

def load(path, pid):
    """The file's X events, after checking its structure."""
    with open(path) as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    meta = [e for e in ev if e["ph"] == "M"]
    xs = [e for e in ev if e["ph"] == "X"]
    name = os.path.basename(path)
    check(len(meta) + len(xs) == len(ev), name + ": only M and X events")
    procs = [e for e in meta if e["name"] == "process_name"]
    check(len(procs) == 1 and procs[0]["pid"] == pid, name + ": the process is pid %d" % pid)
    threads = {e["tid"]: e["args"]["name"] for e in meta if e["name"] == "thread_name" and e["pid"] == pid}
    check(threads == LANES, name + ": lanes %r" % threads)
    bad = [e for e in xs if e["pid"] != pid or e["tid"] != LANE_OF.get(e["cat"]) or e["dur"] < 0 or e["ts"] < 0
           or set(e["args"]) != {"op", "stage", "stage_name", "tape", "option", "microbatch", "bytes"}]
    check(not bad, name + ": %d malformed events, first %r" % (len(bad), bad[:1]))
    for e in xs:
        a = e["args"]
        if e["cat"] in "FB":
            ok = re.fullmatch(r"%s%d(\+(/\d+)?)? " % (e["cat"], a["stage"] + 1), e["name"][:-len(a["stage_name"])] if a["stage_name"] else e["name"])
        elif e["cat"] in "OPW":
            ok = re.fullmatch(r"%s [XT]%d" % (e["cat"], a["stage"] + 1), e["name"])
        else:
            ok = e["name"].endswith(" %d %s" % (a["stage"] + 1, a["stage_name"]))
        if not ok:
            check(False, name + ": event name %r does not match its args %r" % (e["name"], a))
            break
    return xs

# test_trace's files: op counts per kind (F, B, O, P per lane; W once)
files = sorted(glob.glob(os.path.join(tmp, "trace_*.json")))
check(len(files) >= 10, "test_trace wrote %d traces" % len(files))
for path in files:
    with open(path[:-5] + ".expect") as f:
        want = json.load(f)
    xs = load(path, want["pid"])
    for kind in "FBOPW":
        n = sum(1 for e in xs if e["cat"] == kind)
        expect = want[kind] * (1 if kind == "W" else want["lanes"])
        check(n == expect, "%s: %d %s events, the schedule has %d" % (os.path.basename(path), n, kind, expect))

# ckpt-plan's: each lane's exact sequence from the plan's ops, and the makespan
UNIT_MS = {"plan_offload.json": 1.0, "plan_options.json": 1.0, "plan_storeall.json": 1e3}   # --time-unit given
for path in sorted(glob.glob(os.path.join(tmp, "plan_*.json"))):
    name = os.path.basename(path)
    with open(path[:-5] + ".plan") as f:
        p = json.load(f)
    xs = load(path, 2)
    names = {s["stage"]: s["name"] for s in p["stage_plan"]}
    want = {0: [], 1: [], 2: []}
    for op in p["ops"]:
        k, i = op[0], op[1]
        if k == "F":
            want[0].append("F%d%s %s" % (i, ("+/%d" % op[3] if op[3] else "+") if op[2] else "", names[i]))
        elif k == "B":
            want[0].append("B%d %s" % (i, names[i]))
        else:
            want[LANE_OF[k[0]]].append("%s %s%d" % (k[0], "T" if k.endswith("T") else "X", i))
    for lane in range(3):
        got = [e["name"] for e in xs if e["tid"] == lane]
        check(got == want[lane], "%s: lane %d runs %r..., the plan %r..." % (name, lane, got[:4], want[lane][:4]))
    end = max(e["ts"] + e["dur"] for e in xs) / 1e3
    t = p["time"] * UNIT_MS[name]
    check(abs(end - t) <= 1e-6 * t, "%s: the last event ends at %.6f ms, the plan's time is %.6f ms" % (name, end, t))
    check(len(xs) == p["n_ops"], "%s: %d events for %d ops" % (name, len(xs), p["n_ops"]))

print("test_trace_json: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
EOF
