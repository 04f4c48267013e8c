"""Trace.analyze / replay / whatif: the same content as the CLI's --format json (run here on
the same trace), as Python objects and DataFrames, and the predicted run as a Trace."""

import json
import os
import subprocess
import unittest

from support import BIN_DIR, data, main

import dreamscope

# Timings of the run itself, which differ from one run to the next.
_VOLATILE = {"build_seconds", "simulate_seconds"}


def cli_json(*args):
    cli = os.path.join(BIN_DIR, "dreamscope")
    if not os.path.exists(cli):
        raise unittest.SkipTest("the dreamscope CLI is not built")
    return json.loads(subprocess.run([cli, *args, "--format", "json"], check=True, capture_output=True,
                                     text=True).stdout)


def stable(report):
    return {k: v for k, v in report.items() if k not in _VOLATILE}


class Reports(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.path = data("gpu", "pytorch_train.db")
        cls.trace = dreamscope.load(cls.path)

    def test_analyze_is_the_cli_report(self):
        a = self.trace.analyze(only=["hta", "top-kernels", "critical-path"])
        self.assertEqual(a.json, cli_json("analyze", self.path, "--only", "hta,top-kernels,critical-path"))
        self.assertIn("hta", a)
        self.assertGreater(len(a.frame("top_kernels")), 0)

    def test_replay_is_the_cli_report(self):
        r = self.trace.replay(correct_overhead=True)
        self.assertEqual(stable(r.json), stable(cli_json("replay", self.path, "--correct-overhead")))
        self.assertEqual(len(r.steps), len(r.json["steps"]))
        self.assertEqual(list(r.steps["predicted_ns"]), [s["predicted_ns"] for s in r.json["steps"]])
        self.assertTrue(r.json["overhead_corrected"])
        # The replayed run is a trace like any other.
        p = r.predicted
        self.assertEqual(p.source, "simulator")
        self.assertEqual(len(p.kernels), len(self.trace.kernels))
        self.assertEqual(p.end_time - p.begin_time, r.predicted_ns)

    def test_whatif_is_the_cli_report(self):
        w = self.trace.whatif("data", workers=4)
        self.assertEqual(w.json, cli_json("whatif", self.path, "-s", "data", "-p", "workers=4"))
        self.assertEqual(list(w.predictions["label"]), ["data"])
        self.assertAlmostEqual(w.predictions["speedup"].iloc[0], w.json["predictions"][0]["speedup"])
        self.assertEqual(w.speedup, w.json["predictions"][0]["speedup"])
        self.assertEqual(w.json["predictions"][0]["parameters"]["data.workers"], "4")
        self.assertEqual(len(w.steps), w.json["steps"])
        self.assertEqual(set(w.critical_path["label"]), {"(as traced)", "data"})
        self.assertTrue((w.critical_path["share"].dropna() <= 1.0 + 1e-9).all())
        self.assertIsNotNone(w.data_stalls)
        self.assertGreater(len(w.predicted.kernels), 0)

    def test_whatif_combined_and_named_parameters(self):
        w = self.trace.whatif("data", "amp", params={"data.workers": 4}, data_stalls=False, predicted=False)
        self.assertEqual(list(w.predictions["label"])[:2], ["data", "amp"])
        self.assertEqual(len(w.predictions), 3)  # each, then the combination
        self.assertIsNone(w.predicted)
        with self.assertRaises(ValueError):
            self.trace.whatif("data", no_such_parameter=1)

    def test_scenarios(self):
        names = {s["name"] for s in dreamscope.scenarios()}
        self.assertIn("data", names)
        self.assertIn("workers", next(s for s in dreamscope.scenarios() if s["name"] == "data")["parameters"])


if __name__ == "__main__":
    main()
