#!/usr/bin/env python3
"""Wall time of cpu_train traced / untraced, median of 5 runs each.

Usage: bench/tracer/cpu_train_overhead.py [BUILD_DIR] [-- CPU_TRAIN_ARGS...]
Default arguments: a 400-step run with 2 loader workers. Also reported: cpu_train's own
median step time, which is what a replay of the trace must reproduce."""
import os
import statistics
import subprocess
import sys
import tempfile
import time

args = sys.argv[1:]
extra = []
if "--" in args:
    i = args.index("--")
    args, extra = args[:i], args[i + 1:]
build = args[0] if args else "build/release"
cpu_train = os.path.join(build, "bin", "cpu_train")
dreamscope = os.path.join(build, "bin", "dreamscope")
train_args = extra or ["--steps", "400", "--workers", "2"]


def run(traced, data):
    cmd = [cpu_train, *train_args, "--data", data]
    if traced:
        cmd = [dreamscope, "trace", "-f", "-o", os.path.join(data, "..", "t.db"), "--", *cmd]
    start = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    step = next(int(float(l.split()[1])) for l in out.splitlines() if l.startswith("median_step_ns"))
    return wall, step


with tempfile.TemporaryDirectory() as tmp:
    data = os.path.join(tmp, "data")
    run(False, data)  # generates the dataset once
    results = {}
    for traced in (False, True, False, True, False, True, False, True, False, True):
        results.setdefault(traced, []).append(run(traced, data))
    for traced in (False, True):
        walls = [w for w, _ in results[traced]]
        steps = [s for _, s in results[traced]]
        label = "traced  " if traced else "untraced"
        print(f"{label} wall {statistics.median(walls) * 1e3:9.1f} ms   median step {statistics.median(steps) / 1e3:9.1f} us")
    ratio = statistics.median(w for w, _ in results[True]) / statistics.median(w for w, _ in results[False])
    step_ratio = statistics.median(s for _, s in results[True]) / statistics.median(s for _, s in results[False])
    print(f"traced/untraced: wall {ratio:.3f}, median step {step_ratio:.3f}  (cpu_train {' '.join(train_args)})")
