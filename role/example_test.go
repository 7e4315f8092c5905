package role_test

import (
	"fmt"
	"strconv"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/role"
)

// One round of SS-Simple driven by hand: every client machine encodes its
// report and hands back the release to charge (Stage), the driver makes
// the charge durable and tells the machine (Advance) before the report
// leaves, the shuffler strips identities and permutes each coordinate,
// and the analyzer decides the round (Open), absorbs the batch and releases
// the estimate, recording the round's privacy (Close).
func Example() {
	const n, d = 50, 4
	p, _ := protocol.New("ss-simple", protocol.Params{Clip: 1, Delta: 1e-6, Epsilon: 8, Rounds: 1, SampleRate: 1,
		Extra: map[string]float64{"randomizer": 1}})
	ledger := account.NewLedger(account.NewMemoryStore())
	_ = ledger.SetDefaultCap(account.Cap{Epsilon: 100}) // each client's total budget
	acct, _ := account.NewAccountant(1e-6)
	an, _ := role.NewAnalyzer(role.AnalyzerConfig{Protocol: p, Model: make([]float64, d), ServerLR: 1, Accountant: acct})

	s := protocol.Shape{Round: 1, Dim: d, Population: n, Participants: n}
	sh, _ := role.NewShuffler[role.Plain](p, s, n/2)
	budget := protocol.Budget{Epsilon: 8}
	for i := 0; i < n; i++ {
		c := role.NewClient(role.ClientConfig{ID: strconv.Itoa(i), Budget: budget, Protocol: p, Ledger: ledger})
		var rep protocol.Report
		update := []float64{0.5, -0.5, 0.25, 0}
		rd, err := c.Stage(rng.Stream(1, uint64(i)), s, update, &rep)
		if err != nil {
			panic(err)
		}
		if err := ledger.Charge(rd.Release); err != nil { // the driver's write
			panic(err)
		}
		if err := c.Advance(rd); err != nil { // durable before anything leaves
			panic(err)
		}
		if _, err := sh.Accept(c.ID(), role.Messages(p.Mode(), &rep, nil)); err != nil {
			panic(err)
		}
	}
	batch, _ := sh.Close(rng.Stream(2), rng.Stream(3), role.PlainDummy(p.Mode()))

	f := role.Facts{Shape: s, Sampled: n, Reporters: batch.Senders, MinReports: n / 2}
	for range batch.Senders {
		f.Budgets = append(f.Budgets, budget)
	}
	rd, _ := an.Open(f) // the analyzer checks and accounts the round
	if err := an.Absorb(role.BatchInput(batch)); err != nil {
		panic(err)
	}
	rd, _ = an.Close(rng.Stream(4))
	_, err := an.Close(rng.Stream(4))
	fmt.Println("reports:", batch.Senders, "released:", rd.Released, "rounds recorded:", acct.Rounds())
	fmt.Println("close again:", err)
	// Output:
	// reports: 50 released: true rounds recorded: 1
	// close again: analyzer: round 1: round already released
}
