// Package account is shufflefl's privacy accounting toolbox: subsampling,
// composition ((eps, delta), Rényi, Gaussian DP, d-privacy), conversions
// between privacy notions, the DP-FedAvg / DP-SGD accountant, the run's
// stateful accountant, the per-client privacy ledger and the
// personalized-budget generators used in experiments. Shuffle-model
// amplification bounds live in package amplify, which builds on this one.
//
// Everything here is pure computation except the Ledger, whose persistence
// is behind the Store interface. Every function validates its inputs with
// package checks and returns an error wrapping checks.ErrInvalid that names
// the violated condition; none returns NaN or panics on bad input. Where a
// value is found numerically, the search keeps the guaranteed side.
//
// # Accountants
//
// Three stateful types compose privacy loss, at two levels, each level an
// interface:
//
//	RunAccountant  (Record, Spent, Plan, PastTarget)  one per run
//	  *Accountant        composes the rounds' Statements; the smallest of
//	                     basic, advanced, RDP and PLD composition (PLDEpsilon)
//	Composer       (Steps, Delta)                     one method, many steps
//	  *RDPAccountant     Poisson-subsampled Gaussian steps, Rényi DP
//	  *pld.Accountant    any privacy loss distributions, FFT (PLDEpsilon's)
//
// A round's Statement is made from a protocol's Account (package protocol),
// which uses the stateless bounds of package amplify.
//
// # Conventions
//
// E-APES's composition over T rounds is GDPCompose (mu sqrt(T)); the GDP
// conversions are GDPToDelta, GDPToEpsilon and GDPMu (package amplify's GDP
// names delegate to them). Budget is the one (epsilon, delta) pair type
// (protocol.Budget and Cap are aliases). The Ledger refuses, before anything is
// recorded, a release that would take a client past its cap.
//
// Every function's doc comment gives the formula it computes and its
// source; docs/ARCHITECTURE.md draws the accountants' hierarchy.
package account
