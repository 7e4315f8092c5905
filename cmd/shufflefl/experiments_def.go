package main

import (
	"math"

	"shufflefl/protocol"
	"shufflefl/runtime"
)

// The experiments reproduce the comparisons of the papers with the settings
// they state; where a paper does not state a setting (clip bound, learning
// rate, number of rounds) the choice is named here and in docs/RESULTS.md.

func init() {
	// FLAME (Liu et al. AAAI 2021), Evaluations: logistic regression,
	// d = 7,850, n = 1,000 users, eps_l = 78.5, delta_c = 0.01/n^1.1, the
	// Laplace randomizer for SS-*, k = d/50 (beta = 1/50, the reading that
	// gives the paper's nu = 3.125, l = 16), n/n_p = 3 for SS-Double.
	flameBase := func(c *runtime.Config) {
		c.Model = "logreg"
		c.Clients = 1000
		c.ClientsPerRound = 0
		c.LocalEpochs = 1
		c.Batch = 10
		c.LR = 0.1
		c.Clip = 0.05
		c.Epsilon = 78.5
		c.Delta = 0.01 / math.Pow(1000, 1.1)
		c.Rounds = 10
	}
	// dpMatching makes dp-central spend, over the whole run, the cumulative
	// central epsilon that protocol name states after the same rounds.
	dpMatching := func(name string, opts map[string]float64) func(c *runtime.Config) {
		return func(c *runtime.Config) {
			eps := c.Epsilon
			p, err := protocol.New(name, protocol.Params{Clip: c.Clip, Delta: c.Delta, Epsilon: c.Epsilon, Rounds: c.Rounds, SampleRate: 1, Extra: opts})
			if err == nil {
				budgets := make([]protocol.Budget, c.Clients)
				for i := range budgets {
					budgets[i] = protocol.Budget{Epsilon: eps, Delta: c.Delta}
				}
				s := protocol.Shape{Round: c.Rounds, Dim: 7850, Population: c.Clients, Participants: c.Clients}
				if priv, err := p.Account(s, budgets); err == nil && !math.IsInf(priv.CumulativeEpsilon, 0) {
					eps = priv.CumulativeEpsilon
				}
			}
			c.Protocol = "dp-central"
			c.Epsilon = eps
			c.Clip = 1 // L2 clip of the whole update
		}
	}
	laplace := map[string]float64{"randomizer": 1}
	double := map[string]float64{"randomizer": 1, "k": 157, "np": 333}
	topk := map[string]float64{"randomizer": 1, "k": 157}
	registerExperiment(experiment{
		name:    "flame",
		summary: "FLAME (AAAI 2021): NP-FL, DP-FL, LDP-FL, SS-Simple, SS-Double, SS-Topk; logistic regression, n = 1,000, eps_l = 78.5",
		base:    flameBase,
		tables: []expTable{{
			title: "FLAME protocols at eps_l = 78.5, n = 1,000, d = 7,850",
			runs: []expRun{
				{"NP-FL", func(c *runtime.Config) { c.Protocol = "nonprivate" }},
				{"DP-FL (= SS-Double's cumulative eps)", dpMatching("ss-double", double)},
				{"LDP-FL (Laplace)", func(c *runtime.Config) { c.Protocol = "ldp-laplace" }},
				{"SS-Simple", func(c *runtime.Config) { c.Protocol = "ss-simple"; c.Options = laplace }},
				{"SS-Double", func(c *runtime.Config) { c.Protocol = "ss-double"; c.Options = double }},
				{"SS-Topk", func(c *runtime.Config) { c.Protocol = "ss-topk"; c.Options = topk }},
			},
		}},
	})
}
