package protocol

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/privacy/account"
)

// A round's statement rests on what the analyzer really receives: in a
// per-coordinate shuffle, every coordinate's multiset must hold the values
// the accountant counted (ss-simple's n reports, SS-Double's n_p padded
// values, split-mix's K slots of m shares). A client that submits part of
// a report, or a value its randomizer cannot output, would leave some
// coordinate with fewer blanket values than the statement assumes, and
// overstate the honest clients' amplification. Two independent defences
// stop it:
//
//   - the shuffler, which sees labels but never values, refuses any
//     submission whose labels are not the Layout of a complete report
//     (role.Shuffler.Check);
//   - the analyzer, which sees values but never senders, drops values
//     outside the randomizer's Range and states the round from the counts
//     it really opened (Counts): the smallest coordinate count governs.
//
// Each defence alone keeps the statement sound; the tests disable one at a
// time.

// Layout is the public shape of one client's complete report in a round:
// what the shuffler can check without reading a value.
type Layout struct {
	// Coords is the number of distinct coordinates a complete report
	// labels: the dimension for a dense report, k for SS-Double, k·l for
	// SS-Topk. In whole-report and unshuffled modes it is the number of
	// values inside the one whole report (a dense report: the dimension).
	Coords int
	// PerCoord is the number of values the report carries for each
	// labelled coordinate (split-mix's m shares; 1 otherwise).
	PerCoord int
	// Meta is the number of metadata values (APES's epsilon: 1).
	Meta int
}

// Laid is implemented by every protocol of this package: the Layout of a
// complete report of a round of shape s. The shuffler refuses any other
// submission (role.Shuffler.Check); the analyzer refuses a whole report of
// another length.
type Laid interface {
	Layout(s Shape) (Layout, error)
}

// Range is the set of values a randomizer (and the shuffler's padding)
// can output for one coordinate: [Lo, Hi], and only integers when Integer
// is set. The zero Range's Contains accepts every finite value: a
// Laplace or Gaussian output has no bound.
type Range struct {
	Lo, Hi  float64
	Integer bool
	bounded bool
}

// Unbounded is the Range of a mechanism whose outputs are any finite real.
func Unbounded() Range { return Range{Lo: math.Inf(-1), Hi: math.Inf(1)} }

// Interval is the Range [lo, hi] (integers only if integer).
func Interval(lo, hi float64, integer bool) Range {
	return Range{Lo: lo, Hi: hi, Integer: integer, bounded: true}
}

// Bounded says whether the range is narrower than the finite reals.
func (r Range) Bounded() bool { return r.bounded }

// Contains says whether v is a possible output: finite, and within the
// interval (an integer when the range is integral) if the range is bounded.
func (r Range) Contains(v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	if !r.bounded {
		return true
	}
	return v >= r.Lo && v <= r.Hi && (!r.Integer || v == math.Trunc(v))
}

// String writes the range for error messages.
func (r Range) String() string {
	if !r.bounded {
		return "finite reals"
	}
	if r.Integer {
		return fmt.Sprintf("integers in [%v, %v]", r.Lo, r.Hi)
	}
	return fmt.Sprintf("[%v, %v]", r.Lo, r.Hi)
}

// Counts is what a round's statement rests on that the analyzer can count
// in what it opened.
type Counts struct {
	// PerColumn is the number of values every coordinate must hold for
	// Account(s, ...) to hold (per-coordinate mode); 0 when the statement
	// does not rest on per-coordinate counts.
	PerColumn int64
	// PerReporter, when positive, says that the statement may be made
	// again for fewer reporters: a coordinate holding c < PerColumn values
	// supports floor(c/PerReporter) reporters (protocols without padding,
	// whose coordinates hold PerReporter values per reporter). Zero means
	// the statement rests on padding (SS-Double's n_p, split-mix's K
	// slots), and a short coordinate voids the round.
	PerReporter int64
	// Reports is the number of whole reports the statement rests on
	// (whole-report mode); 0 when it does not rest on them.
	Reports int64
	// Values is the range of every opened coordinate value (reports' and
	// dummies'); the analyzer drops a value outside it.
	Values Range
}

// Counted is implemented by protocols whose round statement rests on the
// number of values the analyzer receives (every shuffled protocol): the
// Counts a round of shape s must show for its statement.
type Counted interface {
	Counts(s Shape) (Counts, error)
}

// Restater is implemented by padded protocols whose statement can be
// made for coordinates holding fewer values than their padding: the
// round's statement when every coordinate holds at least perColumn
// values (the smallest count opened). An error means no statement can be
// made for so few, and the round is void.
type Restater interface {
	AccountShort(s Shape, budgets []Budget, perColumn int64) (Privacy, error)
}

