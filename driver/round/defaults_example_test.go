package round_test

import (
	"fmt"

	"github.com/shufflefl/shufflefl/driver/round"
)

// A user gives the protocol and the rounds; the protocol's own defaults fill
// the rest, and the settings given are kept.
func ExampleApplyDefaults() {
	c := round.DefaultConfig()
	c.Protocol, c.Rounds = "ss-double", 4
	given := map[string]bool{"protocol": true, "rounds": true}
	if err := round.ApplyDefaults(&c, func(key string) bool { return given[key] }); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Protocol, c.Clients, c.Rounds, c.Clip, c.TargetEpsilon, c.Delta, c.Options["randomizer"])
	// Output: ss-double 2000 4 0.02 8 1e-06 1
}

// The configuration of `shufflefl run` without flags.
func ExampleRunDefaults() {
	c := round.RunDefaults()
	fmt.Printf("%s: %d clients, %d rounds, cumulative (%g, %g)\n", c.Protocol, c.Clients, c.Rounds, c.TargetEpsilon, c.Delta)
	// Output: ss-simple: 2000 clients, 10 rounds, cumulative (8, 1e-06)
}
