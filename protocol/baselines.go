package protocol

import (
	"fmt"
	"math/rand/v2"

	"shufflefl/amplify"
	"shufflefl/checks"
	"shufflefl/mechanism"
)

func init() {
	Register("pldp", "PLDP baseline of APES: per-coordinate classic Laplace with each client's per-dimension eps_i (scale 2C/eps_i), no shuffler", newPLDP)
	Register("ldp-min", "LDP-Min baseline of APES: every client perturbs with the population's minimum per-dimension epsilon (option min-epsilon), no shuffler", newLDPMin)
	Register("unis", "UniS baseline of APES: per-coordinate classic Laplace with personalized eps_i, per-dimension shuffling, FMT bound at max eps_i (APES Eq. 2, numerical)", newUniS)
}

// apesLaplaceEncode is the client of the APES baselines (PLDP, LDP-Min,
// UniS): clip each coordinate to [-C, C] and add classic Laplace noise of
// scale 2C/eps per coordinate (sensitivity 2C, per-dimension budget eps:
// APES Definition 3, "all the baseline frameworks exploit classic Laplace").
func apesLaplaceEncode(r *rand.Rand, s Shape, update []float64, eps, clip float64, secure bool, out *Report) error {
	if err := checkUpdate(s, update); err != nil {
		return err
	}
	var lap mechanism.Laplace
	var err error
	if secure {
		lap, err = mechanism.NewSecureLaplace(eps, 2*clip)
	} else {
		lap, err = mechanism.NewLaplace(eps, 2*clip)
	}
	if err != nil {
		return fmt.Errorf("laplace with per-dimension eps=%v, sensitivity 2C=%v: %w", eps, 2*clip, err)
	}
	clipCoordinates(update, clip)
	out.Reset()
	out.Coords = nil
	out.Values = append(out.Values, update...)
	lap.Perturb(r, out.Values)
	return nil
}

// apesLocalPrivacy is the accounting of the unshuffled APES baselines: the
// analyzer sees every report, so the dimension-level central epsilon is the
// largest per-dimension local epsilon and the user level composes the d
// coordinates (better of basic and advanced, APES Lemma 2), as in APES
// Table 3's PLDP (eps^uc = 7850 = d·1) and LDP-Min rows.
func apesLocalPrivacy(s Shape, eps []float64, deltaPrime float64, bound string) (Privacy, error) {
	return apesPrivacy(s, eps, float64(s.Dim), Summarize(eps).Max, 0, s.Dim, deltaPrime, bound, false)
}

// PLDP is the personalized-LDP baseline of APES ("PLDP: FedProx with
// personalized LDP"): each client clips every coordinate to [-C, C] and adds
// classic Laplace noise of scale 2C/eps_i per coordinate, where
// Budget.Epsilon is the per-dimension eps_i^l (the APES reading, see APES);
// there is no shuffler, and the analyzer averages (unbiased). It is the
// behaviour of ldp-laplace with the budget read per dimension instead of for
// the whole update. Central = local: eps^c = max eps_i per dimension and the
// user level composes the d coordinates.
//
// Options: "delta-prime" (slack of advanced composition, default
// Params.Delta), "secure" (0 or 1).
type PLDP struct {
	clip, deltaPrime float64
	secure           bool
}

func newPLDP(p Params) (Protocol, error) {
	o, err := apesParse(p)
	if err != nil {
		return nil, err
	}
	return PLDP{clip: o.clip, deltaPrime: o.deltaPrime, secure: o.secure}, nil
}

// Name implements Protocol.
func (PLDP) Name() string { return "pldp" }

// UserEpsilon returns d·eps_i.
func (PLDP) UserEpsilon(s Shape, b Budget) float64 { return float64(s.Dim) * b.Epsilon }

// Check implements Protocol.
func (PLDP) Check(s Shape, budgets []Budget) error { return apesCheck(s, budgets) }

// Mode implements Protocol: no shuffler.
func (PLDP) Mode() ShuffleMode { return NoShuffle }

// Encode implements Protocol.
func (m PLDP) Encode(r *rand.Rand, s Shape, update []float64, b Budget, out *Report) error {
	if err := apesLaplaceEncode(r, s, update, b.Epsilon, m.clip, m.secure, out); err != nil {
		return fmt.Errorf("pldp: %w", err)
	}
	return nil
}

// Pad implements Protocol: no padding.
func (PLDP) Pad(*rand.Rand, Shape, []int64, func(int, float64)) error { return nil }

