package sim

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

func TestVectorJSON(t *testing.T) {
	special := Vector{0, math.Copysign(0, -1), 1, -1.5, math.SmallestNonzeroFloat64, math.MaxFloat64, 1e-300, math.Pi}
	for _, tc := range []struct {
		name string
		v    Vector
	}{{"empty", Vector{}}, {"special values", special}, {"one", Vector{0.1}}} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(b), `"f64le:`) {
				t.Fatalf("encoding %s", b)
			}
			var back Vector
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if len(back) != len(tc.v) {
				t.Fatalf("%d values back, want %d", len(back), len(tc.v))
			}
			for i := range back {
				if math.Float64bits(back[i]) != math.Float64bits(tc.v[i]) {
					t.Fatalf("value %d: %v back, want %v (bits differ)", i, back[i], tc.v[i])
				}
			}
		})
	}
	// Earlier checkpoints stored arrays of numbers.
	var legacy Vector
	if err := json.Unmarshal([]byte(" [0.5, -2, 1e-7] "), &legacy); err != nil || len(legacy) != 3 || legacy[2] != 1e-7 {
		t.Fatalf("legacy array: %v %v", legacy, err)
	}
	for _, bad := range []string{`"0.5"`, `"f64le:!!!"`, `"f64le:AAAA"`, `{}`, `12`} {
		var v Vector
		if err := json.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// BenchmarkVectorJSON compares the checkpoint's encoding of a CNN-sized
// vector (1,199,882 weights) with a JSON array of numbers.
func BenchmarkVectorJSON(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	w := make([]float64, 1199882)
	for i := range w {
		w[i] = float64(float32(r.NormFloat64() * 0.05))
	}
	b.Run("format=base64", func(b *testing.B) {
		for b.Loop() {
			out, err := json.Marshal(Vector(w))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(out)))
		}
	})
	b.Run("format=array", func(b *testing.B) {
		for b.Loop() {
			out, err := json.Marshal(w)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(out)))
		}
	})
}

// TestSnapshotNamesCorruptField: a checkpoint whose vector was edited or
// truncated is a usage error naming the field and what is wrong with it.
func TestSnapshotNamesCorruptField(t *testing.T) {
	good, err := json.Marshal(Snapshot{Version: SnapshotVersion, Weights: Vector{1, 2}, Hypotheses: []Vector{{3, 4}}})
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(good, &back); err != nil || len(back.Weights) != 2 || back.Hypotheses[0][1] != 4 {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	for _, tc := range []struct{ json, want string }{
		{`{"weights": "f64le:@@@"}`, "weights: illegal base64"},
		{`{"weights": "f64le:AAAA"}`, "weights: 3 bytes, not a whole number of float64s"},
		{`{"weights": [1, "x"]}`, "weights: json: cannot unmarshal"},
		{`{"weights": "AAAA"}`, `weights: a string without the "f64le:" prefix`},
		{`{"weights": [1], "hypotheses": [[2], 7]}`, "hypotheses[1]: neither an array of numbers"},
	} {
		var s Snapshot
		err := json.Unmarshal([]byte(tc.json), &s)
		if !errors.Is(err, checks.ErrInvalid) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a usage error starting %q", tc.json, err, tc.want)
		}
	}
}
