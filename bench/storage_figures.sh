#!/usr/bin/env bash
# The storage figures the foundation issue states its targets in, from one run of
# bench/storage (medians of 3 repetitions for the writers):
#   - writer throughput on one core into a file on disk: >= 2 M events/s, <= 40 bytes/event
#     (write_trace: what every trace file written from a Trace takes, rows in key order;
#     TraceWriter fed the interleaved tracer mix one row at a time, for comparison);
#   - loading 10 M events into a Trace: <= 3 s, <= 64 bytes/event in memory; and issue 12's
#     aim for reading a trace.db, >= 5 M events/s.
#
#   bench/storage_figures.sh               # build/release/bench/storage_bench
#   BENCH=build/x/bench/storage_bench bench/storage_figures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-build/release/bench/storage_bench}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$BENCH" --benchmark_filter='Write|Plain' --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_format=json >"$out.writers" 2>/dev/null
"$BENCH" --benchmark_filter=Load --benchmark_format=json >"$out.load" 2>/dev/null
python3 - "$out.writers" "$out.load" <<'PY'
import json, sys
writers = json.load(open(sys.argv[1]))["benchmarks"]
load = json.load(open(sys.argv[2]))["benchmarks"]
def median(prefix):
    for b in writers:
        if b["name"].startswith(prefix) and b.get("aggregate_name") == "median":
            return b
    raise SystemExit(f"no median for {prefix}")
def verdict(ok): return "met" if ok else "NOT met"
wt = median("BM_WriteTraceEventsPerSecond")
tw = median("BM_WriterEventsPerSecond")
plain = median("BM_PlainInsertBaseline")
print(f"write_trace, tracer event mix      {wt['items_per_second'] / 1e6:5.2f} M events/s  {wt['bytes_per_event']:5.1f} B/event"
      f"   target >= 2 M/s: {verdict(wt['items_per_second'] >= 2e6)}, <= 40 B: {verdict(wt['bytes_per_event'] <= 40)}")
print(f"TraceWriter, interleaved rows      {tw['items_per_second'] / 1e6:5.2f} M events/s  {tw['bytes_per_event']:5.1f} B/event")
print(f"plain 5-column INSERT (reference)  {plain['items_per_second'] / 1e6:5.2f} M rows/s    {plain['bytes_per_row']:5.1f} B/row")
l = load[0]
seconds = l["real_time"] / 1e3 if l["time_unit"] == "ms" else l["real_time"]
print(f"load 10 M events                   {seconds:5.2f} s  {l['model_bytes_per_event']:5.1f} B/event in the model, "
      f"{l['peak_rss_growth_bytes_per_event']:5.1f} B/event peak RSS growth"
      f"   target <= 3 s: {verdict(seconds <= 3)}, <= 64 B: {verdict(l['peak_rss_growth_bytes_per_event'] <= 64)}")
print(f"reading a trace.db                  {l['items_per_second'] / 1e6:5.2f} M events/s"
      f"   aim >= 5 M/s: {verdict(l['items_per_second'] >= 5e6)}")
PY
rm -f "$out.writers" "$out.load"
