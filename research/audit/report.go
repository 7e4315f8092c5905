package audit

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shufflefl/shufflefl/research/bound"
)

// ProtocolReport is the report of `shufflefl audit protocol`.
type ProtocolReport struct {
	Command string            `json:"command"`
	Results []ProtocolResult  `json:"results"`
	Skipped map[string]string `json:"skipped,omitempty"`
	// Tight holds the tight game's results (--protocol all), each at
	// TightConfidence.
	Tight           []ProtocolResult  `json:"tight,omitempty"`
	TightSkipped    map[string]string `json:"tight_skipped,omitempty"`
	TightConfidence float64           `json:"tight_confidence,omitempty"`
}

// Markdown renders the report as markdown.
func (rep ProtocolReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Protocol audit (one round)\n\n`%s`\n\n", rep.Command)
	protocolTable(&b, rep.Results)
	for _, n := range slices.Sorted(maps.Keys(rep.Skipped)) {
		fmt.Fprintf(&b, "\n- %s skipped: %s\n", n, rep.Skipped[n])
	}
	if rep.Tight != nil || len(rep.TightSkipped) > 0 {
		fmt.Fprintf(&b, "\n## Tight game (n = %d, d = %d)\n\nBounds at the joint confidence %s (Bonferroni over %d protocols).\n\n",
			TightClients, TightDim, bound.Figure(rep.TightConfidence, 4), len(rep.Tight)+len(rep.TightSkipped))
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
func protocolTable(b *strings.Builder, results []ProtocolResult) {
	b.WriteString("| protocol | shuffle | d | n | local eps | eps_claimed (central) | delta | noise too small by | trials/world | TP/eval | FP/eval | eps_lower | verdict |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		verdict := verdictCell(r.Violation)
		local := "none"
		if r.LocalEps != nil {
			local = bound.Figure(*r.LocalEps, 4)
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %s | %s | %s | %s | %d | %d/%d | %d/%d | %.3f | %s |\n",
			r.Protocol, r.Mode, r.Dim, r.Clients, local, bound.Figure(r.EpsClaimed, 4), bound.Figure(r.Delta, 3), bound.Figure(r.Miscalibrate, 3), r.Trials, r.TP, r.Eval, r.FP, r.Eval, r.EpsLower, verdict)
	}
}

// MechanismReport is the JSON report of `audit mechanism`.
type MechanismReport struct {
	Command string       `json:"command"`
	Results []GameResult `json:"results"`
}

// Markdown renders the report as markdown.
func (rep MechanismReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Mechanism audit\n\n`%s`\n\n", rep.Command)
	b.WriteString("| mechanism | inputs | eps_claimed | delta | noise too small by | trials/input | test | TP/eval | FP/eval | TPR_lo | FPR_hi | eps_lower | verdict | seconds |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		verdict := verdictCell(r.Violation)
		op := ">="
		if strings.HasPrefix(r.Test, "score <") {
			op = "<"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | score %s %s | %d/%d | %d/%d | %.4f | %.4f | %.3f | %s | %.2f |\n",
			r.Name, r.Inputs, bound.Figure(r.EpsClaimed, 4), bound.Figure(r.Delta, 3), bound.Figure(r.Miscalibrate, 3), r.Trials, op, bound.Figure(r.Threshold, 4), r.TP, r.Eval, r.FP, r.Eval, r.TPRLo, r.FPRHi, r.EpsLower, verdict, r.Seconds)
	}
	if len(rep.Results) > 0 {
		fmt.Fprintf(&b, "\neps_lower = log((TPR_lo - delta)/FPR_hi) with Clopper-Pearson bounds at %.0f%% confidence; the test was chosen on a separate half of the trials.\n", 100*rep.Results[0].Confidence)
	}
	return b.String()
}

// CanaryReport is the report of `shufflefl audit canary`.
type CanaryReport struct {
	Command string         `json:"command"`
	Results []OneRunResult `json:"results"`
}

// Markdown renders the report as markdown.
func (rep CanaryReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# One-run canary audit\n\n`%s`\n\n", rep.Command)
	b.WriteString("| protocol | eps_claimed (run) | delta | canaries (in) | guesses | correct | eps_lower | verdict | cos in (mean±sd) | cos out (mean±sd) | Gaussian-fit estimate | test acc |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var warns []string
	for _, r := range rep.Results {
		claim := "none"
		if r.EpsClaimed != nil {
			claim = bound.Figure(*r.EpsClaimed, 4)
		}
		verdict := verdictCell(r.Violation)
		est := "unbounded"
		if r.EpsGaussian != nil {
			est = bound.Figure(*r.EpsGaussian, 3)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d (%d) | %d | %d | %.3f | %s | %.4f±%.4f | %.4f±%.4f | %s | %.3f |\n", r.Protocol, claim, bound.Figure(r.Delta, 3),
			r.Canaries, r.Included, r.Guesses, r.Correct, r.EpsLower, verdict, r.MeanIn, r.SDIn, r.MeanOut, r.SDOut, est, r.TestAcc)
		if r.Warning != "" {
			warns = append(warns, fmt.Sprintf("- %s: %s", r.Protocol, r.Warning))
		}
	}
	if len(warns) > 0 {
		b.WriteString("\nWarnings:\n" + strings.Join(warns, "\n") + "\n")
	}
	return b.String()
}

// InversionReport is the report of `shufflefl audit inversion`.
type InversionReport struct {
	Command string         `json:"command"`
	Model   string         `json:"model"`
	Dataset string         `json:"dataset"`
	Targets int            `json:"targets"`
	Rows    []InversionRow `json:"rows"`
}

// Markdown renders the report as markdown.
func (rep InversionReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Gradient inversion (%s on %s, %d targets)\n\n`%s`\n\n", rep.Model, rep.Dataset, rep.Targets, rep.Command)
	b.WriteString("| release | attacker sees | analytic MSE | PSNR dB | SSIM | DLG MSE | PSNR dB | SSIM | label acc |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Rows {
		if r.Skipped != "" {
			fmt.Fprintf(&b, "| %s | skipped: %s | | | | | | | |\n", r.Name, r.Skipped)
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.1f | %.3f | %s | %.1f | %.3f | %.2f |\n", r.Name, r.View,
			bound.Figure(r.Analytic.MSE, 4), r.Analytic.PSNR, r.Analytic.SSIM, bound.Figure(r.DLG.MSE, 4), r.DLG.PSNR, r.DLG.SSIM, r.LabelAcc)
	}
	b.WriteString("\nPSNR 999 means an exact reconstruction. Images: inversion-protocols.png and inversion-nu.png (row 1: truth; then one row per release in table order, skipped ones omitted; columns: analytic, then DLG).\n")
	return b.String()
}

// MIAReport is the report of `shufflefl audit mia`.
type MIAReport struct {
	Command string      `json:"command"`
	Model   string      `json:"model"`
	Dataset string      `json:"dataset"`
	Results []MIAResult `json:"results"`
}

// Markdown renders the report as markdown.
func (rep MIAReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Membership inference (%s on %s)\n\n`%s`\n\n", rep.Model, rep.Dataset, rep.Command)
	b.WriteString("| protocol | eps_claimed (run) | AUC bound | train acc | test acc | loss AUC | TPR@1% | TPR@0.1% | calibrated AUC | TPR@1% | TPR@0.1% | members/non |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		claim := "none"
		if r.EpsClaimed != nil {
			claim = bound.Figure(*r.EpsClaimed, 4)
		}
		fmt.Fprintf(&b, "| %s | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %d/%d |\n", r.Protocol, claim, r.AUCBound,
			r.TrainAcc, r.TestAcc, r.Loss.AUC, r.Loss.TPR1, r.Loss.TPR01, r.Calibrated.AUC, r.Calibrated.TPR1, r.Calibrated.TPR01, r.Loss.Pos, r.Loss.Neg)
	}
	return b.String()
}

// TopkReport is the report of `shufflefl audit topk`.
type TopkReport struct {
	Command string       `json:"command"`
	Results []TopkResult `json:"results"`
}

// Markdown renders the report as markdown.
func (rep TopkReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# What the SS-Topk shuffler learns\n\n`%s`\n\n", rep.Command)
	b.WriteString("| d | k | beta | l | nu | nu·beta (Def. 3) | 1/l | reports | uniform guess | 95% CI | popularity guess | 95% CI | popularity / (nu·beta) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "| %d | %d | %s | %d | %s | %s | %s | %d | %.4f | [%.4f, %.4f] | %.4f | [%.4f, %.4f] | %.2f |\n",
			r.Dim, r.K, bound.Figure(r.Beta, 4), r.L, bound.Figure(r.Nu, 4), bound.Figure(r.Bound, 4), bound.Figure(r.OneOverL, 4), r.Reports, r.Uniform.Rate, r.Uniform.Lo, r.Uniform.Hi,
			r.Popularity.Rate, r.Popularity.Lo, r.Popularity.Hi, r.Popularity.Rate/r.Bound)
	}
	b.WriteString("\nSuccess = fraction of guessed indexes that are true top-k. Definition 3 bounds the posterior relative to the prior beta; a shuffler whose prior is data-dependent (popularity) exceeds nu·beta in absolute terms.\n")
	return b.String()
}

// AccountantReport is the report of `audit accountant`.
type AccountantReport struct {
	Command    string            `json:"command"`
	Run        string            `json:"run"`
	Protocol   string            `json:"protocol"`
	Dim        int               `json:"dim"`
	Clients    int               `json:"clients"`
	Rounds     int               `json:"rounds"`
	Checks     []AccountantCheck `json:"checks"`
	NotChecked string            `json:"not_checked,omitempty"`
	Violations int               `json:"violations"`
}

// Markdown renders the report as markdown.
func (rep AccountantReport) Markdown() string {
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
		lower, verdict := bound.Figure(ch.Lower, 6), verdictCell(ch.Violation)
		if ch.Error != "" {
			lower, verdict = "-", "not computed: "+ch.Error
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s |\n", ch.Round, bound.Figure(ch.Claimed, 6), bound.Figure(ch.Delta, 3), lower, ch.Bound, verdict)
	}
	fmt.Fprintf(&b, "\n%d of %d statements below a lower bound. Each bound is exact (rounded down) for a neighbouring pair the statement covers.\n",
		rep.Violations, len(rep.Checks))
	return b.String()
}

// verdictCell is an audit table's verdict cell: whether the empirical lower
// bound refutes the claim.
func verdictCell(violation bool) string {
	if violation {
		return "**VIOLATION**"
	}
	return "consistent"
}

// oneLine is err's message on one line.
func oneLine(err error) string {
	return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
}