// denseLayout is the layout of a dense report of dimension s.Dim with
// meta metadata values.
func denseLayout(s Shape, meta int) (Layout, error) {
	if s.Dim < 1 {
		return Layout{}, fmt.Errorf("layout of a round of dimension %d", s.Dim)
	}
	return Layout{Coords: s.Dim, PerCoord: 1, Meta: meta}, nil
}

// unpadded are the Counts of a per-coordinate protocol without padding:
// each of the s.Participants reporters puts per values in every
// coordinate.
func unpadded(s Shape, per int64, r Range) Counts {
	return Counts{PerColumn: int64(s.Participants) * per, PerReporter: per, Values: r}
}

// valueRange is the output range of a FLAME codec: R_{gamma,b} outputs
// integers in {0, ..., b} (its blanket too); the Laplace mechanism on
// [0, 1] any finite real.
func (f flameBase) valueRange() Range {
	if f.laplace {
		return Unbounded()
	}
	return Interval(0, float64(f.levels), true)
}

// Layout implements Laid: every coordinate once.
func (SSSimple) Layout(s Shape) (Layout, error) { return denseLayout(s, 0) }

// Counts implements Counted: FLAME Theorem 1 counts the n reports of every
// coordinate.
func (p SSSimple) Counts(s Shape) (Counts, error) { return unpadded(s, 1, p.valueRange()), nil }

// Layout implements Laid: k distinct coordinates (K_r^beta).
func (p SSDouble) Layout(s Shape) (Layout, error) {
	k, _, err := p.Plan(s)
	if err != nil {
		return Layout{}, err
	}
	return Layout{Coords: k, PerCoord: 1}, nil
}

// Counts implements Counted: the statement rests on n_p values in every
// coordinate (reports and the shuffler's blanket dummies).
func (p SSDouble) Counts(s Shape) (Counts, error) {
	_, np, err := p.Plan(s)
	if err != nil {
		return Counts{}, err
	}
	return Counts{PerColumn: int64(np), Values: p.valueRange()}, nil
}

// AccountShort implements Restater: each coordinate is a shuffle of the
// perColumn values it holds (reports and blanket dummies alike are
// eps_l/k-LDP outputs), which is the statement for n_p = perColumn. When
// that is below what Plan accepts, the round gets no shuffle credit: its
// statement is the local one, eps_l (k coordinates of eps_l/k each,
// sampled independently of the data).
func (p SSDouble) AccountShort(s Shape, budgets []Budget, perColumn int64) (Privacy, error) {
	if perColumn < 1 || perColumn > math.MaxInt32 {
		return Privacy{}, fmt.Errorf("ss-double: %d values per coordinate", perColumn)
	}
	q := p
	q.np = int(perColumn)
	if priv, err := q.Account(s, budgets); err == nil {
		return priv, nil
	}
	k, _, err := p.Plan(s)
	if err != nil {
		return Privacy{}, err
	}
	planned, err := p.Account(s, budgets)
	if err != nil {
		return Privacy{}, err
	}
	return localOnly(planned, k, p.eps, fmt.Sprintf("local only: a coordinate holds %d values, too few for the shuffle bound", perColumn)), nil
}

// AccountShort implements Restater: the statement for n_p = perColumn, or
// when Plan refuses it (n_p below the participants) the local one
// (topkFallback).
func (p SSTopk) AccountShort(s Shape, budgets []Budget, perColumn int64) (Privacy, error) {
	if perColumn < 1 || perColumn > math.MaxInt32 {
		return Privacy{}, fmt.Errorf("ss-topk: %d values per coordinate", perColumn)
	}
	q := p
	q.np = int(perColumn)
	if priv, err := q.Account(s, budgets); err == nil {
		return priv, nil
	}
	k, _, _, _, err := p.Plan(s)
	if err != nil {
		return Privacy{}, err
	}
	planned, err := p.Account(s, budgets)
	if err != nil {
		return Privacy{}, err
	}
	// One generic component: the fallback is a bound on the whole
	// release, not a composition of 2k equal parts.
	return localOnly(planned, 1, p.topkFallback(k, s.Dim), fmt.Sprintf("local only: a coordinate holds %d values, too few for the shuffle bound", perColumn)), nil
}

