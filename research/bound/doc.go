// Package bound states named privacy bounds from typed parameters: privacy
// amplification by shuffling (Erlingsson, the privacy blanket, FMT's clones,
// best), personalized budgets (UniS, EoN, E-APES), the FLAME protocols
// (SS-Simple, SS-Double, SS-Topk), S-APES, subsampling, composition over
// rounds (basic, advanced, rdp, pld, best) and the subsampled Gaussian
// mechanism. It is what `shufflefl bound` computes.
//
// Defaults (or Register, which binds the parameters to flags) gives a
// command's parameters; Compute validates them and returns a Result: the
// bound with its method's name and whether it is an approximation, the
// comparison rows, the named figures behind it (Extra, e.g. the
// count-statistic lower bound of flame-double) and lines to print, which
// Result.WriteText and WriteJSON format as `shufflefl bound` prints them
// (Help and Examples are the command's help). Every
// figure is a proven upper bound unless its Bound is marked Approximation
// (E-APES, FLAME's published theorems, the legacy Bennett code). The
// computations are those of packages amplify and account; errors name a
// parameter by its flag name (--eps0), as the CLI prints them.
package bound
