package seal

import (
	"bytes"
	"testing"
)

// testKey derives a fixed key of the suite for tests.
func testKey(t testing.TB, s Suite) *PrivateKey {
	t.Helper()
	k, err := DeriveKey(s, bytes.Repeat([]byte{byte(s)}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// testSealer returns a Sealer for run "run-1" to the key's public half.
func testSealer(t testing.TB, k *PrivateKey, runID string) *Sealer {
	t.Helper()
	s, err := NewSealer(k.Public(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testOpener returns an Opener of run "run-1".
func testOpener(t testing.TB, k *PrivateKey, round uint64, spec Spec) *Opener {
	t.Helper()
	o, err := NewOpener(k, "run-1", round, spec)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// mustSeal seals or fails the test.
func mustSeal(t testing.TB, s *Sealer, round uint64, l Label, v ...float64) []byte {
	t.Helper()
	m, err := s.Seal(round, l, v)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// perCoord is a per-coordinate spec of dimension d with a meta list.
func perCoord(d int) Spec {
	return Spec{Mode: PerCoordinate, Dim: d, Meta: true, Values: Range{-10, 10}, MetaValues: Range{0, 100}}
}

// whole is a whole-report spec of dimension d.
func whole(d int) Spec {
	return Spec{Mode: WholeReport, Dim: d, Values: AnyFinite}
}
