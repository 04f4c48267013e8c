"""dreamscope.hta.TraceAnalysis against HTA's own figures on HTA's test traces
(../shared/data/README.md, and HTA's tests/test_trace_analysis.py at commit f4d0062): the
same values under HTA's column names."""

import math
import os
import tempfile
import unittest

from support import data, main

import pandas as pd

from dreamscope.hta import TraceAnalysis

MTIA = ("kineto-hta", "mtia_trace_single_rank")
NS = ("kineto-hta", "ns_resolution_trace")
NCCL = ("kineto-hta", "nccl_parser_config")
DESCRIBE = ["count", "mean", "std", "min", "25%", "50%", "75%", "max"]
NAN = float("nan")

_cache = {}


def analysis(parts):
    if parts not in _cache:
        _cache[parts] = TraceAnalysis(trace_dir=data(*parts, shared=True))
    return _cache[parts]


class Mtia(unittest.TestCase):
    def test_temporal_breakdown(self):
        df = analysis(MTIA).get_temporal_breakdown(visualize=False)
        self.assertEqual(list(df.columns), ["rank", "idle_time(us)", "compute_time(us)", "non_compute_time(us)",
                                            "kernel_time(us)", "idle_time_pctg", "compute_time_pctg",
                                            "non_compute_time_pctg"])
        row = df.iloc[0]
        self.assertEqual(row["rank"], 0)
        self.assertEqual(row["idle_time(us)"], 5649476)
        self.assertEqual(row["compute_time(us)"], 7305597)
        self.assertEqual(row["non_compute_time(us)"], 372998)
        self.assertEqual(row["kernel_time(us)"], 13328071)
        self.assertEqual((row["idle_time_pctg"], row["compute_time_pctg"], row["non_compute_time_pctg"]),
                         (42.39, 54.81, 2.80))

    def test_gpu_kernel_breakdown(self):
        # HTA's test_get_mtia_kernel_breakdown, with HTA's defaults (top 10 kernels per type).
        types, kernels = analysis(MTIA).get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
        self.assertEqual(list(types.columns), ["kernel_type", "sum", "percentage"])
        self.assertEqual(types.iloc[0]["kernel_type"], "COMPUTATION")
        self.assertEqual(types.iloc[0]["sum"], 7305597)
        self.assertEqual(list(kernels.columns), ["name", "sum (us)", "max (us)", "min (us)", "mean (us)", "stddev",
                                                 "kernel_type", "rank"])
        self.assertEqual(kernels.iloc[0]["kernel_type"], "COMPUTATION")
        self.assertEqual(kernels.iloc[0]["name"], "add-dtype_Float")
        self.assertEqual(kernels.iloc[0]["sum (us)"], 77283)
        self.assertEqual(kernels.iloc[11]["kernel_type"], "MEMORY")
        self.assertEqual(kernels.iloc[11]["sum (us)"], 400892)
        self.assertAlmostEqual(types["percentage"].sum(), 100, delta=0.5)
        # Folding kernels into "others" keeps each type's time.
        _, every = analysis(MTIA).get_gpu_kernel_breakdown(visualize=False, num_kernels=10 ** 9)
        self.assertGreater(len(every), len(kernels))
        self.assertNotIn("others", set(every.name))
        for kernel_type in ("COMPUTATION", "MEMORY"):
            self.assertEqual(kernels[kernels.kernel_type == kernel_type]["sum (us)"].sum(),
                             every[every.kernel_type == kernel_type]["sum (us)"].sum())

    def test_idle_time_breakdown(self):
        df, stats = analysis(MTIA).get_idle_time_breakdown(visualize=False)
        self.assertIsNone(stats)
        self.assertEqual(list(df.columns), ["rank", "stream", "idle_category", "idle_time", "idle_time_ratio"])
        s1 = df[df.stream == 1].set_index("idle_category")
        self.assertEqual(s1.loc["host_wait", "idle_time"], 417937)
        self.assertEqual(s1.loc["host_wait", "idle_time_ratio"], 0.07)
        self.assertEqual(s1.loc["other", "idle_time"], 5200945)
        self.assertEqual(s1.loc["other", "idle_time_ratio"], 0.93)
        self.assertIn(102, set(df.stream))
        only = analysis(MTIA).get_idle_time_breakdown(streams=[102], visualize=False)[0]
        self.assertEqual(set(only.stream), {102})

    def test_idle_interval_stats(self):
        # HTA (f4d0062, run here with Debian's pandas) on this trace, show_idle_interval_stats=True:
        # describe() of the gaps per stream and category, rounded to 2 decimals; the negative
        # gaps are kernels that overlap their predecessor once HTA rounds ns to µs.
        _, stats = analysis(MTIA).get_idle_time_breakdown(visualize=False, show_idle_interval_stats=True)
        self.assertEqual(list(stats.columns), ["rank", "stream", *DESCRIBE])
        self.assertEqual(stats.index.name, "idle_category")
        expected = {
            (102, "host_wait"): (1, 445.0, NAN, 445, 445, 445, 445, 445),
            (102, "kernel_wait"): (6, -1.5, 7.12, -8, -8, -1.5, 5, 5),
            (102, "other"): (40, 63514.8, 399661.83, 246, 270.5, 289.5, 336, 2528006),
            (1, "host_wait"): (1365, 306.18, 97.01, 261, 284, 294, 306, 1489),
            (1, "kernel_wait"): (6899, -1.52, 6.61, -41, -8, -7, 5, 7),
            (1, "other"): (17364, 299.52, 282.09, 38, 255, 274, 300, 22584),
        }
        self.assert_stats(stats, 0, expected)

    def assert_stats(self, stats, rank, expected):
        mine = stats[stats["rank"] == rank]
        self.assertEqual(sorted((s, c) for s, c in zip(mine.stream, mine.index)), sorted(expected))
        for (stream, category), values in expected.items():
            row = mine[(mine.stream == stream) & (mine.index == category)].iloc[0]
            for column, value in zip(DESCRIBE, values):
                if math.isnan(value):
                    self.assertTrue(math.isnan(row[column]), (stream, category, column))
                else:
                    self.assertEqual(row[column], value, (stream, category, column))

    def test_cuda_kernel_launch_stats(self):
        stats = analysis(MTIA).get_cuda_kernel_launch_stats(visualize=False)
        self.assertEqual(list(stats), [0])
        df = stats[0]
        self.assertEqual(list(df.columns), ["correlation", "cpu_duration", "gpu_duration", "launch_delay"])
        row = df[df.correlation == 423].iloc[0]
        self.assertEqual(row["cpu_duration"], 434)
        self.assertEqual(row["gpu_duration"], 124)
        self.assertLessEqual(abs(row["launch_delay"]), 2)  # HTA's tests allow ±2
        self.assertTrue((df.launch_delay >= 0).all())

    def test_queue_length(self):
        ta = analysis(MTIA)
        series = ta.get_queue_length_time_series()[0]
        self.assertEqual(list(series.columns), ["ts", "pid", "tid", "stream", "queue_length"])
        self.assertTrue((series.queue_length >= 0).all())
        summary = ta.get_queue_length_summary()
        self.assertEqual(list(summary.columns.get_level_values(1)),
                         ["count", "mean", "std", "min", "25%", "50%", "75%", "max"])
        self.assertEqual(set(summary.index.get_level_values(1)), set(series.stream))
        # Each launch enqueues one and each kernel's start takes one off.
        self.assertEqual(summary[("queue_length", "count")].sum(), len(series))
        self.assertEqual(len(series) % 2, 0)

    def test_profiler_steps(self):
        self.assertEqual(len(analysis(MTIA).get_profiler_steps()), 1)


