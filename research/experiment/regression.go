package experiment

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/ifca/ifcaref"
	"github.com/shufflefl/shufflefl/learning/ifca/regress"
)

// Section 5.2 of the group-privacy paper, on a synthetic stand-in
// (regress.HospitalStandIn): the hospital-charge data are not available.
const (
	regClients         = 2947 // the paper's clients after preprocessing
	regTrainFrac       = 0.7  // 70/30 train/validation split
	regTrain           = 2062 // ⌊0.7·2947⌋ (the paper's Figure 3: 2062 clients)
	regU               = 100  // clients per round
	regValSample       = 200  // validation clients sampled per validation
	regPatience        = 30   // validations without improvement
	regNoise           = 0.1  // label noise of the stand-in
	regStep, regBatch  = 0.05, 4
	regE               = 1
	regInitSD          = 1.0
	regFeatures        = 3
	regHidden          = 2
	regParams          = 11
	regPaperTableNotes = "Table 3 of the paper (median, max; averaged over 10 seeds, real hospital data)"
)

// regPaperTable3 is the paper's Table 3: median and max composed leakage
// for (ν, k), k in {7, 5, 3, 1}.
var regPaperTable3 = map[float64]map[int][2]float64{
	0.1: {7: {517.0, 1551.0}, 5: {418.0, 1342.0}, 3: {473.0, 1386.0}, 1: {528.0, 1540.0}},
	1:   {7: {36.3, 126.5}, 5: {40.7, 127.6}, 3: {44.0, 138.6}, 1: {49.5, 147.4}},
	2:   {7: {15.4, 57.8}, 5: {14.3, 54.5}, 3: {22.0, 69.3}, 1: {21.5, 66.6}},
	3:   {7: {7.7, 32.3}, 5: {8.4, 36.7}, 3: {12.5, 40.0}, 1: {12.1, 40.0}},
	5:   {7: {5.7, 21.3}, 5: {5.9, 22.0}, 3: {5.5, 21.6}, 1: {5.3, 20.9}},
}

// regData returns seed's training and validation clients of the stand-in
// and the training clients' latent groups.
func regData(seed uint64) (train, val []ifcaref.Client, groups []int, err error) {
	ds, err := regress.HospitalStandIn(rng.Stream(seed, rng.LabelPartition), regClients, regNoise)
	if err != nil {
		return nil, nil, nil, err
	}
	cs, err := ds.Clients(regress.ReLUNet{In: regFeatures, Hidden: regHidden}, regStep, regBatch)
	if err != nil {
		return nil, nil, nil, err
	}
	// Random 70/30 split of the clients.
	perm := rng.Stream(seed, rng.LabelPartition, 1).Perm(len(cs))
	nTrain := int(regTrainFrac * float64(len(cs)))
	for i, p := range perm {
		if i < nTrain {
			train = append(train, cs[p])
			groups = append(groups, ds.Group[p])
		} else {
			val = append(val, cs[p])
		}
	}
	return train, val, groups, nil
}

// regCell collects one (ν, k) setting's runs over seeds.
type regCell struct {
	rmse, median, max, rounds []float64
}

func runRegression(o DPrivacyOptions, out Output) (Result, error) {
	cells := make([][]regCell, len(o.Nus))
	var runs []DPrivacyRun
	var fig3 []float64 // Figure 3's configuration: ν = 3, k = 5, seed 3
	for ni, nu := range o.Nus {
		cells[ni] = make([]regCell, len(o.Ks))
		for ki, k := range o.Ks {
			for s := range o.Seeds {
				run, leaks, err := regRun(o, nu, k, o.Seed+uint64(s), out)
				if err != nil {
					return Result{}, err
				}
				runs = append(runs, run)
				if nu == 3 && k == 5 && run.Seed == 3 {
					fig3 = leaks
				}
				c := &cells[ni][ki]
				c.rmse = append(c.rmse, run.TestRMSE)
				c.rounds = append(c.rounds, float64(run.Rounds))
				if run.MaxLeakage != nil {
					c.max = append(c.max, *run.MaxLeakage)
					c.median = append(c.median, *run.MedianLeakage)
				}
			}
		}
	}
	md, err := regOutputs(o, cells, fig3, out.Dir)
	if err != nil {
		return Result{}, err
	}
	if err := out.writeFile("results.md", md); err != nil {
		return Result{}, err
	}
	return Result{Markdown: md, Reference: runs}, out.writeJSON("results.json", struct {
		Experiment string        `json:"experiment"`
		StandIn    bool          `json:"synthetic_stand_in"`
		Runs       []DPrivacyRun `json:"runs"`
	}{"dprivacy-regression", true, runs})
}

