package experiment

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/ifca/ifcaref"
	"github.com/shufflefl/shufflefl/learning/ifca/regress"
)

// Section 5.1 of the group-privacy paper.
var synthThetaStar = [][]float64{{5, 6}, {4, -4.5}}

const (
	synthUsers, synthSamples = 100, 10
	synthU, synthE           = 7, 1
	synthStep, synthBatch    = 0.1, 10
	synthPatience            = 6
	synthNu                  = 5.0
	synthPaperMaxLeakage     = 2.4 // "the maximum composed value of the privacy leakage was 2.4"
)

type synthVariant struct {
	name, label string
	k           int
	nu          float64
	patience    int
	fig         string // the paper's panels
}

var synthVariants = []synthVariant{
	{"sanitized", "2 hypotheses, sanitized (ν = 5)", 2, synthNu, synthPatience, "Fig. 1g-i"},
	{"unsanitized", "2 hypotheses, no sanitization", 2, 0, synthPatience, "Fig. 1d-f"},
	{"one-hypothesis", "1 hypothesis, no sanitization", 1, 0, synthPatience, "Fig. 1a-c"},
	{"sanitized-patience30", "2 hypotheses, sanitized (ν = 5), patience 30 (not in the paper)", 2, synthNu, 30, "-"},
	{"sanitized-nu1", "2 hypotheses, sanitized (ν = 1, leakage 2 per participation; not in the paper)", 2, 1, synthPatience, "-"},
}

// synthData returns seed's training, validation and test clients (100
// users x 10 samples each, independent draws of the same mixture), the
// training clients' latent groups and the initial hypotheses (N(0, 1) per
// coordinate, Section 5.1).
func synthData(seed uint64) (train, val, test []ifcaref.Client, groups []int, init [][]float64, err error) {
	sets := make([][]ifcaref.Client, 3)
	for i := range sets {
		ds, err := regress.SyntheticLinear(rng.Stream(seed, rng.LabelPartition, uint64(i)), synthThetaStar, synthUsers, synthSamples)
		if err != nil {
			return nil, nil, nil, nil, nil, err
		}
		cs, err := ds.Clients(regress.Linear{In: 2}, synthStep, synthBatch)
		if err != nil {
			return nil, nil, nil, nil, nil, err
		}
		sets[i] = asClients(cs)
		if i == 0 {
			groups = ds.Group
		}
	}
	r := rng.Stream(seed, rng.LabelInit)
	init = [][]float64{{r.NormFloat64(), r.NormFloat64()}, {r.NormFloat64(), r.NormFloat64()}}
	return sets[0], sets[1], sets[2], groups, init, nil
}

// hypothesisError is max over the optimal parameters of the distance to the
// nearest hypothesis: how far the run is from recovering every group.
func hypothesisError(hyps, stars [][]float64) float64 {
	var worst float64
	for _, s := range stars {
		best := math.Inf(1)
		for _, h := range hyps {
			best = min(best, math.Hypot(h[0]-s[0], h[1]-s[1]))
		}
		worst = max(worst, best)
	}
	return worst
}

// synthAgg collects one variant's runs over seeds.
type synthAgg struct {
	runs                                    []DPrivacyRun
	rounds, loss, test, herr, maxL, medianL []float64
	first                                   []ifcaref.Round // the first seed's rounds
}

func runSynthetic(o DPrivacyOptions, out Output) (Result, error) {
	aggs := make([]synthAgg, len(synthVariants))
	for vi, v := range synthVariants {
		for s := range o.Seeds {
			if err := synthRun(v, o, s, &aggs[vi], out); err != nil {
				return Result{}, err
			}
		}
	}
	if err := synthPlots(o, aggs, out.Dir); err != nil {
		return Result{}, err
	}
	md := synthMarkdown(o, aggs)
	if err := out.writeFile("results.md", md); err != nil {
		return Result{}, err
	}
	type results struct {
		Experiment string                  `json:"experiment"`
		Runs       []DPrivacyRun           `json:"runs"`
		FirstSeed  map[string][]dprivRound `json:"first_seed_rounds"`
	}
	res := results{Experiment: "dprivacy-synthetic", FirstSeed: map[string][]dprivRound{}}
	for vi, v := range synthVariants {
		res.Runs = append(res.Runs, aggs[vi].runs...)
		for _, r := range aggs[vi].first {
			res.FirstSeed[v.name] = append(res.FirstSeed[v.name], toRound(r))
		}
	}
	return Result{Markdown: md, Reference: res.Runs}, out.writeJSON("results.json", res)
}

