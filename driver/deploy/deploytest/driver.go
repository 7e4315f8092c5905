package deploytest

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shufflefl/shufflefl/driver/deploy"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// A Driver is a transport: it makes a running service reachable and
// returns the clients through which the other parties call it. The
// harness builds the services (package deploy) from their databases, and
// swaps the clients a Driver returns behind stable links when a service
// crashes and restarts, so a Driver knows nothing of rounds or scripts.
type Driver interface {
	// Name names the transport in test names.
	Name() string
	// ServeShuffler makes sh reachable and returns the clients' view of
	// it, the analyzer's (control) view, and a function that makes it
	// unreachable.
	ServeShuffler(creds *deploy.Credentials, sh *deploy.Shuffler) (wire.ShufflerClient, wire.ShufflerControlClient, func(), error)
	// ServeAnalyzer makes an reachable and returns the shuffler's view of
	// it and a function that makes it unreachable.
	ServeAnalyzer(creds *deploy.Credentials, an *deploy.Analyzer) (wire.AnalyzerClient, func(), error)
}

// errDown is what a call to a service that is not running returns: what
// a client of a crashed gRPC server sees.
var errDown = status.Error(codes.Unavailable, "roletest: service down")

// link holds the current client of a service (nil while it is down).
type link[T any] struct {
	mu  sync.Mutex
	cur T
	up  bool
}

func (l *link[T]) set(c T) {
	l.mu.Lock()
	l.cur, l.up = c, true
	l.mu.Unlock()
}

func (l *link[T]) cut() {
	l.mu.Lock()
	var zero T
	l.cur, l.up = zero, false
	l.mu.Unlock()
}

func (l *link[T]) get() (T, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.up {
		return l.cur, errDown
	}
	return l.cur, nil
}

// shufflerLink is the clients' stable view of the shuffler.
type shufflerLink struct{ link[wire.ShufflerClient] }

func (l *shufflerLink) Register(ctx context.Context, in *wire.RegisterRequest, opts ...grpc.CallOption) (*wire.RegisterResponse, error) {
	c, err := l.get()
	if err != nil {
		return nil, err
	}
	return c.Register(ctx, in, opts...)
}

func (l *shufflerLink) Heartbeat(ctx context.Context, in *wire.HeartbeatRequest, opts ...grpc.CallOption) (*wire.HeartbeatResponse, error) {
	c, err := l.get()
	if err != nil {
		return nil, err
	}
	return c.Heartbeat(ctx, in, opts...)
}

func (l *shufflerLink) PullTask(ctx context.Context, in *wire.PullTaskRequest, opts ...grpc.CallOption) (*wire.PullTaskResponse, error) {
	c, err := l.get()
	if err != nil {
		return nil, err
	}
	return c.PullTask(ctx, in, opts...)
}

func (l *shufflerLink) SubmitReport(ctx context.Context, in *wire.SubmitReportRequest, opts ...grpc.CallOption) (*wire.SubmitReportResponse, error) {
	c, err := l.get()
	if err != nil {
		return nil, err
	}
	return c.SubmitReport(ctx, in, opts...)
}

// controlLink is the analyzer's stable view of the shuffler.
type controlLink struct {
	link[wire.ShufflerControlClient]
}

func (l *controlLink) Announce(ctx context.Context, in *wire.AnnounceRequest, opts ...grpc.CallOption) (*wire.AnnounceResponse, error) {
	c, err := l.get()
	if err != nil {
		return nil, err
	}
	return c.Announce(ctx, in, opts...)
}

// analyzerLink is the shuffler's stable view of the analyzer.
type analyzerLink struct{ link[wire.AnalyzerClient] }

func (l *analyzerLink) SubmitBatch(ctx context.Context, opts ...grpc.CallOption) (grpc.ClientStreamingClient[wire.BatchChunk, wire.BatchResponse], error) {
	c, err := l.get()
	if err != nil {
		return nil, err
	}
	return c.SubmitBatch(ctx, opts...)
}
