package deploy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// RoundFacts is what the analyzer knows of a round from its batch header:
// the size of the registered population the shuffler sampled from, the
// number it sampled (offered the round), the number of reports shuffled,
// and their budgets (sorted; no identities). It never learns who was
// sampled or who reported.
type RoundFacts struct {
	Population, Sampled, Reporters int
	Budgets                        []protocol.Budget
}

// SampleRate is the true sampling rate Sampled/Population.
func (f RoundFacts) SampleRate() float64 { return float64(f.Sampled) / float64(f.Population) }

// Facts reads and checks a batch header's counts and budgets against what
// the analyzer can verify:
//
//   - Under sampling (Sampling), the population must lie in
//     [1, Config.Clients] (no more clients than the run's shards) and the
//     sample must be min(PerRound, population): the shuffler's fixed-size
//     sample, all registered clients when fewer than PerRound registered.
//     Without sampling both counts are 0 (every registered client was
//     offered the round; rate 1) and the round's population is
//     Config.Clients, as in the engine.
//   - Under Poisson sampling (Poisson) the population must lie in
//     [1, Config.Clients] and the sample (the true number the shuffler
//     drew, each registered client kept with probability PoissonRate) in
//     [0, population]; the statement does not depend on it.
//   - The reports may not exceed the sample.
//   - For a personalized protocol the lists are either both empty (every
//     reporter has the uniform Budget, the header's convention; for APES
//     the reports' metadata are cross-checked against it, CheckMeta) or
//     hold exactly one epsilon and one delta per report (a list of another
//     length is refused, never truncated or padded), each sorted ascending, each epsilon in
//     (0, MaxEpsilon] and each delta the run's round delta (deployments
//     take no per-client delta, see ResolveBudget). The budgets are paired
//     in sorted order, which is the true pairing since every delta is the
//     same. For any other protocol both lists are empty and every reporter
//     has the uniform Budget.
//
// Anything else is an error wrapping checks.ErrInvalid.
func (st *Setup) Facts(h *wire.BatchHeader) (RoundFacts, error) {
	c := h.GetCounts()
	f := RoundFacts{Population: int(c.GetPopulation()), Sampled: int(c.GetSampled()), Reporters: int(c.GetReports())}
	switch {
	case st.Poisson:
		if f.Population < 1 || f.Population > st.Config.Clients {
			return RoundFacts{}, checks.Invalidf("Poisson-sampled round from a population of %d registered clients: want 1 to %d", f.Population, st.Config.Clients)
		}
		if f.Sampled > f.Population {
			return RoundFacts{}, checks.Invalidf("%d clients sampled from %d registered", f.Sampled, f.Population)
		}
	case st.Sampling():
		if f.Population < 1 || f.Population > st.Config.Clients {
			return RoundFacts{}, checks.Invalidf("sampled round from a population of %d registered clients: want 1 to %d", f.Population, st.Config.Clients)
		}
		if want := min(st.PerRound, f.Population); f.Sampled != want {
			return RoundFacts{}, checks.Invalidf("%d clients sampled from %d registered: the shuffler samples min(%d, %d) = %d", f.Sampled, f.Population, st.PerRound, f.Population, want)
		}
	default:
		if f.Population != 0 || f.Sampled != 0 {
			return RoundFacts{}, checks.Invalidf("population %d and sample %d in a run without client sampling (both must be 0)", f.Population, f.Sampled)
		}
		f.Population, f.Sampled = st.Config.Clients, st.Config.Clients
	}
	if f.Reporters > f.Sampled {
		return RoundFacts{}, checks.Invalidf("%d reports from %d sampled clients", f.Reporters, f.Sampled)
	}
	eps, dts := h.GetReporterEpsilons(), h.GetReporterDeltas()
	if !st.Personalized || (len(eps) == 0 && len(dts) == 0) {
		// Empty lists: every reporter has the uniform budget (the
		// BatchHeader's convention), which a run with the clients' own
		// budgets does not have.
		if st.OwnBudgets && f.Reporters > 0 {
			return RoundFacts{}, checks.Invalidf("no reporter budgets for %d reports in a run with the clients' own budgets", f.Reporters)
		}
		if len(eps) != 0 || len(dts) != 0 {
			return RoundFacts{}, checks.Invalidf("%d reporter epsilons and %d deltas for protocol %s, which takes one uniform budget", len(eps), len(dts), st.Config.Protocol)
		}
		f.Budgets = make([]protocol.Budget, f.Reporters)
		for i := range f.Budgets {
			f.Budgets[i] = st.Budget
		}
		return f, nil
	}
	if len(eps) != f.Reporters || len(dts) != f.Reporters {
		return RoundFacts{}, checks.Invalidf("%d reporter epsilons and %d deltas for %d reports", len(eps), len(dts), f.Reporters)
	}
	if !sort.Float64sAreSorted(eps) || !sort.Float64sAreSorted(dts) {
		return RoundFacts{}, checks.Invalidf("reporter budgets not sorted ascending (they would be linkable to the order of arrival)")
	}
	f.Budgets = make([]protocol.Budget, f.Reporters)
	for i := range eps {
		b, err := st.checkDeclared(eps[i], dts[i])
		if err != nil {
			return RoundFacts{}, err
		}
		f.Budgets[i] = b
	}
	return f, nil
}

