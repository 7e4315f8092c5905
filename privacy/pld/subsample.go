package pld

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// repaired returns a probability measure (pmf on the grid of d plus an
// atom at +Inf) that stochastically dominates the reference measure of d:
// the l1 uncertainty E = err + rho (mass) of d is removed from the bottom of
// the computed pmf and put at +Inf, a deficit of total mass is added at
// +Inf and an excess removed from the bottom. If ||c - r||_1 <= E, then for
// every t the result puts at least as much mass above t as r (either the
// removed mass lies below t, and c(L > t) + E >= r(L > t), or nothing is
// left below t and the total is 1). A stochastically larger loss
// distribution is obtained from r by moving mass up, which is a
// pessimistic operation on the canonical pair (the Q-mass freed goes to
// the -Inf atom), so the result describes a pair dominating the true one.
//
// Without an additive error (err = 0, c = (1+theta) r entrywise) the
// repair is cheaper in delta: c/(1-rho) dominates r entrywise (the +Inf
// atom included), so its total is at least r's, 1, and removing the excess
// from the bottom leaves a measure that stochastically dominates r (as
// above: either the removed mass lies below t, or nothing is left below
// t), with no mass added at +Inf (the repair mass E would otherwise put
// q rho, about 1e-17, at +Inf per subsampled step).
func (d *dir) repaired() (pmf []float64, inf, removed float64, top int) {
	pmf = append([]float64(nil), d.pmf...)
	m, _ := norms(pmf)
	takeBottom := func(x float64) {
		removed += x
		for i := 0; i < len(pmf) && x > 0; i++ {
			t := math.Min(pmf[i], x)
			pmf[i] -= t
			x -= t
			top = max(top, i)
		}
	}
	if d.err == 0 {
		f := (1 + 4*unitRoundoff) / (1 - d.rho)
		for i := range pmf {
			pmf[i] *= f
		}
		inf = d.inf * f
	} else {
		E := (d.err + d.rho*(m+d.inf)/(1-d.rho)) * (1 + 1e-9)
		inf = d.inf + E
		takeBottom(E)
	}
	s := neumaier{}
	for _, v := range pmf {
		s.add(v)
	}
	total := s.sum() + inf
	slack := 8*unitRoundoff + 16*float64(len(pmf))*unitRoundoff*unitRoundoff
	switch {
	case total >= 1+slack:
		takeBottom(total - 1 - slack)
	case d.err != 0:
		inf += 1 + slack - total
		// with err = 0 the scaled measure's exact total is at least 1
		// already (entrywise domination), whatever the computed sum says
	}
	return pmf, inf, removed, top
}

