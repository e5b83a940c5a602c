#!/usr/bin/env bash
# Tests for the ckpt-plan command-line tool.
#
#   usage: tests/test_cli.sh PATH_TO_ckpt-plan
#
# Prints one line per check (PASS/FAIL) and a final "N passed, N failed" line. Exit status 0 when
# every check passed, 1 otherwise (77, skipped, when /usr/bin/python3 is missing). Needs bash,
# coreutils, grep and /usr/bin/python3 (stdlib only).
#
# Every plan printed as JSON is also replayed by an independent Python model of the manual's cost
# model: the schedule must obey its rules and have exactly the time and peak the tool reports.

set -u

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 PATH_TO_ckpt-plan" >&2
    exit 1
fi
BIN=$1
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
EX=$ROOT/tools/examples
PY=/usr/bin/python3
if [ ! -x "$PY" ]; then
    echo "SKIP: $PY is needed to check the JSON output"
    exit 77 # CTest's SKIP_RETURN_CODE
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

PASSED=0
FAILED=0
pass() { echo "PASS: $1"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL: $1${2:+ -- $2}"; FAILED=$((FAILED + 1)); }

# run ARGS...: runs the tool; stdout in $TMP/out, stderr in $TMP/err, exit status in $RC.
RC=0
run() {
    "$BIN" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    RC=$?
}
# What the last run printed on stderr, on one line, for failure messages.
errline() { tr '\n' ' ' <"$TMP/err" | cut -c1-300; }

# ---------------------------------------------------------------------------------------------
# The Python side: JSON checks and a cost-model simulator.
cat >"$TMP/check.py" <<'PYEOF'
import csv, io, json, sys

def align(v):
    """The cost model counts every size rounded up to CKPT_ALIGN (256) bytes."""
    return (int(v) + 255) // 256 * 256

def load_csv(path):
    """The stage costs of a ckpt-plan CSV, as a list of dicts (f, b, a, t, wf, wb, nock, opts):
    opts[k] is tape option k as (tape bytes, backward time), opts[0] = (t, b)."""
    with open(path, newline='', encoding='utf-8-sig') as fh:
        lines = [l for l in fh.read().splitlines()
                 if l.strip() and not l.lstrip().startswith('#')]
    rows = list(csv.reader(io.StringIO('\n'.join(lines)), skipinitialspace=True))
    head = [h.strip() for h in rows[0]]
    out = []
    for r in rows[1:]:
        d = dict(zip(head, [v.strip() for v in r]))
        out.append(dict(name=d['name'], f=float(d['fwd_time']), b=float(d['bwd_time']),
                        a=align(d['out_bytes']), t=align(d['tape_bytes']),
                        wf=align(d['fwd_workspace']), wb=align(d['bwd_workspace']),
                        nock=d.get('no_checkpoint', '0') == '1'))
        opts = [(out[-1]['t'], out[-1]['b'])]
        for k in (1, 2, 3):
            if d.get('tape_bytes_%d' % k, ''):
                opts.append((align(d['tape_bytes_%d' % k]),
                             out[-1]['b'] + float(d['bwd_extra_%d' % k])))
        out[-1]['opts'] = opts
    return out

def scratch_option(c):
    """The option an F without tape runs: the smallest tape, the lowest index among ties."""
    return min(range(len(c['opts'])), key=lambda o: (c['opts'][o][0], o))

def simulate(costs, ops):
    """Replays ops in the manual's cost model. Returns (time, peak) or raises ValueError."""
    n = len(costs)
    a = lambda i: costs[i - 1]['a'] if 1 <= i <= n else 0
    if not isinstance(ops, list):
        raise ValueError('ops is not a list')
    x_avail = [False] * (n + 1); x_avail[0] = True      # X[0] is the caller's
    t_avail = [False] * (n + 1)
    g_avail = [False] * (n + 1); g_avail[n] = True      # G[n] is the caller's (after F(n))
    inst = []           # buffer instances: [bytes, written_at, last_read_at or None]
    cur_x = {}; cur_t = {}; cur_g = {}
    fn_at = None; next_b = n; time = 0.0; growth = []
    t_opt = [0] * (n + 1)                              # the option of each live tape
    last_f_input_version = {}                          # stage -> version of X[i-1] it ran from
    x_version = [0] * (n + 1)
    for k, op in enumerate(ops):
        if op[0] == 'F':
            # ["F", i, 1, option] keeps its tape in that option; ["F", i, 0] keeps none
            if len(op) < 3 or op[2] not in (0, 1) or len(op) != 3 + op[2]:
                raise ValueError('op %d: bad F op %r' % (k, op))
            i, tape = op[1], op[2]
            if not (isinstance(i, int) and 1 <= i <= n):
                raise ValueError('op %d: stage %r out of range' % (k, i))
            o = op[3] if tape else scratch_option(costs[i - 1])
            if not (isinstance(o, int) and 0 <= o < len(costs[i - 1]['opts'])):
                raise ValueError('op %d: F(%d) in tape option %r, which the stage lacks' % (k, i, o))
            t_o = costs[i - 1]['opts'][o][0]
            if not x_avail[i - 1]:
                raise ValueError('op %d: F(%d) but X[%d] is not live' % (k, i, i - 1))
            if i == n:
                if fn_at is not None:
                    raise ValueError('op %d: F(n) runs twice' % k)
                if not tape:
                    raise ValueError('op %d: F(n) does not keep its tape' % k)
                fn_at = k
            if costs[i - 1]['nock'] and last_f_input_version.get(i) == x_version[i - 1]:
                raise ValueError('op %d: F(%d) runs twice from the same X[%d] but stage %d has '
                                 'no_checkpoint' % (k, i, i - 1, i))
            last_f_input_version[i] = x_version[i - 1]
            if i - 1 >= 1:
                cur_x[i - 1][2] = k
            if i < n:
                cur_x[i] = [a(i), k, None]; inst.append(cur_x[i])
                x_avail[i] = True; x_version[i] += 1
            if tape:
                cur_t[i] = [t_o, k, None]; inst.append(cur_t[i])
                t_avail[i] = True; t_opt[i] = o
            time += costs[i - 1]['f']
            growth.append(a(i) + t_o + costs[i - 1]['wf'])
        elif op[0] == 'B':
            if len(op) != 2:
                raise ValueError('op %d: bad B op %r' % (k, op))
            i = op[1]
            if fn_at is None:
                raise ValueError('op %d: B before F(n)' % k)
            if i != next_b:
                raise ValueError('op %d: B(%r) but B(%d) is next' % (k, i, next_b))
            if not t_avail[i]:
                raise ValueError('op %d: B(%d) without its tape' % (k, i))
            if not x_avail[i - 1]:
                raise ValueError('op %d: B(%d) but X[%d] is not live' % (k, i, i - 1))
            cur_t[i][2] = k
            if i - 1 >= 1:
                cur_x[i - 1][2] = k
            if i < n:
                cur_g[i][2] = k
            if i - 1 >= 1:
                cur_g[i - 1] = [a(i - 1), k, None]; inst.append(cur_g[i - 1])
            t_avail[i] = False
            if i - 1 >= 1:
                x_avail[i - 1] = False
            next_b -= 1
            time += costs[i - 1]['opts'][t_opt[i]][1]
            growth.append(a(i - 1) + costs[i - 1]['wb'])
        else:
            raise ValueError('op %d: unknown op %r' % (k, op))
    if fn_at is None:
        raise ValueError('no F(n)')
    if next_b != 0:
        raise ValueError('the backward stops before B(1) (next B would be %d)' % next_b)
    peak = 0
    for k in range(len(ops)):
        live = sum(b for b, w, r in inst if r is not None and w < k <= r)
        peak = max(peak, live + growth[k])
    return time, peak

def ops_shape_ok(j, n):
    ops = j['ops']
    f_n = [o for o in ops if o[0] == 'F' and o[1] == n]
    bs = [o[1] for o in ops if o[0] == 'B']
    return len(f_n) == 1 and f_n[0][:3] == ['F', n, 1] and bs == list(range(n, 0, -1))

def main():
    mode = sys.argv[1]
    if mode == 'parse':                 # parse FILE: stdin-style json.load of a file
        with open(sys.argv[2], encoding='utf-8') as fh:
            json.load(fh)
        return
    if mode == 'expr':                  # expr JSONFILE CSVFILE PYEXPR
        with open(sys.argv[2], encoding='utf-8') as fh:
            j = json.load(fh)
        costs = load_csv(sys.argv[3]) if sys.argv[3] != '-' else None
        env = dict(j=j, costs=costs, simulate=simulate, ops_shape_ok=ops_shape_ok, json=json)
        try:
            ok = eval(sys.argv[4], env)
        except Exception as e:          # report, do not crash
            print('%s: %s' % (type(e).__name__, e)); sys.exit(1)
        if not ok:
            print('false: %s' % sys.argv[4]); sys.exit(1)
        return
    if mode == 'sim':                   # sim JSONFILE CSVFILE: the plan replays exactly
        with open(sys.argv[2], encoding='utf-8') as fh:
            j = json.load(fh)
        costs = load_csv(sys.argv[3])
        if not j.get('feasible'):
            print('plan is not feasible'); sys.exit(1)
        try:
            t, p = simulate(costs, j['ops'])
        except ValueError as e:
            print('schedule breaks the cost model: %s' % e); sys.exit(1)
        msgs = []
        if abs(t - j['time']) > 1e-9 * max(1.0, abs(t)):
            msgs.append('reported time %r, simulated %r' % (j['time'], t))
        if p != j['peak']:
            msgs.append('reported peak %r, simulated %r' % (j['peak'], p))
        if p > j['budget']:
            msgs.append('peak %r exceeds the budget %r' % (p, j['budget']))
        if j.get('n_ops') is not None and j['n_ops'] != len(j['ops']):
            msgs.append('n_ops %r but %d ops' % (j['n_ops'], len(j['ops'])))
        if msgs:
            print('; '.join(msgs)); sys.exit(1)
        return
    if mode == 'same':                  # same JSON1 JSON2: equal apart from "file"
        with open(sys.argv[2], encoding='utf-8') as fh:
            j1 = json.load(fh)
        with open(sys.argv[3], encoding='utf-8') as fh:
            j2 = json.load(fh)
        j1.pop('file', None); j2.pop('file', None)
        if j1 != j2:
            diff = [k for k in sorted(set(j1) | set(j2)) if j1.get(k) != j2.get(k)]
            print('differ in %s' % ', '.join(diff)); sys.exit(1)
        return
    sys.exit('unknown mode ' + mode)

main()
PYEOF

# jexpr DESC CSV EXPR: the last run's stdout, as JSON, satisfies the Python expression EXPR
# (names: j, costs, simulate, ops_shape_ok).
jexpr() {
    local why
    if why=$("$PY" "$TMP/check.py" expr "$TMP/out" "$2" "$3" 2>&1); then pass "$1"; else fail "$1" "$why"; fi
}
# jsim DESC CSV: the last run's JSON plan obeys the cost model with the reported time and peak.
jsim() {
    local why
    if why=$("$PY" "$TMP/check.py" sim "$TMP/out" "$2" 2>&1); then pass "$1"; else fail "$1" "$why"; fi
}
# jparse DESC: the last run's stdout parses with json.load(sys.stdin).
jparse() {
    if "$PY" -c 'import json,sys; json.load(sys.stdin)' <"$TMP/out" 2>"$TMP/pyerr"; then
        pass "$1"
    else
        fail "$1" "$(tr '\n' ' ' <"$TMP/pyerr" | cut -c1-200)"
    fi
}
expect_rc() { # DESC WANT
    if [ "$RC" -eq "$2" ]; then pass "$1"; else fail "$1" "exit $RC, want $2; stderr: $(errline)"; fi
}
err_has() { # DESC STRING (fixed string in the last stderr)
    if grep -qF -- "$2" "$TMP/err"; then pass "$1"; else fail "$1" "stderr lacks '$2': $(errline)"; fi
}
out_has() { # DESC STRING
    if grep -qF -- "$2" "$TMP/out"; then pass "$1"; else fail "$1" "stdout lacks '$2'"; fi
}
err_empty() { # DESC
    if [ ! -s "$TMP/err" ]; then pass "$1"; else fail "$1" "stderr: $(errline)"; fi
}

FOUR=$EX/four.csv
GPT=$EX/gpt2_mlp.csv
for f in "$FOUR" "$GPT"; do
    [ -r "$f" ] || { echo "FAIL: missing example $f"; echo "0 passed, 1 failed"; exit 1; }
done

# ---------------------------------------------------------------------------------------------
echo "== the four-stage example (f=1 b=2 a=2560 t=5120)"

run --json "$FOUR"
expect_rc "four.csv default budget: exit 0" 0
err_empty "four.csv default budget: nothing on stderr"
jparse "four.csv default budget: JSON parses"
jexpr "four.csv default budget: time 12, peak 30720" "$FOUR" 'j["time"] == 12 and j["peak"] == 30720'
jexpr "four.csv default budget: budget is the store-all peak 30720" "$FOUR" 'j["budget"] == 30720'
jexpr "four.csv default budget: feasible, policy optimal" "$FOUR" 'j["feasible"] is True and j["policy"] == "optimal"'
jexpr "four.csv: store_all_time 12, store_all_peak 30720" "$FOUR" 'j["store_all_time"] == 12 and j["store_all_peak"] == 30720'
jexpr "four.csv: min_budget 12800" "$FOUR" 'j["min_budget"] == 12800'
jexpr "four.csv: keys present" "$FOUR" 'all(k in j for k in ("policy","budget","feasible","time","peak","arena","min_budget","ops","store_all_time","store_all_peak","unit","guarantee","stages"))'
jexpr "four.csv: stages are the names" "$FOUR" 'j["stages"] == ["s1","s2","s3","s4"]'
jexpr "four.csv: guarantee all-schedules (4 stages get the exact search)" "$FOUR" 'j["guarantee"] == "all-schedules"'
jexpr "four.csv default budget: one [F,4,1], B 4..1 in order" "$FOUR" 'ops_shape_ok(j, 4)'
jexpr "four.csv default budget: no recomputation (8 ops)" "$FOUR" 'len(j["ops"]) == 8 and all(o[0] == "B" or o[2] == 1 for o in j["ops"])'
jsim "four.csv default budget: schedule replays to the reported time and peak" "$FOUR"
jexpr "four.csv default budget: arena 30720 (the layout reaches the peak)" "$FOUR" 'j["arena"] == 30720'
run --budget 15360 "$FOUR"
out_has "four.csv text mode --budget 15360: prints the arena" "arena"

for bt in 30720:12 20480:14 15360:15 12800:16; do
    b=${bt%%:*}
    t=${bt##*:}
    run --json --budget "$b" "$FOUR"
    expect_rc "four.csv --budget $b: exit 0" 0
    jparse "four.csv --budget $b: JSON parses"
    jexpr "four.csv --budget $b: time $t, peak <= $b" "$FOUR" "j['time'] == $t and j['peak'] <= $b and j['budget'] == $b"
    jexpr "four.csv --budget $b: one [F,4,1], B 4..1 in order" "$FOUR" 'ops_shape_ok(j, 4)'
    jsim "four.csv --budget $b: schedule replays to the reported time and peak" "$FOUR"
done

run --json --budget 0 "$FOUR"
expect_rc "four.csv --budget 0 (no limit): exit 0" 0
jexpr "four.csv --budget 0: time 12, peak 30720" "$FOUR" 'j["time"] == 12 and j["peak"] == 30720'

run --json --budget 10240 "$FOUR"
expect_rc "four.csv --budget 10240: exit 3 (infeasible)" 3
err_has "four.csv --budget 10240: stderr names the minimum budget 12800" "every budget from 12800 bytes plans"
err_has "four.csv --budget 10240: stderr says infeasible" "infeasible"
jparse "four.csv --budget 10240: JSON still parses"
jexpr "four.csv --budget 10240: feasible false, ops [], time/peak null" "$FOUR" 'j["feasible"] is False and j["ops"] == [] and j["time"] is None and j["peak"] is None'
jexpr "four.csv --budget 10240: min_budget 12800, budget 10240" "$FOUR" 'j["min_budget"] == 12800 and j["budget"] == 10240'

run --json --budget 12799 "$FOUR"
expect_rc "four.csv --budget 12799: exit 3" 3
err_has "four.csv --budget 12799: stderr names the minimum budget 12800" "every budget from 12800 bytes plans"

# text mode
run "$FOUR"
expect_rc "four.csv text mode: exit 0" 0
out_has "four.csv text mode: names the policy" "optimal"
out_has "four.csv text mode: says feasible" "feasible"
out_has "four.csv text mode: per-stage table lists s4" "s4"
run --budget 12800 "$FOUR"
expect_rc "four.csv text mode --budget 12800: exit 0" 0
out_has "four.csv text mode --budget 12800: time 16" "16"
run --budget 10240 "$FOUR"
expect_rc "four.csv text mode --budget 10240: exit 3" 3
err_has "four.csv text mode --budget 10240: stderr names 12800" "12800"

# ---------------------------------------------------------------------------------------------
echo "== input variants that mean the same chain"

run --json --budget 12800 "$FOUR"
cp "$TMP/out" "$TMP/ref50.json"
run --json "$FOUR"
cp "$TMP/out" "$TMP/refdef.json"

same() { # DESC REF.json: the last run's JSON equals REF apart from "file"
    local why
    if why=$("$PY" "$TMP/check.py" same "$TMP/out" "$2" 2>&1); then pass "$1"; else fail "$1" "$why"; fi
}

R=$TMP/reordered.csv
cat >"$R" <<'EOF'
tape_bytes,bwd_workspace,out_bytes,name,bwd_time,fwd_workspace,fwd_time
5120,0,2560,s1,2,0,1
5120,0,2560,s2,2,0,1
5120,0,2560,s3,2,0,1
5120,0,2560,s4,2,0,1
EOF
run --json --budget 12800 "$R"
expect_rc "reordered columns --budget 12800: exit 0" 0
same "reordered columns --budget 12800: same JSON as four.csv" "$TMP/ref50.json"
run --json "$R"
same "reordered columns default budget: same JSON as four.csv" "$TMP/refdef.json"

V=$TMP/variant.csv
printf '# comment\r\n\r\n  # indented comment\r\n name , fwd_time,bwd_time,out_bytes,tape_bytes,fwd_workspace,bwd_workspace\r\n"s1",1.0,2,2560,5120,0,0\r\n\r\ns2,1e0,2.00,2560,5120,0,0\r\n# between rows\r\ns3, 1 ,2,02560,5120,0,0\r\ns4,.1e1,2.,2560,5120,0,0' >"$V"
run --json --budget 12800 "$V"
expect_rc "CRLF, comments, blank lines, quotes, spaces, no final newline: exit 0" 0
same "CRLF/comment variant --budget 12800: same JSON as four.csv" "$TMP/ref50.json"

NC=$TMP/nock.csv
printf 'name,fwd_time,bwd_time,out_bytes,tape_bytes,fwd_workspace,bwd_workspace,no_checkpoint\ns1,1,2,2560,5120,0,0,0\ns2,1,2,2560,5120,0,0,0\ns3,1,2,2560,5120,0,0,0\ns4,1,2,2560,5120,0,0,0\n' >"$NC"
run --json --budget 12800 "$NC"
same "no_checkpoint column all 0: same JSON as four.csv" "$TMP/ref50.json"

printf 'name,fwd_time,bwd_time,out_bytes,tape_bytes,fwd_workspace,bwd_workspace,no_checkpoint\ns1,1,2,2560,5120,0,0,0\ns2,1,2,2560,5120,0,0,1\ns3,1,2,2560,5120,0,0,1\ns4,1,2,2560,5120,0,0,0\n' >"$NC"
for b in 30720 20480 15360 12800; do
    run --json --budget "$b" "$NC"
    if [ "$RC" -eq 0 ]; then
        pass "no_checkpoint on s2,s3 --budget $b: exit 0"
        jsim "no_checkpoint on s2,s3 --budget $b: schedule obeys the flag and replays exactly" "$NC"
        jexpr "no_checkpoint on s2,s3 --budget $b: not faster than without the flag" "$NC" \
            "j['time'] >= {30720: 12, 20480: 14, 15360: 15, 12800: 16}[$b]"
    elif [ "$RC" -eq 3 ]; then
        pass "no_checkpoint on s2,s3 --budget $b: exit 3 (infeasible)"
        jexpr "no_checkpoint on s2,s3 --budget $b: min_budget above the budget" "$NC" "j['min_budget'] > $b"
    else
        fail "no_checkpoint on s2,s3 --budget $b: exit 0 or 3" "exit $RC: $(errline)"
    fi
done

Q=$TMP/names.csv
printf 'name,fwd_time,bwd_time,out_bytes,tape_bytes,fwd_workspace,bwd_workspace\n"a ""quoted"", name",1,2,2560,5120,0,0\n"back\\slash\ttab",1,2,2560,5120,0,0\n\xc3\xa9t\xc3\xa9/</script>,1,2,2560,5120,0,0\ns4,1,2,2560,5120,0,0\n' >"$Q"
run --json "$Q"
expect_rc "names with quotes, commas, backslash, tab, UTF-8: exit 0" 0
jparse "names with quotes, commas, backslash, tab, UTF-8: JSON parses"
jexpr "names round-trip through JSON escaping" "$Q" \
    'j["stages"] == ["a \"quoted\", name", "back\\slash\ttab", "\u00e9t\u00e9/</script>", "s4"]'

"$BIN" --json - <"$FOUR" >"$TMP/out" 2>"$TMP/err"
RC=$?
expect_rc "'-' reads standard input: exit 0" 0
same "'-' reads standard input: same JSON as four.csv" "$TMP/refdef.json"

# ---------------------------------------------------------------------------------------------
echo "== policies"

for p in optimal store-all every-k sqrt greedy; do
    run --json --policy "$p" "$FOUR"
    expect_rc "--policy $p: exit 0" 0
    jexpr "--policy $p: JSON names the policy" "$FOUR" "j['policy'] == '$p' and j['feasible'] is True"
    jexpr "--policy $p: one [F,4,1], B 4..1 in order" "$FOUR" 'ops_shape_ok(j, 4)'
    jsim "--policy $p: schedule replays to the reported time and peak" "$FOUR"
    run --policy="$p" "$FOUR"
    expect_rc "--policy=$p (text mode): exit 0" 0
done

run --json --policy store-all "$FOUR"
jexpr "--policy store-all: time 12 peak 30720" "$FOUR" 'j["time"] == 12 and j["peak"] == 30720'
jexpr "--policy store-all: guarantee is not all-schedules-optimal or is trivially so" "$FOUR" 'j["guarantee"] in ("heuristic", "all-schedules", "persistent")'

run --json --policy every-k --k 2 --budget 256000 "$FOUR"
expect_rc "--policy every-k --k 2: exit 0" 0
jexpr "--policy every-k --k 2: k is 2" "$FOUR" 'j["k"] == 2'
jsim "--policy every-k --k 2: schedule replays to the reported time and peak" "$FOUR"

# Every policy, every budget: feasible plans fit and replay exactly, are never faster than the
# optimal plan, infeasible answers name a larger minimum, and the minimum budget works.
for csv in "$FOUR" "$GPT"; do
    name=$(basename "$csv")
    if [ "$csv" = "$FOUR" ]; then budgets="30720 25600 20480 17920 15360 14080 12800 11520 10240 2560"; else
        budgets="3GiB 2GiB 1500MiB 1GiB 800MiB 600MiB 500MiB 400MiB"; fi
    for b in $budgets; do
        run --json --budget "$b" "$csv"
        opt_rc=$RC
        cp "$TMP/out" "$TMP/opt.json"
        for p in optimal store-all every-k sqrt greedy; do
            d="$name --policy $p --budget $b"
            run --json --policy "$p" --budget "$b" "$csv"
            if [ "$RC" -eq 0 ]; then
                jsim "$d: feasible plan fits and replays exactly" "$csv"
                if [ "$opt_rc" -eq 0 ]; then
                    jexpr "$d: not faster than optimal" "$csv" \
                        "j['time'] >= json.load(open('$TMP/opt.json'))['time'] - 1e-9"
                else
                    fail "$d: feasible although optimal says infeasible"
                fi
                jexpr "$d: min_budget <= budget" "$csv" 'j["min_budget"] <= j["budget"]'
            elif [ "$RC" -eq 3 ]; then
                jexpr "$d: infeasible, min_budget > budget" "$csv" 'j["min_budget"] > j["budget"] and j["ops"] == []'
            else
                fail "$d: exit 0 or 3" "exit $RC: $(errline)"
            fi
        done
    done
done

for p in optimal store-all every-k sqrt greedy; do
    for csv in "$FOUR" "$GPT"; do
        name=$(basename "$csv")
        run --json --policy "$p" --budget 1 "$csv"
        if [ "$RC" -ne 3 ]; then fail "$name --policy $p --budget 1: exit 3" "exit $RC"; continue; fi
        mb=$("$PY" -c 'import json,sys; print(json.load(sys.stdin)["min_budget"])' <"$TMP/out")
        run --json --policy "$p" --budget "$mb" "$csv"
        expect_rc "$name --policy $p: its min_budget $mb is feasible" 0
        [ "$RC" -eq 0 ] && jsim "$name --policy $p --budget $mb: replays exactly" "$csv"
        run --json --policy "$p" --budget "$((mb - 1))" "$csv"
        expect_rc "$name --policy $p: min_budget-1 = $((mb - 1)) is infeasible" 3
    done
done

run --json "$GPT"
expect_rc "gpt2_mlp.csv default budget: exit 0" 0
jexpr "gpt2_mlp.csv default budget: store-all time and peak" "$GPT" 'j["time"] == j["store_all_time"] and j["peak"] == j["store_all_peak"] and j["n_recomputed"] == 0'
jexpr "gpt2_mlp.csv: 12 stages, one [F,12,1], B 12..1" "$GPT" 'len(j["stages"]) == 12 and ops_shape_ok(j, 12)'
run --budget 1GiB "$GPT"
expect_rc "gpt2_mlp.csv --budget 1GiB (text mode): exit 0" 0

# ---------------------------------------------------------------------------------------------
echo "== bad input (exit 2, message names file:line)"

HDR='name,fwd_time,bwd_time,out_bytes,tape_bytes,fwd_workspace,bwd_workspace'
ROW='s,1,2,10,20,0,0'
badcase() { # DESC CONTENT WANT_IN_STDERR...
    local desc=$1 content=$2 f=$TMP/bad.csv s
    shift 2
    printf '%b' "$content" >"$f"
    run --json "$f"
    expect_rc "$desc: exit 2" 2
    for s in "$@"; do err_has "$desc: stderr has '$s'" "$s"; done
    if [ -s "$TMP/out" ]; then fail "$desc: nothing on stdout" "$(head -c 100 "$TMP/out")"; else pass "$desc: nothing on stdout"; fi
}
B=$TMP/bad.csv
badcase "missing column" 'name,fwd_time,bwd_time,out_bytes,fwd_workspace,bwd_workspace\ns,1,2,10,0,0\n' "$B:1:" "tape_bytes"
badcase "duplicate column" "$HDR,out_bytes\\n$ROW,10\\n" "$B:1:" "out_bytes"
badcase "unknown column" "$HDR,colour\\n$ROW,red\\n" "$B:1:" "colour"
badcase "empty column name" "$HDR,\\n$ROW,\\n" "$B:1:"
badcase "negative size" "$HDR\\n$ROW\\ns,1,2,-10,20,0,0\\n$ROW\\n" "$B:3:" "out_bytes" "-10"
badcase "non-numeric time" "# c\\n$HDR\\n$ROW\\ns,abc,2,10,20,0,0\\n" "$B:4:" "fwd_time" "'abc'"
badcase "negative time" "$HDR\\ns,1,-2,10,20,0,0\\n" "$B:2:" "bwd_time"
badcase "NaN time" "$HDR\\ns,nan,2,10,20,0,0\\n" "$B:2:" "fwd_time"
badcase "infinite time" "$HDR\\ns,1e999,2,10,20,0,0\\n" "$B:2:" "fwd_time"
badcase "time with garbage" "$HDR\\ns,1.5ms,2,10,20,0,0\\n" "$B:2:" "fwd_time"
badcase "too few fields" "$HDR\\ns,1,2,10,20,0\\n" "$B:2:"
badcase "too many fields" "$HDR\\n$ROW\\n$ROW,0\\n" "$B:3:"
badcase "empty file" "" "$B:1:"
badcase "only comments and blank lines" "# nothing\\n\\n" "$B:"
badcase "header but no stages" "$HDR\\n" "$B:1:"
badcase "size overflow (2^64)" "$HDR\\ns,1,2,18446744073709551616,20,0,0\\n" "$B:2:" "out_bytes"
badcase "size with a + sign" "$HDR\\ns,1,2,+10,20,0,0\\n" "$B:2:" "out_bytes"
badcase "fractional size" "$HDR\\ns,1,2,10.5,20,0,0\\n" "$B:2:" "out_bytes"
badcase "size with garbage" "$HDR\\ns,1,2,10,20kb,0,0\\n" "$B:2:" "tape_bytes"
badcase "empty size field" "$HDR\\ns,1,2,10,,0,0\\n" "$B:2:" "tape_bytes"
badcase "empty time field" "$HDR\\ns,,2,10,20,0,0\\n" "$B:2:" "fwd_time"
badcase "empty name" "$HDR\\n,1,2,10,20,0,0\\n" "$B:2:" "name"
badcase "no_checkpoint not 0/1" "$HDR,no_checkpoint\\n$ROW,2\\n" "$B:2:" "no_checkpoint"
badcase "unterminated quote" "$HDR\\n\"s,1,2,10,20,0,0\\n" "$B:2:"
badcase "invalid UTF-8 name" "$HDR\\n\\xff\\xfe,1,2,10,20,0,0\\n" "$B:2:"

longcsv() { # N: a chain of N identical stages on stdout
    "$PY" -c 'import sys
print("name,fwd_time,bwd_time,out_bytes,tape_bytes,fwd_workspace,bwd_workspace")
for i in range(int(sys.argv[1])): print("s%d,1,2,10,20,0,0" % i)' "$1"
}
longcsv 4097 >"$TMP/long.csv"
run --json --policy sqrt "$TMP/long.csv"
expect_rc "4097 stages (more than CKPT_MAX_STAGES): exit 2" 2
err_has "4097 stages: stderr names the line of the extra stage" "$TMP/long.csv:4098:"
longcsv 4096 >"$TMP/long.csv"
for p in optimal greedy sqrt every-k; do
    run --json --policy "$p" "$TMP/long.csv"
    case $RC in
    0) pass "4096 stages --policy $p: planned (exit 0)" ;;
    2) if grep -qE 'every-k|sqrt' "$TMP/err"; then pass "4096 stages --policy $p: too long for the policy (exit 2), names one that works"
       else fail "4096 stages --policy $p: exit 2 should name a policy that works" "$(errline)"; fi ;;
    *) fail "4096 stages --policy $p: exit 0, or 2 when too long for the policy" "exit $RC: $(errline)" ;;
    esac
