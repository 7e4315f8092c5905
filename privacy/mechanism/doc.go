// Package mechanism holds the local randomizers of shufflefl: every
// mechanism of the five source papers, with its calibration, its sampler and
// the analyzer-side estimator that undoes its bias: Laplace, Gaussian,
// ClipLaplace (with ClipLaplaceCalibrator), RandomizedRounding, BinaryRR,
// GRR, Duchi, Piecewise, Harmony and EuclideanLaplace. Each type's doc
// comment states its neighbouring relation, its guarantee and the paper and
// equation it implements; padding (dummy) distributions are methods next to
// the randomizer they imitate (RandomizedRounding.Blanket, ClipLaplace.Pad,
// GRR.Blanket, BinaryRR.Blanket).
//
// Every sampler takes a *rand.Rand from package rng (a seeded stream in
// simulation, a CSPRNG in deployment); nothing reads a global generator.
// Laplace, Gaussian and ClipLaplace have Secure variants that close the
// floating-point leak of textbook sampling (Mironov, CCS 2012); deployment
// must use them. PoissonExact and SkellamExact are integer-only exact
// samplers of the Poisson and Skellam distributions for rational means.
//
// docs/MECHANISMS.md has the table of mechanisms and their sources, the
// floating-point safety argument, where the papers are ambiguous or wrong,
// and how the tests (package mechanismtest) decide.
package mechanism
