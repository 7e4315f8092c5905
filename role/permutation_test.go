package role

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/protocol"
)

// Permutation property tests: every group a shuffler forwards (each
// coordinate's values, the whole reports, the metadata list) must come out
// in a uniformly random order that does not depend on the order of arrival,
// on the senders' identities or on the order of any other group, for every
// registered protocol with a shuffler. Both shufflers are tested: the role
// (Shuffler.Close, which the simulation's faithful path and the deployment
// run) and protocol.Shuffle (the audits' and the seal tests' shuffler).
//
// The statistics, per protocol and group, over permTrials rounds of
// permSenders senders with fresh random sender names:
//
//   - the position of the first sender to arrive, and of the last, each as
//     a randomized probability integral transform u = (pos + U)/len, U
//     uniform on [0, 1), which is exactly uniform on [0, 1) when the group
//     is uniformly permuted whatever its length (padding makes lengths
//     vary); u is binned into permBins equal bins and tested against the
//     uniform distribution with Pearson's chi-square (permBins-1 degrees
//     of freedom);
//   - whether the first arrival precedes the second (Binomial(m, 1/2));
//   - independence between groups: the bins of the first arrival's u in
//     one group against those in the next (a permBins² table tested
//     against the uniform one): the same permutation applied to every
//     column, or a column order that follows the senders' names, links a
//     report's coordinates (or its epsilon to its values) and fails here
//     while each group alone looks uniform.
//
// Each test rejects a correct shuffler with probability at most permAlpha
// = 1e-7; with 166 tests over both shufflers, a correct implementation
// fails with probability below 1.7e-5 for a given seed (the seeds are fixed, so
// a run is reproducible). A shuffler that leaves a group in arrival order
// puts the first arrival at position 0 every time: the chi-square
// statistic is then in the thousands.
const (
	permSenders = 5
	permDim     = 3
	permTrials  = 3000
	permBins    = 8
	permAlpha   = 1e-7
)

// permParams are the parameters each registered protocol is built with for
// the permutation tests (a new protocol must be added here:
// TestPermutationCoversEveryProtocol).
var permParams = map[string]map[string]float64{
	"apes": nil, "dp-central": nil, "e-apes": nil, "ifca": {"k": 2}, "ifca-dp": {"k": 2},
	"ldp-gaussian": nil, "ldp-laplace": nil, "ldp-min": {"min-epsilon": 10}, "nonprivate": nil,
	"pldp": nil, "s-apes": nil, "split-mix": {"slots": 20}, "ss-double": {"k": 1}, "ss-simple": nil, "ss-topk": {"k": 1}, "unis": nil,
}

func TestPermutationCoversEveryProtocol(t *testing.T) {
	for _, name := range protocol.Names() {
		if _, ok := permParams[name]; !ok {
			t.Errorf("protocol %q has no permutation test: add it to permParams", name)
		}
	}
}

// permEncoder returns a function that encodes one fresh report of protocol
// p (clustered protocols through EncodeModel), as its clients would send it.
func permEncoder(t *testing.T, p protocol.Protocol, s protocol.Shape) func(r *rand.Rand) protocol.Report {
	t.Helper()
	b := protocol.Budget{Epsilon: 10, Delta: 1e-6}
	return func(r *rand.Rand) protocol.Report {
		update := make([]float64, s.Dim)
		for j := range update {
			update[j] = 0.2 * (r.Float64() - 0.5)
		}
		var rep protocol.Report
		var err error
		if cl, ok := p.(protocol.Clustered); ok {
			err = cl.EncodeModel(r, s, make([]float64, s.Dim), update, b, &rep)
		} else {
			err = p.Encode(r, s, update, b, &rep)
		}
		if err != nil {
			t.Fatalf("%s: encode: %v", p.Name(), err)
		}
		return rep
	}
}

// origin names where an output item came from: the arrival index of its
// sender, or -1 for a dummy.
type origin int

const dummyOrigin origin = -1

// trialGroups is one round's output: each group's items, in output order,
// by origin.
type trialGroups map[string][]origin

// shuffleFunc runs one round of the shuffler under test on reports (in
// arrival order), the senders named by names, and returns its groups.
type shuffleFunc func(t *testing.T, p protocol.Protocol, s protocol.Shape, names []string, reports []protocol.Report, pad, perm *rand.Rand) trialGroups