done

run --json "$TMP/does-not-exist.csv"
expect_rc "missing file: exit 2" 2
err_has "missing file: stderr names the file" "does-not-exist.csv"

# ---------------------------------------------------------------------------------------------
echo "== usage"

run --help
expect_rc "--help: exit 0" 0
out_has "--help: prints usage" "usage:"
run --policy fastest "$FOUR"
expect_rc "bad --policy: exit 2" 2
err_has "bad --policy: stderr names the value" "fastest"
err_has "bad --policy: usage on stderr" "usage:"
for b in abc -5 "" 1.5 12x 99999999999999999999 18014398509481984GiB; do
    run --budget "$b" "$FOUR"
    expect_rc "bad --budget '$b': exit 2" 2
    err_has "bad --budget '$b': stderr mentions --budget" "--budget"
done
run --budget 30KiB --json "$FOUR"
expect_rc "--budget 30KiB: exit 0" 0
jexpr "--budget 30KiB is 30720 bytes" - 'j["budget"] == 30720'
run --k abc --policy every-k "$FOUR"
expect_rc "bad --k: exit 2" 2
run --frobnicate "$FOUR"
expect_rc "unknown option: exit 2" 2
err_has "unknown option: usage on stderr" "usage:"
run --budget
expect_rc "--budget without a value: exit 2" 2
run --json
expect_rc "no input file: exit 2" 2
run "$FOUR" "$FOUR"
expect_rc "two input files: exit 2" 2

