package protocol

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/amplify"
)

// LowerBound implements LowerBounder for split-mix when every client
// reports in every round (sampling rate 1, at most K clients: no round is
// ever void). Pair (add/remove, the statement's neighbouring relation):
// the worst user holds the update C e_1, or is absent (its slot is a
// shuffler's dummy: a zero update with the same Skellam share); every other
// client holds 0. The analyzer decodes each round's modular sums from the
// shares (Decode, a post-processing) and adds coordinate 1's over the t
// rounds. Absent, that sum is exactly the total noise N ~ Sk(t K mu_slot)
// (every slot's share Sk(mu/(K - t_c)), independent, the sum of Skellams
// being a Skellam; the colluders' shares are not subtracted, which only
// adds noise: a post-processing, so a valid but weaker bound). Present,
// the user adds floor(gamma C) or more per round (unbiased randomized
// rounding of gamma C, up to a few ulps, returns at least its floor), so
// the sum is at least t floor(gamma C (1 - 1e-12)) plus the same noise:
// the test {sum >= s} is amplify.SkellamShiftLowerBound's. A round whose
// sum wraps modulo q decodes another value: that probability, at most
// WrapBound per round (and for t rounds t times it), is the tails' slack.
// The split-and-mix indistinguishability term is not involved (the
// analyzer's view determines the sum). With client sampling (rate < 1)
// the user may sit a round out and its mixture is not implemented; with
// rotation the user's rotated update is not an integer vector: no bound.
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
		if r.Shape.Participants != r.Shape.Population || r.Shape.Population > sm.slots {
			return noLowerBound(delta), nil
		}
	}
	if sm.rate != 1 || sm.rotate {
		return noLowerBound(delta), nil
	}
	t := len(rounds)
	per := math.Floor(sm.gamma * sm.clip * (1 - 1e-12))
	if !(per >= 1) {
		return noLowerBound(delta), nil
	}
	w := float64(t) * float64(sm.slots) * sm.slotVar
	shift := int64(t) * int64(per)
	slack := math.Min(1, float64(t)*sm.WrapBound())
	e, err := amplify.SkellamShiftLowerBound(w, shift, slack, delta)
	if err != nil {
		return LowerBound{}, fmt.Errorf("split-mix: lower bound: %w", err)
	}
	return LowerBound{Epsilon: e, Delta: delta,
		Method: fmt.Sprintf("split-mix: the sum over %d rounds of one coordinate's decoded sums, skellam of variance %.4g shifted by %d (add/remove one user holding C e_1), best threshold", t, w, shift)}, nil
}
