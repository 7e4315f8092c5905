package audit_test

import (
	"context"
	"fmt"

	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/research/audit"
)

// A threshold test caught 30,000 of 100,000 positives and 5,000 of 100,000
// negatives: with 95% confidence the mechanism is not eps-DP for any eps
// below eps_lower. (By the normal approximation, independently:
// ln((0.3 - 1.96·√(0.21/10^5)) / (0.05 + 1.96·√(0.0475/10^5))) = 1.7556.)
func ExampleEpsLower() {
	fmt.Printf("%.3f\n", audit.EpsLower(30_000, 100_000, 5_000, 100_000, 0, 0.95))
	// Output: 1.755
}

// The Laplace mechanism with noise half as large as epsilon = 1 needs is
// caught: eps_lower exceeds the claim.
func ExampleMechanismGame() {
	m, err := audit.MechanismFor("laplace", 1, 0, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := audit.MechanismGame(context.Background(), m, 2, audit.GameConfig{Trials: 200_000, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("claimed %.0f, eps_lower > 1.5: %v, violation: %v\n", res.EpsClaimed, res.EpsLower > 1.5, res.Violation)
	// Output: claimed 1, eps_lower > 1.5: true, violation: true
}

// One SGD step of logistic regression on one image gives the image back
// exactly from the weight and bias gradients.
func ExampleInvertFC() {
	split, err := data.Load("fashion-mnist-sample", data.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ds := split.Train
	m, _ := fl.NewModel(fl.LogReg, ds.Features, ds.Classes)
	w := make([]float64, m.Dim())
	delta := make([]float64, m.Dim())
	m.Gradient(delta, w, fl.Examples{X: ds.X, Y: ds.Y, Features: ds.Features}, []int{0})
	for i := range delta {
		delta[i] *= -0.1 // the model delta of one step at learning rate 0.1
	}
	layer, _ := audit.InputLayer(m)
	x, _ := audit.InvertFC(delta, layer)
	q := audit.Measure(ds.Row(0), x, ds.Rows, ds.Cols)
	y, _ := audit.RecoverLabel(delta, m)
	fmt.Printf("SSIM %.3f, label recovered: %v\n", q.SSIM, y == int(ds.Y[0]))
	// Output: SSIM 1.000, label recovered: true
}
