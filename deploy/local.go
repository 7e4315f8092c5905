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

	"shufflefl/account"
	"shufflefl/runtime"
	"shufflefl/seal"
	"shufflefl/store"
	"shufflefl/wire"
)

// LocalOptions configure RunLocal.
type LocalOptions struct {
	// Dir holds the roles' databases (created if absent).
	Dir string
	// Creds are the deployment's credentials (NewDevCredentials for
	// Config.Clients clients if nil).
	Creds *Credentials
	// TestSeed selects test mode (see the package documentation).
	TestSeed *uint64
	// RoundTimeout is each round's deadline (one minute if zero).
	RoundTimeout time.Duration
	// MinReports is the minimum number of reports per round (1 if zero).
	MinReports int
	// Workers evaluate the model.
	Workers int
	// Observe is called after each round.
	Observe func(runtime.RoundResult)
	// Logf logs the roles' events (discarded if nil).
	Logf func(format string, a ...any)
}

// LocalResult is the outcome of RunLocal.
type LocalResult struct {
	Summary runtime.Summary
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
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	creds := o.Creds
	if creds == nil {
		var err error
		if creds, err = NewDevCredentials(st.Config.Clients, seal.DefaultSuite); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "clients"), 0o700); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var closers []func()
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	open := func(name string) (*store.DB, error) {
		db, err := store.Open(filepath.Join(o.Dir, name))
		if err == nil {
			closers = append(closers, func() { db.Close() })
		}
		return db, err
	}
	serve := func(g *grpc.Server) (string, error) {
		l, err := Listen()
		if err != nil {
			return "", err
		}
		go g.Serve(l)
		closers = append(closers, g.Stop)
		return l.Addr().String(), nil
	}
	// Listeners first: each side dials the other.
	al, err := Listen()
	if err != nil {
		return nil, err
	}
	aconn, err := DialAnalyzer(creds, al.Addr().String())
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() { aconn.Close() })
	sdb, err := open("shuffler.db")
	if err != nil {
		return nil, err
	}
	sh, err := NewShuffler(ShufflerConfig{Setup: st, DB: sdb, Registry: creds.Registry, AnalyzerKey: creds.HPKEPublic,
		Analyzer: wire.NewAnalyzerClient(aconn), TestSeed: o.TestSeed, Quorum: localQuorum(st), Logf: logf})
	if err != nil {
		return nil, err
	}
	closers = append(closers, sh.Close)
	pub, ctl := ShufflerServers(creds, sh)
	paddr, err := serve(pub)
	if err != nil {
		return nil, err
	}
	caddr, err := serve(ctl)
	if err != nil {
		return nil, err
	}
	cconn, err := DialShufflerControl(creds, caddr)
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() { cconn.Close() })
	adb, err := open("analyzer.db")
	if err != nil {
		return nil, err
	}
	an, err := NewAnalyzer(AnalyzerConfig{Setup: st, DB: adb, Key: creds.HPKE, Shuffler: wire.NewShufflerControlClient(cconn),
		RoundTimeout: o.RoundTimeout, MinReports: o.MinReports, TestSeed: o.TestSeed, Workers: o.Workers, Observe: o.Observe, Logf: logf})
	if err != nil {
		return nil, err
	}
	ag := AnalyzerServer(creds, an)
	go ag.Serve(al)
	closers = append(closers, ag.GracefulStop) // the last acknowledgement is delivered

	// Clients are set up on a few goroutines (each opens and migrates its
	// own SQLite database, fsyncs included), then all run concurrently.
	cls := make([]*Client, st.Config.Clients)
	var mu sync.Mutex
	var setupErr error
	var sw sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 16; w++ {
		sw.Add(1)
		go func() {
			defer sw.Done()
			for i := range next {
				c, cl, err := localClient(st, creds, o, i, paddr, logf)
				mu.Lock()
				closers = append(closers, cl...)
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
	if setupErr != nil {
		return nil, setupErr
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
	c, err := NewClient(ClientConfig{Setup: st, Index: i, Signer: signer, AnalyzerKey: creds.HPKEPublic, DB: db,
		Shuffler: wire.NewShufflerClient(conn), TestSeed: o.TestSeed, Logf: logf})
	return c, closers, err
}
