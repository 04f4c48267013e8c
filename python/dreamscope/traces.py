"""Traces as pandas DataFrames, analyses and what-ifs from Python (docs/python.md).

    import dreamscope
    t = dreamscope.load("trace.db")          # or Kineto JSON, an nsys export, a folder of ranks
    t.kernels.groupby("name", observed=True).dur.sum()
    t.analyze(only=["hta"]).json["hta"]
    t.replay(correct_overhead=True).steps
    t.whatif("data", workers=4).predictions

The work is done by the compiled module dreamscope._core (the same C++ as the CLI); this
module turns its columns into DataFrames (numpy arrays, strings as categoricals, missing
values as pandas' nullable Int64) and its JSON reports into Python objects.
"""

import json
import os

__all__ = ["load", "Trace", "JobSummaries", "Analysis", "Replay", "WhatIf", "scenarios"]

_NO_VALUE = -(2 ** 63)  # the trace's "not recorded" (kNoValue)


def _core():
    try:
        from . import _core as core
    except ImportError as e:
        raise ImportError(
            "dreamscope.load() needs dreamscope._core, the compiled module, which this installation does not "
            f"have ({e}). Build dreamscope with pybind11-dev and python3-dev installed (scripts/install-deps.sh), "
            "put its lib/python first on PYTHONPATH, and use the Python it was built for "
            "(cmake: DREAMSCOPE_PYTHON_EXECUTABLE; /usr/bin/python3 by default). See docs/python.md."
        ) from e
    return core


def _pandas():
    try:
        import numpy  # noqa: F401
        import pandas
    except ImportError as e:
        raise ImportError(
            f"dreamscope's DataFrames need numpy and pandas ({e}); on Debian: apt-get install python3-numpy "
            "python3-pandas (scripts/install-deps.sh)"
        ) from e
    return pandas


def frame_from_columns(columns):
    """A DataFrame from _core's columns (columns.h): each column taken as it is, not row by row."""
    pd = _pandas()
    data = {}
    for name, column in columns.items():
        kind = column[0]
        if kind == "int":
            data[name] = column[1]
        elif kind == "nullable":
            values = column[1]
            data[name] = pd.arrays.IntegerArray(values, values == _NO_VALUE)
        elif kind == "category":
            data[name] = pd.Categorical.from_codes(column[1], categories=column[2])
        else:
            raise ValueError(f"column {name}: unknown kind {kind!r}")
    # copy=False: each array becomes its own block; a copy would consolidate them into one.
    return pd.DataFrame(data, copy=False)


def _records(rows, columns=None):
    pd = _pandas()
    return pd.DataFrame.from_records(rows, columns=columns) if rows or columns else pd.DataFrame()


def _label(inputs):
    return inputs[0] if len(inputs) == 1 else f"{inputs[0]} and {len(inputs) - 1} more"


def _inputs(path_or_job):
    if isinstance(path_or_job, (str, os.PathLike)):
        return [os.fspath(path_or_job)]
    return [os.fspath(p) for p in path_or_job]


def load(path_or_job):
    """Opens what the CLI opens: a trace.db, a PyTorch profiler (Kineto) JSON(.gz) of any
    version, an Nsight Systems SQLite export, a tracer part log; a distributed job as several
    files, a folder or a glob of its ranks' traces (one Trace, clocks aligned); or rank summaries
    (*.summary.db, or a folder of them), which give a JobSummaries."""
    core = _core()
    inputs = _inputs(path_or_job)
    if not inputs:
        raise ValueError("dreamscope.load: nothing to load")
    summaries, traces = core.split_inputs(inputs)
    if summaries and traces:
        raise ValueError("dreamscope.load: give either traces or rank summaries, not both")
    if summaries:
        return JobSummaries(summaries)
    return Trace(core.load(traces), _label(inputs))


def scenarios():
    """The built-in what-if scenarios: name, description and parameters with their defaults."""
    return _core().scenarios()


_TABLES = ("events", "cuda_api", "gpu_ops", "kernels", "annotations", "flows", "tracks", "processes",
           "devices", "memory", "calibration", "ranks")


