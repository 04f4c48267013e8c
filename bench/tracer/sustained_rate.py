#!/usr/bin/env python3
"""The highest NVTX range rate the tracer records without dropping anything.

Usage: bench/tracer/sustained_rate.py [BUILD_DIR] [THREADS] [SECONDS] [BUFFER_MB]
Runs bench/tracer_rate under `dreamscope trace` at doubling rates (ranges per second, two
events each), reads meta.dropped_events from each trace, and prints the last rate with no
drops. The per-thread buffers grow up to `--buffer-mb` (512 MiB by default), which hides a
writer that falls behind for the whole run; this script caps them at BUFFER_MB (default
16: the threads' own chunks and a few spare ones), so a rate passes only if the writer
keeps up with it."""
import json
import os
import subprocess
import sys
import tempfile

build = sys.argv[1] if len(sys.argv) > 1 else "build/release"
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 4
seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
buffer_mb = int(sys.argv[4]) if len(sys.argv) > 4 else 16
dreamscope = os.path.join(build, "bin", "dreamscope")
program = os.path.join(build, "bench", "tracer_rate")

best = 0
rate = 250_000
with tempfile.TemporaryDirectory() as tmp:
    while rate <= 64_000_000:
        out = os.path.join(tmp, "rate.db")
        subprocess.run([dreamscope, "trace", "-f", "-o", out, "--buffer-mb", str(buffer_mb), "--", program,
                        str(threads), str(rate), str(seconds)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        info = json.loads(subprocess.run([dreamscope, "info", "--json", out], check=True,
                                         capture_output=True, text=True).stdout)
        recorded, dropped = info["events"]["annotation"], info["dropped_events"]
        print(f"{rate:>12,} ranges/s ({2 * rate:>12,} events/s): {recorded:>11,} recorded, {dropped:>10,} dropped")
        if dropped:
            break
        best = rate
        rate *= 2
print(f"sustained without drops: {best:,} ranges/s = {2 * best:,} NVTX events/s "
      f"({threads} threads, --buffer-mb {buffer_mb})")
