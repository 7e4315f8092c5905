package audit

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/shufflefl/shufflefl/checks"
)

// ClopperPearson returns the exact (Clopper-Pearson) two-sided confidence
// interval for a binomial proportion with k successes in n trials: each
// side fails with probability at most (1-conf)/2.
func ClopperPearson(k, n int64, conf float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	a := (1 - conf) / 2
	if k > 0 {
		lo = mathext.InvRegIncBeta(float64(k), float64(n-k+1), a)
	}
	hi = 1
	if k < n {
		hi = mathext.InvRegIncBeta(float64(k+1), float64(n-k), 1-a)
	}
	return lo, hi
}

// EpsLower is the lower bound on epsilon implied by a test with tp true
// positives out of np trials of the "positive" world and fp false positives
// out of nn trials of the other: log((TPR_lo - delta)/FPR_hi), with
// Clopper-Pearson bounds each failing with probability (1-conf)/2, so the
// bound holds with probability at least conf (a union bound). It is 0 when
// the data show nothing (never negative).
//
// Any (epsilon, delta)-DP mechanism satisfies TPR <= e^epsilon FPR + delta
// for every test (the hypothesis-testing view of DP, Kairouz et al. 2015),
// so a confident TPR_lo above e^eps FPR_hi + delta refutes eps.
func EpsLower(tp, np, fp, nn int64, delta, conf float64) float64 {
	tprLo, _ := ClopperPearson(tp, np, conf)
	_, fprHi := ClopperPearson(fp, nn, conf)
	if tprLo-delta <= 0 || fprHi <= 0 {
		return 0
	}
	return math.Max(0, math.Log((tprLo-delta)/fprHi))
}

// MaxEpsLower is the largest eps_lower any outcome of n trials per world can
// give (every positive trial detected, no false positive): the most an
// audit of that size can ever certify.
func MaxEpsLower(n int64, delta, conf float64) float64 {
	return EpsLower(n, n, 0, n, delta, conf)
}

