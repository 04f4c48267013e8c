"""A drop-in for Holistic Trace Analysis's TraceAnalysis (docs/python.md, "HTA").

    from dreamscope.hta import TraceAnalysis       # was: from hta.trace_analysis import TraceAnalysis
    analyzer = TraceAnalysis(trace_dir="traces/")
    analyzer.get_temporal_breakdown()

The numbers are dreamscope's C++ analyses (the ones `dreamscope analyze --only hta` prints),
which follow HTA's definitions and are tested against HTA's own figures; the DataFrames have
HTA's column names, units (µs) and shapes. Where this differs from HTA is listed in
docs/python.md. `visualize=True` draws with matplotlib (HTA uses plotly) where matplotlib is
installed, and draws nothing otherwise.
"""

import os
import re

from . import traces as _traces

__all__ = ["TraceAnalysis"]

_MEMORY_LAUNCHES = ("cudaMemcpyAsync", "cudaMemsetAsync", "hipMemcpyAsync", "hipMemsetAsync")
_KERNEL_TYPES = ("COMPUTATION", "COMMUNICATION", "MEMORY")
_IDLE_CATEGORIES = ("host_wait", "kernel_wait", "other")  # HTA's IdleTimeType, in its order
_DESCRIBE = ("count", "mean", "std", "min", "25%", "50%", "75%", "max")
_PROFILER_STEP = re.compile(r"ProfilerStep#(\d+)$")


_MEMORY_NAME = re.compile(r"(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)")


def _shorten_name(name):
    """HTA's shorten_name: a kernel's or operator's name without its template and call
    arguments and its return type ("void at::native::foo<float>(int)" -> "at::native::foo");
    memory operations keep theirs."""
    if _MEMORY_NAME.match(name) or ("<" not in name and "(" not in name):
        return name
    kept = []
    for c in name.replace("->", ""):
        closes = {">": "<", ")": "("}.get(c)
        if closes is None:
            kept.append(c)
            continue
        while kept and kept[-1] != closes:
            kept.pop()
        if kept:
            kept.pop()
    return "".join(kept).split(" ")[-1]


def _pd():
    return _traces._pandas()


def _draw(fn, *args):
    try:
        from . import plots
    except ImportError:
        return
    try:
        fn(plots, *args)
    except ImportError:
        pass


