#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on the bundled sample.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
echo "== build (release)"
scripts/build.sh release
echo "== dreamscope info on the bundled sample trace"
build/release/bin/dreamscope info samples/data/sample.db
