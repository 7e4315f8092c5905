package wire

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/checks"
)

func validOpenChunk() *OpenChunk {
	return &OpenChunk{RunId: "run-1", Round: 2, Chunk: 1, Chunks: 3, AnalyzerPublicKey: bytes.Repeat([]byte{7}, 32),
		Spec:   &OpenSpec{Mode: 1, Dimension: 10, Meta: true, ValuesLo: -1, ValuesHi: 1, MetaLo: 0, MetaHi: 8},
		Digest: bytes.Repeat([]byte{1}, DigestBytes), Messages: [][]byte{[]byte("sealed-0"), []byte("sealed-1")}, Mac: bytes.Repeat([]byte{9}, MACBytes)}
}

func validOpenResult(t testing.TB) *OpenResult {
	vals, err := PackFloat64s([]float64{0.25, -0.5})
	if err != nil {
		t.Fatal(err)
	}
	return &OpenResult{RunId: "run-1", Round: 2, Chunk: 1, Digest: bytes.Repeat([]byte{1}, DigestBytes),
		Outcomes: []byte{1, 0x80 | 7, 2}, Coordinates: []uint32{4}, Values: vals, Opener: "host 12", Mac: bytes.Repeat([]byte{9}, MACBytes)}
}

// TestOpenMessagesValidate: the opener queue's messages round-trip, and
// every malformed field is refused naming it.
func TestOpenMessagesValidate(t *testing.T) {
	for _, m := range []Message{validOpenChunk(), validOpenResult(t)} {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		n := m.ProtoReflect().New().Interface().(Message)
		if err := Unmarshal(b, n); err != nil || !proto.Equal(m, n) {
			t.Errorf("%T round trip: %v", m, err)
		}
	}
	chunk := func(f func(*OpenChunk)) Message { c := validOpenChunk(); f(c); return c }
	result := func(f func(*OpenResult)) Message { r := validOpenResult(t); f(r); return r }
	for _, tc := range []rejectCase{
		{"nil chunk", (*OpenChunk)(nil), "(message)", false, true},
		{"no run", chunk(func(c *OpenChunk) { c.RunId = "" }), "run_id", false, false},
		{"round 0", chunk(func(c *OpenChunk) { c.Round = 0 }), "round", false, false},
		{"index past count", chunk(func(c *OpenChunk) { c.Chunk = 3 }), "chunk", false, false},
		{"no key", chunk(func(c *OpenChunk) { c.AnalyzerPublicKey = nil }), "analyzer_public_key", false, false},
		{"short digest", chunk(func(c *OpenChunk) { c.Digest = c.Digest[:31] }), "digest", false, false},
		{"no MAC", chunk(func(c *OpenChunk) { c.Mac = nil }), "mac", false, false},
		{"no spec", chunk(func(c *OpenChunk) { c.Spec = nil }), "spec", false, false},
		{"bad mode", chunk(func(c *OpenChunk) { c.Spec.Mode = 3 }), "spec.mode", true, false},
		{"dimension 0", chunk(func(c *OpenChunk) { c.Spec.Dimension = 0 }), "spec.dimension", false, false},
		{"empty range", chunk(func(c *OpenChunk) { c.Spec.ValuesLo = 1 }), "spec.values", false, false},
		{"NaN meta bound", chunk(func(c *OpenChunk) { c.Spec.MetaHi = math.NaN() }), "spec.meta", false, false},
		{"no messages", chunk(func(c *OpenChunk) { c.Messages = nil }), "messages", false, false},
		{"empty message", chunk(func(c *OpenChunk) { c.Messages[1] = nil }), "messages", false, false},
		{"nil result", (*OpenResult)(nil), "(message)", false, true},
		{"result round 0", result(func(r *OpenResult) { r.Round = 0 }), "round", false, false},
		{"result digest", result(func(r *OpenResult) { r.Digest = nil }), "digest", false, false},
		{"long result MAC", result(func(r *OpenResult) { r.Mac = make([]byte, 33) }), "mac", true, false},
		{"no outcomes", result(func(r *OpenResult) { r.Outcomes = nil }), "outcomes", false, false},
		{"too many coordinates", result(func(r *OpenResult) { r.Coordinates = []uint32{1, 2, 3, 4} }), "coordinates", false, false},
		{"ragged values", result(func(r *OpenResult) { r.Values = r.Values[:9] }), "values", false, false},
		{"infinite value", result(func(r *OpenResult) { r.Values[15] = 0x7f; r.Values[14] = 0xf0 }), "values", false, false},
		{"opener not UTF-8", result(func(r *OpenResult) { r.Opener = "\xff" }), "opener", false, false},
	} {
		err := tc.m.Validate()
		var fe *FieldError
		switch {
		case err == nil:
			t.Errorf("%s: accepted", tc.name)
		case !errors.Is(err, checks.ErrInvalid) || !errors.As(err, &fe):
			t.Errorf("%s: %v is not a FieldError wrapping checks.ErrInvalid", tc.name, err)
		case fe.Field != tc.field:
			t.Errorf("%s: field %q, want %q (%v)", tc.name, fe.Field, tc.field, err)
		case errors.Is(err, ErrTooLarge) != tc.tooBig:
			t.Errorf("%s: too large %v, want %v (%v)", tc.name, errors.Is(err, ErrTooLarge), tc.tooBig, err)
		}
	}
	big := validOpenChunk()
	big.Messages = nil
	for range MaxChunkBytes/MaxCiphertextBytes + 1 {
		big.Messages = append(big.Messages, make([]byte, MaxCiphertextBytes))
	}
	if err := big.Validate(); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "in total") {
		t.Errorf("a chunk over MaxChunkBytes: %v", err)
	}
}

// openSeeds adds the opener messages' seeds (valid encodings, truncations
// and byte flips).
func openSeeds(f *testing.F, m Message) {
	b, err := proto.Marshal(m)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)/2])
	for _, i := range []int{0, len(b) / 3, len(b) - 1} {
		c := append([]byte(nil), b...)
		c[i] ^= 0x5a
		f.Add(c)
	}
	f.Add([]byte{})
}

func FuzzOpenChunk(f *testing.F) {
	openSeeds(f, validOpenChunk())
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, &OpenChunk{}) })
}

func FuzzOpenResult(f *testing.F) {
	openSeeds(f, validOpenResult(f))
	f.Fuzz(func(t *testing.T, b []byte) { fuzzCheck(t, b, &OpenResult{}) })
}
