package account

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

func rel(client string, round int, eps float64) Release {
	return Release{Client: client, Round: round, Mechanism: "laplace", LocalEpsilon: eps, CentralEpsilon: eps / 10}
}

func TestLedgerCharge(t *testing.T) {
	st := NewMemoryStore()
	l := NewLedger(st)
	if err := l.SetCap("a", Cap{Epsilon: 1, Delta: 1e-5}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		r    Release
		err  error // nil, ErrCapExceeded, ErrDuplicateRelease, ErrNoCap
	}{
		{"first", rel("a", 0, 0.4), nil},
		{"second", rel("a", 1, 0.4), nil},
		{"over cap", rel("a", 2, 0.3), ErrCapExceeded},
		{"same round again", rel("a", 1, 0.1), ErrDuplicateRelease},
		{"fits exactly", rel("a", 2, 0.2), nil},
		{"nothing left", rel("a", 3, 1e-6), ErrCapExceeded},
		{"delta over cap", Release{Client: "a", Round: 4, Mechanism: "gauss", LocalDelta: 2e-5}, ErrCapExceeded},
		{"no cap", rel("b", 0, 0.1), ErrNoCap},
	}
	for _, s := range steps {
		before := st.Len(s.r.Client)
		err := l.Charge(s.r)
		if !errors.Is(err, s.err) || (s.err == nil) != (err == nil) {
			t.Fatalf("%s: got %v, want %v", s.name, err, s.err)
		}
		after := st.Len(s.r.Client)
		if (err == nil && after != before+1) || (err != nil && after != before) {
			t.Fatalf("%s: store went from %d to %d entries (err %v)", s.name, before, after, err)
		}
	}
	spent, _ := l.Spent("a")
	if !approx(spent.Epsilon, 1, 1e-12) || spent.Delta != 0 {
		t.Errorf("spent %+v", spent)
	}
	rem, _ := l.Remaining("a")
	if rem.Epsilon > 1e-12 || rem.Delta != 1e-5 {
		t.Errorf("remaining %+v", rem)
	}
	cent, _ := l.CentralSpent("a")
	if !approx(cent.Epsilon, 0.1, 1e-12) {
		t.Errorf("central %+v", cent)
	}
	es, _ := l.Entries("a")
	if len(es) != 3 || es[0].Round != 0 || es[2].Round != 2 {
		t.Errorf("entries %+v", es)
	}
	var ce *CapError
	err := l.Charge(rel("a", 9, 0.5))
	if !errors.As(err, &ce) || ce.Requested.Epsilon != 0.5 || ce.Cap.Epsilon != 1 || ce.Round != 9 {
		t.Errorf("cap error %#v", err)
	}
	if _, err := l.Remaining("b"); !errors.Is(err, ErrNoCap) {
		t.Errorf("remaining without cap: %v", err)
	}
}

func TestLedgerTenTenths(t *testing.T) {
	// Floating-point rounding must not refuse the last of ten 0.1 releases
	// against a cap of 1 (nor admit an eleventh).
	l := NewLedger(NewMemoryStore())
	if err := l.SetDefaultCap(Cap{Epsilon: 1}); err != nil {
		t.Fatal(err)
	}
	for r := range 10 {
		if err := l.Charge(rel("c", r, 0.1)); err != nil {
			t.Fatalf("release %d: %v", r, err)
		}
	}
	if err := l.Charge(rel("c", 10, 0.1)); !errors.Is(err, ErrCapExceeded) {
		t.Fatalf("eleventh release: %v", err)
	}
}

