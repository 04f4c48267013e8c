#!/usr/bin/env bash
# What tracing costs the unmodified PyTorch sample, and how well overhead correction takes it
# out (issue 33): ROUNDS rounds (default 5), each running samples/pytorch/train.py untraced
# and traced (Python layer on, the defaults) once, which first alternating by round; prints per round the untraced
# and traced median steps (train.py's own figure), the traced run's `replay --correct-overhead`
# median step, and the medians over the rounds of traced/untraced and of corrected against
# untraced, round by round (a round's two runs see the same machine state).
#
#   bench/tracer/pytorch_overhead.sh                     # build/release/bin, --workers 2
#   ARGS="--workers 0 --augment 200" bench/tracer/pytorch_overhead.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/release/bin}
ROUNDS=${ROUNDS:-5}
ARGS=${ARGS:---workers 2}
python=python3
/usr/bin/python3 -c 'import torch' 2>/dev/null && python=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2206
train=(samples/pytorch/train.py --device cpu --steps 40 --batch-size 16 $ARGS)
step_of() { awk '/^median_step_ns/ {print $2}'; }
printf '%-6s %12s %12s %12s %10s %10s\n' round untraced traced corrected ratio corrected
ratios=() errors=()
for i in $(seq "$ROUNDS"); do
  # Which goes first alternates: a run after another may find the machine in another state.
  if ((i % 2)); then
    untraced=$("$python" "${train[@]}" | step_of)
    traced=$("$BIN/dreamscope" trace -f -o "$work/t.db" -- "$python" "${train[@]}" 2>/dev/null | step_of)
  else
    traced=$("$BIN/dreamscope" trace -f -o "$work/t.db" -- "$python" "${train[@]}" 2>/dev/null | step_of)
    untraced=$("$python" "${train[@]}" | step_of)
  fi
  corrected=$("$BIN/dreamscope" replay "$work/t.db" --correct-overhead --format json --all-steps | python3 -c '
import json, statistics, sys
print(round(statistics.median(s["predicted_ns"] for s in json.load(sys.stdin)["steps"])))')
  ratio=$(python3 -c "print(f'{$traced / $untraced:.3f}')")
  error=$(python3 -c "print(f'{100 * ($corrected - $untraced) / $untraced:+.1f}')")
  ratios+=("$ratio")
  errors+=("$error")
  printf '%-6s %9.2f ms %9.2f ms %9.2f ms %9s× %9s %%\n' "$i" "$(python3 -c "print($untraced / 1e6)")" \
    "$(python3 -c "print($traced / 1e6)")" "$(python3 -c "print($corrected / 1e6)")" "$ratio" "$error"
done
python3 - "${ratios[*]}" "${errors[*]}" <<'PY'
import statistics, sys
ratios = [float(v) for v in sys.argv[1].split()]
errors = [float(v) for v in sys.argv[2].split()]
print(f"median traced/untraced {statistics.median(ratios):.3f}x; median corrected error {statistics.median(errors):+.1f} %")
PY