// synthRun runs variant v with the s-th seed on the reference simulation.
func synthRun(v synthVariant, o DPrivacyOptions, s int, a *synthAgg, out Output) error {
	seed := o.Seed + uint64(s)
	train, val, test, groups, init, err := synthData(seed)
	if err != nil {
		return err
	}
	cfg := ifcaref.Config{K: v.k, PerRound: synthU, MaxRounds: o.MaxRounds, ValidateEvery: 1, Patience: v.patience,
		Seed: seed, Workers: o.Workers, KeepVectors: s == 0,
		Client: ifcaref.ClientConfig{Epochs: synthE, Nu: v.nu}}
	start := time.Now()
	sum, err := ifcaref.Simulate(cfg, init[:v.k], train, val, groups, func(r ifcaref.Round) {
		if s == 0 {
			a.first = append(a.first, r)
		}
	})
	if err != nil {
		return fmt.Errorf("%s, seed %d: %w", v.name, seed, err)
	}
	run := summarize(v.name, v.k, v.nu, seed, sum, test, cfg.Client.Cost(2), time.Since(start).Seconds())
	a.runs = append(a.runs, run)
	a.rounds = append(a.rounds, float64(run.Rounds))
	a.loss = append(a.loss, run.BestValLoss)
	a.test = append(a.test, run.TestRMSE)
	a.herr = append(a.herr, hypothesisError(sum.Best, synthThetaStar))
	if run.MaxLeakage != nil {
		a.maxL = append(a.maxL, *run.MaxLeakage)
		a.medianL = append(a.medianL, *run.MedianLeakage)
	}
	out.logf("%s seed %d: %d rounds (best %d), validation RMSE %.3f, test RMSE %.3f, hypotheses %.2f, max leakage %s\n",
		v.name, seed, run.Rounds, run.BestRound, run.BestValLoss, run.TestRMSE, sum.Best, fmtEps(run.MaxLeakage))
	return nil
}

// synthPlots draws the first seed's Figures 1 and 2.
func synthPlots(o DPrivacyOptions, aggs []synthAgg, dir string) error {
	var valLines []line
	for vi, v := range synthVariants {
		rel, upd, traj, vl := synthSeries(aggs[vi].first, v.k)
		if v.nu == 0 {
			upd = nil // the releases are the updates
		}
		name := fmt.Sprintf("fig1-%s.png", v.name)
		title := fmt.Sprintf("§5.1 %s: k = %d, ν = %g, seed %d (%s)", v.name, v.k, v.nu, o.Seed, v.fig)
		if err := plotReleases(filepath.Join(dir, name), title, rel, upd, traj, synthThetaStar, 25); err != nil {
			return err
		}
		valLines = append(valLines, line{v.name, vl})
	}
	if err := plotLines(filepath.Join(dir, "fig1-validation-loss.png"),
		fmt.Sprintf("§5.1 validation RMSE (Eq. 10), seed %d", o.Seed), "round", "validation RMSE (log scale)", valLines, true); err != nil {
		return err
	}
	var leakLines []line
	for g := range synthThetaStar {
		var xy plotter.XYs
		for _, r := range aggs[0].first {
			if r.GroupMaxLeakage[g] > 0 || len(xy) > 0 {
				xy = append(xy, plotter.XY{X: float64(r.Round), Y: r.GroupMaxLeakage[g]})
			}
		}
		leakLines = append(leakLines, line{fmt.Sprintf("cluster %d (θ* = %v)", g+1, synthThetaStar[g]), xy})
	}
	return plotLines(filepath.Join(dir, "fig2-leakage.png"),
		fmt.Sprintf("§5.1 max leakage per cluster, ν = 5 (0.4 per participation), seed %d", o.Seed),
		"round", "max leakage (d-privacy, Theorem 1)", leakLines, false)
}

