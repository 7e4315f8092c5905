// Package account is shufflefl's privacy accountant toolbox: subsampling,
// composition, the DP-FedAvg / DP-SGD accountant, conversions between privacy
// notions, the per-client privacy ledger and the personalized-budget
// generators used in experiments. Shuffle-model amplification bounds live in
// package amplify, which builds on this one.
//
// Everything here is pure computation except the Ledger, whose persistence is
// behind the Store interface. Every function validates its inputs with
// package checks and returns an error wrapping checks.ErrInvalid that names
// the violated condition; none returns NaN or panics on bad input. Where a
// value is found numerically, the search keeps the guaranteed side (the
// returned value always satisfies the privacy target).
//
// # Subsampling
//
// SubsampleWOR (sampling m = q n records without replacement, substitution
// neighbours) and SubsamplePoisson (each record independently with
// probability q, add/remove neighbours) turn an (eps, delta)-DP mechanism
// into a (log(1 + q (e^eps - 1)), q delta)-DP one: Balle, Barthe and Gaboardi,
// "Privacy amplification by subsampling", NeurIPS 2018, Theorems 9 and 8;
// FLAME (Liu et al., AAAI 2021) Lemma 4 states the without-replacement case.
// SubsampleWOREpsilonInverse inverts the epsilon map.
//
// # Composition of (eps, delta) guarantees
//
//   - ComposeBasic, ComposeBasicHetero: (sum eps_i, sum delta_i), Dwork and
//     Roth 2014, Theorem 3.16 (FLAME Lemma 2 for the pure case).
//   - ComposeAdvanced: sqrt(2k ln(1/delta')) eps + k eps (e^eps - 1) with
//     delta' + k delta, Dwork, Rothblum and Vadhan 2010 (Dwork and Roth,
//     Theorem 3.20). FLAME Lemma 3 and APES Lemma 2 state this same formula.
//     ComposeAdvancedHetero is its form for a list of (eps_i, delta_i),
//     ComposeBest takes the smaller of basic and advanced.
//   - ComposeParallel: (max eps_i, max delta_i) on disjoint data (APES Lemma 1).
//   - ComposeDPrivacy, DPrivacyLoss: d-privacy (metric privacy) levels add up
//     under independent composition, Galli et al., "Group privacy for
//     personalized federated learning", Theorem 1; DPrivacyLeakage is their
//     per-participation leakage dim/nu (Section 4.1).
//
// # Rényi DP and the DP-FedAvg accountant
//
// ComposeRDP adds RDP curves (Mironov 2017, Proposition 1); GaussianRDP is
// alpha/(2 sigma^2). RDPToEpsilon converts a curve with the improved
// conversion eps = rho + log((alpha-1)/alpha) - (log delta + log alpha)/(alpha-1)
// (Balle et al. 2020, Theorem 21; Canonne, Kamath and Steinke 2020,
// Proposition 12), RDPToDelta inverts it, and RDPToEpsilonClassic is
// Mironov's original rho + log(1/delta)/(alpha-1), kept to reproduce older
// published numbers.
//
// SampledGaussianRDP is the RDP of the Poisson-subsampled Gaussian mechanism
// (Mironov, Talwar and Zhang 2019): exact binomial expansion at integer
// orders, their Section 3.3 series at fractional orders, and, where that
// series converges only polynomially, a trapezoid-rule quadrature of the
// defining integral with a proven error below e^-50. SampledGaussianEpsilon
// composes it over steps (rounds) and converts it over DefaultRDPOrders — the
// DP-SGD accountant of Abadi et al. 2016 and the DP-FedAvg accountant of
// McMahan et al. 2018 (q = client sampling rate, sigma = noise multiplier).
// It caches the per-step curve per (q, sigma), so a per-round call costs
// microseconds. CalibrateNoiseMultiplier finds the smallest sigma meeting a
// target epsilon by bisection. The computations are tested against the
// published test values of TensorFlow Privacy and Google's dp_accounting
// (testdata/published.json) and against a slow reference integral.
//
// # Gaussian differential privacy
//
// ComposeGDP (mu = sqrt(sum mu_i^2)), GaussianMu, and the conversions
// GDPToDelta (delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)),
// GDPToEpsilon and GDPMu (its inverses): Dong, Roth and Su, "Gaussian
// differential privacy", JRSS-B 2022, Corollaries 2.13 and 3.3. E-APES (Chen,
// Cao and Ge 2023) states its shuffle bound as mu-GDP.
//
// # Ledger
//
// Ledger records every release of every client (round, mechanism, local
// (eps_i, delta_i), central contribution) and refuses, with a *CapError and
// before anything is recorded, a release that would take the client's spent
// local budget over its cap; releasing twice in a round is an error
// (ErrDuplicateRelease). A client "decides right before releasing" (Galli et
// al., Section 5). The Store interface (MemoryStore in memory) is where a
// durable implementation plugs in: Charge returns only after Store.Append
// made the charge durable, and a report may be released only after Charge
// returned nil. The ledger is safe for concurrent use.
//
// # Personalized budgets
//
// Budgets draws personalized local epsilons from a named distribution:
// uniform1, uniform2, gauss1, gauss2, mixgauss1, mixgauss2 (APES Table 2,
// clip ranges included), eapes-uniform1, eapes-uniform2, eapes-gauss1,
// eapes-gauss2, eapes-gauss3 (E-APES Table 3) and eapes-groups (E-APES
// Section 4.2: 54% conservative at 0.1, 37% moderate at 0.5, 9% liberal at 1;
// GroupBudgets for other groups). BudgetDistributions lists the names and
// BudgetSource gives each one's table row. ReadBudgets reads budgets from a
// file, one per line or CSV, rejecting bad values with their line number.
package account