// ResolveBudget is the budget of a client that declares (epsilon, delta)
// at registration: (0, 0) is the run's uniform Budget (refused when the run
// gives clients their own budgets, OwnBudgets), and a delta of 0
// with a positive epsilon the run's round delta. A deployment takes no
// per-client delta (BatchHeader carries the epsilons and the deltas as
// two separately sorted lists, so a pairing of different deltas with
// different epsilons would be lost): a declared delta must be the run's
// round delta. The epsilon must be valid and at most MaxEpsilon; for a
// protocol that does not take personalized budgets it must be Budget's.
// Errors wrap checks.ErrInvalid.
func (st *Setup) ResolveBudget(epsilon, delta float64) (protocol.Budget, error) {
	if epsilon == 0 && delta == 0 {
		if st.OwnBudgets {
			return protocol.Budget{}, checks.Invalidf("this run gives clients their own budgets (--eps-dist/--eps-file): a client must declare its budget")
		}
		return st.Budget, nil
	}
	if delta == 0 {
		delta = st.Budget.Delta
	}
	b, err := st.checkDeclared(epsilon, delta)
	if err != nil {
		return protocol.Budget{}, err
	}
	if !st.Personalized && b != st.Budget {
		return protocol.Budget{}, checks.Invalidf("protocol %s takes one public budget (%v, %v); a client may not declare (%v, %v)", st.Config.Protocol, st.Budget.Epsilon, st.Budget.Delta, epsilon, delta)
	}
	return b, nil
}

func (st *Setup) checkDeclared(epsilon, delta float64) (protocol.Budget, error) {
	if err := checks.Epsilon("declared epsilon", epsilon); err != nil {
		return protocol.Budget{}, err
	}
	if epsilon > st.MaxEpsilon() {
		return protocol.Budget{}, checks.Invalidf("declared epsilon %v is above the run's largest budget %v", epsilon, st.MaxEpsilon())
	}
	if delta != st.Budget.Delta {
		return protocol.Budget{}, checks.Invalidf("declared delta %v: every client's delta is the run's round delta %v", delta, st.Budget.Delta)
	}
	b := protocol.Budget{Epsilon: epsilon, Delta: delta}
	if !st.Personalized {
		return b, nil
	}
	s := st.Shape(1)
	s.Participants, s.Sampled = 1, 1
	if err := st.Proto.Check(s, []protocol.Budget{b}); err != nil {
		return protocol.Budget{}, checks.Invalidf("declared budget (%v, %v) refused by %s: %v", epsilon, delta, st.Config.Protocol, err)
	}
	return b, nil
}

// sortedBudgets returns the epsilons and the deltas of bs, each sorted
// ascending (the header's unlinked lists).
func sortedBudgets(bs []protocol.Budget) (eps, deltas []float64) {
	eps = make([]float64, len(bs))
	deltas = make([]float64, len(bs))
	for i, b := range bs {
		eps[i], deltas[i] = b.Epsilon, b.Delta
	}
	slices.Sort(eps)
	slices.Sort(deltas)
	return eps, deltas
}

// maxEpsilon is the largest epsilon of bs (0 if empty).
func maxEpsilon(bs []protocol.Budget) float64 {
	m := 0.0
	for _, b := range bs {
		m = math.Max(m, b.Epsilon)
	}
	return m
}

