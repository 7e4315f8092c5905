package account

import (
	"fmt"
	"testing"
)

func TestRDPAccountant(t *testing.T) {
	a := NewRDPAccountant()
	if e, _, err := a.Epsilon(1e-5); err != nil || e != 0 {
		t.Fatalf("empty accountant: %v, %v", e, err)
	}
	// 1000 identical steps equal SampledGaussianEpsilon.
	for range 10 {
		if err := a.AddSampledGaussian(0.01, 1.1, 100); err != nil {
			t.Fatal(err)
		}
	}
	e, _, err := a.Epsilon(1e-5)
	want, _ := SampledGaussianEpsilon(0.01, 1.1, 1000, 1e-5)
	if err != nil || !approx(e, want, 1e-12) || a.Steps() != 1000 {
		t.Fatalf("accountant %v (%v) after %d steps, direct %v", e, err, a.Steps(), want)
	}
	// A heterogeneous round only adds.
	if err := a.AddSampledGaussian(0.05, 1.1, 10); err != nil {
		t.Fatal(err)
	}
	e2, _, _ := a.Epsilon(1e-5)
	if e2 <= e {
		t.Fatalf("epsilon did not grow: %v -> %v", e, e2)
	}
	// Bad input records nothing.
	wantInvalid(t, a.AddSampledGaussian(0.05, -1, 10), "sigma must be > 0")
	wantInvalid(t, a.AddSampledGaussian(0.05, 1, 0), "steps must be >= 1")
	if a.Steps() != 1010 {
		t.Fatalf("steps %d after rejected adds", a.Steps())
	}
	if len(a.Curve()) != len(DefaultRDPOrders()) {
		t.Fatal("curve length")
	}
}

func ExampleRDPAccountant() {
	a := NewRDPAccountant()
	// 500 rounds sampling 1% of clients, then 500 rounds sampling 2%.
	_ = a.AddSampledGaussian(0.01, 1.0, 500)
	_ = a.AddSampledGaussian(0.02, 1.0, 500)
	eps, _, _ := a.Epsilon(1e-5)
	fmt.Printf("%.2f\n", eps)
	// Output: 3.43
}
