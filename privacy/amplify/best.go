package amplify

import (
	"fmt"
	"sort"
)

// Candidate is one row of a comparison: a bound, or the reason it does not
// apply (Err non-empty; Bound.Name still set, Epsilon 0 and meaningless).
type Candidate struct {
	Bound
	Err string `json:"error,omitempty"`
}

// CompareUniform evaluates every uniform-eps0 bound applicable to n reports
// of randomizer r at the given delta: Erlingsson et al., the blanket closed
// form (R_{gamma,b} only), the blanket Hoeffding and Bennett bounds for r and
// for a generic eps0-LDP randomizer, both clones closed forms and the clones
// numerical bound. The flawed legacy Bennett variant is included only if
// legacy is true, labelled as such and marked Approximation (it understates
// delta, so its epsilons are not upper bounds). Rows are sorted by epsilon
// with inapplicable ones last.
func CompareUniform(eps0 float64, n int, delta float64, r Randomizer, legacy bool) ([]Candidate, error) {
	if err := validateUniform(eps0, n, delta); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	if err := r.validate(); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	var out []Candidate
	add := func(name string, e float64, err error, note string) {
		c := Candidate{Bound: Bound{Name: name, Epsilon: e, Delta: delta, Note: note, Approximation: isLegacy(name)}}
		if err != nil {
			c.Err = err.Error()
			c.Epsilon = 0
		}
		out = append(out, c)
	}
	e, err := Erlingsson(eps0, n, delta)
	add("erlingsson", e, err, "Erlingsson et al. 2019")
	if r.Mech == RGammaB {
		e, err = BlanketClosedForm(eps0, r.K, n, delta)
		add("blanket-closed", e, err, "Balle et al. 2019 / FLAME Lemma 1")
	}
	variants := []BlanketVariant{Hoeffding, Bennett}
	if legacy {
		variants = append(variants, BennettLegacyFLAME)
	}
	mechs := []Randomizer{r}
	if r.Mech != Generic {
		mechs = append(mechs, Randomizer{Mech: Generic})
	}
	for _, m := range mechs {
		for _, v := range variants {
			e, ok, err := BlanketEpsilon(m, v, eps0, n, delta)
			note := "Balle et al. 2019, numerical, " + m.Mech.String()
			if v == BennettLegacyFLAME {
				note = "FLAWED legacy pre-July-2020 Bennett code (understates delta); reproduces FLAME's figures only"
			}
			if err == nil && !ok {
				note += "; no amplification (eps0 returned)"
			}
			add("blanket-"+v.String()+"-"+m.Mech.String(), e, err, note)
		}
	}
	e, err = ClonesTheorem(eps0, n, delta)
	add("clones-theorem", e, err, "FMT 2022 Theorem 3.1 as printed (APES Eq. 2)")
	e, err = ClonesClosedForm(eps0, n, delta)
	add("clones-closed", e, err, "FMT 2022 closed form as in the authors' code")
	e, err = ClonesNumerical(eps0, n, delta)
	add("clones-numerical", e, err, "FMT 2022 numerical, every clone count exact")
	sortCandidates(out)
	return out, nil
}

func sortCandidates(c []Candidate) {
	sort.SliceStable(c, func(i, j int) bool {
		if (c[i].Err == "") != (c[j].Err == "") {
			return c[i].Err == ""
		}
		return c[i].Epsilon < c[j].Epsilon
	})
}

// bestOf returns the valid, rigorous candidate with the smallest epsilon;
// approximations and the legacy (flawed) variant are never chosen, and a
// bound with an Assumption only when that assumption is in allowed.
func bestOf(c []Candidate, allowed ...string) (Bound, error) {
	var best *Candidate
	for i := range c {
		x := &c[i]
		if x.Err != "" || x.Approximation || isLegacy(x.Name) || !assumptionAllowed(x.Assumption, allowed) {
			continue
		}
		if best == nil || x.Epsilon < best.Epsilon {
			best = x
		}
	}
	if best == nil {
		return Bound{}, fmt.Errorf("best: no bound applies to these parameters")
	}
	return best.Bound, nil
}

