package round

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
)

// DefaultProtocol is the protocol of `shufflefl run` without --protocol:
// FLAME's SS-Simple with the Laplace randomizer, calibrated to a cumulative
// central epsilon of 8 at delta 1e-6 (its row of the defaults table).
const DefaultProtocol = "ss-simple"

// Setting is one per-protocol default: the value a setting takes when the
// user gives neither it nor any setting of Unless. Key is the flag name
// (the YAML key of Config), or "option NAME" for a protocol option.
type Setting struct {
	Key   string
	Value float64
	// Unless lists the settings whose presence means the user chose
	// otherwise: --target-epsilon is not defaulted when --epsilon is given
	// (the local budget is then the user's), the Laplace randomizer is not
	// defaulted when the R_{gamma,b} option levels is given.
	Unless []string
}

// ProtocolDefaults are the settings of a protocol's runs that differ from
// DefaultConfig's, chosen from the measured accuracy-against-epsilon
// frontier (`shufflefl experiment frontier`, docs/RESULTS.md).
type ProtocolDefaults struct {
	Protocol string
	Settings []Setting
	// Why says where the values come from.
	Why string
}

// Keys of the budget settings: giving any of them means the user chose
// the local budgets, so no target epsilon is defaulted.
var budgetKeys = []string{"epsilon", "eps-dist", "eps-file", "eps-scale"}

// private is the part of every private protocol's defaults that states the
// guarantee: delta 1e-6 for the whole run and, unless the user sets the
// budgets, the local budgets calibrated to a cumulative central epsilon of 8.
func private(target float64) []Setting {
	return []Setting{
		{Key: "delta", Value: 1e-6},
		{Key: "target-epsilon", Value: target, Unless: budgetKeys},
	}
}

// shuffleFL are the training settings of the protocols whose noise is
// averaged over many reporters (every shuffle-model protocol and the local
// baselines): 2,000 clients of 30 samples, 10 rounds of 10 local epochs at
// lr 0.2. Fewer rounds with more local work spend the budget on fewer,
// larger releases, and the randomizer's cost grows with clients x rounds x
// d. Measured for ss-simple at (8, 1e-6) on Fashion-MNIST (docs/RESULTS.md):
// 2,000 clients beat 3,000 and 6,000 (more data per client outweighs the
// weaker amplification), 10 rounds of 10 epochs beat 30 rounds of 5, and
// Laplace beats R_{gamma,2} (72.0% against 71.6% at 6,000 clients, with
// less CPU time).
func shuffleFL(extra ...Setting) []Setting {
	s := []Setting{
		{Key: "clients", Value: 2000},
		{Key: "rounds", Value: 10},
		{Key: "local-epochs", Value: 10, Unless: []string{"local-steps"}},
		{Key: "lr", Value: 0.2},
	}
	return append(s, extra...)
}

// flameLaplace is FLAME's randomizer choice in its experiments, the one
// default of the FLAME protocols across run, experiment and bound (bound's
// --mech laplace): the Laplace mechanism on [0, 1] (option randomizer=1).
// R_{gamma,b} (randomizer=0, or any levels=B) stays available.
var flameLaplace = Setting{Key: "option randomizer", Value: 1, Unless: []string{"option levels"}}

// clusteredFL are the settings of experiment dprivacy-rotated, which
// measured the clustered protocols (docs/DPRIVACY.md): 200 clients of 50
// images, 50 per round, 20 rounds of one local epoch at lr 0.05.
func clusteredFL() []Setting {
	return []Setting{
		{Key: "clients", Value: 200},
		{Key: "clients-per-round", Value: 50},
		{Key: "samples-per-client", Value: 50},
		{Key: "rounds", Value: 20},
		{Key: "local-epochs", Value: 1, Unless: []string{"local-steps"}},
		{Key: "lr", Value: 0.05},
	}
}

const clusteredWhy = "the settings of experiment dprivacy-rotated: with --partition rotated --groups 2 --model mlp on Fashion-MNIST, k = 2 models reach 73.0% against 64.6% with one (docs/DPRIVACY.md)"

