package seal

import (
	"crypto/hpke"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// Sealer seals values to the analyzer's public key for one run. Clients use
// it for their reports and the shuffler for its dummies: the messages are
// indistinguishable in form (see the package doc). A Sealer is immutable and
// safe for concurrent use; every message gets its own HPKE encapsulation,
// drawn by crypto/hpke from crypto/rand.
type Sealer struct {
	pub *PublicKey
	aad []byte // run-dependent prefix of the associated data
}

// NewSealer returns a Sealer for the run runID (1 to MaxRunIDLen bytes, the
// same string the analyzer's Opener is given).
func NewSealer(pub *PublicKey, runID string) (*Sealer, error) {
	if pub == nil || pub.k == nil {
		return nil, checks.Invalidf("seal: nil public key")
	}
	aad, err := runAAD(runID)
	if err != nil {
		return nil, err
	}
	return &Sealer{pub: pub, aad: aad}, nil
}

// Suite returns the suite of the Sealer's key.
func (s *Sealer) Suite() Suite { return s.pub.suite }

// Seal seals values under label l for round: one value for a coordinate or
// meta label, the d values of a report for Report. Values must be finite
// (the analyzer drops NaN and ±Inf anyway; sealing one is a bug in the
// caller and an error here).
func (s *Sealer) Seal(round uint64, l Label, values []float64) ([]byte, error) {
	return s.AppendSeal(nil, round, l, values)
}

// AppendSeal is Seal appending the message to dst (a caller reusing a
// buffer passes buf[:0]). On error it returns nil.
func (s *Sealer) AppendSeal(dst []byte, round uint64, l Label, values []float64) ([]byte, error) {
	if err := checkRound(round); err != nil {
		return nil, err
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	pl, err := payloadLen(l.Kind, len(values))
	if err != nil {
		return nil, err
	}
	for i, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, checks.Invalidf("seal: %v value %d is %v, not finite", l, i, v)
		}
	}
	pt := make([]byte, pl)
	for i, v := range values {
		binary.BigEndian.PutUint64(pt[i*ValueSize:], math.Float64bits(v))
	}
	return s.appendSealed(dst, round, l, pt)
}

// appendSealed seals the payload pt (not checked: tests use it to seal
// payloads a Sealer refuses) under a header for round and l, appending the
// message to dst.
func (s *Sealer) appendSealed(dst []byte, round uint64, l Label, pt []byte) ([]byte, error) {
	suite := s.pub.suite
	total := HeaderSize + suite.EncSize() + len(pt) + TagSize
	start := len(dst)
	dst = grow(dst, total)
	h := dst[start : start+HeaderSize]
	putHeader(h, suite, l, round, len(pt))
	aad := append(s.aad[:len(s.aad):len(s.aad)], h...)
	enc, sender, err := hpke.NewSender(s.pub.k, suite.kdf(), suite.aead(), suite.info())
	if err != nil {
		return nil, fmt.Errorf("seal: encapsulating: %w", err)
	}
	if len(enc) != suite.EncSize() {
		return nil, fmt.Errorf("seal: %v encapsulation has %d bytes, want %d", suite, len(enc), suite.EncSize())
	}
	ct, err := sender.Seal(aad, pt)
	if err != nil {
		return nil, fmt.Errorf("seal: encrypting: %w", err)
	}
	copy(dst[start+HeaderSize:], enc)
	copy(dst[start+HeaderSize+len(enc):], ct)
	return dst[:start+total], nil
}

// grow returns dst extended by n bytes (contents of the new bytes
// unspecified).
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) < n {
		nd := make([]byte, len(dst), len(dst)+n)
		copy(nd, dst)
		dst = nd
	}
	return dst[:len(dst)+n]
}

// SealCoordinates seals one message per reported coordinate, for a
// per-coordinate protocol's report: values[i] belongs to coordinate
// coords[i], or to coordinate i when coords is nil (a dense report; the
// protocol.Report convention). The messages are independent and unlinkable;
// the caller hands them to the shuffler.
func (s *Sealer) SealCoordinates(round uint64, coords []int32, values []float64) ([][]byte, error) {
	if coords != nil && len(coords) != len(values) {
		return nil, checks.Invalidf("seal: %d coordinates for %d values", len(coords), len(values))
	}
	out := make([][]byte, len(values))
	for i, v := range values {
		j := i
		if coords != nil {
			if coords[i] < 0 {
				return nil, checks.Invalidf("seal: negative coordinate %d", coords[i])
			}
			j = int(coords[i])
		}
		if j >= MaxDim {
			return nil, checks.Invalidf("seal: coordinate %d is not below MaxDim %d", j, MaxDim)
		}
		msg, err := s.Seal(round, Coord(j), []float64{v})
		if err != nil {
			return nil, err
		}
		out[i] = msg
	}
	return out, nil
}

// SealMeta seals one Meta message per metadata value (APES's epsilon).
func (s *Sealer) SealMeta(round uint64, meta []float64) ([][]byte, error) {
	out := make([][]byte, len(meta))
	for i, v := range meta {
		msg, err := s.Seal(round, Meta, []float64{v})
		if err != nil {
			return nil, err
		}
		out[i] = msg
	}
	return out, nil
}

// SealReport seals a whole report's values in one Report message, for a
// whole-report protocol.
func (s *Sealer) SealReport(round uint64, values []float64) ([]byte, error) {
	return s.Seal(round, Report, values)
}