// synthSeries extracts from a run's rounds the released and true updated
// vectors, each hypothesis's trajectory and the validation loss.
func synthSeries(rounds []ifcaref.Round, k int) (rel, upd plotter.XYs, traj []plotter.XYs, vl plotter.XYs) {
	traj = make([]plotter.XYs, k)
	for _, r := range rounds {
		for i := range r.Releases {
			if r.Releases[i] != nil {
				rel = append(rel, plotter.XY{X: r.Releases[i][0], Y: r.Releases[i][1]})
			}
			if r.Updates[i] != nil {
				upd = append(upd, plotter.XY{X: r.Updates[i][0], Y: r.Updates[i][1]})
			}
		}
		for j, h := range r.Hypotheses {
			traj[j] = append(traj[j], plotter.XY{X: h[0], Y: h[1]})
		}
		if !math.IsNaN(r.ValLoss) {
			vl = append(vl, plotter.XY{X: float64(r.Round), Y: r.ValLoss})
		}
	}
	return rel, upd, traj, vl
}

// synthMarkdown is results.md of dprivacy-synthetic.
func synthMarkdown(o DPrivacyOptions, aggs []synthAgg) string {
	var md strings.Builder
	fmt.Fprintf(&md, "# Experiment `dprivacy-synthetic` (group-privacy paper, Section 5.1)\n\n")
	fmt.Fprintf(&md, "y = x^T θ* + u, u ~ U[0,1), x ~ N(0, I) (assumed; the paper does not say), θ*₁ = [5, 6], θ*₂ = [4, -4.5]; "+
		"%d training users (and as many validation and test users) x %d samples, U = %d, E = %d, s = %g, B = %d, "+
		"initial hypotheses N(0, 1), SGD on the MSE, validation every round, stop after the patience's rounds without improvement. "+
		"Seeds %d..%d (mean ± sd over %d seeds). Run on the reference simulation ifca/ifcaref (a regression model, which the engine cannot train).\n\n",
		synthUsers, synthSamples, synthU, synthE, synthStep, synthBatch, o.Seed, o.Seed+uint64(o.Seeds)-1, o.Seeds)
	md.WriteString("| variant | paper | k | ν | leakage per participation (n/ν) | rounds | best validation RMSE | test RMSE | hypothesis error | max leakage (paper: 2.4) | median leakage |\n")
	md.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	ms := func(vs []float64, f string) string {
		if len(vs) == 0 {
			return "∞"
		}
		m, sd := meanSD(vs)
		return fmt.Sprintf(f+" ± "+f, m, sd)
	}
	for vi, v := range synthVariants {
		a := aggs[vi]
		per := "∞ (not sanitized)"
		if v.nu > 0 {
			per = fmt.Sprintf("%g", 2/v.nu)
		}
		fmt.Fprintf(&md, "| %s | %s | %d | %g | %s | %s | %s | %s | %s | %s | %s |\n", v.label, v.fig, v.k, v.nu, per,
			ms(a.rounds, "%.1f"), ms(a.loss, "%.3f"), ms(a.test, "%.3f"), ms(a.herr, "%.2f"), ms(a.maxL, "%.2f"), ms(a.medianL, "%.2f"))
	}
	md.WriteString("\nHypothesis error: max over θ*_g of the distance to the nearest learned hypothesis. " +
		"Leakage: composed d-privacy level (Theorem 1) with respect to the client's ||δ_c||-neighbourhood; ∞ without sanitization.\n\n")
	md.WriteString("![released vectors, sanitized](fig1-sanitized.png) ![unsanitized](fig1-unsanitized.png) ![one hypothesis](fig1-one-hypothesis.png)\n\n")
	md.WriteString("![validation loss](fig1-validation-loss.png) ![leakage per cluster](fig2-leakage.png)\n")
	return md.String()
}
