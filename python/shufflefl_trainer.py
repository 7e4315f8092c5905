"""The trainer side of shufflefl's trainer protocol (docs/TRAINER.md).

A trainer is a program that shufflefl starts with ``--trainer CMD``: it
reads frames from its standard input and writes frames to its standard
output. shufflefl sends a hello (the model's layers, the data set, the
clients served), then one train request per client and round (the global
model and the client's example indices); the trainer answers each with the
client's update. shufflefl clips, randomizes, seals, shuffles and accounts;
the trainer only trains.

Write a function ``train(hello, request, model) -> update`` and call
``serve(train)``::

    import numpy as np
    from shufflefl_trainer import serve

    def train(hello, req, model):
        w = model.copy()
        ...                      # local SGD on the examples req["indices"]
        return w - model         # FedAvg: the model delta

    serve(train)

``hello`` and ``req`` are the JSON headers as dicts; ``model`` is a float32
NumPy array of ``hello["dim"]`` values. The update must have the same
length and finite values. An exception in ``train`` is reported to
shufflefl as an error frame naming the client; the loop continues.

``serve(train, evaluate=fn)`` also answers evaluate requests:
``fn(hello, req, model) -> (accuracy, loss)`` on the run's test set, which
shufflefl prints beside its own evaluation of the final model.

While ``serve`` runs, ``print`` goes to standard error: standard output
carries the frames. Standard library and NumPy only.
"""

import json
import os
import struct
import sys
import traceback

import numpy as np

VERSION = 1
"""The trainer protocol version this module speaks."""

MAX_HEADER = 16 << 20

_LITTLE_F32 = np.dtype("<f4")


class ProtocolError(Exception):
    """A malformed frame or an unexpected message."""


def read_frame(stream, limit):
    """Reads one frame: returns (kind, header dict, float32 payload) or None
    at end of input. A length beyond limit is refused before reading it."""
    pre = stream.read(4)
    if not pre:
        return None
    if len(pre) < 4:
        raise ProtocolError("input ended inside a frame's length")
    (n,) = struct.unpack(">I", pre)
    if n < 5 or n > limit:
        raise ProtocolError("frame length %d outside [5, %d]" % (n, limit))
    body = _read_exactly(stream, n)
    kind = chr(body[0])
    (hlen,) = struct.unpack(">I", body[1:5])
    if hlen > MAX_HEADER or hlen > n - 5:
        raise ProtocolError("header of %d bytes in a frame of %d" % (hlen, n))
    if (n - 5 - hlen) % 4:
        raise ProtocolError("payload is not a whole number of float32 values")
    header = json.loads(body[5 : 5 + hlen].decode("utf-8")) if hlen else {}
    payload = np.frombuffer(body, dtype=_LITTLE_F32, offset=5 + hlen).astype(np.float32)
    return kind, header, payload


def _read_exactly(stream, n):
    chunks, got = [], 0
    while got < n:
        b = stream.read(n - got)
        if not b:
            raise ProtocolError("input ended inside a frame")
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def write_frame(stream, kind, header, payload=None):
    """Writes one frame: kind (one character), header (a JSON-able dict) and
    an optional payload converted to little-endian float32."""
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    p = b"" if payload is None else np.ascontiguousarray(payload, dtype=_LITTLE_F32).tobytes()
    stream.write(struct.pack(">IBI", 5 + len(h) + len(p), ord(kind), len(h)))
    stream.write(h)
    stream.write(p)
    stream.flush()


