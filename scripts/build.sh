#!/usr/bin/env bash
# Configures and builds one build tree. Usage: scripts/build.sh [release|asan]
#   release: build/release, everything, warnings are errors (what users and CI run)
#   asan:    build/asan, clang at -O0 with AddressSanitizer + UBSan and libFuzzer's coverage:
#            the libraries, their unit tests and the fuzz targets (no GUI, no benchmarks, no
#            LD_PRELOAD tracer: ASan must be first in a process). One tree for both, with clang,
#            so that CI compiles the libraries under the sanitizers once, not twice.
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
    # A tree configured by an earlier version of this script with gcc is configured afresh.
    if [ -f build/asan/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang' build/asan/CMakeCache.txt; then
      rm -rf build/asan
    fi
    CC=clang CXX=clang++ cmake -S . -B build/asan "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug -DDREAMSCOPE_WERROR=ON \
      -DDREAMSCOPE_FUZZ=ON -DDREAMSCOPE_BUILD_GUI=OFF -DDREAMSCOPE_BUILD_BENCH=OFF >/dev/null ;;
  *) echo "usage: $0 [release|asan]" >&2; exit 2 ;;
esac
cmake --build "build/$config" -j "$jobs"
