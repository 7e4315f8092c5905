package deploy

import (
	"context"
	"crypto/tls"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/wire"
)

func testRand() *rand.Rand { return rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())) }

// sealedReport seals a plausible report of the protocol's layout for
// round t: the first Layout.Coords coordinates, each with Layout.PerCoord
// copies of v (mapped into the randomizer's output range when it has
// one), and the budget's metadata.
func sealedReport(t *testing.T, h *harness, round int64, v float64) []*wire.SealedMessage {
	t.Helper()
	s, err := seal.NewSealer(h.creds.HPKEPublic, h.st.RunID)
	if err != nil {
		t.Fatal(err)
	}
	lay := protocol.Layout{Coords: h.st.Dim(), PerCoord: 1}
	if l, ok := h.st.Proto.(protocol.Laid); ok {
		if lay, err = l.Layout(h.st.Shape(int(round))); err != nil {
			t.Fatal(err)
		}
	}
	if c, ok := h.st.Proto.(protocol.Counted); ok {
		if cs, err := c.Counts(h.st.Shape(int(round))); err == nil && cs.Values.Bounded() {
			v = max(cs.Values.Lo, min(cs.Values.Hi, v))
			if cs.Values.Integer { // the sign picks an end of the range
				switch {
				case v > 0:
					v = cs.Values.Hi
				case v < 0:
					v = cs.Values.Lo
				default:
					v = math.Round((cs.Values.Lo + cs.Values.Hi) / 2)
				}
			}
		}
	}
	var out []*wire.SealedMessage
	for j := 0; j < lay.Coords; j++ {
		for range lay.PerCoord {
			ct, err := s.Seal(uint64(round), seal.Coord(j), []float64{v})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, &wire.SealedMessage{Label: uint32(j), Ciphertext: ct})
		}
	}
	if h.st.Meta {
		ct, err := s.Seal(uint64(round), seal.Meta, []float64{h.st.Budget.Epsilon / float64(h.st.Dim())})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &wire.SealedMessage{Label: 0, Ciphertext: ct})
	}
	return out
}

func (h *harness) submit(t *testing.T, i int, round int64, ms []*wire.SealedMessage) (*wire.SubmitReportResponse, error) {
	t.Helper()
	req := &wire.SubmitReportRequest{Auth: &wire.RequestAuth{}, Round: round, Messages: ms}
	if err := sign(h.signer(t, i), testRand(), time.Now(), wire.Shuffler_SubmitReport_FullMethodName, round, req); err != nil {
		t.Fatal(err)
	}
	return h.cli.SubmitReport(context.Background(), req)
}

// wantStatus checks err's code and reason.
func wantStatus(t *testing.T, err error, code codes.Code, reason wire.Reason) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("status %v (%v), want %v", status.Code(err), err, code)
	}
	if reason == wire.Reason_REASON_UNSPECIFIED {
		return
	}
	d, ok := wire.DetailOf(err)
	if !ok || d.Reason != reason {
		t.Fatalf("reason %v (%v), want %v", d.GetReason(), err, reason)
	}
}

// TestShufflerRejectsBadInput sends the shuffler every kind of bad
// submission and checks each precise status, that nothing bad reaches the
// round, and that the service keeps working (the round then completes
// with the good reports and the analyzer releases a finite model).
func TestShufflerRejectsBadInput(t *testing.T) {
	const clients = 3
	h := newHarness(t, "ss-double", clients, 2, 1)
	h.waitRound(t, 1)
	good := sealedReport(t, h, 1, 0.01)

	rejectBadSubmissions(t, h, good)
	rejectRepeats(t, h, good)
	// A relabelled ciphertext whose header was rewritten passes the
	// shuffler (which cannot authenticate it) and fails at the analyzer.
	relab := sealedReport(t, h, 1, 0.01)
	relab[0].Ciphertext[8] ^= 1 // label index 0 -> 1 in the sealed header (bytes 5..8)
	relab[1].Ciphertext[8] ^= 1 // and 1 -> 0
	relab[0].Label, relab[1].Label = 1, 0
	if _, err := h.submit(t, 1, 1, relab); err != nil {
		t.Fatalf("a header-relabelled report should pass the shuffler: %v", err)
	}
	if _, err := h.submit(t, 2, 1, sealedReport(t, h, 1, -0.01)); err != nil {
		t.Fatal(err)
	}
	h.waitFinished(t, 1)
	t.Run("closed round", func(t *testing.T) {
		_, err := h.submit(t, 2, 1, sealedReport(t, h, 1, 0.01))
		wantStatus(t, err, codes.FailedPrecondition, wire.Reason_REASON_ROUND_CLOSED)
	})
	st := h.an.Stats()
	if st.Auth != 2 {
		t.Fatalf("the analyzer counted %d authentication failures, want the 2 relabelled messages: %+v", st.Auth, st)
	}
	for j, v := range h.an.Model() {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("model parameter %d is %v", j, v)
		}
	}
	ss := h.sh.Stats()
	if ss.Accepted != 3 || ss.Retries != 1 {
		t.Fatalf("shuffler accepted %d reports with %d retries, want 3 and 1: %+v", ss.Accepted, ss.Retries, ss)
	}
	t.Logf("shuffler rejections by reason: %v", ss.Rejected)
}

