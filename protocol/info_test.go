package protocol

import (
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

// optionValues are a valid and an invalid value of one option; the invalid
// one must be rejected when the protocol is built.
type optionValues struct{ good, bad float64 }

// optionTable is, for every registered protocol, parameters it can be built
// from (base, plus its required options) and a valid and an invalid value
// of every option it documents. TestOptionInfo checks that the table, the
// protocol's Info and the options its constructor accepts agree.
func optionTable() map[string]struct {
	base     Params
	required map[string]float64
	options  map[string]optionValues
} {
	flame := Params{Clip: 1, Epsilon: 78.5, Delta: 1e-5, Rounds: 10}
	apes := Params{Clip: 1, Delta: 1e-5, Rounds: 10}
	central := Params{Clip: 1, Epsilon: 2, Delta: 1e-5, Rounds: 10, SampleRate: 0.1}
	flameOpts := map[string]optionValues{
		"randomizer": {1, 2},
		"levels":     {3, 1},
		"delta-c":    {5e-6, 1},
	}
	with := func(m map[string]optionValues, extra map[string]optionValues) map[string]optionValues {
		out := maps.Clone(m)
		maps.Copy(out, extra)
		return out
	}
	apesOpts := map[string]optionValues{
		"delta-s":       {1e-8, 0},
		"delta-prime":   {1e-8, 1.5},
		"secure":        {1, 2},
		"hidden-budget": {1, 0.5},
	}
	type row = struct {
		base     Params
		required map[string]float64
		options  map[string]optionValues
	}
	return map[string]row{
		"nonprivate": {Params{}, nil, nil},
		"ifca":       {Params{}, nil, map[string]optionValues{"k": {3, 0}}},
		"ifca-dp": {Params{Layers: []int{2, 3}}, nil, map[string]optionValues{
			"k": {3, 1.5}, "nu": {0.5, 0}, "min-radius": {1e-3, -1}, "per-layer": {1, 2}}},
		"ldp-laplace":  {Params{Clip: 1}, nil, nil},
		"ldp-gaussian": {Params{Clip: 1}, nil, nil},
		"dp-central":   {central, nil, nil},
		"split-mix": {Params{Clip: 1, Epsilon: 2, Delta: 1e-5, Rounds: 10, SampleRate: 0.1, Population: 1000, Layers: []int{100}}, nil,
			map[string]optionValues{"slots": {200, 100}, "collude": {5, -1}, "shares": {40, 5}, "bits": {24, 7}, "scale": {1000, 0.5},
				"fast": {1, 2}, "sigma-bits": {30, 200}, "void-bits": {30, 5}, "rotate": {1, 2}}},
		"ss-simple": {flame, nil, flameOpts},
		"ss-double": {flame, nil, with(flameOpts, map[string]optionValues{"k": {157, 0}, "np": {333, 0.5}})},
		"ss-topk":   {flame, nil, with(flameOpts, map[string]optionValues{"k": {157, 1.5}, "np": {1000, -1}, "nu": {3.125, 0.5}})},
		"apes":      {apes, nil, apesOpts},
		"s-apes":    {apes, nil, with(apesOpts, map[string]optionValues{"b": {1570, 0}})},
		"e-apes":    {apes, nil, apesOpts},
		"pldp":      {apes, nil, apesOpts},
		"ldp-min":   {apes, map[string]float64{"min-epsilon": 392.5}, with(apesOpts, map[string]optionValues{"min-epsilon": {10, 0}})},
		"unis":      {apes, nil, apesOpts},
	}
}

// takesRE extracts the accepted option names from extraKeys's error.
var takesRE = regexp.MustCompile(`\(it takes(?:: ([^)]*)| none)\)$`)

// TestOptionInfo: every registered protocol documents exactly the options its
// constructor accepts. Each documented option is accepted alone (beside the
// protocol's required ones) at a valid value and rejected at an invalid one;
// an undocumented name is rejected as invalid input, and the set the
// constructor names in that error equals the documented set.
func TestOptionInfo(t *testing.T) {
	table := optionTable()
	if got, want := slices.Sorted(maps.Keys(table)), Names(); !slices.Equal(got, want) {
		t.Fatalf("option table covers %v, registry holds %v", got, want)
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			row := table[name]
			info, err := Describe(name)
			if err != nil {
				t.Fatal(err)
			}
			documented := info.OptionNames()
			if got := slices.Sorted(maps.Keys(row.options)); !slices.Equal(got, slices.Sorted(slices.Values(documented))) {
				t.Fatalf("test table has values for %v, Info documents %v", got, documented)
			}
			build := func(extra map[string]float64) error {
				p := row.base
				p.Extra = maps.Clone(row.required)
				if p.Extra == nil {
					p.Extra = map[string]float64{}
				}
				maps.Copy(p.Extra, extra)
				_, err := New(name, p)
				return err
			}
			if err := build(nil); err != nil {
				t.Fatalf("base parameters rejected: %v", err)
			}
			for _, opt := range documented {
				v := row.options[opt]
				if err := build(map[string]float64{opt: v.good}); err != nil {
					t.Errorf("documented option %s=%v rejected: %v", opt, v.good, err)
				}
				if err := build(map[string]float64{opt: v.bad}); err == nil || !errors.Is(err, checks.ErrInvalid) {
					t.Errorf("option %s=%v (outside %q) not rejected as invalid input: %v", opt, v.bad, info.Options[slices.Index(documented, opt)].Range, err)
				}
			}
			err = build(map[string]float64{"bogus": 1})
			if err == nil || !errors.Is(err, checks.ErrInvalid) {
				t.Fatalf("undocumented option bogus not rejected as invalid input: %v", err)
			}
			m := takesRE.FindStringSubmatch(err.Error())
			if m == nil {
				t.Fatalf("cannot read the accepted options from %q", err)
			}
			var accepted []string
			if m[1] != "" {
				accepted = strings.Split(m[1], ", ")
			}
			slices.Sort(accepted)
			if want := slices.Sorted(slices.Values(documented)); !slices.Equal(accepted, want) {
				t.Errorf("constructor accepts %v, Info documents %v", accepted, want)
			}
		})
	}
}