# ---------------------------------------------------------------------------------------------
echo "== offload (--bandwidth, --host-budget, --time-unit)"
OFF=$EX/offload.csv
run --policy optimal --budget 400MiB --json "$OFF"
expect_rc "offload.csv optimal 400MiB: exit 0" 0
cp "$TMP/out" "$TMP/opt.json"
run --policy offload --bandwidth 25e9 --time-unit ms --budget 400MiB --json "$OFF"
expect_rc "offload.csv offload 400MiB at 25 GB/s: exit 0" 0
err_empty "offload: nothing on stderr"
jparse "offload: JSON parses"
jexpr "offload: policy, link and unit echoed" - 'j["policy"] == "offload" and j["bandwidth"] == 25e9 and j["bandwidth_h2d"] == 25e9 and j["time_unit"] == "ms" and j["host_budget"] is None'
jexpr "offload: peak within the budget, makespan no less than compute" - 'j["peak"] <= j["budget"] and j["time"] >= j["compute_time"] - 1e-9'
jexpr "offload: O and P ops in the schedule, one P per O" - 'j["n_offloaded"] > 0 and sum(o[0] in ("O", "OT") for o in j["ops"]) == j["n_offloaded"] == sum(o[0] in ("P", "PT") for o in j["ops"])'
jexpr "offload: F and B ops still form a valid backward" - 'ops_shape_ok(dict(ops=[o for o in j["ops"] if o[0] in "FB"]), j["n_stages"])'
jexpr "offload: faster than optimal at the same budget" "$OFF" 'j["time"] < json.load(open("'"$TMP/opt.json"'"))["time"]'
jexpr "offload: store-all speed at 0.31x its memory (copies hidden)" - 'abs(j["time"] - j["store_all_time"]) < 1e-9 and j["peak_ratio"] < 0.32'
cp "$TMP/out" "$TMP/off_ms.json"
run --policy offload --bandwidth 25e6 --time-unit s --budget 400MiB --json "$OFF"
jexpr "offload: 25e9 B/s with ms times plans as 25e6 B/s with times read as s" - 'j["ops"] == json.load(open("'"$TMP/off_ms.json"'"))["ops"]'
run --policy offload --bandwidth 25e9 --time-unit ms --budget 400MiB --host-budget 300MiB --json "$OFF"
expect_rc "offload with --host-budget 300MiB: exit 0" 0
jexpr "offload: host peak within --host-budget" - 'j["host_budget"] == 300 * 2**20 and j["host_peak"] <= j["host_budget"] and j["peak"] <= j["budget"]'
# 150 MiB: every idle buffer offloaded still leaves copies in flight over the budget; W ops
# (compute waits for a copy, the buffer goes) trade a little time for that memory.
run --policy optimal --budget 150MiB --json "$OFF"
cp "$TMP/out" "$TMP/opt150.json"
run --policy offload --bandwidth 25e9 --time-unit ms --budget 150MiB --json "$OFF"
expect_rc "offload 150MiB: exit 0" 0
jexpr "offload 150MiB: W ops, each after an O of its buffer" - 'any(o[0] in ("W", "WT") for o in j["ops"]) and all(any(p[0] == "O" + o[0][1:] and p[1] == o[1] for p in j["ops"][:i]) for i, o in enumerate(j["ops"]) if o[0] in ("W", "WT"))'
jexpr "offload 150MiB: within the budget, faster than optimal there" - 'j["peak"] <= j["budget"] and j["time"] < json.load(open("'"$TMP/opt150.json"'"))["time"]'
run --policy offload --bandwidth 25e9 --time-unit ms --budget 150MiB "$OFF"
out_has "offload 150MiB text mode: W in the legend" "WTi"
run --policy offload --bandwidth 25e9 --time-unit ms --budget 400MiB "$OFF"
expect_rc "offload text mode: exit 0" 0
out_has "offload text mode: link line" "link           2.5e+10 B/s"
out_has "offload text mode: OT/PT in the schedule legend" "OTi / PTi"
run --policy offload --budget 400MiB --json "$OFF"
expect_rc "offload without --bandwidth: exit 0" 0
err_has "offload without --bandwidth: warns it plans as optimal" "no link"
jexpr "offload without --bandwidth: no offloads, optimal's time" - 'j["n_offloaded"] == 0 and j["time"] == json.load(open("'"$TMP/opt.json"'"))["time"]'
run --policy optimal --bandwidth 25e9 --budget 400MiB --json "$OFF"
expect_rc "--bandwidth with optimal: exit 0" 0
err_has "--bandwidth with optimal: warning" "ignored"
for b in 0 -1 abc 1e999 nan; do
    run --policy offload --bandwidth "$b" "$OFF"
    expect_rc "bad --bandwidth '$b': exit 2" 2
