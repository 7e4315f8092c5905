package deploy

import (
	"context"
	"crypto/ecdh"
	"crypto/hpke"
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// ifcaHarnessConfig is a small ifca-dp run on blobs (d = 90, iid shards).
func ifcaHarnessConfig(clients, rounds int) round.Config {
	cfg := testConfig("ifca-dp", clients, rounds)
	cfg.Options = map[string]float64{"k": 2, "nu": 1}
	return cfg
}

// TestClusteredBadReports: for ifca-dp, a whole report of the wrong length
// is refused by the shuffler (it reads the length from the sealed header);
// in the analyzer's batch, reports that decrypt to NaN, out-of-range
// values or the wrong length are dropped and counted by reason, the k-means
// runs on the rest, and the k models stay finite.
func TestClusteredBadReports(t *testing.T) {
	h := newHarnessConfig(t, ifcaHarnessConfig(3, 1), 1)
	h.waitRound(t, 1)
	d := h.st.Dim()
	s, err := seal.NewSealer(h.creds.HPKEPublic, h.st.RunID)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(vals []float64) *wire.SealedMessage {
		ct, err := s.Seal(1, seal.Report, vals)
		if err != nil {
			t.Fatal(err)
		}
		return &wire.SealedMessage{Ciphertext: ct}
	}
	vec := func(v float64, n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = v
		}
		return x
	}
	t.Run("shuffler refuses a wrong length", func(t *testing.T) {
		_, err := h.submit(t, 0, 1, []*wire.SealedMessage{mk(vec(0.1, d-1))})
		wantStatus(t, err, codes.InvalidArgument, wire.Reason_REASON_MALFORMED)
		_, err = h.submit(t, 0, 1, []*wire.SealedMessage{mk(vec(0.1, d)), mk(vec(0.2, d))})
		wantStatus(t, err, codes.InvalidArgument, wire.Reason_REASON_MALFORMED) // two reports in one submission
	})
	h.cancel() // the test feeds the analyzer's batch itself
	before := h.an.Models()
	nan := vec(0.1, d)
	nan[3] = math.NaN()
	ms := []*wire.SealedMessage{
		mk(vec(0.5, d)), mk(vec(-0.5, d)), // good
		mk(vec(0.1, d-1)), // length
		forgeReport(t, h.creds.HPKEPublic.Bytes(), h.st.RunID, 1, nan), // nonfinite
		mk(vec(1e12, d)), // range
	}
	resp, err := h.an.batch(&wire.BatchHeader{Round: 1, RunId: h.st.RunID, Counts: &wire.BatchCounts{Reports: 3, Messages: uint64(len(ms))}}, ms)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"length": 1, "nonfinite": 1, "range": 1}
	if resp.Accepted != 2 || len(resp.Rejected) != len(want) {
		t.Fatalf("accepted %d rejected %v, want 2 and %v", resp.Accepted, resp.Rejected, want)
	}
	for k, n := range want {
		if resp.Rejected[k] != n {
			t.Fatalf("rejected %v, want %v", resp.Rejected, want)
		}
	}
	e, err := h.an.cfg.DB.Round(1)
	if err != nil || e.Status != store.RoundReleased {
		t.Fatalf("round 1: %+v, %v; want released", e, err)
	}
	after := h.an.Models()
	sizes := 0
	for _, n := range h.an.an.ClusterSizes() {
		sizes += n
	}
	if sizes != 2 {
		t.Fatalf("the k-means clustered %d vectors, want the 2 good ones", sizes)
	}
	changed := false
	for m := range after {
		for j, v := range after[m] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("model %d parameter %d is %v", m, j, v)
			}
			changed = changed || v != before[m][j]
		}
	}
	if !changed {
		t.Fatal("the release changed no model")
	}
	// The checkpoint holds both models.
	cp, err := h.an.cfg.DB.LatestCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	got, err := unpackModels(cp.Model, h.st.K, d)
	if err != nil {
		t.Fatal(err)
	}
	for m := range after {
		for j := range after[m] {
			if got[m][j] != after[m][j] {
				t.Fatalf("checkpoint model %d parameter %d is %v, the analyzer's %v", m, j, got[m][j], after[m][j])
			}
		}
	}
	if _, err := unpackModels(cp.Model, 1, d); err == nil {
		t.Fatal("a k = 2 checkpoint unpacked as one model")
	}
}