// rejectBadSubmissions sends round 1 submissions that are bad in
// themselves (authentication, sealing, labels, round) and checks each
// status.
func rejectBadSubmissions(t *testing.T, h *harness, good []*wire.SealedMessage) {
	t.Run("unauthenticated", func(t *testing.T) {
		req := &wire.SubmitReportRequest{Auth: &wire.RequestAuth{ClientId: ClientID(0), TimestampUnixNano: time.Now().UnixNano(), Nonce: make([]byte, 16), Signature: make([]byte, 64)}, Round: 1, Messages: good}
		_, err := h.cli.SubmitReport(context.Background(), req)
		wantStatus(t, err, codes.Unauthenticated, wire.Reason_REASON_BAD_SIGNATURE)
	})
	t.Run("unregistered", func(t *testing.T) {
		_, priv, _ := ed25519Key()
		s, _ := pki.NewSigner("client-999999", priv)
		req := &wire.SubmitReportRequest{Auth: &wire.RequestAuth{}, Round: 1, Messages: good}
		if err := sign(s, testRand(), time.Now(), wire.Shuffler_SubmitReport_FullMethodName, 1, req); err != nil {
			t.Fatal(err)
		}
		_, err := h.cli.SubmitReport(context.Background(), req)
		wantStatus(t, err, codes.Unauthenticated, wire.Reason_REASON_NOT_REGISTERED)
	})
	t.Run("stale timestamp", func(t *testing.T) {
		req := &wire.SubmitReportRequest{Auth: &wire.RequestAuth{}, Round: 1, Messages: good}
		if err := sign(h.signer(t, 0), testRand(), time.Now().Add(-time.Hour), wire.Shuffler_SubmitReport_FullMethodName, 1, req); err != nil {
			t.Fatal(err)
		}
		_, err := h.cli.SubmitReport(context.Background(), req)
		wantStatus(t, err, codes.Unauthenticated, wire.Reason_REASON_STALE_TIMESTAMP)
	})
	t.Run("tampered after signing", func(t *testing.T) {
		req := &wire.SubmitReportRequest{Auth: &wire.RequestAuth{}, Round: 1, Messages: good}
		if err := sign(h.signer(t, 0), testRand(), time.Now(), wire.Shuffler_SubmitReport_FullMethodName, 1, req); err != nil {
			t.Fatal(err)
		}
		req.Messages = good[1:]
		_, err := h.cli.SubmitReport(context.Background(), req)
		wantStatus(t, err, codes.Unauthenticated, wire.Reason_REASON_BAD_SIGNATURE)
	})
	t.Run("malformed ciphertext", func(t *testing.T) {
		bad := append([]*wire.SealedMessage{{Label: 0, Ciphertext: []byte("not a sealed message")}}, good[1:]...)
		_, err := h.submit(t, 0, 1, bad)
		wantStatus(t, err, codes.InvalidArgument, wire.Reason_REASON_MALFORMED)
	})
	t.Run("oversized", func(t *testing.T) {
		big := []*wire.SealedMessage{{Label: 0, Ciphertext: make([]byte, wire.MaxCiphertextBytes+1)}}
		_, err := h.submit(t, 0, 1, big)
		wantStatus(t, err, codes.ResourceExhausted, wire.Reason_REASON_UNSPECIFIED)
	})
	t.Run("relabelled on the wire", func(t *testing.T) {
		bad := append([]*wire.SealedMessage{}, good...)
		bad[0] = &wire.SealedMessage{Label: 5, Ciphertext: good[0].Ciphertext}
		_, err := h.submit(t, 0, 1, bad)
		wantStatus(t, err, codes.InvalidArgument, wire.Reason_REASON_MALFORMED)
	})
	t.Run("partial report", func(t *testing.T) {
		// The first half of a complete report (every protocol's shape is
		// checked: a partial one would leave coordinates with fewer values
		// than the statement counts).
		_, err := h.submit(t, 0, 1, good[:len(good)/2])
		wantStatus(t, err, codes.InvalidArgument, wire.Reason_REASON_MALFORMED)
		if d, _ := wire.DetailOf(err); d.GetField() != "messages" || !strings.Contains(err.Error(), "incomplete report") {
			t.Fatalf("field %q (%v), want messages and an incomplete report", d.GetField(), err)
		}
	})
	t.Run("repeated coordinate", func(t *testing.T) {
		bad := append([]*wire.SealedMessage{}, good...)
		bad[1] = good[0]
		_, err := h.submit(t, 0, 1, bad)
		wantStatus(t, err, codes.InvalidArgument, wire.Reason_REASON_MALFORMED)
	})
	t.Run("sealed for another round", func(t *testing.T) {
		_, err := h.submit(t, 0, 1, sealedReport(t, h, 2, 0.01))
		wantStatus(t, err, codes.InvalidArgument, wire.Reason_REASON_REPLAY)
	})
	t.Run("unknown round", func(t *testing.T) {
		_, err := h.submit(t, 0, 7, sealedReport(t, h, 7, 0.01))
		wantStatus(t, err, codes.NotFound, wire.Reason_REASON_UNKNOWN_ROUND)
	})

}

