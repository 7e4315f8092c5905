package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runB(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := runBound(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBoundCommands(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		inStdout []string
		inStderr string
	}{
		{"usage", nil, 2, nil, "Usage:"},
		{"help", []string{"--help"}, 0, []string{"erlingsson", "flame-double", "--target-epsilon"}, ""},
		{"unknown", []string{"nope"}, 2, nil, `unknown subcommand "nope"`},
		{"clones", []string{"clones", "--eps0", "4", "--n", "100000", "--delta", "1e-6"}, 0, []string{"clones-numerical: epsilon = 0.1697"}, ""},
		{"clones closed", []string{"clones", "--form", "closed", "--eps0", "4", "--n", "100000", "--delta", "1e-6"}, 0, []string{"0.537804"}, ""},
		{"clones invalid region", []string{"clones", "--form", "closed", "--eps0", "9", "--n", "100000"}, 2, nil, "eps0 <= log(n/(16 log(4/delta)))"},
		{"bad eps0", []string{"clones", "--eps0", "-1"}, 2, nil, "eps0 must be > 0"},
		{"bad delta", []string{"erlingsson", "--eps0", "0.1", "--n", "100000", "--delta", "0"}, 2, nil, "delta must be in (0, 1)"},
		{"bad flag", []string{"clones", "--bogus"}, 2, nil, "flag provided but not defined"},
		{"stray arg", []string{"clones", "extra"}, 2, nil, "unexpected argument"},
		{"erlingsson", []string{"erlingsson", "--eps0", "0.5", "--n", "100000", "--delta", "1e-6"}, 0, []string{"erlingsson: epsilon = 0.0705"}, ""},
		{"flame simple", []string{"flame-simple", "--delta", "5.011872336272725e-06"}, 0, []string{"flame-ss-simple: epsilon = 0.9278"}, ""},
		{"flame double legacy", []string{"flame-double", "--delta", "5.011872336272725e-06", "--legacy-flame-typo"}, 0, []string{"flame-ss-double-legacy-flame-typo: epsilon = 0.2379", "FLAWED"}, ""},
		{"flame double no subsampling", []string{"flame-double", "--delta", "5.011872336272725e-06", "--no-subsampling"}, 0, []string{"epsilon = 26.04"}, ""},
		{"flame topk", []string{"flame-topk", "--n", "1000", "--np", "333", "--k", "157", "--d", "7850"}, 0, []string{"nu = 3.125", "l = 16"}, ""},
		{"blanket", []string{"blanket", "--eps0", "1", "--n", "10000", "--delta", "1e-6"}, 0, []string{"blanket-bennett-laplace"}, ""},
		{"blanket closed needs rgb", []string{"blanket", "--form", "closed"}, 2, nil, "--mech rgb"},
		{"blanket closed", []string{"blanket", "--form", "closed", "--mech", "rgb", "--k", "10", "--eps0", "1", "--n", "100000"}, 0, []string{"blanket-closed"}, ""},
		{"eon dist", []string{"eon", "--eps-dist", "uniform2", "--n", "10000", "--seed", "1", "--delta", "1e-8"}, 0, []string{"eon-numerical: epsilon = 0.0572"}, ""},
		{"eon needs budgets", []string{"eon"}, 2, nil, "--eps-file"},
		{"eapes labelled", []string{"eapes", "--eps-dist", "uniform2", "--n", "10000", "--delta", "1e-8"}, 0, []string{"APPROXIMATION", "mu ="}, ""},
		{"eapes no inverse", []string{"eapes", "--eps-dist", "uniform2", "--target-epsilon", "0.1"}, 2, nil, "approximation"},
		{"compare personal", []string{"eon", "--eps-dist", "uniform2", "--n", "10000", "--delta", "1e-8", "--compare"}, 0, []string{"eon-numerical", "unis", "APPROXIMATION (not an upper bound)", "best (rigorous): eon-numerical"}, ""},
		{"best uniform", []string{"best", "--eps0", "4", "--n", "100000", "--delta", "1e-6"}, 0, []string{"clones-numerical"}, ""},
		{"best compare", []string{"best", "--eps0", "4", "--n", "100000", "--delta", "1e-6", "--compare"}, 0, []string{"not applicable", "best (rigorous): clones-numerical"}, ""},
		{"inverse clones", []string{"clones", "--n", "100000", "--delta", "1e-6", "--target-epsilon", "0.17"}, 0, []string{"largest local eps0 = 4.00"}, ""},
		{"inverse eon", []string{"eon", "--eps-dist", "uniform2", "--n", "10000", "--delta", "1e-8", "--target-epsilon", "0.1"}, 0, []string{"largest scale factor"}, ""},
		{"subsample", []string{"subsample", "--eps0", "1", "--q", "0.1"}, 0, []string{"subsample-wor: epsilon = 0.15"}, ""},
		{"subsample bad q", []string{"subsample", "--eps0", "1", "--q", "2"}, 2, nil, "q must be in (0, 1]"},
		{"compose", []string{"compose", "--eps0", "0.1", "--rounds", "100", "--method", "basic"}, 0, []string{"compose-basic: epsilon = 10"}, ""},
		{"rounds", []string{"clones", "--eps0", "4", "--n", "100000", "--delta", "1e-6", "--rounds", "10"}, 0, []string{"epsilon = 1.6977", "delta = 1e-05", "basic composition"}, ""},
		{"rounds advanced", []string{"clones", "--eps0", "4", "--n", "100000", "--delta", "1e-6", "--rounds", "1000", "--delta-prime", "1e-6"}, 0, []string{"advanced composition"}, ""},
		{"rounds zero", []string{"clones", "--rounds", "0"}, 2, nil, "--rounds must be >= 1"},
		{"rounds inverse", []string{"clones", "--n", "100000", "--delta", "1e-6", "--rounds", "10", "--target-epsilon", "1"}, 0, []string{"largest local eps0 = 3.11"}, ""},
		{"eapes rounds", []string{"eapes", "--eps-dist", "uniform2", "--n", "10000", "--delta", "1e-8", "--rounds", "4"}, 0, []string{"mu sqrt(rounds)", "APPROXIMATION"}, ""},
		{"eapes tv vacuous", []string{"eapes", "--eps-dist", "uniform2", "--n", "10000", "--delta", "1e-8", "--tv", "0.0206"}, 0, []string{"eps_berry_esseen_corrected = none", "vacuous"}, ""},
		{"eapes tv", []string{"eapes", "--eps-dist", "uniform2", "--n", "10000", "--delta", "0.05", "--tv", "0.0206"}, 0, []string{"eps_berry_esseen_corrected = 0.000931"}, ""},
		{"sapes", []string{"sapes", "--eps-c", "0.05749", "--delta-c", "4.621171572600098e-09", "--b", "1570", "--delta-prime", "2.1489e-05"}, 0, []string{"sapes-user-level: epsilon = 25.6"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runB(tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errs)
			}
			for _, s := range tc.inStdout {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			if tc.inStderr != "" && !strings.Contains(errs, tc.inStderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.inStderr, errs)
			}
			if tc.code == 2 && tc.args != nil && strings.Count(strings.TrimSpace(errs), "\n") > 0 && !strings.Contains(errs, "Usage") {
				t.Errorf("want one line on stderr, got:\n%s", errs)
			}
		})
	}
}

