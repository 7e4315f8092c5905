"""Tests of the shufflefl Python package: python3 -m unittest discover python/tests

The tests that call the binary need it ($SHUFFLEFL_BIN, shufflefl on PATH or
./bin/shufflefl: run them from the repository after `go build -o bin/shufflefl
./cmd/shufflefl`); without it they are skipped, saying so.
"""

import doctest
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import shufflefl  # noqa: E402  (the source tree's package, not an installed one)

try:
    shufflefl.binary()
    HAVE_BINARY = True
except FileNotFoundError:
    HAVE_BINARY = False
NEEDS_BINARY = unittest.skipUnless(HAVE_BINARY, "no shufflefl binary: set SHUFFLEFL_BIN or build ./bin/shufflefl")

TINY = dict(dataset="fashion-mnist-sample", clients=20, rounds=2)


class FlagsTest(unittest.TestCase):
    def test_flags(self):
        for kwargs, want in [
            (dict(eps0=4), ["--eps0", "4"]),
            (dict(delta=1e-6), ["--delta", "1e-06"]),
            (dict(samples_per_client=50), ["--samples-per-client", "50"]),
            (dict(faithful=True), ["--faithful"]),
            (dict(faithful=False), ["--faithful=false"]),
            (dict(option=["k=157", "b=2"]), ["--option", "k=157", "--option", "b=2"]),
            (dict(model=None), []),
            (dict(model="mlp:64,32", lr=0.05), ["--model", "mlp:64,32", "--lr", "0.05"]),
        ]:
            with self.subTest(kwargs=kwargs):
                self.assertEqual(shufflefl.flags(**kwargs), want)

    def test_missing_binary(self):
        old = os.environ.get("SHUFFLEFL_BIN")
        os.environ["SHUFFLEFL_BIN"] = "/nonexistent/shufflefl"
        try:
            with self.assertRaisesRegex(FileNotFoundError, "SHUFFLEFL_BIN=/nonexistent/shufflefl"):
                shufflefl.bound("clones", eps0=4)
        finally:
            if old is None:
                del os.environ["SHUFFLEFL_BIN"]
            else:
                os.environ["SHUFFLEFL_BIN"] = old


@NEEDS_BINARY
class BoundTest(unittest.TestCase):
    def test_clones(self):
        b = shufflefl.bound("clones", eps0=4, n=100000, delta=1e-6)
        self.assertEqual(b["bound"], "clones-numerical")
        self.assertTrue(b["rigorous"])
        self.assertEqual(b["inputs"]["n"], 100000)
        self.assertAlmostEqual(b["epsilon"], 0.1697699327550879, places=12)

    def test_bad_input(self):
        for name, kwargs, want in [
            ("clones", dict(eps0=-1), "--eps0 must be > 0"),
            ("nope", {}, 'unknown subcommand "nope"'),
            ("clones", dict(no_such_flag=1), "no-such-flag"),
        ]:
            with self.subTest(name=name, kwargs=kwargs):
                with self.assertRaises(shufflefl.BadInput) as cm:
                    shufflefl.bound(name, **kwargs)
                self.assertEqual(cm.exception.status, 2)
                self.assertIn(want, str(cm.exception))
                self.assertIsInstance(cm.exception, ValueError)


@NEEDS_BINARY
class RunTest(unittest.TestCase):
    def records(self, metrics):
        return metrics.to_dict("records") if hasattr(metrics, "to_dict") else metrics

    def test_temporary(self):
        r = shufflefl.run(protocol="nonprivate", **TINY)
        self.assertIsNone(r.out)
        self.assertEqual(r.summary["protocol"], "nonprivate")
        self.assertEqual(r.summary["rounds"], 2)
        recs = self.records(r.metrics)
        self.assertEqual([m["round"] for m in recs], [1, 2])
        self.assertEqual(recs[-1]["test_accuracy"], r.summary["final_test_accuracy"])
        self.assertIn("final test accuracy", r.stdout)

    def test_out_kept(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "run")
            r = shufflefl.run(protocol="nonprivate", out=out, model="mlp:16", **TINY)
            self.assertEqual(r.out, out)
            self.assertEqual(r.summary["model"], "mlp:16")
            for f in ("model.safetensors", "config.yaml", "summary.json"):
                self.assertTrue(os.path.exists(os.path.join(out, f)), f)
            with self.assertRaises(shufflefl.BadInput) as cm:  # the --out directory is used now
                shufflefl.run(protocol="nonprivate", out=out, **TINY)
            self.assertIn(out, cm.exception.message)

    def test_bad_protocol(self):
        with self.assertRaises(shufflefl.BadInput) as cm:
            shufflefl.run(protocol="nope", **TINY)
        self.assertIn("nope", cm.exception.message)
        self.assertEqual(len(cm.exception.message.splitlines()), 1)


class InstallTest(unittest.TestCase):
    def test_pip_install_offline(self):
        """pip install ./python into a fresh virtual environment, without an index."""
        src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        with tempfile.TemporaryDirectory() as d:
            env = os.path.join(d, "venv")
            if subprocess.run([sys.executable, "-m", "venv", env], capture_output=True).returncode != 0:
                self.skipTest(f"{sys.executable} -m venv failed (Debian: install python3-venv)")
            py = os.path.join(env, "bin", "python")
            p = subprocess.run([py, "-m", "pip", "install", "--no-index", "--no-cache-dir", src],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            p = subprocess.run([py, "-c", "import shufflefl; print(shufflefl.__version__, shufflefl.__file__)"],
                               capture_output=True, text=True, cwd=d)
            self.assertEqual(p.returncode, 0, p.stderr)
            version, path = p.stdout.split()
            self.assertEqual(version, shufflefl.__version__)
            self.assertTrue(path.startswith(env), path)
            # The trainer loop is installed beside it (importing it needs NumPy).
            p = subprocess.run([py, "-c", "import importlib.util; print(importlib.util.find_spec('shufflefl_trainer').origin)"],
                               capture_output=True, text=True, cwd=d)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertTrue(p.stdout.strip().startswith(env), p.stdout)


def load_tests(loader, tests, ignore):
    """Also runs the examples of the package's doc string (they need the binary)."""
    if HAVE_BINARY:
        tests.addTests(doctest.DocTestSuite(shufflefl))
    return tests


if __name__ == "__main__":
    unittest.main()
