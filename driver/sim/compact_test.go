package sim

import (
	"strconv"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
)

// TestAdmitSomeRefused: with personalized budgets under a cap, the clients
// at epsilon 3 refuse round 2 (3 + 3 > 5) and those at 1 take part: the
// list of the kept clients starts at the first refusal, and exactly the
// kept clients are charged.
func TestAdmitSomeRefused(t *testing.T) {
	split := loadSample(t)
	cfg := smallConfig()
	cfg.Protocol = "ldp-laplace"
	cfg.ClientCap = 5
	cfg.ClientsPerRound = 0
	cfg.Rounds = 2
	d := account.RoundDelta(cfg.Delta, cfg.Rounds)
	budgets := make([]protocol.Budget, cfg.Clients)
	high := 0
	for i := range budgets {
		budgets[i] = protocol.Budget{Epsilon: 1, Delta: d}
		if i%3 == 1 {
			budgets[i].Epsilon, high = 3, high+1
		}
	}
	e, err := New(cfg, split, budgets)
	if err != nil {
		t.Fatal(err)
	}
	for r, want := range []int{0, high} {
		res, err := e.Step()
		if err != nil {
			t.Fatal(err)
		}
		if res.Refused != want || res.Participants != cfg.Clients-want {
			t.Fatalf("round %d: %d refused, %d took part; want %d refused", r+1, res.Refused, res.Participants, want)
		}
	}
	for c := range cfg.Clients {
		sp, err := e.Ledger().Spent(strconv.Itoa(c))
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]float64{true: 3, false: 2}[c%3 == 1]; sp.Epsilon != want {
			t.Fatalf("client %d spent %g, want %g", c, sp.Epsilon, want)
		}
	}
}

// TestAdmitAllocatesNothing: a round without ledger or cap admits its
// sample as it is, a range of 10^6 clients without a list.
func TestAdmitAllocatesNothing(t *testing.T) {
	split := loadSample(t)
	cfg := smallConfig()
	cfg.Protocol = "nonprivate"
	e, err := New(cfg, split, nil)
	if err != nil {
		t.Fatal(err)
	}
	all := round.AllClients(1_000_000)
	var res round.RoundResult
	allocs := testing.AllocsPerRun(3, func() {
		kept, err := e.admit(1, all, &res)
		if err != nil || kept.Len() != all.Len() {
			t.Fatalf("admitted %d of %d: %v", kept.Len(), all.Len(), err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations to admit a round", allocs)
	}
}
