package round

import (
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/protocol"
)

// TestDefaultsTable: every row names a registered protocol once, every key
// can be set, and every private protocol's defaults state a guarantee with
// delta at most 1e-6 that validates.
func TestDefaultsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range defaultsTable {
		if seen[d.Protocol] {
			t.Errorf("%s has two rows", d.Protocol)
		}
		seen[d.Protocol] = true
		if _, err := protocol.Describe(d.Protocol); err != nil {
			t.Errorf("row for unknown protocol %s: %v", d.Protocol, err)
		}
		if d.Why == "" {
			t.Errorf("%s: the row does not say where its values come from", d.Protocol)
		}
		c := DefaultConfig()
		c.Protocol = d.Protocol
		if err := ApplyDefaults(&c, func(string) bool { return false }); err != nil {
			t.Errorf("%s: %v", d.Protocol, err)
			continue
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: the defaults do not validate: %v", d.Protocol, err)
		}
		// Protocols without an (epsilon, delta) guarantee: no target.
		// (ifca-dp states d-privacy, which a target epsilon cannot express.)
		noDP := d.Protocol == "nonprivate" || d.Protocol == "ifca" || d.Protocol == "ifca-dp"
		if !noDP && (c.TargetEpsilon <= 0 || c.Delta > 1e-6) {
			t.Errorf("%s: defaults state no guarantee: target epsilon %v, delta %v", d.Protocol, c.TargetEpsilon, c.Delta)
		}
	}
	for _, name := range protocol.Names() {
		if !seen[name] {
			t.Errorf("protocol %s has no row in the defaults table", name)
		}
	}
}

// TestRunDefaults: the default run is DefaultProtocol, a shuffle-model
// protocol, with a stated target (epsilon <= 8, delta <= 1e-6).
func TestRunDefaults(t *testing.T) {
	c := RunDefaults()
	if c.Protocol != DefaultProtocol || !strings.HasPrefix(c.Protocol, "ss-") {
		t.Fatalf("default protocol %q", c.Protocol)
	}
	if c.TargetEpsilon <= 0 || c.TargetEpsilon > 8 || c.Delta > 1e-6 {
		t.Errorf("default guarantee (%v, %v), want epsilon in (0, 8] and delta <= 1e-6", c.TargetEpsilon, c.Delta)
	}
	if c.Options["randomizer"] != 1 {
		t.Errorf("default randomizer %v, want 1 (Laplace)", c.Options["randomizer"])
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestApplyDefaults: a given setting is never changed, and a setting is not
// defaulted when a setting of its Unless list is given.
func TestApplyDefaults(t *testing.T) {
	tests := []struct {
		name  string
		given []string
		set   func(c *Config)
		check func(t *testing.T, c Config)
	}{
		{"nothing given", nil, nil, func(t *testing.T, c Config) {
			if c.Clients != 2000 || c.Rounds != 10 || c.TargetEpsilon != 8 || c.Options["randomizer"] != 1 {
				t.Errorf("got %+v", c)
			}
		}},
		{"given rounds kept", []string{"rounds"}, func(c *Config) { c.Rounds = 3 }, func(t *testing.T, c Config) {
			if c.Rounds != 3 || c.Clients != 2000 {
				t.Errorf("rounds %d clients %d", c.Rounds, c.Clients)
			}
		}},
		{"epsilon given: no target", []string{"epsilon"}, func(c *Config) { c.Epsilon = 50 }, func(t *testing.T, c Config) {
			if c.TargetEpsilon != 0 || c.Epsilon != 50 || c.Delta != 1e-6 {
				t.Errorf("target %v epsilon %v delta %v", c.TargetEpsilon, c.Epsilon, c.Delta)
			}
		}},
		{"eps-scale given: no target", []string{"eps-scale"}, nil, func(t *testing.T, c Config) {
			if c.TargetEpsilon != 0 {
				t.Errorf("target %v", c.TargetEpsilon)
			}
		}},
		{"levels given: no Laplace", []string{"option levels"}, nil, func(t *testing.T, c Config) {
			if _, ok := c.Options["randomizer"]; ok {
				t.Errorf("randomizer defaulted beside levels: %v", c.Options)
			}
		}},
		{"randomizer given", []string{"option randomizer"}, func(c *Config) { c.Options = map[string]float64{"randomizer": 0} }, func(t *testing.T, c Config) {
			if c.Options["randomizer"] != 0 {
				t.Errorf("randomizer %v", c.Options["randomizer"])
			}
		}},
		{"local-steps given: no local epochs", []string{"local-steps"}, func(c *Config) { c.LocalEpochs, c.LocalSteps = 0, 4 }, func(t *testing.T, c Config) {
			if c.LocalEpochs != 0 || c.LocalSteps != 4 {
				t.Errorf("epochs %d steps %d", c.LocalEpochs, c.LocalSteps)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Protocol = "ss-simple"
			if tc.set != nil {
				tc.set(&c)
			}
			given := map[string]bool{}
			for _, k := range tc.given {
				given[k] = true
			}
			if err := ApplyDefaults(&c, func(k string) bool { return given[k] }); err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
	// Applying twice changes nothing (a resolved config reruns exactly).
	a := RunDefaults()
	b := a
	b.Options = map[string]float64{"randomizer": 1}
	if err := ApplyDefaults(&b, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if a.Clients != b.Clients || a.Rounds != b.Rounds || a.LR != b.LR || a.TargetEpsilon != b.TargetEpsilon || len(b.Options) != 1 {
		t.Errorf("applying the defaults twice changed the config: %+v vs %+v", a, b)
	}
}

// TestDefaultsString renders a row as flags.
func TestDefaultsString(t *testing.T) {
	d, ok := DefaultsFor("ss-simple")
	if !ok {
		t.Fatal("no row for ss-simple")
	}
	s := d.String()
	for _, want := range []string{"--clients 2000", "--option randomizer=1", "--delta 1e-06", "--target-epsilon 8"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q lacks %q", s, want)
		}
	}
	if _, ok := DefaultsFor("nope"); ok {
		t.Error("a row for an unknown protocol")
	}
	c := DefaultConfig()
	if err := c.set("no-such-key", 1); err == nil {
		t.Error("set accepted an unknown key")
	}
	if err := c.set("rounds", 1.5); err == nil {
		t.Error("set accepted a non-integer number of rounds")
	}
}
