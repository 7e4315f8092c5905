package bound_test

import (
	"flag"
	"fmt"
	"os"

	"github.com/shufflefl/shufflefl/research/bound"
)

// Compute states the Feldman-McMillan-Talwar bound for 100,000 reports,
// each 4-LDP, at delta 1e-6.
func ExampleCompute() {
	p, _ := bound.Defaults("clones")
	p.Eps0, p.N, p.Delta = 4, 100000, 1e-6
	r, err := bound.Compute("clones", &p)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Bound.Name, bound.EpsUp(r.Bound.Epsilon), bound.DeltaUp(r.Bound.Delta), bound.Rigorous(r.Bound))
	// Output: clones-numerical 0.16977 1e-06 true
}

// Register gives a command's parameters their defaults (here FLAME's
// SS-Double with the paper's settings); the sound statement (by default
// the tightest route, here the random allocation) comes with the
// count statistic's lower bound on the true epsilon.
func ExampleRegister() {
	fs := flag.NewFlagSet("flame-double", flag.ContinueOnError)
	var p bound.Params
	bound.Register(fs, "flame-double", &p)
	if err := fs.Parse([]string{"--delta", "1e-6"}); err != nil {
		fmt.Println(err)
		return
	}
	p.Given = map[string]bool{"delta": true}
	r, err := bound.Compute("flame-double", &p)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: epsilon %s, count lower bound %.4f\n", r.Bound.Name, bound.EpsUp(r.Bound.Epsilon), r.Extra["count_lower_bound"])
	// Output: ss-double-allocation: epsilon 0.185318, count lower bound 0.1609
}

// Defaults and a target: the largest local epsilon whose shuffled
// guarantee over 10 rounds, composed by the tightest method, is at most 1.
func ExampleDefaults() {
	p, _ := bound.Defaults("clones")
	p.N, p.Delta, p.Rounds, p.TargetEpsilon = 10000, 1e-8, 10, 1
	p.Given["target-epsilon"] = true
	r, err := bound.Compute("clones", &p)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Text[0])
	fmt.Println(r.Bound.Name, "composed by", r.Extra["composition"])
	// Output:
	// largest local eps0 = 1.29361 for target central epsilon 1 (n = 10000, delta = 1e-08 per round)
	// clones-numerical composed by basic
}

// Figure writes large figures in full.
func ExampleFigure() {
	fmt.Println(bound.Figure(23549.7, 4), bound.Figure(1e-5, 3))
	// Output: 23550 1e-05
}

// WriteText prints a result as `shufflefl bound` does; WriteJSON writes it
// as one JSON object.
func ExampleResult_WriteText() {
	p, _ := bound.Defaults("compose")
	p.Eps0, p.Rounds, p.DeltaPrime, p.Composition = 0.5, 100, 1e-6, "basic"
	p.Given = map[string]bool{"composition": true}
	r, err := bound.Compute("compose", &p)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := r.WriteText(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// compose-basic: epsilon = 50, delta = 0
	//   (100 rounds, basic composition)
	//   composition = basic
}