class TraceAnalysis:
    """HTA's TraceAnalysis on dreamscope: trace_dir (a folder of one trace per rank) or
    trace_files ({rank: path}, relative paths under trace_dir); include_last_profiler_step as
    HTA's (False: the last ProfilerStep's events are left out, with two or more steps)."""

    def __init__(self, trace_files=None, trace_dir="", include_last_profiler_step=False):
        core = _traces._core()
        self._step_filter = not include_last_profiler_step
        self.traces = {}
        if trace_files:
            for rank, path in sorted(trace_files.items()):
                path = os.fspath(path)
                if not os.path.isabs(path) and trace_dir and not os.path.exists(path):
                    path = os.path.join(trace_dir, path)
                self.traces[int(rank)] = _traces.Trace(core.load([path]), path)
        else:
            if not trace_dir:
                raise ValueError("TraceAnalysis: give trace_dir or trace_files")
            for rank, t in core.load_ranks([os.fspath(trace_dir)]):
                # A trace that names no rank is rank 0, as HTA defaults it.
                rank = 0 if rank < 0 else int(rank)
                self.traces[rank] = _traces.Trace(t, f"{trace_dir} rank {rank}")
        if not self.traces:
            raise ValueError(f"TraceAnalysis: no trace in {trace_dir!r}")

    @classmethod
    def from_trace(cls, trace, rank=0, include_last_profiler_step=False):
        """One dreamscope Trace as rank `rank` (or, for a job, each of its ranks)."""
        self = cls.__new__(cls)
        self._step_filter = not include_last_profiler_step
        ranks = trace.ranks
        if len(ranks) > 1:
            self.traces = {int(r): trace.rank(int(r)) for r in ranks["rank"]}
        else:
            self.traces = {int(rank): trace}
        return self

    def _ranks(self, ranks):
        if ranks is None or len(ranks) == 0:
            return [min(self.traces)]
        return [int(r) for r in ranks]

    def _core(self, rank):
        return self.traces[rank]._t

    def _origin(self):
        """The start (µs) of the job's earliest event, HTA's time 0."""
        if getattr(self, "_origin_us", None) is None:
            starts = [self._core(r).hta_trace_start() for r in self.traces]
            self._origin_us = min((s for s in starts if s is not None), default=0)
        return self._origin_us

    # ---- temporal breakdown ----------------------------------------------------------------

    def get_temporal_breakdown(self, visualize=True):
        rows = []
        for rank in sorted(self.traces):
            t = self._core(rank).hta_temporal(self._step_filter)
            rows.append({
                "rank": rank,
                "idle_time(us)": t["idle_time"],
                "compute_time(us)": t["compute_time"],
                "non_compute_time(us)": t["non_compute_time"],
                "kernel_time(us)": t["kernel_time"],
                "idle_time_pctg": t["idle_time_pctg"],
                "compute_time_pctg": t["compute_time_pctg"],
                "non_compute_time_pctg": t["non_compute_time_pctg"],
            })
        df = _pd().DataFrame(rows)
        if visualize:
            _draw(lambda plots, d: plots.temporal_breakdown(d), df)
        return df

    # ---- idle time -------------------------------------------------------------------------

    def get_idle_time_breakdown(self, ranks=None, streams=None, visualize=True, visualize_pctg=True,
                                show_idle_interval_stats=False, consecutive_kernel_delay=30):
        pd = _pd()
        rows, stats = [], []
        for rank in self._ranks(ranks):
            for s in self._core(rank).hta_idle_time(self._step_filter, int(consecutive_kernel_delay),
                                                    bool(show_idle_interval_stats)):
                if streams and s["stream"] not in streams:
                    continue
                for category in _IDLE_CATEGORIES:
                    rows.append({"rank": rank, "stream": s["stream"], "idle_category": category,
                                 "idle_time": float(s[category]), "idle_time_ratio": s[category + "_ratio"]})
                if show_idle_interval_stats:
                    stats.append(self._idle_interval_stats(pd, rank, s))
        df = pd.DataFrame(rows, columns=["rank", "stream", "idle_category", "idle_time", "idle_time_ratio"])
        if visualize:
            _draw(lambda plots, d: plots.idle_time_breakdown(d, ratio=visualize_pctg), df)
        if not show_idle_interval_stats:
            return df, None
        if not stats:
            return df, pd.DataFrame(columns=["rank", "stream", *_DESCRIBE], index=pd.Index([], name="idle_category"))
        return df, pd.concat(stats)

    @staticmethod
    def _idle_interval_stats(pd, rank, s):
        """HTA's statistics of one stream's idle intervals: describe() of the gaps by category.
        As HTA's, the first kernel (no gap before it) counts in "other" as a missing value, so
        that "other" is listed for every stream that ran a kernel, with count 0 where no gap
        was one."""
        import numpy as np
        gaps = np.concatenate(([np.nan], s["gap"].astype(np.float64)))
        codes = np.concatenate(([_IDLE_CATEGORIES.index("other")], s["category"]))
        frame = pd.DataFrame({"idle_category": codes, "idle_interval": gaps})
        out = frame.groupby("idle_category")["idle_interval"].describe().round(2)
        out.index = out.index.map(lambda c: _IDLE_CATEGORIES[c])
        out.insert(0, "stream", s["stream"])
        out.insert(0, "rank", rank)
        return out

    # ---- kernels ---------------------------------------------------------------------------

    @staticmethod
    def _aggregate(df, duration_ratio, num_kernels, keep=None):
        """HTA's summary of one rank's kernels of one type (or of its user annotations): the
        rows by total time, those past `duration_ratio` of the cumulated time or past the first
        `num_kernels` as "others" (the table then regrouped by name over each row's sum, as HTA
        does), but for the names in `keep` (HTA's allowlist)."""
        df = df.sort_values(by=["sum"], ascending=False, ignore_index=True)
        if df.shape[0] > num_kernels:
            fold = ~df["name"].isin(keep) if keep is not None else df["sum"] == df["sum"]
            df["cumsum"] = df["sum"].cumsum()
            cut = df["cumsum"].quantile(duration_ratio)
            df.loc[fold & (df["cumsum"] > cut), "name"] = "others"
            df.loc[fold & (df.index >= num_kernels), "name"] = "others"
            df = df.groupby(by=["name"])["sum"].agg(["sum", "max", "min", "mean", "std"]).reset_index()
            df = df.fillna({"std": 0})
        return df

    def get_gpu_kernel_breakdown(self, visualize=True, duration_ratio=0.8, num_kernels=10,
                                 include_memory_kernels=True, image_renderer=""):
        pd = _pd()
        type_frames, kernel_frames = [], []
        types = _KERNEL_TYPES if include_memory_kernels else _KERNEL_TYPES[:2]
        for rank in sorted(self.traces):
            by_type, by_name = self._core(rank).hta_kernels(self._step_filter, bool(include_memory_kernels))
            type_frames.append(pd.DataFrame(by_type))
            names = pd.DataFrame(by_name)
            for kernel_type in types:
                part = names[names["kernel_type"] == kernel_type][["name", "sum", "max", "min", "mean", "std"]]
                part = self._aggregate(part.reset_index(drop=True), duration_ratio, num_kernels)
                part["kernel_type"] = kernel_type
                part["rank"] = rank
                kernel_frames.append(part)
        kernel_type_df = pd.concat(type_frames, ignore_index=True).groupby(by=["kernel_type"])["sum"].agg(["sum"])
        kernel_type_df.reset_index(inplace=True)
        kernel_type_df.sort_values(by=["sum"], ignore_index=True, inplace=True, ascending=False)
        kernel_type_df["percentage"] = (kernel_type_df["sum"] / kernel_type_df["sum"].sum()) * 100
        kernel_type_df = kernel_type_df.round({"percentage": 1})
        all_kernel_df = pd.concat(kernel_frames, ignore_index=True)
        all_kernel_df.sort_values(by=["kernel_type", "name", "rank"], ignore_index=True, inplace=True)
        all_kernel_df.rename(columns={"sum": "sum (us)", "mean": "mean (us)", "max": "max (us)",
                                      "min": "min (us)", "std": "stddev"}, inplace=True)
        if visualize:
            _draw(lambda plots, d: plots.kernel_type_breakdown(d), kernel_type_df)
        return kernel_type_df, all_kernel_df

    # ---- communication -----------------------------------------------------------------------

    def get_comm_comp_overlap(self, visualize=True):
        rows = []
        for rank in sorted(self.traces):
            v = self._core(rank).hta_comm_comp_overlap(self._step_filter)
            rows.append({"rank": rank, "comp_comm_overlap_pctg": float("nan") if v is None else round(v, 2)})
        return _pd().DataFrame(rows, columns=["rank", "comp_comm_overlap_pctg"])

    # ---- launches and queues -------------------------------------------------------------------

    def get_cuda_kernel_launch_stats(self, ranks=None, runtime_cutoff=50, launch_delay_cutoff=100,
                                     include_memory_events=True, visualize=True):
        pd = _pd()
        result = {}
        for rank in self._ranks(ranks):
            cols = self._core(rank).hta_kernel_launches(self._step_filter)
            df = pd.DataFrame({k: cols[k] for k in ("correlation", "cpu_duration", "gpu_duration", "launch_delay")})
            if not include_memory_events:
                df = df[~pd.Series(cols["runtime_name"]).isin(_MEMORY_LAUNCHES).to_numpy()].reset_index(drop=True)
            result[rank] = df
        return result

    def get_queue_length_time_series(self, ranks=None):
        pd = _pd()
        result = {}
        for rank in self._ranks(ranks):
            frames = []
            for s in self._core(rank).hta_queue_length(self._step_filter):
                n = len(s["ts"])
                frames.append(pd.DataFrame({"ts": s["ts"], "pid": [s["device"]] * n, "tid": [s["stream"]] * n,
                                            "stream": [s["stream"]] * n, "queue_length": s["queue_length"]}))
            result[rank] = pd.concat(frames) if frames else None
        return result

    def get_queue_length_summary(self, ranks=None):
        pd = _pd()
        frames = []
        for rank, df in self.get_queue_length_time_series(ranks).items():
            if df is not None:
                df = df.copy()
                df["rank"] = rank
                frames.append(df[["rank", "stream", "queue_length"]])
        if not frames:
            return None
        return pd.concat(frames).groupby(["rank", "stream"]).describe()

    # ---- steps and annotations -----------------------------------------------------------------

    def get_profiler_steps(self):
        steps = set()
        for trace in self.traces.values():
            ann = trace.annotations
            names = ann["name"]
            step_names = [c for c in names.cat.categories if _PROFILER_STEP.match(c)]
            rows = ann[names.isin(step_names)]
            if rows.empty:
                continue
            numbers = rows["name"].astype(str).str.extract(_PROFILER_STEP, expand=False).astype(int)
            found = sorted(set(numbers))
            if self._step_filter and len(found) >= 2:
                last = int(numbers.iloc[rows["start"].to_numpy().argmax()])
                found = [n for n in found if n != last]
            steps.update(found)
        return sorted(steps)

    def get_gpu_kernels_with_user_annotations(self, rank, expand_names=True, shorten_names=True, **kwargs):
        """HTA's: the rank's GPU kernels (and copies, memsets, syncs), each with the GPU user
        annotation it ran under: of the annotations on its stream that overlap it, the
        innermost (shortest). Columns cat, name, pid, tid, ts, dur, end, stream, correlation,
        bytes, external_id, iteration, user_annotation, with expand_names s_name, s_cat and
        s_user_annotation (HTA's shortened names with shorten_names, as HTA's old spelling
        `shortern_names` also says). name, cat and user_annotation are ids into
        df.attrs["symbol_table"], -1 for no annotation ("" in s_user_annotation). None when
        the trace has no GPU user annotations."""
        if kwargs:
            unknown = set(kwargs) - {"shortern_names"}
            if unknown:
                raise TypeError(f"get_gpu_kernels_with_user_annotations: unexpected arguments {sorted(unknown)}")
            shorten_names = kwargs["shortern_names"]
        pd = _pd()
        import numpy as np
        k = self._core(int(rank)).hta_kernels_with_annotations(self._step_filter)
        if k is None:
            return None
        names = list(k["names"])
        # Kineto's categories of GPU ops, by dreamscope's kind of op (GpuOpKind's order).
        cats = ["kernel", "gpu_memcpy", "gpu_memset", "cuda_sync"]
        symbols = names + cats
        kind = k["kind"].astype(np.int64)
        # HTA's bytes are Kineto's "bytes" argument of a copy or memset, -1 where there is none
        # (kernels, syncs, and ROCm's copies, which dreamscope keeps as 0 bytes).
        bytes_ = np.where(((kind == 1) | (kind == 2)) & (k["bytes"] != 0), k["bytes"], -1)
        # HTA numbers no op on stream 0 (ROCm's default stream): NaN in its frame.
        iteration = k["iteration"]
        if (k["stream"] == 0).any():
            iteration = np.where(k["stream"] == 0, np.nan, iteration)
        # HTA's times start at the job's earliest event (its ranks' earliest).
        ts = k["ts"] - self._origin()
        df = pd.DataFrame({
            "cat": kind + len(names), "name": k["name"], "pid": k["device"], "tid": k["stream"],
            "ts": ts, "dur": k["dur"], "end": ts + k["dur"], "stream": k["stream"],
            "correlation": k["correlation"], "bytes": bytes_, "external_id": k["external_id"],
            "iteration": iteration, "user_annotation": k["user_annotation"],
        })
        if expand_names:
            table = [_shorten_name(x) for x in symbols] if shorten_names else symbols
            lookup = np.array(table + [""], dtype=object)  # -1 (no annotation) reads ""
            df["s_name"] = lookup[df["name"].to_numpy()]
            df["s_cat"] = lookup[df["cat"].to_numpy()]
            df["s_user_annotation"] = lookup[df["user_annotation"].to_numpy()]
        df.attrs["symbol_table"] = symbols
        return df

    def get_gpu_user_annotation_breakdown(self, use_gpu_annotation=True, visualize=True, duration_ratio=0.8,
                                          num_kernels=1000, allowlist_patterns=None, image_renderer=None):
        """HTA's: per rank, the time of each user annotation (on the GPU, Kineto's
        gpu_user_annotation, or with use_gpu_annotation=False on the CPU, user_annotation):
        name, sum (us), max (us), min (us), stddev, mean (us), rank, by rank and name. Past
        `num_kernels` names, those past `duration_ratio` of the cumulated time or past the
        first `num_kernels` are folded into "others", but for names containing one of
        `allowlist_patterns` (plain substrings, as HTA's re.escape makes them). None when no
        rank has such annotations."""
        pd = _pd()
        frames = []
        for rank in sorted(self.traces):
            d = self._core(rank).hta_annotation_durations(self._step_filter, bool(use_gpu_annotation))
            if not d["names"]:
                continue
            names = pd.Categorical.from_codes(d["name_index"], categories=d["names"])
            # HTA groups the names as strings, in their sorted order, before sorting by sum.
            names = names.reorder_categories(sorted(d["names"]))
            df = pd.DataFrame({"name": names, "dur": d["dur"]})
            df = df.groupby("name", observed=True)["dur"].agg(["sum", "max", "min", "mean", "std"]).reset_index()
            df["name"] = df["name"].astype(str)
            df = df.sort_values(by=["sum"], ascending=False, ignore_index=True).fillna({"std": 0})
            keep = None
            if allowlist_patterns is not None:
                keep = [n for n in d["names"] if any(p in n for p in allowlist_patterns)]
            df = self._aggregate(df, duration_ratio, num_kernels, keep)
            df["rank"] = rank
            frames.append(df[["name", "sum", "max", "min", "std", "mean", "rank"]])
        if not frames:
            return None
        df = pd.concat(frames, ignore_index=True)
        df.sort_values(by=["rank", "name"], ignore_index=True, inplace=True)
        df.rename(columns={"sum": "sum (us)", "mean": "mean (us)", "max": "max (us)", "min": "min (us)",
                           "std": "stddev"}, inplace=True)
        if visualize:
            _draw(lambda plots, d: plots.annotation_breakdown(d), df)
        return df

    # ---- stragglers ------------------------------------------------------------------------

    def get_potential_stragglers(self, profiler_steps=None, num_candidates=2, visualize=False):
        """HTA's straggler analysis: the ranks (at most `num_candidates`) whose last long
        communication kernel starts latest. Of the kernels named "ncclKernel..." on a stream
        > 0 in an iteration > 0 and lasting at least 1 % of the mean iteration, the last of each
        (rank, stream, iteration, name) is kept; the (stream, name) whose duration varies most
        across ranks (mean over the iterations of the standard deviation) is the metric kernel,
        and its start, normalized by the mean iteration, ranks the ranks in each iteration.
        Returns the ranks counted most often among each iteration's top `num_candidates`.
        `profiler_steps`: the ProfilerStep numbers to look at (None: all of them)."""
        pd = _pd()
        num_candidates = max(int(num_candidates), 1)
        available = self.get_profiler_steps()
        steps = available if profiler_steps is None else [i for i in profiler_steps if i in available]
        if not steps:
            raise ValueError(f"invalid value for argument: profiler_steps={profiler_steps}; "
                             f"available profiler steps={available}")
        spans, kernels = [], []
        for rank in sorted(self.traces):
            e = self._core(rank).hta_straggler_events(self._step_filter)
            spans.append(pd.DataFrame({"iteration": e["iteration"], "start": e["start"], "end": e["end"]}))
            k = e["kernels"]
            names = pd.Categorical.from_codes(k["name_index"], categories=k["names"]) if k["names"] else []
            kernels.append(pd.DataFrame({"rank": rank, "stream": k["stream"], "iteration": k["iteration"],
                                         "name": pd.Series(names, dtype=object), "ts": k["ts"], "dur": k["dur"]}))
        spans = pd.concat(spans, ignore_index=True)
        spans = spans[spans["iteration"].isin(steps)]
        kernels = pd.concat(kernels, ignore_index=True)
        kernels = kernels[kernels["iteration"].isin(steps)]
        # HTA's metric, over every event of the chosen iterations on every rank (one clock).
        t_min = spans["start"].min()
        mean_iter_time = (spans["end"].max() - t_min) / float(spans["iteration"].nunique())
        long = kernels[kernels["dur"] >= mean_iter_time * 0.01]
        last = long.groupby(["rank", "stream", "iteration", "name"], as_index=False).last()
        last["normalized_start_time"] = (last["ts"] - t_min) / mean_iter_time
        last["duration"] = last["dur"] / mean_iter_time
        spread = last.groupby(["stream", "iteration", "name"])["duration"].std().groupby(["stream", "name"]).mean()
        if spread.dropna().empty:
            raise ValueError("get_potential_stragglers: no communication kernel (ncclKernel...) of at least 1 % of "
                             "an iteration ran on two or more ranks in the chosen profiler steps")
        stream, name = spread.idxmax()
        metric = last[(last["stream"] == stream) & (last["name"] == name)]
        counts = self._late_start_counts(metric, "normalized_start_time", num_candidates)
        return counts.sort_values(ascending=False)[:num_candidates].index.tolist()

    @staticmethod
    def _late_start_counts(metric, column, n):
        """Per rank, in how many iterations its metric is among the n largest (ties counted),
        as HTA's _get_top_k_stragglers_with_metric; with fewer ranks than n, all of them."""
        if metric["iteration"].nunique() <= 1:
            values = metric[column]
            threshold = values.sort_values(ascending=False).tolist()[min(n, len(values)) - 1]
            return (values >= threshold).astype(int).set_axis(metric["rank"].to_numpy())
        flags = metric[["rank"]].copy()
        flags["is_straggler"] = 0
        for _, group in metric.groupby("iteration"):
            values = group[column]
            threshold = values.sort_values(ascending=False).tolist()[min(n, len(values)) - 1]
            flags.loc[group.index, "is_straggler"] = (values >= threshold).astype(int)
        return flags.groupby("rank")["is_straggler"].sum()

    def get_annotation_totals(self, use_gpu_annotation=True, ranks=None):
        """dreamscope's addition: count and total time (µs) of each user annotation, on the GPU
        (Kineto's gpu_user_annotation) or the CPU (user_annotation), per rank."""
        pd = _pd()
        frames = []
        for rank in self._ranks(ranks) if ranks is not None else sorted(self.traces):
            d = self._core(rank).hta_annotations(self._step_filter, bool(use_gpu_annotation))
            df = pd.DataFrame({"name": d["name"], "count": d["count"], "sum (us)": d["sum"]})
            df["rank"] = rank
            frames.append(df)
        return pd.concat(frames, ignore_index=True)
