#!/usr/bin/env python3
"""The data what-ifs of the unmodified PyTorch sample against real steps of the configuration
they predict, run in the same process tens of ms apart (issue 33): the paired method.

Why: this 2-core VM changes speed within seconds (one untraced run's steps went from 67 to
48 ms mid-run, another's from 50 to 70), so a prediction compared with a separate untraced
run, seconds away, is compared with another machine (bench/pytorch_whatif_accuracy.sh's
rounds disagree by ±20 %). Here each traced run of samples/pytorch/train.py alternates blocks
of BLOCK steps (`--alternate`): blocks A as traced (the configuration the what-if starts
from), blocks B with the configuration the what-if predicts, recording paused in them
(dreamscope.pause: a paused step costs what an untraced one does, docs/annotations.md). The
what-if predicts every recorded A step (`whatif -o`, the predicted trace's steps); each A
block's median prediction is compared with the mean of its two B neighbours' median steps.

Blocks: A B A B ... A (BLOCKS, odd). The first A block (start-up) and the A blocks without
two B neighbours are not compared; the first TRACED_SKIP recorded steps of an A block and
the first PAUSED_SKIP steps of a B block are left out (B's workers start or refill, and what
B's workers had made ahead runs into the next A block). A pair whose two B neighbours differ
by more than STABLE % saw the machine change around it and is not counted. A run's error is
the median over its counted pairs; a run with fewer than PAIRS counted pairs is marked `*`
and not counted. A case's error is the median over its counted runs.

The `correction` case alternates the traced configuration with itself: `replay
--correct-overhead` predicts each recorded step untraced, against the paused ones; the
tracer's cost is the traced steps' median against the same neighbours.

    bench/pytorch_whatif_paired.py                     # binaries from build/release/bin
    RUNS=5 CASES="io-workers2 cpu-workers2" bench/pytorch_whatif_paired.py
    VERBOSE=1 bench/pytorch_whatif_paired.py          # every pair's figures on stderr
    RECORD=tests/data/cpu/pytorch_paired bench/pytorch_whatif_paired.py   # keep traces and steps
    FROM=tests/data/cpu/pytorch_paired bench/pytorch_whatif_paired.py     # predict from those, run nothing

Exits 1 when a case's error exceeds BOUND % (default 5) or a case has no counted run. A
recording keeps each case's error; from it (FROM), a case recorded beyond BOUND fails only
when its error moves more than DRIFT points (default 1) away from the recorded one: the
CTest gate `pytorch_paired_recorded`, deterministic, holds every case where it was measured.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
env = os.environ.get
BIN = env("BIN", os.path.join(ROOT, "build/release/bin"))
DREAMSCOPE = os.path.join(BIN, "dreamscope")
RUNS = int(env("RUNS", "3"))
BLOCK = int(env("BLOCK", "15"))
BLOCKS = int(env("BLOCKS", "9"))
BATCH = int(env("BATCH", "16"))
DELAY_MS = float(env("DELAY_MS", "40"))
AUGMENT = int(env("AUGMENT", "200"))
BOUND = float(env("BOUND", "5"))
STABLE = float(env("STABLE", "10"))
PAIRS = int(env("PAIRS", "2"))
TRACED_SKIP = int(env("TRACED_SKIP", "3"))
PAUSED_SKIP = int(env("PAUSED_SKIP", "5"))
DRIFT = float(env("DRIFT", "1"))
RECORD, FROM = env("RECORD", ""), env("FROM", "")
VERBOSE = env("VERBOSE", "") not in ("", "0")  # every pair on stderr


def cases(cores, delay, augment):
    """name: (traced options, the predicted configuration's options, what predicts it)."""
    cpu, io = f"--workers 0 --augment {augment}", f"--workers 0 --fetch-delay-ms {delay:g}"
    data = ["whatif", "--no-data-stalls", "-s", "data"]
    return {
        "cpu-workers2": (cpu, "--workers 2", data + ["-p", "workers=2", "-p", f"cores={cores}"]),
        "cpu-synthetic": (cpu, "--no-loading", data + ["-p", "synthetic=true"]),
        "io-workers2": (io, "--workers 2", data + ["-p", "workers=2", "-p", f"cores={cores}"]),
        "io-w1-workers2": (f"--workers 1 --fetch-delay-ms {delay:g}", "--workers 2",
                           data + ["-p", "workers=2", "-p", f"cores={cores}"]),
        "io-prefetch1": (io, "--workers 2 --prefetch-factor 1",
                         data + ["-p", "workers=2", "-p", "prefetch=1", "-p", f"cores={cores}"]),
        "io-storage2": (io, f"--fetch-delay-ms {delay / 2:g}", data + ["-p", "storage=2"]),
        "io-cache": (io, "--fetch-delay-ms 0", data + ["-p", "cache=1.0"]),
        "io-synthetic": (io, "--no-loading", data + ["-p", "synthetic=true"]),
        "correction": (io, "", ["replay", "--correct-overhead"]),
    }


def torch_python():
    for candidate in ("/usr/bin/python3", "python3"):
        if subprocess.run([candidate, "-c", "import torch"], capture_output=True).returncode == 0:
            return candidate
    sys.exit("no Python with torch here (scripts/install-deps.sh installs Debian's python3-torch)")


def record_run(python, folder, name, run, traced, other):
    """Traces one alternating run; returns the trace and the file of its printed steps."""
    trace, steps = os.path.join(folder, f"{name}-{run}.db"), os.path.join(folder, f"{name}-{run}.steps")
    cmd = [DREAMSCOPE, "trace", "-f", "-o", trace, "--", python, os.path.join(ROOT, "samples/pytorch/train.py"),
           "--device", "cpu", "--steps", str(BLOCK * BLOCKS), "--batch-size", str(BATCH), "--block", str(BLOCK),
           *traced.split(), f"--alternate={other}"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {out.returncode}\n{out.stderr[-2000:]}")
    with open(steps, "w") as f:
        f.writelines(line + "\n" for line in out.stdout.splitlines() if line.startswith("step_ns "))
    return trace, steps


def step_ranges(path):
    out = subprocess.run([DREAMSCOPE, "analyze", path, "--only", "steps", "--format", "json", "--all-steps"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise ValueError(f"analyze {path}: {out.stderr.strip().splitlines()[-1:]}")
    return [(s["start_ns"], s["end_ns"]) for s in json.loads(out.stdout)["steps"]["steps"]]


def recorded_blocks(ranges):
    """The recorded steps in blocks: a step that does not begin where the one before ended
    follows a pause (the step spanning it is no step)."""
    blocks = []
    for i, (start, _) in enumerate(ranges):
        if i == 0 or start != ranges[i - 1][1]:
            blocks.append([])
        blocks[-1].append(i)
    return blocks


def run_error(trace, steps_file, predict, work):
    """(error %, tracer cost % or None, counted pairs, pairs) of one run, or a string saying why none."""
    measured = {}
    with open(steps_file) as f:
        for line in f:
            _, step, kind, ns = line.split()
            measured.setdefault(int(step) // BLOCK, []).append(int(ns))
    predicted = os.path.join(work, "predicted.db")
    if os.path.exists(predicted):
        os.remove(predicted)
    out = subprocess.run([DREAMSCOPE, *predict[:1], trace, *predict[1:], "-o", predicted],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return "not predicted: " + (out.stderr.strip().splitlines() or ["?"])[-1]
    traced, after = step_ranges(trace), step_ranges(predicted)
    if len(traced) != len(after):
        return f"the prediction has {len(after)} steps, the trace {len(traced)}"
    blocks = recorded_blocks(traced)
    if len(blocks) != (BLOCKS + 1) // 2:
        return f"{len(blocks)} recorded blocks, {(BLOCKS + 1) // 2} expected"
    errors, costs, pairs = [], [], 0
    for k, block in enumerate(blocks):
        b = 2 * k  # the A blocks are the even ones
        if b == 0 or (b - 1) not in measured or (b + 1) not in measured:
            continue
        pairs += 1
        neighbours = [statistics.median(measured[n][PAUSED_SKIP:]) for n in (b - 1, b + 1)]
        if abs(neighbours[0] - neighbours[1]) > STABLE / 100 * min(neighbours):
            continue
        reference = statistics.mean(neighbours)
        kept = block[TRACED_SKIP:]
        prediction = statistics.median(after[i][1] - after[i][0] for i in kept)
        as_traced = statistics.median(traced[i][1] - traced[i][0] for i in kept)
        errors.append(100 * (prediction / reference - 1))
        costs.append(100 * (as_traced / reference - 1))
        if VERBOSE:
            print(f"  {os.path.basename(trace)} block {b}: traced {as_traced / 1e6:.2f} ms, predicted "
                  f"{prediction / 1e6:.2f} ms, neighbours {neighbours[0] / 1e6:.2f} and {neighbours[1] / 1e6:.2f} ms",
                  file=sys.stderr)
    if len(errors) < PAIRS:
        return f"* {len(errors)} of {pairs} pairs counted (the machine changed around the others)"
    return statistics.median(errors), statistics.median(costs), len(errors), pairs


def main():
    if RECORD and FROM:
        sys.exit("RECORD and FROM exclude each other")
    if FROM:
        with open(os.path.join(FROM, "measured.json")) as f:
            recorded = json.load(f)
        globals().update(RUNS=recorded["runs"], BLOCK=recorded["block"], BLOCKS=recorded["blocks"])
        cores, delay, augment = recorded["cores"], recorded["fetch_delay_ms"], recorded["augment"]
    else:
        cores, delay, augment = os.cpu_count(), DELAY_MS, AUGMENT
    all_cases = cases(cores, delay, augment)
    chosen = env("CASES", "").split() or list(all_cases)
    unknown = [c for c in chosen if c not in all_cases]
    if unknown:
        sys.exit(f"unknown case {unknown[0]} (cases: {' '.join(all_cases)})")
    work = tempfile.mkdtemp()
    try:
        folder = FROM or RECORD or work
        if not FROM:
            python = torch_python()
            if RECORD:
                os.makedirs(RECORD, exist_ok=True)
                model = next((l.split(":", 1)[1].strip() for l in subprocess.run(
                    ["lscpu"], capture_output=True, text=True).stdout.splitlines() if l.startswith("Model name")), "")
                with open(os.path.join(RECORD, "measured.json"), "w") as f:
                    json.dump({"runs": RUNS, "block": BLOCK, "blocks": BLOCKS, "batch_size": BATCH, "cores": cores,
                               "fetch_delay_ms": delay, "augment": augment, "machine": model,
                               "cases": chosen}, f, indent=2)
            # Rounds: each case once per round, so that every case samples the same hours.
            for run in range(1, RUNS + 1):
                for name in chosen:
                    traced, other, _ = all_cases[name]
                    record_run(python, folder, name, run, traced, other)
                    if sys.stderr.isatty():
                        print(f"\rrun {run}/{RUNS}: {name:<16}", end="", file=sys.stderr, flush=True)
            if sys.stderr.isatty():
                print("\r" + " " * 40 + "\r", end="", file=sys.stderr)
        recorded_errors = recorded.get("errors", {}) if FROM else {}
        errors = {}
        failures = []
        print(f"{'case':<16} {'error':>8} {'tracer':>8}  runs (error %, counted pairs / pairs)")
        for name in chosen:
            _, _, predict = all_cases[name]
            results = []
            for run in range(1, RUNS + 1):
                trace = os.path.join(folder, f"{name}-{run}.db")
                if not os.path.exists(trace):
                    results.append("not recorded")
                    continue
                results.append(run_error(trace, os.path.join(folder, f"{name}-{run}.steps"), predict, work))
            counted = [r for r in results if not isinstance(r, str)]
            shown = " ".join(f"{r[0]:+.1f}({r[2]}/{r[3]})" if not isinstance(r, str) else f"[{r}]" for r in results)
            if not counted:
                print(f"{name:<16} {'-':>8} {'-':>8}  {shown}")
                failures.append(name)
                continue
            error = statistics.median(r[0] for r in counted)
            cost = statistics.median(r[1] for r in counted)
            # The traced steps against their neighbours are the tracer's cost only where the
            # neighbours run the same configuration.
            cost = f"{cost:+7.1f}%" if not all_cases[name][1].strip() else "-"
            print(f"{name:<16} {error:+7.1f}% {cost:>8}  {shown}")
            errors[name] = round(error, 2)
            limit = BOUND
            if name in recorded_errors:
                limit = max(BOUND, abs(recorded_errors[name]) + DRIFT)
            if abs(error) > limit:
                failures.append(name)
        if RECORD:
            path = os.path.join(RECORD, "measured.json")
            with open(path) as f:
                recorded = json.load(f)
            recorded["errors"] = errors
            with open(path, "w") as f:
                json.dump(recorded, f, indent=2)
        if failures:
            sys.stdout.flush()
            print(f"beyond ±{BOUND:g} % (or the recorded error) or with no counted run: {' '.join(failures)}",
                  file=sys.stderr)
            return 1
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
