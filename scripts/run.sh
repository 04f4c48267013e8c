#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on the bundled sample: trace the
# CPU training loop in samples/cpu_train (a real data pipeline on 2 loader threads), then
# show what the trace holds and where the time went, and replay it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
echo "== build (release)"
scripts/build.sh release
bin=build/release/bin
out=build/release/samples
mkdir -p "$out"
echo "== dreamscope trace -- cpu_train"
"$bin/dreamscope" trace -o "$out/cpu_train.db" -- "$bin/cpu_train" --steps 40 --workers 2 --fetch-delay-us 500
echo "== dreamscope info"
"$bin/dreamscope" info "$out/cpu_train.db"
echo "== dreamscope replay"
"$bin/dreamscope" replay "$out/cpu_train.db"
