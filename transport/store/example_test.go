package store_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/transport/store"
)

// A client charges its ledger and stores the sealed report in one
// transaction, sends it, and after a crash resends the same bytes; the
// shuffler stores the report before acknowledging, and recognizes the
// resend.
func Example() {
	dir, _ := os.MkdirTemp("", "store-example")
	defer os.RemoveAll(dir)

	// Client side.
	cdb, err := store.Open(filepath.Join(dir, "client.db"))
	if err != nil {
		panic(err)
	}
	defer cdb.Close()
	ledger := account.NewLedger(cdb.LedgerStore())
	ledger.SetCap("alice", account.Cap{Epsilon: 4, Delta: 1e-6})
	release := account.Release{Client: "alice", Round: 0, Mechanism: "ss-double", LocalEpsilon: 1}
	sealed := []byte("...sealed report...")
	if err := cdb.ChargeWithReport(ledger, release, sealed); err != nil {
		panic(err)
	}
	// (send; the process dies before the acknowledgement arrives)
	pending, _ := cdb.OutboxPending("alice")
	fmt.Printf("to resend: round %d, %q\n", pending[0].Round, pending[0].Report)

	// Shuffler side.
	sdb, err := store.Open(filepath.Join(dir, "shuffler.db"))
	if err != nil {
		panic(err)
	}
	defer sdb.Close()
	sdb.OpenInboxRound(0, []byte("announcement"))
	report := store.Report{Round: 0, Client: "alice", Nonce: []byte("nonce-0123456789"),
		Messages: []store.SealedMessage{{Label: 0, Sealed: pending[0].Report}}}
	fmt.Println("first:", sdb.Accept(report))
	report.Nonce = []byte("nonce-abcdefghij") // the resend is a new signed request
	err = sdb.Accept(report)
	fmt.Println("resend is a duplicate:", errors.Is(err, store.ErrAlreadyAccepted))
	cdb.MarkSent("alice", 0)

	spent, _ := ledger.Spent("alice")
	fmt.Println("spent epsilon:", spent.Epsilon)
	// Output:
	// to resend: round 0, "...sealed report..."
	// first: <nil>
	// resend is a duplicate: true
	// spent epsilon: 1
}

// The analyzer releases a round with its checkpoint; a second release is
// refused by the stored state.
func ExampleDB_ReleaseRound() {
	dir, _ := os.MkdirTemp("", "store-example")
	defer os.RemoveAll(dir)
	db, err := store.Open(filepath.Join(dir, "analyzer.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	db.OpenRound(5)
	cp := store.Checkpoint{Round: 5, Model: []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, Accountant: []byte(`{"epsilon":0.8}`)}
	counts := store.RoundCounts{Received: 100, Accepted: 97, Dummies: 10, Rejected: map[string]int64{"nan": 1, "range": 2}}
	fmt.Println(db.ReleaseRound(cp, counts))
	fmt.Println(errors.Is(db.ReleaseRound(cp, counts), store.ErrRoundReleased))
	latest, _ := db.LatestCheckpoint()
	fmt.Println(latest.Round, string(latest.Accountant))
	// Output:
	// <nil>
	// true
	// 5 {"epsilon":0.8}
}
