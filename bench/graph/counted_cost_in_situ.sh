#!/usr/bin/env bash
# What a counted range costs the job where it runs, against what the tracer's timing of it reads
# (issue 35; docs/simulation.md, "Probe steps").
#
# A probe step's measure is its recorded neighbours' length less its own, plus what the ranges it
# counted cost it (k × c): c comes from the tracer timing 256 counted ranges right after each
# probe step. This bench checks c against the job: traced with every step a probe step
# (--cost-probe-steps 1), `cpu_train --paused-blocks` alternates blocks whose inner ranges are
# all counted with paused blocks (recording paused: NVTX's slots are empty, so a call costs what
# it costs untraced). A counted block's median step less its paused neighbours', over the ranges
# it counted, is what a counted range cost the job there; each block prints it beside the timing
# the tracer read after its steps, and the state of the machine (cpu_train's state probe).
#
# Prints one row per block whose paused neighbours agree within 5 % and whose state probe is
# within 10 % of theirs, sorted by the paused step, and per run the median of both figures in the
# fast state (paused steps within 15 % of the run's fastest) and in the slow one.
#
#   bench/graph/counted_cost_in_situ.sh                 # 3 runs, binaries from build/release/bin
#   RUNS=1 BIN=build/release/bin bench/graph/counted_cost_in_situ.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/release/bin}
RUNS=${RUNS:-3}
BLOCK=${BLOCK:-30}
STEPS=${STEPS:-2400}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for run in $(seq 1 "$RUNS"); do
  "$BIN/dreamscope" trace -f --cost-probe-steps 1 -o "$work/run.db" -- "$BIN/cpu_train" --steps "$STEPS" \
    --fine-annotations --workers 0 --prep-passes 1 --paused-blocks "$BLOCK" --probe --data "$work/data" \
    >"$work/run.out" 2>/dev/null
  python3 - "$run" "$work/run.out" "$work/run.db" "$BLOCK" <<'PY'
import bisect, sqlite3, statistics as st, sys
run, out, path, block = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
steps = {}  # step -> (recorded, ns, state probe ns)
for line in open(out):
    f = line.split()
    if f and f[0] == "step_ns" and len(f) > 4:
        steps[int(f[1])] = (f[2] == "1", float(f[3]), float(f[4]))
db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
def string(s):
    row = db.execute("SELECT id FROM string WHERE value = ?", (s,)).fetchone()
    return row[0] if row else -1
counted = [r[0] for r in db.execute("SELECT payload FROM annotation WHERE name = ?", (string("cost probe step"),))]
if not counted:
    sys.exit(f"run {run}: no probe step in the trace")
k = st.median(counted)
timings = db.execute("SELECT start, dur FROM overhead WHERE kind = ? ORDER BY start",
                     (string("tracer_counted_ranges_timed"),)).fetchall()
starts = [t[0] for t in timings]
ends = db.execute("SELECT payload, start + dur FROM annotation WHERE name = ? AND category = ?",
                  (string("step"), string("step"))).fetchall()
timed = {}  # step -> ns a counted range, timed right after it
for number, end in ends:
    i = bisect.bisect_left(starts, end)
    if i < len(timings) and timings[i][0] - end < 1_000_000:
        timed[number] = timings[i][1] / 256
rows = []
for b in range(2, max(steps) // block - 1, 2):
    mine = range(b * block + 5, (b + 1) * block)
    sides = [range(c * block + 10, (c + 1) * block) for c in (b - 1, b + 1)]
    if not all(i in steps for i in mine) or not all(i in steps for s in sides for i in s):
        continue
    left, right = (st.median(steps[i][1] for i in s) for s in sides)
    if abs(left - right) > 0.05 * min(left, right):
        continue
    states = [st.median(steps[i][2] for i in r) for r in (mine, *sides)]
    if max(states) > 1.10 * min(states):
        continue
    paused = (left + right) / 2
    in_situ = (st.median(steps[i][1] for i in mine) - paused) / k
    c = [timed[i] for i in mine if i in timed]
    rows.append((paused, states[0], in_situ, st.median(c) if c else float("nan")))
print(f"run {run}: {k:.0f} ranges counted a step, {len(rows)} blocks compared")
print("  paused step  state probe  counted range in the job  timed after the step")
for paused, state, in_situ, c in sorted(rows):
    print(f"  {paused / 1e3:8.1f} us  {state / 1e3:8.1f} us  {in_situ:16.2f} ns  {c:14.2f} ns")
if rows:
    fast = min(r[0] for r in rows)
    for name, part in (("fast", [r for r in rows if r[0] <= 1.15 * fast]), ("slow", [r for r in rows if r[0] > 1.15 * fast])):
        if part:
            job, tim = st.median(r[2] for r in part), st.median(r[3] for r in part)
            print(f"  {name}: {len(part)} blocks, a counted range cost the job {job:.2f} ns, timed {tim:.2f} ns "
                  f"({job / tim:.2f}x)")
PY
done
