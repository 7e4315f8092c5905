package protocol

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
)

// TestSplitMixRotateExactSum: with rotate=1 the analyzer's modular sum is
// the exact sum of the rounded rotated updates and the noise shares (mod
// q), on both paths, and Estimate inverts the rotation: it equals the
// inverse rotation of the decoded sum over gamma·qN, and it is close to
// the mean of the clipped updates (within the noise).
func TestSplitMixRotateExactSum(t *testing.T) {
	const d, slots, n = 100, 19, 12
	for _, fast := range []float64{0, 1} {
		sm := mustSplitMix(t, smParams(d, slots, 30, 4096, 8, 1, map[string]float64{smOptFast: fast, smOptRotate: 1}))
		if !sm.Rotate() {
			t.Fatal("rotate=1 not set")
		}
		updates := randomUpdates(rng.Stream(5), n, d, 0.05)
		// One large coordinate: the rotation must spread it.
		updates[0][3] = 0.9
		got, void, agg := smRound(t, sm, 1, updates)
		if void {
			t.Fatal("void round")
		}
		want := trueSum(sm, 1, updates)
		for j := range want {
			if got[j] != signedMod(want[j], sm.mod) {
				t.Fatalf("fast=%v coordinate %d: analyzer %d, true rotated sum %d", fast, j, got[j], want[j])
			}
		}
		s := Shape{Round: 1, Dim: d, Population: sm.pop, Participants: n}
		est := make([]float64, d)
		if err := sm.Estimate(nil, s, agg, est); err != nil {
			t.Fatal(err)
		}
		inv := make([]float64, d)
		for j, v := range got {
			inv[j] = float64(v)
		}
		rt, err := sm.rotation(1)
		if err != nil {
			t.Fatal(err)
		}
		rt.Invert(inv)
		den := sm.gamma * sm.rate * float64(sm.pop)
		noise := 6*math.Sqrt(float64(sm.slots)*sm.slotVar)/den + 1e-9
		for j := range est {
			if est[j] != inv[j]/den {
				t.Fatalf("coordinate %d: Estimate %v, inverse rotation of the sum %v", j, est[j], inv[j]/den)
			}
			mean := 0.0
			for _, u := range updates {
				c := slices.Clone(u)
				clipL2(c, sm.clip)
				mean += c[j] / den * sm.gamma
			}
			if math.Abs(est[j]-mean) > noise+float64(n)/den {
				t.Errorf("coordinate %d: estimate %v, mean of the clipped updates %v (noise bound %v)", j, est[j], mean, noise)
			}
		}
	}
}

