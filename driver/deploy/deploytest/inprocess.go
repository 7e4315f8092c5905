package deploytest

import (
	"context"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/driver/deploy"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// InProcess is the in-process transport: every call is a method call on
// the deploy service, with its request and answer copied (no message is
// shared between the parties, as none is over a network). Batches are
// passed to the analyzer whole, as the stream's chunks.
type InProcess struct{}

// Name implements Driver.
func (InProcess) Name() string { return "inprocess" }

// ServeShuffler implements Driver.
func (InProcess) ServeShuffler(_ *deploy.Credentials, sh *deploy.Shuffler) (wire.ShufflerClient, wire.ShufflerControlClient, func(), error) {
	d := directShuffler{sh}
	return d, d, func() {}, nil
}

// ServeAnalyzer implements Driver.
func (InProcess) ServeAnalyzer(_ *deploy.Credentials, an *deploy.Analyzer) (wire.AnalyzerClient, func(), error) {
	return directAnalyzer{an}, func() {}, nil
}

// call copies in, calls f and copies its answer.
func call[Req, Resp proto.Message](ctx context.Context, in Req, f func(context.Context, Req) (Resp, error)) (Resp, error) {
	out, err := f(ctx, proto.Clone(in).(Req))
	if err != nil {
		var zero Resp
		return zero, err
	}
	return proto.Clone(out).(Resp), nil
}

// directShuffler calls a shuffler's methods.
type directShuffler struct{ sh *deploy.Shuffler }

func (d directShuffler) Register(ctx context.Context, in *wire.RegisterRequest, _ ...grpc.CallOption) (*wire.RegisterResponse, error) {
	return call(ctx, in, d.sh.Register)
}

func (d directShuffler) Heartbeat(ctx context.Context, in *wire.HeartbeatRequest, _ ...grpc.CallOption) (*wire.HeartbeatResponse, error) {
	return call(ctx, in, d.sh.Heartbeat)
}

func (d directShuffler) PullTask(ctx context.Context, in *wire.PullTaskRequest, _ ...grpc.CallOption) (*wire.PullTaskResponse, error) {
	return call(ctx, in, d.sh.PullTask)
}

func (d directShuffler) SubmitReport(ctx context.Context, in *wire.SubmitReportRequest, _ ...grpc.CallOption) (*wire.SubmitReportResponse, error) {
	return call(ctx, in, d.sh.SubmitReport)
}

func (d directShuffler) Announce(ctx context.Context, in *wire.AnnounceRequest, _ ...grpc.CallOption) (*wire.AnnounceResponse, error) {
	return call(ctx, in, d.sh.Announce)
}

// directAnalyzer hands a batch's chunks to the analyzer's SubmitBatch when
// the sender closes the stream.
type directAnalyzer struct{ an *deploy.Analyzer }

func (d directAnalyzer) SubmitBatch(ctx context.Context, _ ...grpc.CallOption) (grpc.ClientStreamingClient[wire.BatchChunk, wire.BatchResponse], error) {
	return &batchPipe{ctx: ctx, an: d.an}, nil
}

// batchPipe is the shuffler's end of one batch stream (Send,
// CloseAndRecv); its analyzerEnd the analyzer's (Recv, SendAndClose). The
// methods of grpc.ClientStream and grpc.ServerStream neither end uses are
// left to the nil embedded interfaces.
type batchPipe struct {
	grpc.ClientStream
	ctx    context.Context
	an     *deploy.Analyzer
	mu     sync.Mutex
	chunks []*wire.BatchChunk
	next   int
	resp   *wire.BatchResponse
}

// Send queues a chunk (shuffler side).
func (p *batchPipe) Send(c *wire.BatchChunk) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	p.chunks = append(p.chunks, proto.Clone(c).(*wire.BatchChunk))
	p.mu.Unlock()
	return nil
}

// CloseAndRecv runs the analyzer's handler on the queued chunks
// (shuffler side).
func (p *batchPipe) CloseAndRecv() (*wire.BatchResponse, error) {
	if err := p.an.SubmitBatch(analyzerEnd{p: p}); err != nil {
		return nil, err
	}
	return proto.Clone(p.resp).(*wire.BatchResponse), nil
}

// analyzerEnd is the analyzer's end of a batchPipe.
type analyzerEnd struct {
	grpc.ServerStream
	p *batchPipe
}

// Recv returns the next chunk, io.EOF after the last.
func (e analyzerEnd) Recv() (*wire.BatchChunk, error) {
	p := e.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next == len(p.chunks) {
		return nil, io.EOF
	}
	p.next++
	return p.chunks[p.next-1], nil
}

// SendAndClose records the answer.
func (e analyzerEnd) SendAndClose(r *wire.BatchResponse) error {
	e.p.resp = r
	return nil
}

// Context is the stream's context.
func (e analyzerEnd) Context() context.Context { return e.p.ctx }

// Context is the stream's context.
func (p *batchPipe) Context() context.Context { return p.ctx }

// Header, Trailer and CloseSend complete grpc.ClientStream for callers
// that use them.
func (p *batchPipe) Header() (metadata.MD, error) { return nil, nil }

// Trailer implements grpc.ClientStream.
func (p *batchPipe) Trailer() metadata.MD { return nil }

// CloseSend implements grpc.ClientStream.
func (p *batchPipe) CloseSend() error { return nil }
