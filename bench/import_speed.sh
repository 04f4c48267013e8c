#!/usr/bin/env bash
# Prints the importer's throughput on the largest trace in shared/data (the MTIA trace):
# MB/s of JSON and events/s from the benchmark, then `dreamscope import` on the same file
# as a user sees it. Usage: bench/import_speed.sh [build dir, default build/release]
# SCALING=1 adds the synthetic 1x/10x runs (4.56M events; about a minute and 2 GB of RAM).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
trace=../shared/data/kineto-hta/mtia_trace_single_rank/mtia_rank_0.json.gz
if [ ! -d "$build" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" --target importers_bench dreamscope >/dev/null
filter=Kineto
[ "${SCALING:-0}" = 1 ] && filter=.
"$build/bench/importers_bench" --benchmark_counters_tabular=true --benchmark_filter="$filter"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "== dreamscope import $trace"
"$build/bin/dreamscope" import --force "$trace" -o "$out/mtia.db" 2>&1 | head -1
