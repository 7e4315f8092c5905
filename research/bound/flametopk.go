package bound

import (
	"fmt"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/amplify"
)

// flameTopkCentral adds SS-Topk's central guarantee to `bound flame-topk`
// when --eps-l or --delta is given: a change of one user's input moves at
// most min(2k, d) coordinates (Top_k(x) and Top_k(x'); every coordinate is
// padded to n_p >= n with blanket draws, amplify.SSTopk), each a shuffle of
// n_p eps_l/k-LDP values dominated by FMT's clone pair, so the round is
// dominated by the composition of min(2k, d) clone pairs (substitution).
// It states the smaller of that composition by PLD (account.PLDEpsilon:
// pessimistic discretisation, every error term in delta) and FLAME Theorem
// 4's composition of blanket figures (amplify.SSTopk), at --delta. No
// allocation credit is taken: the top-k coordinates are chosen by the
// data, not at random. The count statistic's lower bound
// (amplify.FLAMECountLowerBound, Laplace only) is printed with it.
func flameTopkCentral(o *Params, out *Result) error {
	if o.Given["beta"] {
		return checks.Invalidf("the central guarantee (--eps-l, --delta) needs --k and --d, not --beta")
	}
	if o.Nu != 0 {
		return checks.Invalidf("the central guarantee (--eps-l, --delta) is stated for the strongest nu (no --nu)")
	}
	if o.K > o.D {
		return checks.Invalidf("--k = %d exceeds --d = %d", o.K, o.D)
	}
	if o.NP < o.N {
		return checks.Invalidf("SS-Topk needs --np >= --n (top-k indexes are data-dependent: a dimension may be reported by every user), got n_p = %d < n = %d", o.NP, o.N)
	}
	if !(o.Delta > 0 && o.Delta < 1) {
		return checks.Invalidf("--delta must be in (0, 1), got %v", o.Delta)
	}
	eps0 := o.EpsL / float64(o.K)
	dims := min(2*o.K, o.D)
	c := account.Component{Kind: account.KindShuffle, Eps0: eps0, Reporters: o.NP, Epsilon: eps0, Count: dims}
	pl, errP := account.PLDEpsilon([]account.Component{c}, o.Delta)
	if errP == nil && !isFinite(pl) {
		errP = checks.Invalidf("no finite epsilon at delta %v", o.Delta)
	}
	var th amplify.ProtocolResult
	amp, errT := flameAmp(o)
	if errT == nil {
		th, errT = amplify.SSTopk(o.EpsL, o.D, o.K, o.N, o.NP, o.Delta, amp)
	}
	switch {
	case errP == nil && (errT != nil || pl <= th.Epsilon):
		out.Bound = amplify.Bound{Name: "ss-topk-pld", Epsilon: pl, Delta: o.Delta,
			Note: fmt.Sprintf("SS-Topk: min(2k, d) = %d clone pairs of FMT for (eps_l/k = %.6g, n_p = %d) composed by PLD (pessimistic, FFT; substitution), no allocation credit (the top-k indexes depend on the data)", dims, eps0, o.NP)}
		out.Extra["composition"] = "pld-clone-pair"
		if errT == nil {
			out.Extra["theorem_epsilon"] = th.Epsilon
		}
	case errT == nil:
		out.Bound = th.Bound
	default:
		return errP
	}
	out.NoEpsDelta = false
	out.Extra["compositions"] = dims
	out.Extra["eps_local_per_dimension"] = eps0
	if o.Mech == "laplace" {
		lb, t, err := amplify.FLAMECountLowerBound(amplify.Randomizer{Mech: amplify.Laplace}, eps0, o.K, o.D*o.NP-o.K, o.Delta)
		if err != nil {
			return fmt.Errorf("count-statistic lower bound: %w", err)
		}
		out.Extra["count_lower_bound"] = lb
		verdict := "the stated epsilon is above it"
		if out.Bound.Epsilon < lb {
			verdict = "the stated epsilon is BELOW it: REFUTED, not an upper bound"
		}
		out.After = append(out.After, fmt.Sprintf("count-statistic lower bound on the true epsilon at delta %s: %s (values above %s among %d, %d of them the differing user's); %s",
			Figure(o.Delta, 4), FormatSig(lb, 4, false), Figure(t, 4), o.D*o.NP, o.K, verdict))
	}
	return nil
}
