package deploy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// refusal is one row of TestDocumentedRefusals: a request the shuffler
// must refuse with code and reason.
type refusal struct {
	name   string
	code   codes.Code
	reason wire.Reason // REASON_UNSPECIFIED: gRPC's own status, no detail
	send   func(t *testing.T) error
}

// rawHeader is a signed header of client i over body for method and round.
func (h *harness) rawHeader(t *testing.T, i int, method string, round uint64, body []byte) []byte {
	t.Helper()
	sr, err := h.signer(t, i).Sign(testRand(), time.Now(), method, round, body)
	if err != nil {
		t.Fatal(err)
	}
	hdr, err := sr.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return hdr
}

// raw sends body as it is to method with the signed header hdr, as a
// client that bypasses the library could.
func (h *harness) raw(t *testing.T, method string, hdr, body []byte, opts ...grpc.CallOption) error {
	t.Helper()
	conn, err := DialShuffler(h.creds, h.pub)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return invokeRaw(context.Background(), conn, method, body, metadata.Pairs(wire.AuthHeader, string(hdr)), opts...)
}

// header is req's signed header (wire.Header) for SubmitReport.
func header(t *testing.T, req wire.AuthRequest) []byte {
	t.Helper()
	hdr, err := wire.Header(wire.Shuffler_SubmitReport_FullMethodName, req)
	if err != nil {
		t.Fatal(err)
	}
	return hdr
}

// signedReq returns a SubmitReportRequest of client i for round 1 with ms,
// signed.
func (h *harness) signedReq(t *testing.T, i int, ms []*wire.SealedMessage) *wire.SubmitReportRequest {
	t.Helper()
	req := &wire.SubmitReportRequest{Auth: &wire.RequestAuth{}, Round: 1, Messages: ms}
	if err := sign(h.signer(t, i), testRand(), time.Now(), wire.Shuffler_SubmitReport_FullMethodName, 1, req); err != nil {
		t.Fatal(err)
	}
	return req
}

// authRefusals are the rows refused on the signature (at the tap or after
// the body is read).
func authRefusals(h *harness, good []*wire.SealedMessage) []refusal {
	submit := func(req *wire.SubmitReportRequest) error {
		_, err := h.cli.SubmitReport(context.Background(), req)
		return err
	}
	return []refusal{
		{"no auth field", codes.Unauthenticated, wire.Reason_REASON_BAD_SIGNATURE, func(t *testing.T) error {
			return submit(&wire.SubmitReportRequest{Round: 1, Messages: good})
		}},
		{"no auth field, signed header", codes.Unauthenticated, wire.Reason_REASON_BAD_SIGNATURE, func(t *testing.T) error {
			b, _ := proto.Marshal(&wire.SubmitReportRequest{Round: 1, Messages: good})
			return h.raw(t, wire.Shuffler_SubmitReport_FullMethodName, h.rawHeader(t, 0, wire.Shuffler_SubmitReport_FullMethodName, 1, b), b)
		}},
		{"forged signature", codes.Unauthenticated, wire.Reason_REASON_BAD_SIGNATURE, func(t *testing.T) error {
			req := h.signedReq(t, 0, good)
			req.Auth.Signature[0] ^= 1
			return submit(req)
		}},
		{"payload changed after signing", codes.Unauthenticated, wire.Reason_REASON_BAD_SIGNATURE, func(t *testing.T) error {
			req := h.signedReq(t, 0, good)
			req.Messages = good[1:]
			return submit(req)
		}},
		{"body changed after its header", codes.Unauthenticated, wire.Reason_REASON_BAD_SIGNATURE, func(t *testing.T) error {
			req := h.signedReq(t, 0, good)
			hdr := header(t, req)
			req.Messages = good[1:]
			b, _ := proto.Marshal(req)
			return h.raw(t, wire.Shuffler_SubmitReport_FullMethodName, hdr, b)
		}},
		{"the header of another request", codes.Unauthenticated, wire.Reason_REASON_BAD_SIGNATURE, func(t *testing.T) error {
			hdr := header(t, h.signedReq(t, 0, good))
			b, _ := proto.Marshal(h.signedReq(t, 0, good))
			return h.raw(t, wire.Shuffler_SubmitReport_FullMethodName, hdr, b)
		}},
		{"signed for another method", codes.Unauthenticated, wire.Reason_REASON_BAD_SIGNATURE, func(t *testing.T) error {
			req := h.signedReq(t, 0, good)
			b, _ := proto.Marshal(req)
			return h.raw(t, wire.Shuffler_Heartbeat_FullMethodName, header(t, req), b)
		}},
		{"unknown client", codes.Unauthenticated, wire.Reason_REASON_NOT_REGISTERED, func(t *testing.T) error {
			_, priv, _ := ed25519Key()
			s, _ := pki.NewSigner("client-999999", priv)
			req := &wire.SubmitReportRequest{Auth: &wire.RequestAuth{}, Round: 1, Messages: good}
			if err := sign(s, testRand(), time.Now(), wire.Shuffler_SubmitReport_FullMethodName, 1, req); err != nil {
				t.Fatal(err)
			}
			return submit(req)
		}},
		{"timestamp outside the window", codes.Unauthenticated, wire.Reason_REASON_STALE_TIMESTAMP, func(t *testing.T) error {
			req := &wire.SubmitReportRequest{Auth: &wire.RequestAuth{}, Round: 1, Messages: good}
			if err := sign(h.signer(t, 0), testRand(), time.Now().Add(-time.Hour), wire.Shuffler_SubmitReport_FullMethodName, 1, req); err != nil {
				t.Fatal(err)
			}
			return submit(req)
		}},
	}
}

