package deploytest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/shufflefl/shufflefl/driver/deploy"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/role"
	"github.com/shufflefl/shufflefl/role/roletest"
	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// player is a client the script plays (c0 is client index 0): it signs
// its requests, encodes through the client role with its own ledger, and
// seals to the analyzer. Its update is drawn from the run's seed, not
// trained: the scripts are about the protocol's messages, not learning.
type player struct {
	name    string
	index   int
	signer  *pki.Signer
	role    *role.Client
	ledger  *account.Ledger // the player's ledger (nil: no charges); the player writes it
	sealer  *seal.Sealer
	nonces  *rand.Rand
	round   int64 // the last round pulled
	report  []role.Message[role.Plain]
	encoded int64 // the round of report
	sealed  []*wire.SealedMessage
	last    *wire.SubmitReportRequest // the last signed submission
}

// player returns (creating) the client named by the step's first
// argument.
func (w *world) player(s roletest.Step) (*player, error) {
	if w.st == nil {
		return nil, errors.New("no run (start one with run)")
	}
	if len(s.Args) == 0 || !strings.HasPrefix(s.Args[0], "c") {
		return nil, fmt.Errorf("%s needs a client (c0, c1, ...)", s.Cmd)
	}
	name := s.Args[0]
	if p, ok := w.players[name]; ok {
		return p, nil
	}
	i, err := strconv.Atoi(name[1:])
	if err != nil || i < 0 || i >= w.st.Config.Clients {
		return nil, fmt.Errorf("client %q: want c0..c%d", name, w.st.Config.Clients-1)
	}
	id := deploy.ClientID(i)
	signer, err := pki.NewSigner(id, w.creds.Clients[id])
	if err != nil {
		return nil, err
	}
	sealer, err := seal.NewSealer(w.creds.HPKEPublic, w.st.RunID)
	if err != nil {
		return nil, err
	}
	cc := role.ClientConfig{ID: id, Budget: w.st.ClientBudget(i), Protocol: w.st.Proto, LocalDelta: w.st.LocalDelta}
	var ledger *account.Ledger
	if w.st.Charges {
		ledger = account.NewLedger(account.NewMemoryStore())
		if err := ledger.SetDefaultCap(account.Cap{Epsilon: math.MaxFloat64, Delta: math.Nextafter(1, 0)}); err != nil {
			return nil, err
		}
		cc.Ledger = ledger
	}
	p := &player{name: name, index: i, signer: signer, role: role.NewClient(cc), ledger: ledger, sealer: sealer,
		nonces: rng.Stream(w.seed, 1<<32, uint64(i))}
	w.players[name] = p
	return p, nil
}

// sign signs req for method with a fresh nonce and the current time.
func (p *player) sign(method string, req wire.AuthRequest) error {
	return wire.Sign(p.signer, p.nonces, time.Now(), method, req)
}

// register declares the client to the shuffler (the run's budget).
func (w *world) register(s roletest.Step) (string, error) {
	p, err := w.player(s)
	if err != nil {
		return "", err
	}
	req := &wire.RegisterRequest{Auth: &wire.RequestAuth{ClientId: p.signer.ID()}, KeyAlgorithm: "ed25519", PublicKey: p.signer.Public()}
	if err := p.sign(wire.Shuffler_Register_FullMethodName, req); err != nil {
		return "", err
	}
	if _, err := w.clients.Register(context.Background(), req); err != nil {
		return p.name + ": " + refusal(err), nil
	}
	return p.name + ": registered", nil
}

