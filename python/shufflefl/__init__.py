"""Python entry point to shufflefl: privacy bounds and federated runs.

The package wraps the shufflefl binary (standard library only); the privacy
computations and the training stay in it. The binary is $SHUFFLEFL_BIN, else
``shufflefl`` on PATH, else ``./bin/shufflefl``.

    >>> import shufflefl
    >>> shufflefl.bound("clones", eps0=4, n=100000, delta=1e-6)["epsilon"]
    0.1697699327550879
    >>> r = shufflefl.run(protocol="nonprivate", dataset="fashion-mnist-sample",
    ...                   clients=20, rounds=2)
    >>> r.summary["final_test_accuracy"], len(r.metrics)
    (0.748, 2)

Keyword arguments become the command's flags: ``eps0=4`` is ``--eps0 4``,
``samples_per_client=50`` is ``--samples-per-client 50``, ``faithful=True`` is
``--faithful``, a list repeats its flag (``option=["k=157"]``) and None leaves
the flag out. Bad input (exit status 2) raises BadInput, any other failure
ShuffleflError; both carry the tool's message.
"""

import json
import os
import shutil
import subprocess
import tempfile

__all__ = ["BadInput", "Run", "ShuffleflError", "binary", "bound", "flags", "run"]
__version__ = "0.3.0"


class ShuffleflError(RuntimeError):
    """The shufflefl binary failed: ``message`` is what it printed on stderr,
    ``status`` its exit status and ``args`` the command line."""

    def __init__(self, message, status, argv):
        super().__init__(message)
        self.message = message
        self.status = status
        self.argv = argv


class BadInput(ShuffleflError, ValueError):
    """shufflefl refused its input (exit status 2): a bad flag or value, an
    unusable file or output directory."""


def binary():
    """The path of the shufflefl binary: $SHUFFLEFL_BIN, else shufflefl on
    PATH, else ./bin/shufflefl. Raises FileNotFoundError if none exists."""
    env = os.environ.get("SHUFFLEFL_BIN")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise FileNotFoundError(f"SHUFFLEFL_BIN={env} is not an executable file")
        return env
    found = shutil.which("shufflefl")
    if found:
        return found
    local = os.path.join(os.getcwd(), "bin", "shufflefl")
    if os.path.isfile(local) and os.access(local, os.X_OK):
        return local
    raise FileNotFoundError("shufflefl binary not found: set SHUFFLEFL_BIN, put shufflefl on PATH "
                            "or build ./bin/shufflefl (go build -o bin/shufflefl ./cmd/shufflefl)")


def flags(**kwargs):
    """The command-line flags of keyword arguments, in the order given."""
    out = []
    for key, value in kwargs.items():
        name = "--" + key.replace("_", "-")
        if value is None:
            continue
        if value is True:
            out.append(name)
        elif value is False:
            out.append(name + "=false")
        elif isinstance(value, (list, tuple)):
            for v in value:
                out += [name, _text(v)]
        else:
            out += [name, _text(value)]
    return out


def _text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _call(argv, timeout=None):
    """Runs the binary with argv and returns its stdout; raises on failure."""
    cmd = [binary()] + argv
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        msg = p.stderr.strip() or p.stdout.strip() or f"exit status {p.returncode}"
        cls = BadInput if p.returncode == 2 else ShuffleflError
        raise cls(msg, p.returncode, cmd)
    return p.stdout


def bound(name, timeout=None, **kwargs):
    """The JSON object of ``shufflefl bound NAME --FLAG VALUE ... --json``
    as a dict, e.g. ``bound("clones", eps0=4, n=100000, delta=1e-6)``.
    Non-finite numbers are None (the tool writes them as null)."""
    return json.loads(_call(["bound", name] + flags(**kwargs) + ["--json"], timeout))


class Run:
    """The result of :func:`run`: ``summary`` (summary.json as a dict),
    ``metrics`` (metrics.jsonl, one dict per round, or a pandas DataFrame if
    pandas is importable), ``stdout`` (what the run printed) and ``out`` (the
    run directory, or None if it was a temporary one, now removed)."""

    def __init__(self, summary, metrics, stdout, out):
        self.summary = summary
        self.metrics = metrics
        self.stdout = stdout
        self.out = out

    def __repr__(self):
        return (f"Run(protocol={self.summary.get('protocol')!r}, rounds={self.summary.get('rounds')}, "
                f"final_test_accuracy={self.summary.get('final_test_accuracy')}, out={self.out!r})")


def _metrics_table(records):
    try:
        import pandas
    except ImportError:
        return records
    return pandas.DataFrame.from_records(records)


def run(protocol=None, out=None, timeout=None, **kwargs):
    """Runs ``shufflefl run --protocol PROTOCOL --FLAG VALUE ... --out OUT``
    and returns a :class:`Run`. Without ``out`` it runs in a temporary
    directory that is removed once summary.json and metrics.jsonl are read;
    give ``out`` (a directory that is empty or absent) to keep the model and
    the other outputs."""
    argv = ["run"]
    if protocol is not None:
        argv += ["--protocol", protocol]
    kwargs.setdefault("progress", "none")
    argv += flags(**kwargs)
    tmp = None
    if out is None:
        tmp = tempfile.mkdtemp(prefix="shufflefl-run-")
        target = os.path.join(tmp, "run")
    else:
        target = os.fspath(out)
    try:
        stdout = _call(argv + ["--out", target], timeout)
        with open(os.path.join(target, "summary.json"), encoding="utf-8") as f:
            summary = json.load(f)
        with open(os.path.join(target, "metrics.jsonl"), encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return Run(summary, _metrics_table(records), stdout, None if tmp is not None else target)