class NsResolution(unittest.TestCase):
    def test_profiler_steps_leave_out_the_last(self):
        self.assertEqual(analysis(NS).get_profiler_steps(), [101, 102, 103, 104])

    def test_user_annotation_totals(self):
        gpu = analysis(NS).get_annotation_totals(use_gpu_annotation=True).set_index("name")
        self.assertEqual((gpu.loc["DistributedDataParallel.forward", "sum (us)"],
                          gpu.loc["DistributedDataParallel.forward", "count"]), (123880, 4))
        self.assertEqual(gpu.loc["Optimizer.step#SGD.step", "sum (us)"], 3334)
        self.assertEqual(gpu.loc["## backward ##", "sum (us)"], 81)
        cpu = analysis(NS).get_annotation_totals(use_gpu_annotation=False).set_index("name")
        self.assertEqual(len(cpu), 12)
        self.assertEqual(cpu.loc["ProfilerStep#104", "sum (us)"], 95550)
        self.assertEqual((cpu.loc["nccl:all_reduce", "sum (us)"], cpu.loc["nccl:all_reduce", "count"]), (446, 20))

    def test_gpu_user_annotation_breakdown(self):
        # HTA's get_gpu_user_annotation_breakdown on this trace (f4d0062, run here): the README's
        # sums, and the statistics beside them.
        df = analysis(NS).get_gpu_user_annotation_breakdown(visualize=False)
        self.assertEqual(list(df.columns), ["name", "sum (us)", "max (us)", "min (us)", "stddev", "mean (us)", "rank"])
        self.assertEqual(list(df.name), ["## backward ##", "DistributedDataParallel.forward", "Optimizer.step#SGD.step"])
        self.assertEqual(df[["sum (us)", "max (us)", "min (us)"]].values.tolist(),
                         [[81, 28, 26], [123880, 32432, 30399], [3334, 1114, 1109]])
        for got, want in zip(df["stddev"], (1.0, 976.649033, 2.516611)):
            self.assertAlmostEqual(got, want, places=6)
        for got, want in zip(df["mean (us)"], (27.0, 30970.0, 1111.333333)):
            self.assertAlmostEqual(got, want, places=6)
        self.assertEqual(set(df["rank"]), {0})

    def test_cpu_user_annotation_breakdown(self):
        df = analysis(NS).get_gpu_user_annotation_breakdown(use_gpu_annotation=False, visualize=False)
        self.assertEqual(len(df), 12)
        self.assertEqual(list(df.name), sorted(df.name))
        row = df.set_index("name").loc["nccl:all_reduce"]
        self.assertEqual((row["sum (us)"], row["max (us)"], row["min (us)"]), (446, 56, 16))
        self.assertAlmostEqual(row["stddev"], 10.214025, places=6)
        self.assertAlmostEqual(row["mean (us)"], 22.3, places=9)
        step = df.set_index("name").loc["ProfilerStep#104"]
        self.assertEqual((step["sum (us)"], step["stddev"]), (95550, 0))

    def test_annotation_breakdown_folds_into_others(self):
        # Hand-computed from the 12 CPU annotations above: past num_kernels=3 every name but the
        # top three by time (## backward ## 184802, ## forward ## 107489, DDP.forward 107037)
        # and those the allowlist keeps ("nccl:" names) is folded into "others", whose row then
        # has the statistics of the folded names' sums, as HTA's.
        df = analysis(NS).get_gpu_user_annotation_breakdown(use_gpu_annotation=False, visualize=False,
                                                            num_kernels=3, allowlist_patterns=["nccl:"])
        self.assertEqual(list(df.name), ["## backward ##", "## forward ##", "DistributedDataParallel.forward",
                                         "nccl:all_reduce", "nccl:broadcast", "others"])
        others = df.set_index("name").loc["others"]
        folded = [3790, 3668, 838, 35115, 72076, 95697, 95550]
        self.assertEqual((others["sum (us)"], others["max (us)"], others["min (us)"]),
                         (sum(folded), max(folded), min(folded)))
        self.assertAlmostEqual(others["mean (us)"], sum(folded) / len(folded), places=9)
        self.assertAlmostEqual(others["stddev"], pd.Series(folded).std(), places=9)
        self.assertEqual(df.set_index("name").loc["nccl:broadcast", "sum (us)"], 148)

    def test_idle_interval_stats(self):
        # HTA on this trace (f4d0062, run here): one stream, and "other" listed with no gap in
        # it (HTA counts the first kernel there, with no gap).
        df, stats = analysis(NS).get_idle_time_breakdown(visualize=False, show_idle_interval_stats=True)
        self.assertEqual(df.set_index("idle_category")["idle_time"].to_dict(),
                         {"host_wait": 1709, "kernel_wait": 8404, "other": 0})
        Mtia.assert_stats(self, stats, 0, {
            (7, "host_wait"): (90, 18.99, 52.8, 7, 7, 8, 8, 387),
            (7, "kernel_wait"): (4785, 1.76, 0.98, 1, 1, 2, 2, 23),
            (7, "other"): (0, NAN, NAN, NAN, NAN, NAN, NAN, NAN),
        })

    def test_gpu_kernels_with_user_annotations(self):
        # HTA's get_gpu_kernels_with_user_annotations on this trace (f4d0062, run here): every
        # kernel, copy and memset of the four kept steps, with its innermost GPU annotation.
        df = analysis(NS).get_gpu_kernels_with_user_annotations(0)
        self.assertEqual(len(df), 4876)
        self.assertEqual(df["iteration"].value_counts().to_dict(), {101: 1219, 102: 1219, 103: 1219, 104: 1219})
        by = df.groupby("s_user_annotation")["dur"].agg(["count", "sum"])
        self.assertEqual(by["count"].to_dict(), {"": 2992, "## backward ##": 17, "DistributedDataParallel.forward": 1840,
                                                 "Optimizer.step#SGD.step": 27})
        self.assertEqual(by["sum"].to_dict(), {"": 252212, "## backward ##": 55, "DistributedDataParallel.forward": 118956,
                                               "Optimizer.step#SGD.step": 3298})
        first = df.iloc[0]
        self.assertEqual((first["ts"], first["dur"], first["end"], first["stream"], first["correlation"]),
                         (3488, 5, 3493, 7, 135071))
        self.assertEqual((first["s_name"], first["s_cat"], first["s_user_annotation"]),
                         ("at::native::::CatArrayBatchedCopy_aligned16_contig", "kernel",
                          "DistributedDataParallel.forward"))
        symbols = df.attrs["symbol_table"]
        self.assertEqual(symbols[first["user_annotation"]], "DistributedDataParallel.forward")
        self.assertTrue((df.loc[df["s_user_annotation"] == "", "user_annotation"] == -1).all())
        # The whole names, under either spelling of HTA's flag; ids only without expand_names.
        whole = analysis(NS).get_gpu_kernels_with_user_annotations(0, shorten_names=False)
        self.assertTrue(whole["s_name"].iloc[0].startswith(
            "void at::native::(anonymous namespace)::CatArrayBatchedCopy_aligned16_contig<"))
        old = analysis(NS).get_gpu_kernels_with_user_annotations(0, shortern_names=False)
        self.assertEqual(list(old["s_name"]), list(whole["s_name"]))
        bare = analysis(NS).get_gpu_kernels_with_user_annotations(0, expand_names=False)
        self.assertNotIn("s_name", bare.columns)
        self.assertEqual(list(bare["name"]), list(df["name"]))
        with self.assertRaises(TypeError):
            analysis(NS).get_gpu_kernels_with_user_annotations(0, shorten=False)

    def test_no_stragglers_on_one_rank(self):
        # HTA fails too (no kernel to compare across ranks).
        with self.assertRaises(ValueError):
            analysis(NS).get_potential_stragglers()

    def test_include_last_profiler_step(self):
        ta = TraceAnalysis(trace_dir=data(*NS, shared=True), include_last_profiler_step=True)
        self.assertEqual(ta.get_profiler_steps(), [101, 102, 103, 104, 105])