done
run --policy offload --bandwidth 1e9 --time-unit min "$OFF"
expect_rc "bad --time-unit: exit 2" 2
run --policy offload --bandwidth 1e9 --host-budget lots "$OFF"
expect_rc "bad --host-budget: exit 2" 2

# ---------------------------------------------------------------------------------------------
echo "== tape options (tape_bytes_K, bwd_extra_K)"
# s1 (a = 256) has tapes 1024 (option 0, b = 2), 768 (+0.5), 512 (+0.75), 256 (+1); s2 has none.
# Without recomputation T[1] is live through F(2), whose peak is 256 + t + 256 + 256 (X[1], T[1],
# X[2] and T[2]): each budget below forces the fastest option that fits, with time 1 + 1 + 2 +
# (2 + extra). Below 1024 only recomputing F(1) fits: F1 (scratch option 3) F2+ B2 F1+/3 B1, at 768.
OPT=$TMP/options.csv
printf '%s\n' \
    'name,fwd_time,bwd_time,out_bytes,tape_bytes,fwd_workspace,bwd_workspace,tape_bytes_1,bwd_extra_1,tape_bytes_2,bwd_extra_2,tape_bytes_3,bwd_extra_3' \
    's1,1,2,256,1024,0,0,768,0.5,512,0.75,256,1' \
    's2,1,2,256,256,0,0,,,,,,' >"$OPT"