// TestDescribe: every registered protocol has a complete Info, and Describe
// rejects an unknown name as invalid input.
func TestDescribe(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			if _, ok := infos[name]; !ok {
				t.Fatalf("%s registers no Info (call RegisterInfo in its init)", name)
			}
			info, err := Describe(name)
			if err != nil {
				t.Fatal(err)
			}
			if info.Name != name || info.Summary == "" || info.Paper == "" || info.Budgets == "" {
				t.Errorf("incomplete Info: %+v", info)
			}
			if strings.Contains(info.Summary, "\n") || strings.Contains(info.Budgets, "\n") {
				t.Errorf("summary or budgets span several lines: %+v", info)
			}
			for _, o := range info.Options {
				if o.Name == "" || o.Default == "" || o.Meaning == "" || o.Range == "" {
					t.Errorf("incomplete option: %+v", o)
				}
			}
			if len(info.Options) > 0 {
				info.Options[0].Name = "changed"
				if again, _ := Describe(name); again.Options[0].Name == "changed" {
					t.Error("Describe returns the registry's Options slice")
				}
			}
		})
	}
	tests := []struct {
		name, budgets, option, def string
	}{
		{"nonprivate", "none", "", ""},
		{"dp-central", "none: --target-epsilon", "", ""},
		{"ss-simple", "one public --epsilon", "levels", "2"},
		{"ss-double", "one public --epsilon", "k", "round(d/50), at least 1 (157 for d = 7,850)"},
		{"apes", "--eps-dist", "hidden-budget", "0"},
		{"s-apes", "--eps-file", "b", "round(0.2 d), at least 1 (1,570 for d = 7,850)"},
		{"ldp-min", "--eps-dist", "min-epsilon", "min of the clients' budgets"},
		{"e-apes", "delta", "delta-s", "half the round's share of --delta"},
	}
	for _, tt := range tests {
		info, err := Describe(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(info.Budgets, tt.budgets) {
			t.Errorf("%s: budgets %q do not say %q", tt.name, info.Budgets, tt.budgets)
		}
		if tt.option == "" {
			continue
		}
		i := slices.Index(info.OptionNames(), tt.option)
		if i < 0 || info.Options[i].Default != tt.def {
			t.Errorf("%s: option %s: got %+v, want default %q", tt.name, tt.option, info.Options, tt.def)
		}
	}
	// The text states flamePadFailure.
	if info, _ := Describe("ss-double"); flamePadFailure != 1e-9 || !strings.Contains(info.Options[1].Default, "<= 1e-9)") {
		t.Errorf("ss-double: option np's default %q does not state flamePadFailure = %g", info.Options[1].Default, flamePadFailure)
	}
	if _, err := Describe("nope"); !errors.Is(err, checks.ErrInvalid) || !strings.Contains(err.Error(), `unknown protocol "nope"`) {
		t.Errorf("Describe(nope) = %v, want an invalid-input error", err)
	}
}

// TestRegisterInfoPanics: a duplicate, mismatched or unregistered Info is a
// programming error.
func TestRegisterInfoPanics(t *testing.T) {
	const tmp = "test-info-only"
	Register(tmp, "registered by TestRegisterInfoPanics", func(Params) (Protocol, error) { return NonPrivateFedAvg{}, nil })
	defer delete(registry, tmp)
	defer delete(infos, tmp)
	tests := []struct {
		name  string
		proto string
		info  Info
	}{
		{"duplicate", "apes", Info{}},
		{"unregistered", "no-such-protocol", Info{}},
		{"mismatched name", tmp, Info{Name: "apes"}},
		{"duplicate option", tmp, Info{Options: []OptionSpec{{Name: "k"}, {Name: "k"}}}},
		{"unnamed option", tmp, Info{Options: []OptionSpec{{Default: "1"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterInfo(%q, %+v) did not panic", tt.proto, tt.info)
				}
			}()
			RegisterInfo(tt.proto, tt.info)
		})
	}
	if _, ok := infos[tmp]; ok {
		t.Error("a rejected Info was registered")
	}
	RegisterInfo(tmp, Info{Options: []OptionSpec{{Name: "k"}}})
	if info, err := Describe(tmp); err != nil || info.Name != tmp || info.Summary != "registered by TestRegisterInfoPanics" {
		t.Errorf("Describe(%s) = %+v, %v; want the registry's name and summary filled in", tmp, info, err)
	}
}