class Nccl(unittest.TestCase):
    def test_comm_comp_overlap(self):
        df = analysis(NCCL).get_comm_comp_overlap(visualize=False)
        self.assertEqual(list(df.columns), ["rank", "comp_comm_overlap_pctg"])
        v = df.iloc[0]["comp_comm_overlap_pctg"]
        self.assertTrue(0 <= v <= 100, v)
        types, _ = analysis(NCCL).get_gpu_kernel_breakdown(visualize=False)
        self.assertIn("COMMUNICATION", set(types.kernel_type))

    def test_gpu_user_annotation_breakdown(self):
        # HTA on this trace (f4d0062, run here).
        df = analysis(NCCL).get_gpu_user_annotation_breakdown(visualize=False).set_index("name")
        self.assertEqual(df["sum (us)"].to_dict(), {"## backward ##": 1279, "DistributedDataParallel.forward": 195524,
                                                    "Optimizer.step#SGD.step": 18712, "nccl:all_reduce": 24216,
                                                    "nccl:broadcast": 81})
        self.assertEqual((df.loc["nccl:all_reduce", "max (us)"], df.loc["nccl:all_reduce", "min (us)"]), (3307, 1690))
        self.assertAlmostEqual(df.loc["nccl:all_reduce", "stddev"], 429.246161, places=6)
        self.assertAlmostEqual(df.loc["nccl:all_reduce", "mean (us)"], 2421.6, places=9)

    def test_idle_interval_stats(self):
        _, stats = analysis(NCCL).get_idle_time_breakdown(visualize=False, show_idle_interval_stats=True)
        Mtia.assert_stats(self, stats, 0, {
            (7, "host_wait"): (1742, 205.08, 695.14, 10, 54, 108, 202, 16000),
            (7, "kernel_wait"): (759, 2.84, 1.78, 2, 2, 2, 3, 14),
            (7, "other"): (0, NAN, NAN, NAN, NAN, NAN, NAN, NAN),
            (40, "host_wait"): (13, 29346.08, 33820.81, 2486, 3764, 22967, 38280, 98771),
            (40, "other"): (0, NAN, NAN, NAN, NAN, NAN, NAN, NAN),
        })

    def test_gpu_kernels_with_user_annotations(self):
        # HTA on this trace (f4d0062, run here): the all-reduce kernels under nccl:all_reduce.
        df = analysis(NCCL).get_gpu_kernels_with_user_annotations(rank=0)
        self.assertEqual(len(df), 2516)
        by = df.groupby("s_user_annotation")["dur"].agg(["count", "sum"])
        self.assertEqual(by["count"].to_dict(), {"": 1573, "## backward ##": 11, "DistributedDataParallel.forward": 900,
                                                 "Optimizer.step#SGD.step": 18, "nccl:all_reduce": 10,
                                                 "nccl:broadcast": 4})
        self.assertEqual(by["sum"].to_dict(), {"": 49927, "## backward ##": 26, "DistributedDataParallel.forward": 24864,
                                               "Optimizer.step#SGD.step": 1367, "nccl:all_reduce": 24204,
                                               "nccl:broadcast": 74})
        self.assertEqual(df["iteration"].value_counts().to_dict(), {4: 1258, 5: 1258})
        self.assertEqual(df.iloc[0]["ts"], 6092)

    def test_stragglers_of_two_equal_ranks(self):
        # This trace as ranks 0 and 1: HTA (f4d0062, run here) picks the iterations' last
        # all-reduce, finds the ranks tied, and lists both (one with num_candidates=1).
        path = os.path.join(data(*NCCL, shared=True), "nccl_data.json.gz")
        ta = TraceAnalysis(trace_files={0: path, 1: path})
        self.assertEqual(ta.get_potential_stragglers(), [0, 1])
        self.assertEqual(ta.get_potential_stragglers(num_candidates=1), [0])
        # HTA raises IndexError with more candidates than ranks; dreamscope lists every rank.
        self.assertEqual(ta.get_potential_stragglers(num_candidates=3), [0, 1])

    def test_no_communication_is_nan(self):
        df = analysis(MTIA).get_comm_comp_overlap(visualize=False)
        self.assertTrue(math.isnan(df.iloc[0]["comp_comm_overlap_pctg"]))


