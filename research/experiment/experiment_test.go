package experiment

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim/metrics"
	"github.com/shufflefl/shufflefl/learning/data"
)

// fakeRuns checks with runtime's own validation and records the runs
// written, so that the package runs without the command line.
type fakeRuns struct{ written []string }

func (f *fakeRuns) Check(cfg round.Config) error    { return cfg.Validate() }
func (f *fakeRuns) PlanLine(plan round.Plan) string { return "plan" }
func (f *fakeRuns) Write(cfg round.Config, recs []metrics.Record, _ round.Summary, log string) error {
	if len(recs) != cfg.Rounds || !strings.Contains(log, "round 1/") {
		return errors.New("a run without its rounds")
	}
	f.written = append(f.written, cfg.Out)
	return nil
}

func TestPaperConfigs(t *testing.T) {
	flame, ok := LookupPaper("flame")
	if !ok {
		t.Fatal("no flame")
	}
	all := flame.Configs(TablesOptions{Dataset: "fashion-mnist", Rounds: 3, Dir: "o"}, 60000)
	if len(all) != 6 {
		t.Fatalf("%d runs, want 6", len(all))
	}
	for _, r := range all {
		c := r.Config
		if c.Rounds != 3 || c.Dataset != "fashion-mnist" || c.Out != filepath.Join("o", "t1-"+r.Label) {
			t.Errorf("%s: rounds %d, dataset %s, out %s", r.Label, c.Rounds, c.Dataset, c.Out)
		}
		if c.Protocol == "nonprivate" && (c.EpsDist != "" || c.EpsScale != 0) {
			t.Errorf("%s: non-private run keeps budgets", r.Label)
		}
		if c.Protocol == "dp-central" && !(c.TargetEpsilon > 0) {
			t.Errorf("%s: dp-central without a target", r.Label)
		}
	}
	only := flame.Configs(TablesOptions{Only: []string{"SS-Topk", "NP-FL"}}, 60000)
	if len(only) != 2 || only[0].Label != "NP-FL" || only[1].Label != "SS-Topk" {
		t.Errorf("--only kept %v", only)
	}
	for _, n := range []string{"apes", "eapes", "frontier", "dprivacy-rotated"} {
		if Summary(n) == "" || !slices.Contains(Names(), n) {
			t.Errorf("experiment %s is not listed", n)
		}
	}
}

func TestGroupDigits(t *testing.T) {
	for v, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 7850: "7,850", 101770: "101,770", -1234567: "-1,234,567"} {
		if got := groupDigits(v); got != want {
			t.Errorf("groupDigits(%d) = %q, want %q", v, got, want)
		}
	}
}

// TestPlanTablesRun runs a one-round paper table through the package alone.
func TestPlanTablesRun(t *testing.T) {
	split, err := data.Load("fashion-mnist-sample", data.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	flame, _ := LookupPaper("flame")
	dir := t.TempDir()
	runs := &fakeRuns{}
	o := TablesOptions{Dataset: "fashion-mnist-sample", Rounds: 1, Seed: 1, Workers: 2, Only: []string{"NP-FL"}, Dir: dir}
	if _, err := PlanTables(flame, TablesOptions{Dataset: "fashion-mnist-sample", Only: []string{"nope"}}, split, runs); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("--only matching nothing: %v", err)
	}
	plan, err := PlanTables(flame, o, split, runs)
	if err != nil {
		t.Fatal(err)
	}
	res, err := plan.Run(Output{Dir: dir, Command: "flame --rounds 1", Runs: runs})
	if err != nil {
		t.Fatal(err)
	}
	md := res.Markdown
	if len(res.Runs) != 1 || len(res.Runs[0].Records) != 1 || res.Runs[0].Summary.FinalAccuracy <= 0 {
		t.Errorf("result runs: %+v", res.Runs)
	}
	if !strings.Contains(md, "| NP-FL | nonprivate |") || !strings.Contains(md, "n = 1,000, d = 7,850") {
		t.Errorf("results:\n%s", md)
	}
	if !slices.Equal(runs.written, []string{filepath.Join(dir, "t1-NP-FL")}) {
		t.Errorf("runs written: %v", runs.written)
	}
	for _, f := range []string{"results.md", "accuracy-t1.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestParseFrontierLists(t *testing.T) {
	ps, ts, err := ParseFrontierLists(" ss-simple, dp-central,", "8, 2")
	if err != nil || !slices.Equal(ps, []string{"ss-simple", "dp-central"}) || !slices.Equal(ts, []float64{8, 2}) {
		t.Fatalf("%v %v %v", ps, ts, err)
	}
	for _, tc := range []struct{ protos, targets string }{
		{"nope", "1"}, {"nonprivate", "1"}, {"apes,apes", "1"}, {"", "1"},
		{"apes", "x"}, {"apes", "-1"}, {"apes", "NaN"}, {"apes", "2,2"}, {"apes", ""},
	} {
		if _, _, err := ParseFrontierLists(tc.protos, tc.targets); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%q %q: %v", tc.protos, tc.targets, err)
		}
	}
	for _, p := range FrontierProtocols() {
		if p == "nonprivate" || p == "ifca" || p == "ifca-dp" {
			t.Errorf("frontier protocol %s has no epsilon to calibrate", p)
		}
	}
}