// localOnly is a FLAME round's statement without shuffle credit: the
// planned statement's local figures, central epsilon eps (delta 0), and
// dims pure components of eps/dims. For SS-Double (dims = k) that
// decomposition holds: every released value is eps_l/k-LDP and the
// sampled coordinates do not depend on the data, so the release is a
// mixture of k-fold compositions of eps_l/k-DP mechanisms, each dominated
// by the k-fold composition of randomized response at eps_l/k, and by
// joint convexity of the hockey-stick divergence so is the mixture.
func localOnly(planned Privacy, dims int, eps float64, bound string) Privacy {
	per := eps / float64(dims)
	return Privacy{Private: true, LocalEpsilon: planned.LocalEpsilon, LocalCoordEpsilon: planned.LocalCoordEpsilon, LocalDelta: planned.LocalDelta,
		CentralEpsilon: eps, CentralCoordEpsilon: per, Bound: bound,
		Components: []account.Component{{Epsilon: per, Count: dims}}}
}

// Layout implements Laid: k top coordinates and k(l-1) dummy slots.
func (p SSTopk) Layout(s Shape) (Layout, error) {
	k, _, l, _, err := p.Plan(s)
	if err != nil {
		return Layout{}, err
	}
	return Layout{Coords: k * l, PerCoord: 1}, nil
}

// Counts implements Counted: n_p values in every coordinate.
func (p SSTopk) Counts(s Shape) (Counts, error) {
	_, np, _, _, err := p.Plan(s)
	if err != nil {
		return Counts{}, err
	}
	return Counts{PerColumn: int64(np), Values: p.valueRange()}, nil
}

// Layout implements Laid: every coordinate once and the per-dimension
// epsilon as metadata.
func (APES) Layout(s Shape) (Layout, error) { return denseLayout(s, 1) }

// Counts implements Counted: the n Clip-Laplace outputs of every
// coordinate, in [-C, C].
func (m APES) Counts(s Shape) (Counts, error) {
	return unpadded(s, 1, Interval(-m.clip, m.clip, false)), nil
}

// Layout implements Laid: every coordinate once and the per-dimension
// epsilon as metadata (the d-b padded coordinates are CLap(0) draws).
func (SAPES) Layout(s Shape) (Layout, error) { return denseLayout(s, 1) }

// Counts implements Counted: the n Clip-Laplace outputs of every
// coordinate, in [-C, C].
func (m SAPES) Counts(s Shape) (Counts, error) {
	return unpadded(s, 1, Interval(-m.clip, m.clip, false)), nil
}

// Layout implements Laid: every coordinate once.
func (UniS) Layout(s Shape) (Layout, error) { return denseLayout(s, 0) }

// Counts implements Counted: the n Laplace outputs of every coordinate.
func (UniS) Counts(s Shape) (Counts, error) { return unpadded(s, 1, Unbounded()), nil }

// Layout implements Laid: every coordinate's m shares (one value on the
// fast path).
func (sm SplitMix) Layout(s Shape) (Layout, error) {
	if s.Dim != sm.dim {
		return Layout{}, fmt.Errorf("split-mix was built for dimension %d, the round has %d", sm.dim, s.Dim)
	}
	return Layout{Coords: s.Dim, PerCoord: sm.perSlot()}, nil
}

// Counts implements Counted: the noise rests on the K slots (reporters
// and the shuffler's dummies), m shares each, every value an integer in
// [0, q-1].
func (sm SplitMix) Counts(s Shape) (Counts, error) {
	return Counts{PerColumn: int64(sm.slots) * int64(sm.perSlot()), Values: Interval(0, float64(sm.mod-1), true)}, nil
}

// Layout implements Laid: one dense whole report.
func (EAPES) Layout(s Shape) (Layout, error) { return denseLayout(s, 0) }

// Counts implements Counted: the statement is made for the n reporters'
// whole reports.
func (EAPES) Counts(s Shape) (Counts, error) {
	return Counts{Reports: int64(s.Participants), Values: Unbounded()}, nil
}

// Layout implements Laid: one dense whole report.
func (IFCA) Layout(s Shape) (Layout, error) { return denseLayout(s, 0) }

// Layout implements Laid: one dense report.
func (LDPLaplace) Layout(s Shape) (Layout, error) { return denseLayout(s, 0) }

// Layout implements Laid: one dense report.
func (LDPGaussian) Layout(s Shape) (Layout, error) { return denseLayout(s, 0) }

// Layout implements Laid: one dense report.
func (PLDP) Layout(s Shape) (Layout, error) { return denseLayout(s, 0) }

// Layout implements Laid: one dense report.
func (LDPMin) Layout(s Shape) (Layout, error) { return denseLayout(s, 0) }

// Layout implements Laid: one dense report.
func (CentralDP) Layout(s Shape) (Layout, error) { return denseLayout(s, 0) }

// Layout implements Laid: one dense report.
func (NonPrivateFedAvg) Layout(s Shape) (Layout, error) { return denseLayout(s, 0) }