// SubsamplePoisson returns the PLD of the mechanism run on a Poisson
// subsample (each record kept independently with probability q in (0, 1]),
// for the add/remove neighbouring relation, by Zhu, Dong and Wang 2022
// (Theorem 11): if (P, Q) dominates the mechanism for "remove" (P the
// output distribution with the record, Q without), the subsampled
// mechanism is dominated by (qP + (1-q)Q, Q) for remove and by
// (Q, qP + (1-q)Q) for add.
//
// (P, Q) is the canonical pair of the receiver's remove direction: P has
// the loss distribution, Q = e^{-l} P on the grid plus the remaining
// Q-mass at a -Inf loss. This requires the receiver's remove direction to
// dominate the base mechanism for the add/remove relation in the sense of
// all hockey-stick divergences H_alpha, alpha >= 0 (a Blackwell-dominating
// pair), which holds for every PLD built by this package from a true pair
// (Gaussian, Laplace, RR/PureDP/ApproxDP, FromPair, SampledGaussian and
// their compositions); the receiver's add direction is not used. Before
// the canonical pair is formed, the computed distribution is repaired
// (rounding and FFT error bounds turned into +Inf mass), so the result is
// rigorous.
//
// Not applicable to ShuffleClones: its pair is for the substitution
// relation (one user's data replaced), for which this add/remove analysis
// does not hold; such PLDs (and compositions containing them) are refused
// with an error. For sampling a fixed-size subset of
// users under substitution, no PLD-level amplification is provided by this
// package; use account.SubsampleWOR on an (epsilon, delta) pair instead.
func (p *PLD) SubsamplePoisson(q float64) (*PLD, error) {
	if err := p.validate("receiver"); err != nil {
		return nil, fmt.Errorf("PLD Poisson subsampling: %w", err)
	}
	if err := checks.Finite("q", q); err != nil || q <= 0 || q > 1 {
		return nil, fmt.Errorf("PLD Poisson subsampling: %w", checks.Invalidf("q must be in (0, 1], got %v", q))
	}
	if p.subst {
		return nil, fmt.Errorf("PLD Poisson subsampling: %w", checks.Invalidf("the PLD is for the substitution relation (ShuffleClones); Poisson subsampling is analysed for add/remove only"))
	}
	if q == 1 {
		return p, nil
	}
	h := p.h
	d := &p.rem
	pmf, inf, removed, top := d.repaired()
	// Q-mass on the grid and the remaining Q-mass at -Inf.
	n := len(pmf)
	qm := make([]float64, n)
	qs := neumaier{}
	for i, v := range pmf {
		if v > 0 {
			l := float64(d.off+i) * h
			qm[i] = math.Exp(math.Log(v) - l)
			qs.add(qm[i])
		}
	}
	qinf := math.Max(0, 1-qs.sum()*(1+16*unitRoundoff))
	lq := math.Log1p(-q)
	// remove direction: loss log(q e^l + 1 - q) under qP + (1-q)Q.
	rl := make([]float64, 0, n+1)
	rp := make([]float64, 0, n+1)
	rl = append(rl, lq)
	rp = append(rp, (1-q)*qinf)
	for i, v := range pmf {
		if v > 0 {
			l := float64(d.off+i) * h
			sl, se := subLoss(q, l)
			rl = append(rl, sl+se)
			rp = append(rp, q*v+(1-q)*qm[i])
		}
	}
	// add direction: loss -log(q e^l + 1 - q) under Q.
	al := make([]float64, 0, n+1)
	ap := make([]float64, 0, n+1)
	for i := n - 1; i >= 0; i-- {
		if pmf[i] > 0 {
			l := float64(d.off+i) * h
			sl, se := subLoss(q, l)
			al = append(al, -sl+se)
			ap = append(ap, qm[i])
		}
	}
	al = append(al, -lq)
	ap = append(ap, qinf)
	tiny := 1e-300
	rem, err := atomsDir(h, tiny, p.opt.TailMass, rl, rp, q*inf)
	if err != nil {
		return nil, fmt.Errorf("PLD Poisson subsampling: %w", err)
	}
	add, err := atomsDir(h, tiny, p.opt.TailMass, al, ap, 0)
	if err != nil {
		return nil, fmt.Errorf("PLD Poisson subsampling: %w", err)
	}
	rem.rho += 16 * unitRoundoff
	if d.err == 0 && len(pmf) > 0 {
		// Sharper certificate for the remove direction when the receiver
		// has no additive error (computed pmf c = (1+theta) r, |theta| <=
		// rho): the moments of the subsampled pair built from c exceed
		// those from the repaired pmf by at most the removed bottom mass
		// times its largest weight (q + (1-q) e^{-l}) max(1, e^{lambda l'});
		// the Q-mass at -Inf differs by at most rho (loss log(1-q) < 0);
		// dividing by 1 - rho bounds the moments from r. The +Inf mass is
		// then q inf(c)/(1-rho) instead of including the repair mass.
		lt := float64(d.off+top) * h
		sl, se := subLoss(q, lt)
		w := q + (1-q)*math.Exp(-lt)
		for j, lam := range chernoffLambdas {
			extra := removed*w*math.Max(1, math.Exp(lam*(sl+se))) + d.rho
			rem.logm[j] = logAdd(rem.logm[j], math.Log(extra)) - math.Log1p(-d.rho)
		}
		rem.cinf = q * d.inf / (1 - d.rho) * (1 + 1e-9)
	}
	add.rho += 16 * unitRoundoff
	return &PLD{h: h, opt: p.opt, rem: rem, add: add}, nil
}

// subLoss returns log(q e^l + 1 - q) and a bound on its floating-point
// error; callers round the loss up by it.
func subLoss(q, l float64) (v, e float64) {
	if l > 30 {
		v = l + math.Log(q) + math.Log1p((1-q)*math.Exp(-l)/q)
	} else {
		v = math.Log1p(q * math.Expm1(l))
	}
	return v, 8 * unitRoundoff * (math.Abs(v) + math.Abs(l) + 1)
}
