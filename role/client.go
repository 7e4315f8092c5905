package role

import (
	"fmt"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
)

// Client is one client's side of a round: it consults its ledger, charges
// its release, and clips and randomizes its local update with the
// protocol's local randomizer. Local training is the driver's job (it
// needs the client's data and the model); the Client sees only the update.
//
// A Client is not safe for concurrent use; different clients may run
// concurrently (their ledger entries are independent).
type Client struct {
	id     string
	budget protocol.Budget
	proto  protocol.Protocol
	ledger *account.Ledger
	// localDelta: the protocol's local randomizer spends the budget's
	// delta (approximate mechanisms), so the ledger charges it.
	localDelta bool
	charged    int // round of the last durable charge (0: none)
	encoded    int // round of the last report produced (0: none)
	staged     int // round of a report produced by Stage, not yet committed (0: none)
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
	// Ledger records the client's releases; nil when the protocol gives
	// clients no local guarantee (non-private FedAvg, central DP), in which
	// case nothing is charged and Encode needs no charge.
	Ledger *account.Ledger
	// LocalDelta makes each release charge Budget.Delta as well as
	// Budget.Epsilon (approximate local randomizers).
	LocalDelta bool
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

// Charge records the client's release in round t in its ledger. It returns
// only after the ledger's store has made the charge durable; an error means
// nothing may be released. Charging a round twice is refused by the
// ledger (account.ErrDuplicateRelease).
func (c *Client) Charge(t int) error {
	if c.ledger == nil {
		return nil
	}
	if err := c.ledger.Charge(c.Release(t)); err != nil {
		return fmt.Errorf("client %s: round %d: %w", c.id, t, err)
	}
	c.charged = t
	return nil
}

// Encode clips and randomizes update (length s.Dim; it may be modified in
// place) into out for round s.Round, drawing the randomizer's noise from r.
// It refuses to encode a round whose release was not charged first (when
// the client has a ledger) and a second report in the same round: a driver
// that must retry resends the report it stored, it never re-randomizes.
func (c *Client) Encode(r *rand.Rand, s protocol.Shape, update []float64, out *protocol.Report) error {
	if err := c.mayEncode(s.Round); err != nil {
		return err
	}
	if err := c.proto.Encode(r, s, update, c.budget, out); err != nil {
		return fmt.Errorf("client %s: encode: %w", c.id, err)
	}
	c.encoded = s.Round
	return nil
}

// mayEncode refuses to encode round t before its release is charged (when
// the client has a ledger) or a second time.
func (c *Client) mayEncode(t int) error {
	if c.ledger != nil && c.charged != t {
		return fmt.Errorf("client %s: round %d: %w: the release is not charged", c.id, t, ErrOrder)
	}
	if c.encoded == t {
		return fmt.Errorf("client %s: round %d: %w: the round's report was already produced", c.id, t, ErrOrder)
	}
	return nil
}

// Stage is the other order of the same contract, for drivers whose store
// makes the charge durable in one transaction with the report it charges
// for (a deployment's client stores its sealed report with the charge, so
// that a retry resends the same bytes): Stage checks the ledger, encodes
// round s.Round's report into out and returns the release to charge; the
// report must not leave the client until Commit has returned nil. If the
// process dies in between, nothing was released and nothing is charged.
// Stage refuses a round already encoded or charged.
func (c *Client) Stage(r *rand.Rand, s protocol.Shape, update []float64, out *protocol.Report) (account.Release, error) {
	return c.stage(s.Round, func() error { return c.proto.Encode(r, s, update, c.budget, out) })
}

// StageModel is Stage for a clustered protocol (protocol.Clustered), as
// EncodeModel is Encode: base is the model the client chose and trained,
// update its local change; Commit follows as for Stage.
func (c *Client) StageModel(r *rand.Rand, s protocol.Shape, base, update []float64, out *protocol.Report) (account.Release, error) {
	cl, ok := c.proto.(protocol.Clustered)
	if !ok {
		return account.Release{}, fmt.Errorf("client %s: %s keeps one model: %w", c.id, c.proto.Name(), ErrOrder)
	}
	return c.stage(s.Round, func() error { return cl.EncodeModel(r, s, base, update, c.budget, out) })
}

// stage is Stage's and StageModel's order: refuse a round already encoded
// or charged, check the ledger, encode, and return the release to charge.
func (c *Client) stage(t int, encode func() error) (account.Release, error) {
	if c.encoded == t || c.charged == t {
		return account.Release{}, fmt.Errorf("client %s: round %d: %w: the round's report was already produced", c.id, t, ErrOrder)
	}
	if err := c.Check(t); err != nil {
		return account.Release{}, fmt.Errorf("client %s: round %d: %w", c.id, t, err)
	}
	if err := encode(); err != nil {
		return account.Release{}, fmt.Errorf("client %s: encode: %w", c.id, err)
	}
	c.encoded, c.staged = t, t
	return c.Release(t), nil
}

// Commit charges the release of the report Stage produced for round t
// through charge, which must record it durably in the client's ledger
// (store.DB.ChargeWithReport does, with the report). Commit verifies that
// the ledger holds the charge before it returns nil; only then may the
// report be sent. Without a ledger it only closes the stage.
func (c *Client) Commit(t int, charge func(account.Release) error) error {
	if c.staged != t || t == 0 {
		return fmt.Errorf("client %s: round %d: %w: no staged report", c.id, t, ErrOrder)
	}
	if c.ledger != nil {
		rel := c.Release(t)
		if err := charge(rel); err != nil {
			return fmt.Errorf("client %s: round %d: charge: %w", c.id, t, err)
		}
		es, err := c.ledger.Entries(c.id)
		if err != nil {
			return fmt.Errorf("client %s: round %d: ledger: %w", c.id, t, err)
		}
		if len(es) == 0 || es[len(es)-1].Round != t {
			return fmt.Errorf("client %s: round %d: %w: the charge did not reach the client's ledger", c.id, t, ErrOrder)
		}
		c.charged = t
	}
	c.staged = 0
	return nil
}

// EncodeModel is Encode for a clustered protocol (protocol.Clustered):
// base is the model the client chose and trained, update its local change;
// the same ordering rules apply.
func (c *Client) EncodeModel(r *rand.Rand, s protocol.Shape, base, update []float64, out *protocol.Report) error {
	cl, ok := c.proto.(protocol.Clustered)
	if !ok {
		return fmt.Errorf("client %s: %s keeps one model: %w", c.id, c.proto.Name(), ErrOrder)
	}
	if err := c.mayEncode(s.Round); err != nil {
		return err
	}
	if err := cl.EncodeModel(r, s, base, update, c.budget, out); err != nil {
		return fmt.Errorf("client %s: encode: %w", c.id, err)
	}
	c.encoded = s.Round
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
