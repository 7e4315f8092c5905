package experiment

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/learning/fl"
)

// The group-privacy paper's Section 5.3 (FEMNIST with each client's images
// rotated by 90° with probability 0.5, the CNN of Table 5, accuracy for one
// and several hypotheses across the noise multiplier, Table 4) on the data
// we have: Fashion-MNIST or MNIST-10k under the engine's "rotated"
// partition (each client's images rotated by 90°·g, g uniform in
// [0, groups): groups = 2 is the paper's Bernoulli(0.5) rotation, groups
// = 4 IFCA's own four-rotation setting), through the same engine and
// protocols as `shufflefl run --protocol ifca-dp` (nu = 0 runs `ifca`,
// the unsanitized ablation; k = 1 is the one-model ablation).

// RotatedOptions are the settings of dprivacy-rotated beyond
// DPrivacyOptions.
type RotatedOptions struct {
	Dataset, DataDir, Model string
	Groups, Clients         int
	PerRound, Rounds        int
	Samples, Epochs         int
	LR                      float64
	// Early stopping on held-out clients (round.Config's fields of the
	// same names); Every = 0 runs exactly Rounds rounds.
	Holdout, Every, Patience int
}

// DefaultRotated are the defaults of dprivacy-rotated.
var DefaultRotated = RotatedOptions{Dataset: "fashion-mnist", Model: "mlp", Groups: 2, Clients: 200, PerRound: 50,
	Samples: 50, Rounds: 20, Epochs: 1, LR: 0.05}

// check validates the settings of dprivacy-rotated.
func (ro RotatedOptions) check(ks []int) error {
	switch {
	case ro.Groups < 2:
		return checks.Invalidf("--groups must be >= 2 (the rotation groups), got %d", ro.Groups)
	case ro.Clients < 1 || ro.PerRound < 1 || ro.PerRound > ro.Clients:
		return checks.Invalidf("need 1 <= --clients-per-round (%d) <= --clients (%d)", ro.PerRound, ro.Clients)
	case ro.Rounds < 1 || ro.Epochs < 1 || ro.Samples < 1:
		return checks.Invalidf("--rounds, --local-epochs and --samples-per-client must be >= 1")
	case !(ro.LR > 0):
		return checks.Invalidf("--lr must be > 0")
	}
	for _, k := range ks {
		if k > ro.PerRound {
			return checks.Invalidf("k = %d hypotheses: k must be in [1, clients per round = %d]", k, ro.PerRound)
		}
	}
	return nil
}

// RotatedRun is the JSON summary of one dprivacy-rotated run.
type RotatedRun struct {
	K             int       `json:"k"`
	Nu            float64   `json:"nu"`
	Seed          uint64    `json:"seed"`
	Protocol      string    `json:"protocol"`
	FinalAccuracy float64   `json:"final_test_accuracy"`
	BestAccuracy  float64   `json:"best_test_accuracy"`
	GroupAccuracy []float64 `json:"final_group_accuracy"`
	ClusterSizes  []int     `json:"final_cluster_sizes"`
	Level         *float64  `json:"leakage_per_participation"`
	MaxLeakage    *float64  `json:"max_leakage"`
	MedianLeakage *float64  `json:"median_leakage"`
	SecondsPerRnd float64   `json:"seconds_per_round"`
	// Rounds is the number of rounds run; with early stopping,
	// BestValidationRound is the round of the lowest validation loss and
	// FinalAccuracy the test accuracy there (the model one would keep).
	Rounds              int  `json:"rounds"`
	BestValidationRound int  `json:"best_validation_round,omitempty"`
	Stopped             bool `json:"stopped_early,omitempty"`
}

// rotatedCell collects one (k, nu) setting's runs over seeds.
type rotatedCell struct {
	acc, maxLeak, secPerRound []float64
}

