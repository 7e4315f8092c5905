package data

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

func testShard() *Shard {
	s := &Shard{Client: 7, Features: 4, Classes: 3, Rows: 2, Cols: 2,
		X: []float32{0, 1, -0.5, float32(math.Inf(1)), 1e-38, 3.25, -7, 0.125, 0.1, 0.2, 0.3, 0.4},
		Y: []uint8{2, 0, 1}}
	s.Settings[0], s.Settings[31] = 0xab, 0xcd
	return s
}

// TestShardRoundTrip: a written shard reads back bit for bit, and the
// returned SHA-256 is the file's.
func TestShardRoundTrip(t *testing.T) {
	for _, s := range []*Shard{testShard(), {Client: 0, Features: 3, Classes: 2}} {
		path := filepath.Join(t.TempDir(), "client-000007.shard")
		sum, err := WriteShardFile(path, s)
		if err != nil {
			t.Fatal(err)
		}
		got, rsum, err := ReadShardFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		if sum != sha256.Sum256(b) || rsum != sum {
			t.Errorf("checksums %x, %x; file's %x", sum, rsum, sha256.Sum256(b))
		}
		if len(b) != int(shardSize(s.Len(), s.Features)) {
			t.Errorf("file of %d bytes, want %d", len(b), shardSize(s.Len(), s.Features))
		}
		bits := func(x []float32) []uint32 {
			u := make([]uint32, len(x))
			for i, v := range x {
				u[i] = math.Float32bits(v)
			}
			return u
		}
		if got.Client != s.Client || got.Settings != s.Settings || got.Features != s.Features || got.Classes != s.Classes ||
			got.Rows != s.Rows || got.Cols != s.Cols || !slices.Equal(bits(got.X), bits(s.X)) || !bytes.Equal(got.Y, s.Y) {
			t.Errorf("read back %+v, want %+v", got, s)
		}
	}
}

// TestShardRefusesBadShards: Marshal refuses inconsistent fields.
func TestShardRefusesBadShards(t *testing.T) {
	for name, mod := range map[string]func(*Shard){
		"negative client":    func(s *Shard) { s.Client = -1 },
		"no features":        func(s *Shard) { s.Features = 0 },
		"one class":          func(s *Shard) { s.Classes = 1 },
		"regression":         func(s *Shard) { s.Classes = 0 },
		"short X":            func(s *Shard) { s.X = s.X[1:] },
		"label out of range": func(s *Shard) { s.Y[1] = 3 },
		"bad image shape":    func(s *Shard) { s.Rows = 3 },
	} {
		s := testShard()
		mod(s)
		if _, err := s.MarshalBinary(); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%s: %v, want an error wrapping checks.ErrInvalid", name, err)
		}
	}
}

// TestParseShardCorrupt: truncated, extended, corrupted and oversized
// files are errors wrapping ErrData.
func TestParseShardCorrupt(t *testing.T) {
	good, err := testShard().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	resum := func(b []byte) []byte { // a consistent checksum over a modified body
		s := sha256.Sum256(b[:len(b)-32])
		copy(b[len(b)-32:], s[:])
		return b
	}
	huge := mod(func(b []byte) []byte {
		binary.LittleEndian.PutUint32(b[16:], math.MaxUint32)
		binary.LittleEndian.PutUint32(b[20:], math.MaxUint32)
		return b
	})
	for name, b := range map[string][]byte{
		"empty":          nil,
		"short header":   good[:20],
		"header only":    good[:shardHeaderSize],
		"truncated":      good[:len(good)-1],
		"trailing byte":  append(bytes.Clone(good), 0),
		"bad magic":      mod(func(b []byte) []byte { b[0] = 'X'; return b }),
		"version 2":      mod(func(b []byte) []byte { b[8] = 2; return b }),
		"flipped bit":    mod(func(b []byte) []byte { b[shardHeaderSize+5] ^= 1; return b }),
		"bad checksum":   mod(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }),
		"huge":           huge,
		"one class":      mod(func(b []byte) []byte { b[24] = 1; return resum(b) }),
		"label too big":  mod(func(b []byte) []byte { b[len(b)-33] = 3; return resum(b) }),
		"image mismatch": mod(func(b []byte) []byte { b[28] = 5; return resum(b) }),
	} {
		if _, err := ParseShard(b); !errors.Is(err, ErrData) {
			t.Errorf("%s: %v, want an error wrapping ErrData", name, err)
		}
		path := filepath.Join(t.TempDir(), "s")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ReadShardFile(path); !errors.Is(err, ErrData) || !bytes.Contains([]byte(err.Error()), []byte(path)) {
			t.Errorf("%s: ReadShardFile: %v, want an error wrapping ErrData naming the file", name, err)
		}
	}
	if _, _, err := ReadShardFile(filepath.Join(t.TempDir(), "absent")); !errors.Is(err, ErrData) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// FuzzParseShard: no input crashes the decoder or makes it allocate more
// than the input's own size calls for; whatever it accepts re-encodes to
// the same bytes.
func FuzzParseShard(f *testing.F) {
	good, err := testShard().MarshalBinary()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:shardHeaderSize])
	f.Add([]byte(shardMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseShard(b)
		if err != nil {
			if !errors.Is(err, ErrData) {
				t.Fatalf("error %v does not wrap ErrData", err)
			}
			return
		}
		again, err := s.MarshalBinary()
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("accepted shard re-encodes differently (%v)", err)
		}
	})
}