class Trace:
    """A measured or predicted run. Each table is a DataFrame, built on first use and kept:

    events       every event of the three tables below: table, track, pid, tid, device,
                 stream, [rank], start, end, dur (ns), name, category
    cuda_api     CUDA runtime and driver calls
    gpu_ops      kernels, copies, memsets and syncs on the GPU streams
    kernels      the kernels alone, with their launch configuration
    annotations  ranges on CPU threads (NVTX, dreamscope, PyTorch operators) and GPU streams
    flows, tracks (threads and streams), processes, devices, memory (allocations), calibration,
    ranks        (a job: one row per rank; every table then has a rank column)

    Times are nanoseconds on the trace's clock; names are categoricals; a value the trace does
    not have is <NA>.
    """

    def __init__(self, core_trace, name="trace"):
        self._t = core_trace
        self.name = name
        self._frames = {}
        # How `dreamscope analyze` names a trace in its report: the file, without its folder.
        self._file_name = os.path.basename(name) if os.path.exists(name) else name

    def table(self, name):
        if name not in _TABLES:
            raise KeyError(f"no table {name!r}; tables: {', '.join(_TABLES)}")
        frame = self._frames.get(name)
        if frame is None:
            frame = self._frames[name] = frame_from_columns(self._t.table(name))
        return frame

    def forget_tables(self):
        """Drops the DataFrames built so far (the trace itself stays)."""
        self._frames.clear()

    events = property(lambda self: self.table("events"))
    cuda_api = property(lambda self: self.table("cuda_api"))
    gpu_ops = property(lambda self: self.table("gpu_ops"))
    kernels = property(lambda self: self.table("kernels"))
    annotations = property(lambda self: self.table("annotations"))
    flows = property(lambda self: self.table("flows"))
    tracks = property(lambda self: self.table("tracks"))
    processes = property(lambda self: self.table("processes"))
    devices = property(lambda self: self.table("devices"))
    memory = property(lambda self: self.table("memory"))
    calibration = property(lambda self: self.table("calibration"))
    ranks = property(lambda self: self.table("ranks"))

    @property
    def threads(self):
        t = self.tracks
        return t[t.kind == "thread"].drop(columns=["device", "stream"])

    @property
    def streams(self):
        t = self.tracks
        return t[t.kind == "stream"].drop(columns=["tid"])

    source = property(lambda self: self._t.source)
    begin_time = property(lambda self: self._t.begin_time)
    end_time = property(lambda self: self._t.end_time)
    event_count = property(lambda self: self._t.event_count)
    meta = property(lambda self: self._t.meta)

    @property
    def memory_bytes(self):
        """Bytes the C++ trace holds (its tables and strings), the DataFrames not counted."""
        return self._t.memory_bytes

    def rank(self, r):
        """The trace of one rank of a job, as `dreamscope` commands cut it."""
        return Trace(self._t.rank_subtrace(int(r)), f"{self.name} rank {r}")

    def __repr__(self):
        span = (self.end_time - self.begin_time) / 1e6
        return f"<dreamscope.Trace {self.name!r}: {self.source}, {self.event_count} events, {span:.3f} ms>"

    # ---- analyses ------------------------------------------------------------------------

    def analyze(self, only=None, top=15, all_steps=False, step_filter=True):
        """`dreamscope analyze --format json`: every analysis, or those named in `only`
        ("cross-stack", "hta", "steps", "gpu", "data-stalls", "top-kernels", "critical-path")."""
        text = self._t.analyze_json(self._file_name, list(only or []), int(top), bool(all_steps), bool(step_filter))
        return Analysis(json.loads(text))

    def job_report(self, all_steps=False, step_filter=True):
        """`dreamscope analyze` of a job (a trace of several ranks), as a dict: HTA per rank and
        across ranks, collectives, stragglers."""
        return json.loads(self._t.job_json(self.name, bool(all_steps), bool(step_filter)))

    def replay(self, correct_overhead=False, predicted=True):
        """`dreamscope replay --format json`: the dependency graph replayed, measured and
        replayed time per step; with correct_overhead, the run without the tracer.
        `predicted`: keep the replayed run as a Trace (Replay.predicted)."""
        text, core_trace = self._t.replay(self.name, bool(correct_overhead), bool(predicted))
        return Replay(json.loads(text), None if core_trace is None else Trace(core_trace, f"{self.name} (replayed)"))

    def whatif(self, *scenarios, correct_overhead=False, data_stalls=True, predicted=True, rank=None,
               params=None, **parameters):
        """`dreamscope whatif --format json`: whatif("data", workers=4), whatif("amp", "fused-optimizer").
        A keyword goes to every chosen scenario that declares it; params={"data.workers": 4} names
        the scenario. `predicted`: keep the last prediction (the combination) as a Trace."""
        if len(scenarios) == 1 and isinstance(scenarios[0], (list, tuple)):
            scenarios = tuple(scenarios[0])
        if not scenarios:
            raise ValueError("whatif: name at least one scenario (dreamscope.scenarios() lists them)")
        values = dict(params or {})
        values.update(parameters)
        text_values = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in values.items()}
        text, steps, core_trace = self._t.whatif(self.name, [os.fspath(s) for s in scenarios], text_values,
                                                 bool(correct_overhead), bool(data_stalls), bool(predicted),
                                                 None if rank is None else int(rank))
        report = json.loads(text)
        label = report["predictions"][-1]["label"] if report["predictions"] else "prediction"
        return WhatIf(report, steps,
                      None if core_trace is None else Trace(core_trace, f"{self.name} ({label}, predicted)"))

    def hta(self, include_last_profiler_step=False):
        """HTA's TraceAnalysis on this trace (dreamscope.hta)."""
        from .hta import TraceAnalysis
        return TraceAnalysis.from_trace(self, include_last_profiler_step=include_last_profiler_step)


