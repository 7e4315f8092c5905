package ifcaref

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/mechanism"
)

// quad is a test client with loss ||θ − target||² whose training moves θ
// a fixed fraction toward target (frac = 0: no update).
type quad struct {
	target []float64
	frac   float64
	trains int
}

func (q *quad) Loss(theta []float64) float64 {
	var s float64
	for i := range theta {
		s += (theta[i] - q.target[i]) * (theta[i] - q.target[i])
	}
	return s
}

func (q *quad) Train(_ *rand.Rand, theta []float64, epochs int) error {
	q.trains++
	for range epochs {
		for i := range theta {
			theta[i] += q.frac * (q.target[i] - theta[i])
		}
	}
	return nil
}

func TestClientRound(t *testing.T) {
	hyps := [][]float64{{0, 0, 0}, {10, 10, 10}}
	c := &quad{target: []float64{9, 9, 9}, frac: 0.5}
	// Unsanitized: the release is exactly the updated vector, from the
	// nearest hypothesis.
	res, err := ClientRound(rng.NewSeeded(1), nil, c, hyps, ClientConfig{Epochs: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Chosen != 1 || !slices.Equal(res.Released, []float64{9.5, 9.5, 9.5}) || !math.IsInf(res.Cost, 1) {
		t.Errorf("unsanitized result %+v", res)
	}
	if !slices.Equal(hyps[1], []float64{10, 10, 10}) {
		t.Errorf("hypotheses modified")
	}
	// Sanitized: full vector released, noisy, cost n/ν.
	res, err = ClientRound(rng.NewSeeded(1), nil, c, hyps, ClientConfig{Epochs: 1, Nu: 2, KeepUpdated: true}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Updated, []float64{9.5, 9.5, 9.5}) {
		t.Errorf("updated %v", res.Updated)
	}
	if res.Cost != 1.5 || len(res.Released) != 3 || slices.Equal(res.Released, res.Updated) {
		t.Errorf("sanitized result %+v", res)
	}
	if math.Abs(res.UpdateNorm-0.5*math.Sqrt(3)) > 1e-12 {
		t.Errorf("update norm %v", res.UpdateNorm)
	}
	// Per-layer variant.
	res, err = ClientRound(rng.NewSeeded(1), nil, c, hyps, ClientConfig{Epochs: 1, Nu: 2, Layers: []mechanism.Layer{{Offset: 0, Len: 1}, {Offset: 1, Len: 2}}}, 0)
	if err != nil || res.Cost != 1.5 {
		t.Errorf("per-layer: %+v, %v", res, err)
	}
	// Cap: 1.5 more would exceed 2.5 from 1.2 spent; declined before training.
	before := c.trains
	res, err = ClientRound(rng.NewSeeded(1), nil, c, hyps, ClientConfig{Epochs: 1, Nu: 2, Cap: 2.5}, 1.2)
	if err != nil || res.Declined != DeclineCap || res.Released != nil || res.Cost != 0 || c.trains != before {
		t.Errorf("cap: %+v, %v (trained %d times)", res, err, c.trains-before)
	}
	// Zero update: declined, nothing released.
	still := &quad{target: []float64{9, 9, 9}, frac: 0}
	res, err = ClientRound(rng.NewSeeded(1), nil, still, hyps, ClientConfig{Epochs: 1, Nu: 2}, 0)
	if err != nil || res.Declined != DeclineZeroUpdate || res.Released != nil || res.Cost != 0 {
		t.Errorf("zero update: %+v, %v", res, err)
	}
	// ... unless a radius floor is set.
	res, err = ClientRound(rng.NewSeeded(1), nil, still, hyps, ClientConfig{Epochs: 1, Nu: 2, Sanitize: mechanism.SanitizeOptions{MinRadius: 0.1}}, 0)
	if err != nil || res.Declined != "" || res.Released == nil || res.Cost != 1.5 {
		t.Errorf("zero update with floor: %+v, %v", res, err)
	}
}

func TestClientRoundBadInput(t *testing.T) {
	c := &quad{target: []float64{1, 1}, frac: 0.5}
	good := [][]float64{{0, 0}, {1, 1}}
	for _, tc := range []struct {
		name string
		hyps [][]float64
		cfg  ClientConfig
	}{
		{"no hypotheses", nil, ClientConfig{Epochs: 1}},
		{"dims differ", [][]float64{{0, 0}, {1}}, ClientConfig{Epochs: 1}},
		{"NaN hypothesis", [][]float64{{0, math.NaN()}}, ClientConfig{Epochs: 1}},
		{"nu<0", good, ClientConfig{Epochs: 1, Nu: -1}},
		{"nu Inf", good, ClientConfig{Epochs: 1, Nu: math.Inf(1)}},
		{"epochs 0", good, ClientConfig{Epochs: 0}},
		{"layers", good, ClientConfig{Epochs: 1, Nu: 1, Layers: []mechanism.Layer{{Offset: 0, Len: 1}}}},
		{"cap<0", good, ClientConfig{Epochs: 1, Nu: 1, Cap: -1}},
	} {
		if _, err := ClientRound(rng.NewSeeded(1), nil, c, tc.hyps, tc.cfg, 0); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
}

func TestServerRound(t *testing.T) {
	hyps := [][]float64{{0, 0}, {10, 10}}
	rel := [][]float64{{1, 1}, {9, 9}, {-1, 1}, {11, 9}, {0, 2}}
	res, err := ServerRound(rel, hyps, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Assign, []int{0, 1, 0, 1, 0}) || !slices.Equal(res.Sizes, []int{3, 2}) {
		t.Errorf("assign %v sizes %v", res.Assign, res.Sizes)
	}
	if !slices.Equal(res.Hypotheses[0], []float64{0, 4.0 / 3}) || !slices.Equal(res.Hypotheses[1], []float64{10, 9}) {
		t.Errorf("hypotheses %v", res.Hypotheses)
	}
	// A cluster that gets nothing keeps its hypothesis.
	res, err = ServerRound([][]float64{{1, 1}}, hyps, 0, 1)
	if err != nil || !slices.Equal(res.Hypotheses[1], []float64{10, 10}) {
		t.Errorf("empty cluster: %v, %v", res.Hypotheses, err)
	}
	for name, args := range map[string][2][][]float64{
		"no releases":   {nil, hyps},
		"no hypotheses": {rel, nil},
		"dimension":     {{{1, 2, 3}}, hyps},
	} {
		if _, err := ServerRound(args[0], args[1], 0, 1); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestLedger(t *testing.T) {
	l, err := NewLedger(4)
	if err != nil {
		t.Fatal(err)
	}
	// Section 5.1: six participations at n/ν = 0.4 compose to 2.4.
	for range 6 {
		if err := l.Charge(2, 0.4); err != nil {
			t.Fatal(err)
		}
	}
	if math.Abs(l.Spent(2)-2.4) > 1e-12 || l.Participations(2) != 6 {
		t.Errorf("spent %v after %d", l.Spent(2), l.Participations(2))
	}
	_ = l.Charge(0, 1)
	mx, med := l.LeakageStats(nil) // {1, 0, 2.4, 0}
	if math.Abs(mx-2.4) > 1e-12 || med != 0.5 {
		t.Errorf("max %v median %v, want 2.4, 0.5", mx, med)
	}
	mx, med = l.LeakageStats([]int{0, 2, 3})
	if math.Abs(mx-2.4) > 1e-12 || med != 1 {
		t.Errorf("subset: max %v median %v", mx, med)
	}
	if mx, med = l.LeakageStats([]int{}); mx != 0 || med != 0 {
		t.Errorf("empty subset: %v %v", mx, med)
	}
	_ = l.Charge(3, math.Inf(1))
	_ = l.Charge(3, 1)
	if !math.IsInf(l.Spent(3), 1) {
		t.Errorf("unsanitized release did not make the total infinite")
	}
	for _, bad := range []struct {
		c    int
		cost float64
	}{{-1, 1}, {4, 1}, {0, -1}, {0, math.NaN()}} {
		if err := l.Charge(bad.c, bad.cost); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("Charge(%d, %v): err = %v", bad.c, bad.cost, err)
		}
	}
	if _, err := NewLedger(0); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("NewLedger(0): %v", err)
	}
}

func ExampleClientRound() {
	// One client of Algorithm 1: it receives all k hypotheses, picks the one
	// with the lowest local loss, trains it and releases the sanitized full
	// vector (cost n/ν = 3/2 = 1.5).
	hyps := [][]float64{{0, 0, 0}, {10, 10, 10}}
	c := &quad{target: []float64{9, 9, 9}, frac: 0.5}
	res, err := ClientRound(rng.NewSeeded(1), nil, c, hyps, ClientConfig{Epochs: 1, Nu: 2}, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Chosen, len(res.Released), res.Cost)
	// Output: 1 3 1.5
}

func ExampleServerRound() {
	// The server clusters the anonymous releases starting from the current
	// hypotheses and averages each cluster.
	hyps := [][]float64{{0, 0}, {10, 10}}
	releases := [][]float64{{1, 1}, {9, 9}, {-1, 1}, {11, 9}}
	res, err := ServerRound(releases, hyps, 0, 1)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Assign, res.Hypotheses)
	// Output: [0 1 0 1] [[0 1] [10 9]]
}