for c in 0:0:6:1792 1792:0:6:1792 1791:1:6.5:1536 1536:1:6.5:1536 1280:2:6.75:1280 1024:3:7:1024; do
    IFS=: read -r b o t p <<<"$c"
    run --json --budget "$b" "$OPT"
    expect_rc "options --budget $b: exit 0" 0
    err_empty "options --budget $b: nothing on stderr (the plan replays in ckpt_schedule_simulate)"
    jexpr "options --budget $b: [F,1,1,$o] F2+ B2 B1, time $t, peak $p" "$OPT" \
        "j['ops'] == [['F', 1, 1, $o], ['F', 2, 1, 0], ['B', 2], ['B', 1]] and j['time'] == $t and j['peak'] == $p"
    jexpr "options --budget $b: stage_plan tape_option [$o, 0]" "$OPT" \
        "[s['tape_option'] for s in j['stage_plan']] == [$o, 0]"
    jsim "options --budget $b: schedule replays to the reported time and peak" "$OPT"
done
run --json --budget 768 "$OPT"
expect_rc "options --budget 768: exit 0" 0
jexpr "options --budget 768: F1 F2+ B2 [F,1,1,3] B1, time 8, peak 768, min_budget 768" "$OPT" \
    "j['ops'] == [['F', 1, 0], ['F', 2, 1, 0], ['B', 2], ['F', 1, 1, 3], ['B', 1]] and j['time'] == 8 and j['peak'] == 768 and j['min_budget'] == 768"
