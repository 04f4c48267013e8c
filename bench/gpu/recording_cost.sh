#!/usr/bin/env bash
# What each way of recording CUDA costs samples/pytorch/train.py on a GPU machine, in rounds
# so that the machine's drift falls on every variant alike (docs/gpu.md):
#   untraced        the program alone
#   used            dreamscope trace (default: --cuda-api used, only the calls an analysis reads)
#   used-noflush    the same with DREAMSCOPE_CUPTI_FLUSH_MS=0 (no periodic CUPTI flush)
#   most            --cuda-api most (every call but the frequent no-GPU-work ones)
# Prints, per variant, the median of the program's own median steps and its ratio to the
# untraced one; `replay --correct-overhead` of the `used` traces against the untraced median;
# and what a `used` trace holds (bench/gpu/trace_facts.py). Runs from the repository root on
# the bundle of scripts/device-bundle.sh (build/device), like bench/gpu/device_session.sh.
#
#   ROUNDS=5 bash bench/gpu/recording_cost.sh      # writes $OUT/recording_cost.txt, used.db
#   ROUNDS=2 TAG=launch JOB_ARGS="--steps 100 --batch-size 16" bash bench/gpu/recording_cost.sh
#                                                  # a launch-bound job: $OUT/recording_cost_launch.txt
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
B=${BUNDLE:-build/device}
OUT=${OUT:-/tmp/dreamscope-device}
ROUNDS=${ROUNDS:-5}
PY=${PYTHON:-python3}
DS="$PWD/$B/bin/dreamscope"
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
TAG=${TAG:+_$TAG}
summary="$OUT/recording_cost$TAG.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
read -r -a job_args <<<"${JOB_ARGS:---steps 60 --workers 2}"
job=("$PY" samples/pytorch/train.py "${job_args[@]}")
step_ns() { timeout 120 "$@" 2>>"$work/runs.log" | awk '/^median_step_ns/ {print $2}'; }
corrected() {
  timeout 120 "$DS" replay "$1" --correct-overhead --format json --all-steps 2>>"$work/replay.log" |
    $PY -c 'import json, statistics, sys; print(round(statistics.median(s["predicted_ns"] for s in json.load(sys.stdin)["steps"])))'
}
declare -A runs
corr=()
say "== recording cost: ${job[*]}, $ROUNDS rounds; $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(nproc) cores"
# run VARIANT COMMAND...: one run's median step, kept and printed at once (a call cut short
# by its time limit keeps the rounds it finished).
run() {
  local variant=$1 v
  shift
  v=$(step_ns "$@")
  runs[$variant]+=" $v"
  say "   round $r $variant: ${v:-failed} ns"
}
for ((r = 1; r <= ROUNDS; ++r)); do
  run untraced "${job[@]}"
  run used "$DS" trace -f -o "$work/used$r.db" -- "${job[@]}"
  corr+=("$(corrected "$work/used$r.db")")
  say "   round $r used, replay --correct-overhead: ${corr[-1]:-failed} ns"
  DREAMSCOPE_CUPTI_FLUSH_MS=0 run used-noflush "$DS" trace -f -o "$work/noflush$r.db" -- "${job[@]}"
  run most "$DS" trace --cuda-api most -f -o "$work/most$r.db" -- "${job[@]}"
done
$PY - "${runs[untraced]}" "${runs[used]}" "${runs[used-noflush]}" "${runs[most]}" "${corr[*]}" <<'PY' | tee -a "$summary"
import statistics as st, sys
names = ["untraced", "used", "used-noflush", "most"]
vals = [[float(x) for x in a.split()] for a in sys.argv[1:5]]
base = st.median(vals[0])
for name, v in zip(names, vals):
    if v:
        print(f"{name:13s} median {st.median(v) / 1e3:8.1f} us  x{st.median(v) / base:.3f}   runs {' '.join(f'{x / 1e3:.0f}' for x in v)}")
c = [float(x) for x in sys.argv[5].split()]
if c:
    print(f"used, replay --correct-overhead: median {st.median(c) / 1e3:.1f} us, {100 * (st.median(c) - base) / base:+.1f} % of untraced; "
          f"runs {' '.join(f'{x / 1e3:.0f}' for x in c)}")
PY
steps=$(echo "${job_args[*]}" | awk '{for (i = 1; i < NF; ++i) if ($i == "--steps") print $(i + 1)}')
timeout 60 $PY bench/gpu/trace_facts.py "$work/used1.db" "${steps:-50}" 2>&1 | tee -a "$summary"
timeout 60 $PY bench/gpu/trace_facts.py "$work/most1.db" "${steps:-50}" 2>&1 | tee -a "$summary"
cp "$work/used1.db" "$OUT/used$TAG.db"
tail -5 "$work/runs.log" >>"$summary"
