package pld_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/amplify"
	"github.com/shufflefl/shufflefl/privacy/pld"
)

// flameDeltaC is FLAME's central delta, 0.01/n^1.1 with n = 1000.
var flameDeltaC = 0.01 / math.Pow(1000, 1.1)

// flameComposed returns the better of basic and advanced composition over
// rounds of FLAME's SS-Simple guarantee (per round as the repository
// computes it: amplify.SSSimple with the numerical clones bound), at a total
// delta of deltaTotal: basic with every round at deltaTotal/rounds; advanced
// with every round at deltaTotal/(2 rounds) and slack deltaTotal/2.
func flameComposed(rounds int, deltaTotal float64) (float64, error) {
	if rounds == 1 {
		r, err := amplify.SSSimple(78.5, 7850, 1000, deltaTotal, amplify.ClonesAmplifier())
		return r.Epsilon, err
	}
	rb, err := amplify.SSSimple(78.5, 7850, 1000, deltaTotal/float64(rounds), amplify.ClonesAmplifier())
	if err != nil {
		return 0, err
	}
	basic := float64(rounds) * rb.Epsilon
	ra, err := amplify.SSSimple(78.5, 7850, 1000, deltaTotal/float64(2*rounds), amplify.ClonesAmplifier())
	if err != nil {
		return 0, err
	}
	adv, _, err := account.ComposeAdvanced(ra.Epsilon, ra.Delta, rounds, deltaTotal/2)
	if err != nil {
		return 0, err
	}
	return math.Min(basic, adv), nil
}

// sgmClassical returns the better of basic and advanced composition of the
// subsampled Gaussian step: per step the exact Gaussian (eps_g, delta_g)
// (GDP conversion, exact for the Gaussian mechanism), Poisson subsampling
// (account.SubsamplePoisson: (log(1 + q(e^eps_g - 1)), q delta_g)), then
// composition over steps at total delta; delta_g is scanned on a grid.
func sgmClassical(q, sigma float64, steps int, delta float64) float64 {
	best := math.Inf(1)
	for _, f := range []float64{0.001, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9} {
		// a fraction f of delta is spent by the steps, the rest is slack
		dg := f * delta / (float64(steps) * q)
		eg, err := account.GDPToEpsilon(1/sigma, dg)
		if err != nil {
			continue
		}
		es, ds, err := account.SubsamplePoisson(eg, dg, q)
		if err != nil {
			continue
		}
		if e, _, err := account.ComposeAdvanced(es, ds, steps, delta-float64(steps)*ds); err == nil {
			best = math.Min(best, e)
		}
	}
	// basic: all of delta to the steps
	dg := delta / (float64(steps) * q) * (1 - 1e-12)
	if eg, err := account.GDPToEpsilon(1/sigma, dg); err == nil {
		if es, _, err := account.SubsamplePoisson(eg, dg, q); err == nil {
			best = math.Min(best, float64(steps)*es)
		}
	}
	return best
}

// TestPapersTable prints, with -v, the side-by-side table of
// docs/ACCOUNTING.md ("Composition side by side"): rigorous epsilons under
// (a) the better of basic and advanced composition, (b) RDP (for FLAME: the Rényi certificate of the same clone
// pairs, PLD.RenyiEpsilon; for DP-FedAvg: account.SampledGaussianEpsilon),
// (c) this package's PLD.
//
//	go test -run TestPapersTable -v ./pld
func TestPapersTable(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n| setting | delta | (a) basic/advanced | (b) RDP | (c) PLD |\n|---|---|---|---|---|\n")
	papersFLAMESimple(t, &b)
	papersFLAMEDouble(t, &b)
	papersAPES(t, &b)
	papersDPFedAvg(t, &b)
	t.Log(b.String())
}

