package deploy

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/transport/store"
)

// encodings returns the byte patterns of v a careless implementation
// could store: IEEE-754 binary64 big- and little-endian.
func encodings(v float64) [][]byte {
	be := binary.BigEndian.AppendUint64(nil, math.Float64bits(v))
	le := binary.LittleEndian.AppendUint64(nil, math.Float64bits(v))
	return [][]byte{be, le}
}

// distinctive reports whether v's encoding is unlikely to occur by chance
// in a database file: at least 3 non-zero bytes (the secure samplers snap
// values to a power-of-two grid, so many encodings end in zero bytes; 0,
// ±1 and other short binary fractions are left out).
func distinctive(v float64) bool {
	n := 0
	for _, x := range binary.BigEndian.AppendUint64(nil, math.Float64bits(v)) {
		if x != 0 {
			n++
		}
	}
	return n >= 3
}

// collapseZeroRuns replaces every run of at least 64 zero bytes with one
// 0xa5 byte. The store zeroes deleted content (secure_delete); where such
// a run meets data, a value's little-endian encoding with three non-zero
// bytes (five zero bytes, then three) can match by chance. Before the runs
// were collapsed, 1 of 5 runs found 3 matches (not reproduced in the other
// four, so most likely such chance matches). A value written to disk sits
// among other data, not at the end of a 64-byte zero run.
func collapseZeroRuns(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		j := i
		for j < len(b) && b[j] == 0 {
			j++
		}
		switch {
		case j-i >= 64:
			out = append(out, 0xa5)
			i = j
		case j > i:
			out = append(out, b[i:j]...)
			i = j
		default:
			out = append(out, b[i])
			i++
		}
	}
	return out
}

// findAny returns how many of the patterns occur in hay.
func findAny(hay []byte, pats [][]byte) int {
	n := 0
	for _, p := range pats {
		if bytes.Contains(hay, p) {
			n++
		}
	}
	return n
}

// TestShufflerSeesNoPlaintext runs APES (continuous values) in test mode,
// collects every value the clients encoded (the simulation's reports are
// the deployment's, same streams), and scans everything the shuffler
// received and stored — its database files and every stored message — for
// the encoded float64s. A positive control checks that the scan finds a
// value that is there.
func TestShufflerSeesNoPlaintext(t *testing.T) {
	cfg := testConfig("apes", 20, 2)
	split := testSplit(t, cfg)
	var mu sync.Mutex
	var vals []float64
	simCfg := cfg
	simCfg.Faithful = true
	eng, err := sim.New(simCfg, split, nil)
	if err != nil {
		t.Fatal(err)
	}
	eng.SetHooks(sim.Hooks{Report: func(_, _ int, rep *protocol.Report) {
		mu.Lock()
		defer mu.Unlock()
		for _, v := range append(append([]float64{}, rep.Values...), rep.Meta...) {
			if distinctive(v) {
				vals = append(vals, v)
			}
		}
	}})
	if _, err := eng.Run(nil); err != nil {
		t.Fatal(err)
	}
	if len(vals) < 1000 {
		t.Fatalf("only %d distinctive plaintext values to look for", len(vals))
	}
	st, err := NewSetup(cfg, split, "plaintext")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	seed := cfg.Seed
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := RunLocal(ctx, st, LocalOptions{Dir: dir, TestSeed: &seed, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !equalModels(res.Model, eng.Weights()) {
		t.Fatal("the deployment's model differs from the simulation's: the collected values are not its values")
	}
	var hay []byte
	files, _ := filepath.Glob(filepath.Join(dir, "shuffler.db*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		hay = append(hay, collapseZeroRuns(b)...)
	}
	// What the shuffler received: its database deletes a round's sealed
	// messages once the round is forwarded (see
	// TestShufflerDeletesForwardedCiphertexts), so the requests come from
	// the clients' outboxes, which keep the exact bytes they sent.
	msgs := 0
	for i := 0; i < cfg.Clients; i++ {
		db, err := store.Open(filepath.Join(dir, "clients", ClientID(i)+".db"))
		if err != nil {
			t.Fatal(err)
		}
		for r := int64(1); r <= int64(cfg.Rounds); r++ {
			e, err := db.OutboxReport(ClientID(i), r)
			if err != nil {
				continue // the client sat the round out
			}
			hay = append(hay, e.Report...)
			msgs++
		}
		db.Close()
	}
	if msgs == 0 {
		t.Fatal("the clients submitted no reports")
	}
	found := 0
	for _, v := range vals {
		found += findAny(hay, encodings(v))
	}
	if found != 0 {
		t.Fatalf("%d plaintext encodings found in what the shuffler received and stored", found)
	}
	// Positive control: one value planted in the haystack is found.
	planted := append(append([]byte{}, hay...), encodings(vals[len(vals)/2])[0]...)
	if findAny(planted, encodings(vals[len(vals)/2])) == 0 {
		t.Fatal("the scan misses a planted value")
	}
	t.Logf("scanned %d bytes (the shuffler's database and %d submitted reports) for %d plaintext values: none found", len(hay), msgs, len(vals))
}

func equalModels(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9*math.Max(1, math.Abs(b[i])) {
			return false
		}
	}
	return true
}
