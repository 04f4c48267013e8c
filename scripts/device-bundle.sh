#!/usr/bin/env bash
# Packs what a GPU machine needs to run dreamscope without building it: the machines the
# project is lent (see docs/gpu.md) have CUDA, PyTorch and CMake but none of our Debian
# libraries, and reach no package registry. Builds the release tree here (CUDA samples
# included, with nvcc), then copies into build/device/:
#   bin/    dreamscope, cpu_train, cuda_train (stripped)
#   lib/    the tracer and annotation libraries, the Python module and the zero-code PyTorch
#           layer (python-boot), and every shared library
#           they need that is not glibc's, libstdc++'s or CUDA's own (fmt, SQLite, simdjson,
#           toml++, zlib), plus CUPTI
#   tests/  the tracer's process tests and their programs
# bench/gpu/device_session.sh runs from it there; `run` carries it with carry: ["build/device"].
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh release
src=build/release
out=build/device
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/tests/programs"
for b in dreamscope cpu_train cuda_train; do
  [ -x "$src/bin/$b" ] && cp "$src/bin/$b" "$out/bin/"
done
cp "$src"/lib/libdreamscope-*.so "$out/lib/"
cp -r "$src/lib/python" "$src/lib/python-boot" "$out/lib/"
cp "$src/tests/tracer/tracer_process_tests" "$out/tests/"
cp "$src"/tests/tracer/programs/* "$out/tests/programs/"
# Shared libraries from this machine's packages; the system's own (glibc, the C++ runtime)
# and CUDA's are the GPU machine's.
for f in "$out"/bin/* "$out"/lib/*.so "$out/tests/tracer_process_tests"; do
  ldd "$f" 2>/dev/null | awk '/=> \// {print $3}'
done | sort -u | while read -r so; do
  case "$(basename "$so")" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|libutil.so*|libstdc++.so*|libgcc_s.so*) ;;
    libcuda.so*|libcudart.so*|libcublas*|libnvrtc*) ;;
    *) cp -L "$so" "$out/lib/" ;;
  esac
done
find "$out" -type f \( -perm -u+x -o -name '*.so*' \) -exec strip --strip-debug {} + 2>/dev/null || true
du -sh "$out"
