package main

import (
	"io"
	"strings"

	"shufflefl/data"
	"shufflefl/experiment"
)

const frontierExamples = `
Examples:
  shufflefl experiment frontier
  shufflefl experiment frontier --protocols ss-simple,apes,dp-central --targets 1,2,4,8,16
  shufflefl experiment frontier --clients 20000 --rounds 20 --out out/frontier-big
`

func runFrontier(args []string, stdout, stderr io.Writer) int {
	c := newExpCmd("frontier", "Usage: shufflefl experiment frontier [flags]\n\n"+experiment.FrontierHelp, frontierExamples, stdout, stderr)
	fs := c.fs
	var o experiment.FrontierOptions
	c.engineFlags(&o.Dataset, &o.DataDir, &o.Seed, &o.Workers, "out/experiment-frontier-DATASET")
	protos := fs.String("protocols", strings.Join(experiment.FrontierProtocols(), ","), "comma-separated private `protocols` to draw")
	targets := fs.String("targets", "8,2,32", "comma-separated target cumulative central `epsilons` (each > 0), in the order the runs are made (every protocol at the first target, then at the next)")
	fs.Float64Var(&o.Delta, "delta", 1e-6, "target central delta of each whole run, in (0, 1)")
	fs.IntVar(&o.Clients, "clients", 0, "clients N of every run (0: each protocol's default)")
	fs.IntVar(&o.Rounds, "rounds", 0, "rounds of every run (0: each protocol's default)")
	fs.IntVar(&o.LocalEpochs, "local-epochs", 0, "local epochs of every run (0: each protocol's default)")
	fs.Float64Var(&o.Clip, "clip", 0, "clipping bound C of every run (0: each protocol's default)")
	fs.BoolVar(&o.Ceiling, "ceiling", true, "also run non-private FedAvg (with its defaults) as the ceiling")
	if done, code := c.parse(args[1:]); done {
		return code
	}
	var err error
	if o.Protocols, o.Targets, err = experiment.ParseFrontierLists(*protos, *targets); err != nil {
		return c.fail(2, err)
	}
	if err := c.checkCommon(o.Dataset, "frontier"); err != nil {
		return c.fail(2, err)
	}
	o.Dir = c.out
	f, err := experiment.PlanFrontier(o, runIO{})
	if err != nil {
		return c.fail(2, err)
	}
	split, err := data.Load(o.Dataset, data.Options{DataDir: o.DataDir, Seed: o.Seed})
	if err != nil {
		return c.fail(2, err)
	}
	return c.run(args[1:], func(out experiment.Output) (string, error) { return f.Run(split, out) })
}
