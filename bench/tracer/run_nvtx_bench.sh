#!/usr/bin/env bash
# NVTX range push+pop cost, untraced and traced (median of 5 repetitions; ns_per_call).
# Usage: bench/tracer/run_nvtx_bench.sh [BUILD_DIR]   (default build/release)
# The benchmark pauses between batches so the tracer's default rings never fill, and the
# script checks from the trace that nothing was dropped: the figure is the recording path.
set -euo pipefail
build=${1:-build/release}
bench=$build/bench/tracer_nvtx_bench
lib=$build/lib/libdreamscope-tracer.so
args=(--benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_filter='.*' )
out=$(mktemp -d)
echo "== untraced (NVTX with no tool attached)"
"$bench" "${args[@]}" 2>/dev/null | grep -E "median|Benchmark"
echo "== traced (libdreamscope-tracer.so)"
"$build/bin/dreamscope" trace -f -o "$out/bench.db" -- "$bench" "${args[@]}" 2>&1 | grep -E "median|Benchmark|dreamscope trace"
"$build/bin/dreamscope" info --json "$out/bench.db" | python3 -c \
  'import json,sys; j=json.load(sys.stdin); print("trace: %d annotations, %d dropped" % (j["events"]["annotation"], j["dropped_events"]))'
rm -rf "$out"