class EightRanks(unittest.TestCase):
    """wild/param-dlrm-v100x8-nccl: HTA on the folder as one job (../shared/data/wild/README.md)."""

    HTA = {  # rank: idle, compute, non-compute, kernel time (µs), comm/comp overlap (%)
        0: (6419, 1034, 5556, 13009, 4.50), 1: (6428, 1246, 11075, 18749, 2.47),
        2: (7046, 1068, 3236, 11350, 7.88), 3: (8145, 1240, 9468, 18853, 3.31),
        4: (8887, 1126, 6576, 16589, 0.56), 5: (9121, 1041, 6230, 16392, 0.64),
        6: (7051, 1051, 3308, 11410, 7.56), 7: (8308, 1059, 1600, 10967, 9.51),
    }

    def test_temporal_breakdown_and_overlap_per_rank(self):
        ta = TraceAnalysis(trace_dir=data("wild", "param-dlrm-v100x8-nccl", shared=True))
        temporal = ta.get_temporal_breakdown(visualize=False).set_index("rank")
        overlap = ta.get_comm_comp_overlap(visualize=False).set_index("rank")
        self.assertEqual(sorted(temporal.index), list(range(8)))
        for rank, (idle, compute, non_compute, kernel, pct) in self.HTA.items():
            row = temporal.loc[rank]
            self.assertEqual((row["idle_time(us)"], row["compute_time(us)"], row["non_compute_time(us)"],
                              row["kernel_time(us)"]), (idle, compute, non_compute, kernel), f"rank {rank}")
            self.assertEqual(overlap.loc[rank, "comp_comm_overlap_pctg"], pct, f"rank {rank}")

    def test_user_annotation_breakdown_per_rank(self):
        # HTA (f4d0062, run here) on the folder: no GPU annotations, and per rank the CPU ones.
        ta = TraceAnalysis(trace_dir=data("wild", "param-dlrm-v100x8-nccl", shared=True))
        self.assertIsNone(ta.get_gpu_user_annotation_breakdown(visualize=False))
        df = ta.get_gpu_user_annotation_breakdown(use_gpu_annotation=False, visualize=False)
        self.assertEqual(len(df), 248)
        self.assertEqual(list(df["rank"]), sorted(df["rank"]))
        ddp = df[df.name == "DistributedDataParallel.forward"].set_index("rank")
        self.assertEqual(list(ddp["sum (us)"]), [4787, 10269, 3678, 9213, 7408, 7273, 3659, 3684])
        self.assertEqual(list(ddp["max (us)"]), [4444, 9920, 3340, 8784, 7069, 6931, 3316, 3346])
        self.assertAlmostEqual(ddp.loc[1, "stddev"], 6767.719003, places=6)
        a2a = df[df.name == "nccl:all_to_all"].set_index("rank")
        self.assertEqual(list(a2a["sum (us)"]), [282, 291, 293, 309, 305, 293, 296, 285])
        self.assertAlmostEqual(a2a.loc[4, "stddev"], 11.423660, places=6)

    def test_potential_stragglers(self):
        # HTA (f4d0062, run here) on the folder: the metric kernel is stream 84's SendRecv;
        # ranks 7, 2, 6 start it latest.
        ta = TraceAnalysis(trace_dir=data("wild", "param-dlrm-v100x8-nccl", shared=True))
        self.assertEqual(ta.get_potential_stragglers(), [2, 7])
        self.assertEqual(ta.get_potential_stragglers(profiler_steps=[10]), [2, 7])
        self.assertEqual(ta.get_potential_stragglers(num_candidates=1), [7])
        self.assertEqual(ta.get_potential_stragglers(num_candidates=0), [7])
        self.assertEqual(ta.get_potential_stragglers(num_candidates=3), [2, 6, 7])
        self.assertEqual(ta.get_potential_stragglers(num_candidates=8), list(range(8)))
        with self.assertRaises(ValueError):
            ta.get_potential_stragglers(profiler_steps=[99])
        last = TraceAnalysis(trace_dir=data("wild", "param-dlrm-v100x8-nccl", shared=True),
                             include_last_profiler_step=True)
        self.assertEqual(last.get_potential_stragglers(), [2, 7])
        # One rank has no one to straggle behind (HTA: TypeError).
        rank0 = os.path.join(data("wild", "param-dlrm-v100x8-nccl", shared=True),
                             "worker0_step_12.1694128201545.pt.trace.json")
        with self.assertRaises(ValueError):
            TraceAnalysis(trace_files={0: rank0}).get_potential_stragglers()
        # No GPU user annotations in this job: HTA's None.
        self.assertIsNone(ta.get_gpu_kernels_with_user_annotations(0))

    def test_idle_interval_stats_rank_0(self):
        ta = TraceAnalysis(trace_dir=data("wild", "param-dlrm-v100x8-nccl", shared=True))
        _, stats = ta.get_idle_time_breakdown(ranks=[0], visualize=False, show_idle_interval_stats=True)
        Mtia.assert_stats(self, stats, 0, {
            (22, "host_wait"): (4, 36.25, 32.88, 16, 16.75, 22, 41.5, 85),
            (22, "other"): (0, NAN, NAN, NAN, NAN, NAN, NAN, NAN),
            (7, "host_wait"): (169, 67.74, 250.28, 6, 14, 23, 38, 2489),
            (7, "kernel_wait"): (55, 2.24, 1.82, 1, 1, 2, 2, 7),
            (7, "other"): (0, NAN, NAN, NAN, NAN, NAN, NAN, NAN),
            (24, "host_wait"): (19, 310.84, 919.81, 7, 17, 33, 87.5, 3965),
            (24, "kernel_wait"): (3, 6, 0, 6, 6, 6, 6, 6),
            (24, "other"): (0, NAN, NAN, NAN, NAN, NAN, NAN, NAN),
            (84, "host_wait"): (5, 948, 607.15, 225, 478, 1053, 1239, 1745),
            (84, "kernel_wait"): (2, 1.5, 0.71, 1, 1.25, 1.5, 1.75, 2),
            (84, "other"): (0, NAN, NAN, NAN, NAN, NAN, NAN, NAN),
        })


