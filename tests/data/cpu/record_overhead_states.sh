#!/usr/bin/env bash
# Records the overhead-correction fixtures of tests/data/cpu/overhead_states/: for each state
# of the machine below, one traced run of cpu_train with a range per hidden neuron and sample,
# kept as the tracer's own part log, and the median step times of untraced runs of the same
# command in the same state, measured alternately with it. OverheadCorrection.
# RecordedStatesPredictTheUntracedSteps (tests/whatif/overhead_correction_test.cpp) replays
# each log with overhead correction and compares the prediction with those untraced runs.
#
# The states:
#   pipeline        the data pipeline on the training thread (--workers 0 --prep-passes 1):
#                   the tracer's writer has a core of its own
#   workers2        two loader threads as well (--workers 2): three busy threads and the
#                   writer share the cores, and the writer's CPU is taken from the job
#   pipeline-busy   as `pipeline`, with another process copying 64 MB buffers on the machine
#                   all along (memory traffic, and a third busy thread): the tracer's calls
#                   slow down and the writer takes CPU from the job
#   workers2-busy   as `workers2`, with that process
#
#   tests/data/cpu/record_overhead_states.sh             # binaries from build/release/bin
#   STATES="pipeline workers2" tests/data/cpu/record_overhead_states.sh
#
# The machine changes speed within seconds (bench/graph/overhead_correction.sh): every run
# prints its machine probe (cpu_train --probe), and a state is recorded again, up to TRIES
# times (default 4), until the untraced runs agree within 5 % and all the probes, the traced
# run's included, within 25 %. The JSON keeps the probes, and whether the state settled.
set -euo pipefail
cd "$(dirname "$0")/../../.."
BIN=${BIN:-build/release/bin}
STEPS=${STEPS:-40}
RUNS=${RUNS:-5}
TRIES=${TRIES:-4}
STATES=${STATES:-"pipeline workers2 pipeline-busy workers2-busy"}
out=tests/data/cpu/overhead_states
mkdir -p "$out"
work=$(mktemp -d)
hog=
stop_hog() { if [ -n "$hog" ]; then kill "$hog" 2>/dev/null || true; wait "$hog" 2>/dev/null || true; hog=; fi; }
trap 'stop_hog; rm -rf "$work"' EXIT

for state in $STATES; do
  case "$state" in
    pipeline | pipeline-busy) options="--workers 0 --prep-passes 1" ;;
    workers2 | workers2-busy) options="--workers 2" ;;
    *) echo "unknown state $state" >&2; exit 2 ;;
  esac
  # shellcheck disable=SC2206
  args=(--steps "$STEPS" --data "$work/data" --fine-annotations --probe $options)
  "$BIN/cpu_train" "${args[@]}" >/dev/null # the dataset, and warm caches
  case "$state" in
    *-busy)
      python3 -c 'import sys
b = bytearray(64 << 20)
while True:
    c = bytes(b)' &
      hog=$!
      sleep 1 ;;
  esac
  for try in $(seq "$TRIES"); do
    untraced=()
    probes=()
    rm -rf "$work/traced.db" "$work/traced.db.d"
    for i in $(seq "$RUNS"); do
      sync
      printed=$("$BIN/cpu_train" "${args[@]}")
      untraced+=("$(awk '/^median_step_ns/ {print $2}' <<<"$printed")")
      probes+=($(awk '/^machine_probe_ns/ {print $2, $3}' <<<"$printed"))
      if [ "$i" -eq $(((RUNS + 1) / 2)) ]; then # the traced run sits among the untraced ones
        sync
        printed=$("$BIN/dreamscope" trace -f --keep-parts -o "$work/traced.db" -- "$BIN/cpu_train" "${args[@]}" 2>/dev/null)
        traced_probes=($(awk '/^machine_probe_ns/ {print $2, $3}' <<<"$printed"))
      fi
    done
    settled=$(python3 -c '
import sys
n = int(sys.argv[1]); steps = [float(x) for x in sys.argv[2:2 + n]]; probes = [float(x) for x in sys.argv[2 + n:]]
print(1 if max(steps) <= 1.05 * min(steps) and max(probes) <= 1.25 * min(probes) else 0)' "$RUNS" "${untraced[@]}" "${probes[@]}" "${traced_probes[@]}")
    if [ "$settled" = 1 ]; then break; fi
  done
  stop_hog
  cp "$work"/traced.db.d/*.dslog "$out/$state.dslog"
  python3 - "$out/$state.json" "$state" "cpu_train --steps $STEPS --fine-annotations $options" "$settled" \
    "${traced_probes[*]}" "${probes[*]}" "${untraced[@]}" <<'PY'
import json, platform, statistics, subprocess, sys
path, state, command, settled = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
traced_probes, probes, runs = [int(x) for x in sys.argv[5].split()], [int(x) for x in sys.argv[6].split()], [int(x) for x in sys.argv[7:]]
model = next((l.split(":", 1)[1].strip() for l in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines()
              if l.startswith("Model name")), platform.processor())
json.dump({"state": state, "command": command, "busy_neighbour": state.endswith("-busy"),
           "untraced_median_step_ns": runs, "untraced_median_of_runs_ns": int(statistics.median(runs)),
           "machine_probe_ns": {"traced": traced_probes, "untraced": probes}, "settled": settled,
           "machine": f"{model}, {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores"},
          open(path, "w"), indent=2)
PY
  echo "$state: $(ls -l "$out/$state.dslog" | awk '{print $5}') bytes; untraced median step $(python3 -c "import json; print(json.load(open('$out/$state.json'))['untraced_median_of_runs_ns'])") ns"
done