// bodyRefusals are the rows refused on the request's content, before and
// after client 0's report is accepted.
func bodyRefusals(h *harness, good []*wire.SealedMessage) []refusal {
	submit := func(req *wire.SubmitReportRequest) error {
		_, err := h.cli.SubmitReport(context.Background(), req)
		return err
	}
	method := wire.Shuffler_SubmitReport_FullMethodName
	replace := func(i int, m *wire.SealedMessage) []*wire.SealedMessage {
		out := append([]*wire.SealedMessage{}, good...)
		out[i] = m
		return out
	}
	return []refusal{
		{"bytes that are not protobuf", codes.InvalidArgument, wire.Reason_REASON_MALFORMED, func(t *testing.T) error {
			b := []byte{0xff, 0xff, 0xff, 0xff}
			return h.raw(t, method, h.rawHeader(t, 0, method, 1, b), b)
		}},
		{"bytes that are not a sealed message", codes.InvalidArgument, wire.Reason_REASON_MALFORMED, func(t *testing.T) error {
			return submit(h.signedReq(t, 0, replace(0, &wire.SealedMessage{Ciphertext: []byte("not a sealed message")})))
		}},
		{"a wire label disagreeing with the sealed one", codes.InvalidArgument, wire.Reason_REASON_MALFORMED, func(t *testing.T) error {
			return submit(h.signedReq(t, 0, replace(0, &wire.SealedMessage{Label: 5, Ciphertext: good[0].Ciphertext})))
		}},
		{"a repeated coordinate", codes.InvalidArgument, wire.Reason_REASON_MALFORMED, func(t *testing.T) error {
			return submit(h.signedReq(t, 0, replace(1, good[0])))
		}},
		{"a message sealed for another round", codes.InvalidArgument, wire.Reason_REASON_REPLAY, func(t *testing.T) error {
			return submit(h.signedReq(t, 0, sealedReport(t, h, 2, 0.01)))
		}},
		{"a message over 16 MiB", codes.ResourceExhausted, wire.Reason_REASON_TOO_LARGE, func(t *testing.T) error {
			return submit(h.signedReq(t, 0, []*wire.SealedMessage{{Ciphertext: make([]byte, wire.MaxCiphertextBytes+1)}}))
		}},
		{"a request over 64 MiB", codes.ResourceExhausted, wire.Reason_REASON_UNSPECIFIED, func(t *testing.T) error {
			b := make([]byte, wire.DefaultMaxMessageBytes+1)
			return h.raw(t, method, h.rawHeader(t, 0, method, 1, b), b, grpc.MaxCallSendMsgSize(2*len(b)))
		}},
		{"more than 8 requests of one client in flight", codes.ResourceExhausted, wire.Reason_REASON_BUSY, func(t *testing.T) error {
			return h.overInflight(t)
		}},
		{"a round not announced", codes.NotFound, wire.Reason_REASON_UNKNOWN_ROUND, func(t *testing.T) error {
			req := &wire.SubmitReportRequest{Auth: &wire.RequestAuth{}, Round: 7, Messages: sealedReport(t, h, 7, 0.01)}
			if err := sign(h.signer(t, 0), testRand(), time.Now(), method, 7, req); err != nil {
				t.Fatal(err)
			}
			return submit(req)
		}},
		{"a signed request sent twice", codes.Unauthenticated, wire.Reason_REASON_REPLAY, func(t *testing.T) error {
			req := h.signedReq(t, 0, good)
			if err := submit(req); err != nil {
				t.Fatalf("client 0's good report: %v", err)
			}
			return submit(req)
		}},
		{"a second, different report from a client in a round", codes.AlreadyExists, wire.Reason_REASON_DUPLICATE_REPORT, func(t *testing.T) error {
			return submit(h.signedReq(t, 0, sealedReport(t, h, 1, 0.02)))
		}},
		{"another client's ciphertexts", codes.AlreadyExists, wire.Reason_REASON_REPLAY, func(t *testing.T) error {
			return submit(h.signedReq(t, 1, good))
		}},
		{"a round closed", codes.FailedPrecondition, wire.Reason_REASON_ROUND_CLOSED, func(t *testing.T) error {
			for i := 1; i <= 2; i++ {
				if err := submit(h.signedReq(t, i, sealedReport(t, h, 1, 0.01))); err != nil {
					t.Fatalf("client %d's good report: %v", i, err)
				}
			}
			h.waitFinished(t, 1)
			return submit(h.signedReq(t, 2, sealedReport(t, h, 1, 0.01)))
		}},
	}
}