func runRotated(o DPrivacyOptions, out Output) (Result, error) {
	ro := o.Rotated
	split, err := data.Load(ro.Dataset, data.Options{DataDir: ro.DataDir, Seed: o.Seed})
	if err != nil {
		return Result{}, err
	}
	model, err := fl.NewModel(ro.Model, split.Train.Features, split.Train.Classes)
	if err != nil {
		return Result{}, err
	}
	cells := make([][]rotatedCell, len(o.Nus))
	var runs []RotatedRun
	for ni, nu := range o.Nus {
		cells[ni] = make([]rotatedCell, len(o.Ks))
		for ki, k := range o.Ks {
			for s := range o.Seeds {
				run, err := rotatedRun(ro, split, k, nu, o.Seed+uint64(s), o.Workers, out)
				if err != nil {
					return Result{}, err
				}
				runs = append(runs, run)
				c := &cells[ni][ki]
				c.acc = append(c.acc, run.FinalAccuracy)
				c.secPerRound = append(c.secPerRound, run.SecondsPerRnd)
				if run.MaxLeakage != nil {
					c.maxLeak = append(c.maxLeak, *run.MaxLeakage)
				}
			}
		}
	}
	md, err := rotatedOutputs(o, model.Dim(), cells, runs, out.Dir)
	if err != nil {
		return Result{}, err
	}
	if err := out.writeFile("results.md", md); err != nil {
		return Result{}, err
	}
	return Result{Markdown: md, Rotated: runs}, out.writeJSON("results.json", runs)
}

// rotatedConfig is the engine's configuration of one run: ifca-dp, or
// ifca (no sanitization) for nu = 0.
func rotatedConfig(ro RotatedOptions, k int, nu float64, seed uint64, workers int) round.Config {
	cfg := round.DefaultConfig()
	cfg.Dataset, cfg.DataDir, cfg.Model = ro.Dataset, ro.DataDir, ro.Model
	cfg.Protocol = "ifca-dp"
	cfg.Options = map[string]float64{"k": float64(k), "nu": nu}
	if nu == 0 {
		cfg.Protocol = "ifca"
		cfg.Options = map[string]float64{"k": float64(k)}
	}
	cfg.Partition, cfg.Groups = "rotated", ro.Groups
	cfg.Clients, cfg.ClientsPerRound, cfg.SamplesPerClient = ro.Clients, ro.PerRound, ro.Samples
	cfg.Rounds, cfg.LocalEpochs, cfg.LR, cfg.Batch = ro.Rounds, ro.Epochs, ro.LR, 10
	cfg.HoldoutClients, cfg.ValidateEvery, cfg.Patience = ro.Holdout, ro.Every, ro.Patience
	cfg.Mode, cfg.ServerLR, cfg.Mu = "fedavg", 1, 0
	cfg.EpsDist, cfg.EpsFile, cfg.TargetEpsilon, cfg.ClientCap = "", "", 0, 0 // ifca takes no budgets
	cfg.Seed, cfg.Workers, cfg.Out = seed, workers, ""
	return cfg
}

// rotatedRun runs one (k, nu, seed) on the engine.
func rotatedRun(ro RotatedOptions, split data.Split, k int, nu float64, seed uint64, workers int, out Output) (RotatedRun, error) {
	cfg := rotatedConfig(ro, k, nu, seed, workers)
	eng, err := sim.New(cfg, split, nil)
	if err != nil {
		return RotatedRun{}, fmt.Errorf("k = %d, nu = %g: %w", k, nu, err)
	}
	start := time.Now()
	var last, atBest round.RoundResult
	best := 0.0
	sum, err := eng.Run(func(r round.RoundResult) {
		last = r
		best = math.Max(best, r.TestAccuracy)
		if r.Validation != nil && r.Validation.Improved {
			atBest = r
		}
	})
	if err != nil {
		return RotatedRun{}, fmt.Errorf("k = %d, nu = %g, seed %d: %w", k, nu, seed, err)
	}
	run := RotatedRun{K: k, Nu: nu, Seed: seed, Protocol: cfg.Protocol, FinalAccuracy: sum.FinalAccuracy, BestAccuracy: best,
		SecondsPerRnd: time.Since(start).Seconds() / float64(max(sum.Rounds, 1)), Rounds: sum.Rounds}
	at := last
	if v := sum.Validation; v != nil && v.BestRound > 0 {
		run.FinalAccuracy, run.BestValidationRound, run.Stopped = v.TestAccuracyAtBest, v.BestRound, v.Stopped
		at = atBest
	}
	for g, best := range round.BestPerGroup(at.Hypotheses) {
		run.GroupAccuracy = append(run.GroupAccuracy, at.Hypotheses[best].Accuracy[g])
	}
	for _, h := range last.Hypotheses {
		run.ClusterSizes = append(run.ClusterSizes, h.Size)
	}
	if d := last.DPrivacy; d != nil {
		run.Level, run.MaxLeakage, run.MedianLeakage = finite(d.Level), finite(d.MaxCumulative), finite(d.MedianCumulative)
	}
	stopNote := ""
	if run.BestValidationRound > 0 {
		stopNote = fmt.Sprintf(", %d rounds, best validation at round %d", run.Rounds, run.BestValidationRound)
	}
	out.logf("k = %d, nu = %g, seed %d: accuracy %.4f (groups %s), clusters %v, %.2fs/round%s\n",
		k, nu, seed, run.FinalAccuracy, fmtAccs(run.GroupAccuracy), run.ClusterSizes, run.SecondsPerRnd, stopNote)
	return run, nil
}