func TestLedgerRestart(t *testing.T) {
	st := NewMemoryStore()
	l := NewLedger(st)
	_ = l.SetCap("a", Cap{Epsilon: 1})
	for r := range 3 {
		if err := l.Charge(rel("a", r, 0.25)); err != nil {
			t.Fatal(err)
		}
	}
	// A new ledger over the same store knows everything.
	l2 := NewLedger(st)
	if s, _ := l2.Spent("a"); !approx(s.Epsilon, 0.75, 1e-12) {
		t.Fatalf("spent after restart %v", s)
	}
	if err := l2.Charge(rel("a", 1, 0.1)); !errors.Is(err, ErrDuplicateRelease) {
		t.Fatalf("duplicate after restart: %v", err)
	}
	if err := l2.Charge(rel("a", 3, 0.5)); !errors.Is(err, ErrCapExceeded) {
		t.Fatalf("over cap after restart: %v", err)
	}
	if err := l2.Check(rel("a", 3, 0.25)); err != nil {
		t.Fatalf("check: %v", err)
	}
	if st.Len("a") != 3 {
		t.Fatal("Check recorded something")
	}
}

// failingStore fails every Append.
type failingStore struct{ *MemoryStore }

func (failingStore) Append(Release) error { return errors.New("disk full") }

func TestLedgerStoreFailure(t *testing.T) {
	st := failingStore{NewMemoryStore()}
	l := NewLedger(st)
	_ = l.SetCap("a", Cap{Epsilon: 1})
	if err := l.Charge(rel("a", 0, 0.5)); err == nil {
		t.Fatal("charge succeeded on a failing store")
	}
	if s, _ := l.Spent("a"); s.Epsilon != 0 {
		t.Fatalf("failed charge counted: %v", s)
	}
}

func TestLedgerInvalid(t *testing.T) {
	l := NewLedger(NewMemoryStore())
	_ = l.SetDefaultCap(Cap{Epsilon: 10})
	tests := []struct {
		r    Release
		want string
	}{
		{Release{Round: 0, Mechanism: "m", LocalEpsilon: 1}, "client ID must not be empty"},
		{Release{Client: "a", Round: -1, Mechanism: "m"}, "release round must be >= 0"},
		{Release{Client: "a", Mechanism: ""}, "mechanism name must not be empty"},
		{Release{Client: "a", Mechanism: "m", LocalEpsilon: -1}, "release local epsilon must be >= 0"},
		{Release{Client: "a", Mechanism: "m", LocalDelta: 1}, "release local delta must be in [0, 1)"},
		{Release{Client: "a", Mechanism: "m", CentralEpsilon: nan()}, "release central epsilon must be a finite number"},
	}
	for _, tc := range tests {
		wantInvalid(t, l.Charge(tc.r), tc.want)
	}
	wantInvalid(t, l.SetCap("a", Cap{Epsilon: -1}), "cap epsilon must be >= 0")
	wantInvalid(t, l.SetCap("", Cap{}), "client ID must not be empty")
	wantInvalid(t, l.SetDefaultCap(Cap{Delta: 2}), "cap delta must be in [0, 1)")
}