// regRun runs one (ν, k, seed) on the reference simulation and returns its
// summary and every training client's composed leakage.
func regRun(o DPrivacyOptions, nu float64, k int, seed uint64, out Output) (DPrivacyRun, []float64, error) {
	train, val, groups, err := regData(seed)
	if err != nil {
		return DPrivacyRun{}, nil, err
	}
	r := rng.Stream(seed, rng.LabelInit, uint64(k))
	init := make([][]float64, k)
	for j := range init {
		init[j] = make([]float64, regParams)
		for t := range init[j] {
			init[j][t] = regInitSD * r.NormFloat64()
		}
	}
	cfg := ifcaref.Config{K: k, PerRound: regU, MaxRounds: o.MaxRounds, ValidateEvery: 1, Patience: regPatience,
		ValSample: regValSample, Seed: seed, Workers: o.Workers, Client: ifcaref.ClientConfig{Epochs: regE, Nu: nu}}
	start := time.Now()
	sum, err := ifcaref.Simulate(cfg, init, train, val, groups, nil)
	if err != nil {
		return DPrivacyRun{}, nil, fmt.Errorf("ν = %g, k = %d, seed %d: %w", nu, k, seed, err)
	}
	run := summarize(fmt.Sprintf("nu=%g/k=%d", nu, k), k, nu, seed, sum, val, cfg.Client.Cost(regParams), time.Since(start).Seconds())
	var leaks []float64
	for c := range sum.Ledger.Clients() {
		leaks = append(leaks, sum.Ledger.Spent(c))
	}
	out.logf("ν = %g, k = %d, seed %d: %d rounds, validation RMSE %.4f, leakage median %s max %s (%.2fs)\n",
		nu, k, seed, run.Rounds, run.TestRMSE, fmtEps(run.MedianLeakage), fmtEps(run.MaxLeakage), run.Seconds)
	return run, leaks, nil
}

// regOutputs draws the plots of dprivacy-regression and returns its
// results.md.
func regOutputs(o DPrivacyOptions, cells [][]regCell, fig3 []float64, dir string) (string, error) {
	nus, ks := o.Nus, o.Ks
	var md strings.Builder
	md.WriteString("# Experiment `dprivacy-regression` (group-privacy paper, Section 5.2) — SYNTHETIC STAND-IN\n\n")
	fmt.Fprintf(&md, "**The hospital-charge data are not available: this is a synthetic stand-in with the same shape** "+
		"(regress.HospitalStandIn): %d clients split %.0f/%.0f into %d training and %d validation clients, 3 inputs "+
		"(service index, longitude, latitude, all in [0, 1]), a 2-layer ReLU network with %d parameters, %d latent groups "+
		"(teacher networks), label noise N(0, %g²). U = %d clients per round, E = %d, s = %g, B = %d (SGD on the MSE), "+
		"validation on %d sampled validation clients every round, stop after %d validations without improvement, "+
		"at most %d rounds; seeds %d..%d. RMSE: mean over all validation clients of the RMSE (Eq. 10) of the hypothesis "+
		"each picks, at the best validation round. Its numbers are NOT comparable to the paper's Figure 4 (different data); "+
		"the leakage follows the same rule (11/ν per participation) and depends on the data only through the number of rounds. "+
		"Run on the reference simulation ifca/ifcaref (a regression model, which the engine cannot train).\n\n",
		regClients, 100*regTrainFrac, 100*(1-regTrainFrac), regTrain, regClients-regTrain,
		regParams, len(regress.StandInTeachers), regNoise, regU, regE, regStep, regBatch, regValSample, regPatience, o.MaxRounds,
		o.Seed, o.Seed+uint64(o.Seeds)-1)
	md.WriteString("## RMSE (like Figure 4), mean ± sd over seeds\n\n")
	kHeader(&md, "ν \\ k", ks)
	means, sds := gridMeanSD(len(nus), len(ks), func(ni, ki int) []float64 { return cells[ni][ki].rmse })
	for ni, nu := range nus {
		fmt.Fprintf(&md, "| %g |", nu)
		for ki := range ks {
			rm, _ := meanSD(cells[ni][ki].rounds)
			fmt.Fprintf(&md, " %.4f ± %.4f (%.0f rounds) |", means[ki][ni], sds[ki][ni], rm)
		}
		md.WriteString("\n")
	}
	md.WriteString("\n## Leakage (like Table 3): median, max over the training clients, averaged over seeds; paper's values in brackets\n\n")
	kHeader(&md, "ν \\ k", ks)
	for ni, nu := range nus {
		fmt.Fprintf(&md, "| %g |", nu)
		for ki, k := range ks {
			md.WriteString(regLeakCell(cells[ni][ki], nu, k))
		}
		md.WriteString("\n")
	}
	fmt.Fprintf(&md, "\nBrackets: %s. ν = 0 means no sanitization and unbounded leakage.\n\n![RMSE](rmse.png)\n", regPaperTableNotes)
	if err := plotErrorBars(filepath.Join(dir, "rmse.png"), "§5.2 stand-in: validation RMSE (mean ± sd over seeds)", "noise multiplier ν",
		"RMSE", kNames(ks), nus, means, sds); err != nil {
		return "", err
	}
	if fig3 != nil {
		if err := plotHistogram(filepath.Join(dir, "fig3-leakage-histogram.png"),
			fmt.Sprintf("§5.2 stand-in: composed leakage over the %d training clients (ν = 3, k = 5, seed 3; Figure 3)", len(fig3)),
			"composed leakage (d-privacy; one bar per participation count, 11/3 each)", fig3, 11.0/3); err != nil {
			return "", err
		}
		md.WriteString("\n![leakage histogram, ν = 3, k = 5, seed 3](fig3-leakage-histogram.png)\n")
	}
	return md.String(), nil
}

// regLeakCell is one cell of the leakage table: median and max averaged
// over seeds, the paper's values in brackets.
func regLeakCell(c regCell, nu float64, k int) string {
	if len(c.max) == 0 {
		return " ∞, ∞ |"
	}
	paper := ""
	if p, ok := regPaperTable3[nu][k]; ok {
		paper = fmt.Sprintf(" [%.1f, %.1f]", p[0], p[1])
	}
	med, _ := meanSD(c.median)
	mx, _ := meanSD(c.max)
	return fmt.Sprintf(" %.1f, %.1f%s |", med, mx, paper)
}
