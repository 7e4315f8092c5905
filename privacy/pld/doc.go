// Package pld is a rigorous privacy-loss-distribution (PLD) accountant:
// pessimistic discretisation of the privacy loss of dominating pairs,
// composition by FFT, and (epsilon, delta) statements whose delta includes
// every discretisation, truncation and floating-point error term (Koskela,
// Jälkö and Honkela, AISTATS 2020; Doroshenko et al., "Connect the dots",
// PETS 2022). Everything is pure computation.
//
// A PLD holds both directions of a dominating pair (remove and add) on a
// grid of interval Options.Interval, with a relative (RelativeErrorBound)
// and an additive (ErrorBound) error bound. Constructors: Gaussian, Laplace,
// RandomizedResponse (= PureDP), ApproxDP, FromPair, SampledGaussian (a
// DP-SGD / DP-FedAvg step, add/remove), ShuffleClones and
// ShuffleClonesHetero (shuffled LDP reports by the clone reduction of
// Feldman, McMillan and Talwar; substitution). Compose, SelfCompose and
// Accountant compose; SubsamplePoisson amplifies add/remove pairs by Poisson
// subsampling; Regrid moves a PLD to a coarser grid. Delta is a rigorous
// upper bound (the smaller of the grid bound and a Chernoff, i.e. Rényi,
// certificate); Epsilon inverts it so that Delta(Epsilon(delta)) <= delta.
//
// The zero Options mean Interval = 1e-4 and TailMass = 1e-15;
// account.PLDEpsilon sizes the interval for a given composition.
//
// The representation, the error model and every derivation (connect the
// dots, the FFT error bound, the tilted bound for small deltas, the Chernoff
// certificate, the inversion for epsilon, Poisson subsampling, the clone
// reduction, the choice of interval) are in docs/PLD.md, whose section
// names the code's comments refer to.
package pld
