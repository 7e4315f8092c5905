package seal

import (
	"bytes"
	"crypto/hpke"
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

func TestRoundTrip(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1.5, -9.75, 5e-324, -10, 10}
	for _, suite := range Suites() {
		t.Run(suite.String(), func(t *testing.T) {
			k := testKey(t, suite)
			s := testSealer(t, k, "run-1")
			o := testOpener(t, k, 3, perCoord(len(vals)))
			msgs, err := s.SealCoordinates(3, nil, vals)
			if err != nil {
				t.Fatal(err)
			}
			meta, err := s.SealMeta(3, []float64{2.5})
			if err != nil {
				t.Fatal(err)
			}
			for j, m := range msgs {
				l, got, err := o.Open(m)
				if err != nil {
					t.Fatalf("coordinate %d: %v", j, err)
				}
				if l != Coord(j) || len(got) != 1 || math.Float64bits(got[0]) != math.Float64bits(vals[j]) {
					t.Errorf("coordinate %d: got %v %v, want %v %v", j, l, got, Coord(j), vals[j])
				}
			}
			l, got, err := o.Open(meta[0])
			if err != nil || l != Meta || got[0] != 2.5 {
				t.Errorf("meta: got %v %v %v", l, got, err)
			}
			if st := o.Stats(); st.Accepted != int64(len(vals)+1) || st.Rejected() != 0 {
				t.Errorf("stats %+v", st)
			}

			// Sparse per-coordinate report (SS-Double, SS-Topk).
			msgs, err = s.SealCoordinates(3, []int32{6, 2}, []float64{1, -1})
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range []Label{Coord(6), Coord(2)} {
				if l, _, err := o.Open(msgs[i]); err != nil || l != want {
					t.Errorf("sparse %d: %v %v, want %v", i, l, err, want)
				}
			}

			// Whole report.
			ow := testOpener(t, k, 3, whole(len(vals)))
			rep, err := s.SealReport(3, vals)
			if err != nil {
				t.Fatal(err)
			}
			l, got, err = ow.Open(rep)
			if err != nil || l != Report {
				t.Fatalf("report: %v %v", l, err)
			}
			for j := range vals {
				if math.Float64bits(got[j]) != math.Float64bits(vals[j]) {
					t.Errorf("report value %d: %v, want %v", j, got[j], vals[j])
				}
			}
		})
	}
}

// TestFormatIndependent opens a message with crypto/hpke directly, building
// the info and associated data by hand from the layout in the package doc:
// the documentation and the code describe the same format.
func TestFormatIndependent(t *testing.T) {
	k := testKey(t, X25519)
	msg := mustSeal(t, testSealer(t, k, "exp-42"), 7, Coord(300), -0.125)
	if len(msg) != 21+32+8+16 {
		t.Fatalf("message has %d bytes, want 77", len(msg))
	}
	wantHeader := []byte{'S', 'F', 1, 1, 1, 0, 0, 0x01, 0x2c, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 8}
	if !bytes.Equal(msg[:21], wantHeader) {
		t.Fatalf("header % x, want % x", msg[:21], wantHeader)
	}
	info := []byte("shufflefl/seal/v1 info\x00\x01")
	aad := append([]byte("shufflefl/seal/v1 aad\x00\x06exp-42"), wantHeader...)
	r, err := hpke.NewRecipient(msg[21:53], k.k, hpke.HKDFSHA256(), hpke.ChaCha20Poly1305(), info)
	if err != nil {
		t.Fatal(err)
	}
	pt, err := r.Open(aad, msg[53:])
	if err != nil {
		t.Fatal(err)
	}
	if got := math.Float64frombits(binary.BigEndian.Uint64(pt)); got != -0.125 || len(pt) != 8 {
		t.Fatalf("payload %v (%d bytes), want -0.125", got, len(pt))
	}
}

