#!/usr/bin/env bash
# Records the fixtures of tests/data/cpu/paused_blocks/: for each configuration below, one
# traced run of cpu_train with a range per hidden neuron and sample that pauses recording in
# every other block of 10 steps (--paused-blocks, ds_tracing_pause), kept as the tracer's own
# part log, and every step's time as cpu_train printed it (recorded or paused). The paused
# blocks are the untraced reference of the recorded blocks between them, tens of ms away
# (bench/graph/overhead_correction.sh, METHOD=paired). OverheadCorrection.
# RecordedPausedBlocksPredictTheirPausedNeighbours (tests/whatif/overhead_correction_test.cpp)
# replays each log with overhead correction and compares every recorded block's prediction
# with its paused neighbours.
#
#   pipeline   the data pipeline on the training thread (--workers 0 --prep-passes 1)
#   workers2   two loader threads as well (--workers 2): the job's threads and the writer
#              share the cores
#
#   tests/data/cpu/record_paused_blocks.sh               # binaries from build/release/bin
#   CONFIGS=workers2 tests/data/cpu/record_paused_blocks.sh
#
# The machine changes speed within tens of ms: a configuration is recorded again, up to TRIES
# times (default 15), until the two paused neighbours of every recorded block agree within 5 %.
# The JSON says whether that happened.
set -euo pipefail
cd "$(dirname "$0")/../../.."
BIN=${BIN:-build/release/bin}
TRIES=${TRIES:-15}
CONFIGS=${CONFIGS:-"pipeline workers2"}
STEPS=100
BLOCK=10
out=tests/data/cpu/paused_blocks
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for config in $CONFIGS; do
  case "$config" in
    pipeline) options="--workers 0 --prep-passes 1" ;;
    workers2) options="--workers 2" ;;
    *) echo "unknown configuration $config" >&2; exit 2 ;;
  esac
  # shellcheck disable=SC2206
  args=(--steps "$STEPS" --data "$work/data" --fine-annotations $options --paused-blocks "$BLOCK")
  "$BIN/cpu_train" "${args[@]}" >/dev/null # the dataset, and warm caches
  for try in $(seq "$TRIES"); do
    rm -rf "$work/traced.db" "$work/traced.db.d"
    sync
    "$BIN/dreamscope" trace -f --keep-parts -o "$work/traced.db" -- "$BIN/cpu_train" "${args[@]}" >"$work/steps.txt" 2>/dev/null
    settled=$(python3 - "$work/steps.txt" "$BLOCK" <<'PY'
import statistics, sys
block = int(sys.argv[2])
paused = {}
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0] == "step_ns" and f[2] == "0":
        paused[int(f[1])] = float(f[3])
blocks = (max(paused) + 1) // block
side = lambda c: statistics.median(paused[i] for i in range(c * block + block // 2, (c + 1) * block))
ok = all(abs(side(b - 1) - side(b + 1)) <= 0.05 * min(side(b - 1), side(b + 1)) for b in range(2, blocks - 1, 2))
print(1 if ok else 0)
PY
)
    if [ "$settled" = 1 ]; then break; fi
  done
  cp "$work"/traced.db.d/*.dslog "$out/$config.dslog"
  python3 - "$out/$config.json" "$config" "cpu_train ${args[*]}" "$settled" "$BLOCK" "$work/steps.txt" <<'PY'
import json, platform, subprocess, sys
path, config, command, settled, block, steps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1", int(sys.argv[5]), sys.argv[6]
rows = [[int(f[1]), int(f[2]), int(float(f[3]))] for f in (l.split() for l in open(steps)) if f and f[0] == "step_ns"]
model = next((l.split(":", 1)[1].strip() for l in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines()
              if l.startswith("Model name")), platform.processor())
json.dump({"configuration": config, "command": command.replace(" --data " + command.split(" --data ")[1].split()[0], ""),
           "block": block, "settled": settled,
           "machine": f"{model}, {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores",
           "steps": rows}, open(path, "w"), indent=None, separators=(",", ":"))
PY
  echo "$config: $(ls -l "$out/$config.dslog" | awk '{print $5}') bytes, settled $settled"
done
