package seal_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/transport/seal"
)

// encoded returns the big-endian binary64 encoding of v, the form it takes
// inside a sealed payload.
func encoded(v float64) []byte { return binary.BigEndian.AppendUint64(nil, math.Float64bits(v)) }

// noPlaintext fails the test if any of the values appears, encoded as in a
// payload, in the sealed part of any message (the shuffler's view; the
// public header holds the label and round, which are not values, and whose
// zero bytes would match the encoding of 0). A chance match of 8
// pseudorandom bytes has probability about 2^-64 per position.
func noPlaintext(t *testing.T, msgs [][]byte, values []float64) {
	t.Helper()
	for _, v := range values {
		e := encoded(v)
		for i, m := range msgs {
			if bytes.Contains(m[seal.HeaderSize:], e) {
				t.Fatalf("value %v appears in plaintext in message %d", v, i)
			}
		}
	}
}

// TestPerCoordinateRound runs one SS-Double round through sealing: clients
// seal each reported coordinate, the shuffler (reading labels only) pads
// with dummies it seals itself and permutes, and the analyzer opens every
// message into an Aggregate. The aggregate equals the simulation's
// (protocol.Shuffle) up to the order of floating-point summation, and
// nothing the shuffler holds contains a value in plaintext.
func TestPerCoordinateRound(t *testing.T) {
	const n, d, round, run = 300, 6, 4, "e2e"
	p, err := protocol.New("ss-double", protocol.Params{Clip: 1, Epsilon: 8, Extra: map[string]float64{"k": 2, "np": 300}})
	if err != nil {
		t.Fatal(err)
	}
	s := protocol.Shape{Round: round, Dim: d, Population: n, Participants: n}
	key, err := seal.GenerateKey(seal.X25519)
	if err != nil {
		t.Fatal(err)
	}
	client, _ := seal.NewSealer(key.Public(), run)
	shuffler, _ := seal.NewSealer(key.Public(), run)

	reports := make([]protocol.Report, n)
	var inbox [][]byte // what the shuffler receives
	var plain []float64
	for i := range reports {
		update := []float64{0.5, -0.25, 1, 0, -1, 0.75}
		if err := p.Encode(rng.Stream(1, uint64(i)), s, update, protocol.Budget{Epsilon: 8}, &reports[i]); err != nil {
			t.Fatal(err)
		}
		msgs, err := client.SealCoordinates(round, reports[i].Coords, reports[i].Values)
		if err != nil {
			t.Fatal(err)
		}
		inbox = append(inbox, msgs...)
		plain = append(plain, reports[i].Values...)
	}

	// Shuffler: labels only.
	counts := make([]int64, d)
	for _, m := range inbox {
		env, err := seal.Parse(m)
		if err != nil || env.Round != round || env.Label.Kind != seal.KindCoord || int(env.Label.Index) >= d {
			t.Fatalf("shuffler: %v %v", env, err)
		}
		counts[env.Label.Index]++
	}
	batch := append([][]byte(nil), inbox...)
	var padErr error
	if err := p.Pad(rng.Stream(2), s, counts, func(j int, v float64) {
		m, err := shuffler.Seal(round, seal.Coord(j), []float64{v})
		if err != nil {
			padErr = err
		}
		batch = append(batch, m)
		plain = append(plain, v)
	}); err != nil || padErr != nil {
		t.Fatal(err, padErr)
	}
	perm := rand.New(rand.NewChaCha8([32]byte{7}))
	perm.Shuffle(len(batch), func(a, b int) { batch[a], batch[b] = batch[b], batch[a] })
	noPlaintext(t, batch, plain)
	for _, m := range batch {
		if len(m) != seal.MessageSize(seal.X25519, seal.KindCoord, 1) {
			t.Fatalf("a %d-byte message in the batch", len(m))
		}
	}

	agg := openCoordinates(t, key, run, round, d, batch)

	sim, err := protocol.Shuffle(rng.Stream(2), rng.Stream(3), p, s, reports)
	if err != nil {
		t.Fatal(err)
	}
	want, err := sim.Aggregate()
	if err != nil {
		t.Fatal(err)
	}
	for j := 0; j < d; j++ {
		if agg.Count[j] != want.Count[j] || math.Abs(agg.Sum[j]-want.Sum[j]) > 1e-9*math.Max(1, math.Abs(want.Sum[j])) {
			t.Errorf("coordinate %d: sealed path %v/%d, simulation %v/%d", j, agg.Sum[j], agg.Count[j], want.Sum[j], want.Count[j])
		}
	}
	est, wantEst := make([]float64, d), make([]float64, d)
	if err := p.(protocol.Estimator).Estimate(nil, s, agg, est); err != nil {
		t.Fatal(err)
	}
	if err := p.(protocol.Estimator).Estimate(nil, s, want, wantEst); err != nil {
		t.Fatal(err)
	}
	for j := range est {
		if math.Abs(est[j]-wantEst[j]) > 1e-9 {
			t.Errorf("estimate %d: %v, simulation %v", j, est[j], wantEst[j])
		}
	}
}

