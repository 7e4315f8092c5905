package deploy

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/transport/store"
)

// ledgerRow is what both drivers must charge: the round and the local
// guarantee of each release.
type ledgerRow struct {
	Round        int
	Mechanism    string
	Epsilon, Del float64
}

func rowsOf(es []account.Release) []ledgerRow {
	var rs []ledgerRow
	for _, e := range es {
		rs = append(rs, ledgerRow{e.Round, e.Mechanism, e.LocalEpsilon, e.LocalDelta})
	}
	return rs
}

// TestLedgersEqualSimulation runs the same seeded configuration — fixed-size
// sampling of 12 of 30 clients a round and a per-client cap that refuses
// clients in later rounds — in the simulation and in a local deployment,
// and compares every client's ledger entry by entry: both drivers charge
// the same clients in the same rounds with the same guarantees, and a
// refused client is charged nowhere.
func TestLedgersEqualSimulation(t *testing.T) {
	longtest.Skip(t) // about 30 s: rounds with a refused client wait for their deadline
	t.Parallel()
	const clients, rounds = 30, 6
	cfg := testConfig("ss-simple", clients, rounds)
	cfg.ClientsPerRound = 12
	cfg.ClientCap = 2.5 * cfg.Epsilon // at most two releases per client
	split := testSplit(t, cfg)
	eng, rs := simulate(t, cfg, split)
	refused := 0
	for _, r := range rs {
		refused += r.Refused
	}
	if refused == 0 {
		t.Fatal("no client was refused by its cap: the comparison would not test refusals")
	}

	st, err := NewSetup(cfg, split, "test-ledgers")
	if err != nil {
		t.Fatal(err)
	}
	seed := cfg.Seed
	dir := t.TempDir()
	// A client at its cap sits out without telling the shuffler, so a
	// round with a refused client closes at its deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := RunLocal(ctx, st, LocalOptions{Dir: dir, TestSeed: &seed, RoundTimeout: 8 * time.Second, Workers: 1, Logf: t.Logf}); err != nil {
		t.Fatal(err)
	}
	charged := 0
	for i := range clients {
		want, err := eng.Ledger().Entries(strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		db, err := store.Open(filepath.Join(dir, "clients", ClientID(i)+".db"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.LedgerStore().Entries(ClientID(i))
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rowsOf(got), rowsOf(want)) {
			t.Errorf("client %d: deployment charged %v, simulation %v", i, rowsOf(got), rowsOf(want))
		}
		charged += len(want)
	}
	t.Logf("%d releases charged to %d clients over %d rounds, %d refusals, equal in both drivers", charged, clients, rounds, refused)
}