jsim "options --budget 768: schedule replays to the reported time and peak" "$OPT"
run --json --budget 767 "$OPT"
expect_rc "options --budget 767: exit 3" 3
err_has "options --budget 767: stderr names the minimum budget 768" "every budget from 768 bytes plans"
run --budget 1280 "$OPT"
expect_rc "options text mode --budget 1280: exit 0" 0
out_has "options text mode: schedule F1+/2 F2+ B2 B1 (no /k on s2, which has no options)" "schedule  F1+/2 F2+ B2 B1"
out_has "options text mode: legend explains Fi+/k" "Fi+/k forward keeping its tape in tape option k"
out_has "options text mode: summary line" "tape options   1 stage with options; 1 tape kept in an option other than 0"
out_has "options text mode: table has an option column" "tape kept  option  fwd runs"
run --budget 1792 "$OPT"
out_has "options text mode --budget 1792: F1+/0 on the stage with options" "schedule  F1+/0 F2+ B2 B1"
run --budget 1280 "$FOUR"
if grep -qF "option" "$TMP/out"; then fail "four.csv text mode: no option column or legend without options"; else pass "four.csv text mode: no option column or legend without options"; fi

# Columns in another order, option pairs first: the same plans.
printf '%s\n' \
    'bwd_extra_2,tape_bytes_3,bwd_extra_1,bwd_extra_3,tape_bytes_1,name,tape_bytes_2,fwd_time,bwd_time,out_bytes,tape_bytes,fwd_workspace,bwd_workspace' \
    '0.75,256,0.5,1,768,s1,512,1,2,256,1024,0,0' \
    ', , , , ,s2,,1,2,256,256,0,0' >"$TMP/options_r.csv"
run --json --budget 1280 "$OPT"
cp "$TMP/out" "$TMP/opt1280.json"
run --json --budget 1280 "$TMP/options_r.csv"
expect_rc "options, reordered columns: exit 0" 0
same "options, reordered columns --budget 1280: same JSON" "$TMP/opt1280.json"

# The heuristics keep every tape in option 0; F with its tape always has 4 elements.
for p in store-all every-k sqrt greedy; do
    run --json --policy "$p" --budget 0 "$OPT"
    expect_rc "options --policy $p: exit 0" 0
    jexpr "options --policy $p: every F with its tape is [F, i, 1, 0]" "$OPT" \
        "all(o[3] == 0 for o in j['ops'] if o[0] == 'F' and o[2] == 1) and all(len(o) == 3 + o[2] for o in j['ops'] if o[0] == 'F')"
    jsim "options --policy $p: schedule replays to the reported time and peak" "$OPT"
done
run --json --policy store-all "$OPT"
jexpr "options --policy store-all (default budget): [F,1,1,0] [F,2,1,0] B2 B1, time 6, peak 1792" "$OPT" \
    "j['ops'] == [['F', 1, 1, 0], ['F', 2, 1, 0], ['B', 2], ['B', 1]] and j['time'] == 6 and j['peak'] == 1792"
run --json --policy store-all "$FOUR"
jexpr "four.csv --policy store-all: [F, i, 1, 0] without options" "$FOUR" \
    "[o for o in j['ops'] if o[0] == 'F'] == [['F', i, 1, 0] for i in (1, 2, 3, 4)]"

