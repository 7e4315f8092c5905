package account

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
)

// Release is one privacy-consuming release by one client in one round.
type Release struct {
	Client    string `json:"client"`
	Round     int    `json:"round"`
	Mechanism string `json:"mechanism"`
	// LocalEpsilon and LocalDelta are the client's local guarantee for this
	// release (LDP against everyone, including the shuffler); they are what
	// the client's cap limits.
	LocalEpsilon float64 `json:"local_epsilon"`
	LocalDelta   float64 `json:"local_delta"`
	// CentralEpsilon and CentralDelta are the release's contribution to the
	// central guarantee against the analyzer (after amplification); recorded
	// for reporting, not charged against the cap. Zero when unknown.
	CentralEpsilon float64 `json:"central_epsilon"`
	CentralDelta   float64 `json:"central_delta"`
}

// validate checks a release's fields.
func (r Release) validate() error {
	if r.Client == "" {
		return checks.Invalidf("release client ID must not be empty")
	}
	if err := checks.IntAtLeast("release round", r.Round, 0); err != nil {
		return err
	}
	if r.Mechanism == "" {
		return checks.Invalidf("release mechanism name must not be empty")
	}
	for _, f := range []struct {
		name  string
		v     float64
		delta bool
	}{
		{"release local epsilon", r.LocalEpsilon, false},
		{"release local delta", r.LocalDelta, true},
		{"release central epsilon", r.CentralEpsilon, false},
		{"release central delta", r.CentralDelta, true},
	} {
		var err error
		if f.delta {
			err = checks.DeltaOrZero(f.name, f.v)
		} else {
			err = checks.EpsilonOrZero(f.name, f.v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Errors returned by Ledger; test with errors.Is.
var (
	// ErrCapExceeded: the release would take the client over its cap
	// (returned as a *CapError).
	ErrCapExceeded = errors.New("privacy cap exceeded")
	// ErrDuplicateRelease: the client already released in this round.
	ErrDuplicateRelease = errors.New("duplicate release")
	// ErrNoCap: the client has no cap and the ledger has no default.
	ErrNoCap = errors.New("no privacy cap set")
)

// CapError reports a refused release: what was asked, what was already
// spent and the cap. It matches ErrCapExceeded under errors.Is.
type CapError struct {
	Client    string
	Round     int
	Requested Budget // the release's local (epsilon, delta)
	Spent     Budget // the client's total before the release
	Cap       Cap
}

// Error names the client, the round, the release and the cap it would exceed.
func (e *CapError) Error() string {
	return fmt.Sprintf("client %q round %d: release of (%g, %g) would exceed the cap (%g, %g): already spent (%g, %g)",
		e.Client, e.Round, e.Requested.Epsilon, e.Requested.Delta, e.Cap.Epsilon, e.Cap.Delta, e.Spent.Epsilon, e.Spent.Delta)
}

// Is makes errors.Is(err, ErrCapExceeded) true.
func (e *CapError) Is(target error) bool { return target == ErrCapExceeded }

// capSlack is the relative tolerance when comparing a running sum with a cap,
// to absorb floating-point rounding (ten releases of 0.1 fit a cap of 1).
const capSlack = 1e-9

// Fits reports whether a release of req on top of spent stays within the
// cap limit, up to a relative rounding tolerance of 1e-9 (ten releases of
// 0.1 fit a cap of 1). Every cap check of the project uses it (the
// Ledger's, and the engine's d-privacy cap), so a release at the cap is
// decided alike in simulation and deployment.
func Fits(spent, req, limit float64) bool {
	return spent+req <= limit*(1+capSlack)
}

// clientState is the ledger's cached view of one client, loaded from the
// store on first use.
type clientState struct {
	mu     sync.Mutex // held across check and Append
	loaded bool
	cap    Cap
	hasCap bool
	spent  Budget // local, basic composition
	cent   Budget // central contributions, summed
	// rounds are the rounds the client released in, increasing: a list,
	// not a set, since a map of even one round costs about 200 bytes a
	// client (a simulation's ledger holds 10^6 clients).
	rounds []int
}

// released says whether the client released in round t.
func (s *clientState) released(t int) bool {
	_, ok := slices.BinarySearch(s.rounds, t)
	return ok
}

// addRound records a release in round t (not yet recorded).
func (s *clientState) addRound(t int) {
	i, _ := slices.BinarySearch(s.rounds, t)
	s.rounds = slices.Insert(s.rounds, i, t)
}

// Ledger is the per-client privacy ledger: it records every release, keeps
// each client's cap, and refuses — before anything is recorded — a release
// that would take the client's spent local budget over its cap (the client
// "decides right before releasing", Galli et al., Section 5). Spent budget is
// the basic composition of the local guarantees: (sum eps_i, sum delta_i),
// valid for any sequence of releases (Dwork and Roth, Theorem 3.16).
//
// Ordering contract: Charge returns nil only after the store made the charge
// durable; release the report only after that. A refused or failed Charge
// records nothing. Releasing twice in the same round is an error, not a
// convention.
//
// A Ledger is safe for concurrent use; charges for the same client are
// serialized, charges for different clients proceed in parallel. All access
// to the store must go through the ledger (it caches totals).
type Ledger struct {
	store Store

	mu         sync.Mutex
	clients    map[string]*clientState
	defaultCap *Cap
}

// NewLedger returns a ledger backed by store. Existing entries and caps in
// the store are read lazily, client by client, on first use.
func NewLedger(store Store) *Ledger {
	return &Ledger{store: store, clients: map[string]*clientState{}}
}

// state returns the client's state, creating it if needed (not loaded).
func (l *Ledger) state(client string) *clientState {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.clients[client]
	if !ok {
		s = &clientState{}
		l.clients[client] = s
	}
	return s
}

// load reads the client's cap and entries from the store; s.mu is held.
func (l *Ledger) load(client string, s *clientState) error {
	if s.loaded {
		return nil
	}
	c, ok, err := l.store.Cap(client)
	if err != nil {
		return fmt.Errorf("ledger: reading cap of client %q: %w", client, err)
	}
	es, err := l.store.Entries(client)
	if err != nil {
		return fmt.Errorf("ledger: reading entries of client %q: %w", client, err)
	}
	s.cap, s.hasCap = c, ok
	s.rounds = nil
	s.spent, s.cent = Budget{}, Budget{}
	for _, e := range es {
		if !s.released(e.Round) {
			s.addRound(e.Round)
		}
		s.spent.Epsilon += e.LocalEpsilon
		s.spent.Delta += e.LocalDelta
		s.cent.Epsilon += e.CentralEpsilon
		s.cent.Delta += e.CentralDelta
	}
	s.loaded = true
	return nil
}

func validateCap(c Cap) error {
	if err := checks.EpsilonOrZero("cap epsilon", c.Epsilon); err != nil {
		return err
	}
	return checks.DeltaOrZero("cap delta", c.Delta)
}

// SetCap sets (or replaces) the client's cap, durably. Lowering a cap below
// what is already spent is allowed: Remaining is then zero and every further
// release is refused.
func (l *Ledger) SetCap(client string, c Cap) error {
	if client == "" {
		return fmt.Errorf("ledger: %w", checks.Invalidf("client ID must not be empty"))
	}
	if err := validateCap(c); err != nil {
		return fmt.Errorf("ledger: client %q: %w", client, err)
	}
	s := l.state(client)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := l.load(client, s); err != nil {
		return err
	}
	if err := l.store.SetCap(client, c); err != nil {
		return fmt.Errorf("ledger: storing cap of client %q: %w", client, err)
	}
	s.cap, s.hasCap = c, true
	return nil
}

// SetDefaultCap sets the cap used for clients that have none of their own.
// It is not persisted: set it again after a restart (or give every client its
// own cap with SetCap).
func (l *Ledger) SetDefaultCap(c Cap) error {
	if err := validateCap(c); err != nil {
		return fmt.Errorf("ledger: default cap: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.defaultCap = &c
	return nil
}

// capOf returns the client's effective cap; s.mu is held and s is loaded.
func (l *Ledger) capOf(s *clientState) (Cap, bool) {
	if s.hasCap {
		return s.cap, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.defaultCap != nil {
		return *l.defaultCap, true
	}
	return Cap{}, false
}

// check validates r against the client's state; s.mu is held and s loaded.
func (l *Ledger) check(r Release, s *clientState) error {
	if s.released(r.Round) {
		return fmt.Errorf("ledger: client %q round %d: %w", r.Client, r.Round, ErrDuplicateRelease)
	}
	c, ok := l.capOf(s)
	if !ok {
		return fmt.Errorf("ledger: client %q: %w", r.Client, ErrNoCap)
	}
	if !Fits(s.spent.Epsilon, r.LocalEpsilon, c.Epsilon) || !Fits(s.spent.Delta, r.LocalDelta, c.Delta) {
		return &CapError{Client: r.Client, Round: r.Round,
			Requested: Budget{r.LocalEpsilon, r.LocalDelta}, Spent: s.spent, Cap: c}
	}
	return nil
}

// Check reports whether Charge(r) would succeed now, without recording
// anything: nil, a *CapError (ErrCapExceeded), ErrDuplicateRelease, ErrNoCap
// or an invalid-parameter error. Another goroutine may charge in between;
// only Charge decides.
func (l *Ledger) Check(r Release) error {
	if err := r.validate(); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	s := l.state(r.Client)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := l.load(r.Client, s); err != nil {
		return err
	}
	return l.check(r, s)
}

// Charge records r if it fits the client's cap and the client has not yet
// released in r.Round; otherwise it records nothing and returns a *CapError
// (errors.Is ErrCapExceeded), an error wrapping ErrDuplicateRelease or
// ErrNoCap, or an invalid-parameter error (checks.ErrInvalid). It returns nil
// only after the store has made the record durable.
func (l *Ledger) Charge(r Release) error {
	if err := r.validate(); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	s := l.state(r.Client)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := l.load(r.Client, s); err != nil {
		return err
	}
	if err := l.check(r, s); err != nil {
		return err
	}
	if err := l.store.Append(r); err != nil {
		return fmt.Errorf("ledger: recording client %q round %d: %w", r.Client, r.Round, err)
	}
	s.addRound(r.Round)
	s.spent.Epsilon += r.LocalEpsilon
	s.spent.Delta += r.LocalDelta
	s.cent.Epsilon += r.CentralEpsilon
	s.cent.Delta += r.CentralDelta
	return nil
}

// locked runs f on the client's loaded state.
func (l *Ledger) locked(client string, f func(s *clientState)) error {
	if client == "" {
		return fmt.Errorf("ledger: %w", checks.Invalidf("client ID must not be empty"))
	}
	s := l.state(client)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := l.load(client, s); err != nil {
		return err
	}
	f(s)
	return nil
}

// Spent returns the client's spent local budget: (sum of local epsilons, sum
// of local deltas) over its recorded releases; zero for an unknown client.
func (l *Ledger) Spent(client string) (Budget, error) {
	var b Budget
	err := l.locked(client, func(s *clientState) { b = s.spent })
	return b, err
}

// CentralSpent returns the sums of the central contributions recorded with
// the client's releases (basic composition of what each release was worth
// against the analyzer).
func (l *Ledger) CentralSpent(client string) (Budget, error) {
	var b Budget
	err := l.locked(client, func(s *clientState) { b = s.cent })
	return b, err
}

// Remaining returns cap minus spent for the client, each component clamped
// at 0. It wraps ErrNoCap if the client has no cap and there is no default.
func (l *Ledger) Remaining(client string) (Budget, error) {
	var b Budget
	var ok bool
	err := l.locked(client, func(s *clientState) {
		var c Cap
		c, ok = l.capOf(s)
		b = Budget{math.Max(0, c.Epsilon-s.spent.Epsilon), math.Max(0, c.Delta-s.spent.Delta)}
	})
	if err != nil {
		return Budget{}, err
	}
	if !ok {
		return Budget{}, fmt.Errorf("ledger: client %q: %w", client, ErrNoCap)
	}
	return b, nil
}

// CapOf returns the client's effective cap (its own, else the default); ok
// is false if there is none.
func (l *Ledger) CapOf(client string) (c Cap, ok bool, err error) {
	err = l.locked(client, func(s *clientState) { c, ok = l.capOf(s) })
	return c, ok, err
}

// Holds reports whether the client's release in round t is recorded (a
// client machine checks it before its report may leave: role.Client's
// Advance).
func (l *Ledger) Holds(client string, t int) (bool, error) {
	var ok bool
	err := l.locked(client, func(s *clientState) { ok = s.released(t) })
	return ok, err
}

// Entries returns the client's releases in the order they were charged.
// Reading a client the ledger holds no state for creates none: it reads
// the store directly (a simulation's snapshot reads every client of a
// population of 10^6, most of whom never released).
func (l *Ledger) Entries(client string) ([]Release, error) {
	if client == "" {
		return nil, fmt.Errorf("ledger: %w", checks.Invalidf("client ID must not be empty"))
	}
	l.mu.Lock()
	s, known := l.clients[client]
	l.mu.Unlock()
	if known {
		s.mu.Lock() // after a charge in progress
		defer s.mu.Unlock()
	}
	es, err := l.store.Entries(client)
	if err != nil {
		return nil, fmt.Errorf("ledger: reading entries of client %q: %w", client, err)
	}
	return es, nil
}
