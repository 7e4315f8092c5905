package protocol

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
)

// OptionSpec documents one protocol-specific option (a key of Params.Extra,
// given on the command line as --option NAME=VALUE). Default and Range are
// human-readable text, not values: a default often depends on the round's
// shape ("157 (d/50)") and a range on other settings ("integer in [1, d]").
type OptionSpec struct {
	// Name is the key of Params.Extra, e.g. "k".
	Name string
	// Default says what the protocol does when the option is absent.
	Default string
	// Meaning says what the option sets, with the paper's symbol.
	Meaning string
	// Range gives the valid values.
	Range string
}

// Info documents a registered protocol for its users: where it comes from,
// which budgets it takes and every option it accepts. The constructor of a
// protocol accepts exactly the options listed in its Info (the package tests
// check it).
type Info struct {
	// Name is the registry name, e.g. "ss-double".
	Name string
	// Summary is a one-line description for listings; Describe falls back to
	// the summary given to Register when it is empty.
	Summary string
	// Paper names the paper and the algorithm or theorem implemented.
	Paper string
	// Options are the protocol's options in the order a user would set them;
	// nil for a protocol that takes none.
	Options []OptionSpec
	// Budgets says which privacy budgets the protocol takes and how it
	// spends them, e.g. "one public --epsilon (user level, eps/d per
	// coordinate)", or "none".
	Budgets string
}

// OptionNames returns the names of the options in Info order.
func (i Info) OptionNames() []string {
	names := make([]string, len(i.Options))
	for j, o := range i.Options {
		names[j] = o.Name
	}
	return names
}

// infos holds the Info of every protocol that registered one.
var infos = map[string]Info{}

// RegisterInfo documents the protocol registered under name; call it from the
// same init function as Register, after it. An empty info.Name is set to
// name. It panics on a protocol that is not registered, on a second Info for
// the same protocol, on a mismatched info.Name and on duplicate or unnamed
// options: programming errors caught by any test.
func RegisterInfo(name string, info Info) {
	if _, ok := registry[name]; !ok {
		panic("protocol: RegisterInfo for unregistered protocol " + name)
	}
	if _, dup := infos[name]; dup {
		panic("protocol: duplicate Info for " + name)
	}
	if info.Name == "" {
		info.Name = name
	}
	if info.Name != name {
		panic(fmt.Sprintf("protocol: Info named %q registered for %s", info.Name, name))
	}
	seen := map[string]bool{}
	for _, o := range info.Options {
		if o.Name == "" || seen[o.Name] {
			panic(fmt.Sprintf("protocol: Info of %s has an empty or duplicate option name %q", name, o.Name))
		}
		seen[o.Name] = true
	}
	info.Options = slices.Clone(info.Options)
	infos[name] = info
}

// Describe returns the documentation of the protocol registered under name:
// its Info, with Name and (if the Info leaves it empty) Summary filled in
// from the registry. A registered protocol without an Info gets just those
// two. An unknown name is an invalid-input error (checks.ErrInvalid), as in
// New. The caller owns the returned Options slice.
func Describe(name string) (Info, error) {
	reg, ok := registry[name]
	if !ok {
		return Info{}, checks.Invalidf("unknown protocol %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	info := infos[name]
	info.Name = name
	if info.Summary == "" {
		info.Summary = reg.summary
	}
	info.Options = slices.Clone(info.Options)
	return info, nil
}

// The texts below document the options shared by several protocols; each
// protocol's init assembles its Info from them and its own.

// Budget texts shared by several protocols.
const (
	budgetsPersonalizedCoord = "personalized: --epsilon, --eps-dist or --eps-file (user level, eps_i/d per coordinate)"
	budgetsPersonalizedDelta = "personalized: --epsilon, --eps-dist or --eps-file (user level, whole update); each client's delta is the round's share of --delta"
)

// flameOptionInfo documents the options of newFlameBase, shared by the FLAME
// protocols (ss-simple, ss-double, ss-topk).
func flameOptionInfo() []OptionSpec {
	return []OptionSpec{
		{Name: flameOptRandomizer, Default: "0 (R_{gamma,b})",
			Meaning: "the per-coordinate randomizer: 0 = R_{gamma,b} (FLAME Algorithm 1), 1 = Laplace on [0, 1] (FLAME's experiments)",
			Range:   "0 or 1"},
		{Name: flameOptLevels, Default: fmt.Sprint(flameDefaultLevels),
			Meaning: "b, the number of levels of R_{gamma,b} (outputs 0, ..., b)",
			Range:   "integer in [2, 1048576]; only with randomizer=0"},
		{Name: flameOptDeltaC, Default: "the round's share of --delta (0.01/n^1.1 without --delta)",
			Meaning: "delta_c, the central delta of one round (FLAME's evaluation uses 5e-6)",
			Range:   "(0, 1)"},
	}
}

// flameKInfo documents FLAME's option k (ss-double, ss-topk).
func flameKInfo(meaning string) OptionSpec {
	return OptionSpec{Name: flameOptK, Default: fmt.Sprintf("round(d/%d), at least 1 (157 for d = 7,850)", flameDefaultBetaInv),
		Meaning: meaning, Range: "integer in [1, d]"}
}

// apesDeltaSInfo, apesDeltaPrimeInfo, apesSecureInfo and apesHiddenInfo
// document the options of apesParse, shared by the APES family (apes,
// s-apes, e-apes, pldp, ldp-min, unis); meaning says what each does for the
// protocol at hand (some accept an option they do not use).
func apesDeltaSInfo(def, meaning string) OptionSpec {
	return OptionSpec{Name: "delta-s", Default: def, Meaning: meaning, Range: "(0, 1)"}
}

func apesDeltaPrimeInfo(meaning string) OptionSpec {
	return OptionSpec{Name: "delta-prime", Default: "half the round's share of --delta", Meaning: meaning, Range: "(0, 1)"}
}

func apesSecureInfo() OptionSpec {
	return OptionSpec{Name: "secure", Default: "0 (1 with --secure-noise)",
		Meaning: "1 draws every noise with the floating-point-safe sampler (as --secure-noise)", Range: "0 or 1"}
}

func apesHiddenInfo(meaning string) OptionSpec {
	return OptionSpec{Name: "hidden-budget", Default: "0", Meaning: meaning, Range: "0 or 1"}
}

// apesHiddenUsed is the meaning of hidden-budget for the protocols with an
// EoN bound (apes, s-apes).
const apesHiddenUsed = "1 accounts under APES's hidden-budget assumption (EoN numerical bound at the participants' budgets, labelled as such); 0 uses the worst-case public budget (standard DP)"

// apesUnused is the meaning of an option the APES family accepts but the
// protocol at hand does not use.
func apesUnused(why string) string {
	return "accepted for the APES family, no effect here (" + why + ")"
}
