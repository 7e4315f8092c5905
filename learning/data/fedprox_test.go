package data

import (
	"math"
	"slices"
	"testing"
)

func TestSyntheticFedProxShape(t *testing.T) {
	s, err := Load("synthetic-fedprox", Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	tr, te := s.Train, s.Test
	for _, ds := range []*Dataset{tr, te} {
		if err := ds.Validate(); err != nil {
			t.Fatal(err)
		}
		if ds.Features != 60 || ds.Classes != 10 {
			t.Fatalf("features %d, classes %d; want 60, 10", ds.Features, ds.Classes)
		}
	}
	if len(tr.ClientNames) != DefaultFedproxDevices || tr.ClientNames[0] != "f_00000" {
		t.Fatalf("%d devices (%q...), want the paper's 30", len(tr.ClientNames), tr.ClientNames[:1])
	}
	// Every device holds floor(0.9 n_k) of its n_k = floor(LogNormal(4, 2))
	// + 50 >= 50 samples for training, the rest for testing.
	sizes := fedproxSizes(1, DefaultFedproxDevices)
	perDevice := make([]int, DefaultFedproxDevices)
	for _, c := range tr.Client {
		perDevice[c]++
	}
	total := 0
	for k, n := range sizes {
		if n < 50 || perDevice[k] != n*9/10 {
			t.Fatalf("device %d: %d samples, %d for training; want >= 50 and floor(0.9 n)", k, n, perDevice[k])
		}
		total += n
	}
	if tr.Len()+te.Len() != total {
		t.Fatalf("%d + %d samples, want %d", tr.Len(), te.Len(), total)
	}
	// Power-law (heavy-tailed) sizes: the largest device holds many times
	// the median.
	sorted := slices.Sorted(slices.Values(sizes))
	if sorted[len(sorted)-1] < 3*sorted[len(sorted)/2] {
		t.Errorf("sizes %v are not heavy-tailed", sorted)
	}
	// The labels use several classes.
	if c := tr.ClassCounts(); slices.Max(c) == tr.Len() {
		t.Errorf("one class only: %v", c)
	}
}

func TestSyntheticFedProxSeed(t *testing.T) {
	a := SyntheticFedProx(7, 1, 1, 5)
	b := SyntheticFedProx(7, 1, 1, 5)
	if !slices.Equal(a.Train.X, b.Train.X) || !slices.Equal(a.Train.Y, b.Train.Y) || !slices.Equal(a.Test.X, b.Test.X) {
		t.Fatal("the same seed gives different data")
	}
	c := SyntheticFedProx(8, 1, 1, 5)
	if slices.Equal(a.Train.X[:60], c.Train.X[:60]) {
		t.Fatal("seeds 7 and 8 give the same data")
	}
	// A device's data do not depend on the number of devices.
	more := SyntheticFedProx(7, 1, 1, 6)
	if !slices.Equal(more.Train.X[:len(a.Train.X)], a.Train.X) {
		t.Fatal("adding a device changed the others' data")
	}
}

// TestSyntheticFedProxMoments checks the distribution of x within a
// device: the pooled within-device variance of feature j is Σ_jj = j^-1.2
// (about 4,000 samples: relative standard error about 2%, tolerance 10%),
// and with beta = 0 every device's feature means v_k ~ N(0, 1) have
// variance 1 across features.
func TestSyntheticFedProxMoments(t *testing.T) {
	s := SyntheticFedProx(3, 1, 0, 30)
	tr := s.Train
	k := len(tr.ClientNames)
	for _, j := range []int{0, 9, 59} {
		sum, sq, cnt := make([]float64, k), make([]float64, k), make([]float64, k)
		for i, c := range tr.Client {
			v := float64(tr.Row(i)[j])
			sum[c] += v
			sq[c] += v * v
			cnt[c]++
		}
		ss, dof := 0.0, 0.0
		for c := range k {
			m := sum[c] / cnt[c]
			ss += sq[c] - cnt[c]*m*m
			dof += cnt[c] - 1
		}
		got, want := ss/dof, math.Pow(float64(j+1), -1.2)
		if math.Abs(got/want-1) > 0.1 {
			t.Errorf("feature %d: within-device variance %.4g, want Σ_jj = %.4g", j+1, got, want)
		}
	}
	// Device means of all 60 features: 1,800 draws of v_kj ~ N(B_k = 0, 1)
	// plus sampling noise of variance Σ_jj/n_k <= 1/50 (relative standard
	// error of the variance about 3.3%, tolerance 15%).
	f := tr.Features
	mean := make([]float64, k*f)
	cnt := make([]float64, k)
	for i, c := range tr.Client {
		cnt[c]++
		for j, v := range tr.Row(i) {
			mean[int(c)*f+j] += float64(v)
		}
	}
	ss := 0.0
	for i := range mean {
		mean[i] /= cnt[i/f]
		ss += mean[i] * mean[i]
	}
	if v := ss / float64(len(mean)); math.Abs(v-1) > 0.15 {
		t.Errorf("beta = 0: the devices' feature means have variance %.3g, want about 1 (v_k ~ N(0, 1))", v)
	}
}

func TestLoadFedproxBad(t *testing.T) {
	neg := -1.0
	nan := math.NaN()
	for _, o := range []UserData{
		{FedproxAlpha: &neg}, {FedproxBeta: &nan}, {FedproxDevices: -1}, {FedproxDevices: 1 << 21},
	} {
		if _, err := Load("synthetic-fedprox", Options{UserData: o}); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}