// papersFLAMESimple writes the rows of FLAME SS-Simple: one coordinate's shuffle and 1 and 10 rounds.
func papersFLAMESimple(t *testing.T, b *strings.Builder) {
	// FLAME SS-Simple, per coordinate eps0 = 78.5/7850 = 0.01, n = 1000.
	shuf, err := pld.ShuffleClones(0.01, 1000, pld.Options{Interval: 2e-5})
	if err != nil {
		t.Fatal(err)
	}
	dcd := flameDeltaC / 7851
	perDim, err := amplify.ClonesNumerical(0.01, 1000, dcd)
	if err != nil {
		t.Fatal(err)
	}
	perDimPLD, err := shuf.Epsilon(dcd)
	if err != nil {
		t.Fatal(err)
	}
	perDimRDP, err := shuf.RenyiEpsilon(dcd)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(b, "| FLAME, one coordinate's shuffle (eps0 = 0.01, n = 1000) | %.4g | %.5f (amplify.ClonesNumerical) | %.5f | %.5f |\n", dcd, perDim, perDimRDP, perDimPLD)
	for _, rounds := range []int{1, 10} {
		a, err := flameComposed(rounds, flameDeltaC)
		if err != nil {
			t.Fatal(err)
		}
		c, err := shuf.SelfCompose(7850 * rounds)
		if err != nil {
			t.Fatal(err)
		}
		e, err := c.Epsilon(flameDeltaC)
		if err != nil {
			t.Fatal(err)
		}
		rdp, err := c.RenyiEpsilon(flameDeltaC)
		if err != nil {
			t.Fatal(err)
		}
		if !(e < rdp && e < a) {
			t.Errorf("FLAME %d rounds: PLD %v not below RDP %v and composition %v", rounds, e, rdp, a)
		}
		fmt.Fprintf(b, "| FLAME SS-Simple, d = 7850, n = 1000, eps_l = 78.5, %d round(s) | %.4g | %.4f | %.4f | %.4f |\n", rounds, flameDeltaC, a, rdp, e)
	}
}

