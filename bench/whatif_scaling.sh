#!/usr/bin/env bash
# Prints how replay and `whatif -s amp` grow with the trace (issue 12: no command worse than
# n log n; whatif within 2x of replay on 5 M events with deep stacks and run-long ranges),
# from bench/whatif/whatif_scaling_bench: medians of 3 runs a size, time per event, and the
# ratio whatif / replay. Usage: bench/whatif_scaling.sh [build/release]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$build/bench/whatif_scaling_bench" --benchmark_format=json --benchmark_report_aggregates_only=true >"$out" 2>/dev/null
python3 - "$out" <<'PY'
import json, sys
rows = {}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    name, size = b["run_name"].split("/")[:2]
    rows.setdefault(int(size), {})[name] = (b["real_time"], b["events"])
print(f"{'events':>10} {'replay ms':>10} {'ns/event':>9} {'whatif ms':>10} {'ns/event':>9} {'whatif/replay':>14}")
first = None
for size in sorted(rows):
    (r, events), (w, _) = rows[size]["BM_Replay"], rows[size]["BM_WhatIfAmp"]
    print(f"{int(events):>10} {r:>10.0f} {r * 1e6 / events:>9.0f} {w:>10.0f} {w * 1e6 / events:>9.0f} {w / r:>14.2f}")
    first = first or (events, r, w)
events, r, w = rows[max(rows)]["BM_Replay"][1], rows[max(rows)]["BM_Replay"][0], rows[max(rows)]["BM_WhatIfAmp"][0]
grow = events / first[0]
print(f"from {int(first[0])} to {int(events)} events ({grow:.0f}x): replay took {r / first[1]:.1f}x, whatif {w / first[2]:.1f}x "
      f"(n log n would be {grow * (1 + __import__('math').log2(grow) / __import__('math').log2(first[0])):.1f}x)")
PY