// TestDummyIndistinguishableInForm: a dummy the shuffler seals with its own
// Sealer has the length and header of a client's value for the same label,
// and every message has its own encapsulation.
func TestDummyIndistinguishableInForm(t *testing.T) {
	for _, suite := range Suites() {
		k := testKey(t, suite)
		client, shuffler := testSealer(t, k, "run-1"), testSealer(t, k, "run-1")
		real := mustSeal(t, client, 2, Coord(9), 0.25)
		dummy := mustSeal(t, shuffler, 2, Coord(9), -0.75)
		if len(real) != len(dummy) || len(real) != MessageSize(suite, KindCoord, 1) {
			t.Errorf("%v: lengths %d and %d, MessageSize %d", suite, len(real), len(dummy), MessageSize(suite, KindCoord, 1))
		}
		if !bytes.Equal(real[:HeaderSize], dummy[:HeaderSize]) {
			t.Errorf("%v: headers differ", suite)
		}
		msgs, err := client.SealCoordinates(2, nil, []float64{1, 1, 1, 1})
		if err != nil {
			t.Fatal(err)
		}
		encs := map[string]bool{}
		for _, m := range msgs {
			env, err := Parse(m)
			if err != nil {
				t.Fatal(err)
			}
			if encs[string(env.Enc)] {
				t.Errorf("%v: two coordinates of one report share an encapsulation", suite)
			}
			encs[string(env.Enc)] = true
		}
	}
}

func TestMessageSize(t *testing.T) {
	tests := []struct {
		s    Suite
		k    Kind
		n    int
		want int
	}{
		{X25519, KindCoord, 1, 77},
		{X25519, KindMeta, 1, 77},
		{X25519, KindReport, 7850, 21 + 32 + 62800 + 16},
		{XWing, KindCoord, 1, 21 + 1120 + 8 + 16},
		{XWing, KindReport, 101770, 21 + 1120 + 814160 + 16},
		{X25519, KindCoord, 2, 0},
		{X25519, KindReport, 0, 0},
		{X25519, KindReport, MaxDim + 1, 0},
		{Suite(9), KindCoord, 1, 0},
		{X25519, Kind(0), 1, 0},
	}
	for _, tt := range tests {
		if got := MessageSize(tt.s, tt.k, tt.n); got != tt.want {
			t.Errorf("MessageSize(%v, %v, %d) = %d, want %d", tt.s, tt.k, tt.n, got, tt.want)
		}
	}
}

// tamper returns a copy of msg with f applied.
func tamper(msg []byte, f func([]byte) []byte) []byte {
	return f(append([]byte(nil), msg...))
}

