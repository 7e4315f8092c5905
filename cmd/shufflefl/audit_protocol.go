package main

import (
	"fmt"
	"io"
	"strings"

	"shufflefl/audit"
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

Examples:
  shufflefl audit protocol --protocol ldp-laplace --epsilon 2 --trials 20000
  shufflefl audit protocol --protocol all --epsilon 2 --dim 2 --clients 10 --trials 20000 --out out/audit-protocols
  shufflefl audit protocol --protocol dp-central --target-epsilon 4 --miscalibrate 2 --trials 20000
`

type protocolAuditReport struct {
	Command string                 `json:"command"`
	Results []audit.ProtocolResult `json:"results"`
	Skipped map[string]string      `json:"skipped,omitempty"`
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
	conf := c.fs.Float64("confidence", 0.95, "confidence of the lower bound")
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
	rep := protocolAuditReport{Command: commandLine("protocol", args), Skipped: map[string]string{}}
	for _, n := range names {
		p := protocol.Params{Clip: *clip, Delta: *delta, Epsilon: *eps, Rounds: 1, SampleRate: 1, Extra: extra}
		if n == "dp-central" {
			p.Epsilon = *target
		}
		if n == "ldp-min" {
			p.Extra = map[string]float64{"min-epsilon": *eps}
		}
		res, err := audit.ProtocolGame(ctx, audit.ProtocolConfig{Protocol: n, Params: p, Epsilon: *eps, Dim: *dim, Clients: *clients,
			Miscalibrate: *mis, Game: audit.GameConfig{Trials: *trials, Confidence: *conf, Seed: c.common.seed,
				Workers: c.common.workers, Progress: c.progress(n + " trials")}})
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
	return c.emit(protocolMarkdown(rep), rep, nil)
}

func protocolMarkdown(rep protocolAuditReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Protocol audit (one round)\n\n`%s`\n\n", rep.Command)
	b.WriteString("| protocol | shuffle | d | n | local eps | eps_claimed (central) | delta | noise too small by | trials/world | TP/eval | FP/eval | eps_lower | verdict |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		verdict := "consistent"
		if r.Violation {
			verdict = "**VIOLATION**"
		}
		local := "none"
		if r.LocalEps != nil {
			local = fmt.Sprintf("%.4g", *r.LocalEps)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %.4g | %.3g | %.3g | %d | %d/%d | %d/%d | %.3f | %s |\n",
			r.Protocol, r.Mode, r.Dim, r.Clients, local, r.EpsClaimed, r.Delta, r.Miscalibrate, r.Trials, r.TP, r.Eval, r.FP, r.Eval, r.EpsLower, verdict)
	}
	for n, why := range rep.Skipped {
		fmt.Fprintf(&b, "\n- %s skipped: %s\n", n, why)
	}
	b.WriteString("\nObservable: the sum of the analyzer's estimate (LDP baselines: of the client's own report). Bounds: Clopper-Pearson at 95%; the claim's accounting is in audit.json (bound).\n")
	return b.String()
}
