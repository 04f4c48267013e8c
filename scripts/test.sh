#!/usr/bin/env bash
# Installs what is missing, builds, runs the main job on the bundled sample, then every test:
# the release build's suites (tracer, GUI offscreen, CLI end to end included), then the unit
# tests again under AddressSanitizer + UBSan. Tests that need a GPU say they are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/run.sh
export QT_QPA_PLATFORM=offscreen
echo "== tests (release build)"
ctest --test-dir build/release --output-on-failure -j "$(nproc)" --timeout 600
echo "== build (asan)"
scripts/build.sh asan
echo "== tests (AddressSanitizer + UBSan)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/asan --output-on-failure -j "$(nproc)" --timeout 900
