package deploy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// LocalOptions configure RunLocal.
type LocalOptions struct {
	// Dir holds the roles' databases (created if absent).
	Dir string
	// Creds are the deployment's credentials (NewDevCredentials for
	// Config.Clients clients if nil).
	Creds *Credentials
	// NATSKeys is the directory whose nats/ holds the roles' NATS keys
	// (WriteNATSKeys; deploy-local's pki); "" writes fresh ones under
	// Dir/nats-keys when a NATS server is needed.
	NATSKeys string
	// TestSeed selects test mode (see the package documentation).
	TestSeed *uint64
	// NewTrainer, if set, returns client i's Trainer and what stops it
	// (deploy-local --trainer); nil trains in process. Clients may share
	// a Trainer: each calls it from its own goroutine, so a shared one
	// must be safe for concurrent use.
	NewTrainer func(st *Setup, index int) (Trainer, func(), error)
	// RoundTimeout is each round's deadline (DefaultRoundTimeout if zero).
	RoundTimeout time.Duration
	// MinReports is the minimum number of reports per round (1 if zero).
	MinReports int
	// Shards, if set, is a directory written by WritePartition for the
	// run's configuration: every client then builds its Setup from its own
	// shard file (LoadClientSetup), as `shufflefl client --data` does,
	// instead of sharing the run's Setup.
	Shards string
	// Workers evaluate the model.
	Workers int
	// Observe is called after each round.
	Observe func(round.RoundResult)
	// Logf logs the roles' events (discarded if nil).
	Logf func(format string, a ...any)
	// Progress, if set, receives the shuffler's and the analyzer's
	// progress events (Progress), at most one intermediate event of each
	// role's stage per ProgressEvery (250 ms if zero).
	Progress      func(Progress)
	ProgressEvery time.Duration
	// Openers, if set, has the analyzer open the batches on openers over
	// NATS JetStream (LocalOpeners) rather than on this process's cores.
	Openers *LocalOpeners
	// ShuffleMemory is the shuffler's round memory budget in bytes
	// (ShufflerConfig.ShuffleMemory; 1 GiB if zero).
	ShuffleMemory int64
	// ShufflerShards, if set, splits every round's shuffle over shuffler
	// shards on NATS JetStream (LocalShards).
	ShufflerShards *LocalShards
}

// LocalResult is the outcome of RunLocal.
type LocalResult struct {
	Summary round.Summary
	Model   []float64
	// Models are the analyzer's k final models (Models[0] is Model).
	Models   [][]float64
	Opened   seal.Stats
	Shuffler ShufflerStats
	// Statements are the analyzer's per-round privacy statements (nil for
	// a protocol without one).
	Statements []account.Statement
}

// Listen listens on an ephemeral port of 127.0.0.1.
func Listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// RunLocal runs a whole deployment in this process on 127.0.0.1: the
// analyzer and the shuffler as gRPC servers over (mutual) TLS, and every
// client as a goroutine with its own database and connection. It returns
// when the analyzer has finished the run's rounds.
func RunLocal(ctx context.Context, st *Setup, o LocalOptions) (*LocalResult, error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Creds == nil {
		creds, err := NewDevCredentials(st.Config.Clients, seal.DefaultSuite)
		if err != nil {
			return nil, err
		}
		o.Creds = creds
	}
	return (&localRun{st: st, o: o}).run(ctx)
}

// run runs lr's deployment (RunLocal, once its options are complete):
// the services, then the clients until the analyzer has finished; it
// closes everything it opened.
func (lr *localRun) run(ctx context.Context) (*LocalResult, error) {
	st, o := lr.st, lr.o
	if err := os.MkdirAll(filepath.Join(o.Dir, "clients"), 0o700); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer lr.close()
	an, sh, paddr, err := lr.services()
	if err != nil {
		return nil, err
	}
	cls, err := lr.clients(paddr)
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	errc := make(chan error, st.Config.Clients+1)
	for _, cl := range cls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cl.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errc <- err
				cancel()
			}
		}()
	}
	sum, err := an.Run(ctx)
	cancel()
	wg.Wait()
	close(errc)
	if cerr := <-errc; cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	sum.Workers = o.Workers
	res := &LocalResult{Summary: sum, Model: an.Model(), Models: an.Models(), Opened: an.Stats(), Shuffler: sh.Stats()}
	if acct := an.Accountant(); acct != nil {
		res.Statements = acct.Log()
	}
	return res, nil
}

// localRun is what a local run opened, to close in reverse order.
type localRun struct {
	st *Setup
	o  LocalOptions
	// natsURL and natsConn are the JetStream server's (natsServer).
	natsURL  string
	natsConn *jetstream.Conn
	mu       sync.Mutex
	closers  []func()
}

func (lr *localRun) add(f ...func()) {
	lr.mu.Lock()
	lr.closers = append(lr.closers, f...)
	lr.mu.Unlock()
}

func (lr *localRun) close() {
	for i := len(lr.closers) - 1; i >= 0; i-- {
		lr.closers[i]()
	}
}

// open opens the database name in the run's directory.
func (lr *localRun) open(name string) (*store.DB, error) {
	db, err := store.Open(filepath.Join(lr.o.Dir, name))
	if err == nil {
		lr.add(func() { db.Close() })
	}
	return db, err
}

