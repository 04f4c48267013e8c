#!/usr/bin/env python3
"""`import dreamscope` against Holistic Trace Analysis on the same notebook steps (issue 37):
load a trace into DataFrames and compute HTA's temporal breakdown, each tool in a fresh
process, wall time and peak memory (the process's maximum resident set, Python and pandas
included in both). The MTIA trace of ../shared/data by default (~448k events).

HTA is not in Debian and needs networkx and plotly, which are not either: where HTA can be
imported (HTA_PATH, colon-separated folders put first on sys.path: a checkout of its sources,
and stand-ins for the modules it imports but these two steps never call), it runs beside
dreamscope; elsewhere only dreamscope's figures are printed, and the script says so.

    PYTHONPATH=build/release/lib/python /usr/bin/python3 bench/python_vs_hta.py
    HTA_PATH=/path/to/stubs:/path/to/HolisticTraceAnalysis bench/python_vs_hta.py
    TRACE_DIR=../shared/data/kineto-hta/nccl_parser_config RUNS=5 bench/python_vs_hta.py

Prints each tool's median wall time over RUNS (default 3) fresh processes and the largest
peak RSS, and the ratios; exits 1 when HTA ran and dreamscope is less than MIN_SPEEDUP
(default 30) times faster or uses more memory than HTA.
"""
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "data")
TRACE_DIR = os.environ.get("TRACE_DIR", os.path.join(SHARED, "kineto-hta", "mtia_trace_single_rank"))
RUNS = int(os.environ.get("RUNS", "3"))
MIN_SPEEDUP = float(os.environ.get("MIN_SPEEDUP", "30"))
HTA_PATH = [p for p in os.environ.get("HTA_PATH", "").split(":") if p]

# Each tool's steps, run in a child: the figures are printed as one JSON line.
CHILD = r"""
import json, resource, sys, time
tool, trace_dir, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.path[:0] = extra
import pandas  # both tools hand out DataFrames; a notebook has pandas imported already
t0 = time.perf_counter()
if tool == "dreamscope":
    from dreamscope.hta import TraceAnalysis
else:
    for module in ("_stub",):  # stand-ins some HTA_PATH folders provide; optional
        try:
            __import__(module)
        except ImportError:
            pass
    from hta.trace_analysis import TraceAnalysis
imported = time.perf_counter()
analyzer = TraceAnalysis(trace_dir=trace_dir)
loaded = time.perf_counter()
breakdown = analyzer.get_temporal_breakdown(visualize=False)
done = time.perf_counter()
row = breakdown.iloc[0]
print(json.dumps({"import_s": imported - t0, "load_s": loaded - imported, "breakdown_s": done - loaded,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "idle_pctg": float(row["idle_time_pctg"])}))
"""


def run(tool, extra):
    env = dict(os.environ)
    if tool == "dreamscope":
        built = os.path.join(ROOT, "build", "release", "lib", "python")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), built) if p)
    out = subprocess.run([sys.executable, "-c", CHILD, tool, TRACE_DIR, *extra], capture_output=True, text=True,
                         env=env)
    if out.returncode != 0:
        return None, (out.stderr.strip().splitlines() or ["exit %d" % out.returncode])[-1]
    return json.loads(out.stdout.strip().splitlines()[-1]), None


def measure(tool, extra):
    results = []
    for _ in range(RUNS):
        figures, problem = run(tool, extra)
        if problem:
            return None, problem
        results.append(figures)
    return results, None


def show(tool, results):
    wall = statistics.median(r["load_s"] + r["breakdown_s"] for r in results)
    rss = max(r["peak_rss_mb"] for r in results)
    print(f"{tool:<11} load {statistics.median(r['load_s'] for r in results):8.3f} s  temporal breakdown "
          f"{statistics.median(r['breakdown_s'] for r in results):7.3f} s  both {wall:8.3f} s  "
          f"peak RSS {rss:7.1f} MB  idle {results[0]['idle_pctg']:.2f} %")
    return wall, rss


def main():
    if not os.path.isdir(TRACE_DIR):
        sys.exit(f"{TRACE_DIR}: no such folder (TRACE_DIR names a folder of one rank's traces)")
    print(f"trace folder {TRACE_DIR}, median of {RUNS} fresh processes each")
    ours, problem = measure("dreamscope", [])
    if problem:
        sys.exit(f"dreamscope: {problem}")
    our_wall, our_rss = show("dreamscope", ours)
    theirs, problem = measure("hta", HTA_PATH)
    if problem:
        print(f"HTA          not run: {problem} (HTA_PATH puts its sources first on sys.path)")
        return 0
    their_wall, their_rss = show("HTA", theirs)
    speedup, memory = their_wall / our_wall, our_rss / their_rss
    print(f"dreamscope is {speedup:.1f}x faster, with {memory:.2f}x HTA's peak memory "
          f"(goals: at least {MIN_SPEEDUP:g}x, at most 1x)")
    return 0 if speedup >= MIN_SPEEDUP and memory <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
