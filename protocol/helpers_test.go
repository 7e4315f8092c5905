package protocol

import (
	"math/rand/v2"
	"testing"

	"shufflefl/mechanism"
)

type randRand = rand.Rand

func gaussianSigmaFor(t *testing.T, b Budget, sens float64) float64 {
	t.Helper()
	g, err := mechanism.NewGaussian(b.Epsilon, b.Delta, sens)
	if err != nil {
		t.Fatal(err)
	}
	return g.Sigma
}