func TestBoundSubcommandHelp(t *testing.T) {
	for name, cmd := range boundCmds {
		code, _, errs := runB(name, "--help")
		if code != 0 {
			t.Errorf("%s --help: exit %d", name, code)
		}
		for _, f := range cmd.flags {
			flagName := f
			if f == "mech-best" {
				flagName = "mech"
			}
			if !strings.Contains(errs, "-"+flagName) {
				t.Errorf("%s --help does not explain -%s:\n%s", name, flagName, errs)
			}
		}
	}
}

func TestBoundJSON(t *testing.T) {
	code, out, errs := runB("clones", "--eps0", "4", "--n", "100000", "--delta", "1e-6", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	for _, k := range []string{"bound", "epsilon", "delta", "inputs"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	in := obj["inputs"].(map[string]any)
	if in["eps0"].(float64) != 4 || in["n"].(float64) != 100000 {
		t.Errorf("inputs = %v", in)
	}
	code, out, _ = runB("best", "--eps0", "6", "--n", "1000", "--compare", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("compare JSON: %v\n%s", err, out)
	}
	if rows, ok := obj["compare"].([]any); !ok || len(rows) < 3 {
		t.Errorf("compare rows missing: %v", obj["compare"])
	}
}

func TestBoundEpsFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "eps.csv")
	var b strings.Builder
	b.WriteString("eps\n")
	for i := 0; i < 5000; i++ {
		b.WriteString("0.5\n")
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runB("eon", "--eps-file", p, "--delta", "1e-6")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// Equal budgets: EoN numerical equals the clones numerical bound.
	code2, out2, _ := runB("clones", "--eps0", "0.5", "--n", "5000", "--delta", "1e-6")
	if code2 != 0 {
		t.Fatal("clones failed")
	}
	e1 := strings.Fields(strings.SplitN(out, "epsilon = ", 2)[1])[0]
	e2 := strings.Fields(strings.SplitN(out2, "epsilon = ", 2)[1])[0]
	if strings.TrimSuffix(e1, ",")[:5] != strings.TrimSuffix(e2, ",")[:5] {
		t.Errorf("eon on equal budgets %s, clones %s", e1, e2)
	}
	code, _, errs = runB("eon", "--eps-file", filepath.Join(dir, "missing"))
	if code != 2 || !strings.Contains(errs, "--eps-file") {
		t.Errorf("missing file: exit %d, %s", code, errs)
	}
}