// defaultsTable is the per-protocol defaults table. A protocol without a
// row uses DefaultConfig's settings.
var defaultsTable = []ProtocolDefaults{
	{Protocol: "nonprivate", Why: "the non-private ceiling: FedAvg of 1,000 clients, 30 rounds of 5 local epochs (about 82% on Fashion-MNIST)"},
	{Protocol: "ss-simple", Settings: append(shuffleFL(flameLaplace), private(8)...),
		Why: "measured: 76-78% on Fashion-MNIST at cumulative (8, 1e-6) in about 16 s of CPU time; clip 0.1 ties 0.05 and beats 0.2 (docs/RESULTS.md)"},
	{Protocol: "ss-double", Settings: append(shuffleFL(flameLaplace, Setting{Key: "clip", Value: 0.02}), private(8)...),
		Why: "the settings of ss-simple with clip 0.02: 69.2% at (8, 1e-6) under the sound accounting, against 66.2% at clips 0.01 and 0.05 and 56.8% at 0.1 (docs/RESULTS.md, frontier)"},
	{Protocol: "ss-topk", Settings: append(shuffleFL(flameLaplace), private(8)...),
		Why: "the settings of ss-simple: 48.0% at (8, 1e-6) with clip 0.1, against 28.0% at 0.05 and 37.0% at 0.2 (docs/RESULTS.md, frontier)"},
	{Protocol: "apes", Settings: append(shuffleFL(), private(8)...), Why: "the settings of ss-simple: 76.9% at (8, 1e-6) with clip 0.1, against 76.4% at 0.05 and 76.1% at 0.2 (docs/RESULTS.md, frontier)"},
	{Protocol: "s-apes", Settings: append(shuffleFL(Setting{Key: "clip", Value: 0.05}), private(8)...),
		Why: "the settings of ss-simple with clip 0.05: 66.5% at (8, 1e-6) against 53.6% at clip 0.1 (docs/RESULTS.md, frontier)"},
	{Protocol: "unis", Settings: append(shuffleFL(), private(8)...), Why: "the settings of ss-simple: 77.9% at (8, 1e-6) with clip 0.1, against 77.4% at 0.05 and 75.4% at 0.2 (docs/RESULTS.md, frontier)"},
	{Protocol: "e-apes", Settings: append(shuffleFL(Setting{Key: "clip", Value: 1}), private(8)...), Why: "the settings of ss-simple; E-APES clips the L2 norm: C = 1 gives 35.6% at (8, 1e-6), C = 0.3 32.7% (docs/RESULTS.md, frontier)"},
	{Protocol: "ldp-laplace", Settings: append(shuffleFL(), private(8)...), Why: "the settings of the shuffle protocols, for a like-for-like comparison"},
	{Protocol: "ldp-gaussian", Settings: append(shuffleFL(), private(8)...), Why: "the settings of the shuffle protocols, for a like-for-like comparison"},
	{Protocol: "pldp", Settings: append(shuffleFL(), private(8)...), Why: "the settings of the shuffle protocols, for a like-for-like comparison"},
	{Protocol: "ldp-min", Settings: append(shuffleFL(), private(8)...), Why: "the settings of the shuffle protocols, for a like-for-like comparison"},
	{Protocol: "ifca", Settings: clusteredFL(), Why: clusteredWhy},
	{Protocol: "ifca-dp", Settings: clusteredFL(), Why: clusteredWhy + "; nu defaults to the paper's 5 (a d-privacy level of n/5 per participation, no (epsilon, delta) claim)"},
	{Protocol: "dp-central", Settings: append([]Setting{
		{Key: "clients-per-round", Value: 100, Unless: []string{"clients"}},
		{Key: "clip", Value: 1},
	}, private(8)...), Why: "the trusted-analyzer reference (DP-FedAvg): L2 clip 1 (clip 0.1 caps it near 71%), Poisson sampling of 10% of the 1,000 clients each round, 30 rounds of 5 local epochs"},
	{Protocol: "split-mix", Settings: append([]Setting{
		{Key: "clients-per-round", Value: 100, Unless: []string{"clients"}},
		{Key: "clip", Value: 1},
	}, private(8)...), Why: "dp-central's settings (its untrusted-analyzer counterpart): L2 clip 1, Poisson sampling of 10% of the 1,000 clients each round, 30 rounds of 5 local epochs"},
}

