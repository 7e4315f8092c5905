package fl_test

import (
	"fmt"
	"log"

	"shufflefl/fl"
	"shufflefl/rng"
)

// Example trains logistic regression with FedAvg on a toy problem: two
// clients, three rounds, the server averaging the clients' deltas.
func Example() {
	// Four 2-pixel examples: class 0 lights pixel 0, class 1 pixel 1.
	ex := fl.Examples{
		X:        []float32{1, 0, 0.9, 0, 0, 1, 0, 0.8},
		Y:        []uint8{0, 0, 1, 1},
		Features: 2,
	}
	shards := [][]int{{0, 2}, {1, 3}}

	m, err := fl.NewModel("logreg", ex.Features, 2)
	if err != nil {
		log.Fatal(err)
	}
	const seed = 42
	global := make([]float64, m.Dim())
	m.Init(rng.Stream(seed, rng.LabelInit), global)

	cfg := fl.LocalConfig{Epochs: 5, Batch: 1, LR: 0.5}
	trainer := fl.NewTrainer(m)
	delta := make([]float64, m.Dim())
	for round := range 3 {
		sum := make([]float64, m.Dim())
		for client, idx := range shards {
			r := rng.Stream(seed, rng.LabelTraining, uint64(round), uint64(client))
			if _, err := trainer.LocalUpdate(delta, r, global, ex, idx, cfg); err != nil {
				log.Fatal(err)
			}
			for i, v := range delta {
				sum[i] += v / float64(len(shards))
			}
		}
		for i := range global {
			global[i] += sum[i]
		}
	}
	acc, loss, err := fl.Evaluate(m, global, ex, 2)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("d=%d accuracy=%.2f loss<0.2: %v\n", m.Dim(), acc, loss < 0.2)
	// Output: d=6 accuracy=1.00 loss<0.2: true
}