// Estimate implements Protocol: the per-coordinate mean (unbiased).
func (PLDP) Estimate(_ *rand.Rand, s Shape, agg *Aggregate, dst []float64) error {
	return meanEstimate(s, agg, dst)
}

// Account implements Protocol.
func (m PLDP) Account(s Shape, budgets []Budget) (Privacy, error) {
	if err := apesCheck(s, budgets); err != nil {
		return Privacy{}, fmt.Errorf("pldp accountant: %w", err)
	}
	return apesLocalPrivacy(s, budgetEpsilons(budgets), m.deltaPrime, "no shuffler: central = local (max eps_i per dimension)")
}

// LDPMin is APES's LDP-Min baseline: "all users adopt min eps_i^l as privacy
// budget compulsively". Every client perturbs each coordinate with classic
// Laplace of scale 2C/eps_min; no shuffler; the analyzer averages.
//
// Where eps_min comes from. A Protocol is immutable and its Encode sees one
// client's budget, while the engine hands Check and Account only the current
// participants' budgets, so the protocol cannot learn the population minimum
// by itself. It is therefore a required option, "min-epsilon" (the caller —
// the CLI or the experiment runner — computes min_i eps_i over the whole
// population). Check rejects a round in which some participant's budget is
// smaller than min-epsilon, since perturbing at min-epsilon would then exceed
// that client's budget; a min-epsilon below the true minimum is allowed (it
// is still honoured by every client, just more conservatively). The
// per-dimension reading of APES applies: LocalCoordEpsilon = eps_min and
// LocalEpsilon = d·eps_min for every client.
//
// Options: "min-epsilon" (required, > 0), "delta-prime", "secure".
type LDPMin struct {
	clip, deltaPrime, epsMin float64
	secure                   bool
}

func newLDPMin(p Params) (Protocol, error) {
	o, err := apesParse(p, "min-epsilon")
	if err != nil {
		return nil, err
	}
	v, ok := p.Extra["min-epsilon"]
	if !ok {
		return nil, checks.Invalidf("ldp-min needs option min-epsilon = min_i eps_i^l over the population (APES LDP-Min: every user adopts the minimum budget)")
	}
	if err := checks.Epsilon("option min-epsilon", v); err != nil {
		return nil, err
	}
	return LDPMin{clip: o.clip, deltaPrime: o.deltaPrime, epsMin: v, secure: o.secure}, nil
}

// Name implements Protocol.
func (LDPMin) Name() string { return "ldp-min" }

// MinEpsilon returns the per-dimension epsilon every client uses.
func (m LDPMin) MinEpsilon() float64 { return m.epsMin }

// UserEpsilon returns d·eps_min.
func (m LDPMin) UserEpsilon(s Shape, _ Budget) float64 { return float64(s.Dim) * m.epsMin }

// Check implements Protocol: APES's budget constraints and eps_i >= min-epsilon.
func (m LDPMin) Check(s Shape, budgets []Budget) error {
	if err := apesCheck(s, budgets); err != nil {
		return err
	}
	for i, b := range budgets {
		if b.Epsilon < m.epsMin {
			return checks.Invalidf("participant %d has eps_i^l = %v < min-epsilon = %v: LDP-Min must use the minimum budget of the population", i, b.Epsilon, m.epsMin)
		}
	}
	return nil
}

// Mode implements Protocol: no shuffler.
func (LDPMin) Mode() ShuffleMode { return NoShuffle }

// Encode implements Protocol: the client's own budget must be at least
// min-epsilon; it perturbs at min-epsilon.
func (m LDPMin) Encode(r *rand.Rand, s Shape, update []float64, b Budget, out *Report) error {
	if !(b.Epsilon >= m.epsMin) {
		return checks.Invalidf("ldp-min: the client's eps_i^l = %v is below min-epsilon = %v", b.Epsilon, m.epsMin)
	}
	if err := apesLaplaceEncode(r, s, update, m.epsMin, m.clip, m.secure, out); err != nil {
		return fmt.Errorf("ldp-min: %w", err)
	}
	return nil
}

// Pad implements Protocol: no padding.
func (LDPMin) Pad(*rand.Rand, Shape, []int64, func(int, float64)) error { return nil }

// Estimate implements Protocol: the per-coordinate mean (unbiased).
func (LDPMin) Estimate(_ *rand.Rand, s Shape, agg *Aggregate, dst []float64) error {
	return meanEstimate(s, agg, dst)
}

