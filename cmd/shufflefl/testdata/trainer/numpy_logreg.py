"""A NumPy-only reference trainer (the protocol's test without PyTorch):
multinomial logistic regression by minibatch SGD (FedAvg, FedProx's mu) on
fashion-mnist-sample,
in shufflefl's layout (fc1.weight [features, classes], fc1.bias).

With an argument it misbehaves for client 3 from round 2 on: "crash" exits
with status 3, "nan" returns NaN, "short" returns one value too few,
"hang" sleeps, "raise" raises (an error frame); "misread" evaluates the
model with its weights read in the wrong layout."""

import gzip
import hashlib
import os
import struct
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python"))

import numpy as np  # noqa: E402

from shufflefl_trainer import batches, serve, tensors  # noqa: E402

MODE = sys.argv[1] if len(sys.argv) > 1 else ""
DATA = {}


def read_idx(path):
    raw = gzip.decompress(open(path, "rb").read())
    dims = struct.unpack(">" + "I" * raw[3], raw[4 : 4 + 4 * raw[3]])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * raw[3]).reshape(dims)


def setup(hello):
    if hello["dataset"] != "fashion-mnist-sample" or hello["model"] != "logreg":
        raise ValueError("the reference trainer trains logreg on fashion-mnist-sample only")
    d = os.path.join(REPO, "learning", "data", "testdata", "fashion-mnist-sample")
    x = read_idx(os.path.join(d, "train-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(d, "train-labels-idx1-ubyte.gz"))
    if hashlib.sha256(y.tobytes()).hexdigest() != hello["train_labels_sha256"]:
        raise ValueError("labels differ from shufflefl's")
    DATA["x"], DATA["y"] = x.reshape(len(x), -1).astype(np.float32) / 255, y
    tx = read_idx(os.path.join(d, "t10k-images-idx3-ubyte.gz"))
    DATA["tx"], DATA["ty"] = tx.reshape(len(tx), -1).astype(np.float32) / 255, read_idx(os.path.join(d, "t10k-labels-idx1-ubyte.gz"))


def evaluate(hello, req, model):
    x, y = DATA["tx"], DATA["ty"]
    if len(y) != req["examples"] or hashlib.sha256(y.tobytes()).hexdigest() != req["labels_sha256"]:
        raise ValueError("test labels differ from shufflefl's")
    p = tensors(hello, model.astype(np.float64))
    if MODE == "misread":  # the weights read transposed: a layout bug
        p["fc1.weight"] = p["fc1.weight"].reshape(hello["classes"], -1).T
    z = x @ p["fc1.weight"] + p["fc1.bias"]
    z -= z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float((z.argmax(axis=1) == y).mean()), float(-logp[np.arange(len(y)), y].mean())


def train(hello, req, model):
    if req["client"] == 3 and req["round"] >= 2:
        if MODE == "crash":
            print("about to crash")
            os._exit(3)
        if MODE == "nan":
            return np.full(hello["dim"], np.nan)
        if MODE == "short":
            return np.zeros(hello["dim"] - 1)
        if MODE == "hang":
            time.sleep(3600)
        if MODE == "raise":
            raise RuntimeError("client 3 has no data")
    w = model.astype(np.float64)
    p = tensors(hello, w)
    W, b = p["fc1.weight"], p["fc1.bias"]
    lr, mu = req["local"]["lr"], req["local"].get("mu", 0.0)
    W0, b0 = W.copy(), b.copy()
    for bi in batches(req["indices"], req["local"], req["seed"]):
        x, y = DATA["x"][bi], DATA["y"][bi]
        z = x @ W + b
        z -= z.max(axis=1, keepdims=True)
        pr = np.exp(z)
        pr /= pr.sum(axis=1, keepdims=True)
        pr[np.arange(len(y)), y] -= 1
        pr /= len(y)
        gW, gb = x.T @ pr, pr.sum(axis=0)
        if mu:
            gW, gb = gW + mu * (W - W0), gb + mu * (b - b0)
        W -= lr * gW
        b -= lr * gb
    return w - model


sys.exit(serve(train, setup=setup, name="numpy reference", evaluate=evaluate))
