#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on the bundled sample: trace the
# CPU training loop in samples/cpu_train (a real data pipeline on 2 loader threads), or
# samples/cuda_train where a GPU is present, then show what the trace holds and replay it;
# then trace the PyTorch sample (samples/pytorch/train.py, unmodified: on the CPU where there
# is no GPU) and show the steps, data stalls and model it recorded.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
echo "== build (release)"
scripts/build.sh release
bin=build/release/bin
out=build/release/samples
mkdir -p "$out"
# Where a GPU is present, the CUDA sample (built whenever nvcc is) is the job to trace.
if [[ -x $bin/cuda_train ]] && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  job=cuda_train
  args=(--steps 50)
else
  job=cpu_train
  args=(--steps 40 --workers 2 --fetch-delay-us 500)
fi
echo "== dreamscope trace -- $job"
"$bin/dreamscope" trace --force -o "$out/$job.db" -- "$bin/$job" "${args[@]}"
echo "== dreamscope info"
"$bin/dreamscope" info "$out/$job.db"
echo "== dreamscope replay"
"$bin/dreamscope" replay "$out/$job.db"

# The PyTorch sample as a user runs it: an unmodified script, its framework layer recorded by
# dreamscope's Python instrumentation. Debian's python3 has torch (install-deps.sh); a python3
# earlier on PATH may not.
python=python3
/usr/bin/python3 -c 'import torch' 2>/dev/null && python=/usr/bin/python3
echo "== dreamscope trace -- $python samples/pytorch/train.py"
"$bin/dreamscope" trace --force -o "$out/pytorch_train.db" -- "$python" samples/pytorch/train.py --steps 20 --workers 2 \
  --batch-size 16
echo "== dreamscope analyze --only steps,data-stalls"
"$bin/dreamscope" analyze "$out/pytorch_train.db" --only steps,data-stalls
