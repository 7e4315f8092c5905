package seal

import (
	"crypto/ecdh"
	"crypto/hpke"
	"crypto/sha256"
	"fmt"
	"runtime"
	"testing"
)

// The papers' model dimensions: FLAME/APES's logistic regression on MNIST
// (784·10 + 10 = 7,850) and the CNN of package fl (101,770).
var benchDims = []int{7850, 101770}

// BenchmarkSeal is one client-side (or shuffler dummy) message: a
// coordinate value, the unit of per-coordinate protocols.
func BenchmarkSeal(b *testing.B) {
	for _, suite := range Suites() {
		b.Run("suite="+suite.String()+"/coord", func(b *testing.B) {
			s := testSealer(b, testKey(b, suite), "run-1")
			v := []float64{0.5}
			buf := make([]byte, 0, MessageSize(suite, KindCoord, 1))
			for b.Loop() {
				if _, err := s.AppendSeal(buf, 1, Coord(17), v); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(MessageSize(suite, KindCoord, 1)), "B/msg")
		})
	}
}

// BenchmarkOpen is the analyzer's cost per coordinate message, including
// the replay set.
func BenchmarkOpen(b *testing.B) {
	for _, suite := range Suites() {
		b.Run("suite="+suite.String()+"/coord", func(b *testing.B) {
			k := testKey(b, suite)
			s := testSealer(b, k, "run-1")
			msgs := make([][]byte, 512)
			for i := range msgs {
				msgs[i] = mustSeal(b, s, 1, Coord(i%8), 0.5)
			}
			o := testOpener(b, k, 1, perCoord(8))
			i := 0
			for b.Loop() {
				if i%len(msgs) == 0 { // fresh replay set for the next pass
					o = testOpener(b, k, 1, perCoord(8))
				}
				if _, _, err := o.Open(msgs[i%len(msgs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkReport seals and opens one whole report (whole-report
// protocols), at the papers' dimensions.
func BenchmarkReport(b *testing.B) {
	for _, suite := range Suites() {
		for _, d := range benchDims {
			k := testKey(b, suite)
			s := testSealer(b, k, "run-1")
			vals := make([]float64, d)
			for i := range vals {
				vals[i] = float64(i%200-100) / 100
			}
			name := fmt.Sprintf("suite=%v/d=%d", suite, d)
			b.Run("seal/"+name, func(b *testing.B) {
				for b.Loop() {
					if _, err := s.SealReport(1, vals); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(MessageSize(suite, KindReport, d)), "B/msg")
			})
			b.Run("open/"+name, func(b *testing.B) {
				msg := mustSeal(b, s, 1, Report, vals...)
				for b.Loop() {
					o := testOpener(b, k, 1, whole(d))
					if _, _, err := o.Open(msg); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkClientRound is a client's sealing work in one round of a dense
// per-coordinate protocol at d = 7,850 (d messages), the case the
// per-message figures extrapolate from.
func BenchmarkClientRound(b *testing.B) {
	const d = 7850
	s := testSealer(b, testKey(b, X25519), "run-1")
	vals := make([]float64, d)
	for b.Loop() {
		if _, err := s.SealCoordinates(1, nil, vals); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(d*MessageSize(X25519, KindCoord, 1)), "B/client")
}

// BenchmarkAlternativeKEM measures the raw crypto/hpke cost of DHKEM(P-256)
// beside X25519 for the same 8-byte payload (an alternative considered in
// docs/DEPLOYMENT.md; not a suite of the format).
func BenchmarkAlternativeKEM(b *testing.B) {
	for _, c := range []struct {
		name string
		kem  hpke.KEM
	}{{"x25519", hpke.DHKEM(ecdh.X25519())}, {"p256", hpke.DHKEM(ecdh.P256())}} {
		sk, err := c.kem.GenerateKey()
		if err != nil {
			b.Fatal(err)
		}
		pt := make([]byte, 8)
		b.Run("seal/"+c.name, func(b *testing.B) {
			for b.Loop() {
				_, s, _ := hpke.NewSender(sk.PublicKey(), hpke.HKDFSHA256(), hpke.ChaCha20Poly1305(), nil)
				s.Seal(nil, pt)
			}
		})
		enc, s, _ := hpke.NewSender(sk.PublicKey(), hpke.HKDFSHA256(), hpke.ChaCha20Poly1305(), nil)
		ct, _ := s.Seal(nil, pt)
		b.Run("open/"+c.name, func(b *testing.B) {
			for b.Loop() {
				r, err := hpke.NewRecipient(enc, sk, hpke.HKDFSHA256(), hpke.ChaCha20Poly1305(), nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.Open(nil, ct); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(enc)), "B/enc")
		})
	}
}

// BenchmarkReplaySet measures the analyzer's memory per remembered
// encapsulation (reported as B/entry) for a round of one million messages.
func BenchmarkReplaySet(b *testing.B) {
	const n = 1 << 20
	for b.Loop() {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		seen := map[replayKey]struct{}{}
		var enc [32]byte
		for i := 0; i < n; i++ {
			enc[0], enc[1], enc[2] = byte(i), byte(i>>8), byte(i>>16)
			sum := sha256.Sum256(enc[:])
			seen[replayKey(sum[:16])] = struct{}{}
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/n, "B/entry")
		runtime.KeepAlive(seen)
	}
}

// TestBytesPerClient checks the per-client bytes of a round that
// docs/DEPLOYMENT.md tabulates (go test -run BytesPerClient -v prints them)
// against the layout's arithmetic: per-coordinate mode sends d messages of
// 21 + E + 8 + 16 bytes, whole-report mode one of 21 + E + 8d + 16, and
// plaintext values are 8d bytes.
func TestBytesPerClient(t *testing.T) {
	for _, d := range benchDims {
		for _, suite := range Suites() {
			e := suite.EncSize()
			per := d * MessageSize(suite, KindCoord, 1)
			whole := MessageSize(suite, KindReport, d)
			if per != d*(21+e+8+16) || whole != 21+e+8*d+16 {
				t.Fatalf("d=%d %v: %d %d", d, suite, per, whole)
			}
			t.Logf("d=%d suite=%v: per-coordinate %d B (%.2fx plaintext), whole-report %d B (%.4fx), plaintext %d B",
				d, suite, per, float64(per)/float64(8*d), whole, float64(whole)/float64(8*d), 8*d)
		}
	}
}
