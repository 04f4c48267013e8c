"""What dreamscope's Python instrumentation costs per module call (issue 33, item 4).

    bench/tracer/python_layer_cost.py [BIN]      # BIN: build/release/bin by default

Runs a model of 64 tiny modules (nn.Identity in an nn.Sequential, so that the module calls
are all the work there is) forward REPEAT times, in three ways, alternating, ROUNDS rounds:
untraced; traced with module ranges off (`--python-modules -1`: no hook in Module.__call__);
traced with every call recorded (`--python-modules 2`: the model and each child). It prints
the median time per module call of each and the differences: what a recorded module range
costs the program, against what overhead correction charges for it: the `python_range`
calibration the traced run measured at start (a recorded module call against a plain one).
"""
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile

CHILD = r'''
import time, torch
model = torch.nn.Sequential(*[torch.nn.Identity() for _ in range(64)])
x = torch.zeros(1)
for _ in range(50):
    model(x)
start = time.perf_counter_ns()
for _ in range(2000):
    model(x)
print("per_call_ns", (time.perf_counter_ns() - start) / (2000 * 65))
'''


def python():
    for candidate in ("/usr/bin/python3", sys.executable):
        if subprocess.run([candidate, "-c", "import torch"], capture_output=True).returncode == 0:
            return candidate
    sys.exit("no Python with torch here (scripts/install-deps.sh installs Debian's python3-torch)")


def per_call(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"per_call_ns ([0-9.]+)", out).group(1))


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    bin_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "release", "bin")
    dreamscope = os.path.join(bin_dir, "dreamscope")
    py = python()
    rounds = int(os.environ.get("ROUNDS", "5"))
    with tempfile.TemporaryDirectory() as work:
        trace = os.path.join(work, "t.db")
        traced = lambda depth: [dreamscope, "trace", "-f", "-o", trace, "--python-modules", depth, "--", py, "-c", CHILD]
        figures = {"untraced": [], "hooks off": [], "recorded": []}
        calibration = []
        for _ in range(rounds):
            figures["untraced"].append(per_call([py, "-c", CHILD]))
            figures["hooks off"].append(per_call(traced("-1")))
            figures["recorded"].append(per_call(traced("2")))
            db = sqlite3.connect(trace)
            costs = dict(db.execute("select event_kind, cost_ns from calibration"))
            calibration.append(costs.get("python_range", 0))
    med = {k: statistics.median(v) for k, v in figures.items()}
    print(f"module call, untraced                         {med['untraced']:8.0f} ns")
    print(f"module call, traced, no module hook           {med['hooks off']:8.0f} ns")
    print(f"module call, traced, each call a range        {med['recorded']:8.0f} ns")
    print(f"cost of a recorded module range               {med['recorded'] - med['untraced']:8.0f} ns a call")
    print(f"calibrated at start (python_range)            {statistics.median(calibration):8.0f} ns a range")
    print(f"medians of {rounds} alternating rounds, {64 + 1} module calls x 2000 each")


if __name__ == "__main__":
    main()
