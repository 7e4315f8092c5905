package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"shufflefl/amplify"
	"shufflefl/audit"
	"shufflefl/checks"
	"shufflefl/protocol"
	"shufflefl/runtime"
)

func init() { auditCommands["accountant"] = runAuditAccountant }

// exitViolation is the exit status of `audit accountant` when a statement
// is below a lower bound.
const exitViolation = 3

const auditAccountantUsage = `Usage: shufflefl audit accountant --run DIR [flags]

Recomputes a finished run's privacy statements against independent LOWER
bounds: exact figures for neighbouring pairs the statement covers, computed
without the run's accountant. DIR is the --out directory of a shufflefl run
(config.yaml, metrics.jsonl, summary.json). The cumulative statement after
the first and after the last round is checked:

  ldp-laplace, pldp, ldp-min   optimal composition (Kairouz et al.;
                               Murtagh-Vadhan, exact) of the d·t
                               per-coordinate eps_c-DP releases
  apes, unis, ss-simple        shuffled binary randomized response of one
                               coordinate (exact), and the count of ones
                               over all d·t shuffled releases
  ss-simple, ss-double,        the count of values above an optimised
  ss-topk                      threshold over every value of the t rounds,
                               with the run's randomizer (FLAME)

The other protocols (Gaussian noise, d-privacy, no claim, S-APES) and runs
with client sampling or sit-outs are reported as not checked, with the
reason.

Exit status: 0 every statement is at or above its lower bounds (or none
could be checked), 3 some statement is below a lower bound (one line per
violation on stderr), 1 internal failure, 2 bad arguments or an unreadable
run directory.

Examples:
  shufflefl run --protocol ss-double --epsilon 1 --option k=1 --option randomizer=1 --clients 1000 --rounds 1 --delta 1e-6 --out out/ssd
  shufflefl audit accountant --run out/ssd
`

// accountantAuditReport is the report of `audit accountant`.
type accountantAuditReport struct {
	Command    string                  `json:"command"`
	Run        string                  `json:"run"`
	Protocol   string                  `json:"protocol"`
	Dim        int                     `json:"dim"`
	Clients    int                     `json:"clients"`
	Rounds     int                     `json:"rounds"`
	Checks     []audit.AccountantCheck `json:"checks"`
	NotChecked string                  `json:"not_checked,omitempty"`
	Violations int                     `json:"violations"`
}

// runSummary is the part of summary.json the audit reads.
type runSummary struct {
	Dim               int      `json:"dim"`
	Clients           int      `json:"clients"`
	CumulativeEpsilon *float64 `json:"cumulative_epsilon"`
	CumulativeDelta   float64  `json:"cumulative_delta"`
}

func runAuditAccountant(args []string, stdout, stderr io.Writer) int {
	c := newAuditCmd("accountant", auditAccountantUsage, stdout, stderr)
	dir := c.fs.String("run", "", "the --out directory of a finished shufflefl run")
	if code, ok := c.parse(args); !ok {
		return code
	}
	if *dir == "" {
		return c.fail(errMissing("--run"))
	}
	facts, err := readRunFacts(*dir)
	if err != nil {
		return c.fail(err)
	}
	cs, why, err := audit.CheckAccountant(facts)
	if err != nil {
		return c.fail(err)
	}
	rep := accountantAuditReport{Command: commandLine("accountant", args), Run: *dir, Protocol: facts.Protocol, Dim: facts.Dim,
		Clients: facts.Clients, Rounds: len(facts.Rounds), Checks: cs, NotChecked: why}
	for _, ch := range cs {
		if ch.Violation {
			rep.Violations++
		}
	}
	if code := c.emit(accountantMarkdown(rep), rep, nil); code != 0 {
		return code
	}
	for _, ch := range cs {
		if ch.Error != "" {
			c.warn("after round %d: %s not computed: %s", ch.Round, ch.Bound, ch.Error)
		}
	}
	if rep.Violations == 0 {
		return 0
	}
	for _, ch := range cs {
		if ch.Violation {
			fmt.Fprintf(stderr, "shufflefl audit accountant: VIOLATION: after round %d the run states epsilon %.6g at delta %.3g, below the lower bound %.6g (%s)\n",
				ch.Round, ch.Claimed, ch.Delta, ch.Lower, ch.Bound)
		}
	}
	return exitViolation
}

