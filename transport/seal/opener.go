package seal

import (
	"crypto/hpke"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
)

// Mode is how a protocol's reports are shuffled, as far as sealing is
// concerned (protocol.ShuffleMode's PerCoordinate and WholeReport).
type Mode uint8

const (
	// PerCoordinate: one Coord(j) message per reported coordinate.
	PerCoordinate Mode = 1
	// WholeReport: one Report message of d values per report.
	WholeReport Mode = 2
)

// String returns "per-coordinate" or "whole-report".
func (m Mode) String() string {
	switch m {
	case PerCoordinate:
		return "per-coordinate"
	case WholeReport:
		return "whole-report"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Range is a closed interval [Lo, Hi] of accepted values.
type Range struct{ Lo, Hi float64 }

// AnyFinite accepts every finite value.
var AnyFinite = Range{-math.MaxFloat64, math.MaxFloat64}

// Contains reports whether v is in [Lo, Hi] (false for NaN).
func (r Range) Contains(v float64) bool { return v >= r.Lo && v <= r.Hi }

func (r Range) validate(name string) error {
	if math.IsNaN(r.Lo) || math.IsNaN(r.Hi) || r.Lo >= r.Hi {
		return checks.Invalidf("seal: %s range [%v, %v] must have Lo < Hi", name, r.Lo, r.Hi)
	}
	return nil
}

// Spec is what the analyzer expects of a round's messages.
type Spec struct {
	Mode Mode
	// Dim is the model dimension d: coordinates are below it, and a report
	// carries exactly d values.
	Dim int
	// Meta is true if Meta messages are expected (APES).
	Meta bool
	// Values bounds every coordinate or report value; MetaValues bounds the
	// metadata values. Use AnyFinite for unbounded (e.g. Gaussian) values.
	// NaN and ±Inf are always rejected.
	Values, MetaValues Range
	// Integers requires every coordinate or report value (not the
	// metadata) to be an integer: split-mix's shares mod q, whose range is
	// [0, q-1]. A fractional value is rejected with ReasonRange.
	Integers bool
}

// Validate checks the spec.
func (s Spec) Validate() error {
	if s.Mode != PerCoordinate && s.Mode != WholeReport {
		return checks.Invalidf("seal: unknown mode %v", s.Mode)
	}
	if s.Dim < 1 || s.Dim > MaxDim {
		return checks.Invalidf("seal: dimension must be in [1, %d], got %d", MaxDim, s.Dim)
	}
	if err := s.Values.validate("values"); err != nil {
		return err
	}
	if s.Meta {
		if err := s.MetaValues.validate("meta values"); err != nil {
			return err
		}
	}
	return nil
}

// Reason is why the Opener rejected a message.
type Reason uint8

const (
	// ReasonMalformed: the bytes are not a version-1 message (Parse failed:
	// magic, version, lengths, label, oversize).
	ReasonMalformed Reason = iota + 1
	// ReasonSuite: sealed under another suite than the analyzer's key.
	ReasonSuite
	// ReasonRound: the header names another round than the Opener's.
	ReasonRound
	// ReasonLabel: a label the round does not expect (a coordinate >= d, a
	// Meta message when none is expected, a Report in per-coordinate mode
	// or a coordinate in whole-report mode).
	ReasonLabel
	// ReasonLength: a report whose length is not d values.
	ReasonLength
	// ReasonReplay: a message whose encapsulation was already opened in this
	// round.
	ReasonReplay
	// ReasonAuth: decryption failed: tampered bytes, a relabelled message or
	// one moved to another round or run (the associated data differs), or a
	// message sealed to another key.
	ReasonAuth
	// ReasonNonFinite: a decrypted value is NaN or ±Inf.
	ReasonNonFinite
	// ReasonRange: a decrypted value is outside the spec's range.
	ReasonRange
	numReasons = iota
)

// Reasons lists every Reason.
func Reasons() []Reason {
	rs := make([]Reason, 0, numReasons)
	for r := ReasonMalformed; r <= ReasonRange; r++ {
		rs = append(rs, r)
	}
	return rs
}

// String returns the reason's name, as used in logs and metrics.
func (r Reason) String() string {
	switch r {
	case ReasonMalformed:
		return "malformed"
	case ReasonSuite:
		return "suite"
	case ReasonRound:
		return "round"
	case ReasonLabel:
		return "label"
	case ReasonLength:
		return "length"
	case ReasonReplay:
		return "replay"
	case ReasonAuth:
		return "auth"
	case ReasonNonFinite:
		return "nonfinite"
	case ReasonRange:
		return "range"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// RejectError is the error of a rejected message. It wraps checks.ErrInvalid
// (bad input, never an internal failure).
type RejectError struct {
	Reason Reason
	Detail string
}

// Error implements error.
func (e *RejectError) Error() string {
	return fmt.Sprintf("seal: message rejected (%v): %s", e.Reason, e.Detail)
}

// Unwrap returns checks.ErrInvalid.
func (e *RejectError) Unwrap() error { return checks.ErrInvalid }

// ReasonOf returns the Reason of a rejection error (ok false for any other
// error).
func ReasonOf(err error) (r Reason, ok bool) {
	var re *RejectError
	if errors.As(err, &re) {
		return re.Reason, true
	}
	return 0, false
}

// Stats counts the messages an Opener accepted and, by reason, rejected.
type Stats struct {
	Accepted  int64 `json:"accepted"`
	Malformed int64 `json:"malformed"`
	Suite     int64 `json:"suite"`
	Round     int64 `json:"round"`
	Label     int64 `json:"label"`
	Length    int64 `json:"length"`
	Replay    int64 `json:"replay"`
	Auth      int64 `json:"auth"`
	NonFinite int64 `json:"nonfinite"`
	Range     int64 `json:"range"`
}

// Rejected returns the number of rejected messages.
func (s Stats) Rejected() int64 {
	return s.Malformed + s.Suite + s.Round + s.Label + s.Length + s.Replay + s.Auth + s.NonFinite + s.Range
}

// Count returns the number of messages rejected for r.
func (s Stats) Count(r Reason) int64 {
	if p := s.field(r); p != nil {
		return *p
	}
	return 0
}

func (s *Stats) field(r Reason) *int64 {
	switch r {
	case ReasonMalformed:
		return &s.Malformed
	case ReasonSuite:
		return &s.Suite
	case ReasonRound:
		return &s.Round
	case ReasonLabel:
		return &s.Label
	case ReasonLength:
		return &s.Length
	case ReasonReplay:
		return &s.Replay
	case ReasonAuth:
		return &s.Auth
	case ReasonNonFinite:
		return &s.NonFinite
	case ReasonRange:
		return &s.Range
	}
	return nil
}

// replayKey identifies an encapsulation: the first 16 bytes of its SHA-256.
// A collision between two honest encapsulations has probability about
// m²/2^129 for m messages (10^-24 for 10^8 messages), and forging one that
// collides with a given encapsulation is a second-preimage search of 2^128.
type replayKey [16]byte

// Opener opens the sealed messages of one round for the analyzer. It is safe
// for concurrent use: decryption runs outside its lock, so several
// goroutines can open one round's batch in parallel.
//
// An Opener remembers every encapsulation it opened (16 bytes each plus map
// overhead) to reject replays within the round: a malicious shuffler (or a
// network attacker) cannot count a client's value twice. Replays into another
// round or run, and relabelled messages, fail authentication instead. Use a
// new Opener for every round.
type Opener struct {
	key   *PrivateKey
	aad   []byte
	round uint64
	spec  Spec

	mu    sync.Mutex
	seen  map[replayKey]struct{}
	stats Stats
}

// NewOpener returns the Opener of round for the run runID (the string the
// Sealers were given), with the analyzer's private key and what the round
// expects.
func NewOpener(key *PrivateKey, runID string, round uint64, spec Spec) (*Opener, error) {
	if key == nil || key.k == nil {
		return nil, checks.Invalidf("seal: nil private key")
	}
	aad, err := runAAD(runID)
	if err != nil {
		return nil, err
	}
	if err := checkRound(round); err != nil {
		return nil, err
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return &Opener{key: key, aad: aad, round: round, spec: spec, seen: map[replayKey]struct{}{}}, nil
}

// Round returns the Opener's round.
func (o *Opener) Round() uint64 { return o.round }

// Stats returns the counts so far.
func (o *Opener) Stats() Stats {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stats
}

// reject counts a rejection and returns its error.
func (o *Opener) reject(r Reason, format string, a ...any) error {
	o.mu.Lock()
	*o.stats.field(r)++
	o.mu.Unlock()
	return &RejectError{Reason: r, Detail: fmt.Sprintf(format, a...)}
}

// Open checks and decrypts one message, returning its label and values (one
// value for a coordinate or meta message, d for a report). A rejected
// message returns a *RejectError (wrapping checks.ErrInvalid) and is counted
// in Stats by reason; Open never panics on any input.
//
// The checks, cheapest first: the format (Parse), the suite, the round, the
// label against the spec, a report's length, a replay of an encapsulation
// already opened, authentication (HPKE open with the run id and the header as
// associated data), and then every decrypted value: finite and in range. An
// authentic message is remembered even if its values are then rejected, so
// its replay is counted as a replay; a message that fails authentication is
// not remembered, so forged bytes cannot burn a genuine encapsulation.
func (o *Opener) Open(msg []byte) (Label, []float64, error) {
	env, err := Parse(msg)
	if err != nil {
		return Label{}, nil, o.reject(ReasonMalformed, "%v", err)
	}
	if env.Suite != o.key.suite {
		return Label{}, nil, o.reject(ReasonSuite, "sealed with %v, the analyzer's key is %v", env.Suite, o.key.suite)
	}
	if env.Round != o.round {
		return Label{}, nil, o.reject(ReasonRound, "message of round %d, opening round %d", env.Round, o.round)
	}
	l, sp := env.Label, o.spec
	switch {
	case l.Kind == KindMeta && !sp.Meta:
		return Label{}, nil, o.reject(ReasonLabel, "meta message, but the protocol sends no metadata")
	case l.Kind == KindCoord && sp.Mode != PerCoordinate, l.Kind == KindReport && sp.Mode != WholeReport:
		return Label{}, nil, o.reject(ReasonLabel, "%v message in a %v round", l.Kind, sp.Mode)
	case l.Kind == KindCoord && int64(l.Index) >= int64(sp.Dim):
		return Label{}, nil, o.reject(ReasonLabel, "coordinate %d outside [0, %d)", l.Index, sp.Dim)
	case l.Kind == KindReport && env.Values() != sp.Dim:
		return Label{}, nil, o.reject(ReasonLength, "report of %d values, want %d", env.Values(), sp.Dim)
	}
	sum := sha256.Sum256(env.Enc)
	key := replayKey(sum[:16])
	o.mu.Lock()
	_, dup := o.seen[key]
	o.mu.Unlock()
	if dup {
		return Label{}, nil, o.reject(ReasonReplay, "encapsulation already opened in round %d", o.round)
	}

	aad := make([]byte, 0, len(o.aad)+HeaderSize)
	aad = append(append(aad, o.aad...), env.header...)
	s := o.key.suite
	r, err := hpke.NewRecipient(env.Enc, o.key.k, s.kdf(), s.aead(), s.info())
	if err != nil {
		return Label{}, nil, o.reject(ReasonAuth, "decapsulation: %v", err)
	}
	pt, err := r.Open(aad, env.Ciphertext)
	if err != nil {
		return Label{}, nil, o.reject(ReasonAuth, "%v %v: %v", l, s, err)
	}

	o.mu.Lock()
	if _, dup := o.seen[key]; dup { // opened concurrently by another goroutine
		o.stats.Replay++
		o.mu.Unlock()
		return Label{}, nil, &RejectError{Reason: ReasonReplay, Detail: fmt.Sprintf("encapsulation already opened in round %d", o.round)}
	}
	o.seen[key] = struct{}{}
	o.mu.Unlock()

	if len(pt) != env.PayloadLen { // guaranteed by the AEAD; checked all the same
		return Label{}, nil, o.reject(ReasonLength, "payload of %d bytes, header says %d", len(pt), env.PayloadLen)
	}
	rng := sp.Values
	if l.Kind == KindMeta {
		rng = sp.MetaValues
	}
	values := make([]float64, len(pt)/ValueSize)
	for i := range values {
		v := math.Float64frombits(binary.BigEndian.Uint64(pt[i*ValueSize:]))
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Label{}, nil, o.reject(ReasonNonFinite, "%v value %d is %v", l, i, v)
		}
		if !rng.Contains(v) {
			return Label{}, nil, o.reject(ReasonRange, "%v value %d = %v outside [%v, %v]", l, i, v, rng.Lo, rng.Hi)
		}
		if sp.Integers && l.Kind != KindMeta && v != math.Trunc(v) {
			return Label{}, nil, o.reject(ReasonRange, "%v value %d = %v is not an integer", l, i, v)
		}
		values[i] = v
	}
	o.mu.Lock()
	o.stats.Accepted++
	o.mu.Unlock()
	return l, values, nil
}
