package account

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/privacy/pld"
)

// KindGaussian is the Component kind of one Gaussian mechanism: a release
// that is a post-processing of x + N(0, sigma^2 I) for the differing
// user's x, whose two neighbouring values are at L2 distance at most
// Delta2, with noise multiplier Component.Sigma = sigma/Delta2. Its
// dominating pair is (N(0, Sigma^2), N(1, Sigma^2)) (pld.Gaussian with
// sensitivity 1): for two means at distance at most Delta2 the privacy
// loss of the multivariate Gaussian depends only on the projection on the
// line through them, and the pair at distance exactly Delta2 dominates the
// pairs at smaller distances (Balle and Wang, ICML 2018, Theorem 8: the
// delta(eps) of the Gaussian mechanism increases with Delta2/sigma; the
// pair is mu-GDP with mu = 1/Sigma, Dong, Roth and Su, JRSS-B 2022). It
// holds for the substitution relation as well as for add/remove, since
// the distance bound is all it uses. No sampling credit is taken.
//
// E-APES (protocol/eapes.go) records one per round: each client's report
// is its update plus N(0, sigma_i^2 I), the shuffled multiset is a
// post-processing of the differing user's report (the others' reports do
// not depend on its data), and the smallest sigma_i/(2C) of the round's
// reporters bounds every user's multiplier.
const KindGaussian = "gaussian"

func init() {
	registerKind(KindGaussian, componentKind{
		// the loss is N(m, 2m), m = 1/(2 Sigma^2): mean plus ten standard
		// deviations
		lossBound: func(c Component) float64 { return 1/(2*c.Sigma*c.Sigma) + 10/c.Sigma },
		pair: func(c Component, o pld.Options) (*pld.PLD, error) {
			return pld.Gaussian(c.Sigma, 1, o)
		},
		validate: func(c Component) string {
			if !(c.Sigma > 0) || math.IsInf(c.Sigma, 0) {
				return fmt.Sprintf("Gaussian component needs a noise multiplier sigma in (0, inf), got %v", c.Sigma)
			}
			return ""
		},
	})
}