// rotatedOutputs draws accuracy.png and returns results.md.
func rotatedOutputs(o DPrivacyOptions, dim int, cells [][]rotatedCell, runs []RotatedRun, dir string) (string, error) {
	ro, nus, ks := o.Rotated, o.Nus, o.Ks
	var md strings.Builder
	fmt.Fprintf(&md, "# Experiment `dprivacy-rotated` (group-privacy paper, Section 5.3 / Table 4, on %s)\n\n", ro.Dataset)
	fmt.Fprintf(&md, "FEMNIST is not available here; this runs the same protocol on %s with every client's images rotated by "+
		"90°·g, g uniform in [0, %d) (groups = 2 is the paper's Bernoulli(0.5) rotation). Model %s (n = %d parameters), "+
		"%d clients of %d images, %d per round, %d rounds of FedAvg (E = %d local epochs, batch 10, lr %g), seeds %d..%d. "+
		"Accuracy: final round (with early stopping: the best validation round, see below); every test group uses the hypothesis with the lowest loss on it (IFCA's evaluation), averaged over groups. "+
		"nu = 0 is `ifca` (no sanitization); each release of `ifca-dp` leaks n/nu in d-privacy terms, which for n = %d is no "+
		"meaningful guarantee (the paper says so too, Section 5.3); the d-privacy column is the largest composed leakage of a client.\n\n",
		ro.Dataset, ro.Groups, ro.Model, dim, ro.Clients, ro.Samples, ro.PerRound, ro.Rounds, ro.Epochs, ro.LR,
		o.Seed, o.Seed+uint64(o.Seeds)-1, dim)
	if ro.Every > 0 {
		fmt.Fprintf(&md, "Early stopping as in the paper: %d further clients are held out (never trained on; their losses are not "+
			"privatized), validation every %d rounds with each using its lowest-loss hypothesis, stop after %d validations without "+
			"improvement, at most %d rounds; the accuracy is the test accuracy at the best validation round. Rounds run: %s.\n\n",
			ro.Holdout, ro.Every, ro.Patience, ro.Rounds, roundsRange(runs))
	}
	kHeader(&md, "nu \\ k", ks, fmt.Sprintf("max leakage (k = %d)", ks[len(ks)-1]), "s/round")
	means, sds := gridMeanSD(len(nus), len(ks), func(ni, ki int) []float64 { return cells[ni][ki].acc })
	for ni, nu := range nus {
		fmt.Fprintf(&md, "| %g |", nu)
		var sec []float64
		for ki := range ks {
			fmt.Fprintf(&md, " %.2f%% ± %.2f |", 100*means[ki][ni], 100*sds[ki][ni])
			sec = append(sec, cells[ni][ki].secPerRound...)
		}
		if lk := cells[ni][len(ks)-1].maxLeak; len(lk) > 0 {
			m, _ := meanSD(lk)
			fmt.Fprintf(&md, " %.4g |", m)
		} else {
			md.WriteString(" ∞ |")
		}
		ms, _ := meanSD(sec)
		fmt.Fprintf(&md, " %.2f |\n", ms)
	}
	md.WriteString("\n![accuracy against nu](accuracy.png)\n")
	err := plotErrorBars(filepath.Join(dir, "accuracy.png"),
		fmt.Sprintf("rotated %s, %s: test accuracy (mean ± sd over %d seeds)", ro.Dataset, ro.Model, o.Seeds),
		"noise multiplier nu (0: no sanitization)", "test accuracy", kNames(ks), nus, means, sds)
	return md.String(), err
}

// fmtAccs formats per-group accuracies.
func fmtAccs(a []float64) string {
	parts := make([]string, len(a))
	for i, v := range a {
		parts[i] = fmt.Sprintf("%.3f", v)
	}
	return strings.Join(parts, "/")
}

// roundsRange describes the numbers of rounds the runs took ("20" or
// "15–40").
func roundsRange(runs []RotatedRun) string {
	lo, hi := math.MaxInt, 0
	for _, r := range runs {
		lo, hi = min(lo, r.Rounds), max(hi, r.Rounds)
	}
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}
