#!/usr/bin/env bash
# Records the overhead-correction fixture: one traced run of cpu_train with a range per
# hidden neuron and sample (tracing slows its steps by a third), kept as the tracer's own
# part log, and the median step time of untraced runs of the same command, measured
# alternately with it on the same machine. tests/whatif/overhead_fixture_test.cpp replays
# the log with overhead correction and compares the prediction with those untraced runs.
#
#   tests/data/cpu/record_fine_annotations.sh            # binaries from build/release/bin
set -euo pipefail
cd "$(dirname "$0")/../../.."
BIN=${BIN:-build/release/bin}
STEPS=${STEPS:-40}
RUNS=${RUNS:-5}
out=tests/data/cpu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(--steps "$STEPS" --data "$work/data" --fine-annotations --workers 0 --prep-passes 1)
"$BIN/cpu_train" "${args[@]}" >/dev/null # the dataset, and warm caches
untraced=()
for i in $(seq "$RUNS"); do
  untraced+=("$("$BIN/cpu_train" "${args[@]}" | awk '/^median_step_ns/ {print $2}')")
  if [ "$i" -eq $(((RUNS + 1) / 2)) ]; then # the traced run sits among the untraced ones
    "$BIN/dreamscope" trace -f --keep-parts -o "$work/traced.db" -- "$BIN/cpu_train" "${args[@]}" >/dev/null 2>&1
  fi
done
cp "$work"/traced.db.d/*.dslog "$out/fine_annotations.dslog"
python3 - "$out/fine_annotations.json" "$STEPS" "${untraced[@]}" <<'PY'
import json, platform, statistics, subprocess, sys
path, steps, runs = sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3:]]
model = next((l.split(":", 1)[1].strip() for l in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines()
              if l.startswith("Model name")), platform.processor())
json.dump({"command": f"cpu_train --steps {steps} --fine-annotations --workers 0 --prep-passes 1",
           "untraced_median_step_ns": runs, "untraced_median_of_runs_ns": int(statistics.median(runs)),
           "machine": f"{model}, {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores"},
          open(path, "w"), indent=2)
print(open(path).read())
PY
ls -l "$out/fine_annotations.dslog"
