package main

import (
	"io"
	"strings"

	"shufflefl/audit"
	"shufflefl/checks"
	"shufflefl/data"
	"shufflefl/fl"
	"shufflefl/protocol"
	"shufflefl/rng"
)

func init() { auditCommands["inversion"] = runAuditInversion }

func runAuditInversion(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("inversion", audit.InversionHelp, stdout, stderr)
	model := c.fs.String("model", "logreg", "model attacked: logreg or mlp (the analytic attack needs a fully connected layer on the input)")
	dataset := c.fs.String("dataset", "fashion-mnist-sample", "image dataset")
	dataDir := c.fs.String("data-dir", "", "directory of the data files")
	protos := c.fs.String("protocols", "all", "comma-separated protocols, or all")
	epsList := c.fs.String("epsilons", "1,100,10000", "comma-separated user-level epsilons (dp-central: central)")
	nuList := c.fs.String("nus", "0,0.001,0.01,0.1,1,10", "comma-separated noise multipliers of the per-layer sanitizer")
	targets := c.fs.Int("targets", 4, "images attacked")
	clients := c.fs.Int("clients", 10, "clients of a round when the attacker sees only the round's mean")
	lr := c.fs.Float64("lr", 0.1, "client SGD step size")
	clip := c.fs.Float64("clip", 0.1, "protocols' clipping bound C")
	steps := c.fs.Int("dlg-steps", 200, "Adam steps of the optimisation attack")
	dlgLR := c.fs.Float64("dlg-lr", 0.05, "Adam step size of the optimisation attack (the mlp does better with 0.01 and 1000 steps)")
	if code, ok := c.parse(args); !ok {
		return code
	}
	if *steps < 1 || !(*dlgLR > 0) {
		return c.fail(checks.Invalidf("--dlg-steps must be >= 1 and --dlg-lr > 0, got %d and %v", *steps, *dlgLR))
	}
	split, err := data.Load(*dataset, data.Options{DataDir: *dataDir})
	if err != nil {
		return c.fail(err)
	}
	m, err := fl.NewModel(*model, split.Train.Features, max(2, split.Train.Classes))
	if err != nil {
		return c.fail(err)
	}
	if _, err := audit.InputLayer(m); err != nil {
		return c.fail(err)
	}
	epss, err := audit.ParseFloats("--epsilons", *epsList)
	if err != nil {
		return c.fail(err)
	}
	nus, err := audit.ParseFloats("--nus", *nuList)
	if err != nil {
		return c.fail(err)
	}
	names := strings.Split(*protos, ",")
	if *protos == "all" {
		names = protocol.Names()
	}
	var psets, nsets []audit.Setting
	for _, n := range names {
		if n == "nonprivate" {
			psets = append(psets, audit.Setting{Protocol: n})
			continue
		}
		for _, e := range epss {
			psets = append(psets, audit.Setting{Protocol: n, Epsilon: e})
		}
	}
	for _, nu := range nus {
		if nu < 0 {
			return c.fail(checks.Invalidf("--nus: nu = %v must be >= 0", nu))
		}
		nsets = append(nsets, audit.Setting{Nu: nu})
	}
	w := make([]float64, m.Dim())
	m.Init(rng.Stream(c.common.seed, rng.LabelInit), w)
	cfg := audit.InversionConfig{Model: m, W: w, Data: split.Train, Targets: *targets, LR: *lr, Clip: *clip, Delta: 1e-5,
		Clients: *clients, DLG: audit.DLGConfig{Steps: *steps, LR: *dlgLR}, Seed: c.common.seed}
	rep := audit.InversionReport{Command: audit.CommandLine("inversion", args), Model: *model, Dataset: *dataset, Targets: *targets}
	images := map[string]func(io.Writer) error{}
	for _, part := range []struct {
		file string
		sets []audit.Setting
	}{{"inversion-protocols.png", psets}, {"inversion-nu.png", nsets}} {
		if len(part.sets) == 0 {
			continue
		}
		cfg.Settings = part.sets
		rows, err := audit.InversionStudy(cfg)
		if err != nil {
			return c.fail(err)
		}
		rep.Rows = append(rep.Rows, rows...)
		images[part.file] = audit.InversionGrid(rows, split.Train, *targets)
	}
	return c.emit(rep.Markdown(), rep, images)
}