// DefaultsFor returns the per-protocol defaults of name; ok is false for a
// protocol without a row (it runs with DefaultConfig's settings).
func DefaultsFor(name string) (ProtocolDefaults, bool) {
	for _, d := range defaultsTable {
		if d.Protocol == name {
			return d, true
		}
	}
	return ProtocolDefaults{}, false
}

// RunDefaults is the configuration of `shufflefl run` without flags:
// DefaultConfig with DefaultProtocol and its defaults.
func RunDefaults() Config {
	c := DefaultConfig()
	c.Protocol = DefaultProtocol
	if err := ApplyDefaults(&c, func(string) bool { return false }); err != nil {
		panic(err) // the table is checked by the package's tests
	}
	return c
}

// ApplyDefaults sets c.Protocol's per-protocol defaults on every setting the
// user did not give. given reports whether a key was given (a flag name, or
// "option NAME" for a protocol option). Settings already given are never
// changed, so a run's resolved config.yaml, which gives every key, reruns
// exactly. It returns an error wrapping checks.ErrInvalid only for a
// malformed table entry.
func ApplyDefaults(c *Config, given func(key string) bool) error {
	d, ok := DefaultsFor(c.Protocol)
	if !ok {
		return nil
	}
	for _, s := range d.Settings {
		if given(s.Key) || slices.ContainsFunc(s.Unless, given) {
			continue
		}
		if err := c.set(s.Key, s.Value); err != nil {
			return fmt.Errorf("defaults of %s: %w", d.Protocol, err)
		}
	}
	return nil
}

// set assigns one numeric setting by its flag name.
func (c *Config) set(key string, v float64) error {
	if name, ok := strings.CutPrefix(key, "option "); ok {
		if c.Options == nil {
			c.Options = map[string]float64{}
		}
		c.Options[name] = v
		return nil
	}
	ints := map[string]*int{
		"clients": &c.Clients, "clients-per-round": &c.ClientsPerRound, "samples-per-client": &c.SamplesPerClient,
		"rounds": &c.Rounds, "local-epochs": &c.LocalEpochs, "local-steps": &c.LocalSteps, "batch": &c.Batch,
	}
	floats := map[string]*float64{
		"lr": &c.LR, "server-lr": &c.ServerLR, "mu": &c.Mu, "clip": &c.Clip, "epsilon": &c.Epsilon,
		"delta": &c.Delta, "target-epsilon": &c.TargetEpsilon,
	}
	if p, ok := ints[key]; ok {
		if v != float64(int(v)) {
			return checks.Invalidf("%s must be an integer, got %v", key, v)
		}
		*p = int(v)
		return nil
	}
	if p, ok := floats[key]; ok {
		*p = v
		return nil
	}
	return checks.Invalidf("no per-protocol default can be set for %q", key)
}

// String renders the defaults as the flags they stand for, e.g.
// "--clients 6000 --rounds 10 --option randomizer=1".
func (d ProtocolDefaults) String() string {
	parts := make([]string, 0, len(d.Settings))
	for _, s := range d.Settings {
		parts = append(parts, s.Flag())
	}
	return strings.Join(parts, " ")
}

// Flag renders the setting as on the command line: "--rounds 10" or
// "--option randomizer=1".
func (s Setting) Flag() string {
	v := strconv.FormatFloat(s.Value, 'g', -1, 64)
	if name, ok := strings.CutPrefix(s.Key, "option "); ok {
		return "--option " + name + "=" + v
	}
	return "--" + s.Key + " " + v
}

// FlagName renders a key as the flag that gives it: "--rounds" or
// "--option levels=...".
func FlagName(key string) string {
	if name, ok := strings.CutPrefix(key, "option "); ok {
		return "--option " + name + "=..."
	}
	return "--" + key
}
