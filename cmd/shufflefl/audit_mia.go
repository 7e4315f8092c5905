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

const auditMIAUsage = `Usage: shufflefl audit mia [--protocols LIST] [--epsilon E] [--target-epsilon E] [flags]

Membership inference against the trained global model. For each protocol a
model is trained with the engine on --clients x --samples-per-client
members (a small set, so that a non-private model overfits); the same
number of held-out test examples are the non-members. Attacks: the loss
threshold (members have lower loss) and its per-example difficulty
calibration (Watson et al. 2022: the loss minus the mean loss under
--references reference models trained the same way without the example).
Reported: ROC AUC, TPR at 1% and 0.1% FPR (0.1% needs over 1,000
non-members to be meaningful), and the largest AUC the run's claimed
central epsilon allows.

Examples:
  shufflefl audit mia --out out/mia
  shufflefl audit mia --protocols nonprivate,dp-central,ss-simple --epsilon 100 --target-epsilon 8 --rounds 40 --out out/mia
`

func runAuditMIA(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("mia", auditMIAUsage, stdout, stderr)
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
	rep := audit.MIAReport{Command: commandLine("mia", args), Model: *model, Dataset: *dataset}
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