// readRunFacts reads a run directory into the facts the lower bounds need.
func readRunFacts(dir string) (audit.RunFacts, error) {
	var f audit.RunFacts
	cfg := runtime.DefaultConfig()
	extras, _, err := loadConfigFile(filepath.Join(dir, "config.yaml"), &cfg)
	if err != nil {
		return f, fmt.Errorf("run %s: %w", dir, err)
	}
	if len(extras.options) > 0 {
		if cfg.Options, err = runtime.ParseOptions(extras.options); err != nil {
			return f, fmt.Errorf("run %s: %w", dir, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return f, checks.Invalidf("run %s: %v (only a finished run can be audited)", dir, err)
	}
	var sum runSummary
	if err := json.Unmarshal(b, &sum); err != nil {
		return f, checks.Invalidf("run %s: summary.json: %v", dir, err)
	}
	recs, err := readRecords(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		return f, checks.Invalidf("run %s: %v", dir, err)
	}
	if len(recs) == 0 {
		return f, checks.Invalidf("run %s: metrics.jsonl has no rounds", dir)
	}
	if sum.Dim < 1 || sum.Clients < 1 {
		return f, checks.Invalidf("run %s: summary.json states dimension %d and %d clients", dir, sum.Dim, sum.Clients)
	}
	f = audit.RunFacts{Protocol: cfg.Protocol, Dim: sum.Dim, Clients: sum.Clients,
		Sampled: cfg.ClientsPerRound > 0 && cfg.ClientsPerRound < cfg.Clients}
	if f.Randomizer, err = flameRandomizer(cfg); err != nil {
		return f, fmt.Errorf("run %s: %w", dir, err)
	}
	for i, r := range recs {
		rr := audit.RunRound{Round: r.Round, Participants: r.Participants, Claimed: math.NaN(), Delta: r.CumulativeDelta,
			Approximate: r.CumulativeApproximate || r.Approximate,
			LocalEps:    deref(r.LocalEpsilonMax), LocalEpsMin: deref(r.LocalEpsilonMin), LocalCoordEps: deref(r.LocalCoordEpsilonMax)}
		if r.CumulativeEpsilon != nil {
			rr.Claimed = *r.CumulativeEpsilon
		}
		if i == len(recs)-1 && sum.CumulativeEpsilon != nil && sum.CumulativeDelta == rr.Delta {
			// The summary's final statement is what a reader quotes:
			// check the smaller of the two if they differ.
			rr.Claimed = math.Min(rr.Claimed, *sum.CumulativeEpsilon)
		}
		if err := sparsePlan(cfg, f.Dim, &rr); err != nil {
			return f, fmt.Errorf("run %s: round %d: %w", dir, r.Round, err)
		}
		f.Rounds = append(f.Rounds, rr)
	}
	return f, nil
}

// deref returns *p, or NaN for nil (a figure the run did not state).
func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// flameRandomizer returns a FLAME run's local randomizer from its options
// (nil for the other protocols): randomizer=1 is Laplace on [0, 1], 0 (the
// default) R_{gamma,b} with option levels b (default from the protocol's
// documentation).
func flameRandomizer(cfg runtime.Config) (*amplify.Randomizer, error) {
	switch cfg.Protocol {
	case "ss-simple", "ss-double", "ss-topk":
	default:
		return nil, nil
	}
	if cfg.Options["randomizer"] == 1 {
		return &amplify.Randomizer{Mech: amplify.Laplace}, nil
	}
	levels, ok := cfg.Options["levels"]
	if !ok {
		info, err := protocol.Describe(cfg.Protocol)
		if err != nil {
			return nil, err
		}
		for _, o := range info.Options {
			if o.Name == "levels" {
				v, err := strconv.Atoi(strings.Fields(o.Default)[0])
				if err != nil {
					return nil, fmt.Errorf("the default of option levels (%q): %w", o.Default, err)
				}
				levels = float64(v)
			}
		}
	}
	if levels < 2 {
		return nil, checks.Invalidf("option levels of %s: %v, want >= 2", cfg.Protocol, levels)
	}
	return &amplify.Randomizer{Mech: amplify.RGammaB, K: int(levels)}, nil
}

// sparsePlan fills in a sparse FLAME round's k and n_p as the run's
// protocol resolves them for the round's shape (options or defaults).
func sparsePlan(cfg runtime.Config, dim int, r *audit.RunRound) error {
	if cfg.Protocol != "ss-double" && cfg.Protocol != "ss-topk" {
		return nil
	}
	p, err := protocol.New(cfg.Protocol, protocol.Params{Clip: cfg.Clip, Delta: cfg.Delta, Epsilon: r.LocalEps, Rounds: cfg.Rounds,
		SampleRate: 1, Extra: cfg.Options})
	if err != nil {
		return err
	}
	s := protocol.Shape{Round: r.Round, Dim: dim, Population: cfg.Clients, Participants: r.Participants}
	switch p := p.(type) {
	case protocol.SSDouble:
		r.K, r.NP, err = p.Plan(s)
	case protocol.SSTopk:
		r.K, r.NP, _, _, err = p.Plan(s)
	default:
		err = fmt.Errorf("protocol %s is not a sparse FLAME protocol", cfg.Protocol)
	}
	return err
}

func accountantMarkdown(rep accountantAuditReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Accountant audit\n\n`%s`\n\nRun `%s`: %s, d = %d, %d clients, %d rounds.\n\n", rep.Command, rep.Run, rep.Protocol, rep.Dim, rep.Clients, rep.Rounds)
	if rep.NotChecked != "" {
		fmt.Fprintf(&b, "Not checked: %s.\n", rep.NotChecked)
		return b.String()
	}
	if len(rep.Checks) == 0 {
		b.WriteString("No statement to check (every cumulative figure is absent or labelled approximate).\n")
		return b.String()
	}
	b.WriteString("| after round | stated epsilon | delta | lower bound | bound | verdict |\n|---|---|---|---|---|---|\n")
	for _, ch := range rep.Checks {
		lower, verdict := fmt.Sprintf("%.6g", ch.Lower), verdictCell(ch.Violation)
		if ch.Error != "" {
			lower, verdict = "-", "not computed: "+ch.Error
		}
		fmt.Fprintf(&b, "| %d | %.6g | %.3g | %s | %s | %s |\n", ch.Round, ch.Claimed, ch.Delta, lower, ch.Bound, verdict)
	}
	fmt.Fprintf(&b, "\n%d of %d statements below a lower bound. Each bound is exact (rounded down) for a neighbouring pair the statement covers.\n",
		rep.Violations, len(rep.Checks))
	return b.String()
}
