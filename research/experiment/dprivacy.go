package experiment

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/learning/ifca/ifcaref"
	"github.com/shufflefl/shufflefl/learning/ifca/regress"
)

// The group-privacy paper's experiments (Galli et al., seed 004; see
// docs/DPRIVACY.md). dprivacy-rotated runs on the engine;
// dprivacy-synthetic and dprivacy-regression train regression models,
// which the engine cannot, and run on the reference simulation
// ifca/ifcaref.

// DPrivacyExperiment describes one of the group-privacy experiments.
type DPrivacyExperiment struct {
	Name, Summary string
	// Seeds is the default number of seeds; Nus and Ks the default noise
	// multipliers and numbers of hypotheses ("" where the experiment fixes
	// them).
	Seeds   int
	Nus, Ks string
	run     func(o DPrivacyOptions, out Output) (Result, error)
}

var dprivacy = []DPrivacyExperiment{
	{Name: "dprivacy-regression", Seeds: 10, Nus: "0,0.1,1,2,3,5", Ks: "1,3,5,7", run: runRegression,
		Summary: "group-privacy paper §5.2 on a SYNTHETIC stand-in for the hospital-charge data (Figure 4, Table 3); reference simulation ifca/ifcaref (regression models)"},
	{Name: "dprivacy-rotated", Seeds: 3, Nus: "0,0.001,0.01,0.1,1,3,5,10,15", Ks: "1,2", run: runRotated,
		Summary: "group-privacy paper §5.3 (Table 4) on rotated Fashion-MNIST / MNIST-10k: ifca-dp through the engine, 1 vs several hypotheses across nu"},
	{Name: "dprivacy-synthetic", Seeds: 10, run: runSynthetic,
		Summary: "group-privacy paper §5.1: IFCA with d-private releases on 2-D linear data (Figures 1, 2); reference simulation ifca/ifcaref (a regression model)"},
}

// LookupDPrivacy returns the group-privacy experiment called name.
func LookupDPrivacy(name string) (DPrivacyExperiment, bool) {
	i := slices.IndexFunc(dprivacy, func(e DPrivacyExperiment) bool { return e.Name == name })
	if i < 0 {
		return DPrivacyExperiment{}, false
	}
	return dprivacy[i], true
}

// DPrivacyOptions are the settings of a group-privacy experiment.
type DPrivacyOptions struct {
	Seed      uint64 // seeds Seed..Seed+Seeds-1 are run
	Seeds     int
	Workers   int // results do not depend on it
	MaxRounds int // upper bound on the rounds of a reference run
	Nus       []float64
	Ks        []int
	Rotated   RotatedOptions // dprivacy-rotated only
}

// ParseGrid parses the comma-separated noise multipliers and numbers of
// hypotheses of the command line (--nus, --ks); "" is an empty list.
func ParseGrid(nus, ks string) ([]float64, []int, error) {
	var nu []float64
	var k []int
	for _, f := range strings.Split(nus, ",") {
		if f = strings.TrimSpace(f); f != "" {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return nil, nil, checks.Invalidf("--nus: %q is not a number", f)
			}
			nu = append(nu, v)
		}
	}
	for _, f := range strings.Split(ks, ",") {
		if ks == "" {
			break
		}
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, nil, checks.Invalidf("bad number of hypotheses %q (want an integer >= 1)", f)
		}
		k = append(k, v)
	}
	return nu, k, nil
}

// Check checks o for experiment e; errors wrap checks.ErrInvalid.
func (e DPrivacyExperiment) Check(o DPrivacyOptions) error {
	if o.Seeds < 1 || o.MaxRounds < 1 || o.Workers < 0 {
		return checks.Invalidf("--seeds and --max-rounds must be >= 1 and --workers >= 0")
	}
	for _, v := range o.Nus {
		if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return checks.Invalidf("--nus: bad noise multiplier %v (want a finite number >= 0)", v)
		}
	}
	for _, k := range o.Ks {
		if k < 1 {
			return checks.Invalidf("bad number of hypotheses %d (want an integer >= 1)", k)
		}
		if k > regU && e.Name == "dprivacy-regression" {
			return checks.Invalidf("k = %d hypotheses is larger than the %d clients per round", k, regU)
		}
	}
	if e.Name == "dprivacy-rotated" {
		return o.Rotated.check(o.Ks)
	}
	return nil
}

// RunDPrivacy runs experiment e and writes its outputs (results.md,
// results.json, plots) into out.Dir.
func RunDPrivacy(e DPrivacyExperiment, o DPrivacyOptions, out Output) (Result, error) {
	if err := e.Check(o); err != nil {
		return Result{}, err
	}
	return e.run(o, out)
}