// boundRefusals are the rows refused on the admission's bounds, each on
// a public server of its own (boundedPublic).
func boundRefusals(h *harness) []refusal {
	return []refusal{
		{"more header checks at once than the bound", codes.ResourceExhausted, wire.Reason_REASON_BUSY, func(t *testing.T) error {
			slow := func(r *pki.Registry, skew time.Duration, now time.Time, m string, sr *pki.SignedRequest) error {
				time.Sleep(300 * time.Millisecond)
				return wire.CheckHeader(r, skew, now, m, sr)
			}
			conns := readyConns(t, h, boundedPublic(t, h, 0, 1, slow), 3)
			errs := make(chan error, len(conns))
			for i, c := range conns {
				go func() { errs <- heartbeat(t, h, c, i) }()
			}
			for range conns {
				if err := <-errs; status.Code(err) == codes.ResourceExhausted {
					return err
				}
			}
			return errors.New("no request was refused over the bound")
		}},
		{"a connection over the bound", codes.Unavailable, wire.Reason_REASON_UNSPECIFIED, func(t *testing.T) error {
			addr := boundedPublic(t, h, 1, 0, nil)
			// The one slot holds an authenticated connection: it is never
			// evicted (an unauthenticated one would be, TestPeerConnectionCap).
			if err := heartbeat(t, h, readyConns(t, h, addr, 1)[0], 1); err != nil {
				t.Fatal(err)
			}
			c, err := DialShuffler(h.creds, addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			return heartbeat(t, h, c, 0)
		}},
	}
}

// overInflight sends maxInflight+4 pulls of client 0 at once (no newer
// round: each admitted pull is held) and returns the error of a refused
// one, once 4 are refused; then it cancels the held ones.
func (h *harness) overInflight(t *testing.T) error {
	t.Helper()
	const extra = 4
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Second)
	errs := make(chan error, maxInflight+extra)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: the held pulls end
	defer cancel()
	for range maxInflight + extra {
		req := &wire.PullTaskRequest{Auth: &wire.RequestAuth{}, AfterRound: 1}
		if err := sign(h.signer(t, 0), testRand(), time.Now(), wire.Shuffler_PullTask_FullMethodName, 0, req); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			_, err := h.cli.PullTask(ctx, req)
			errs <- err
		})
	}
	var refused error
	for n := 0; n < extra; {
		err := <-errs
		if status.Code(err) == codes.ResourceExhausted {
			n++
			refused = err
			continue
		}
		return fmt.Errorf("a pull ended with %v before %d were refused", err, extra)
	}
	cancel()
	wg.Wait()
	// The shuffler releases a cancelled pull's slot when it sees the
	// cancellation: wait for client 0's slots to be free again, so that
	// the next refusal tested is not this one.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		req := &wire.HeartbeatRequest{Auth: &wire.RequestAuth{}}
		if err := sign(h.signer(t, 0), testRand(), time.Now(), wire.Shuffler_Heartbeat_FullMethodName, 0, req); err != nil {
			t.Fatal(err)
		}
		if _, err := h.cli.Heartbeat(context.Background(), req); status.Code(err) != codes.ResourceExhausted {
			break
		}
	}
	return refused
}

