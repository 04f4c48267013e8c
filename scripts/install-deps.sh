#!/usr/bin/env bash
# Installs the Debian packages dreamscope builds and tests with. Idempotent: packages
# already present are left alone, and nothing is fetched when nothing is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config clang libclang-rt-14-dev
  libsqlite3-dev sqlite3 zlib1g-dev libdeflate-dev libisal-dev
  libboost-graph-dev
  libfmt-dev libcli11-dev libsimdjson-dev libtomlplusplus-dev nlohmann-json3-dev libre2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev libgl-dev
  xvfb xauth chromium
  # What a Python user of dreamscope has: the PyTorch sample and the Python-layer tests trace
  # Debian's PyTorch (CPU) and torchvision.
  python3 python3-torch python3-torchvision
  # `import dreamscope` for notebooks (docs/python.md): the compiled module (pybind11, Python's
  # headers) and what it hands its results in (numpy, pandas) and draws them with (matplotlib).
  pybind11-dev python3-dev python3-numpy python3-pandas python3-matplotlib
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
