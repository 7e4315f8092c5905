package role

import (
	"fmt"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
)

// Client is one client's side of a round: it consults its ledger, and
// clips and randomizes its local update with the protocol's local
// randomizer. Local training is the driver's job (it needs the client's
// data and the model); the Client sees only the update.
//
// The machine performs no I/O. It reads its ledger through a LedgerView
// and never writes it: Stage produces the round's report and a
// ClientReady naming the release to charge; the driver makes that charge
// durable (account.Ledger.Charge, or a store that records it in one
// transaction with the report) and then calls Advance, which checks that
// the ledger holds it. Only after Advance returned nil may the report
// leave the client (the pattern of etcd raft's Ready and Advance).
//
// A Client is not safe for concurrent use; different clients may run
// concurrently (their ledger entries are independent).
type Client struct {
	id     string
	budget protocol.Budget
	proto  protocol.Protocol
	ledger LedgerView
	// localDelta: the protocol's local randomizer spends the budget's
	// delta (approximate mechanisms), so the ledger charges it.
	localDelta bool
	charged    int // round of the last charge Advance confirmed (0: none)
	encoded    int // round of the last report produced (0: none)
	staged     int // round of a report produced by Stage, not yet advanced (0: none)
}

// LedgerView is the read side of a client's privacy ledger, which the
// client machine consults and its driver writes. *account.Ledger is one.
type LedgerView interface {
	// Check reports whether the release could be charged now (nil), or
	// why not (account.ErrCapExceeded, account.ErrDuplicateRelease, ...).
	Check(r account.Release) error
	// Holds reports whether the client's release in round t is recorded.
	Holds(client string, t int) (bool, error)
}

// ClientConfig describes a client.
type ClientConfig struct {
	// ID names the client in its ledger. It never leaves the client's side
	// of the shuffler.
	ID string
	// Budget is the client's local privacy budget for one round (user
	// level: its whole update).
	Budget protocol.Budget
	// Protocol is the round's protocol.
	Protocol protocol.Protocol
	// Ledger is the client's ledger; nil when the protocol gives clients
	// no local guarantee (non-private FedAvg, central DP), in which case
	// nothing is charged.
	Ledger LedgerView
	// LocalDelta makes each release charge Budget.Delta as well as
	// Budget.Epsilon (approximate local randomizers).
	LocalDelta bool
}

// ClientReady is what the client machine hands its driver once it has
// produced round Round's report (Stage): when Charge is set, the driver
// must record Release durably in the client's ledger and then call
// Advance; the report may be sent only after Advance returned nil.
type ClientReady struct {
	Round   int
	Charge  bool
	Release account.Release
}

// NewClient returns a client in its initial state.
func NewClient(c ClientConfig) *Client {
	return &Client{id: c.ID, budget: c.Budget, proto: c.Protocol, ledger: c.Ledger, localDelta: c.LocalDelta}
}

// ID returns the client's ledger name.
func (c *Client) ID() string { return c.id }

// Budget returns the client's budget for one round.
func (c *Client) Budget() protocol.Budget { return c.budget }

// Release is the ledger entry of the client's report in round t.
func (c *Client) Release(t int) account.Release {
	r := account.Release{Client: c.id, Round: t, Mechanism: c.proto.Name(), LocalEpsilon: c.budget.Epsilon}
	if c.localDelta {
		r.LocalDelta = c.budget.Delta
	}
	return r
}

// Check reports whether the client may release in round t: nil, or an
// error wrapping account.ErrCapExceeded when its ledger would go over its
// cap (the client then sits the round out), or another ledger error. It
// changes nothing.
func (c *Client) Check(t int) error {
	if c.ledger == nil {
		return nil
	}
	return c.ledger.Check(c.Release(t))
}

// Stage checks the ledger, clips and randomizes update (length s.Dim; it
// may be modified in place) into out for round s.Round, drawing the
// randomizer's noise from r, and returns the release to charge. If the
// driver dies before Advance, nothing was released; whether it was
// charged depends on how far the driver got, never the other way round.
// Stage refuses a second report in a round (ErrOrder): a driver that must
// retry resends the report it stored, it never re-randomizes.
func (c *Client) Stage(r *rand.Rand, s protocol.Shape, update []float64, out *protocol.Report) (ClientReady, error) {
	return c.stage(s.Round, func() error { return c.proto.Encode(r, s, update, c.budget, out) })
}

