package deploy

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// sinkAnalyzer is an analyzer endpoint that reads a batch stream to its
// end, counts its messages and acknowledges: the benchmark's far end of
// the forward.
type sinkAnalyzer struct {
	wire.UnimplementedAnalyzerServer
	messages atomic.Int64
}

func (a *sinkAnalyzer) SubmitBatch(st grpc.ClientStreamingServer[wire.BatchChunk, wire.BatchResponse]) error {
	var round int64
	var n uint64
	for {
		c, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if c.Header != nil {
			round = c.Header.Round
		}
		n += uint64(len(c.Messages))
	}
	a.messages.Add(int64(n))
	return st.SendAndClose(&wire.BatchResponse{Round: round, Accepted: n})
}

// benchRig is a shuffler for clients Clients of a Setup, forwarding over
// the deployment's mutual TLS link to a sinkAnalyzer.
type benchRig struct {
	st      *Setup
	creds   *Credentials
	sh      *Shuffler
	signers []*pki.Signer
	tmpl    []byte // one sealed coordinate message (its header is rewritten)
}

func newBenchRig(b *testing.B, protocolName string, clients int) *benchRig {
	b.Helper()
	cfg := testConfig(protocolName, clients, 100)
	cfg.Dataset, cfg.Epsilon = "fashion-mnist-sample", 1
	st, err := NewSetup(cfg, testSplit(b, cfg), "bench")
	if err != nil {
		b.Fatal(err)
	}
	creds, err := NewDevCredentials(clients, seal.DefaultSuite)
	if err != nil {
		b.Fatal(err)
	}
	analyzer := serveAnalyzerLink(b, creds, &sinkAnalyzer{})
	logs := make(chan string, 1024)
	go func() {
		for l := range logs {
			if strings.Contains(l, "shuffler: round") && !strings.Contains(l, "forwarded:") && !strings.Contains(l, "announced") {
				b.Log(l)
			}
		}
	}()
	db, err := store.Open(filepath.Join(b.TempDir(), "shuffler.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	sh, err := NewShuffler(ShufflerConfig{Setup: st, DB: db, Registry: creds.Registry, AnalyzerKey: creds.HPKEPublic,
		Analyzer: analyzer, Logf: func(f string, a ...any) { logs <- fmt.Sprintf(f, a...) }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(sh.Close)
	r := &benchRig{st: st, creds: creds, sh: sh}
	for i := range clients {
		s, err := pki.NewSigner(ClientID(i), creds.Clients[ClientID(i)])
		if err != nil {
			b.Fatal(err)
		}
		r.signers = append(r.signers, s)
	}
	sealer, err := seal.NewSealer(creds.HPKEPublic, st.RunID)
	if err != nil {
		b.Fatal(err)
	}
	if r.tmpl, err = sealer.Seal(1, seal.Coord(0), []float64{0}); err != nil {
		b.Fatal(err)
	}
	return r
}

// reports returns round t's signed reports, one per client: d messages,
// or k for a protocol with a Plan (SS-Double; client i reports k
// consecutive coordinates from i·k on, modulo d, so that no coordinate has
// more than n_p reports), each in the sealed format with its coordinate's
// header and random bytes for the encapsulation and ciphertext (the shuffler reads
// only the header; sealing 10^5 messages for real would take the
// benchmark's setup minutes).
func (r *benchRig) reports(b *testing.B, t int64) []*wire.SubmitReportRequest {
	b.Helper()
	d, k := r.st.Dim(), r.st.Dim()
	if p, ok := r.st.Proto.(interface {
		Plan(protocol.Shape) (int, int, error)
	}); ok {
		sh := r.st.Shape(int(t))
		sh.Participants = len(r.signers)
		var err error
		if k, _, err = p.Plan(sh); err != nil {
			b.Fatal(err)
		}
	}
	out := make([]*wire.SubmitReportRequest, len(r.signers))
	for i, s := range r.signers {
		buf := make([]byte, k*len(r.tmpl))
		rand.Read(buf)
		req := &wire.SubmitReportRequest{Round: t, Auth: &wire.RequestAuth{ClientId: s.ID()}, Messages: make([]*wire.SealedMessage, k)}
		for x := range k {
			j := (i*k + x) % d
			m := buf[x*len(r.tmpl) : (x+1)*len(r.tmpl)]
			copy(m[:seal.HeaderSize], r.tmpl)
			binary.BigEndian.PutUint32(m[5:], uint32(j))
			binary.BigEndian.PutUint64(m[9:], uint64(t))
			req.Messages[x] = &wire.SealedMessage{Label: uint32(j), Ciphertext: m}
		}
		if err := sign(s, rng.NewCrypto(), time.Now(), wire.Shuffler_SubmitReport_FullMethodName, t, req); err != nil {
			b.Fatal(err)
		}
		out[i] = req
	}
	return out
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkShuffler runs whole rounds through a shuffler: the clients'
// pre-sealed reports at d = 7,850 (SS-Simple: 20 dense reports; SS-Double:
// 100 reports of k coordinates) arrive concurrently (accept:
// signature, headers, label rules, the durable inbox), then the round
// closes (padding with the protocol's dummies, permutation, the saved
// batch) and is forwarded in chunks over mutual TLS to an analyzer that
// counts the messages. msgs/s counts every forwarded message, dummies
// included; the phases' wall and CPU times are per round.
func BenchmarkShuffler(b *testing.B) {
	for _, c := range []struct {
		proto   string
		clients int
	}{{"ss-simple", 20}, {"ss-double", 100}} {
		b.Run(c.proto, func(b *testing.B) {
			r := newBenchRig(b, c.proto, c.clients)
			var wall, cpu [2]time.Duration
			var msgs int64
			for i := range b.N {
				t := int64(i + 1)
				b.StopTimer()
				reqs := r.reports(b, t)
				b.StartTimer()
				w0, c0 := time.Now(), cpuTime()
				r.round(b, t, reqs)
				w1, c1 := time.Now(), cpuTime()
				for deadline := time.Now().Add(10 * time.Minute); r.sh.Stats().Forwarded < t; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						b.Fatalf("round %d not forwarded within 10 minutes", t)
					}
				}
				w2, c2 := time.Now(), cpuTime()
				wall[0], wall[1] = wall[0]+w1.Sub(w0), wall[1]+w2.Sub(w1)
				cpu[0], cpu[1] = cpu[0]+c1-c0, cpu[1]+c2-c1
				msgs = r.sh.Stats().Messages
			}
			total := (wall[0] + wall[1]).Seconds()
			b.ReportMetric(float64(msgs)/total, "msgs/s")
			b.ReportMetric(float64(msgs)/float64(b.N), "msgs/round")
			n := float64(b.N)
			b.ReportMetric(wall[0].Seconds()/n, "accept-s/round")
			b.ReportMetric(cpu[0].Seconds()/n, "accept-cpu-s/round")
			b.ReportMetric(wall[1].Seconds()/n, "close+fwd-s/round")
			b.ReportMetric(cpu[1].Seconds()/n, "close+fwd-cpu-s/round")
		})
	}
}

// round announces round t and submits reqs concurrently, returning when
// every submission is acknowledged.
func (r *benchRig) round(b *testing.B, t int64, reqs []*wire.SubmitReportRequest) {
	ann := &wire.RoundAnnouncement{Round: t, RunId: r.st.RunID, Protocol: r.st.Config.Protocol,
		DeadlineUnixNano: time.Now().Add(time.Hour).UnixNano(), MinReports: 1}
	if _, err := r.sh.Announce(context.Background(), &wire.AnnounceRequest{Announcement: proto.Clone(ann).(*wire.RoundAnnouncement)}); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(reqs))
	for _, req := range reqs {
		wg.Go(func() {
			if _, err := r.sh.SubmitReport(context.Background(), req); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
