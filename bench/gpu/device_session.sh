#!/usr/bin/env bash
# Everything issues 3 and 5 need a GPU for, in one script for one call on a lent GPU machine
# (docs/gpu.md). Runs from the repository root there, on the bundle scripts/device-bundle.sh
# made here (carried as build/device), and writes under $OUT:
#   summary.txt                 the figures, also printed last
#   cuda_train.db, pytorch_train.db   small real traces, to commit under tests/data/gpu/
#   *.log                       each step's full output
#
#   bash bench/gpu/device_session.sh                 # every step
#   bash bench/gpu/device_session.sh tests fixtures  # some: tests fixtures overhead amp workers
#
# Steps: tests      the tracer's process tests, the GPU one included (it skips without a GPU)
#        fixtures   cuda_train and samples/pytorch/train.py traced, replayed (baseline error)
#        overhead   traced / untraced, median of 5 (cuda_train) and of 3 (train.py)
#        amp        train.py traced in FP32, `amp` predicted, run with torch.autocast, compared
#        workers    train.py traced with 0 loader workers, `data workers=4` predicted, run, compared
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
B=${BUNDLE:-build/device}
OUT=${OUT:-/tmp/dreamscope-device}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# cuda_train's cuBLAS and CUDA runtime are the machine's, wherever its toolkit keeps them.
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
done
DS="$PWD/$B/bin/dreamscope"
PY=${PYTHON:-python3}
STEPS_WANTED=${*:-tests fixtures overhead amp workers}
summary="$OUT/summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
wants() { [[ " $STEPS_WANTED " == *" $1 "* ]]; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

say "== machine"
say "$(nvidia-smi -L 2>&1 | head -2)"
say "$($PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))' 2>&1 | tail -1)"
say "cores $(nproc)"
# A library the bundle lacks and the machine does not have shows here first.
for f in "$B"/bin/* "$B"/lib/libdreamscope-tracer.so "$B/tests/tracer_process_tests"; do
  echo "== $f"
  ldd "$f" 2>&1
done >"$OUT/ldd.txt"
missing=$(grep -c "not found" "$OUT/ldd.txt")
say "libraries not found: $missing$([ "$missing" -gt 0 ] && echo " (see ldd.txt: $(grep "not found" "$OUT/ldd.txt" | sort -u | tr -s ' \t' ' ' | tr '\n' ';'))")"

# Prints the median of the numbers on stdin.
median() { $PY -c 'import statistics, sys; print(round(statistics.median(float(x) for x in sys.stdin.read().split())))'; }
# median_step_ns of one run of a command (its own measurement, CUDA-synchronized per step).
step_ns() { "$@" 2>>"$OUT/runs.log" | awk '/^median_step_ns/ {print $2}'; }
# Wall nanoseconds of one run of a command.
wall() { local t0; t0=$(date +%s%N); "$@" >>"$OUT/runs.log" 2>&1; echo $(($(date +%s%N) - t0)); }
# The median step time a what-if predicts: predict TRACE SCENARIO-ARGS...
predict() {
  local trace=$1
  shift
  "$DS" whatif "$trace" --format json --no-data-stalls "$@" 2>>"$OUT/whatif.log" |
    $PY -c 'import json, sys; print(round(json.load(sys.stdin)["predictions"][-1]["predicted_step_ns"]))'
}
pct() { $PY -c "import sys; m, p = float(sys.argv[1]), float(sys.argv[2]); print(f'{100 * (p - m) / m:+.1f} %')" "$1" "$2"; }
train=(samples/pytorch/train.py)

if wants tests; then
  say "== tracer process tests (GPU test included)"
  DREAMSCOPE_TEST_BIN_DIR="$PWD/$B/bin" DREAMSCOPE_TEST_PROGRAMS="$PWD/$B/tests/programs" \
    DREAMSCOPE_TEST_CUDA_TRAIN="$PWD/$B/bin/cuda_train" \
    "$B/tests/tracer_process_tests" >"$OUT/tests.log" 2>&1
  say "exit $? : $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tests.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]|Skipped|SKIPPED' "$OUT/tests.log" | head -20 | tee -a "$summary"
fi

if wants fixtures; then
  say "== fixtures"
  "$DS" trace -f -o "$OUT/cuda_train.db" -- "$B/bin/cuda_train" --steps 20 --batch-size 128 --input-dim 256 \
    --hidden 512 >"$OUT/fixture_cuda.log" 2>&1
  say "cuda_train.db: exit $?, $(du -h "$OUT/cuda_train.db" 2>/dev/null | cut -f1)"
  "$DS" trace -f -o "$OUT/pytorch_train.db" -- "$PY" "${train[@]}" --steps 20 --workers 2 --emit-nvtx \
    >"$OUT/fixture_torch.log" 2>&1
  say "pytorch_train.db: exit $?, $(du -h "$OUT/pytorch_train.db" 2>/dev/null | cut -f1)"
  for f in cuda_train pytorch_train; do
    "$DS" info "$OUT/$f.db" >"$OUT/$f.info.txt" 2>&1
    "$DS" replay "$OUT/$f.db" >"$OUT/$f.replay.txt" 2>&1
    say "$f replay: $(grep -E '^run ' "$OUT/$f.replay.txt")"
  done
fi

if wants overhead; then
  say "== tracer overhead (wall time of the whole run, and the program's own median step)"
  cu=("$B/bin/cuda_train" --steps 200)
  wall "${cu[@]}" >/dev/null # warm-up: module load, clocks
  uw=() tw=() us=() ts=()
  for _ in 1 2 3 4 5; do
    uw+=("$(wall "${cu[@]}")")
    tw+=("$(wall "$DS" trace -f -o "$work/o.db" -- "${cu[@]}")")
    us+=("$(step_ns "${cu[@]}")")
    ts+=("$(step_ns "$DS" trace -f -o "$work/o.db" -- "${cu[@]}")")
  done
  $PY - "${uw[*]}" "${tw[*]}" "${us[*]}" "${ts[*]}" <<'PY' | tee -a "$summary"
import statistics, sys
uw, tw, us, ts = ([float(x) for x in a.split()] for a in sys.argv[1:5])
print(f"cuda_train --steps 200: wall traced/untraced {statistics.median(tw) / statistics.median(uw):.3f} "
      f"({statistics.median(uw) / 1e9:.2f} s untraced), median step traced/untraced {statistics.median(ts) / statistics.median(us):.3f}")
PY
  uw=() tw=() us=() ts=()
  for _ in 1 2 3; do
    us+=("$(step_ns "$PY" "${train[@]}" --steps 100 --workers 2)")
    ts+=("$(step_ns "$DS" trace -f -o "$work/o.db" -- "$PY" "${train[@]}" --steps 100 --workers 2)")
  done
  $PY - "${us[*]}" "${ts[*]}" <<'PY' | tee -a "$summary"
import statistics, sys
us, ts = ([float(x) for x in a.split()] for a in sys.argv[1:3])
print(f"train.py --steps 100 --workers 2: median step traced/untraced {statistics.median(ts) / statistics.median(us):.3f} "
      f"({statistics.median(us) / 1e3:.0f} us untraced)")
PY
fi

if wants amp; then
  say "== amp: predicted from an FP32 trace, against train.py --amp"
  args=(--steps 60 --workers 4 --batch-size 256)
  "$DS" trace -f -o "$work/fp32.db" -- "$PY" "${train[@]}" "${args[@]}" >"$OUT/amp_trace.log" 2>&1
  fp32=() amp=()
  for _ in 1 2 3; do
    fp32+=("$(step_ns "$PY" "${train[@]}" "${args[@]}")")
    amp+=("$(step_ns "$PY" "${train[@]}" "${args[@]}" --amp)")
  done
  m_fp32=$(printf '%s\n' "${fp32[@]}" | median)
  m_amp=$(printf '%s\n' "${amp[@]}" | median)
  p_amp=$(predict "$work/fp32.db" -s amp)
  say "untraced FP32 $((m_fp32 / 1000)) us, untraced --amp $((m_amp / 1000)) us, predicted amp $((p_amp / 1000)) us: error $(pct "$m_amp" "$p_amp")"
  "$DS" whatif "$work/fp32.db" -s amp >"$OUT/amp_whatif.txt" 2>&1
fi

if wants workers; then
  say "== DataLoader workers 0 -> 4: predicted from a 0-worker trace, against a 4-worker run"
  args=(--steps 60 --batch-size 256 --fetch-delay-ms 5)
  "$DS" trace -f -o "$work/w0.db" -- "$PY" "${train[@]}" "${args[@]}" --workers 0 >"$OUT/workers_trace.log" 2>&1
  w0=() w4=()
  for _ in 1 2 3; do
    w0+=("$(step_ns "$PY" "${train[@]}" "${args[@]}" --workers 0)")
    w4+=("$(step_ns "$PY" "${train[@]}" "${args[@]}" --workers 4)")
  done
  m0=$(printf '%s\n' "${w0[@]}" | median)
  m4=$(printf '%s\n' "${w4[@]}" | median)
  p4=$(predict "$work/w0.db" -s data -p workers=4 -p cores="$(nproc)")
  say "untraced 0 workers $((m0 / 1000)) us, 4 workers $((m4 / 1000)) us, predicted 4 workers $((p4 / 1000)) us: error $(pct "$m4" "$p4")"
  "$DS" whatif "$work/w0.db" -s data -p workers=4 -p cores="$(nproc)" >"$OUT/workers_whatif.txt" 2>&1
fi

echo
echo "== summary"
cat "$summary"