// rejectRepeats lets client 0 report good, then checks that a replay of
// its signed request, a second different report and its ciphertexts under
// client 1's name are refused, and that an identical retry is
// acknowledged as a duplicate.
func rejectRepeats(t *testing.T, h *harness, good []*wire.SealedMessage) {
	req := &wire.SubmitReportRequest{Auth: &wire.RequestAuth{}, Round: 1, Messages: good}
	if err := sign(h.signer(t, 0), testRand(), time.Now(), wire.Shuffler_SubmitReport_FullMethodName, 1, req); err != nil {
		t.Fatal(err)
	}
	if _, err := h.cli.SubmitReport(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	t.Run("replayed request", func(t *testing.T) {
		_, err := h.cli.SubmitReport(context.Background(), req)
		wantStatus(t, err, codes.Unauthenticated, wire.Reason_REASON_REPLAY)
	})
	t.Run("retry", func(t *testing.T) {
		resp, err := h.submit(t, 0, 1, good)
		if err != nil || !resp.Duplicate {
			t.Fatalf("identical retry: %v, %v", resp, err)
		}
	})
	t.Run("second report", func(t *testing.T) {
		_, err := h.submit(t, 0, 1, sealedReport(t, h, 1, 0.02))
		wantStatus(t, err, codes.AlreadyExists, wire.Reason_REASON_DUPLICATE_REPORT)
	})
	t.Run("replayed ciphertext", func(t *testing.T) {
		_, err := h.submit(t, 1, 1, good)
		wantStatus(t, err, codes.AlreadyExists, wire.Reason_REASON_REPLAY)
	})
}

// TestAnalyzerDropsBadValues hands the analyzer a batch with messages that
// decrypt to NaN, out-of-range values, a wrong-length report, a foreign
// key and garbage: each is dropped and counted by reason, the rest is
// released.
func TestAnalyzerDropsBadValues(t *testing.T) {
	h := newHarness(t, "e-apes", 2, 1, 1)
	h.waitRound(t, 1)
	h.cancel() // the test feeds the batch itself
	d := h.st.Dim()
	s, _ := seal.NewSealer(h.creds.HPKEPublic, h.st.RunID)
	other, _ := seal.GenerateKey(seal.DefaultSuite)
	so, _ := seal.NewSealer(other.Public(), h.st.RunID)
	vec := func(v float64) []float64 {
		x := make([]float64, d)
		for i := range x {
			x[i] = v
		}
		return x
	}
	mk := func(sl *seal.Sealer, vals []float64) *wire.SealedMessage {
		ct, err := sl.Seal(1, seal.Report, vals)
		if err != nil {
			t.Fatal(err)
		}
		return &wire.SealedMessage{Ciphertext: ct}
	}
	ms := []*wire.SealedMessage{
		mk(s, vec(0.01)), mk(s, vec(-0.01)), // good
		mk(s, vec(1e12)),                // range
		mk(s, vec(0.01)[:d-1]),          // length
		mk(so, vec(0.01)),               // auth (another key)
		{Ciphertext: []byte("garbage")}, // malformed
	}
	ms = append(ms, ms[0]) // replay
	resp, err := h.an.batch(&wire.BatchHeader{Round: 1, RunId: h.st.RunID, Counts: &wire.BatchCounts{Reports: 2, Messages: uint64(len(ms))}}, ms)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"range": 1, "length": 1, "auth": 1, "malformed": 1, "replay": 1}
	if resp.Accepted != 2 {
		t.Fatalf("accepted %d, want 2 (%v)", resp.Accepted, resp.Rejected)
	}
	for k, n := range want {
		if resp.Rejected[k] != n {
			t.Fatalf("rejected %v, want %v", resp.Rejected, want)
		}
	}
	// Releasing twice is refused by state.
	again, err := h.an.batch(&wire.BatchHeader{Round: 1, RunId: h.st.RunID, Counts: &wire.BatchCounts{Reports: 2, Messages: 2}}, ms[:2])
	if err != nil || !again.AlreadyReleased {
		t.Fatalf("second batch of a released round: %v, %v", again, err)
	}
}

