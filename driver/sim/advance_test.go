package sim

import (
	"errors"
	"strconv"
	"testing"

	"github.com/shufflefl/shufflefl/privacy/account"
)

// failingStore is a ledger store whose Append fails from the after-th
// call on (a disk that fills up mid-round).
type failingStore struct {
	account.Store
	after, n int
}

var errDiskFull = errors.New("disk full")

func (f *failingStore) Append(r account.Release) error {
	if f.n++; f.n > f.after {
		return errDiskFull
	}
	return f.Store.Append(r)
}

// TestChargeBeforeAbsorb: a block's reports reach the analyzer only after
// every one of its releases is durable. With a ledger whose store fails
// at the round's k-th charge, the round fails, the analyzer has absorbed
// exactly the reports of the blocks charged in full before it, and every
// report it absorbed is charged: streaming and faithful collection, one and
// two workers.
func TestChargeBeforeAbsorb(t *testing.T) {
	split := loadSample(t)
	for _, tc := range []struct {
		name     string
		faithful bool
		workers  int
		after    int // charges that succeed
		absorbed int64
	}{
		{"streaming, first block fails", false, 1, 5, 0},
		{"streaming, second block fails", false, 2, blockSize + 3, blockSize},
		{"faithful, second block fails", true, 2, blockSize + 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallConfig()
			cfg.Protocol, cfg.Rounds, cfg.Clients, cfg.ClientsPerRound = "ss-simple", 1, 60, 40
			cfg.Faithful, cfg.Workers = tc.faithful, tc.workers
			e, err := New(cfg, split, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !e.charges {
				t.Fatal("ss-simple charges clients")
			}
			e.ledger = account.NewLedger(&failingStore{Store: account.NewMemoryStore(), after: tc.after})
			if err := e.ledger.SetDefaultCap(account.Cap{Epsilon: 1e300, Delta: 0.5}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Step(); !errors.Is(err, errDiskFull) {
				t.Fatalf("Step: %v, want the store's failure", err)
			}
			agg := e.an.Aggregate()
			if agg.Reports != tc.absorbed {
				t.Fatalf("the analyzer absorbed %d reports, want %d (the fully charged blocks)", agg.Reports, tc.absorbed)
			}
			charged := 0
			for c := range cfg.Clients {
				es, err := e.ledger.Entries(strconv.Itoa(c))
				if err != nil {
					t.Fatal(err)
				}
				charged += len(es)
			}
			if charged != tc.after || int64(charged) < agg.Reports {
				t.Fatalf("%d charges for %d absorbed reports, want %d", charged, agg.Reports, tc.after)
			}
		})
	}
}
