package fl_test

import (
	"fmt"
	"log"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/fl"
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

// ExampleNewModel_cnn builds the group-privacy paper's network for 28×28
// images with 62 classes (FEMNIST) and lists the blocks of its parameter
// vector: the paper's n0 = 1,206,590.
func ExampleNewModel_cnn() {
	m, err := fl.NewModel(fl.CNN, 28*28, 62)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("d =", m.Dim())
	for _, l := range m.Layers() {
		fmt.Printf("%-12s offset %7d shape %v\n", l.Name, l.Offset, l.Shape)
	}
	_, err = fl.NewModel(fl.CNN, 5*5, 10)
	fmt.Println(err)
	// Output:
	// d = 1206590
	// conv1.weight offset       0 shape [3 3 1 32]
	// conv1.bias   offset     288 shape [32]
	// conv2.weight offset     320 shape [3 3 32 64]
	// conv2.bias   offset   18752 shape [64]
	// fc1.weight   offset   18816 shape [9216 128]
	// fc1.bias     offset 1198464 shape [128]
	// fc2.weight   offset 1198592 shape [128 62]
	// fc2.bias     offset 1206528 shape [62]
	// invalid parameter: model cnn needs images of side at least 6, got 5×5
}
