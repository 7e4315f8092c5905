package protocol

import (
	"math/rand/v2"
	"testing"

	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/mechanism"
)

type randRand = rand.Rand

func gaussianSigmaFor(t *testing.T, b Budget, sens float64) float64 {
	t.Helper()
	g, err := mechanism.NewGaussian(b.Epsilon, b.Delta, sens)
	if err != nil {
		t.Fatal(err)
	}
	return g.Sigma
}

// isComponent reports whether c states count releases of an (eps, delta)-DP
// mechanism (whatever finer description, account.Component.Kind, it may
// carry for the PLD accountant).
func isComponent(c account.Component, eps, delta float64, count int) bool {
	return c.Epsilon == eps && c.Delta == delta && c.Count == count
}

// roundStatement is the run accountant's record of one round of shape s
// whose protocol stated p, built as the engine builds it (runtime's
// statement): the true sampling rate s.SampleRate(), the clients sampled
// (s.Sampled, or every participant when nobody refused) and reporting, and
// the round's central figures with their finer descriptions.
func roundStatement(s Shape, p Privacy) account.Statement {
	sampled := s.Sampled
	if sampled == 0 {
		sampled = s.Participants
	}
	return account.Statement{
		Round: s.Round, SampleRate: s.SampleRate(), Sampled: sampled, Reporters: s.Participants, Released: true,
		Epsilon: p.CentralEpsilon, Delta: p.CentralDelta, Components: p.Components, RDP: p.RDP, Bound: p.Bound,
	}
}

// runSpent accounts rounds 1..rounds of shape s (s.Round is overwritten)
// with the same participants' budgets, records every round's statement in a
// fresh account.Accountant of target delta target, and returns what the run
// spent and the last round's Privacy. Protocol.Account leaves the
// cumulative fields to the accountant: runSpent checks that it does.
func runSpent(t testing.TB, p Protocol, s Shape, budgets []Budget, rounds int, target float64) (account.Spent, Privacy) {
	t.Helper()
	acct, err := account.NewAccountant(target)
	if err != nil {
		t.Fatal(err)
	}
	var pr Privacy
	for r := 1; r <= rounds; r++ {
		s.Round = r
		if pr, err = p.Account(s, budgets); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		if pr.CumulativeEpsilon != 0 || pr.CumulativeDelta != 0 || pr.CumulativeMethod != "" {
			t.Fatalf("round %d: Account filled the cumulative fields (%v, %v, %q): composition is the run accountant's job",
				r, pr.CumulativeEpsilon, pr.CumulativeDelta, pr.CumulativeMethod)
		}
		if err := acct.Record(roundStatement(s, pr)); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
	}
	return acct.Spent(), pr
}