func TestDPrivacyOptions(t *testing.T) {
	nus, ks, err := ParseGrid("0, 0.5,3", "1,2")
	if err != nil || !slices.Equal(nus, []float64{0, 0.5, 3}) || !slices.Equal(ks, []int{1, 2}) {
		t.Fatalf("%v %v %v", nus, ks, err)
	}
	if nus, ks, err := ParseGrid("", ""); err != nil || nus != nil || ks != nil {
		t.Errorf("empty lists: %v %v %v", nus, ks, err)
	}
	for _, tc := range [][2]string{{"x", "1"}, {"1", "0"}, {"1", "a"}, {"1", "1,,2"}} {
		if _, _, err := ParseGrid(tc[0], tc[1]); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%q %q: %v", tc[0], tc[1], err)
		}
	}
	reg, _ := LookupDPrivacy("dprivacy-regression")
	rot, _ := LookupDPrivacy("dprivacy-rotated")
	ok := DPrivacyOptions{Seeds: 1, MaxRounds: 1, Nus: []float64{1}, Ks: []int{1}, Rotated: DefaultRotated}
	if err := reg.Check(ok); err != nil {
		t.Errorf("valid options: %v", err)
	}
	for name, tc := range map[string]struct {
		e   DPrivacyExperiment
		mod func(*DPrivacyOptions)
	}{
		"no seeds":        {reg, func(o *DPrivacyOptions) { o.Seeds = 0 }},
		"negative nu":     {reg, func(o *DPrivacyOptions) { o.Nus = []float64{-1} }},
		"k above U":       {reg, func(o *DPrivacyOptions) { o.Ks = []int{regU + 1} }},
		"one group":       {rot, func(o *DPrivacyOptions) { o.Rotated.Groups = 1 }},
		"k above U (rot)": {rot, func(o *DPrivacyOptions) { o.Ks = []int{DefaultRotated.PerRound + 1} }},
		"lr zero":         {rot, func(o *DPrivacyOptions) { o.Rotated.LR = 0 }},
	} {
		o := ok
		tc.mod(&o)
		if err := tc.e.Check(o); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestRunDPrivacySynthetic runs §5.1 briefly on the reference simulation.
func TestRunDPrivacySynthetic(t *testing.T) {
	e, _ := LookupDPrivacy("dprivacy-synthetic")
	dir := t.TempDir()
	res, err := RunDPrivacy(e, DPrivacyOptions{Seed: 1, Seeds: 1, MaxRounds: 4}, Output{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	md := res.Markdown
	if len(res.Reference) != 5 { // five variants, one seed
		t.Errorf("%d runs, want 5", len(res.Reference))
	}
	if !strings.Contains(md, "reference simulation ifca/ifcaref") || !strings.Contains(md, "| 2 hypotheses, sanitized (ν = 5) |") {
		t.Errorf("results:\n%s", md)
	}
	for _, f := range []string{"results.md", "results.json", "fig1-sanitized.png", "fig2-leakage.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}
