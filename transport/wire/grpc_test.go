package wire

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// testShuffler answers PullTask with a fixed task and SubmitReport with
// the number of messages; it never validates (the interceptors must).
type testShuffler struct {
	UnimplementedShufflerServer
	task *RoundAnnouncement
	bad  bool // reply with an invalid response
}

func (s *testShuffler) PullTask(ctx context.Context, r *PullTaskRequest) (*PullTaskResponse, error) {
	if s.bad {
		return &PullTaskResponse{RetryAfterMillis: -5}, nil
	}
	return &PullTaskResponse{Task: s.task}, nil
}

func (s *testShuffler) SubmitReport(ctx context.Context, r *SubmitReportRequest) (*SubmitReportResponse, error) {
	if r.Round != s.task.Round {
		return nil, Errorf(codes.FailedPrecondition, Reason_REASON_UNKNOWN_ROUND, "round", r.Round, "round %d is not open", r.Round)
	}
	return &SubmitReportResponse{Round: r.Round, StoredMessages: uint32(len(r.Messages))}, nil
}

// testAnalyzer assembles a SubmitBatch stream.
type testAnalyzer struct {
	UnimplementedAnalyzerServer
	got chan []*SealedMessage
}

func (a *testAnalyzer) SubmitBatch(s grpc.ClientStreamingServer[BatchChunk, BatchResponse]) error {
	var asm BatchAssembler
	for {
		c, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if err := asm.Add(c); err != nil {
			return StatusOf(err)
		}
	}
	h, ms, err := asm.Finish()
	if err != nil {
		return StatusOf(err)
	}
	a.got <- ms
	return s.SendAndClose(&BatchResponse{Round: h.Round, Accepted: uint64(len(ms))})
}

// serve starts a server with ServerOptions on 127.0.0.1 (an ephemeral
// port; loopback only) and returns a client connection with DialOptions.
func serve(t *testing.T, maxMsg int, register func(*grpc.Server)) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(ServerOptions(maxMsg)...)
	register(srv)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(),
		append(DialOptions(maxMsg), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func TestGRPCLoopback(t *testing.T) {
	task := validAnnouncement(t)
	shuf := &testShuffler{task: task}
	ana := &testAnalyzer{got: make(chan []*SealedMessage, 1)}
	cc := serve(t, 1<<20, func(s *grpc.Server) {
		RegisterShufflerServer(s, shuf)
		RegisterAnalyzerServer(s, ana)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := NewShufflerClient(cc)

	// A round trip: the task arrives intact.
	resp, err := client.PullTask(ctx, &PullTaskRequest{Auth: validAuth(), AfterRound: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(resp.Task, task) {
		t.Error("task changed in transit")
	}
	sub, err := client.SubmitReport(ctx, &SubmitReportRequest{Auth: validAuth(), Round: task.Round, Messages: validMessages(4)})
	if err != nil || sub.StoredMessages != 4 {
		t.Fatalf("SubmitReport = %v, %v", sub, err)
	}

	// The server's interceptor refuses an invalid request before the
	// handler, with the field named.
	_, err = client.SubmitReport(ctx, &SubmitReportRequest{Auth: validAuth(), Round: task.Round})
	if d, ok := DetailOf(err); status.Code(err) != codes.InvalidArgument || !ok || d.Reason != Reason_REASON_MALFORMED || d.Field != "messages" {
		t.Errorf("invalid request: %v (detail %v)", err, d)
	}
	// A handler's own status travels with its detail.
	_, err = client.SubmitReport(ctx, &SubmitReportRequest{Auth: validAuth(), Round: 99, Messages: validMessages(1)})
	if d, ok := DetailOf(err); !ok || d.Reason != Reason_REASON_UNKNOWN_ROUND || d.Round != 99 {
		t.Errorf("handler status: %v", err)
	}
	// Over the message size limit: refused by gRPC itself.
	huge := []*SealedMessage{{Ciphertext: make([]byte, 2<<20)}}
	_, err = client.SubmitReport(ctx, &SubmitReportRequest{Auth: validAuth(), Round: task.Round, Messages: huge})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("oversized request: %v", err)
	}
	// The client's interceptor refuses an invalid reply.
	shuf.bad = true
	_, err = client.PullTask(ctx, &PullTaskRequest{Auth: validAuth(), AfterRound: -1})
	if d, ok := DetailOf(err); status.Code(err) != codes.InvalidArgument || !ok || d.Field != "retry_after_millis" {
		t.Errorf("invalid reply: %v", err)
	}

	// Client streaming: a batch in chunks, assembled by the analyzer.
	ms := validMessages(5)
	chunks, err := ChunkBatch(validBatchHeader(), ms, 2)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := NewAnalyzerClient(cc).SubmitBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if err := stream.Send(c); err != nil {
			t.Fatal(err)
		}
	}
	br, err := stream.CloseAndRecv()
	if err != nil || br.Accepted != 5 {
		t.Fatalf("SubmitBatch = %v, %v", br, err)
	}
	got := <-ana.got
	for i := range ms {
		if !proto.Equal(got[i], ms[i]) {
			t.Errorf("batch message %d changed", i)
		}
	}
	// An invalid chunk is refused by the stream interceptor.
	stream, err = NewAnalyzerClient(cc).SubmitBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stream.Send(&BatchChunk{})
	if _, err := stream.CloseAndRecv(); status.Code(err) != codes.InvalidArgument {
		t.Errorf("invalid chunk: %v", err)
	}
}
