#!/usr/bin/env bash
# Records the fixtures of tests/data/cpu/cost_probes/: traced runs of cpu_train with a range per
# hidden neuron and sample, recording paused in every other block of 10 steps (the paused blocks
# are the untraced reference of the recorded ones, as in tests/data/cpu/paused_blocks), with
# cost probes (docs/tracing.md, "Cost probes") of 2 ms every 20 ms (--cost-probe 20:2), so that a
# run short enough to commit holds several.
# OverheadCorrection.RecordedCostProbesPredictTheirPausedNeighbours
# (tests/whatif/overhead_correction_test.cpp) replays each log with overhead correction and
# compares every recorded block's prediction with its paused neighbours.
#
#   CONFIG=pipeline STATE=slow tests/data/cpu/record_cost_probes.sh
#   PROBE_STEPS=5 CONFIG=pipeline STATE=fast tests/data/cpu/record_cost_probes.sh
#
# PROBE_STEPS=N records probe steps instead (--cost-probe-steps N, docs/simulation.md "Probe
# steps") into tests/data/cpu/probe_steps/, for OverheadCorrection.RecordedProbeStepsPredictTheir-
# PausedNeighbours; cpu_train then also times its state probe between steps (--probe), the last
# column of each step in the JSON.
#
# CONFIG: pipeline (--workers 0 --prep-passes 1) or workers2 (--workers 2). STATE: the state of
# the machine the run must be in, from its paused steps against the fast level (the fastest of
# 5 untraced runs' median steps, measured first): fast (the paused blocks' median within 10 %
# of it), slow (more than 15 % above it) or any. A run is recorded again, up to TRIES times
# (default 20), until it is in that state and the two paused neighbours of its recorded blocks
# agree within 5 % in most pairs. The log is kept gzipped (about a quarter of its size), as
# <config>-<state>.dslog.gz, with a JSON of every step's time.
set -euo pipefail
cd "$(dirname "$0")/../../.."
BIN=${BIN:-build/release/bin}
TRIES=${TRIES:-20}
CONFIG=${CONFIG:-pipeline}
STATE=${STATE:-any}
STEPS=${STEPS:-200}
BLOCK=10
out=tests/data/cpu/cost_probes
probe_args=(--cost-probe 20:2)
state_args=()
if [ -n "${PROBE_STEPS:-}" ]; then
  out=tests/data/cpu/probe_steps
  probe_args=(--cost-probe-steps "$PROBE_STEPS")
  state_args=(--probe)
fi
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case "$CONFIG" in
  pipeline) options="--workers 0 --prep-passes 1" ;;
  workers2) options="--workers 2" ;;
  *) echo "unknown configuration $CONFIG" >&2; exit 2 ;;
esac
# shellcheck disable=SC2206
args=(--steps "$STEPS" --data "$work/data" --fine-annotations $options)
"$BIN/cpu_train" "${args[@]}" >/dev/null # the dataset, and warm caches
fast=$(for _ in 1 2 3 4 5; do "$BIN/cpu_train" "${args[@]}" | awk '/^median_step_ns/ {print $2}'; done | sort -n | head -1)
for try in $(seq "$TRIES"); do
  rm -rf "$work/traced.db" "$work/traced.db.d"
  sync
  "$BIN/dreamscope" trace -f --keep-parts "${probe_args[@]}" -o "$work/traced.db" -- \
    "$BIN/cpu_train" "${args[@]}" "${state_args[@]}" --paused-blocks "$BLOCK" >"$work/steps.txt" 2>/dev/null
  verdict=$(python3 - "$work/steps.txt" "$BLOCK" "$fast" "$STATE" <<'PY'
import statistics, sys
block, fast, wanted = int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
paused = {}
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0] == "step_ns" and f[2] == "0":
        paused[int(f[1])] = float(f[3])
blocks = (max(paused) + 1) // block
side = lambda c: statistics.median(paused[i] for i in range(c * block + block // 2, (c + 1) * block))
pairs = [(side(b - 1), side(b + 1)) for b in range(2, blocks - 1, 2)]
stable = sum(abs(a - b) <= 0.05 * min(a, b) for a, b in pairs) >= 0.75 * len(pairs)
level = statistics.median(paused.values()) / fast
state = "fast" if level <= 1.10 else "slow" if level > 1.15 else "between"
print(1 if stable and (wanted == "any" or state == wanted) else 0, state, f"{level:.3f}")
PY
)
  echo "try $try: $verdict" >&2
  if [ "${verdict%% *}" = 1 ]; then break; fi
done
read -r ok state level <<<"$verdict"
gzip -9 -c "$work"/traced.db.d/*.dslog >"$out/$CONFIG-$state.dslog.gz"
python3 - "$out/$CONFIG-$state.json" "$CONFIG" "cpu_train ${args[*]} ${state_args[*]} --paused-blocks $BLOCK" "$ok" "$BLOCK" "$work/steps.txt" \
  "$fast" "$state" "$level" <<'PY'
import json, platform, subprocess, sys
path, config, command, settled, block, steps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1", int(sys.argv[5]), sys.argv[6]
fast, state, level = float(sys.argv[7]), sys.argv[8], float(sys.argv[9])
rows = [[int(f[1]), int(f[2])] + [int(float(x)) for x in f[3:5]] for f in (l.split() for l in open(steps)) if f and f[0] == "step_ns"]
model = next((l.split(":", 1)[1].strip() for l in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines()
              if l.startswith("Model name")), platform.processor())
json.dump({"configuration": config, "command": command.replace(" --data " + command.split(" --data ")[1].split()[0], ""),
           "block": block, "settled": settled, "fast_level_ns": fast, "state": state, "paused_over_fast": level,
           "machine": f"{model}, {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores",
           "steps": rows}, open(path, "w"), indent=None, separators=(",", ":"))
PY
echo "$CONFIG: $(stat -c %s "$out/$CONFIG-$state.dslog.gz") bytes gzipped, state $state ($level x the fast level), settled $ok"