// DPrivacyRun is the JSON summary of one reference run.
type DPrivacyRun struct {
	Variant       string      `json:"variant"`
	K             int         `json:"k"`
	Nu            float64     `json:"nu"`
	Seed          uint64      `json:"seed"`
	Rounds        int         `json:"rounds"`
	Stopped       bool        `json:"stopped_early"`
	BestRound     int         `json:"best_round"`
	BestValLoss   float64     `json:"best_validation_loss"`
	TestRMSE      float64     `json:"test_rmse"`
	Hypotheses    [][]float64 `json:"best_hypotheses"`
	MaxLeakage    *float64    `json:"max_leakage"`    // null: unbounded (no sanitization)
	MedianLeakage *float64    `json:"median_leakage"` // null: unbounded
	PerRound      *float64    `json:"leakage_per_participation"`
	Seconds       float64     `json:"seconds"`
}

// dprivRound is the JSON record of one round (first seed only).
type dprivRound struct {
	Round           int         `json:"round"`
	ValLoss         *float64    `json:"validation_loss"`
	Hypotheses      [][]float64 `json:"hypotheses"`
	Released        int         `json:"released"`
	Declined        int         `json:"declined"`
	MaxLeakage      *float64    `json:"max_leakage"`
	MedianLeakage   *float64    `json:"median_leakage"`
	GroupMaxLeakage []*float64  `json:"group_max_leakage"`
	GroupMedian     []*float64  `json:"group_median_leakage"`
}

func toRound(r ifcaref.Round) dprivRound {
	d := dprivRound{Round: r.Round, ValLoss: finite(r.ValLoss), Hypotheses: r.Hypotheses, Released: r.Released,
		MaxLeakage: finite(r.MaxLeakage), MedianLeakage: finite(r.MedianLeakage)}
	for _, n := range r.Declined {
		d.Declined += n
	}
	for g := range r.GroupMaxLeakage {
		d.GroupMaxLeakage = append(d.GroupMaxLeakage, finite(r.GroupMaxLeakage[g]))
		d.GroupMedian = append(d.GroupMedian, finite(r.GroupMedianLeakage[g]))
	}
	return d
}

// summarize is the JSON summary of a reference run.
func summarize(variant string, k int, nu float64, seed uint64, sum ifcaref.Summary, test []ifcaref.Client, perRound, seconds float64) DPrivacyRun {
	return DPrivacyRun{Variant: variant, K: k, Nu: nu, Seed: seed, Rounds: sum.Rounds, Stopped: sum.Stopped,
		BestRound: sum.BestRound, BestValLoss: sum.BestLoss, TestRMSE: ifcaref.ValidationLoss(test, sum.Best),
		Hypotheses: sum.Best, MaxLeakage: finite(sum.MaxLeakage), MedianLeakage: finite(sum.MedianLeakage),
		PerRound: finite(perRound), Seconds: seconds}
}

func asClients(cs []*regress.Client) []ifcaref.Client {
	out := make([]ifcaref.Client, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}

// gridMeanSD returns, for a grid of nus × ks cells, the mean and standard
// deviation of each cell's values, indexed [ki][ni] as plotErrorBars takes
// them.
func gridMeanSD(nn, nk int, vals func(ni, ki int) []float64) (means, sds [][]float64) {
	means, sds = make([][]float64, nk), make([][]float64, nk)
	for ki := range nk {
		means[ki], sds[ki] = make([]float64, nn), make([]float64, nn)
		for ni := range nn {
			means[ki][ni], sds[ki][ni] = meanSD(vals(ni, ki))
		}
	}
	return means, sds
}

// kHeader writes the header of a ν × k table with extra columns.
func kHeader(md *strings.Builder, corner string, ks []int, extra ...string) {
	fmt.Fprintf(md, "| %s |", corner)
	for _, k := range ks {
		fmt.Fprintf(md, " %d |", k)
	}
	for _, x := range extra {
		fmt.Fprintf(md, " %s |", x)
	}
	md.WriteString("\n| --- |" + strings.Repeat(" --- |", len(ks)+len(extra)) + "\n")
}

// kNames names the curves of a plot over k.
func kNames(ks []int) []string {
	names := make([]string, len(ks))
	for ki, k := range ks {
		names[ki] = fmt.Sprintf("%d hypotheses", k)
		if k == 1 {
			names[ki] = "1 hypothesis"
		}
	}
	return names
}