// forgeReport seals a whole report of arbitrary values (NaN included, which
// seal.Sealer refuses to seal) to an X25519 key, building the version-1
// format of docs/DEPLOYMENT.md by hand with crypto/hpke.
func forgeReport(t *testing.T, pub []byte, runID string, round uint64, vals []float64) *wire.SealedMessage {
	t.Helper()
	pk, err := hpke.DHKEM(ecdh.X25519()).NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	hdr := []byte{'S', 'F', 1, byte(seal.X25519), byte(seal.KindReport), 0, 0, 0, 0}
	hdr = binary.BigEndian.AppendUint64(hdr, round)
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(8*len(vals)))
	aad := append(append([]byte("shufflefl/seal/v1 aad\x00"), byte(len(runID))), runID...)
	aad = append(aad, hdr...)
	enc, snd, err := hpke.NewSender(pk, hpke.HKDFSHA256(), hpke.ChaCha20Poly1305(), []byte("shufflefl/seal/v1 info\x00\x01"))
	if err != nil {
		t.Fatal(err)
	}
	var pt []byte
	for _, v := range vals {
		pt = binary.BigEndian.AppendUint64(pt, math.Float64bits(v))
	}
	ct, err := snd.Seal(aad, pt)
	if err != nil {
		t.Fatal(err)
	}
	return &wire.SealedMessage{Ciphertext: append(append(hdr, enc...), ct...)}
}

// TestClusteredClientCap: with client-cap = 2·(n/nu), every ifca-dp client
// charges its d-privacy ledger in rounds 1 and 2 and declines round 3
// before training: nothing is sent or charged, the shuffler receives no
// report and the round is void at its deadline, as the engine's round 3
// (every client refused).
func TestClusteredClientCap(t *testing.T) {
	const clients, rounds = 4, 3
	cfg := ifcaHarnessConfig(clients, rounds)
	split := testSplit(t, cfg)
	probe, err := NewSetup(cfg, split, "cap")
	if err != nil {
		t.Fatal(err)
	}
	cfg.ClientCap = 2 * probe.DLevel
	eng, simRes := simulate(t, cfg, split)
	if simRes[2].Participants != 0 || simRes[2].Refused != clients {
		t.Fatalf("engine round 3: %d participants, %d refused; want 0 and %d", simRes[2].Participants, simRes[2].Refused, clients)
	}
	st, err := NewSetup(cfg, split, "cap")
	if err != nil {
		t.Fatal(err)
	}
	seed := cfg.Seed
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var got []round.RoundResult
	res, err := RunLocal(ctx, st, LocalOptions{Dir: dir, TestSeed: &seed, RoundTimeout: 3 * time.Second, Workers: 1,
		Observe: func(r round.RoundResult) { got = append(got, r) }, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != rounds || got[2].Participants != 0 || got[1].Participants != clients {
		t.Fatalf("rounds %+v: want %d, the third void", got, rounds)
	}
	if res.Shuffler.Accepted != 2*clients {
		t.Fatalf("the shuffler accepted %d reports, want %d (none in round 3)", res.Shuffler.Accepted, 2*clients)
	}
	worst, _ := modelsDiff(t, res.Models, eng.Models(), res.Models)
	if worst > 1e-9 || math.IsNaN(worst) {
		t.Fatalf("models differ from the engine's by %.3g", worst)
	}
	if d := got[2].DPrivacy; d == nil || d.MaxCumulative != cfg.ClientCap {
		t.Fatalf("round 3 d_privacy %+v, want a bound of the cap %v", d, cfg.ClientCap)
	}
	for i := 0; i < clients; i++ {
		db, err := store.Open(dir + "/clients/" + ClientID(i) + ".db")
		if err != nil {
			t.Fatal(err)
		}
		es, err := db.LedgerStore().Entries(ClientID(i))
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 2 || es[0].LocalEpsilon+es[1].LocalEpsilon != cfg.ClientCap {
			t.Fatalf("client %d's ledger %+v, want 2 charges of %v", i, es, st.DLevel)
		}
		if _, err := db.OutboxReport(ClientID(i), 3); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("client %d's outbox for round 3: %v, want nothing stored", i, err)
		}
		db.Close()
	}
}