// TestPeersAuthenticated: only the shuffler may call the analyzer and
// only the analyzer the shuffler's control service.
func TestPeersAuthenticated(t *testing.T) {
	h := newHarness(t, "ss-double", 2, 1, 1)
	h.waitRound(t, 1)
	dial := func(cfg *tls.Config, addr string) error {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		if err != nil {
			return err
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = wire.NewShufflerControlClient(conn).Announce(ctx, &wire.AnnounceRequest{Announcement: &wire.RoundAnnouncement{}})
		return err
	}
	// The shuffler's client port presents no control service, and its
	// control port refuses a TLS client without a certificate and one with
	// the shuffler's own (wrong-role) certificate.
	for name, cfg := range map[string]*tls.Config{
		"no certificate": pki.ClientConfig(h.creds.Roots, ServerName),
		"wrong role":     pki.MutualClientConfig(h.creds.Shuffler, h.creds.Roots, ServerName, pki.RoleShuffler),
	} {
		t.Run(name, func(t *testing.T) {
			err := dial(cfg, h.controlAddr(t))
			if status.Code(err) != codes.Unavailable {
				t.Fatalf("got %v, want Unavailable (handshake refused)", err)
			}
		})
	}
}

// TestRefusedBatchVoidsRound: with APES, a header-relabelled coordinate
// that the analyzer drops leaves one coordinate with fewer values than
// epsilons; the role refuses to estimate, and the round is void — the
// model and the accountant unchanged, the run going on — instead of
// crashing or releasing a wrong estimate.
func TestRefusedBatchVoidsRound(t *testing.T) {
	h := newHarness(t, "apes", 2, 2, 1)
	h.waitRound(t, 1)
	before := h.an.Model()
	relab := sealedReport(t, h, 1, 0.01)
	relab[0].Ciphertext[8] ^= 1
	relab[1].Ciphertext[8] ^= 1
	relab[0].Label, relab[1].Label = 1, 0
	if _, err := h.submit(t, 0, 1, relab); err != nil {
		t.Fatal(err)
	}
	if _, err := h.submit(t, 1, 1, sealedReport(t, h, 1, -0.01)); err != nil {
		t.Fatal(err)
	}
	h.waitFinished(t, 1)
	e, err := h.an.cfg.DB.Round(1)
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != "void" || e.Counts.Rejected["auth"] != 2 {
		t.Fatalf("round 1 is %s with rejections %v, want void after 2 auth failures", e.Status, e.Counts.Rejected)
	}
	after := h.an.Model()
	for j := range before {
		if before[j] != after[j] {
			t.Fatalf("the void round changed parameter %d", j)
		}
	}
	if sp := h.an.Accountant().Spent(); sp.Epsilon != 0 {
		t.Fatalf("a void round spent epsilon %v", sp.Epsilon)
	}
	h.waitRound(t, 2) // the run goes on
}