// Account implements Protocol: every client spends eps_min per dimension.
func (m LDPMin) Account(s Shape, budgets []Budget) (Privacy, error) {
	if err := m.Check(s, budgets); err != nil {
		return Privacy{}, fmt.Errorf("ldp-min accountant: %w", err)
	}
	eps := make([]float64, len(budgets))
	for i := range eps {
		eps[i] = m.epsMin
	}
	return apesLocalPrivacy(s, eps, m.deltaPrime, "no shuffler: central = local (eps_min per dimension)")
}

// UniS is APES's "Uni-Shuffle" baseline: clients perturb every coordinate
// with classic Laplace of scale 2C/eps_i (per-dimension eps_i as in APES),
// the shuffler permutes every coordinate independently (Mode PerCoordinate),
// and the analyzer averages (unbiased; no epsilons are needed).
//
// Accounting: the dimension-level eps^c is the FMT bound evaluated as if
// every user had max_i eps_i — APES Eq. (2) (the FMT Theorem 3.1 closed
// form) and, as the figure reported, FMT's numerical bound
// (amplify.UniSNumerical: APES Table 3's 0.069); user level and cumulative
// compose the d columns as APES. APES's footnote 1 warns that with
// heterogeneous budgets the classic Laplace randomizers of different users
// do not "echo" one another (their divergence is unbounded), so the figure
// is only an approximation: Approximate is set whenever the budgets differ.
// With equal budgets the FMT bound is rigorous. If neither form applies,
// the unamplified max eps_i is reported (rigorous).
//
// Options: "delta-prime", "secure" (as APES).
type UniS struct {
	clip, deltaS, deltaPrime float64
	secure                   bool
}

func newUniS(p Params) (Protocol, error) {
	o, err := apesParse(p)
	if err != nil {
		return nil, err
	}
	return UniS{clip: o.clip, deltaS: o.deltaS, deltaPrime: o.deltaPrime, secure: o.secure}, nil
}

// Name implements Protocol.
func (UniS) Name() string { return "unis" }

// UserEpsilon returns d·eps_i.
func (UniS) UserEpsilon(s Shape, b Budget) float64 { return float64(s.Dim) * b.Epsilon }

// Check implements Protocol.
func (UniS) Check(s Shape, budgets []Budget) error { return apesCheck(s, budgets) }

// Mode implements Protocol: per-coordinate shuffling.
func (UniS) Mode() ShuffleMode { return PerCoordinate }

// Encode implements Protocol.
func (m UniS) Encode(r *rand.Rand, s Shape, update []float64, b Budget, out *Report) error {
	if err := apesLaplaceEncode(r, s, update, b.Epsilon, m.clip, m.secure, out); err != nil {
		return fmt.Errorf("unis: %w", err)
	}
	return nil
}

// Pad implements Protocol: no padding.
func (UniS) Pad(*rand.Rand, Shape, []int64, func(int, float64)) error { return nil }

// Estimate implements Protocol: the per-coordinate mean (unbiased).
func (UniS) Estimate(_ *rand.Rand, s Shape, agg *Aggregate, dst []float64) error {
	return meanEstimate(s, agg, dst)
}

// Account implements Protocol (see the type documentation).
func (m UniS) Account(s Shape, budgets []Budget) (Privacy, error) {
	if err := apesCheck(s, budgets); err != nil {
		return Privacy{}, fmt.Errorf("unis accountant: %w", err)
	}
	eps := budgetEpsilons(budgets)
	st := Summarize(eps)
	num, errN := amplify.UniSNumerical(eps, m.deltaS)
	if errN != nil || !(num.Epsilon < st.Max) {
		why := "no amplification"
		if errN != nil {
			why = errN.Error()
		}
		return apesLocalPrivacy(s, eps, m.deltaPrime, fmt.Sprintf("unamplified max eps_i (UniS not applicable: %s)", why))
	}
	bound := fmt.Sprintf("UniS: FMT numerical at max eps_i=%.4g, delta_s=%.3g", st.Max, m.deltaS)
	if cf, err := amplify.UniS(eps, m.deltaS); err == nil {
		bound += fmt.Sprintf(" (APES Eq. 2 closed form: %.4g)", cf.Epsilon)
	} else {
		bound += " (APES Eq. 2 closed form outside its validity region)"
	}
	approx := st.Min != st.Max
	if approx {
		bound += "; approximate: heterogeneous classic-Laplace budgets (APES footnote 1)"
	}
	return apesPrivacy(s, eps, float64(s.Dim), num.Epsilon, num.Delta, s.Dim, m.deltaPrime, bound, approx)
}