// papersFLAMEDouble writes the rows of FLAME SS-Double (the sound statement) at 1 and 10 rounds.
func papersFLAMEDouble(t *testing.T, b *strings.Builder) {
	// FLAME SS-Double, the sound statement (amplify.SSDouble; FLAME's
	// Theorems 3-4 are not an upper bound): k = 157 of d = 7850 coordinates
	// per user, n = 1000, n_p = 333, eps_l = 78.5 (eps0 = 0.5 per reported
	// coordinate); a round is the composition of the k dimensions a user
	// reports in, each a shuffle of n_p values that FMT's clone pair
	// dominates. (a) composes amplify.SSDouble's per-round figure, (b) is
	// the Rényi certificate of the composed clone pairs, (c) their PLD.
	sd, err := pld.ShuffleClones(0.5, 333, pld.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rounds := range []int{1, 10} {
		var a float64
		if rounds == 1 {
			r, err := amplify.SSDouble(78.5, 7850, 157, 1000, 333, flameDeltaC, amplify.ClonesAmplifier())
			if err != nil {
				t.Fatal(err)
			}
			a = r.Epsilon
		} else {
			r, err := amplify.SSDouble(78.5, 7850, 157, 1000, 333, flameDeltaC/float64(2*rounds), amplify.ClonesAmplifier())
			if err != nil {
				t.Fatal(err)
			}
			ea, _, err := account.ComposeAdvanced(r.Epsilon, r.Delta, rounds, flameDeltaC/2)
			if err != nil {
				t.Fatal(err)
			}
			a = math.Min(ea, float64(rounds)*r.Epsilon)
		}
		c, err := sd.SelfCompose(157 * rounds)
		if err != nil {
			t.Fatal(err)
		}
		e, err := c.Epsilon(flameDeltaC)
		if err != nil {
			t.Fatal(err)
		}
		rdp, err := c.RenyiEpsilon(flameDeltaC)
		if err != nil {
			t.Fatal(err)
		}
		if !(e < a) {
			t.Errorf("SS-Double %d rounds: PLD %v not below composition %v", rounds, e, a)
		}
		fmt.Fprintf(b, "| FLAME SS-Double (sound), k = 157, n_p = 333, %d round(s) | %.4g | %.4f | %.4f | %.4f |\n", rounds, flameDeltaC, a, rdp, e)
	}
}

// papersAPES writes the rows of APES Table 3's population at one round.
func papersAPES(t *testing.T, b *strings.Builder) {
	// APES Table 3's population (Uniform2 per-coordinate budgets, n = 10^4,
	// d = 7850): one round's user level eps^uc at delta_s = delta' = 1e-8,
	// total delta 7850·1e-8 + 1e-8. (a) advanced composition of the d
	// dimension-level figures (APES Lemma 2, Table 3's eps^uc); (c) PLD
	// composition of the same (eps^c, delta_s) guarantees; the clone pair at
	// the largest budget is rigorous only when every user has that budget.
	eps, err := account.Budgets("uniform2", 10000, rng.Stream(1))
	if err != nil {
		t.Fatal(err)
	}
	const ds = 1e-8
	total := 7850*ds + ds
	for _, row := range []struct {
		name string
		f    func([]float64, float64) (amplify.Bound, error)
	}{
		{"APES, EoN under the hidden-budget assumption", amplify.EoNNumerical},
		{"APES, EoN for the largest public budget (standard DP)", amplify.EoNWorstCase},
		{"UniS, FMT clones at max eps_i (rigorous for equal budgets)", amplify.UniSNumerical},
	} {
		bd, err := row.f(eps, ds)
		if err != nil {
			t.Fatal(err)
		}
		a, _, err := account.ComposeAdvanced(bd.Epsilon, ds, 7850, ds)
		if err != nil {
			t.Fatal(err)
		}
		one, err := pld.ApproxDP(bd.Epsilon, ds, pld.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := one.SelfCompose(7850)
		if err != nil {
			t.Fatal(err)
		}
		e, err := c.Epsilon(total)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(b, "| %s, eps^c = %.4f, user level eps^uc | %.4g | %.2f | n/a | %.2f |\n", row.name, bd.Epsilon, total, a, e)
	}
	{
		maxEps := 0.0
		for _, x := range eps {
			maxEps = math.Max(maxEps, x)
		}
		sh, err := pld.ShuffleClones(maxEps, 10000, pld.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := sh.SelfCompose(7850)
		if err != nil {
			t.Fatal(err)
		}
		e, err := c.Epsilon(total)
		if err != nil {
			t.Fatal(err)
		}
		rdp, err := c.RenyiEpsilon(total)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(b, "| every user at eps0 = %.4f (n = 10^4): FMT's clone pair, d = 7850 | %.4g | (row above) | %.2f | %.2f |\n", maxEps, total, rdp, e)
	}
}

// papersDPFedAvg writes the row of DP-FedAvg (the Poisson-subsampled Gaussian).
func papersDPFedAvg(t *testing.T, b *strings.Builder) {
	// DP-FedAvg: Poisson-subsampled Gaussian, q = 0.01, sigma = 1, 1000 rounds.
	const q, sigma, steps, delta = 0.01, 1.0, 1000, 1e-5
	a := sgmClassical(q, sigma, steps, delta)
	r, err := account.SampledGaussianEpsilon(q, sigma, steps, delta)
	if err != nil {
		t.Fatal(err)
	}

	sg, err := pld.SampledGaussian(q, sigma, pld.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := sg.SelfCompose(steps)
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Epsilon(delta)
	if err != nil {
		t.Fatal(err)
	}
	if !(e < r && r < a) {
		t.Errorf("DP-FedAvg: want PLD %v < RDP %v < classical %v", e, r, a)
	}
	own, err := c.RenyiEpsilon(delta)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(b, "| DP-FedAvg, sampled Gaussian q = 0.01, sigma = 1, 1000 rounds | %.4g | %.2f | %.4f (account; PLD's own Rényi certificate %.4f) | %.4f |\n", delta, a, r, own, e)
}
