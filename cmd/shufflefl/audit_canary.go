package main

import (
	"fmt"
	"io"
	"strings"

	"shufflefl/audit"
	"shufflefl/checks"
	"shufflefl/data"
	"shufflefl/runtime"
)

func init() {
	auditCommands["canary"] = runAuditCanary
	auditCommands["one-run"] = runAuditCanary
}

func runAuditCanary(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("canary", audit.CanaryHelp, stdout, stderr)
	protos := c.fs.String("protocols", "nonprivate,dp-central,ldp-laplace,apes,ss-simple,ss-topk", "comma-separated protocols")
	model := c.fs.String("model", "logreg", "model")
	dataset := c.fs.String("dataset", "fashion-mnist-sample", "dataset")
	dataDir := c.fs.String("data-dir", "", "directory of the data files")
	clients := c.fs.Int("clients", 200, "clients (population)")
	perRound := c.fs.Int("clients-per-round", 0, "clients per round (0: all)")
	spc := c.fs.Int("samples-per-client", 10, "examples per client")
	rounds := c.fs.Int("rounds", 2, "rounds")
	eps := c.fs.Float64("epsilon", 1, "every client's local epsilon per round (user level)")
	target := c.fs.Float64("target-epsilon", 8, "dp-central: central epsilon of the whole run")
	delta := c.fs.Float64("delta", 1e-5, "central delta of the run")
	clip := c.fs.Float64("clip", 0.1, "clipping bound C")
	m := c.fs.Int("canaries", 100, "canary clients M")
	guesses := c.fs.Int("guesses", 0, "guesses on each side (0: M/4)")
	scale := c.fs.Float64("scale", 1, "canary size relative to the clip bound")
	conf := c.fs.Float64("confidence", 0.95, "confidence of the lower bound")
	if code, ok := c.parse(args); !ok {
		return code
	}
	if *m > *clients {
		return c.fail(checks.Invalidf("%d canaries exceed the %d clients: raise --clients or lower --canaries", *m, *clients))
	}
	split, err := data.Load(*dataset, data.Options{DataDir: *dataDir, Seed: c.common.seed})
	if err != nil {
		return c.fail(err)
	}
	rep := audit.CanaryReport{Command: audit.CommandLine("canary", args)}
	for _, p := range strings.Split(*protos, ",") {
		cfg := runtime.DefaultConfig()
		cfg.Protocol, cfg.Model, cfg.Dataset, cfg.Out = strings.TrimSpace(p), *model, *dataset, ""
		cfg.Clients, cfg.ClientsPerRound, cfg.SamplesPerClient, cfg.Rounds, cfg.LocalEpochs = *clients, *perRound, *spc, *rounds, 1
		cfg.Epsilon, cfg.Delta, cfg.Clip, cfg.Seed, cfg.Workers = *eps, *delta, *clip, c.common.seed, c.common.workers
		if audit.AddRemove(cfg.Protocol) {
			cfg.TargetEpsilon = *target
		}
		if cfg.Protocol == "ldp-min" {
			cfg.Options = map[string]float64{"min-epsilon": *eps}
		}
		if !c.common.quiet {
			fmt.Fprintf(stderr, "shufflefl audit canary: training %s with %d canaries (%d rounds)\n", cfg.Protocol, *m, cfg.Rounds)
		}
		res, err := audit.OneRun(audit.OneRunConfig{Train: cfg, Split: split, Canaries: *m, Guesses: *guesses, Scale: *scale, Confidence: *conf})
		if err != nil {
			return c.fail(fmt.Errorf("%s: %w", cfg.Protocol, err))
		}
		if res.Warning != "" {
			c.warn("%s: %s", cfg.Protocol, res.Warning)
		}
		rep.Results = append(rep.Results, res)
	}
	return c.emit(rep.Markdown(), rep, nil)
}
