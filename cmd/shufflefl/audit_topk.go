package main

import (
	"io"

	"shufflefl/audit"
	"shufflefl/data"
	"shufflefl/runtime"
)

func init() { auditCommands["topk"] = runAuditTopk }

const auditTopkUsage = `Usage: shufflefl audit topk [--k K] [--nu NU] [flags]

What the SS-Topk shuffler learns. The engine trains with protocol ss-topk;
the shuffler sees each participant's l·k reported indexes (it needs them to
shuffle per dimension) and guesses which k are the true top-k: uniformly at
random (FLAME's adversary, expected success 1/l) and by popularity (the
indexes reported most often so far). Success rates, with 95% intervals,
are compared with nu·beta, FLAME Definition 3's cap on
Pr[I_j = 1 | reported] for an adversary with the uniform prior beta = k/d.

Examples:
  shufflefl audit topk --out out/topk
  shufflefl audit topk --k 157 --nu 2 --rounds 5 --model mlp
`

func runAuditTopk(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("topk", auditTopkUsage, stdout, stderr)
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
	rep := audit.TopkReport{Command: commandLine("topk", args)}
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
