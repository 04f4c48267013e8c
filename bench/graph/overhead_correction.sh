#!/usr/bin/env bash
# Overhead correction against reality, on the CPU (issues 4 and 16): samples/cpu_train with
# --fine-annotations (a range per hidden neuron and sample, so that tracing slows it by far
# more than 30 %), traced and untraced, in two configurations:
#   pipeline   the data pipeline on the training thread (--workers 0 --prep-passes 1): the
#              tracer's writer thread has a core of its own on a 2-core machine
#   workers2   two loader threads as well (--workers 2): three busy threads and the writer
#              share the cores, so the writer's CPU is taken from the job
# For each, RUNS pairs of an untraced and a traced run (default 5), alternately; each traced
# run's `dreamscope replay --correct-overhead` prediction of the median step is compared with
# the median of the untraced runs. Prints every run's error, and per configuration the median
# error and the worst; exits 1 when a median error exceeds BOUND % (default 3) or a run's
# error exceeds WORST % (default 6).
#
#   bench/graph/overhead_correction.sh                       # binaries from build/release/bin
#   BIN=build/graph/bin RUNS=3 bench/graph/overhead_correction.sh
#   CONFIGS=workers2 bench/graph/overhead_correction.sh      # one configuration
#   ARGS="--workers 4" bench/graph/overhead_correction.sh    # other cpu_train options instead
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/release/bin}
RUNS=${RUNS:-5}
STEPS=${STEPS:-300}
BOUND=${BOUND:-3}
WORST=${WORST:-6}
CONFIGS=${CONFIGS:-"pipeline workers2"}
dreamscope=$BIN/dreamscope
cpu_train=$BIN/cpu_train
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data=$work/data
if [ -n "${ARGS:-}" ]; then CONFIGS=custom; fi

status=0
for config in $CONFIGS; do
  case "$config" in
    pipeline) options="--workers 0 --prep-passes 1" ;;
    workers2) options="--workers 2" ;;
    custom) options=$ARGS ;;
    *) echo "overhead_correction.sh: unknown configuration $config (pipeline, workers2)" >&2; exit 2 ;;
  esac
  # shellcheck disable=SC2206
  run_args=(--steps "$STEPS" --data "$data" --fine-annotations $options)
  "$cpu_train" "${run_args[@]}" >/dev/null # the dataset, and warm caches
  rows=()
  for i in $(seq "$RUNS"); do
    # Each traced run writes about 100 MB. Written back while a later run is measured, it
    # would take a core from the traced run (whose writer thread needs one): flush it first.
    sync
    untraced=$("$cpu_train" "${run_args[@]}" | awk '/^median_step_ns/ {print $2}')
    sync
    "$dreamscope" trace -f -o "$work/run$i.db" -- "$cpu_train" "${run_args[@]}" >/dev/null 2>&1
    row=$("$dreamscope" replay "$work/run$i.db" --correct-overhead --format json | python3 -c '
import json, statistics, sys
r = json.load(sys.stdin)
steps, o = r["steps"], r["overhead"]
print(int(statistics.median(s["measured_ns"] for s in steps)), int(statistics.median(s["predicted_ns"] for s in steps)),
      "%.1f" % o["range_ns"], "%.1f" % o.get("in_run_range_ns", 0), "%.1f" % (o.get("runqueue_removed_ns", 0) / 1e6),
      "%.0f" % (o["events_charged"] / len(steps)), o["overhead_records"])')
    rm -rf "$work/run$i.db" "$work/run$i.db.d" # deleted before written back: no disk traffic
    rows+=("$untraced $row")
  done
  python3 - "$config" "$options" "$BOUND" "$WORST" "${rows[@]}" <<'PY' || status=1
import statistics, sys
config, options, bound, worst_bound = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
rows = [[float(x) for x in r.split()] for r in sys.argv[5:]]
u = statistics.median(r[0] for r in rows)
t = statistics.median(r[1] for r in rows)
errors = [100 * (r[2] - u) / u for r in rows]
print(f"== {config} (cpu_train --fine-annotations {options})")
print("run  untraced    traced  predicted   error   range: calibrated  in run   waited for a core")
for i, (r, e) in enumerate(zip(rows, errors), 1):
    print(f"{i:3}  {r[0] / 1e3:7.1f} us {r[1] / 1e3:7.1f} us {r[2] / 1e3:7.1f} us {e:+6.2f} %"
          f"   {r[3]:9.1f} ns {r[4]:6.1f} ns   {r[5]:6.1f} ms")
median_error = statistics.median(errors)
worst = max(errors, key=abs)
ranges = statistics.median(r[6] for r in rows)
print(f"median step: untraced {u / 1e3:.1f} us, traced {t / 1e3:.1f} us (tracing slows it by {100 * (t - u) / u:.1f} %, "
      f"{1e3 * (t - u) / 1e3 / ranges:.1f} ns per range over {ranges:.0f} ranges per step)")
print(f"error: median {median_error:+.2f} %, worst run {worst:+.2f} % (bounds {bound:g} % and {worst_bound:g} %)")
sys.exit(0 if abs(median_error) <= bound and abs(worst) <= worst_bound else 1)
PY
done
machine="$(lscpu 2>/dev/null | awk -F: '/^Model name|^Thread\(s\) per core|^L2 cache/ {gsub(/^ +/, "", $2); printf "%s; ", $2}')clock $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)"
echo "machine: $machine; $(nproc) cores"
exit "$status"