class Analysis:
    """The report of Trace.analyze(): `json` is what `dreamscope analyze --format json` prints;
    frame(key, ...) makes a DataFrame of a list in it, e.g. frame("top_kernels")."""

    def __init__(self, report):
        self.json = report

    def __getitem__(self, key):
        return self.json[key]

    def __contains__(self, key):
        return key in self.json

    def frame(self, *path):
        node = self.json
        for key in path:
            node = node[key]
        if isinstance(node, dict):
            return _pandas().DataFrame([node])
        return _records(node)

    def __repr__(self):
        return f"<dreamscope.Analysis of {self.json.get('trace', '?')}: {', '.join(self.json)}>"


class Replay:
    """Trace.replay(): `json` as `dreamscope replay --format json`; `steps` per step (ns);
    `predicted` the replayed run as a Trace (None when not kept)."""

    def __init__(self, report, predicted):
        self.json = report
        self.predicted = predicted
        self.steps = _records(report["steps"], ["name", "measured_ns", "predicted_ns", "measured_start_ns",
                                                "predicted_start_ns", "error"])

    measured_ns = property(lambda self: self.json["measured_ns"])
    predicted_ns = property(lambda self: self.json["predicted_ns"])
    error = property(lambda self: self.json["error"])

    def __repr__(self):
        return (f"<dreamscope.Replay: measured {self.measured_ns / 1e6:.3f} ms, predicted "
                f"{self.predicted_ns / 1e6:.3f} ms ({100 * self.error:+.2f} %), {len(self.steps)} steps>")


class WhatIf:
    """Trace.whatif(): `json` as `dreamscope whatif --format json`, and as DataFrames:
    predictions (one row per scenario, then the combination), steps (each prediction's steps,
    measured and predicted), critical_path (the median step's, as traced and per prediction, with
    each entry's share of that step), changes (what each scenario did to the graph);
    data_stalls (a dict, or None); predicted, the last prediction as a Trace."""

    def __init__(self, report, steps, predicted):
        pd = _pandas()
        self.json = report
        self.predicted = predicted
        self.data_stalls = report.get("data_stalls")
        self.predictions = _records(
            [{k: p[k] for k in ("label", "predicted_step_ns", "speedup", "span_ns", "unscheduled_tasks",
                                "matched_nothing")} for p in report["predictions"]],
            ["label", "predicted_step_ns", "speedup", "span_ns", "unscheduled_tasks", "matched_nothing"])
        self.steps = pd.DataFrame(steps)
        paths = [("(as traced)", c["what"], c["ns"], report["replayed_step_ns"]) for c in report["critical_path"]]
        for p in report["predictions"]:
            paths += [(p["label"], c["what"], c["ns"], p["predicted_step_ns"]) for c in p["critical_path"]]
        cp = pd.DataFrame.from_records(paths, columns=["label", "what", "ns", "step_ns"])
        cp["share"] = cp["ns"] / cp["step_ns"].where(cp["step_ns"] > 0)
        self.critical_path = cp.drop(columns=["step_ns"])
        self.changes = _records([dict(label=p["label"], **c) for p in report["predictions"] for c in p["changes"]],
                                ["label", "op", "where", "tasks", "before_ns", "after_ns", "detail"])

    speedup = property(lambda self: self.json["predictions"][-1]["speedup"])

    def __repr__(self):
        rows = ", ".join(f"{p['label']}: {p['speedup']:.3f}x" for p in self.json["predictions"])
        return f"<dreamscope.WhatIf {rows}>"


class JobSummaries:
    """A job from its ranks' summaries (*.summary.db, `dreamscope analyze --summary`):
    `report` is `dreamscope analyze --format json` of them; `ranks` one row per rank."""

    def __init__(self, files, all_steps=False):
        self.files = list(files)
        self.report = json.loads(_core().job_json_from_summaries(self.files, bool(all_steps)))

    @property
    def ranks(self):
        rows = []
        for r in self.report.get("ranks", []):
            rows.append({k: v for k, v in r.items() if not isinstance(v, (list, dict))})
        return _records(rows)

    def __repr__(self):
        return f"<dreamscope.JobSummaries of {len(self.files)} ranks>"
