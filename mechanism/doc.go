// Package mechanism holds the local randomizers of shufflefl: every
// mechanism of the five source papers, with its calibration, its sampler and
// the analyzer-side estimator that undoes its bias.
//
//	mechanism            paper                                   input domain      guarantee
//	Laplace              survey §2.3; LDP-FL/PLDP baselines;     R^d               ε-DP, L1 sensitivity
//	                     E-APES Alg. 2
//	Gaussian             Balle & Wang 2018 (analytic)            R^d               (ε, δ)-DP, L2 sensitivity, any ε > 0
//	ClipLaplace          APES Def. 4, Thm 1, Eq. (1)             [-Δf/2, Δf/2]     ε-LDP, outputs in [-A, A]
//	ClipLaplaceCalibrator APES analyzer (Eq. (1) inverted)       shuffled ε list   -
//	RandomizedRounding   FLAME Alg. 1, Eq. (1) (Balle et al.)    [0, 1]            ε-LDP, outputs {0..b}
//	BinaryRR             survey Eq. (12); E-APES Alg. 3          {0, 1}            ε-LDP
//	GRR                  survey Eq. (15) (corrected)             {0..k-1}          ε-LDP
//	Duchi                survey Eq. (13)                         [-1, 1]           ε-LDP
//	Piecewise            survey Eq. (14)                         [-1, 1]           ε-LDP, outputs [-C, C]
//	Harmony              survey §2.3                             [-1, 1]^d         ε-LDP for the whole vector
//	EuclideanLaplace     group-privacy Lemma 1, §4.2             R^n               ε·||x-x'||₂ d-privacy
//
// Each type's doc comment states its neighbouring relation, its guarantee
// and the paper and equation it implements. Padding (dummy) distributions
// are methods next to the randomizer they imitate: RandomizedRounding.Blanket
// (SS-Double, SS-Topk), ClipLaplace.Pad (S-APES), GRR.Blanket and
// BinaryRR.Blanket; the estimators that take padded totals (Debias,
// EstimateCounts) subtract the dummies' mean.
//
// # Randomness
//
// Every sampler takes a *rand.Rand (math/rand/v2) from package rng: a seeded
// PCG stream for reproducible simulation (rng.Stream), or a ChaCha8 CSPRNG
// keyed from crypto/rand for deployment (rng.NewCrypto). Nothing here reads
// a global generator. Vector methods (Perturb) work in place and do not
// allocate; ForEachClient spreads many clients over all cores with one
// generator per client, so results do not depend on scheduling.
//
// # Floating-point safety
//
// Textbook Laplace and Gaussian sampling on floats leaks the input through
// the low bits of the output (Mironov, CCS 2012). Laplace, Gaussian and
// ClipLaplace have a Secure variant (NewSecureLaplace, NewSecureGaussian,
// or Secure: true) that snaps every output to a power-of-two grid chosen
// from the noise scale alone, draws its noise at full floating-point
// precision (ziggurats on whole 64-bit words with float64 tables and
// full-precision uniforms in the tails, where the plain variants use the
// 32-bit rand.ExpFloat64 and rand.NormFloat64), and so makes the set of
// possible outputs independent of the input; the residual excess privacy loss is bounded in each type's doc
// (below 1e-8 for inputs within 1000 noise scales). Deployment, i.e. real
// clients with rng.NewCrypto, must use the secure variants; the plain ones
// are for simulation, where they are somewhat faster (docs/PERFORMANCE.md, "Local randomizers").
// The discrete mechanisms (RR, GRR, R_{γ,b}, Duchi, Harmony) have no
// such issue: their outputs are from a fixed finite set. Piecewise and
// EuclideanLaplace are not hardened.
//
// # Where the papers are ambiguous or wrong
//
//   - FLAME Algorithm 1 (R_{γ,b}): the rounding step produces {0, ..., b} but
//     the blanket is written Unif{1, ..., b} (not private at all) and γ is
//     the b-output k-RR weight; RandomizedRounding uses Unif{0, ..., b} and
//     γ = (b+1)/(e^ε+b), exactly ε-LDP and consistent with Eq. (1).
//     TestRoundingPaperVariants.
//   - Survey Eq. (15) (GRR) prints the second case as "v = 1 - x"; it must be
//     "v ≠ x". TestGRREq15Typo.
//   - Survey Eq. (14) (PM) omits the output range [-C, C].
//   - APES Definition 4 prints the same exponent twice in S; Eq. (1) is
//     correct but cancels catastrophically for λ >> A (S-APES), so Mean uses
//     an equivalent stable form. Theorem 1 holds only when the input range is
//     the whole [-Δf/2, Δf/2] (TestClipLaplaceSmallSensitivityIsNotPrivate).
//     The mean is flat at ±A (F'(±A) = 0), so calibration is ill-conditioned
//     near the clip bound.
//   - E-APES Algorithm 3 returns "z ∈ N" but z estimates a fraction; it is
//     unbiased only when budgets are independent of the data
//     (TestPersonalizedFrequency).
//   - Group-privacy Lemma 2 ((n+1)/ε² per component) is correct
//     (TestEuclideanLaplaceMoments).
//
// # Tests
//
// mechanismtest holds the statistical privacy test every mechanism runs:
// 10^6 draws on two extreme inputs, binned, with per-bin Chernoff confidence
// intervals and a union bound at an overall false-reject rate of 1e-6; each
// family also has a negative control (noise for 2ε claiming ε) that must be
// rejected. Estimators are checked for bias and variance against closed
// forms at 6 standard errors.
package mechanism
