// Package amplify computes central differential-privacy guarantees of the
// shuffle model: n reports, each produced by a local randomizer that is
// eps0-LDP (uniform) or eps_i-LDP (personalized), are shuffled before an
// untrusted analyzer sees them. Every function is pure: numbers in, a
// guarantee (or an error naming the violated condition) out.
//
// Uniform local epsilon:
//   - Erlingsson et al. 2019 (SODA): eps = 12 eps0 sqrt(log(1/delta)/n) with
//     the validity ranges used in Balle et al. 2019's comparisons (Erlingsson).
//   - Balle, Bell, Gascón and Nissim 2019 (the privacy blanket): the closed
//     form for R_{gamma,b} (FLAME Lemma 1, BlanketClosedForm) and the numerical
//     Hoeffding and Bennett bounds for the Laplace mechanism, R_{gamma,b},
//     k-ary randomized response and a generic eps0-LDP randomizer
//     (BlanketEpsilon). The corrected Bennett bound is the default; the
//     pre-July-2020 variant with the extra factor 1/(m (e^eps - 1)) in every
//     term is available only as BennettLegacyFLAME, which understates delta.
//   - Feldman, McMillan and Talwar 2022 ("hiding among the clones"): the
//     closed forms (ClonesClosedForm, ClonesTheorem) with their validity
//     condition and the numerical bound (ClonesNumerical), computed for every
//     clone count exactly, with a guaranteed upper bound on delta.
//   - Best: the tightest valid rigorous bound, naming it.
//
// Personalized local epsilons (APES, E-APES): UniS (APES Eq. 2), EoN
// (APES Theorem 4 / Lemma 6, closed and numerical form with exact
// Poisson-binomial clone counts; these need APES's hidden-budget
// assumption, recorded in Bound.Assumption), EoN for public budgets
// (EoNWorstCase, the standard definition) and E-APES mu-GDP (labelled as an
// approximation, never returned by Best). BestPersonal chooses among
// standard-definition bounds only; BestPersonalOpts can admit the
// hidden-budget assumption.
//
// Numerics: every numerical bound is a guaranteed upper bound for local
// epsilons from 1e-6 to beyond 60 (expm1/log1p forms, no subtraction of
// nearly equal quantities; eps0 is returned when nothing better is
// certified). ShuffledRRLowerBound, the exact epsilon of shuffled binary
// randomized response, is a lower bound that any generic bound must respect.
//
// Protocol statements of FLAME (SS-Simple Theorem 1; SS-Double, sound, and
// its published Theorems 3-4, labelled NOT RIGOROUS; SS-Topk;
// nu-index privacy Theorem 5 / Proposition 2) and S-APES Proposition 1 build
// on these, using the subsampling and composition lemmas of package account.
package amplify
