#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on the bundled sample: trace the
# CPU training loop in samples/cpu_train (a real data pipeline on 2 loader threads), or
# samples/cuda_train where a GPU is present, then show what the trace holds and replay it.
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
