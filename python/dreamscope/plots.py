"""matplotlib charts of dreamscope's results (docs/python.md, "Plots").

    from dreamscope import plots
    plots.temporal_breakdown(TraceAnalysis(trace_dir=...).get_temporal_breakdown(visualize=False))
    plots.step_times(trace.replay())                       # measured vs predicted per step
    plots.step_times(trace.whatif("data", workers=4))      # measured vs each prediction
    plots.step_timeline(trace, step=3)                     # one step's events, a row per track

Each returns the matplotlib Figure (shown inline in a notebook; fig.savefig(path) elsewhere).
"""

import re

import numpy as np
from pandas import isna as pd_isna

try:
    # Without a display matplotlib draws with Agg (to files); in a notebook, inline.
    import matplotlib.pyplot as plt
except ImportError as e:  # what the message says
    raise ImportError(f"dreamscope.plots needs matplotlib ({e}); on Debian: apt-get install python3-matplotlib") from e

__all__ = ["temporal_breakdown", "idle_time_breakdown", "kernel_type_breakdown", "annotation_breakdown", "step_times",
           "step_timeline"]


def temporal_breakdown(df, ax=None):
    """Stacked bars per rank: idle, compute and non-compute time as a share of kernel time
    (the frame of TraceAnalysis.get_temporal_breakdown)."""
    fig, ax = _axes(ax, (max(4, 1.2 * len(df) + 2), 3.5))
    ranks = [str(r) for r in df["rank"]]
    bottom = np.zeros(len(df))
    for column, label, color in (("idle_time_pctg", "idle", "#bbbbbb"), ("compute_time_pctg", "compute", "#4c72b0"),
                                 ("non_compute_time_pctg", "non-compute", "#dd8452")):
        values = df[column].to_numpy(dtype=float)
        ax.bar(ranks, values, bottom=bottom, label=label, color=color)
        bottom += values
    ax.set_xlabel("rank")
    ax.set_ylabel("% of kernel time")
    ax.set_ylim(0, 100)
    ax.set_title("Temporal breakdown")
    ax.legend(loc="upper left", bbox_to_anchor=(1, 1))
    fig.tight_layout()
    return fig


def idle_time_breakdown(df, ratio=True, ax=None):
    """Stacked bars per (rank, stream): idle time by category (TraceAnalysis.get_idle_time_breakdown)."""
    fig, ax = _axes(ax, (6, 3.5))
    table = df.pivot_table(index=["rank", "stream"], columns="idle_category",
                           values="idle_time_ratio" if ratio else "idle_time", aggfunc="sum", fill_value=0)
    labels = [f"{r}/{s}" for r, s in table.index]
    bottom = np.zeros(len(table))
    for category in table.columns:
        values = table[category].to_numpy(dtype=float)
        ax.bar(labels, values, bottom=bottom, label=category)
        bottom += values
    ax.set_xlabel("rank/stream")
    ax.set_ylabel("share of idle time" if ratio else "idle time (µs)")
    ax.set_title("Idle time breakdown")
    ax.legend()
    fig.tight_layout()
    return fig


def kernel_type_breakdown(df, ax=None):
    """A pie of kernel time by type (the first frame of TraceAnalysis.get_gpu_kernel_breakdown)."""
    fig, ax = _axes(ax, (5, 4))
    shown = df[df["sum"] > 0]
    ax.pie(shown["sum"], labels=shown["kernel_type"], autopct="%1.1f%%", textprops={"fontsize": 8})
    ax.set_title("Kernel time by type")
    fig.tight_layout()
    return fig


