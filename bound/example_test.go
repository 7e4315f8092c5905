package bound_test

import (
	"flag"
	"fmt"

	"shufflefl/bound"
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
// SS-Double with the paper's settings); the sound statement comes with the
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
	// Output: ss-double-sound: epsilon 17.7385, count lower bound 0.1609
}