// TestSplitMixRotateRounds: the rotation is public and per round: the
// same round gives the same signs, another round other signs.
func TestSplitMixRotateRounds(t *testing.T) {
	sm := mustSplitMix(t, smParams(64, 19, 30, 4096, 8, 1, map[string]float64{smOptRotate: 1}))
	one := func(round int) []float64 {
		v, err := sm.rotated(round, slices.Repeat([]float64{1}, 64))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if !slices.Equal(one(3), one(3)) {
		t.Error("round 3 gave two rotations")
	}
	if slices.Equal(one(3), one(4)) {
		t.Error("rounds 3 and 4 gave the same rotation")
	}
}

// TestSplitMixRotateStatement: the rotation is orthogonal on R^d, so the
// calibration, the sensitivities and the TV term are those of rotate=0;
// the bound string names the rotation; bad values are refused.
func TestSplitMixRotateStatement(t *testing.T) {
	p := Params{Clip: 1, Epsilon: 2, Delta: 1e-6, Rounds: 30, SampleRate: 0.1, Population: 1000, Layers: []int{7850}}
	plain := mustSplitMix(t, p)
	p.Extra = map[string]float64{smOptRotate: 1}
	rot := mustSplitMix(t, p)
	s := Shape{Round: 1, Dim: 7850, Population: 1000, Participants: 100}
	a, b := claimOf(t, plain, s, nil), claimOf(t, rot, s, nil)
	l1a, l2a := plain.Sensitivities()
	l1b, l2b := rot.Sensitivities()
	if plain.Variance() != rot.Variance() || l1a != l1b || l2a != l2b || a.TV != b.TV || a.CentralEpsilon != b.CentralEpsilon {
		t.Errorf("rotate=1 changed the statement: mu %v/%v, L1 %v/%v, L2 %v/%v, TV %v/%v", plain.Variance(), rot.Variance(), l1a, l1b, l2a, l2b, a.TV, b.TV)
	}
	if !strings.Contains(b.Bound, "rotation: public randomized Hadamard, orthogonal on R^7850 (windows of 4096)") || strings.Contains(a.Bound, "rotation") {
		t.Errorf("bound strings: %q / %q", a.Bound, b.Bound)
	}
	for _, v := range []float64{2, 0.5, -1} {
		p.Extra = map[string]float64{smOptRotate: v}
		if _, err := New("split-mix", p); err == nil || !strings.Contains(err.Error(), "rotate") {
			t.Errorf("rotate=%v: %v", v, err)
		}
	}
}

// TestSplitMixRotateWrapBound: at q = 2^20 the worst-case wrap bound of
// the frontier's settings is 1 (K·gamma·C > q/2) and the rotation's bound
// is small; at q = 2^32 both are 0; at q = 2^16 neither helps.
func TestSplitMixRotateWrapBound(t *testing.T) {
	for _, c := range []struct {
		bits       float64
		plain, rot func(float64) bool
	}{
		{32, func(b float64) bool { return b == 0 }, func(b float64) bool { return b == 0 }},
		{20, func(b float64) bool { return b == 1 }, func(b float64) bool { return b < 1e-6 }},
		{16, func(b float64) bool { return b == 1 }, func(b float64) bool { return b == 1 }},
	} {
		p := Params{Clip: 1, Epsilon: 2, Delta: 1e-6, Rounds: 30, SampleRate: 0.1, Population: 1000, Layers: []int{7850},
			Extra: map[string]float64{smOptBits: c.bits}}
		plain := mustSplitMix(t, p)
		p.Extra = map[string]float64{smOptBits: c.bits, smOptRotate: 1}
		rot := mustSplitMix(t, p)
		a, b := plain.WrapBound(), rot.WrapBound()
		t.Logf("q = 2^%v: wrap bound %.3g without rotation, %.3g with", c.bits, a, b)
		if !c.plain(a) || !c.rot(b) {
			t.Errorf("q = 2^%v: wrap bounds %v (plain), %v (rotated)", c.bits, a, b)
		}
	}
}

// TestSplitMixRotateWraps counts wrap-arounds exactly (the true integer sum
// against q/2) when every client sends the same spike: at q = 2^16 the
// spike's coordinate sums to 19·4096 > q/2 and wraps in every round without
// rotation; rotated, the spike is spread over 64 coordinates (9,728 each)
// and nothing wraps. Noise-driven wraps are another matter (the rotation
// does not shrink the noise): see docs/SPLITMIX.md, "Rotation".
func TestSplitMixRotateWraps(t *testing.T) {
	const d, slots = 64, 19
	updates := make([][]float64, slots)
	for i := range updates {
		updates[i] = make([]float64, d)
		updates[i][0] = 1
	}
	count := func(rotate float64) (wraps int) {
		sm := mustSplitMix(t, smParams(d, slots, 16, 4096, 8, 1, map[string]float64{smOptFast: 1, smOptRotate: rotate}))
		for seed := uint64(1); seed <= 20; seed++ {
			got, _, _ := smRound(t, sm, seed, updates)
			for j, w := range trueSum(sm, seed, updates) {
				if got[j] != signedMod(w, sm.mod) {
					t.Fatalf("rotate=%v coordinate %d: decoded %d, true sum %d", rotate, j, got[j], w)
				}
				if w <= -sm.mod/2 || w > sm.mod/2 {
					wraps++
				}
			}
		}
		return wraps
	}
	plain, rot := count(0), count(1)
	t.Logf("wrap-arounds in 20 rounds of %d coordinates at q = 2^16: %d without rotation, %d with", d, plain, rot)
	if plain < 20 || rot != 0 {
		t.Errorf("wraps: %d without rotation (want >= 20), %d with (want 0)", plain, rot)
	}
}