// openCoordinates opens a per-coordinate batch of dimension d as the
// analyzer does, and sums it; every message must open.
func openCoordinates(t *testing.T, key *seal.PrivateKey, run string, round uint64, d int, batch [][]byte) *protocol.Aggregate {
	t.Helper()
	o, err := seal.NewOpener(key, run, round, seal.Spec{Mode: seal.PerCoordinate, Dim: d, Values: seal.Range{Lo: 0, Hi: math.MaxFloat64}})
	if err != nil {
		t.Fatal(err)
	}
	agg := protocol.NewAggregate(d)
	for _, m := range batch {
		l, v, err := o.Open(m)
		if err != nil {
			t.Fatal(err)
		}
		agg.Sum[l.Index] += v[0]
		agg.Count[l.Index]++
	}
	if st := o.Stats(); st.Accepted != int64(len(batch)) || st.Rejected() != 0 {
		t.Fatalf("stats %+v", st)
	}
	return agg
}

// TestWholeReportRound runs one E-APES round through sealing: one Report
// message per client, aggregated by the analyzer exactly as the
// simulation's whole-report shuffle.
func TestWholeReportRound(t *testing.T) {
	const n, d, round, run = 40, 5, 1, "e2e-whole"
	p, err := protocol.New("e-apes", protocol.Params{Clip: 1, Delta: 1e-5, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := protocol.Shape{Round: round, Dim: d, Population: n, Participants: n}
	key, _ := seal.GenerateKey(seal.XWing)
	client, _ := seal.NewSealer(key.Public(), run)
	reports := make([]protocol.Report, n)
	var batch [][]byte
	var plain []float64
	for i := range reports {
		if err := p.Encode(rng.Stream(5, uint64(i)), s, []float64{0.1, 0.2, -0.3, 0, 0.4}, protocol.Budget{Epsilon: 2, Delta: 1e-6}, &reports[i]); err != nil {
			t.Fatal(err)
		}
		m, err := client.SealReport(round, reports[i].Values)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, m)
		plain = append(plain, reports[i].Values...)
	}
	noPlaintext(t, batch, plain)
	o, _ := seal.NewOpener(key, run, round, seal.Spec{Mode: seal.WholeReport, Dim: d, Values: seal.AnyFinite})
	agg := protocol.NewAggregate(d)
	for i := len(batch) - 1; i >= 0; i-- {
		l, v, err := o.Open(batch[i])
		if err != nil || l != seal.Report {
			t.Fatal(l, err)
		}
		if err := agg.AddReport(&protocol.Report{Values: v}); err != nil {
			t.Fatal(err)
		}
	}
	sim, _ := protocol.Shuffle(rng.Stream(2), rng.Stream(3), p, s, reports)
	want, _ := sim.Aggregate()
	for j := 0; j < d; j++ {
		if agg.Count[j] != want.Count[j] || math.Abs(agg.Sum[j]-want.Sum[j]) > 1e-9 {
			t.Errorf("coordinate %d: %v/%d, simulation %v/%d", j, agg.Sum[j], agg.Count[j], want.Sum[j], want.Count[j])
		}
	}
}