// roleShuffle runs Shuffler.Close with payloads that record their origin.
func roleShuffle(t *testing.T, p protocol.Protocol, s protocol.Shape, names []string, reports []protocol.Report, pad, perm *rand.Rand) trialGroups {
	sh, err := NewShuffler[origin](p, s, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range reports {
		plain := Messages(p.Mode(), &reports[i], nil)
		msgs := make([]Message[origin], len(plain))
		for k, m := range plain {
			msgs[k] = Message[origin]{Label: m.Label, Payload: origin(i)}
		}
		if _, err := sh.Accept(names[i], msgs); err != nil {
			t.Fatalf("%s: sender %d: %v", p.Name(), i, err)
		}
	}
	b, err := sh.Close(pad, perm, func(int, float64) (origin, error) { return dummyOrigin, nil })
	if err != nil {
		t.Fatalf("%s: close: %v", p.Name(), err)
	}
	g := trialGroups{}
	for j, col := range b.Columns {
		g["column "+strconv.Itoa(j)] = col
	}
	if b.Reports != nil {
		g["reports"] = b.Reports
	}
	if b.Meta != nil {
		g["meta"] = b.Meta
	}
	return g
}

// tagBase marks the values protocol.Shuffle is given: sender i's values
// are tagBase - i, far outside every randomizer's range, so that what is
// not a tag is a dummy.
const tagBase = -1e12

func tagOf(v float64) origin {
	i := tagBase - v
	if i >= 0 && i < permSenders && i == math.Trunc(i) {
		return origin(i)
	}
	return dummyOrigin
}

// protocolShuffle runs protocol.Shuffle on the reports with every value and
// metadata value replaced by its sender's tag (the shuffler reads only the
// coordinates, never the values).
func protocolShuffle(t *testing.T, p protocol.Protocol, s protocol.Shape, _ []string, reports []protocol.Report, pad, perm *rand.Rand) trialGroups {
	for i := range reports {
		for k := range reports[i].Values {
			reports[i].Values[k] = tagBase - float64(i)
		}
		for k := range reports[i].Meta {
			reports[i].Meta[k] = tagBase - float64(i)
		}
	}
	out, err := protocol.Shuffle(pad, perm, p, s, reports)
	if err != nil {
		t.Fatalf("%s: shuffle: %v", p.Name(), err)
	}
	g := trialGroups{}
	tags := func(vs []float64) []origin {
		o := make([]origin, len(vs))
		for k, v := range vs {
			o[k] = tagOf(v)
		}
		return o
	}
	for j, col := range out.Columns {
		g["column "+strconv.Itoa(j)] = tags(col)
	}
	if out.Reports != nil {
		o := make([]origin, len(out.Reports))
		for k, rep := range out.Reports {
			o[k] = tagOf(rep.Values[0])
		}
		g["reports"] = o
	}
	if out.Meta != nil {
		g["meta"] = tags(out.Meta)
	}
	return g
}

// groupStats accumulates one group's statistics over the trials.
type groupStats struct {
	first, last [permBins]int
	pairs       int // trials with at least two real items
	before      int // ... in which the first arrival precedes the second
}

// pit returns the bin of the randomized probability integral transform of
// the item of origin o in g (-1 if o is absent).
func pit(g []origin, o origin, u float64) int {
	pos := slices.Index(g, o)
	if pos < 0 {
		return -1
	}
	return int((float64(pos) + u) / float64(len(g)) * permBins)
}

// firstTwo returns the two earliest arrivals among g's real items (-1 when
// there are fewer).
func firstTwo(g []origin) (a, b origin) {
	a, b = dummyOrigin, dummyOrigin
	for _, o := range g {
		switch {
		case o == dummyOrigin:
		case a == dummyOrigin || o < a:
			a, b = o, a
		case b == dummyOrigin || o < b:
			b = o
		}
	}
	return a, b
}

// firstOccurrences reduces a group in which every sender has several items
// (split-mix's shares of a coordinate) to the order of each sender's first
// item, dummies left out. Under a uniform permutation of the multiset that
// order is a uniform permutation of the senders (exchangeability), so the
// statistics above apply to it; a shuffler that leaves the shares in
// arrival order leaves it in arrival order.
func firstOccurrences(g []origin) []origin {
	var out []origin
	seen := map[origin]bool{}
	for _, o := range g {
		if o != dummyOrigin && !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	return out
}

func lastArrival(g []origin) origin {
	l := dummyOrigin
	for _, o := range g {
		l = max(l, o)
	}
	return l
}

// chiSquareUniform returns Pearson's statistic of counts against the
// uniform distribution and its critical value at permAlpha.
func chiSquareUniform(counts []int) (stat, crit float64) {
	var n int
	for _, c := range counts {
		n += c
	}
	e := float64(n) / float64(len(counts))
	for _, c := range counts {
		stat += (float64(c) - e) * (float64(c) - e) / e
	}
	return stat, distuv.ChiSquared{K: float64(len(counts) - 1)}.Quantile(1 - permAlpha)
}

// checkPermutations runs permTrials rounds of protocol name through the
// shuffler, applies the tests of the file's comment to every group and
// returns the failed tests (t fails only on errors of the setup).
func checkPermutations(t *testing.T, name string, shuffle shuffleFunc, seed uint64) (failures []string) {
	p, err := protocol.New(name, protocol.Params{Clip: 0.1, Delta: 1e-6, Epsilon: 10, Rounds: 1, SampleRate: 1, Extra: permParams[name],
		Layers: []int{permDim}, Population: permSenders})
	if err != nil {
		t.Fatal(err)
	}
	s := protocol.Shape{Round: 1, Dim: permDim, Population: permSenders, Participants: permSenders}
	encode := permEncoder(t, p, s)
	r := rng.Stream(seed, 0x9e4)
	stats := map[string]*groupStats{}
	joint := map[link]*[permBins * permBins]int{}
	var groupNames []string
	for trial := range permTrials {
		names := make([]string, permSenders)
		reports := make([]protocol.Report, permSenders)
		for i := range reports {
			names[i] = strconv.FormatUint(r.Uint64(), 36)
			reports[i] = encode(r)
		}
		g := shuffle(t, p, s, names, reports, rng.Stream(seed, 0x9ad, uint64(trial)), rng.Stream(seed, 0x9e5, uint64(trial)))
		if mv, ok := p.(protocol.MultiValued); ok && mv.ValuesPerCoordinate() > 1 {
			for k, grp := range g {
				g[k] = firstOccurrences(grp)
			}
		}
		if trial == 0 {
			for k := range g {
				groupNames = append(groupNames, k)
			}
			slices.Sort(groupNames)
		}
		if p.Mode() == protocol.NoShuffle {
			// No shuffler: the documented order is the arrival order.
			for k, grp := range g {
				for pos, o := range grp {
					if o != origin(pos) {
						t.Fatalf("%s (no shuffle): %s position %d holds sender %d, want arrival order", name, k, pos, o)
					}
				}
			}
			continue
		}
		firstBin := map[string]int{}
		for _, k := range groupNames {
			grp, ok := g[k]
			if !ok {
				t.Fatalf("%s: trial %d has no group %s", name, trial, k)
			}
			st := stats[k]
			if st == nil {
				st = &groupStats{}
				stats[k] = st
			}
			a, b := firstTwo(grp)
			if a == dummyOrigin {
				continue
			}
			fb := pit(grp, a, r.Float64())
			firstBin[k] = fb
			st.first[fb]++
			st.last[pit(grp, lastArrival(grp), r.Float64())]++
			if b != dummyOrigin {
				st.pairs++
				if slices.Index(grp, a) < slices.Index(grp, b) {
					st.before++
				}
			}
		}
		for i := 1; i < len(groupNames); i++ {
			ka, kb := groupNames[i-1], groupNames[i]
			ba, oka := firstBin[ka]
			bb, okb := firstBin[kb]
			if !oka || !okb {
				continue
			}
			l := link{ka, kb}
			if joint[l] == nil {
				joint[l] = new([permBins * permBins]int)
			}
			joint[l][ba*permBins+bb]++
		}
	}
	if p.Mode() == protocol.NoShuffle {
		return nil
	}
	if len(stats) == 0 {
		return []string{name + ": the shuffler forwarded no group"}
	}
	failures = permVerdicts(t, name, groupNames, stats, joint)
	t.Logf("%s (%s): groups %v tested over %d rounds", name, p.Mode(), groupNames, permTrials)
	return failures
}

// link is a pair of adjacent groups whose first arrivals' joint
// position is tested.
type link struct{ a, b string }

// permVerdicts applies the file's tests to the collected positions and
// returns the failed ones.
func permVerdicts(t *testing.T, name string, groupNames []string, stats map[string]*groupStats, joint map[link]*[permBins * permBins]int) (failures []string) {
	t.Helper()
	zCrit := distuv.UnitNormal.Quantile(1 - permAlpha/2)
	for _, k := range groupNames {
		st := stats[k]
		for _, c := range []struct {
			what   string
			counts []int
		}{{"first arrival", st.first[:]}, {"last arrival", st.last[:]}} {
			if n := sum(c.counts); n < permTrials/2 {
				t.Fatalf("%s %s: only %d of %d trials had a real item", name, k, n, permTrials)
			}
			if stat, crit := chiSquareUniform(c.counts); stat > crit {
				failures = append(failures, fmt.Sprintf("%s %s: the %s's position is not uniform: chi-square %.1f > %.1f (df %d, alpha %g); bins %v",
					name, k, c.what, stat, crit, permBins-1, permAlpha, c.counts))
			}
		}
		if st.pairs > 0 {
			z := (float64(st.before) - float64(st.pairs)/2) / math.Sqrt(float64(st.pairs)/4)
			if math.Abs(z) > zCrit {
				failures = append(failures, fmt.Sprintf("%s %s: the first arrival precedes the second in %d of %d rounds (z = %.1f, alpha %g)",
					name, k, st.before, st.pairs, z, permAlpha))
			}
		}
	}
	for l, tab := range joint {
		if n := sum(tab[:]); n < permTrials/2 {
			continue // too few rounds with the first arrival in both groups (sparse reports)
		}
		if stat, crit := chiSquareUniform(tab[:]); stat > crit {
			failures = append(failures, fmt.Sprintf("%s: the joint order of %s and %s is not uniform (the groups are linked): chi-square %.1f > %.1f (df %d, alpha %g)",
				name, l.a, l.b, stat, crit, permBins*permBins-1, permAlpha))
		}
	}
	return failures
}

func sum(xs []int) int {
	var n int
	for _, x := range xs {
		n += x
	}
	return n
}

// TestShufflerPermutationEveryProtocol: the role's shuffler (Close) permutes
// every group of every protocol uniformly and independently.
func TestShufflerPermutationEveryProtocol(t *testing.T) {
	for i, name := range protocol.Names() {
		t.Run(name, func(t *testing.T) {
			for _, f := range checkPermutations(t, name, roleShuffle, uint64(i)+1) {
				t.Error(f)
			}
		})
	}
}

// TestProtocolShufflePermutationEveryProtocol: the same for protocol.Shuffle.
func TestProtocolShufflePermutationEveryProtocol(t *testing.T) {
	for i, name := range protocol.Names() {
		t.Run(name, func(t *testing.T) {
			for _, f := range checkPermutations(t, name, protocolShuffle, uint64(i)+101) {
				t.Error(f)
			}
		})
	}
}

// TestPermutationTestRejects: the statistics catch the faults they are
// meant for, shown on doctored outputs of a correct shuffler (arrival
// order, one permutation for every group, a fixed rotation).
func TestPermutationTestRejects(t *testing.T) {
	faults := []struct {
		name   string
		doctor func(g trialGroups)
	}{
		{"arrival order", func(g trialGroups) {
			for _, grp := range g {
				slices.SortStableFunc(grp, func(a, b origin) int {
					if a == dummyOrigin || b == dummyOrigin {
						return 0
					}
					return int(a - b)
				})
			}
		}},
		{"one permutation for every group", func(g trialGroups) {
			for _, grp := range g {
				copy(grp, g["column 0"])
			}
		}},
		{"reversed arrival order", func(g trialGroups) {
			for _, grp := range g {
				slices.Sort(grp)
				slices.Reverse(grp)
			}
		}},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			doctored := func(t *testing.T, p protocol.Protocol, s protocol.Shape, names []string, reports []protocol.Report, pad, perm *rand.Rand) trialGroups {
				g := roleShuffle(t, p, s, names, reports, pad, perm)
				f.doctor(g)
				return g
			}
			failures := checkPermutations(t, "apes", doctored, 7)
			if len(failures) == 0 {
				t.Fatalf("fault %q not detected", f.name)
			}
			t.Logf("detected: %s (and %d more)", failures[0], len(failures)-1)
		})
	}
}
