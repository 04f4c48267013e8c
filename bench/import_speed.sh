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
"$build/bin/dreamscope" import --force "$trace" -o "$out/mtia.db" >"$out/import.txt" 2>&1
head -1 "$out/import.txt"
# Issue 12's goals for import + HTA temporal breakdown of this trace: at most 0.2 s, and peak
# memory at most 1.5x the uncompressed JSON. Median of RUNS (default 5) runs, peak of them.
echo "== dreamscope analyze $trace --only hta (import + HTA temporal breakdown)"
json_bytes=$(gzip -dc "$trace" | wc -c)
for _ in $(seq "${RUNS:-5}"); do
  /usr/bin/env time -f "%e %M" "$build/bin/dreamscope" analyze "$trace" --only hta 2>&1 >/dev/null | tail -1
done | python3 -c '
import statistics, sys
json_bytes = int(sys.argv[1])
runs = [line.split() for line in sys.stdin if line.strip()]
wall = statistics.median(float(r[0]) for r in runs)
peak = max(int(r[1]) for r in runs) * 1024
verdict = lambda ok: "met" if ok else "missed"
print(f"wall time  {wall:6.3f} s   (median of {len(runs)}; goal 0.2 s: {verdict(wall <= 0.2)})")
print(f"peak RSS   {peak / 1e6:6.1f} MB  ({peak / json_bytes:.2f}x the {json_bytes / 1e6:.1f} MB of JSON; goal 1.5x: {verdict(peak <= 1.5 * json_bytes)})")' "$json_bytes"