// CheckMeta cross-checks a batch's opened metadata values (APES's
// per-report eps_i/d, the only values a report carries about its budget)
// against the header's reporter budgets: every opened value must be one
// the reporters' budgets account for (the multiset of the metadata a report
// of each budget carries, found by encoding a zero update with it so that
// the check holds for any protocol's metadata). Metadata messages the
// analyzer dropped (rejected when opened) may be missing; none may be
// extra or different. A mismatch means a client encoded with another
// budget than it registered, or the header's budgets are not the
// reporters': the round's statement would be wrong, so the batch is
// refused (checks.ErrInvalid).
func (st *Setup) CheckMeta(t int, budgets []protocol.Budget, meta []float64) error {
	if !st.Meta {
		return nil
	}
	s := st.Shape(t)
	zero := make([]float64, s.Dim)
	memo := map[protocol.Budget][]float64{}
	var want []float64
	for _, b := range budgets {
		m, ok := memo[b]
		if !ok {
			var rep protocol.Report
			clear(zero)
			if err := st.Proto.Encode(rand.New(rand.NewPCG(1, 2)), s, zero, b, &rep); err != nil {
				return fmt.Errorf("probing the metadata of budget %v: %w", b, err)
			}
			m = slices.Clone(rep.Meta)
			memo[b] = m
		}
		want = append(want, m...)
	}
	got := slices.Clone(meta)
	slices.Sort(got)
	slices.Sort(want)
	if len(got) > len(want) {
		return checks.Invalidf("%d metadata values for %d reporter budgets", len(got), len(budgets))
	}
	// got must be a sub-multiset of want (both sorted).
	j := 0
	for _, g := range got {
		for j < len(want) && want[j] < g {
			j++
		}
		if j == len(want) || want[j] != g {
			return checks.Invalidf("metadata value %v is no reporter budget's (the reports' eps_i/d disagree with the header's reporter budgets)", g)
		}
		j++
	}
	return nil
}

// localQuorum is the registrations RunLocal's shuffler waits for before
// sampling round 1: every client under sampling (its clients all run, and
// test mode reproduces the engine's sample of the whole population), none
// otherwise.
func localQuorum(st *Setup) int {
	if st.Sampling() {
		return st.Config.Clients
	}
	return 0
}

// modular is a protocol whose values are integers mod q (split-mix's
// shares): the analyzer accepts only the integers of [0, q-1].
type modular interface{ Modulus() int64 }

// deployableSampling refuses a Poisson-sampled protocol that a deployment
// does not run (deployablePoisson); fixed-size sampling is always taken.
func deployableSampling(pre *round.Prepared) error {
	if !pre.Poisson {
		return nil
	}
	return deployablePoisson(pre.Config.Protocol, pre.Proto, pre.Model.Dim())
}

// deployablePoisson refuses a Poisson-sampled protocol a deployment does
// not run: every one but split-mix (dp-central trusts the analyzer with
// the clear updates, which a deployment's sealed path is not built for),
// split-mix's fast path (simulation only: it sends the noisy value
// itself, which only the shuffled shares may hide), and a split-mix
// report of m·d shares that does not fit one submission
// (wire.MaxMessagesPerReport messages, wire.MaxReportBytes bytes even in
// the smallest suite, X25519). Errors wrap checks.ErrInvalid.
func deployablePoisson(name string, p protocol.Protocol, d int) error {
	sm, ok := p.(interface {
		protocol.MultiValued
		Fast() bool
		Shares() int
	})
	if !ok {
		return checks.Invalidf("deploy: Poisson-sampled protocol %s is not supported (of the Poisson-sampled protocols a deployment runs split-mix only)", name)
	}
	if sm.Fast() {
		return checks.Invalidf("deploy: %s's fast path (option fast=1) is simulation-only: a deployed client sends its m shares; drop the option", name)
	}
	msgs := int64(sm.Shares()) * int64(d)
	if msgs > wire.MaxMessagesPerReport {
		return checks.Invalidf("deploy: %s sends m·d = %d·%d = %d sealed shares per client, over wire.MaxMessagesPerReport = %d", name, sm.Shares(), d, msgs, wire.MaxMessagesPerReport)
	}
	if b := msgs * int64(seal.MessageSize(seal.X25519, seal.KindCoord, 1)); b > wire.MaxReportBytes {
		return checks.Invalidf("deploy: %s's %d sealed shares per client take %d bytes even with X25519, over wire.MaxReportBytes = %d", name, msgs, b, wire.MaxReportBytes)
	}
	return nil
}

// PoissonRate is the probability PerRound/Config.Clients with which the
// shuffler keeps each registered client in a Poisson-sampled round: the
// rate the protocol was calibrated for.
func (st *Setup) PoissonRate() float64 { return float64(st.PerRound) / float64(st.Config.Clients) }

// RoundShape is the shape of round t the analyzer states and estimates
// with, from the batch's facts. Under fixed-size sampling it is the true
// one: the registered population, the sample, and the reporters. Under
// Poisson sampling it is the engine's: the configured population and the
// expected count PerRound, so that the rate is the calibrated one and the
// estimate divides by the expected number of reporters (dp-central's and
// split-mix's fixed denominator); the true counts are in the facts.
func (st *Setup) RoundShape(t int, f RoundFacts) protocol.Shape {
	s := st.Shape(t)
	if st.Poisson {
		s.Sampled = 0
		return s
	}
	s.Population, s.Participants, s.Sampled = f.Population, f.Sampled, f.Sampled
	if f.Reporters > 0 {
		s.Participants = f.Reporters
	}
	return s
}
