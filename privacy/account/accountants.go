package account

import (
	"math"

	"github.com/shufflefl/shufflefl/privacy/pld"
)

// The stateful accountants, at two levels (see the package documentation
// for the picture):
//
//   - RunAccountant, implemented by *Accountant: one per run, records each
//     round's Statement and composes them by every applicable method.
//   - Composer, implemented by *RDPAccountant and *pld.Accountant: one
//     composition method over a sequence of mechanisms. The run accountant
//     composes with the same two methods internally (RDP curves summed in its
//     tally, dominating pairs composed by a pld.Accountant in PLDEpsilon).
var (
	_ RunAccountant = (*Accountant)(nil)
	_ Composer      = (*RDPAccountant)(nil)
	_ Composer      = (*pld.Accountant)(nil)
)

// RunAccountant is what a driver of a run (the simulation engine, the
// networked analyzer, an experiment's planner) asks of the run's stateful
// accountant: record each round's statement, once and in order; say what
// the recorded rounds have spent; and plan further rounds without recording
// them (pre-flight, target calibration, the target check before a
// release). *Accountant is the implementation.
type RunAccountant interface {
	// TargetDelta returns the run's target central delta.
	TargetDelta() float64
	// Record adds the statement of the next round; nothing is recorded on
	// error.
	Record(s Statement) error
	// Rounds returns the number of rounds recorded.
	Rounds() int
	// Spent returns what the recorded rounds have spent.
	Spent() Spent
	// Plan returns what the run would have spent after more further
	// rounds with statement s each, recording nothing.
	Plan(s Statement, more int) (Spent, error)
	// PastTarget reports whether releasing s would take the cumulative
	// epsilon past target, and what the run would then have spent.
	PastTarget(s Statement, target float64) (Spent, bool, error)
}

// Composer is a stateful accountant of one composition method: it composes
// the mechanisms added to it (each implementation has its own Add method,
// since what it composes differs) and bounds the privacy of the composition
// so far. *RDPAccountant (Poisson-subsampled Gaussian steps, Rényi DP) and
// *pld.Accountant (any privacy loss distributions, FFT) implement it.
type Composer interface {
	// Steps returns the number of mechanisms composed so far.
	Steps() int
	// Delta returns a rigorous upper bound on the delta of the composition
	// so far at eps: 0 when nothing was composed, 1 for a NaN or negative
	// eps.
	Delta(eps float64) float64
}

// Delta returns the delta at eps of everything recorded so far (the
// conversion of RDPToDelta at DefaultRDPOrders): 0 with nothing recorded,
// 1 for an eps the conversion rejects (NaN, negative or infinite). It makes
// *RDPAccountant a Composer.
func (a *RDPAccountant) Delta(eps float64) float64 {
	if math.IsNaN(eps) || eps < 0 {
		return 1
	}
	d, _, err := RDPToDelta(defaultOrders, a.Curve(), eps)
	if err != nil {
		return 1
	}
	return d
}