func assumptionAllowed(a string, allowed []string) bool {
	if a == "" {
		return true
	}
	for _, x := range allowed {
		if a == x {
			return true
		}
	}
	return false
}

func isLegacy(name string) bool {
	l := "blanket-" + BennettLegacyFLAME.String()
	return len(name) >= len(l) && name[:len(l)] == l
}

// BestUniform returns the tightest valid rigorous bound of CompareUniform
// (never an approximation, never the legacy variant); its Name says which.
func BestUniform(eps0 float64, n int, delta float64, r Randomizer) (Bound, error) {
	c, err := CompareUniform(eps0, n, delta, r, false)
	if err != nil {
		return Bound{}, err
	}
	return bestOf(c)
}

// ComparePersonal evaluates every personalized bound for the budget vector
// at delta: UniS (closed and numerical), EoN (closed and numerical, both
// under HiddenBudgetAssumption, marked in Assumption), EoN for public
// budgets (EoNWorstCase with APES Lemma 6's weights, EoNExactEcho with
// Clip-Laplace's exact echo probabilities) and E-APES (labelled
// approximation).
func ComparePersonal(eps []float64, delta float64) ([]Candidate, error) {
	if err := validateBudgets(eps, true); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	var out []Candidate
	add := func(name string, b Bound, err error) {
		if err != nil {
			out = append(out, Candidate{Bound: Bound{Name: name, Delta: delta}, Err: err.Error()})
			return
		}
		out = append(out, Candidate{Bound: b})
	}
	b, err := UniS(eps, delta)
	add("unis", b, err)
	b, err = UniSNumerical(eps, delta)
	add("unis-numerical", b, err)
	b, err = EoNClosedForm(eps, delta)
	add("eon", b, err)
	if err != nil { // keep the label on an inapplicable row too
		out[len(out)-1].Assumption = HiddenBudgetAssumption
	}
	b, err = EoNNumerical(eps, delta)
	add("eon-numerical", b, err)
	if err != nil {
		out[len(out)-1].Assumption = HiddenBudgetAssumption
	}
	b, err = EoNWorstCase(eps, delta)
	add("eon-worst-case", b, err)
	b, err = EoNExactEcho(eps, delta)
	add("eon-exact-echo", b, err)
	b, _, err = EAPES(eps, nil, delta)
	add("eapes-gdp", b, err)
	sortCandidates(out)
	return out, nil
}

// PersonalOptions selects which personalized bounds BestPersonalOpts may
// return.
type PersonalOptions struct {
	// HiddenBudget admits bounds that need HiddenBudgetAssumption (APES's
	// EoN): the adversary cannot tell the differing user's budget. Off by
	// default: personalized budgets are public, and the standard definition
	// needs the worst case over users (EoNWorstCase, UniS).
	HiddenBudget bool
}

// BestPersonal returns the tightest valid rigorous personalized bound of
// ComparePersonal for the standard definition: never an approximation
// (E-APES) and never a bound that needs an extra assumption (APES's EoN
// with hidden budgets). BestPersonalOpts can admit the latter.
func BestPersonal(eps []float64, delta float64) (Bound, error) {
	return BestPersonalOpts(eps, delta, PersonalOptions{})
}

// BestPersonalOpts is BestPersonal with options: with o.HiddenBudget the
// EoN bounds under HiddenBudgetAssumption compete too (the result's
// Assumption then says which assumption it needs, if any).
func BestPersonalOpts(eps []float64, delta float64, o PersonalOptions) (Bound, error) {
	c, err := ComparePersonal(eps, delta)
	if err != nil {
		return Bound{}, err
	}
	var allowed []string
	if o.HiddenBudget {
		allowed = append(allowed, HiddenBudgetAssumption)
	}
	return bestOf(c, allowed...)
}