func TestOpenerRejects(t *testing.T) {
	k := testKey(t, X25519)
	other := testKey(t, XWing)
	s := testSealer(t, k, "run-1")
	const round = 3
	good := mustSeal(t, s, round, Coord(5), 1.25)
	report := mustSeal(t, s, round, Report, 1, 2, 3)
	nan := must(s.appendSealed(nil, round, Coord(1), binary.BigEndian.AppendUint64(nil, math.Float64bits(math.NaN()))))
	inf := must(s.appendSealed(nil, round, Coord(1), binary.BigEndian.AppendUint64(nil, math.Float64bits(math.Inf(-1)))))
	tests := []struct {
		name   string
		spec   Spec
		msg    []byte
		reason Reason
	}{
		{"empty", perCoord(8), nil, ReasonMalformed},
		{"truncated", perCoord(8), good[:len(good)-1], ReasonMalformed},
		{"extra byte", perCoord(8), append(append([]byte(nil), good...), 0), ReasonMalformed},
		{"bad magic", perCoord(8), tamper(good, func(b []byte) []byte { b[0] = 'X'; return b }), ReasonMalformed},
		{"version 2", perCoord(8), tamper(good, func(b []byte) []byte { b[2] = 2; return b }), ReasonMalformed},
		{"unknown suite", perCoord(8), tamper(good, func(b []byte) []byte { b[3] = 7; return b }), ReasonMalformed},
		{"unknown kind", perCoord(8), tamper(good, func(b []byte) []byte { b[4] = 4; return b }), ReasonMalformed},
		{"coordinate >= MaxDim", perCoord(8), tamper(good, func(b []byte) []byte { binary.BigEndian.PutUint32(b[5:], MaxDim); return b }), ReasonMalformed},
		{"meta with index", perCoord(8), tamper(good, func(b []byte) []byte { b[4] = byte(KindMeta); b[8] = 1; return b }), ReasonMalformed},
		{"round 0", perCoord(8), tamper(good, func(b []byte) []byte { binary.BigEndian.PutUint64(b[9:], 0); return b }), ReasonMalformed},
		{"payload not whole values", perCoord(8), tamper(good, func(b []byte) []byte { b[20] = 7; return b[:len(b)-1] }), ReasonMalformed},
		{"coordinate of 2 values", perCoord(8), tamper(good, func(b []byte) []byte { b[20] = 16; return append(b, make([]byte, 8)...) }), ReasonMalformed},
		{"oversize report", whole(3), tamper(report, func(b []byte) []byte { binary.BigEndian.PutUint32(b[17:], 0xfffffff8); return b }), ReasonMalformed},
		{"other suite", perCoord(8), mustSeal(t, testSealer(t, other, "run-1"), round, Coord(5), 1), ReasonSuite},
		{"other round", perCoord(8), mustSeal(t, s, round+1, Coord(5), 1), ReasonRound},
		{"round rewritten", perCoord(8), tamper(mustSeal(t, s, round+1, Coord(5), 1), func(b []byte) []byte { b[16] = round; return b }), ReasonAuth},
		{"relabelled", perCoord(8), tamper(good, func(b []byte) []byte { b[8] = 6; return b }), ReasonAuth},
		{"coordinate to meta", perCoord(8), tamper(good, func(b []byte) []byte { b[4] = byte(KindMeta); b[8] = 0; return b }), ReasonAuth},
		{"other run", perCoord(8), mustSeal(t, testSealer(t, k, "run-2"), round, Coord(5), 1), ReasonAuth},
		{"other key", perCoord(8), mustSeal(t, testSealer(t, must(DeriveKey(X25519, bytes.Repeat([]byte{9}, 32))), "run-1"), round, Coord(5), 1), ReasonAuth},
		{"ciphertext flipped", perCoord(8), tamper(good, func(b []byte) []byte { b[len(b)-20] ^= 1; return b }), ReasonAuth},
		{"tag flipped", perCoord(8), tamper(good, func(b []byte) []byte { b[len(b)-1] ^= 0x80; return b }), ReasonAuth},
		{"enc flipped", perCoord(8), tamper(good, func(b []byte) []byte { b[HeaderSize+3] ^= 4; return b }), ReasonAuth},
		{"coordinate >= d", perCoord(5), good, ReasonLabel},
		{"meta not expected", Spec{Mode: PerCoordinate, Dim: 8, Values: AnyFinite}, mustSeal(t, s, round, Meta, 1), ReasonLabel},
		{"report in per-coordinate round", perCoord(3), report, ReasonLabel},
		{"coordinate in whole-report round", whole(8), good, ReasonLabel},
		{"report of d-1 values", whole(4), report, ReasonLength},
		{"NaN", perCoord(8), nan, ReasonNonFinite},
		{"-Inf", perCoord(8), inf, ReasonNonFinite},
		{"value out of range", perCoord(8), mustSeal(t, s, round, Coord(2), 10.5), ReasonRange},
		{"meta out of range", perCoord(8), mustSeal(t, s, round, Meta, -1), ReasonRange},
		{"report value out of range", Spec{Mode: WholeReport, Dim: 3, Values: Range{0, 2.5}}, report, ReasonRange},
		{"fractional share", Spec{Mode: PerCoordinate, Dim: 8, Values: Range{Lo: 0, Hi: 255}, Integers: true}, good, ReasonRange},
		{"fractional report value", Spec{Mode: WholeReport, Dim: 3, Values: Range{Lo: 0, Hi: 255}, Integers: true}, mustSeal(t, s, round, Report, 1, 2.5, 3), ReasonRange},
		{"share above q-1", Spec{Mode: PerCoordinate, Dim: 8, Values: Range{Lo: 0, Hi: 255}, Integers: true}, mustSeal(t, s, round, Coord(5), 256), ReasonRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOpener(t, k, round, tt.spec)
			l, v, err := o.Open(tt.msg)
			if err == nil {
				t.Fatalf("accepted: %v %v", l, v)
			}
			if !errors.Is(err, checks.ErrInvalid) {
				t.Errorf("error %v does not wrap checks.ErrInvalid", err)
			}
			if r, ok := ReasonOf(err); !ok || r != tt.reason {
				t.Errorf("reason %v (%v), want %v: %v", r, ok, tt.reason, err)
			}
			st := o.Stats()
			if st.Count(tt.reason) != 1 || st.Rejected() != 1 || st.Accepted != 0 {
				t.Errorf("stats %+v, want one %v", st, tt.reason)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestOpenerReplay(t *testing.T) {
	k := testKey(t, X25519)
	s := testSealer(t, k, "run-1")
	o := testOpener(t, k, 1, perCoord(4))
	m := mustSeal(t, s, 1, Coord(0), 1)
	if _, _, err := o.Open(m); err != nil {
		t.Fatal(err)
	}
	_, _, err := o.Open(m)
	if r, _ := ReasonOf(err); r != ReasonReplay {
		t.Fatalf("second open: %v, want a replay", err)
	}
	// A replay with a new header (relabelled) still carries the same
	// encapsulation: caught before decryption.
	_, _, err = o.Open(tamper(m, func(b []byte) []byte { b[8] = 3; return b }))
	if r, _ := ReasonOf(err); r != ReasonReplay {
		t.Fatalf("relabelled replay: %v, want a replay", err)
	}
	// An authentic message whose value is rejected is remembered too.
	bad := mustSeal(t, s, 1, Coord(1), 99)
	for i, want := range []Reason{ReasonRange, ReasonReplay} {
		if _, _, err := o.Open(bad); func() Reason { r, _ := ReasonOf(err); return r }() != want {
			t.Errorf("open %d of an out-of-range value: %v, want %v", i, err, want)
		}
	}
	// A forged message with a genuine encapsulation does not burn it.
	g := mustSeal(t, s, 1, Coord(2), 2)
	if _, _, err := o.Open(tamper(g, func(b []byte) []byte { b[len(b)-1] ^= 1; return b })); err == nil {
		t.Fatal("forgery accepted")
	}
	if _, v, err := o.Open(g); err != nil || v[0] != 2 {
		t.Fatalf("genuine message after a forgery with its encapsulation: %v %v", v, err)
	}
	want := Stats{Accepted: 2, Replay: 3, Range: 1, Auth: 1}
	if st := o.Stats(); st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
	// A new round's Opener has a fresh replay set, but the round in the
	// header keeps the old message out.
	o2 := testOpener(t, k, 2, perCoord(4))
	if _, _, err := o2.Open(m); func() Reason { r, _ := ReasonOf(err); return r }() != ReasonRound {
		t.Errorf("round-1 message in round 2: %v", err)
	}
}

func TestOpenerConcurrent(t *testing.T) {
	k := testKey(t, X25519)
	s := testSealer(t, k, "run-1")
	const d, copies = 40, 3
	msgs, err := s.SealCoordinates(1, nil, make([]float64, d))
	if err != nil {
		t.Fatal(err)
	}
	o := testOpener(t, k, 1, perCoord(d))
	var wg sync.WaitGroup
	for c := 0; c < copies; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, m := range msgs {
				o.Open(m)
			}
		}()
	}
	wg.Wait()
	if st := o.Stats(); st.Accepted != d || st.Replay != (copies-1)*d || st.Rejected() != st.Replay {
		t.Errorf("stats %+v, want %d accepted and %d replays", st, d, (copies-1)*d)
	}
}

func TestSealerRejects(t *testing.T) {
	k := testKey(t, X25519)
	s := testSealer(t, k, "run-1")
	tests := []struct {
		name string
		f    func() error
	}{
		{"NaN", func() error { _, err := s.Seal(1, Coord(0), []float64{math.NaN()}); return err }},
		{"+Inf in report", func() error { _, err := s.SealReport(1, []float64{0, math.Inf(1)}); return err }},
		{"round 0", func() error { _, err := s.Seal(0, Coord(0), []float64{1}); return err }},
		{"two values for a coordinate", func() error { _, err := s.Seal(1, Coord(0), []float64{1, 2}); return err }},
		{"no value", func() error { _, err := s.Seal(1, Meta, nil); return err }},
		{"empty report", func() error { _, err := s.SealReport(1, nil); return err }},
		{"coordinate >= MaxDim", func() error { _, err := s.Seal(1, Coord(MaxDim), []float64{1}); return err }},
		{"unknown kind", func() error { _, err := s.Seal(1, Label{Kind: 0}, []float64{1}); return err }},
		{"report with index", func() error { _, err := s.Seal(1, Label{Kind: KindReport, Index: 2}, []float64{1}); return err }},
		{"coords and values differ", func() error { _, err := s.SealCoordinates(1, []int32{1}, []float64{1, 2}); return err }},
		{"negative coordinate", func() error { _, err := s.SealCoordinates(1, []int32{-1}, []float64{1}); return err }},
		{"empty run id", func() error { _, err := NewSealer(k.Public(), ""); return err }},
		{"long run id", func() error { _, err := NewSealer(k.Public(), string(make([]byte, 256))); return err }},
		{"nil key", func() error { _, err := NewSealer(nil, "r"); return err }},
		{"opener nil key", func() error { _, err := NewOpener(nil, "r", 1, perCoord(2)); return err }},
		{"opener round 0", func() error { _, err := NewOpener(k, "r", 0, perCoord(2)); return err }},
		{"opener empty run id", func() error { _, err := NewOpener(k, "", 1, perCoord(2)); return err }},
		{"opener bad spec", func() error { _, err := NewOpener(k, "r", 1, Spec{}); return err }},
	}
	for _, tt := range tests {
		if err := tt.f(); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%s: %v, want an error wrapping checks.ErrInvalid", tt.name, err)
		}
	}
}

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		ok   bool
	}{
		{"per-coordinate", perCoord(10), true},
		{"whole", whole(10), true},
		{"no mode", Spec{Dim: 1, Values: AnyFinite}, false},
		{"dim 0", Spec{Mode: PerCoordinate, Values: AnyFinite}, false},
		{"dim > MaxDim", Spec{Mode: PerCoordinate, Dim: MaxDim + 1, Values: AnyFinite}, false},
		{"zero range", Spec{Mode: PerCoordinate, Dim: 1}, false},
		{"NaN range", Spec{Mode: PerCoordinate, Dim: 1, Values: Range{math.NaN(), 1}}, false},
		{"meta without range", Spec{Mode: PerCoordinate, Dim: 1, Values: AnyFinite, Meta: true}, false},
	}
	for _, tt := range tests {
		if err := tt.spec.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

func TestReasons(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Reasons() {
		var st Stats
		p := st.field(r)
		if p == nil {
			t.Fatalf("reason %v has no Stats field", r)
		}
		*p = 1
		if st.Rejected() != 1 || st.Count(r) != 1 {
			t.Errorf("reason %v: Rejected %d", r, st.Rejected())
		}
		if seen[r.String()] {
			t.Errorf("duplicate name %q", r)
		}
		seen[r.String()] = true
	}
	if len(seen) != 9 {
		t.Errorf("%d reasons", len(seen))
	}
}

func TestLabelString(t *testing.T) {
	for l, want := range map[Label]string{Coord(12): "coord/12", Meta: "meta", Report: "report", {Kind: 9, Index: 1}: "Kind(9)/1"} {
		if got := l.String(); got != want {
			t.Errorf("%#v: %q, want %q", l, got, want)
		}
	}
}

// TestOpenerIntegers: with Spec.Integers the integers of the range are
// accepted (0 and q-1 included) and the metadata keep their own range,
// fractional values allowed.
func TestOpenerIntegers(t *testing.T) {
	k := testKey(t, X25519)
	s := testSealer(t, k, "run-1")
	sp := Spec{Mode: PerCoordinate, Dim: 4, Meta: true, Values: Range{Lo: 0, Hi: 1<<48 - 1}, MetaValues: Range{Lo: 0, Hi: 1}, Integers: true}
	o := testOpener(t, k, 1, sp)
	for i, tc := range []struct {
		l Label
		v float64
	}{{Coord(0), 0}, {Coord(1), 1<<48 - 1}, {Coord(1), 12345}, {Meta, 0.25}} {
		if _, v, err := o.Open(mustSeal(t, s, 1, tc.l, tc.v)); err != nil || v[0] != tc.v {
			t.Errorf("message %d (%v = %v): %v %v", i, tc.l, tc.v, v, err)
		}
	}
	if st := o.Stats(); st.Accepted != 4 || st.Rejected() != 0 {
		t.Errorf("stats %+v, want 4 accepted", st)
	}
}
