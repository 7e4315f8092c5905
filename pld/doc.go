// Package pld is a rigorous privacy-loss-distribution (PLD) accountant:
// pessimistic discretisation of the privacy loss of dominating pairs,
// composition by FFT, and (epsilon, delta) statements whose delta includes
// every discretisation, truncation and floating-point error term (Koskela,
// Jälkö and Honkela, AISTATS 2020; Koskela, Jälkö, Prediger and Honkela,
// AISTATS 2021; Doroshenko, Ghazi, Kamath, Kumar and Manurangsi, "Connect
// the dots", PETS 2022, the pessimistic PLD of Google's dp_accounting).
// Everything is pure computation.
//
// # What a PLD is
//
// For a pair (P, Q) of output distributions of neighbouring inputs, the
// privacy loss distribution is the law of L = log(P/Q)(X), X ~ P (mass where
// Q = 0 is an atom at +Inf), and the hockey-stick divergence is
//
//	delta(eps) = H_{e^eps}(P || Q) = P(L = Inf) + E[(1 - e^{eps - L}); L finite].
//
// A PLD value holds both directions, remove (P vs Q) and add (Q vs P), and
// Delta is the larger. Constructors: Gaussian, Laplace, RandomizedResponse
// (= PureDP, the pair dominating every pure eps-DP mechanism), ApproxDP (the
// pair dominating every (eps, delta)-DP mechanism), FromPair (any two
// discrete distributions), SampledGaussian (DP-SGD / DP-FedAvg step,
// add/remove), ShuffleClones and ShuffleClonesHetero (shuffling of LDP
// reports by the clone reduction of Feldman, McMillan and Talwar; the
// relation there is substitution). Compose, SelfCompose and the Accountant
// compose independent mechanisms (also adaptively: the product of
// dominating pairs dominates the adaptive composition). SubsamplePoisson
// applies amplification by Poisson subsampling (Zhu, Dong and Wang, AISTATS
// 2022) for add/remove; it does not apply to the substitution pairs of
// ShuffleClones, and no sampling-without-replacement amplification for
// substitution is provided at the PLD level.
//
// # Representation and error model
//
// Each direction is a vector of masses on the grid {(off+i) h} (h =
// Options.Interval) plus an atom at +Inf. The values held are computed
// numbers c; the package keeps, for each direction, a reference measure r —
// a pessimistic discretisation of the true PLD, i.e. the PLD of a pair that
// dominates the true pair in the Blackwell sense (the true pair is a
// post-processing of it, so every hockey-stick divergence H_alpha, alpha >= 0,
// is at least the true one) — and two error bounds:
//
//	c = (1 + theta) r + e   entrywise, |theta| <= rho (RelativeErrorBound),
//	                        ||e||_1 <= E (ErrorBound), the +Inf atom included.
//
// rho collects the rounding of the computed masses at construction (a few
// hundred ulps) and compounds as (1+rho_1)(1+rho_2) - 1 under composition,
// (1+rho)^k - 1 under k-fold composition. E collects FFT round-off and
// wrap-around; under composition it propagates as E_1 T_2 + T_1 E_2 + E_1 E_2
// (T the total masses), under k-fold composition as (T + E)^k - T^k. Since
// delta is a sum of masses with weights in [0, 1], the true delta is at most
//
//	Delta_grid(eps) = (delta_c(eps) (1 + s) + a + E) / (1 - rho),
//
// where delta_c is the delta computed from c, s = 2 (n+8) u the relative
// bound on the floating-point summation of n terms (u = 2^-53) and a =
// 4u (max|l| + |eps| + 1) delta_c covers the rounding of the grid values.
//
// # Pessimistic discretisation: connect the dots
//
// A loss value l with P-mass p, l_i <= l < l_{i+1} = l_i + h, is split into
// b = p (1 - e^{-(l-l_i)})/(1 - e^{-h}) at l_{i+1} and a = p - b at l_i. This
// keeps both the P-mass p and the Q-mass p e^{-l}, and the original atom is
// the merge (a post-processing) of the two new ones, so the discretised pair
// dominates the true pair in the Blackwell sense, hence for every
// hockey-stick divergence and under any composition. For a continuous part
// (Gaussian, Laplace), each cell gets its P-mass and the part moved up,
// integral (1 - e^{l_i - l})/(1 - e^{-h}) dP, by Gauss-Legendre quadrature on
// pieces much shorter than the scale of the density (quadrature error far
// below the rounding already in rho); the part moved up is then inflated by
// 64u and capped, which only moves mass up. Computed losses of atoms are
// rounded up by a bound on their floating-point error before the split.
//
// Connect-the-dots is used instead of rounding every loss up to the next grid
// point because rounding up shifts every composed loss by up to h, a bias of
// k h after k compositions (23.6 for h = 1e-4 and FLAME's 235,500
// per-coordinate compositions), whereas connect-the-dots preserves
// E[e^{-L}] and its error is of second order: each split adds at most
// h^2/4 (about h^2/6 on average) to the variance of the loss, and since
// the composed loss is nearly Gaussian with mean = variance/2 (E[e^{-L}] =
// 1), k compositions move epsilon by about (k h^2/12)(1 + z/sigma_K),
// sigma_K = sqrt(k) sigma_L the composed standard deviation and z about 4
// to 5 at deltas 1e-6 to 1e-10. Measured on 39,250 clone pairs (eps0 =
// 0.1455, n = 1000, delta 1e-6, converged 4.7697): +0.4% at h = 1e-3,
// +0.035% at 3e-4, +0.004% at 1e-4, +4.7% at 3.5e-3; for FLAME's shuffled
// coordinates the epsilon at h = 1e-4 is 0.8% above the converged value,
// at h = 2e-5 0.03%. Both are pessimistic; rounding up is the special
// case b = p.
//
// Tails: at construction and after every composition, lower-tail mass of at
// most TailMass/2 is moved up to the lowest kept grid point and upper-tail
// mass of at most TailMass/2 goes to the +Inf atom, where it counts fully in
// delta. Moving mass up (to a larger loss, or to +Inf) is a Blackwell
// pessimistic operation: the Q-mass that no longer matches goes to a -Inf
// atom of the canonical pair. The mass dropped by trimming negligible
// binomial windows (ShuffleClones, below 1e-45 with a geometric bound on the
// rest) goes to +Inf as well.
//
// # Composition by FFT and its error bound
//
// Compose convolves two directions by a zero-padded radix-2 FFT of length
// N >= len(a) + len(b) - 1 (no wrap-around). The FFT is the package's own
// iterative radix-2 Cooley-Tukey transform with twiddle factors computed
// individually by sincos of an exactly reduced angle in [0, pi/4]
// (|error| <= mu = 8u). Higham ("Accuracy and Stability of Numerical
// Algorithms", 2nd ed., Theorem 24.2) bounds such a transform normwise:
//
//	||fl(F x) - F x||_2 <= kappa ||F x||_2,  kappa = t eta / (1 - t eta),
//	eta = mu + gamma_4 (sqrt 2 + mu),  t = log2 N,  gamma_4 = 4u/(1-4u),
//
// and ||F x||_2 = sqrt(N) ||x||_2. With A, B the transforms of a, b and Y
// their computed pointwise product, ||Y - A.B||_2 <= kappa sqrt(N)
// (||a||_2 max|B^| + ||a||_1 ||b||_2) + sqrt(2) gamma_2 max|A^| ||B^||_2.
// The inverse (unscaled, then divided by N exactly) gives y with
// ||y - a*b||_2 <= (||Y - A.B||_2 + kappa ||Y||_2)/sqrt(N), and since the
// error is spread over N outputs,
//
//	||y - a*b||_1 <= ||Y - A.B||_2 + kappa ||Y||_2,
//
// which is added to E (clamping negative outputs to 0 only reduces the
// error, since a*b >= 0). All norms are computed from the actual vectors.
// For typical sizes (N = 2^17) kappa is about 2e-14 and the bound about
// 1e-12 per composition.
//
// SelfCompose(k) raises the transform to the k-th power instead of
// squaring repeatedly, on a window of the composed loss chosen by Chernoff
// bounds computed from the actual masses: for the computed (non-negative)
// measure m of total M, m^{*k}(S >= t) <= e^{-lambda t} (sum_i m_i
// e^{lambda i})^k for lambda > 0 and the mirror bound for lambda < 0; the
// window [lo, hi) has at most tau = TailMass/8 outside on each side.
// Cyclic convolution of length N >= hi - lo wraps the outside mass into the
// window; the result is compared with the reference in which the mass below
// lo is moved up to lo and the mass above hi goes to +Inf (tau is added to
// the +Inf atom), so the l1 error is at most 4 tau. Round-off: with X^ the
// computed transform (per-entry error delta_j), the k-th power has error at
// most k (|X^_j| + delta_j)^{k-1} delta_j plus the rounding of the power
// itself, |Y_j| (8u + 4 k u (|log|X^_j|| + |arg X^_j| + 1)); the l2 norm
// of these plus kappa ||Y||_2 bounds the l1 error of the output as above.
// For the FFT values delta_j = kappa sqrt(N) ||m||_2 (an l_inf bound from
// the l2 bound); because the power amplifies this by up to k, every
// frequency whose contribution would exceed 1e-15/sqrt(N) is recomputed by a
// direct DFT over the non-zero masses with Neumaier compensated summation,
// for which delta_j <= (mu + 3u + sqrt 2 (2u + 16 n u^2)) M (Higham,
// Section 4.3). Only the few frequencies where |X_j|^k is not negligible
// qualify, so this costs little. The window, recomputation and error terms
// are what make the direct power rigorous for k in the hundreds of
// thousands; the reported ErrorBound is then about 1e-11.
//
// # Small deltas: the tilted bound
//
// FFT round-off is absolute (about 1e-12 of the total mass), so the grid
// bound cannot resolve deltas below about 1e-12. A direction that is the
// k-fold self-composition of a pair without additive error (every pair the
// constructors build; SelfCompose records it) can be recomputed under an
// exponential tilt: with r the base's reference measure and a > 0, the
// tilted base a T r, (T r)_i = r_i e^{lambda l_i}, composes to
// a^k T(r^{*k}) because losses add, so
//
//	delta_fin(eps) = sum_j g_j R_j,  R = (a T r)^{*k},
//	g_j = a^{-k} e^{-lambda l_j} (1 - e^{eps - l_j})_+ <= G = a^{-k} c_lambda e^{-lambda eps}.
//
// R is computed like any self-composition (same Chernoff window, same
// round-off analysis, without the direct-DFT recomputation), and
//
//	delta_fin(eps) <= (sum_j g_j y_j + ||g||_2 e_2 + G e_1) / (1 - rho),
//
// y the computed window, e_2 = efft/sqrt(N) the l2 bound of its round-off
// (Parseval; Cauchy-Schwarz against g), e_1 the l1 rest (the mass outside
// the window, 4 tau; tilted entries that underflowed, 1e-290 each), rho
// the compounded relative error (the tilt adds (2 lambda width + 8) u per
// entry). With lambda the saddle point of eps (the minimiser of the
// Chernoff bound k log M(lambda) + log c_lambda - lambda eps, searched on
// the grid lambda = e^{i/4}, 1e-3 to 4096), the tilted composition is
// centred near eps, the weights g are concentrated there and G is about
// delta itself, so every error term is relative to delta. Delta and
// Epsilon use it when the grid bound's additive error exceeds 1% of the
// delta at hand (the tilted views are cached per tilt); Compose and
// Regrid drop it. At q = 0.001, sigma = 1, 100 steps, TailMass 1e-30 it
// gives delta(1) = 2.27e-14 and delta(2) = 7.6e-19 against an independent
// bracket [2.21e-14, 2.31e-14] and [7.44e-19, 7.75e-19]
// (TestSampledGaussianSmallDelta); the grid bound gave 2.0e-12 and 2.3e-13.
// The construction's TailMass still puts up to TailMass/2 per composition
// at +Inf: for deltas near k TailMass/2, build with a smaller TailMass.
//
// # The Chernoff (Rényi) certificate
//
// Each
// direction therefore also carries, for 33 orders alpha = 1 + lambda up to
// 1024, an upper bound on E[e^{lambda L}; L finite] of a dominating pair
// (exact for Gaussian and Laplace, from the atoms or the connect-the-dots
// grid before truncation otherwise; Rényi divergences are monotone under
// post-processing, so moments of a dominating pair are larger) and a bound
// on P(L = Inf). Moments multiply under composition. Since
// (1 - e^{-x})_+ <= c_lambda e^{lambda x} with
// c_lambda = (1/(1+lambda)) (lambda/(1+lambda))^lambda,
//
//	delta(eps) <= P(L = Inf) + min_lambda c_lambda e^{-lambda eps} E[e^{lambda L}; L finite],
//
// the improved RDP-to-DP conversion of Canonne, Kamath and Steinke 2020.
// Delta takes, per direction, the smaller of the grid bound and this one
// (both are rigorous), then the larger over directions. RenyiEpsilon
// reports the certificate alone (an RDP accountant on the same pairs).
//
// # Epsilon
//
// Epsilon inverts the grid bound exactly: scanning the grid downward it
// keeps A_j = sum_{i>j} c_i and S_j = sum_{i>j} c_i (1 - e^{l_j - l_i})
// (S_{j-1} = (1 - e^{-h}) A_{j-1} + e^{-h} S_j, all terms non-negative), and
// on the cell where S crosses the target solves S(eps) = A_j - e^{eps - l_j}
// (A_j - S_j) in closed form; the certificate is inverted per order in closed
// form; the smaller is taken per direction, the larger over directions, and
// the result is checked (and nudged up if needed) so that
// Delta(Epsilon(delta)) <= delta always holds.
//
// # Poisson subsampling
//
// SubsamplePoisson uses the canonical pair of the remove direction: P = the
// loss distribution, Q = e^{-l} P on the grid plus the remaining Q-mass at a
// -Inf loss. The computed distribution is first repaired into a measure that
// stochastically dominates the reference: the l1 uncertainty E + rho (mass)
// is removed from the bottom and put at +Inf, and the total is brought to 1
// (either the removed mass lies below a threshold t and c(L > t) + E >=
// r(L > t), or nothing is left below t and the total is 1). Without an
// additive error (c = (1+theta) r) the masses are divided by 1 - rho
// instead, which dominates r entrywise, and the excess over 1 is removed
// from the bottom: no mass goes to +Inf. A stochastically
// larger loss distribution is obtained by moving mass up, which is
// pessimistic as above, so the repaired pair still dominates and Zhu, Dong
// and Wang's Theorem 11 applies: remove (qP + (1-q)Q vs Q), loss
// log(q e^l + 1 - q); add (Q vs qP + (1-q)Q), loss -log(q e^l + 1 - q); both
// discretised by connect-the-dots again.
//
// # Shuffling: the clone reduction
//
// ShuffleClones builds the exact pmf of Feldman, McMillan and Talwar's pair
// (P0, P1) for the substitution relation: C ~ Bin(n-1, e^-eps0) clones,
// A ~ Bin(C, 1/2), D ~ Bern(e^eps0/(1+e^eps0)), the outcome (A + D, C - A +
// 1 - D) against (A + 1 - D, C - A + D). Given c and the first count y the
// loss is log((e^eps0 r + 1)/(r + e^eps0)) with r = y/(c - y + 1), evaluated
// as log1p(expm1(eps0) (r-1)/(r + e^eps0)) for r >= 1 and by antisymmetry
// for r < 1 (stable from eps0 = 1e-6 to several hundred); the binomial
// probabilities come from Loader's saddle-point formula at the mode and ratio
// recurrences outward, with relative error bounds in rho. The map (y1, y2)
// -> (y2, y1) swaps P0 and P1, so both directions coincide.
// ShuffleClonesHetero uses the exact Poisson-binomial pmf of the clone
// count instead (APES's Echo-of-Neighbors generalisation).
//
// # Options
//
// The zero Options mean Interval = 1e-4 and TailMass = 1e-15. The cost of
// a k-fold composition is set by the width of the composed loss over the
// interval, about 16.5 sqrt(k) sigma_L / h grid points for a per-step loss
// standard deviation sigma_L (PLD.LossStdDev); account.PLDEpsilon sizes h
// to put that width on 2^16 points. For k compositions choose h with
// (k h^2/12)(1 + z/sigma_K) small against the epsilon accuracy wanted (see
// Pessimistic discretisation above); for tiny local budgets (ShuffleClones
// with eps0 = 0.01) h = 2e-5 gives epsilons within 0.1% of the limit.
// PLDs with different
// Intervals are composed on the coarser grid (Regrid, connect-the-dots of
// the grid points).
package pld
