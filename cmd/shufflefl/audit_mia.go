package main

import (
	"fmt"
	"io"
	"strings"

	"shufflefl/audit"
	"shufflefl/data"
	"shufflefl/runtime"
)

func init() { auditCommands["mia"] = runAuditMIA }

func runAuditMIA(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("mia", audit.MIAHelp, stdout, stderr)
	protos := c.fs.String("protocols", "nonprivate,dp-central,ldp-laplace,apes,ss-simple", "comma-separated protocols")
	model := c.fs.String("model", "mlp", "model: logreg or mlp")
	dataset := c.fs.String("dataset", "fashion-mnist-sample", "dataset (members from its training set, non-members from its test set)")
	dataDir := c.fs.String("data-dir", "", "directory of the data files")
	clients := c.fs.Int("clients", 20, "clients (all take part in every round)")
	spc := c.fs.Int("samples-per-client", 10, "examples per client")
	rounds := c.fs.Int("rounds", 40, "rounds")
	epochs := c.fs.Int("local-epochs", 5, "local epochs")
	lr := c.fs.Float64("lr", 0.1, "client learning rate")
	clip := c.fs.Float64("clip", 0.1, "clipping bound C")
	eps := c.fs.Float64("epsilon", 1, "every client's local epsilon per round (user level)")
	target := c.fs.Float64("target-epsilon", 8, "dp-central: central epsilon of the whole run")
	delta := c.fs.Float64("delta", 1e-5, "central delta of the run")
	refs := c.fs.Int("references", 2, "reference models for the calibrated attack")
	if code, ok := c.parse(args); !ok {
		return code
	}
	split, err := data.Load(*dataset, data.Options{DataDir: *dataDir, Seed: c.common.seed})
	if err != nil {
		return c.fail(err)
	}
	rep := audit.MIAReport{Command: audit.CommandLine("mia", args), Model: *model, Dataset: *dataset}
	for _, p := range strings.Split(*protos, ",") {
		cfg := runtime.DefaultConfig()
		cfg.Protocol, cfg.Dataset, cfg.Model = strings.TrimSpace(p), *dataset, *model
		cfg.Clients, cfg.SamplesPerClient, cfg.Rounds, cfg.LocalEpochs = *clients, *spc, *rounds, *epochs
		cfg.LR, cfg.Clip, cfg.Epsilon, cfg.Delta, cfg.Seed, cfg.Workers, cfg.Out = *lr, *clip, *eps, *delta, c.common.seed, c.common.workers, ""
		if audit.AddRemove(cfg.Protocol) {
			cfg.TargetEpsilon = *target
		}
		if cfg.Protocol == "ldp-min" {
			cfg.Options = map[string]float64{"min-epsilon": *eps}
		}
		if !c.common.quiet {
			fmt.Fprintf(stderr, "shufflefl audit mia: training %s (%d rounds, %d reference models)\n", cfg.Protocol, cfg.Rounds, *refs)
		}
		res, err := audit.MembershipInference(audit.MIAConfig{Train: cfg, Pool: split, References: *refs})
		if err != nil {
			return c.fail(fmt.Errorf("%s: %w", cfg.Protocol, err))
		}
		rep.Results = append(rep.Results, res)
	}
	return c.emit(rep.Markdown(), rep, nil)
}