# The GPT-2 example with options: feasible plans replay, are never slower than without options
# (option 0 is gpt2_mlp.csv's tape) and options lower the minimum budget.
GO=$EX/gpt2_options.csv
if [ -r "$GO" ]; then
    for b in 2GiB 1GiB 500MiB; do
        run --json --budget "$b" "$GPT"
        cp "$TMP/out" "$TMP/noopt.json"
        run --json --budget "$b" "$GO"
        expect_rc "gpt2_options.csv --budget $b: exit 0" 0
        err_empty "gpt2_options.csv --budget $b: nothing on stderr"
        jsim "gpt2_options.csv --budget $b: schedule replays to the reported time and peak" "$GO"
        jexpr "gpt2_options.csv --budget $b: some tape in option 1 or 2, no slower than gpt2_mlp.csv" "$GO" \
            "any(s['tape_option'] > 0 for s in j['stage_plan']) and j['time'] <= json.load(open('$TMP/noopt.json'))['time'] + 1e-9"
    done
    jexpr "gpt2_options.csv: min_budget below gpt2_mlp.csv's" "$GO" "j['min_budget'] < json.load(open('$TMP/noopt.json'))['min_budget']"
    run --json --policy offload --bandwidth 25e9 --time-unit ms --budget 500MiB "$GO"
    expect_rc "gpt2_options.csv --policy offload: exit 0" 0
    err_empty "gpt2_options.csv --policy offload: nothing on stderr (the plan replays in the offload model)"
    jexpr "gpt2_options.csv --policy offload: F ops well formed" "$GO" \
        "all(len(o) == 3 + o[2] and (o[2] == 0 or 0 <= o[3] <= 2) for o in j['ops'] if o[0] == 'F')"
else
    fail "missing example $GO"
fi

# Bad tape options: exit 2, the message names the file, the line and the column.
OH='name,fwd_time,bwd_time,out_bytes,tape_bytes,fwd_workspace,bwd_workspace,tape_bytes_1,bwd_extra_1,tape_bytes_2,bwd_extra_2'
badcase "tape_bytes_1 without bwd_extra_1 in the header" "$HDR,tape_bytes_1\\n$ROW,10\\n" "$B:1:" "'tape_bytes_1' without column 'bwd_extra_1'"
badcase "bwd_extra_2 without tape_bytes_2 in the header" "$HDR,tape_bytes_1,bwd_extra_1,bwd_extra_2\\n$ROW,10,1,1\\n" "$B:1:" "'bwd_extra_2' without column 'tape_bytes_2'"
badcase "option 2 columns without option 1's" "$HDR,tape_bytes_2,bwd_extra_2\\n$ROW,10,1\\n" "$B:1:" "tape_bytes_2" "tape_bytes_1"
badcase "tape_bytes_4 (at most 3 options)" "$HDR,tape_bytes_4,bwd_extra_4\\n$ROW,10,1\\n" "$B:1:" "tape_bytes_4"
badcase "duplicate bwd_extra_1" "$HDR,tape_bytes_1,bwd_extra_1,bwd_extra_1\\n$ROW,10,1,1\\n" "$B:1:" "bwd_extra_1"
badcase "tape_bytes_1 given, bwd_extra_1 empty" "$OH\\n$ROW,,,,\\n$ROW,10,,,\\n" "$B:3:" "column bwd_extra_1: empty field"
badcase "bwd_extra_2 given, tape_bytes_2 empty" "$OH\\n$ROW,10,1,,0.5\\n" "$B:2:" "column tape_bytes_2: empty field"
badcase "option 2 without option 1 in a row" "$OH\\n$ROW,,,,\\n$ROW,,,10,1\\n" "$B:3:" "column tape_bytes_2" "without option 1"
badcase "negative bwd_extra_1" "$OH\\n$ROW,10,-1,,\\n" "$B:2:" "column bwd_extra_1" "'-1'"
badcase "non-numeric bwd_extra_2" "$OH\\n$ROW,10,1,5,fast\\n" "$B:2:" "column bwd_extra_2" "'fast'"
badcase "NaN bwd_extra_1" "$OH\\n$ROW,10,nan,,\\n" "$B:2:" "column bwd_extra_1"
badcase "infinite bwd_extra_1" "$OH\\n$ROW,10,1e999,,\\n" "$B:2:" "column bwd_extra_1"
badcase "non-numeric tape_bytes_1" "$OH\\n$ROW,abc,1,,\\n" "$B:2:" "column tape_bytes_1" "'abc'"
badcase "fractional tape_bytes_2" "$OH\\n$ROW,10,1,2.5,1\\n" "$B:2:" "column tape_bytes_2"
badcase "negative tape_bytes_1" "$OH\\n$ROW,-10,1,,\\n" "$B:2:" "column tape_bytes_1"

# ---------------------------------------------------------------------------------------------
# --sweep PREFIX: every policy over a range of budgets, as PREFIX.csv and PREFIX.svg.
cat >"$TMP/sweep.py" <<'PYEOF'
import csv, sys
import xml.etree.ElementTree as ET
prefix, want_policies = sys.argv[1], sys.argv[2].split(',')
NS = '{http://www.w3.org/2000/svg}'
with open(prefix + '.csv', newline='') as fh:
    rows = list(csv.DictReader(fh))
assert rows, 'no rows'
assert list(rows[0].keys()) == ['policy', 'budget', 'peak', 'peak_ratio', 'time', 'time_ratio',
                                'arena', 'k', 'recomputed', 'host_peak'], list(rows[0].keys())
sa_peak = max(int(r['budget']) for r in rows)
for r in rows:
    assert r['policy'] in want_policies, r
    b, p, a = int(r['budget']), int(r['peak']), int(r['arena'])
    assert p <= b and p <= a <= b, r
    assert abs(float(r['peak_ratio']) - p / sa_peak) < 1e-12, r
    assert float(r['time_ratio']) >= 1 - 1e-9, r
sa = [r for r in rows if r['policy'] == 'store-all' and int(r['budget']) == sa_peak]
assert len(sa) == 1 and float(sa[0]['peak_ratio']) == 1 and float(sa[0]['time_ratio']) == 1, sa
feasible = sorted({r['policy'] for r in rows})
root = ET.parse(prefix + '.svg').getroot()
assert root.tag == NS + 'svg', root.tag
paths = [e.get('data-policy') for e in root.iter(NS + 'path')]
assert sorted(paths) == feasible, (paths, feasible)
texts = ' '.join(''.join(e.itertext()) for e in root.iter(NS + 'text'))
for want in ['peak / store-all peak', 'predicted time / store-all time'] + want_policies:
    assert want in texts, want
