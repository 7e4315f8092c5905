package protocol

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/amplify"
)

// LowerBound implements LowerBounder for split-mix. Pair (add/remove, the
// statement's neighbouring relation): the worst user holds the update
// C e_1, or is absent; every other client holds 0. The analyzer decodes
// each round's modular sums from the shares (Decode, a post-processing)
// and looks at coordinate 1's. In a round that is not void the shuffler
// pads to K slots, so that sum is X_r + N_r with N_r ~ Sk(K mu_slot)
// (every slot's share Sk(mu/(K - t_c)), independent, the sum of Skellams
// being a Skellam; the colluders' shares are not subtracted, which only
// adds noise: a post-processing, so a valid but weaker bound). Absent,
// X_r = 0 (the other clients and the dummies add zero updates); present,
// the user is sampled with probability q (Poisson) and then adds at least
// floor(gamma C (1 - 1e-12)) (unbiased randomized rounding of gamma C, up
// to a few ulps, returns at least its floor). Two tests on the t rounds
// (amplify.SkellamSubsampledLowerBound): a threshold on the sum, and on
// the largest round. Slack: a round may wrap modulo q (at most WrapBound
// per round) or be void (more than K reporters, in either world at most
// P[Bin(N-1, q) >= K]); on those events the decoded value may differ from
// the model, so each round adds their probability to both tails. The
// split-and-mix indistinguishability term is not involved (the analyzer's
// view determines the sums). With rotation the user's rotated update is
// not an integer vector: no bound.
func (sm SplitMix) LowerBound(rounds []LowerBoundRound, delta float64) (LowerBound, error) {
	if len(rounds) == 0 {
		return LowerBound{}, checks.Invalidf("split-mix: lower bound: no rounds")
	}
	if err := checks.Delta("delta", delta); err != nil {
		return LowerBound{}, fmt.Errorf("split-mix: lower bound: %w", err)
	}
	for _, r := range rounds {
		if err := r.Shape.Validate(); err != nil {
			return LowerBound{}, fmt.Errorf("split-mix: lower bound, round %d: %w", r.Shape.Round, err)
		}
	}
	if sm.rotate || !(sm.rate > 0 && sm.rate <= 1) || sm.pop < 1 {
		return noLowerBound(delta), nil
	}
	t := len(rounds)
	per := math.Floor(sm.gamma * sm.clip * (1 - 1e-12))
	if !(per >= 1) {
		return noLowerBound(delta), nil
	}
	// The per-round noise variance, rounded UP (more noise is a
	// post-processing: Sk(a + b) = Sk(a) + an independent Sk(b), so the
	// bound stays valid): the secure sampler's share has the float64 just
	// above slotVar (exactShare), and the product's rounding is covered.
	v := float64(sm.slots) * math.Nextafter(sm.slotVar, math.Inf(1)) * (1 + 0x1p-51)
	void := 0.0
	if sm.pop-1 >= sm.slots {
		void = math.Min(1, account.BinomialUpperTail(sm.pop-1, sm.rate, sm.slots-1)*(1+1e-9)+1e-300)
	}
	slack := float64(t) * (sm.WrapBound() + void)
	if !(slack < 0.5) {
		return noLowerBound(delta), nil
	}
	e, err := amplify.SkellamSubsampledLowerBound(v, t, sm.rate, int64(per), slack, delta)
	if err != nil {
		return LowerBound{}, fmt.Errorf("split-mix: lower bound: %w", err)
	}
	return LowerBound{Epsilon: e, Delta: delta,
		Method: fmt.Sprintf("split-mix: one coordinate's decoded sums over %d rounds (sum and largest round), skellam of variance %.4g per round, the worst user adding %d with probability %.4g (add/remove, holding C e_1), best threshold", t, v, int64(per), sm.rate)}, nil
}
