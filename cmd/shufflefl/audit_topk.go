package main

import (
	"io"

	"shufflefl/audit"
	"shufflefl/data"
	"shufflefl/runtime"
)

func init() { auditCommands["topk"] = runAuditTopk }

func runAuditTopk(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("topk", audit.TopkHelp, stdout, stderr)
	model := c.fs.String("model", "logreg", "model")
	dataset := c.fs.String("dataset", "fashion-mnist-sample", "dataset")
	dataDir := c.fs.String("data-dir", "", "directory of the data files")
	clients := c.fs.Int("clients", 100, "clients")
	perRound := c.fs.Int("clients-per-round", 50, "clients per round")
	rounds := c.fs.Int("rounds", 5, "rounds")
	eps := c.fs.Float64("epsilon", 10, "local epsilon per round (user level)")
	k := c.fs.Int("k", 50, "top-k coordinates per report")
	nus := c.fs.String("nu", "1.5,4,16", "comma-separated nu-index privacy targets (one run each)")
	if code, ok := c.parse(args); !ok {
		return code
	}
	split, err := data.Load(*dataset, data.Options{DataDir: *dataDir, Seed: c.common.seed})
	if err != nil {
		return c.fail(err)
	}
	nuList, err := parseFloats("--nu", *nus)
	if err != nil {
		return c.fail(err)
	}
	rep := audit.TopkReport{Command: audit.CommandLine("topk", args)}
	for _, nu := range nuList {
		cfg := runtime.DefaultConfig()
		cfg.Protocol, cfg.Model, cfg.Dataset, cfg.Out = "ss-topk", *model, *dataset, ""
		cfg.Clients, cfg.ClientsPerRound, cfg.Rounds, cfg.LocalEpochs = *clients, *perRound, *rounds, 1
		cfg.Epsilon, cfg.Seed, cfg.Workers = *eps, c.common.seed, c.common.workers
		cfg.Options = map[string]float64{"k": float64(*k), "nu": nu}
		res, err := audit.TopkShuffler(cfg, split)
		if err != nil {
			return c.fail(err)
		}
		rep.Results = append(rep.Results, res)
	}
	return c.emit(rep.Markdown(), rep, nil)
}
