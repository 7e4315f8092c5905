package main

import (
	"io"

	"shufflefl/audit"
	"shufflefl/data"
	"shufflefl/runtime"
)

func init() { auditCommands["protocol"] = runAuditProtocol }

func runAuditProtocol(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("protocol", audit.ProtocolHelp, stdout, stderr)
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
	rep.Command = audit.CommandLine("protocol", args)
	return c.emit(rep.Markdown(), rep, nil)
}
