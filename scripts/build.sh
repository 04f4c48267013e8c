#!/usr/bin/env bash
# Configures and builds one build tree. Usage: scripts/build.sh [release|asan]
#   release: build/release, everything, warnings are errors (what users and CI run)
#   asan:    build/asan, AddressSanitizer + UBSan, the libraries and their unit tests
#            (no GUI, no benchmarks, no LD_PRELOAD tracer: ASan must be first in a process)
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-release}
jobs=${JOBS:-$(nproc)}
# ccache (installed by install-deps.sh) shares objects between clones of the repository:
# paths are made relative to the source tree and the build directory is not hashed.
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=true CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
case "$config" in
  release)
    cmake -S . -B build/release "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDREAMSCOPE_WERROR=ON >/dev/null ;;
  asan)
    cmake -S . -B build/asan "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug -DDREAMSCOPE_WERROR=ON \
      -DDREAMSCOPE_SANITIZE=ON -DDREAMSCOPE_BUILD_GUI=OFF -DDREAMSCOPE_BUILD_BENCH=OFF >/dev/null ;;
  *) echo "usage: $0 [release|asan]" >&2; exit 2 ;;
esac
cmake --build "build/$config" -j "$jobs"