class Rocm(unittest.TestCase):
    def test_gpu_kernels_with_user_annotations(self):
        # HTA (f4d0062, run here) on the MI250 trace, which names no rank (HTA's rank 0): its
        # ops run on stream 0, which HTA numbers no iteration (NaN), and its copies carry no
        # byte count (-1).
        ta = TraceAnalysis(trace_dir=data("kineto-hta", "amd_trace", shared=True))
        self.assertEqual(list(ta.traces), [0])
        df = ta.get_gpu_kernels_with_user_annotations(0)
        self.assertEqual(df["s_user_annotation"].value_counts().to_dict(),
                         {"ProfilerStep#1": 8, "": 7, "Optimizer.step#SGD.step": 1})
        self.assertTrue(df["iteration"].isna().all())
        self.assertEqual(set(df["bytes"]), {-1})


class TwoRanks(unittest.TestCase):
    def test_trace_files_by_rank(self):
        mtia = os.path.join(data(*MTIA, shared=True), "mtia_rank_0.json.gz")
        nccl = os.path.join(data(*NCCL, shared=True), "nccl_data.json.gz")
        ta = TraceAnalysis(trace_files={0: mtia, 1: nccl})
        df = ta.get_temporal_breakdown(visualize=False)
        self.assertEqual(list(df["rank"]), [0, 1])
        self.assertEqual(df.iloc[0]["kernel_time(us)"], 13328071)
        types, kernels = ta.get_gpu_kernel_breakdown(visualize=False)
        self.assertEqual(set(kernels["rank"]), {0, 1})
        # Across ranks, each type's time is the ranks' sum.
        computation = types.set_index("kernel_type").loc["COMPUTATION", "sum"]
        per_rank = sum(analysis(parts).get_gpu_kernel_breakdown(visualize=False)[0]
                       .set_index("kernel_type").loc["COMPUTATION", "sum"] for parts in (MTIA, NCCL))
        self.assertEqual(computation, per_rank)
        self.assertEqual(sorted(ta.get_cuda_kernel_launch_stats(ranks=[0, 1], visualize=False)), [0, 1])


if __name__ == "__main__":
    main()
