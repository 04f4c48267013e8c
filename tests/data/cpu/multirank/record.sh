#!/usr/bin/env bash
# Records the multi-rank fixtures of tests/data/cpu/multirank/ (README.md there): an 8-rank
# dist_train job traced, the same job with one rank slowed on purpose, and for each the
# median step time of untraced runs of the same command on the same machine, measured
# alternately with the traced run (it sits in the middle of them).
#
# The configurations:
#   baseline     8 ranks, no rank slowed
#   slow-rank5   rank 5's forward, backward and optimizer do three times the work
#                (--slow-rank 5 --slow-factor 3): the straggler; a "straggler" what-if on
#                its trace is checked against baseline's untraced median
#
#   tests/data/cpu/multirank/record.sh                    # binaries from build/release/bin
#   RUNS=3 CONFIGS=baseline tests/data/cpu/multirank/record.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."
BIN=${BIN:-build/release/bin}
RANKS=${RANKS:-8}
STEPS=${STEPS:-30}
RUNS=${RUNS:-5}
CONFIGS=${CONFIGS:-"baseline slow-rank5"}
out=tests/data/cpu/multirank
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median_of() { awk '/^median_step_ns/ {print $2}'; }

for config in $CONFIGS; do
  case "$config" in
    baseline) options="" ;;
    slow-rank5) options="--slow-rank 5 --slow-factor 3" ;;
    *) echo "unknown configuration $config" >&2; exit 2 ;;
  esac
  # shellcheck disable=SC2206
  args=(--launch "$RANKS" --steps "$STEPS" $options)
  "$BIN/dist_train" "${args[@]}" >/dev/null # warm caches
  load_before=$(cut -d' ' -f1 /proc/loadavg)
  untraced=()
  traced=
  for i in $(seq "$RUNS"); do
    untraced+=("$("$BIN/dist_train" "${args[@]}" | median_of)")
    if [ "$i" -eq $(((RUNS + 1) / 2)) ]; then
      "$BIN/dreamscope" trace -f -o "$work/$config.db" -- "$BIN/dist_train" "${args[@]}" >"$work/traced.txt" 2>&1
      traced=$(median_of <"$work/traced.txt")
    fi
  done
  cp "$work/$config.db" "$out/$config.db"
  load_after=$(cut -d' ' -f1 /proc/loadavg)
  python3 - "$out/$config.json" "$config" "dist_train ${args[*]}" "$traced" "$load_before $load_after" "${untraced[@]}" <<'PY'
import json, platform, statistics, subprocess, sys
path, config, command, traced, load, runs = (sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]),
                                             [float(x) for x in sys.argv[5].split()], [int(x) for x in sys.argv[6:]])
model = next((l.split(":", 1)[1].strip() for l in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines()
              if l.startswith("Model name")), platform.processor())
json.dump({"config": config, "command": command,
           "untraced_median_step_ns": runs, "untraced_median_of_runs_ns": int(statistics.median(runs)),
           "traced_median_step_ns": traced,
           "load_average_1min_before_after": load,
           "machine": f"{model}, {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores"},
          open(path, "w"), indent=2)
PY
  echo "$config: $(stat -c %s "$out/$config.db") bytes; untraced median step $(python3 -c "import json; print(json.load(open('$out/$config.json'))['untraced_median_of_runs_ns'])") ns; traced $traced ns"
done
