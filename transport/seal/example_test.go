package seal_test

import (
	"fmt"

	"github.com/shufflefl/shufflefl/transport/seal"
)

// Example shows one round of a per-coordinate protocol: a client seals each
// coordinate of its report separately, the shuffler reads only the labels,
// adds a dummy sealed with the same public key and permutes, and the analyzer
// opens the batch without being able to tell which message was whose.
func Example() {
	// The analyzer's key pair (shufflefl certs writes it to disk).
	analyzerKey, err := seal.GenerateKey(seal.X25519)
	if err != nil {
		panic(err)
	}
	const run, round = "run-2026-11-24", 1

	// Client: one message per coordinate.
	client, _ := seal.NewSealer(analyzerKey.Public(), run)
	msgs, _ := client.SealCoordinates(round, nil, []float64{0.25, -0.5, 1})

	// Shuffler: sees labels and sizes, never values; adds a dummy for
	// coordinate 1 and reverses the order (a real shuffler permutes with
	// a CSPRNG).
	shuffler, _ := seal.NewSealer(analyzerKey.Public(), run)
	dummy, _ := shuffler.Seal(round, seal.Coord(1), []float64{0.75})
	msgs = append(msgs, dummy)
	for i, j := 0, len(msgs)-1; i < j; i, j = i+1, j-1 {
		msgs[i], msgs[j] = msgs[j], msgs[i]
	}
	env, _ := seal.Parse(msgs[0])
	fmt.Printf("shuffler sees: round %d, %v, %d bytes\n", env.Round, env.Label, len(msgs[0]))

	// Analyzer: one Opener per round.
	opener, _ := seal.NewOpener(analyzerKey, run, round, seal.Spec{
		Mode: seal.PerCoordinate, Dim: 3, Values: seal.Range{Lo: -1, Hi: 1},
	})
	sums := make([]float64, 3)
	for _, m := range msgs {
		label, v, err := opener.Open(m)
		if err != nil {
			continue // counted in opener.Stats()
		}
		sums[label.Index] += v[0]
	}
	_, _, err = opener.Open(msgs[0]) // a replay
	fmt.Println("sums:", sums)
	fmt.Println("replay:", err)
	fmt.Printf("stats: %+v\n", opener.Stats())
	// Output:
	// shuffler sees: round 1, coord/1, 77 bytes
	// sums: [0.25 0.25 1]
	// replay: seal: message rejected (replay): encapsulation already opened in round 1
	// stats: {Accepted:4 Malformed:0 Suite:0 Round:0 Label:0 Length:0 Replay:1 Auth:0 NonFinite:0 Range:0}
}