// TrialsNeeded returns the smallest number of trials per world (and per
// half, for the split game) for which MaxEpsLower exceeds eps: below it the
// audit cannot possibly refute the claim, so it cannot catch a violation.
func TrialsNeeded(eps, delta, conf float64) int64 {
	lo, hi := int64(1), int64(2)
	for MaxEpsLower(hi, delta, conf) <= eps {
		lo = hi
		hi *= 2
		if hi > 1<<50 {
			return hi
		}
	}
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if MaxEpsLower(mid, delta, conf) > eps {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// checkConf validates a confidence level.
func checkConf(conf float64) error {
	if math.IsNaN(conf) || conf <= 0 || conf >= 1 {
		return checks.Invalidf("confidence must be in (0, 1), got %v", conf)
	}
	return nil
}

// OneRunPValue is the p-value of Steinke, Nasr and Jagielski (2023,
// Theorem 3.1; the delta term is the paper's approximate-DP analysis as its
// published audit code evaluates it): the probability, under an
// (eps, delta)-DP mechanism with m canaries each included independently
// with probability 1/2, that r guesses contain at least v correct ones:
//
//	P[Binomial(r, q) >= v] + 2 m delta max_{1<=i<=v} P[v-i <= Binomial(r, q) < v]/i,
//
// with q = e^eps/(1+e^eps), the accuracy of eps-randomized response.
func OneRunPValue(m, r, v int, eps, delta float64) float64 {
	if v <= 0 {
		return 1
	}
	q := 1 / (1 + math.Exp(-eps))
	b := distuv.Binomial{N: float64(r), P: q}
	p := 1 - b.CDF(float64(v-1)) // P[Bin >= v]
	if delta > 0 {
		var alpha, sum float64
		for i := 1; i <= v; i++ {
			sum += b.Prob(float64(v - i))
			if sum > float64(i)*alpha {
				alpha = sum / float64(i)
			}
		}
		p += alpha * delta * 2 * float64(m)
	}
	return math.Min(p, 1)
}

// OneRunEpsLower is the largest eps such that OneRunPValue(m, r, v, eps,
// delta) is still below 1-conf: with confidence conf, the mechanism is not
// (eps', delta)-DP for any eps' below it. Bisection to 1e-4.
func OneRunEpsLower(m, r, v int, delta, conf float64) float64 {
	alpha := 1 - conf
	if OneRunPValue(m, r, v, 0, delta) >= alpha {
		return 0
	}
	lo, hi := 0.0, 1.0
	for OneRunPValue(m, r, v, hi, delta) < alpha {
		lo = hi
		hi *= 2
		if hi > 200 {
			return lo
		}
	}
	for hi-lo > 1e-4 {
		mid := (lo + hi) / 2
		if OneRunPValue(m, r, v, mid, delta) < alpha {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// ROC summarises a score-based membership test: higher score means
// "member".
type ROC struct {
	AUC float64 `json:"auc"`
	// TPR1 and TPR01 are the largest true-positive rates of a threshold
	// whose false-positive rate is at most 1% and 0.1%.
	TPR1  float64 `json:"tpr_at_1pct_fpr"`
	TPR01 float64 `json:"tpr_at_0.1pct_fpr"`
	Pos   int     `json:"members"`
	Neg   int     `json:"non_members"`
	// Advant is the largest TPR - FPR over thresholds.
	Advant float64 `json:"max_advantage"`
}

// NewROC computes the ROC summary of scores of positives (members) and
// negatives (non-members). Ties count half in the AUC (Mann-Whitney).
// TPR at a target FPR uses thresholds strictly above the negatives' scores
// allowed to pass, so it is 0 when there are fewer than 1/FPR negatives.
func NewROC(pos, neg []float64) ROC {
	type sc struct {
		v   float64
		pos bool
	}
	all := make([]sc, 0, len(pos)+len(neg))
	for _, v := range pos {
		all = append(all, sc{v, true})
	}
	for _, v := range neg {
		all = append(all, sc{v, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v })
	P, N := float64(len(pos)), float64(len(neg))
	out := ROC{Pos: len(pos), Neg: len(neg)}
	if P == 0 || N == 0 {
		return out
	}
	var tp, fp float64
	var auc float64
	for i := 0; i < len(all); {
		j := i
		var dtp, dfp float64
		for j < len(all) && all[j].v == all[i].v {
			if all[j].pos {
				dtp++
			} else {
				dfp++
			}
			j++
		}
		// Trapezoid: positives in this tie block beat the fp negatives above
		// and tie with dfp.
		auc += dtp * (fp + dfp/2)
		tp += dtp
		fp += dfp
		tpr, fpr := tp/P, fp/N
		if fpr <= 0.01 && tpr > out.TPR1 {
			out.TPR1 = tpr
		}
		if fpr <= 0.001 && tpr > out.TPR01 {
			out.TPR01 = tpr
		}
		out.Advant = math.Max(out.Advant, tpr-fpr)
		i = j
	}
	// auc counts pairs (positive, negative) with the negative scoring
	// higher; AUC is the complement.
	out.AUC = 1 - auc/(P*N)
	return out
}

// MaxAUC is the largest ROC AUC any membership test can reach against an
// (eps, delta)-DP mechanism: the hypothesis-testing region of DP (Kairouz
// et al. 2015) caps the ROC curve at
// TPR(f) = min(1, e^eps f + delta, 1 - e^-eps (1 - delta - f)),
// and the bound is its integral (midpoint rule, 10^4 steps; error < 1e-4).
func MaxAUC(eps, delta float64) float64 {
	if math.IsInf(eps, 1) {
		return 1
	}
	const n = 10000
	var s float64
	for i := 0; i < n; i++ {
		f := (float64(i) + 0.5) / n
		t := math.Min(1, math.Min(math.Exp(eps)*f+delta, 1-math.Exp(-eps)*(1-delta-f)))
		s += math.Max(t, f)
	}
	return s / n
}