def annotation_breakdown(df, ax=None, max_names=20):
    """Horizontal bars: each user annotation's mean time per rank, whiskers from its min to its
    max (the frame of TraceAnalysis.get_gpu_user_annotation_breakdown; the `max_names` with the
    most time, "others" left out)."""
    shown = df[df["name"] != "others"]
    names = list(shown.groupby("name")["sum (us)"].sum().sort_values(ascending=False).index[:max_names])
    ranks = sorted(shown["rank"].unique())
    fig, ax = _axes(ax, (7, max(2.5, 0.35 * len(names) * max(1, len(ranks)) ** 0.5 + 1)))
    height = 0.8 / max(1, len(ranks))
    y = np.arange(len(names))
    for i, rank in enumerate(ranks):
        part = shown[shown["rank"] == rank].set_index("name").reindex(names)
        mean = part["mean (us)"].to_numpy(dtype=float)
        err = np.vstack([mean - part["min (us)"].to_numpy(dtype=float), part["max (us)"].to_numpy(dtype=float) - mean])
        ax.barh(y + i * height, mean, height=height, xerr=err, capsize=2, label=f"rank {rank}")
    ax.set_yticks(y + 0.4 - height / 2)
    ax.set_yticklabels([_short(n, 40) for n in names], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("mean time (µs), min to max")
    ax.set_title("User annotations")
    if len(ranks) > 1:
        ax.legend()
    fig.tight_layout()
    return fig


def step_times(result, ax=None, max_steps=40, skip=0):
    """Measured against predicted time per step, in ms: a Replay (measured vs replayed) or a
    WhatIf (measured vs each prediction); `skip` leaves out the first steps (a warm-up step
    can dwarf the others)."""
    fig, ax = _axes(ax, (8, 3.5))
    if hasattr(result, "predictions"):  # WhatIf
        steps = result.steps
        labels = list(dict.fromkeys(steps["label"])) if len(steps) else []
        first = steps[steps["label"] == labels[0]] if labels else steps
        names = list(first["step"])[skip:skip + max_steps]
        series = [("measured", first["measured_ns"].to_numpy()[skip:skip + max_steps])]
        for label in labels:
            part = steps[steps["label"] == label]
            series.append((label, part["predicted_ns"].to_numpy()[skip:skip + max_steps]))
    else:  # Replay
        steps = result.steps
        names = list(steps["name"])[skip:skip + max_steps]
        predicted = "untraced (predicted)" if result.json.get("overhead_corrected") else "replayed"
        series = [("measured", steps["measured_ns"].to_numpy()[skip:skip + max_steps]),
                  (predicted, steps["predicted_ns"].to_numpy()[skip:skip + max_steps])]
    x = np.arange(len(names))
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series):
        ax.bar(x + (i - (len(series) - 1) / 2) * width, np.asarray(values, dtype=float) / 1e6, width, label=label)
    ax.set_xticks(x)
    ax.set_xticklabels([_short(n) for n in names], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("step time (ms)")
    ax.set_title("Step time: measured and predicted")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def step_timeline(trace, step=0, ax=None, max_tracks=24):
    """One step's events as a timeline: a row per thread and stream, a bar per event (CUDA
    calls, GPU operations, annotations at their depth); `step` is the step's place in time
    order (0 = the first) or its name ("ProfilerStep#3", "step 3")."""
    window = _step_window(trace, step)
    ev = trace.events
    inside = ev[(ev["end"] > window[0]) & (ev["start"] < window[1])]
    tracks = trace.tracks.set_index("track")
    order = sorted(inside["track"].unique(), key=lambda t: (str(tracks.at[t, "kind"]) == "stream", t))[:max_tracks]
    fig, ax = _axes(ax, (10, 0.45 * len(order) + 1.5))
    colors = {"cuda_api": "#dd8452", "gpu_op": "#4c72b0", "annotation": "#55a868"}
    t0 = window[0]
    for row, track in enumerate(order):
        on = inside[inside["track"] == track]
        for table, part in on.groupby("table", observed=True):
            starts = (np.maximum(part["start"].to_numpy(), window[0]) - t0) / 1e6
            ends = (np.minimum(part["end"].to_numpy(), window[1]) - t0) / 1e6
            height = 0.35 if table == "annotation" else 0.7
            offset = 0.2 if table == "annotation" else 0
            ax.broken_barh(list(zip(starts, np.maximum(ends - starts, 1e-6))), (row - height / 2 + offset, height),
                           facecolors=colors.get(str(table), "#888888"), label=str(table))
    labels = []
    for track in order:
        info = tracks.loc[track]
        if str(info["kind"]) == "stream":
            labels.append(f"stream {info['stream']}")
        else:
            labels.append(" ".join(str(x) for x in (info["name"] or "thread", info["tid"]) if not pd_isna(x)))
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("ms since the step's start")
    ax.set_title(f"Timeline of {window[2]}")
    handles, names = ax.get_legend_handles_labels()
    unique = dict(zip(names, handles))
    ax.legend(unique.values(), unique.keys(), fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def _step_window(trace, step):
    """(start, end, name) of a step: a ProfilerStep#N or a dreamscope step annotation."""
    ann = trace.annotations
    names = ann["name"].astype(str)
    is_step = names.str.match(r"ProfilerStep#\d+$") | (ann["category"].astype(str) == "step")
    steps = ann[is_step.to_numpy()].sort_values("start")
    if steps.empty:
        return trace.begin_time, trace.end_time, "the whole trace"
    if isinstance(step, str):
        match = steps[steps["name"].astype(str) == step]
        if match.empty:
            raise KeyError(f"no step named {step!r}")
        row = match.iloc[0]
    else:
        row = steps.iloc[int(step)]
    name = str(row["name"])
    if not re.search(r"\d$", name) and not pd_isna(row["payload"]):
        name = f"{name} {row['payload']}"  # dreamscope's step ranges: "step", payload the number
    return int(row["start"]), int(row["end"]), name


def _short(name, width=18):
    return name if len(name) <= width else name[: width - 1] + "…"


def _axes(ax, size):
    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(figsize=size)
    return fig, ax
