package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"shufflefl/audit"
	"shufflefl/checks"
	"shufflefl/data"
	"shufflefl/protocol"
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

type protocolAuditReport struct {
	Command string                 `json:"command"`
	Results []audit.ProtocolResult `json:"results"`
	Skipped map[string]string      `json:"skipped,omitempty"`
	// Tight holds the tight game's results (--protocol all), each at
	// TightConfidence.
	Tight           []audit.ProtocolResult `json:"tight,omitempty"`
	TightSkipped    map[string]string      `json:"tight_skipped,omitempty"`
	TightConfidence float64                `json:"tight_confidence,omitempty"`
}

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
	if *tightTrials < 0 {
		return c.fail(checks.Invalidf("--tight-trials must be >= 0, got %d", *tightTrials))
	}
	extra, err := runtime.ParseOptions(opts)
	if err != nil {
		return c.fail(err)
	}
	names := []string{*name}
	if *name == "all" {
		names = nil
		for _, n := range protocol.Names() {
			if n != "nonprivate" {
				names = append(names, n)
			}
		}
	}
	ctx, stop := c.context()
	defer stop()
	var split data.Split
	if *engine {
		if split, err = data.Load(*dataset, data.Options{Seed: c.common.seed}); err != nil {
			return c.fail(err)
		}
	}
	rep := protocolAuditReport{Command: commandLine("protocol", args), Skipped: map[string]string{}}
	params := func(n string) protocol.Params {
		p := protocol.Params{Clip: *clip, Delta: *delta, Epsilon: *eps, Rounds: 1, SampleRate: 1, Extra: extra}
		if audit.AddRemove(n) {
			p.Epsilon = *target
		}
		if n == "split-mix" && len(extra) == 0 {
			// The split-and-mix theorem needs at least 19 honest slots;
			// the fast path (one noisy value per coordinate) releases the
			// same sum bit for bit, far faster per trial.
			p.Extra = map[string]float64{"slots": 20, "fast": 1}
		}
		if n == "ldp-min" {
			p.Extra = map[string]float64{"min-epsilon": *eps}
		}
		return p
	}
	for _, n := range names {
		p := params(n)
		game := audit.GameConfig{Trials: *trials, Confidence: *conf, Seed: c.common.seed, Workers: c.common.workers, Progress: c.progress(n + " trials")}
		var res audit.ProtocolResult
		if *engine {
			if *mis != 1 {
				return c.fail(checks.Invalidf("--miscalibrate is not available with --engine (the engine's claim and noise come from the same budget)"))
			}
			cfg := runtime.DefaultConfig()
			cfg.Protocol, cfg.Dataset, cfg.Model, cfg.Clients, cfg.SamplesPerClient, cfg.LocalEpochs = n, *dataset, *model, *clients, *spc, 1
			cfg.Clip, cfg.Delta, cfg.Epsilon, cfg.Seed, cfg.Options = *clip, *delta, *eps, c.common.seed, extra
			if audit.AddRemove(n) {
				cfg.TargetEpsilon = *target
			}
			if n == "ldp-min" {
				cfg.Options = map[string]float64{"min-epsilon": *eps}
			}
			res, err = audit.EngineGame(ctx, cfg, split, game)
		} else {
			res, err = audit.ProtocolGame(ctx, audit.ProtocolConfig{Protocol: n, Params: p, Epsilon: *eps, Dim: *dim, Clients: *clients,
				Miscalibrate: *mis, Game: game})
		}
		if err != nil {
			if len(names) > 1 {
				rep.Skipped[n] = oneLine(err)
				c.warn("%s skipped: %s", n, oneLine(err))
				continue
			}
			return c.fail(err)
		}
		rep.Results = append(rep.Results, res)
	}
	if *name == "all" && !*engine && *tightTrials > 0 {
		// The tight game, at the joint (Bonferroni) confidence over the
		// protocols it is played for.
		rep.TightSkipped = map[string]string{}
		rep.TightConfidence = 1 - (1-*conf)/float64(len(names))
		for _, n := range names {
			game := audit.GameConfig{Trials: *tightTrials, Confidence: rep.TightConfidence, Seed: c.common.seed,
				Workers: c.common.workers, Progress: c.progress(n + " tight-game trials")}
			res, err := audit.ProtocolGame(ctx, audit.ProtocolConfig{Protocol: n, Params: params(n), Epsilon: *eps,
				Dim: audit.TightDim, Clients: audit.TightClients, Miscalibrate: *mis, Game: game})
			if err != nil {
				if errors.Is(err, context.Canceled) {
					return c.fail(err)
				}
				rep.TightSkipped[n] = oneLine(err)
				continue
			}
			rep.Tight = append(rep.Tight, res)
		}
	}
	return c.emit(protocolMarkdown(rep), rep, nil)
}

func protocolMarkdown(rep protocolAuditReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Protocol audit (one round)\n\n`%s`\n\n", rep.Command)
	protocolTable(&b, rep.Results)
	for _, n := range slices.Sorted(maps.Keys(rep.Skipped)) {
		fmt.Fprintf(&b, "\n- %s skipped: %s\n", n, rep.Skipped[n])
	}
	if rep.Tight != nil || len(rep.TightSkipped) > 0 {
		fmt.Fprintf(&b, "\n## Tight game (n = %d, d = %d)\n\nBounds at the joint confidence %.4g (Bonferroni over %d protocols).\n\n",
			audit.TightClients, audit.TightDim, rep.TightConfidence, len(rep.Tight)+len(rep.TightSkipped))
		protocolTable(&b, rep.Tight)
		for _, n := range slices.Sorted(maps.Keys(rep.TightSkipped)) {
			fmt.Fprintf(&b, "\n- %s skipped: %s\n", n, rep.TightSkipped[n])
		}
	}
	seen := map[string]bool{}
	for _, r := range rep.Results {
		if !seen[r.Observable] {
			seen[r.Observable] = true
			fmt.Fprintf(&b, "\nObservable (%s): %s.", r.Protocol, r.Observable)
		}
	}
	b.WriteString("\nBounds: Clopper-Pearson at 95% (the tight game: at its joint confidence); each claim's accounting is in audit.json (bound).\n")
	return b.String()
}

// protocolTable writes one table of protocol games.
func protocolTable(b *strings.Builder, results []audit.ProtocolResult) {
	b.WriteString("| protocol | shuffle | d | n | local eps | eps_claimed (central) | delta | noise too small by | trials/world | TP/eval | FP/eval | eps_lower | verdict |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		verdict := verdictCell(r.Violation)
		local := "none"
		if r.LocalEps != nil {
			local = fmt.Sprintf("%.4g", *r.LocalEps)
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %s | %.4g | %.3g | %.3g | %d | %d/%d | %d/%d | %.3f | %s |\n",
			r.Protocol, r.Mode, r.Dim, r.Clients, local, r.EpsClaimed, r.Delta, r.Miscalibrate, r.Trials, r.TP, r.Eval, r.FP, r.Eval, r.EpsLower, verdict)
	}
}