// StageModel is Stage for a clustered protocol (protocol.Clustered): base
// is the model the client chose and trained, update its local change.
func (c *Client) StageModel(r *rand.Rand, s protocol.Shape, base, update []float64, out *protocol.Report) (ClientReady, error) {
	cl, ok := c.proto.(protocol.Clustered)
	if !ok {
		return ClientReady{}, fmt.Errorf("client %s: %s keeps one model: %w", c.id, c.proto.Name(), ErrOrder)
	}
	return c.stage(s.Round, func() error { return cl.EncodeModel(r, s, base, update, c.budget, out) })
}

// stage is Stage's and StageModel's order: refuse a round already encoded
// or charged, check the ledger, encode, and return the release to charge.
func (c *Client) stage(t int, encode func() error) (ClientReady, error) {
	if t < 1 {
		return ClientReady{}, fmt.Errorf("client %s: round %d: %w: rounds start at 1", c.id, t, ErrOrder)
	}
	if c.encoded == t || c.charged == t {
		return ClientReady{}, fmt.Errorf("client %s: round %d: %w: the round's report was already produced", c.id, t, ErrOrder)
	}
	if err := c.Check(t); err != nil {
		return ClientReady{}, fmt.Errorf("client %s: round %d: %w", c.id, t, err)
	}
	if err := encode(); err != nil {
		return ClientReady{}, fmt.Errorf("client %s: encode: %w", c.id, err)
	}
	c.encoded, c.staged = t, t
	return ClientReady{Round: t, Charge: c.ledger != nil, Release: c.Release(t)}, nil
}

// Advance tells the machine that the driver did what rd asked: the
// release is durable in the client's ledger (checked: Advance reads the
// ledger and returns ErrOrder when the charge is not there). Only then may
// the report Stage produced be sent. rd must be the last Stage's.
func (c *Client) Advance(rd ClientReady) error {
	t := rd.Round
	if c.staged != t || t == 0 {
		return fmt.Errorf("client %s: round %d: %w: no staged report", c.id, t, ErrOrder)
	}
	if rd.Charge != (c.ledger != nil) || rd.Release != c.Release(t) {
		return fmt.Errorf("client %s: round %d: %w: not the ready this client staged", c.id, t, ErrOrder)
	}
	if c.ledger != nil {
		ok, err := c.ledger.Holds(c.id, t)
		if err != nil {
			return fmt.Errorf("client %s: round %d: ledger: %w", c.id, t, err)
		}
		if !ok {
			return fmt.Errorf("client %s: round %d: %w: the charge did not reach the client's ledger", c.id, t, ErrOrder)
		}
		c.charged = t
	}
	c.staged = 0
	return nil
}

// Messages splits a report into the messages the client hands to the
// shuffler under the protocol's shuffle mode, appending them to dst:
// per-coordinate protocols send every value as its own message labelled
// with its coordinate, and every metadata value labelled MetaLabel; the
// others send the report whole (ReportLabel) and its metadata separately.
func Messages(mode protocol.ShuffleMode, rep *protocol.Report, dst []Message[Plain]) []Message[Plain] {
	if mode == protocol.PerCoordinate {
		if rep.Coords == nil {
			for j, v := range rep.Values {
				dst = append(dst, Message[Plain]{Label: int32(j), Payload: Plain{Value: v}})
			}
		} else {
			for i, j := range rep.Coords {
				dst = append(dst, Message[Plain]{Label: j, Payload: Plain{Value: rep.Values[i]}})
			}
		}
	} else {
		whole := &protocol.Report{Coords: rep.Coords, Values: rep.Values}
		dst = append(dst, Message[Plain]{Label: ReportLabel, Payload: Plain{Report: whole}})
	}
	for _, m := range rep.Meta {
		dst = append(dst, Message[Plain]{Label: MetaLabel, Payload: Plain{Value: m}})
	}
	return dst
}

// PlainDummy returns the dummy constructor a simulation's shuffler uses:
// a single value in per-coordinate mode, a one-value sparse report
// otherwise. (A deployment's shuffler seals the value to the analyzer.)
func PlainDummy(mode protocol.ShuffleMode) func(coord int, v float64) (Plain, error) {
	if mode == protocol.PerCoordinate {
		return func(_ int, v float64) (Plain, error) { return Plain{Value: v}, nil }
	}
	return func(j int, v float64) (Plain, error) {
		return Plain{Report: &protocol.Report{Coords: []int32{int32(j)}, Values: []float64{v}}}, nil
	}
}