def serve(train_fn, setup=None, name=None, stdin=None, stdout=None, evaluate=None):
    """Runs the protocol until shufflefl says bye or closes the input.

    setup(hello), if given, is called once with the hello before the
    trainer answers it (load the data, build the model); an exception there
    is reported to shufflefl, which stops before round 1.
    train_fn(hello, request, model) returns the client's update: a sequence
    of hello["dim"] finite numbers (the model delta in mode "fedavg", the
    gradient in mode "fedsgd"), or a pair (update, stats) where stats is a
    dict that may hold "steps" and "loss". evaluate(hello, request,
    model), if given, returns (accuracy, loss) of model on the test set of
    request["examples"] examples whose labels hash to
    request["labels_sha256"]; the ready frame then says the trainer
    evaluates. Returns an exit status.
    """
    if stdin is None or stdout is None:
        # Frames go to the real standard output; print() goes to stderr.
        stdin = sys.stdin.buffer
        stdout = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
        sys.stdout = sys.stderr
    first = read_frame(stdin, 5 + MAX_HEADER)
    if first is None:
        return 0
    kind, hello, _ = first
    if kind != "H":
        raise ProtocolError("first frame is %r, want a hello" % kind)
    if hello.get("protocol") != VERSION:
        write_frame(stdout, "R", {"protocol": VERSION, "name": name or "shufflefl_trainer.py"})
        return 1
    dim = int(hello["dim"])
    limit = 5 + MAX_HEADER + 4 * dim
    if setup is not None:
        try:
            setup(hello)
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            write_frame(stdout, "E", {"message": "%s: %s" % (type(e).__name__, e)})
            return 1
    ready = {"protocol": VERSION, "name": name or "shufflefl_trainer.py"}
    if evaluate is not None:
        ready["evaluate"] = True
    write_frame(stdout, "R", ready)
    while True:
        f = read_frame(stdin, limit)
        if f is None:
            return 0
        kind, req, model = f
        if kind == "Q":
            return 0
        if kind == "V" and evaluate is not None:
            try:
                acc, loss = evaluate(hello, req, model)
                head = {"round": req["round"], "examples": int(req["examples"]), "accuracy": float(acc), "loss": float(loss)}
            except Exception as e:
                traceback.print_exc(file=sys.stderr)
                write_frame(stdout, "E", {"message": "%s: %s" % (type(e).__name__, e)})
                continue
            write_frame(stdout, "M", head)
            continue
        if kind != "T":
            raise ProtocolError("unexpected %r frame" % kind)
        try:
            out = train_fn(hello, req, model)
            stats = {}
            if isinstance(out, tuple):
                out, stats = out
            update = np.asarray(out, dtype=np.float32).reshape(-1)
        except Exception as e:  # reported to shufflefl, which names the client
            traceback.print_exc(file=sys.stderr)
            write_frame(stdout, "E", {"message": "%s: %s" % (type(e).__name__, e)})
            continue
        head = {"round": req["round"], "client": req["client"]}
        if "steps" in stats:
            head["steps"] = int(stats["steps"])
        if "loss" in stats:
            head["loss"] = float(stats["loss"])
        write_frame(stdout, "U", head, update)


def tensors(hello, flat):
    """Splits a flat parameter vector into the model's layers: a dict from
    layer name to a view of flat shaped as the layer (model.safetensors'
    names and shapes)."""
    out = {}
    for layer in hello["layers"]:
        size = int(np.prod(layer["shape"])) if layer["shape"] else 1
        off = layer["offset"]
        out[layer["name"]] = flat[off : off + size].reshape(layer["shape"])
    return out


def batches(indices, local, seed):
    """Yields the minibatches of a client's local training as shufflefl's
    configuration describes it: in mode "fedavg", epochs passes (or steps
    steps) over a fresh random order of indices in minibatches of batch;
    in mode "fedsgd", one minibatch of min(batch, n) examples. The order is
    drawn from NumPy's generator seeded with seed, so it is reproducible
    but not the in-process trainer's order."""
    rng = np.random.default_rng(seed)
    idx = np.asarray(indices, dtype=np.int64)
    n, b = len(idx), int(local["batch"])
    if local.get("mode", "fedavg") == "fedsgd":
        yield idx if b >= n else rng.choice(idx, size=b, replace=False)
        return
    steps = local.get("steps", 0)
    if local.get("epochs", 0) > 0:
        steps = local["epochs"] * ((n + b - 1) // b)
    pos, order = n, idx
    for _ in range(steps):
        if pos >= n:
            order, pos = rng.permutation(idx), 0
        yield order[pos : pos + b]
        pos += b