print(len(rows), 'rows,', len(paths), 'paths:', ' '.join(paths))
PYEOF
# sweep DESC PREFIX POLICIES: the files of the last --sweep run pass sweep.py
sweep() {
    local msg
    if msg=$("$PY" "$TMP/sweep.py" "$2" "$3" 2>&1); then pass "$1"; else fail "$1" "$(echo "$msg" | tail -3 | tr '\n' ' ')"; fi
}
POL5=store-all,every-k,sqrt,greedy,optimal
mkdir -p "$TMP/sweep"
run --sweep "$TMP/sweep/gpt2" --points 6 "$GPT"
expect_rc "--sweep gpt2_mlp.csv: exit 0" 0
err_empty "--sweep gpt2_mlp.csv: nothing on stderr"
out_has "--sweep gpt2_mlp.csv: names the files" "wrote $TMP/sweep/gpt2.csv"
out_has "--sweep gpt2_mlp.csv: 6 budgets" "6 budgets from"
sweep "--sweep gpt2_mlp.csv: CSV rows valid, SVG parses, one path per feasible policy" "$TMP/sweep/gpt2" "$POL5"
if grep -q '^offload,' "$TMP/sweep/gpt2.csv"; then fail "--sweep without --bandwidth: no offload rows"; else pass "--sweep without --bandwidth: no offload rows"; fi
# The lowest budget is optimal's min_budget, and optimal's row there is what --budget plans.
run --json --budget 1 "$GPT"
lo=$("$PY" -c "import json; print(json.load(open('$TMP/out'))['min_budget'])")
row=$(grep "^optimal,$lo," "$TMP/sweep/gpt2.csv")
run --json --budget "$lo" "$GPT"
jexpr "--sweep gpt2_mlp.csv: optimal's row at its min_budget $lo matches --budget $lo" "$GPT" \
    "'$row'.split(',')[2] == str(j['peak']) and abs(float('$row'.split(',')[4]) - j['time']) < 1e-9 * j['time']"

run --sweep "$TMP/sweep/four.svg" --points 2 "$FOUR"
expect_rc "--sweep four.csv --points 2 (prefix four.svg): exit 0" 0
if [ -s "$TMP/sweep/four.csv" ] && [ -s "$TMP/sweep/four.svg" ] && [ ! -e "$TMP/sweep/four.svg.csv" ]; then
    pass "--sweep PREFIX.svg: writes PREFIX.csv and PREFIX.svg"
else
    fail "--sweep PREFIX.svg: writes PREFIX.csv and PREFIX.svg"
fi
sweep "--sweep four.csv --points 2: CSV and SVG valid" "$TMP/sweep/four" "$POL5"
if [ "$(grep -c '^optimal,' "$TMP/sweep/four.csv")" = 2 ] && grep -q '^optimal,12800,' "$TMP/sweep/four.csv" &&
    grep -q '^optimal,30720,' "$TMP/sweep/four.csv"; then
    pass "--sweep four.csv --points 2: optimal at 12800 and 30720"
else
    fail "--sweep four.csv --points 2: optimal at 12800 and 30720" "$(grep '^optimal' "$TMP/sweep/four.csv" | tr '\n' ' ')"
fi

if [ -r "$EX/offload.csv" ]; then
    run --sweep "$TMP/sweep/off" --points 5 --bandwidth 25e9 --time-unit ms "$EX/offload.csv"
    expect_rc "--sweep offload.csv --bandwidth: exit 0" 0
    err_empty "--sweep offload.csv --bandwidth: nothing on stderr"
    sweep "--sweep offload.csv --bandwidth: six policies, offload included" "$TMP/sweep/off" "$POL5,offload"
fi

# A file name that needs escaping in XML lands in the title, escaped.
ODD="$TMP/sweep/a&b<c>\"d'.csv"
cp "$FOUR" "$ODD"
run --sweep "$TMP/sweep/odd" --points 3 "$ODD"
expect_rc "--sweep on a file named with & < > \" ': exit 0" 0
sweep "--sweep on a file named with & < > \" ': SVG parses" "$TMP/sweep/odd" "$POL5"
if "$PY" -c "import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); sys.exit(not any(sys.argv[2] in ''.join(t.itertext()) for t in r.iter('{http://www.w3.org/2000/svg}text')))" \
    "$TMP/sweep/odd.svg" "$ODD"; then
    pass "--sweep: the title holds the file name unchanged"
else
    fail "--sweep: the title holds the file name unchanged"
fi

# A chain too long for greedy and optimal (CKPT_CUBIC_MAX_STAGES, 1024): they are left out with a
# warning, the other three are swept.
longcsv 1025 >"$TMP/sweep/long.csv"
run --sweep "$TMP/sweep/long" --points 3 "$TMP/sweep/long.csv"
expect_rc "--sweep on 1025 stages: exit 0" 0
err_has "--sweep on 1025 stages: greedy left out, with a warning" "policy greedy left out"
err_has "--sweep on 1025 stages: optimal left out, with a warning" "policy optimal left out"
sweep "--sweep on 1025 stages: store-all, every-k and sqrt swept, nothing else" "$TMP/sweep/long" "store-all,every-k,sqrt"

# Bad --sweep and --points: exit 2 with a message, no files.
for pts in 0 1 1001 abc -3 ""; do
    run --sweep "$TMP/sweep/bad" --points "$pts" "$FOUR"
    expect_rc "--points '$pts': exit 2" 2
    err_has "--points '$pts': the message names --points" "--points"
done
run --sweep "$TMP/sweep/bad" "$FOUR" --points
expect_rc "--points without a value: exit 2" 2
run --sweep "$TMP/no/such/dir/x" "$FOUR"
expect_rc "--sweep into a missing directory: exit 2" 2
err_has "--sweep into a missing directory: cannot write" "cannot write '$TMP/no/such/dir/x.csv'"
run --sweep "" "$FOUR"
expect_rc "--sweep '': exit 2" 2
err_has "--sweep '': says the prefix is empty" "empty file prefix"
run --sweep "$TMP/sweep/" "$FOUR"
expect_rc "--sweep DIR/: exit 2" 2
err_has "--sweep DIR/: asks for a file prefix" "names a directory"
run "$FOUR" --sweep
expect_rc "--sweep without a value: exit 2" 2
err_has "--sweep without a value: says so" "--sweep needs a value"
run --sweep "$TMP/sweep/bad" --json "$FOUR"
expect_rc "--sweep with --json: exit 2" 2
if ls "$TMP/sweep" | grep -q '^bad'; then fail "bad --sweep runs write no files" "$(ls "$TMP/sweep" | tr '\n' ' ')"; else pass "bad --sweep runs write no files"; fi
run --points 5 "$FOUR"
expect_rc "--points without --sweep: exit 0" 0
err_has "--points without --sweep: warns it is ignored" "--points is for --sweep"

# ---------------------------------------------------------------------------------------------
echo "== --threads"
# 60 stages (up to 4 planning threads: one per 16 stages or part of them), sizes and times varied
L=$TMP/long60.csv
{
    echo "name,fwd_time,bwd_time,out_bytes,tape_bytes,fwd_workspace,bwd_workspace"
    for i in $(seq 1 60); do
        echo "s$i,$((1 + i % 4)),$((2 + i % 5)),$((512 * (1 + i * 7 % 13))),$((512 * (i * 5 % 11))),$((512 * (i % 3))),0"
    done
} >"$L"
run --json --budget 40KiB "$L"
expect_rc "60 stages --budget 40KiB: exit 0" 0
cp "$TMP/out" "$TMP/ref60.json"
for th in 2 3; do
    run --json --budget 40KiB --threads "$th" "$L"
    expect_rc "60 stages --threads $th: exit 0" 0
    same "60 stages --threads $th: same JSON as one thread" "$TMP/ref60.json"
done
for th in -1 abc ""; do
    run --threads "$th" "$FOUR"
    expect_rc "--threads '$th': exit 2" 2
    err_has "--threads '$th': the message names --threads" "--threads"
done

# ---------------------------------------------------------------------------------------------
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