// TestDocumentedRefusals sends the shuffler every refusal of
// docs/DEPLOYMENT.md's status table, over gRPC on loopback, and checks
// each status code and ErrorDetail reason; and that the table and this
// test name the same (code, reason) pairs.
func TestDocumentedRefusals(t *testing.T) {
	h := newHarness(t, "ss-double", 3, 2, 1)
	h.waitRound(t, 1)
	good := sealedReport(t, h, 1, 0.01)
	rows := append(authRefusals(h, good), bodyRefusals(h, good)...)
	rows = append(rows, boundRefusals(h)...)
	tested := map[string]bool{}
	for _, r := range rows {
		tested[r.code.String()+" "+r.reason.String()] = true
		t.Run(r.name, func(t *testing.T) {
			err := r.send(t)
			wantStatus(t, err, r.code, r.reason)
			d, ok := wire.DetailOf(err)
			if r.reason == wire.Reason_REASON_UNSPECIFIED && ok {
				t.Fatalf("detail %v, want gRPC's own status", d)
			}
			t.Logf("%v %v: %s", r.code, d.GetReason(), status.Convert(err).Message())
		})
	}
	documented := documentedRefusals(t)
	for k := range documented {
		if !tested[k] {
			t.Errorf("documented refusal %s is not tested", k)
		}
	}
	for k := range tested {
		if !documented[k] && !strings.HasSuffix(k, "REASON_UNSPECIFIED") {
			t.Errorf("refusal %s is not in docs/DEPLOYMENT.md's status table", k)
		}
	}
}

// documentedRefusals reads the (code, reason) pairs of the status table
// under "### Statuses" in docs/DEPLOYMENT.md, as "Code REASON_X".
func documentedRefusals(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../../docs/DEPLOYMENT.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "### Statuses\n")
	if !ok {
		t.Fatal("docs/DEPLOYMENT.md has no Statuses section")
	}
	out := map[string]bool{}
	for _, line := range strings.Split(after, "\n") {
		if strings.HasPrefix(line, "### ") {
			break
		}
		f := strings.Split(line, "|")
		if len(f) < 5 || !strings.HasPrefix(strings.TrimSpace(f[3]), "`") {
			continue
		}
		code := strings.TrimSpace(f[2])
		reason := "REASON_" + strings.Trim(strings.TrimSpace(f[3]), "`")
		if _, ok := wire.Reason_value[reason]; !ok {
			t.Fatalf("docs: unknown reason in %q", line)
		}
		out[fmt.Sprintf("%s %s", code, reason)] = true
	}
	return out
}
