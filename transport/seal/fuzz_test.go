package seal

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

// fuzzSeeds returns valid messages of every kind and suite, plus edge
// cases, as seeds.
func fuzzSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	for _, suite := range Suites() {
		k := testKey(f, suite)
		s := testSealer(f, k, "run-1")
		seeds = append(seeds,
			mustSeal(f, s, 1, Coord(0), 0.5),
			mustSeal(f, s, 1, Coord(7), -3),
			mustSeal(f, s, 2, Meta, 1),
			mustSeal(f, s, 1, Report, 1, 2, 3, 4),
		)
	}
	good := seeds[0]
	seeds = append(seeds, nil, []byte("SF"), good[:HeaderSize], good[:len(good)-1],
		append(append([]byte(nil), good...), 0))
	return seeds
}

// FuzzParse: Parse never panics; whatever it accepts has the length
// MessageSize gives for its header, and a header that reads back the same.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		env, err := Parse(msg)
		if err != nil {
			if !errors.Is(err, checks.ErrInvalid) {
				t.Fatalf("error does not wrap checks.ErrInvalid: %v", err)
			}
			return
		}
		if len(msg) != MessageSize(env.Suite, env.Label.Kind, env.Values()) {
			t.Fatalf("accepted %d bytes for %v", len(msg), env)
		}
		if err := env.Label.Validate(); err != nil || env.Round == 0 {
			t.Fatalf("accepted %v: %v", env, err)
		}
		var h [HeaderSize]byte
		putHeader(h[:], env.Suite, env.Label, env.Round, env.PayloadLen)
		if !bytes.Equal(h[:], msg[:HeaderSize]) {
			t.Fatalf("header % x re-encodes as % x", msg[:HeaderSize], h)
		}
		if len(env.Enc) != env.Suite.EncSize() || len(env.Ciphertext) != env.PayloadLen+TagSize {
			t.Fatalf("slices of %v: enc %d, ciphertext %d", env, len(env.Enc), len(env.Ciphertext))
		}
	})
}

// FuzzOpen: an Opener never panics, counts every message exactly once, and
// returns only finite in-range values of the expected shape.
func FuzzOpen(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	k := testKey(f, X25519)
	f.Fuzz(func(t *testing.T, msg []byte) {
		for _, spec := range []Spec{perCoord(8), whole(4)} {
			o := testOpener(t, k, 1, spec)
			l, v, err := o.Open(msg)
			st := o.Stats()
			if st.Accepted+st.Rejected() != 1 {
				t.Fatalf("stats %+v after one message", st)
			}
			if err != nil {
				if _, ok := ReasonOf(err); !ok || !errors.Is(err, checks.ErrInvalid) {
					t.Fatalf("rejection without a reason: %v", err)
				}
				continue
			}
			want := 1
			if l.Kind == KindReport {
				want = spec.Dim
			}
			if len(v) != want {
				t.Fatalf("%v with %d values", l, len(v))
			}
			r := spec.Values
			if l.Kind == KindMeta {
				r = spec.MetaValues
			}
			for _, x := range v {
				if math.IsNaN(x) || !r.Contains(x) {
					t.Fatalf("accepted value %v", x)
				}
			}
			if _, _, err := o.Open(msg); err == nil {
				t.Fatal("replay accepted")
			}
		}
	})
}

// FuzzParsePrivateKeyPEM: never panics; an accepted key re-encodes to a PEM
// that parses to the same key.
func FuzzParsePrivateKeyPEM(f *testing.F) {
	for _, suite := range Suites() {
		b, _ := testKey(f, suite).MarshalPEM()
		f.Add(b)
	}
	f.Add([]byte("-----BEGIN SHUFFLEFL HPKE PRIVATE KEY-----\nSuite: x25519\n\n-----END SHUFFLEFL HPKE PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := ParsePrivateKeyPEM(data)
		if err != nil {
			if !errors.Is(err, checks.ErrInvalid) {
				t.Fatalf("error does not wrap checks.ErrInvalid: %v", err)
			}
			return
		}
		b, err := k.MarshalPEM()
		if err != nil {
			t.Fatal(err)
		}
		k2, err := ParsePrivateKeyPEM(b)
		if err != nil || !k2.Public().Equal(k.Public()) {
			t.Fatalf("re-encoded key: %v", err)
		}
	})
}

// FuzzParsePublicKeyPEM: never panics; an accepted key re-encodes to the
// same bytes.
func FuzzParsePublicKeyPEM(f *testing.F) {
	for _, suite := range Suites() {
		f.Add(testKey(f, suite).Public().MarshalPEM())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := ParsePublicKeyPEM(data)
		if err != nil {
			if !errors.Is(err, checks.ErrInvalid) {
				t.Fatalf("error does not wrap checks.ErrInvalid: %v", err)
			}
			return
		}
		k2, err := ParsePublicKeyPEM(k.MarshalPEM())
		if err != nil || !k2.Equal(k) {
			t.Fatalf("re-encoded key: %v", err)
		}
	})
}
