#!/usr/bin/env bash
# Runs the libFuzzer targets (clang, AddressSanitizer + UBSan, coverage in every library), each
# on a seed corpus made from ../shared/data and tests/data.
#
#   scripts/fuzz.sh 3600                 # an hour a target, for a long hunt (build/fuzz, -O2)
#   scripts/fuzz.sh 600 kineto_import    # one target
#   scripts/fuzz.sh 3600 scenario & BUILD=0 scripts/fuzz.sh 3600 expression  # two at once (after a build)
#   TREE=build/asan scripts/fuzz.sh 15   # what CI runs (scripts/test.sh): 15 s a target, with
#                                        # the targets of the sanitizer tree scripts/build.sh asan built
#
# By default the script builds the fuzz targets alone in build/fuzz, optimized, which runs several
# times more inputs a second than the -O0 sanitizer tree. TREE=DIR runs the targets already built
# in DIR instead; so does BUILD=0 for build/fuzz, so that two hunts side by side build once.
#
# Each target runs until its time is up; an input that crashes, trips a sanitizer, takes more
# than 10 s or allocates more than 256 MB at once is a finding: it is kept under
# TREE/findings/TARGET/, the script prints the command that replays it, and exits 1.
# The corpus each target grows is kept in TREE/corpus/TARGET/ for the next run.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-15}
shift || true
all=(kineto_import nsys_import trace_db trace_log scenario expression)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
shared=${DREAMSCOPE_SHARED_DATA:-../shared/data}
build=${TREE:-build/fuzz}

export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=true CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ -z "${TREE:-}" ] && [ "${BUILD:-1}" != 0 ]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DDREAMSCOPE_FUZZ=ON -DDREAMSCOPE_WERROR=ON -DDREAMSCOPE_BUILD_GUI=OFF -DDREAMSCOPE_BUILD_TESTS=OFF \
    -DDREAMSCOPE_BUILD_BENCH=OFF >/dev/null
  cmake --build "$build" -j "${JOBS:-$(nproc)}" --target "${all[@]/#/fuzz_}" >/dev/null
fi
for t in "${targets[@]}"; do
  if [ ! -x "$build/fuzz/fuzz_$t" ]; then
    echo "fuzz.sh: $build/fuzz/fuzz_$t is not built (scripts/build.sh asan builds the targets in build/asan)" >&2
    exit 2
  fi
done

# Seeds: real files of each format, small enough for thousands of runs a second or so.
# Each run its own copy, so that runs of different targets can go side by side.
seeds=$build/seeds-$$
trap 'rm -rf "$seeds"' EXIT
mkdir -p "$seeds"/{kineto_import,nsys_import,trace_db,trace_log,scenario,expression}
# small DIR... -name PATTERN [-o -name PATTERN]: the files under 300 KB
small() {
  local dirs=()
  while [ $# -gt 0 ] && [ "$1" != -name ]; do dirs+=("$1"); shift; done
  find "${dirs[@]}" -type f -size -300k \( "$@" \) 2>/dev/null
}
n=0
for f in $(small "$shared" tests/data -name '*.json' -o -name '*.json.gz'); do
  cp "$f" "$seeds/kineto_import/$((n += 1))-$(basename "$f")"
done
for f in $(small "$shared/fuzz" -name '*.db'); do
  sqlite3 "$f" .dump >"$seeds/trace_db/$(basename "$f").sql"
done
cp tests/data/nsys/*.sql "$seeds/nsys_import/"
for f in $(find "$shared/wild" -type f -name '*.sqlite' -size -1024k); do
  sqlite3 "$f" .dump | head -c 300000 >"$seeds/nsys_import/$(basename "$(dirname "$f")").sql"
done
cp whatif/scenarios/*.toml "$seeds/scenario/"
cp "$shared"/fuzz/*.toml "$seeds/scenario/" 2>/dev/null || true # a checkout without ../shared
# Committed seeds: inputs written by hand and past findings, kept as regressions.
for t in kineto_import nsys_import trace_db trace_log scenario expression; do
  if [ -d "fuzz/seeds/$t" ]; then cp fuzz/seeds/"$t"/* "$seeds/$t/"; fi
done

status=0
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t
  findings=$build/findings/$t
  mkdir -p "$corpus" "$findings"
  log=$build/$t.log
  echo "== fuzz_$t: ${seconds}s, $(ls "$seeds/$t" | wc -l) seeds, $(ls "$corpus" | wc -l) in the corpus"
  if "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 -malloc_limit_mb=256 \
    -max_len=262144 -artifact_prefix="$findings/" -print_final_stats=1 "$corpus" "$seeds/$t" >"$log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$log" | tr '\n' ' '
    echo
  else
    status=1
    echo "fuzz_$t found a problem; its log: $log"
    grep -E "ERROR|SUMMARY|Test unit written|==[0-9]+==" "$log" | head -20
    for f in "$findings"/*; do
      [ -e "$f" ] && echo "replay it: $build/fuzz/fuzz_$t $f"
    done
  fi
done
exit $status