// serve serves g on an ephemeral port and returns its address.
func (lr *localRun) serve(g *grpc.Server) (string, error) {
	l, err := Listen()
	if err != nil {
		return "", err
	}
	go g.Serve(l)
	lr.add(g.Stop)
	return l.Addr().String(), nil
}

// services starts the shuffler's and the analyzer's servers, and returns
// the two services and the shuffler's public address.
func (lr *localRun) services() (*Analyzer, *Shuffler, string, error) {
	st, o, creds := lr.st, lr.o, lr.o.Creds
	// Listeners first: each side dials the other.
	al, err := Listen()
	if err != nil {
		return nil, nil, "", err
	}
	aconn, err := DialAnalyzer(creds, al.Addr().String())
	if err != nil {
		return nil, nil, "", err
	}
	lr.add(func() { aconn.Close() })
	sdb, err := lr.open("shuffler.db")
	if err != nil {
		return nil, nil, "", err
	}
	nshards, sconn, skey, err := lr.shards(al.Addr().String(), wire.NewAnalyzerClient(aconn))
	if err != nil {
		return nil, nil, "", err
	}
	sh, err := NewShuffler(ShufflerConfig{Setup: st, DB: sdb, Registry: creds.Registry, AnalyzerKey: creds.HPKEPublic,
		Analyzer: wire.NewAnalyzerClient(aconn), TestSeed: o.TestSeed, Quorum: localQuorum(st), Logf: o.Logf,
		Progress: o.Progress, ProgressEvery: o.ProgressEvery, ShuffleMemory: o.ShuffleMemory,
		Shards: nshards, ShardConn: sconn, ShardKey: skey})
	if err != nil {
		return nil, nil, "", err
	}
	lr.add(sh.Close)
	pub, ctl := ShufflerServers(creds, sh)
	paddr, err := lr.serve(pub)
	if err != nil {
		return nil, nil, "", err
	}
	caddr, err := lr.serve(ctl)
	if err != nil {
		return nil, nil, "", err
	}
	cconn, err := DialShufflerControl(creds, caddr)
	if err != nil {
		return nil, nil, "", err
	}
	lr.add(func() { cconn.Close() })
	adb, err := lr.open("analyzer.db")
	if err != nil {
		return nil, nil, "", err
	}
	oconn, err := lr.openers()
	if err != nil {
		return nil, nil, "", err
	}
	chunk := 0
	if o.Openers != nil {
		chunk = o.Openers.Chunk
	}
	an, err := NewAnalyzer(AnalyzerConfig{Setup: st, DB: adb, Key: creds.HPKE, Shuffler: wire.NewShufflerControlClient(cconn),
		RoundTimeout: o.RoundTimeout, MinReports: o.MinReports, TestSeed: o.TestSeed, Workers: o.Workers, Observe: o.Observe, Logf: o.Logf,
		Progress: o.Progress, ProgressEvery: o.ProgressEvery, Openers: oconn, OpenerChunk: chunk})
	if err != nil {
		return nil, nil, "", err
	}
	ag := AnalyzerServer(creds, an)
	go ag.Serve(al)
	lr.add(ag.GracefulStop) // the last acknowledgement is delivered
	return an, sh, paddr, nil
}

// clients sets up every client on a few goroutines (each opens and
// migrates its own SQLite database, fsyncs included).
func (lr *localRun) clients(paddr string) ([]*Client, error) {
	cls := make([]*Client, lr.st.Config.Clients)
	var mu sync.Mutex
	var setupErr error
	var sw sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 16; w++ {
		sw.Add(1)
		go func() {
			defer sw.Done()
			for i := range next {
				c, cl, err := localClient(lr.st, lr.o.Creds, lr.o, i, paddr, lr.o.Logf)
				lr.add(cl...)
				mu.Lock()
				if err != nil && setupErr == nil {
					setupErr = err
				}
				mu.Unlock()
				cls[i] = c
			}
		}()
	}
	for i := range cls {
		next <- i
	}
	close(next)
	sw.Wait()
	return cls, setupErr
}

// localClient builds client i of a local run and returns what to close.
func localClient(st *Setup, creds *Credentials, o LocalOptions, i int, addr string, logf func(string, ...any)) (*Client, []func(), error) {
	var closers []func()
	id := ClientID(i)
	key, ok := creds.Clients[id]
	if !ok {
		return nil, nil, fmt.Errorf("deploy-local: no key for %s", id)
	}
	db, err := store.Open(filepath.Join(o.Dir, "clients", id+".db"))
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, func() { db.Close() })
	conn, err := DialShuffler(creds, addr)
	if err != nil {
		return nil, closers, err
	}
	closers = append(closers, func() { conn.Close() })
	signer, err := newSigner(id, key)
	if err != nil {
		return nil, closers, err
	}
	if o.Shards != "" {
		if st, err = LoadClientSetup(st.Config, filepath.Join(o.Shards, ShardFile(i)), id, st.RunID); err != nil {
			return nil, closers, err
		}
	}
	cc := ClientConfig{Setup: st, Index: i, Signer: signer, AnalyzerKey: creds.HPKEPublic, DB: db,
		Shuffler: wire.NewShufflerClient(conn), TestSeed: o.TestSeed, Logf: logf}
	if o.NewTrainer != nil {
		tr, stop, err := o.NewTrainer(st, i)
		if err != nil {
			return nil, closers, err
		}
		cc.Trainer = tr
		closers = append(closers, stop)
	}
	c, err := NewClient(cc)
	return c, closers, err
}