// TestLedgerConcurrent races many goroutines charging the same clients: the
// cap must hold exactly (run with -race to check the locking too).
func TestLedgerConcurrent(t *testing.T) {
	l := NewLedger(NewMemoryStore())
	_ = l.SetDefaultCap(Cap{Epsilon: 5})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := map[string]int{}
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 40 {
				for _, c := range []string{"x", "y"} {
					// Goroutines share rounds: (g*40 + r) % 100 collides.
					err := l.Charge(rel(c, (g*40+r)%100, 0.1))
					if err == nil {
						mu.Lock()
						ok[c]++
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, c := range []string{"x", "y"} {
		s, _ := l.Spent(c)
		es, _ := l.Entries(c)
		if ok[c] != 50 || len(es) != 50 || !approx(s.Epsilon, 5, 1e-9) {
			t.Errorf("client %s: %d successes, %d entries, spent %v; want 50, 50, 5", c, ok[c], len(es), s.Epsilon)
		}
	}
}

func nan() float64 { var z float64; return z / z }

func ExampleLedger() {
	l := NewLedger(NewMemoryStore())
	_ = l.SetCap("alice", Cap{Epsilon: 1})
	for round := range 3 {
		err := l.Charge(Release{Client: "alice", Round: round, Mechanism: "laplace", LocalEpsilon: 0.4})
		fmt.Println(round, err)
	}
	rem, _ := l.Remaining("alice")
	fmt.Printf("remaining %.1f\n", rem.Epsilon)
	// Output:
	// 0 <nil>
	// 1 <nil>
	// 2 client "alice" round 2: release of (0.4, 0) would exceed the cap (1, 0): already spent (0.8, 0)
	// remaining 0.2
}

// TestLedgerEntriesCreateNoState checks that reading clients the ledger
// never saw creates no per-client state (a snapshot of a large population
// reads every client), that such a read sees what the store holds, and
// that a charge after the read is still checked against it.
func TestLedgerEntriesCreateNoState(t *testing.T) {
	st := NewMemoryStore()
	if err := st.Append(rel("old", 1, 0.5)); err != nil {
		t.Fatal(err)
	}
	l := NewLedger(st)
	for c := range 1000 {
		es, err := l.Entries(fmt.Sprint("client-", c))
		if err != nil || es != nil {
			t.Fatalf("client %d: %v, %v", c, es, err)
		}
	}
	es, err := l.Entries("old")
	if err != nil || len(es) != 1 || es[0].Round != 1 {
		t.Fatalf("entries of a client only the store knows: %v, %v", es, err)
	}
	if n := len(l.clients); n != 0 {
		t.Fatalf("reads created state for %d clients", n)
	}
	if err := l.SetCap("old", Cap{Epsilon: 10}); err != nil {
		t.Fatal(err)
	}
	if err := l.Charge(rel("old", 1, 0.1)); !errors.Is(err, ErrDuplicateRelease) {
		t.Fatalf("charge of a round the store holds: %v", err)
	}
	if err := l.Charge(rel("old", 2, 0.1)); err != nil {
		t.Fatal(err)
	}
	if es, _ := l.Entries("old"); len(es) != 2 {
		t.Fatalf("entries after a charge: %v", es)
	}
}

// TestLedgerBytesPerClient bounds what the ledger and its memory store
// keep for a client that released once: a simulation's ledger holds every
// client that released (10^6 of them). With a map of rounds per client it
// was 456 bytes (n = 20,000); with a list, 288.
func TestLedgerBytesPerClient(t *testing.T) {
	const n, limit = 20000, 350
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	h0 := heap()
	l := NewLedger(NewMemoryStore())
	if err := l.SetDefaultCap(Cap{Epsilon: 10, Delta: 0.5}); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := l.Charge(rel(id, 1, 0.5)); err != nil {
			t.Fatal(err)
		}
	}
	per := float64(int64(heap())-int64(h0)) / n
	runtime.KeepAlive(l)
	if per > limit {
		t.Fatalf("%.0f bytes per client after one release, want at most %d", per, limit)
	}
	t.Logf("%.0f bytes per client after one release", per)
}

// TestLedgerRoundsAnyOrder checks the ledger's list of a client's rounds
// when rounds are charged out of order and the store holds a round twice.
func TestLedgerRoundsAnyOrder(t *testing.T) {
	st := NewMemoryStore()
	for _, r := range []int{5, 2, 5} {
		if err := st.Append(rel("c", r, 0.1)); err != nil {
			t.Fatal(err)
		}
	}
	l := NewLedger(st)
	if err := l.SetDefaultCap(Cap{Epsilon: 10}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		round int
		dup   bool
	}{{5, true}, {2, true}, {3, false}, {1, false}, {7, false}, {3, true}, {1, true}, {7, true}, {6, false}} {
		err := l.Charge(rel("c", tc.round, 0.1))
		if got := errors.Is(err, ErrDuplicateRelease); got != tc.dup || !tc.dup && err != nil {
			t.Fatalf("round %d: %v, want duplicate %v", tc.round, err, tc.dup)
		}
	}
	if sp, _ := l.Spent("c"); math.Abs(sp.Epsilon-0.7) > 1e-12 {
		t.Fatalf("spent %g, want 0.7 (3 stored, 4 charged)", sp.Epsilon)
	}
}
