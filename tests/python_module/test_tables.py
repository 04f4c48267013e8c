"""dreamscope.load(): every format the CLI opens, each table as a DataFrame, checked against
the trace.db's own rows (read here with sqlite3, not through dreamscope)."""

import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

from support import BIN_DIR, data, main

import numpy as np
import pandas as pd

import dreamscope


def sql(path, query):
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute(query).fetchall()


class TraceDbTables(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.path = data("gpu", "cuda_train.db")
        cls.trace = dreamscope.load(cls.path)

    def test_row_counts_match_the_file(self):
        t = self.trace
        self.assertEqual(len(t.gpu_ops), sql(self.path, "select count(*) from gpu_op")[0][0])
        self.assertEqual(len(t.cuda_api), sql(self.path, "select count(*) from cuda_api")[0][0])
        self.assertEqual(len(t.annotations), sql(self.path, "select count(*) from annotation")[0][0])
        self.assertEqual(len(t.events), len(t.gpu_ops) + len(t.cuda_api) + len(t.annotations))
        self.assertEqual(t.event_count, len(t.events))

    def test_gpu_ops_by_kind_match_the_file(self):
        by_kind = self.trace.gpu_ops.groupby("kind", observed=True).dur.agg(["count", "sum"])
        names = ["kernel", "memcpy", "memset", "sync"]
        for kind, count, total in sql(self.path, "select kind, count(*), sum(dur) from gpu_op group by kind"):
            self.assertEqual(by_kind.loc[names[kind], "count"], count, names[kind])
            self.assertEqual(by_kind.loc[names[kind], "sum"], total, names[kind])
        self.assertEqual(len(self.trace.kernels), by_kind.loc["kernel", "count"])

    def test_names_are_decoded_categoricals(self):
        k = self.trace.gpu_ops
        self.assertEqual(k["name"].dtype, "category")
        # Categories are the names the column uses, not the trace's whole string table.
        self.assertEqual(len(k["name"].cat.categories), k["name"].nunique())
        totals = k.groupby("name", observed=True).dur.sum()
        for name, total in sql(self.path, "select name, sum(dur) from gpu_op_named group by name"):
            self.assertEqual(totals[name], total, name)

    def test_columns_are_numpy_and_missing_values_na(self):
        api = self.trace.cuda_api
        self.assertEqual(api["start"].dtype, np.int64)
        self.assertTrue((api["dur"] == api["end"] - api["start"]).all())
        self.assertEqual(str(api["correlation"].dtype), "Int64")
        self.assertFalse(api["correlation"].isna().all())
        ann = self.trace.annotations
        self.assertEqual(int((ann["category"] == "step").sum()), 20)
        self.assertTrue(ann["parent"].isna().any())
        self.assertEqual(set(ann["domain"].cat.categories) >= {"dreamscope"}, True)

    def test_tracks_threads_streams_devices(self):
        t = self.trace
        self.assertEqual(len(t.threads) + len(t.streams), len(t.tracks))
        self.assertGreater(len(t.streams), 0)
        self.assertTrue(set(t.kernels["stream"].dropna()) <= set(t.streams["stream"].dropna()))
        self.assertEqual(len(t.devices), 1)
        self.assertGreater(int(t.devices["sm_count"].iloc[0]), 0)
        self.assertEqual(len(t.processes), 1)
        self.assertEqual(len(t.ranks), 0)  # a single process: no ranks
        self.assertGreater(len(t.calibration), 0)

    def test_frames_hold_their_columns_once(self):
        # Each column is one array kept as it is (no consolidation into a copy): the frame's
        # memory is its columns'.
        k = self.trace.kernels
        self.assertEqual(k._mgr.nblocks, len(k.columns))
        codes = k["name"].cat.codes
        self.assertEqual(codes.dtype.itemsize, 1)  # few names: pandas keeps int8 codes
        self.assertLess(int(k.memory_usage(index=False, deep=False).sum()), 120 * len(k) + 8 * 64)
        self.assertIs(self.trace.kernels, k)  # built once


class OtherFormats(unittest.TestCase):
    def test_kineto_json_of_several_versions(self):
        for name in ("pytorch-1.8-gpu.json", "pytorch-1.13-gpu.json", "pytorch-2.11-h200-train.json.gz"):
            with self.subTest(name):
                t = dreamscope.load(data("importers", "kineto", name))
                self.assertEqual(t.source, "kineto")
                self.assertGreater(len(t.kernels), 0)
                self.assertGreater(len(t.annotations), 0)
                self.assertTrue((t.kernels["dur"] >= 0).all())

    def test_nsys_export(self):
        script = data("nsys", "small_export.sql")
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, "small.sqlite")
            with sqlite3.connect(db) as c, open(script) as f:
                c.executescript(f.read())
            t = dreamscope.load(db)
            self.assertEqual(t.source, "nsys")
            self.assertGreater(len(t.gpu_ops), 0)
            self.assertGreater(len(t.cuda_api), 0)

    def test_a_job_of_several_ranks(self):
        t = dreamscope.load(data("cpu", "multirank", "baseline.db"))
        self.assertEqual(list(t.ranks["rank"]), list(range(8)))
        self.assertIn("rank", t.annotations.columns)
        self.assertEqual(set(t.annotations["rank"].dropna()), set(range(8)))
        r5 = t.rank(5)
        self.assertEqual(set(r5.annotations["rank"].dropna()), {5})
        self.assertEqual(len(r5.annotations), int((t.annotations["rank"] == 5).sum()))

    def test_a_folder_and_a_glob_of_rank_files(self):
        folder = data("wild", "param-dlrm-v100x8-nccl", shared=True)
        for inputs, ranks in ((folder, 8), (os.path.join(folder, "worker[01]_*.json"), 2)):
            with self.subTest(inputs):
                t = dreamscope.load(inputs)
                self.assertEqual(list(t.ranks["rank"]), list(range(ranks)))
                self.assertEqual(set(t.kernels["rank"].dropna()), set(range(ranks)))

    def test_rank_summaries(self):
        cli = os.path.join(BIN_DIR, "dreamscope")
        if not os.path.exists(cli):
            self.skipTest("the dreamscope CLI is not built")
        job = data("cpu", "multirank", "baseline.db")
        with tempfile.TemporaryDirectory() as tmp:
            for r in (0, 1, 2):
                subprocess.run([cli, "analyze", "--summary", "--rank", str(r), "-o",
                                os.path.join(tmp, f"rank{r}.summary.db"), job], check=True)
            s = dreamscope.load(tmp)
            self.assertIsInstance(s, dreamscope.JobSummaries)
            self.assertEqual(list(s.ranks["rank"]), [0, 1, 2])
            expected = subprocess.run([cli, "analyze", "--format", "json", tmp], check=True,
                                      capture_output=True, text=True).stdout
            import json
            self.assertEqual(s.report, json.loads(expected))

    def test_ranges_filled_into_probe_steps_say_where_they_came_from(self):
        # Traced with the default probe steps: each counted its neurons, and the merge copied in
        # those of a recorded step (docs/tracing.md, "Probe steps").
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "probe.db")
            subprocess.run([os.path.join(BIN_DIR, "dreamscope"), "trace", "-o", out, "--",
                            os.path.join(BIN_DIR, "cpu_train"), "--steps", "300", "--workers", "0",
                            "--fine-annotations", "--data", os.path.join(tmp, "data")],
                           check=True, capture_output=True)
            a = dreamscope.load(out).annotations
        self.assertEqual(str(a["filled_from"].dtype), "Int64")
        marks = a[a["name"] == "cost probe step"]
        filled = a[a["filled_from"].notna()]
        self.assertGreater(len(marks), 0)
        self.assertEqual(len(filled), int(marks["payload"].sum()))
        self.assertEqual(set(filled["name"]), {"neuron", "neuron_grad"})
        steps = a[a["name"] == "step"]
        self.assertTrue(set(filled["filled_from"]) <= set(steps["start"]))

    def test_errors_name_the_file(self):
        with self.assertRaises(RuntimeError) as e:
            dreamscope.load(os.path.join(data("cpu"), "README.md"))
        self.assertIn("README.md", str(e.exception))


class WithoutTheModule(unittest.TestCase):
    def test_annotations_import_without_the_compiled_module(self):
        # A copy of the package without _core: the annotations work, load() says what is missing.
        import shutil
        package = os.path.dirname(dreamscope.__file__)
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(package, os.path.join(tmp, "dreamscope"),
                            ignore=shutil.ignore_patterns("_core*", "__pycache__"))
            code = ("import dreamscope\n"
                    "with dreamscope.operation('x'):\n    pass\n"
                    "try:\n    dreamscope.load('x.db')\nexcept ImportError as e:\n    print(e)\n")
            out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=tmp),
                                 capture_output=True, text=True, check=True).stdout
            self.assertIn("dreamscope._core", out)
            self.assertIn("pybind11-dev", out)


if __name__ == "__main__":
    main()