// pull waits for a round newer than the last the client pulled.
func (w *world) pull(s roletest.Step) (string, error) {
	p, err := w.player(s)
	if err != nil {
		return "", err
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		req := &wire.PullTaskRequest{Auth: &wire.RequestAuth{ClientId: p.signer.ID()}, AfterRound: p.round}
		if err := p.sign(wire.Shuffler_PullTask_FullMethodName, req); err != nil {
			return "", err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := w.clients.PullTask(ctx, req)
		cancel()
		if err != nil {
			return p.name + ": " + refusal(err), nil
		}
		if resp.Task != nil {
			p.round = resp.Task.Round
			return fmt.Sprintf("%s: round %d: %d model(s), at least %d reports", p.name, resp.Task.Round, len(resp.Task.Models), resp.Task.MinReports), nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "", fmt.Errorf("%s: no round after %d was offered", p.name, p.round)
}

// encode encodes and seals the client's report of the round it pulled
// (round=N to choose another): the role's ledger check and charge, then
// its encoding of an update drawn from the run's seed.
func (w *world) encode(s roletest.Step) (string, error) {
	p, err := w.player(s)
	if err != nil {
		return "", err
	}
	t, err := strconv.ParseInt(s.Key("round", strconv.FormatInt(p.round, 10)), 10, 64)
	if err != nil || t < 1 {
		return "", fmt.Errorf("encode: no round (pull first, or round=N)")
	}
	var rep protocol.Report
	if err := p.encodeRound(w, int(t), &rep); err != nil {
		return fmt.Sprintf("%s: round %d: %v", p.name, t, err), nil
	}
	p.report = role.Messages(w.st.Proto.Mode(), &rep, p.report[:0])
	p.encoded = t
	if p.sealed, err = p.seal(t); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s: round %d: %d messages sealed", p.name, t, len(p.sealed)), nil
}

// encodeRound runs the client role for round t.
func (p *player) encodeRound(w *world, t int, rep *protocol.Report) error {
	d := w.st.Dim()
	update := make([]float64, d)
	g := rng.Stream(w.seed, rng.LabelTraining, uint64(t), uint64(p.index))
	for j := range update {
		update[j] = 0.1 * g.NormFloat64()
	}
	rd, err := p.role.Stage(rng.Stream(w.seed, rng.LabelNoise, uint64(t), uint64(p.index)), w.st.Shape(t), update, rep)
	if err != nil {
		return err
	}
	if rd.Charge {
		if err := p.ledger.Charge(rd.Release); err != nil {
			return err
		}
	}
	return p.role.Advance(rd)
}

// seal seals the encoded messages afresh for round t.
func (p *player) seal(t int64) ([]*wire.SealedMessage, error) {
	out := make([]*wire.SealedMessage, len(p.report))
	for i, m := range p.report {
		l, vals := seal.Coord(int(m.Label)), []float64{m.Payload.Value}
		switch m.Label {
		case role.MetaLabel:
			l = seal.Meta
		case role.ReportLabel:
			l, vals = seal.Report, m.Payload.Report.Values
		}
		ct, err := p.sealer.Seal(uint64(t), l, vals)
		if err != nil {
			return nil, err
		}
		out[i] = &wire.SealedMessage{Label: wireLabel(l), Ciphertext: ct}
	}
	return out, nil
}

// wireLabel is a sealed message's label on the wire: its coordinate, 0
// for the other kinds (the sealed header tells them apart).
func wireLabel(l seal.Label) uint32 {
	if l.Kind == seal.KindCoord {
		return l.Index
	}
	return 0
}

// submit sends the client's sealed report of the round it encoded, signed
// afresh (sending it twice is a retry). Variants: replay (the last signed
// request again, nonce included), reseal (the same report sealed anew: a
// second report), forged (the report sealed to a key that is not the
// analyzer's: the shuffler, which reads only headers, cannot tell), malformed
// (the first message's ciphertext replaced by bytes that are not a sealed
// message).
func (w *world) submit(s roletest.Step) (string, error) {
	p, err := w.player(s)
	if err != nil {
		return "", err
	}
	if p.sealed == nil {
		return "", fmt.Errorf("%s: nothing encoded", p.name)
	}
	t := p.encoded
	req := p.last
	if !s.Has("replay") || req == nil {
		ms := p.sealed
		var err error
		switch {
		case s.Has("reseal"):
			if ms, err = p.seal(t); err != nil {
				return "", err
			}
		case s.Has("forged"):
			if ms, err = p.forge(w, t); err != nil {
				return "", err
			}
		case s.Has("malformed"):
			ms = append([]*wire.SealedMessage{{Label: ms[0].Label, Ciphertext: []byte("not a sealed message")}}, ms[1:]...)
		}
		req = &wire.SubmitReportRequest{Auth: &wire.RequestAuth{ClientId: p.signer.ID()}, Round: t, Messages: ms}
		if err := p.sign(wire.Shuffler_SubmitReport_FullMethodName, req); err != nil {
			return "", err
		}
		p.last = req
	}
	resp, err := w.clients.SubmitReport(context.Background(), req)
	if err != nil {
		return fmt.Sprintf("%s: round %d: %s", p.name, t, refusal(err)), nil
	}
	again := ""
	if resp.Duplicate {
		again = " (a retry: stored before)"
	}
	return fmt.Sprintf("%s: round %d: %d messages stored%s", p.name, resp.Round, resp.StoredMessages, again), nil
}

// report plays pull, encode and submit for the clients cA..cB (report
// cA-cB) and prints one line for the lot, or the first line that differs
// from the others' pattern.
func (w *world) report(s roletest.Step) (string, error) {
	var a, b int
	if len(s.Args) != 1 {
		return "", errors.New("report cA-cB")
	}
	if _, err := fmt.Sscanf(s.Args[0], "c%d-c%d", &a, &b); err != nil || a > b {
		return "", fmt.Errorf("report cA-cB: %q", s.Args[0])
	}
	stored := 0
	var round int64
	for i := a; i <= b; i++ {
		c := roletest.Step{Cmd: s.Cmd, Args: []string{fmt.Sprintf("c%d", i)}, Keys: map[string]string{}}
		for _, f := range []func(roletest.Step) (string, error){w.pull, w.encode, w.submit} {
			out, err := f(c)
			if err != nil {
				return "", err
			}
			if !strings.Contains(out, ": round ") || strings.Contains(out, "refused") || strings.Contains(out, "failed") {
				return out, nil
			}
		}
		stored++
		round = w.players[c.Args[0]].encoded
	}
	return fmt.Sprintf("%s: round %d: %d reports stored", s.Args[0], round, stored), nil
}

// forge seals the encoded messages for round t to a fresh key of the
// analyzer's suite instead of the analyzer's key.
func (p *player) forge(w *world, t int64) ([]*wire.SealedMessage, error) {
	key, err := seal.GenerateKey(p.sealer.Suite())
	if err != nil {
		return nil, err
	}
	forger, err := seal.NewSealer(key.Public(), w.st.RunID)
	if err != nil {
		return nil, err
	}
	real := p.sealer
	p.sealer = forger
	defer func() { p.sealer = real }()
	return p.seal(t)
}
