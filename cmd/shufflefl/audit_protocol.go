package main

import (
	"io"

	"shufflefl/audit"
	"shufflefl/data"
	"shufflefl/runtime"
)

func init() { auditCommands["protocol"] = runAuditProtocol }

const auditProtocolUsage = `Usage: shufflefl audit protocol --protocol NAME|all --epsilon E [flags]

The distinguishing game through one whole round of a protocol: --clients
clients with --dim-dimensional updates; client 0 holds -C·1 or +C·1 (the
extreme neighbours of clipping to [-C, C]; dp-central: ±C/√d·1), every
other client a fixed update. Each trial runs every client's Encode, the
shuffler (padding, permutation) and the analyzer; the adversary scores what
the analyzer sees (the estimate; without a shuffler, client 0's own report).
eps_lower is compared with the round's central epsilon from the protocol's
own accountant (Protocol.Account). --miscalibrate F encodes with F times the
budget while claiming the budget (a negative control the audit must catch).

With --protocol all a second table follows: the tight game, the same game
at n = 2 clients and d = 1 coordinate (--tight-trials rounds per world; 0
skips it), where client 0's whole budget sits on one value and one other
client's noise blurs it: this is the game that catches a halved Laplace
scale, which ten clients' noise hides. Several protocols' claims are exact
there, and a 95% lower bound exceeds an exact claim 5% of the time, so the
tight table is read at the joint confidence 1 - (1 - --confidence)/m over
its m protocols (Bonferroni).

Examples:
  shufflefl audit protocol --protocol ldp-laplace --epsilon 2 --trials 20000
  shufflefl audit protocol --protocol all --epsilon 2 --dim 2 --clients 10 --trials 20000 --out out/audit-protocols
  shufflefl audit protocol --protocol dp-central --target-epsilon 4 --miscalibrate 2 --trials 20000
  shufflefl audit protocol --engine --protocol dp-central --target-epsilon 2 --clients 10 --trials 4000

With --engine the round is the engine's first round of a run on --dataset
and --model (all --clients take part): the canary is one sampled client
whose update is replaced through the engine's hooks, every trial rebuilds
the engine with a fresh NoiseSalt (only the mechanisms' randomness changes),
and the claim is the round's central epsilon from the engine's accountant.
`

func runAuditProtocol(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("protocol", auditProtocolUsage, stdout, stderr)
	name := c.fs.String("protocol", "", "protocol to audit, or all (every private protocol)")
	eps := c.fs.Float64("epsilon", 2, "every client's local epsilon for its whole update (user level)")
	target := c.fs.Float64("target-epsilon", 4, "dp-central: the central epsilon its noise is calibrated to")
	delta := c.fs.Float64("delta", 1e-5, "target central delta")
	clip := c.fs.Float64("clip", 1, "clipping bound C")
	dim := c.fs.Int("dim", 2, "model dimension of the game")
	clients := c.fs.Int("clients", 10, "clients in the round")
	mis := c.fs.Float64("miscalibrate", 1, "encode with this many times the budget, claim the budget (negative control)")
	trials := c.fs.Int64("trials", 20000, "trials (rounds) per world")
	tightTrials := c.fs.Int64("tight-trials", 40000, "with --protocol all: trials per world of the tight game (n = 2, d = 1); 0 skips it")
	conf := c.fs.Float64("confidence", 0.95, "confidence of the lower bound")
	engine := c.fs.Bool("engine", false, "play the game through the engine (real data, sampling, training; a fresh NoiseSalt per trial) on --dataset/--model instead of the protocol API")
	dataset := c.fs.String("dataset", "fashion-mnist-sample", "--engine: dataset")
	model := c.fs.String("model", "logreg", "--engine: model")
	spc := c.fs.Int("samples-per-client", 10, "--engine: examples per client")
	var opts multiFlag
	c.fs.Var(&opts, "option", "protocol option NAME=VALUE (repeatable; see shufflefl protocols NAME)")
	if code, ok := c.parse(args); !ok {
		return code
	}
	if *name == "" {
		return c.fail(errMissing("--protocol"))
	}
	extra, err := runtime.ParseOptions(opts)
	if err != nil {
		return c.fail(err)
	}
	ctx, stop := c.context()
	defer stop()
	var split data.Split
	if *engine {
		if split, err = data.Load(*dataset, data.Options{Seed: c.common.seed}); err != nil {
			return c.fail(err)
		}
	}
	rep, err := audit.ProtocolAudit(ctx, audit.ProtocolAuditConfig{Protocol: *name, Epsilon: *eps, TargetEpsilon: *target, Delta: *delta,
		Clip: *clip, Dim: *dim, Clients: *clients, Miscalibrate: *mis, Trials: *trials, TightTrials: *tightTrials, Confidence: *conf,
		Options: extra, Seed: c.common.seed, Workers: c.common.workers, Engine: *engine, Dataset: *dataset, Model: *model,
		SamplesPerClient: *spc, Split: split, Progress: c.progress,
		Warn: func(n string, err error) { c.warn("%s skipped: %s", n, oneLine(err)) }})
	if err != nil {
		return c.fail(err)
	}
	rep.Command = commandLine("protocol", args)
	return c.emit(rep.Markdown(), rep, nil)
}
