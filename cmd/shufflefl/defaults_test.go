package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/rundir"
	"github.com/shufflefl/shufflefl/research/bound"
	"github.com/shufflefl/shufflefl/research/experiment"
)

// TestRunDefaultIsPrivate: `shufflefl run` without flags runs the default
// shuffle protocol with a stated cumulative (epsilon, delta), epsilon <= 8
// and delta <= 1e-6, and the Laplace randomizer.
func TestRunDefaultIsPrivate(t *testing.T) {
	cfg, _, err := resolveRunConfig(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Protocol != round.DefaultProtocol || !strings.HasPrefix(cfg.Protocol, "ss-") {
		t.Errorf("default protocol %q", cfg.Protocol)
	}
	if cfg.TargetEpsilon <= 0 || cfg.TargetEpsilon > 8 || cfg.Delta > 1e-6 {
		t.Errorf("default guarantee (%v, %v)", cfg.TargetEpsilon, cfg.Delta)
	}
	if !reflect.DeepEqual(cfg, round.RunDefaults()) {
		t.Errorf("resolved defaults differ from round.RunDefaults:\n%+v\n%+v", cfg, round.RunDefaults())
	}
}

// TestRunPerProtocolDefaults: a protocol's defaults fill only the settings
// not given, on the command line or in a config file.
func TestRunPerProtocolDefaults(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, filepath.Join(dir, "c.yaml"), "protocol: ss-simple\nrounds: 3\n")
	tests := []struct {
		name  string
		args  []string
		check func(c round.Config) error
	}{
		{"nonprivate", []string{"--protocol", "nonprivate"}, func(c round.Config) error {
			if c.Clients != 1000 || c.Rounds != 30 || c.TargetEpsilon != 0 || len(c.Options) != 0 {
				return fmt.Errorf("clients %d rounds %d target %v options %v", c.Clients, c.Rounds, c.TargetEpsilon, c.Options)
			}
			return nil
		}},
		{"dp-central clips the L2 norm at 1", []string{"--protocol", "dp-central"}, func(c round.Config) error {
			if c.Clip != 1 || c.TargetEpsilon != 8 || c.ClientsPerRound == 0 {
				return fmt.Errorf("clip %v target %v clients-per-round %d", c.Clip, c.TargetEpsilon, c.ClientsPerRound)
			}
			return nil
		}},
		{"dp-central with clients given samples all", []string{"--protocol", "dp-central", "--clients", "100"}, func(c round.Config) error {
			if c.Clients != 100 || c.ClientsPerRound != 0 {
				return fmt.Errorf("clients %d per round %d", c.Clients, c.ClientsPerRound)
			}
			return nil
		}},
		{"epsilon given: no target", []string{"--epsilon", "50"}, func(c round.Config) error {
			if c.TargetEpsilon != 0 || c.Epsilon != 50 {
				return fmt.Errorf("target %v epsilon %v", c.TargetEpsilon, c.Epsilon)
			}
			return nil
		}},
		{"flag beats default", []string{"--clip", "0.3", "--lr", "0.05"}, func(c round.Config) error {
			if c.Clip != 0.3 || c.LR != 0.05 {
				return fmt.Errorf("clip %v lr %v", c.Clip, c.LR)
			}
			return nil
		}},
		{"file beats default", []string{"--config", file}, func(c round.Config) error {
			d := round.RunDefaults()
			if c.Rounds != 3 || c.Clients != d.Clients {
				return fmt.Errorf("rounds %d clients %d", c.Rounds, c.Clients)
			}
			return nil
		}},
		{"levels keeps R_{gamma,b}", []string{"--option", "levels=4"}, func(c round.Config) error {
			if _, ok := c.Options["randomizer"]; ok || c.Options["levels"] != 4 {
				return fmt.Errorf("options %v", c.Options)
			}
			return nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := resolveRunConfig(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.check(cfg); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestRunDefaultsRerunExact: the config.yaml of a run with defaults gives
// every setting, so rerunning it resolves to the same configuration, and
// so does resuming (which reads it).
func TestRunDefaultsRerunExact(t *testing.T) {
	for _, args := range [][]string{nil, {"--protocol", "apes"}, {"--protocol", "nonprivate"}, {"--protocol", "ss-double", "--option", "levels=3"}, {"--protocol", "dp-central", "--rounds", "4"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cfg, _, err := resolveRunConfig(args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Out = t.TempDir()
			if err := rundir.WriteConfig(cfg, versionString(), rundir.Trainer{}); err != nil {
				t.Fatal(err)
			}
			again, _, err := resolveRunConfig([]string{"--config", filepath.Join(cfg.Out, "config.yaml"), "--out", cfg.Out}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Options) == 0 && len(again.Options) == 0 {
				cfg.Options, again.Options = nil, nil
			}
			if !reflect.DeepEqual(cfg, again) {
				t.Errorf("rerun of config.yaml resolves differently:\n%+v\n%+v", cfg, again)
			}
			if err := os.WriteFile(filepath.Join(cfg.Out, rundir.CheckpointFile), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
			resumed, _, err := resolveResume([]string{"--resume", cfg.Out}, cfg.Out, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if len(resumed.Options) == 0 {
				resumed.Options = nil
			}
			if !reflect.DeepEqual(cfg, resumed) {
				t.Errorf("resume resolves differently:\n%+v\n%+v", cfg, resumed)
			}
		})
	}
}

// TestOneRandomizerDefault: the FLAME protocols use one randomizer by
// default everywhere: the Laplace mechanism on [0, 1] in run (option
// randomizer=1), in experiment flame, and in bound flame-simple,
// flame-double and blanket (--mech laplace).
func TestOneRandomizerDefault(t *testing.T) {
	for _, p := range []string{"ss-simple", "ss-double", "ss-topk"} {
		cfg, _, err := resolveRunConfig([]string{"--protocol", p}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Options["randomizer"] != 1 {
			t.Errorf("run --protocol %s: randomizer %v, want 1 (Laplace)", p, cfg.Options["randomizer"])
		}
	}
	flame, _ := experiment.LookupPaper("flame")
	for _, r := range flame.Configs(experiment.TablesOptions{}, 60000) {
		if strings.HasPrefix(r.Config.Protocol, "ss-") && r.Config.Options["randomizer"] != 1 {
			t.Errorf("experiment flame %s: randomizer %v, want 1", r.Label, r.Config.Options["randomizer"])
		}
	}
	for _, sub := range []string{"flame-simple", "flame-double", "blanket"} {
		fs := flag.NewFlagSet(sub, flag.ContinueOnError)
		bound.Register(fs, sub, &bound.Params{})
		if m := fs.Lookup("mech"); m == nil || m.DefValue != "laplace" {
			t.Errorf("bound %s: --mech default is not laplace", sub)
		}
	}
}

// TestRunHelpShowsProtocolDefaults: the defaults printed by run --help are
// those of the protocol given before --help.
func TestRunHelpShowsProtocolDefaults(t *testing.T) {
	d := round.RunDefaults()
	_, out, _ := runCLI("run", "--help")
	want := fmt.Sprintf("  --clients int\n      number of clients N (the population) (default %d)\n", d.Clients)
	if !strings.Contains(out, want) || !strings.Contains(out, fmt.Sprintf("(default %q)", round.DefaultProtocol)) {
		t.Errorf("run --help does not show the default protocol's defaults (%q):\n%s", want, out)
	}
	_, out, _ = runCLI("run", "--protocol", "nonprivate", "--help")
	if !strings.Contains(out, "  --clients int\n      number of clients N (the population) (default 1000)\n") {
		t.Errorf("run --protocol nonprivate --help does not show nonprivate's defaults:\n%s", out)
	}
	_, out, _ = runCLI("protocols", round.DefaultProtocol)
	if !strings.Contains(out, "Run defaults (the protocol of 'shufflefl run' without --protocol)") {
		t.Errorf("protocols %s does not show its run defaults:\n%s", round.DefaultProtocol, out)
	}
}

// TestEveryHelpHasExamples: every command's help goes to stdout with status
// 0, shows GNU-style --flags only, and ends with examples.
func TestEveryHelpHasExamples(t *testing.T) {
	cmds := [][]string{{"--help"}, {"run", "--help"}, {"experiment", "--help"}, {"experiment", "frontier", "--help"},
		{"experiment", "flame", "--help"}, {"protocols", "--help"}, {"bound", "--help"}}
	for _, name := range bound.Commands() {
		cmds = append(cmds, []string{"bound", name, "--help"})
	}
	for _, args := range cmds {
		code, stdout, stderr := runCLI(args...)
		if code != 0 || stderr != "" {
			t.Errorf("%v: status %d, stderr %q", args, code, stderr)
		}
		if !strings.Contains(stdout, "\nExamples:\n  shufflefl ") {
			t.Errorf("%v: no examples:\n%s", args, stdout)
		}
		for _, line := range strings.Split(stdout, "\n") {
			if trimmed := strings.TrimLeft(line, " "); strings.HasPrefix(trimmed, "-") && !strings.HasPrefix(trimmed, "--") {
				t.Errorf("%v: single-dash flag %q", args, line)
			}
		}
	}
}

// TestLDPMinDerivesMinEpsilon: ldp-min runs without its option min-epsilon
// (derived from the clients' budgets) instead of asking for it.
func TestLDPMinDerivesMinEpsilon(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ldpmin")
	code, _, stderr := tinyRun("--protocol", "ldp-min", "--eps-dist", "uniform2", "--eps-scale", "100", "--out", out)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
}
