package deploy

import (
	"context"
	"crypto/ed25519"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// harness runs an analyzer and a shuffler on loopback, without clients:
// tests play the clients (and attackers) themselves.
type harness struct {
	st     *Setup
	creds  *Credentials
	an     *Analyzer
	sh     *Shuffler
	sdb    *store.DB
	pub    string // the shuffler's address for clients
	ctl    string // its control address
	cli    wire.ShufflerClient
	done   chan error
	cancel context.CancelFunc
}

func newHarness(t *testing.T, proto string, clients, rounds int, min int) *harness {
	t.Helper()
	return newHarnessConfig(t, testConfig(proto, clients, rounds), min)
}

func newHarnessConfig(t *testing.T, cfg round.Config, min int) *harness {
	t.Helper()
	return newHarnessTimeout(t, cfg, min, time.Minute)
}

func newHarnessTimeout(t *testing.T, cfg round.Config, min int, timeout time.Duration) *harness {
	t.Helper()
	return startHarness(t, cfg, "harness", min, 0, timeout)
}

// startHarness starts the analyzer and the shuffler of run runID on
// loopback: the analyzer with the minimum report count min and the round
// timeout, the shuffler with its Quorum (0: none).
func startHarness(t *testing.T, cfg round.Config, runID string, min, quorum int, timeout time.Duration) *harness {
	t.Helper()
	split := testSplit(t, cfg)
	st, err := NewSetup(cfg, split, runID)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := NewDevCredentials(cfg.Clients+2, seal.DefaultSuite)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	h := &harness{st: st, creds: creds, done: make(chan error, 1)}
	al, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	aconn, err := DialAnalyzer(creds, al.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { aconn.Close() })
	if h.sdb, err = store.Open(filepath.Join(dir, "shuffler.db")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.sdb.Close() })
	h.sh, err = NewShuffler(ShufflerConfig{Setup: st, DB: h.sdb, Registry: creds.Registry, AnalyzerKey: creds.HPKEPublic,
		Analyzer: wire.NewAnalyzerClient(aconn), Quorum: quorum, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.sh.Close)
	pub, ctl := ShufflerServers(creds, h.sh)
	serve := func(g *grpc.Server) string {
		l, err := Listen()
		if err != nil {
			t.Fatal(err)
		}
		go g.Serve(l)
		t.Cleanup(g.Stop)
		return l.Addr().String()
	}
	h.pub = serve(pub)
	caddr := serve(ctl)
	h.ctl = caddr
	cconn, err := DialShufflerControl(creds, caddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cconn.Close() })
	adb, err := store.Open(filepath.Join(dir, "analyzer.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adb.Close() })
	h.an, err = NewAnalyzer(AnalyzerConfig{Setup: st, DB: adb, Key: creds.HPKE, Shuffler: wire.NewShufflerControlClient(cconn),
		RoundTimeout: timeout, MinReports: min, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ag := AnalyzerServer(creds, h.an)
	go ag.Serve(al)
	t.Cleanup(ag.Stop)
	conn, err := DialShuffler(creds, h.pub)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	h.cli = wire.NewShufflerClient(conn)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	t.Cleanup(cancel)
	go func() {
		_, err := h.an.Run(ctx)
		h.done <- err
	}()
	return h
}

// signer returns client i's signer.
func (h *harness) signer(t *testing.T, i int) *pki.Signer {
	t.Helper()
	s, err := pki.NewSigner(ClientID(i), h.creds.Clients[ClientID(i)])
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitRound waits until the shuffler offers round r.
func (h *harness) waitRound(t *testing.T, r int64) {
	t.Helper()
	s := h.signer(t, 0)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		req := &wire.PullTaskRequest{Auth: &wire.RequestAuth{}, AfterRound: r - 1}
		if err := sign(s, testRand(), time.Now(), wire.Shuffler_PullTask_FullMethodName, 0, req); err != nil {
			t.Fatal(err)
		}
		resp, err := h.cli.PullTask(context.Background(), req)
		if err == nil && resp.Task != nil && resp.Task.Round == r {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("round %d was never offered", r)
}

// waitFinished waits until the analyzer has finished round r.
func (h *harness) waitFinished(t *testing.T, r int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for h.an.Round() < r {
		if time.Now().After(deadline) {
			t.Fatalf("round %d never finished (at %d)", r, h.an.Round())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *harness) controlAddr(*testing.T) string { return h.ctl }

func ed25519Key() (ed25519.PublicKey, ed25519.PrivateKey, error) { return ed25519.GenerateKey(nil) }

// simulate runs cfg through the engine with the faithful shuffler (what a
// deployment computes in test mode) and returns the engine and its rounds.
func simulate(t *testing.T, cfg round.Config, split data.Split) (*sim.Engine, []round.RoundResult) {
	t.Helper()
	cfg.Faithful = true
	eng, err := sim.New(cfg, split, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rs []round.RoundResult
	if _, err := eng.Run(func(r round.RoundResult) { rs = append(rs, r) }); err != nil {
		t.Fatal(err)
	}
	return eng, rs
}

// testDir is a test deployment's directory: dev credentials under pki/
// and the roles' databases.
type testDir struct {
	t   *testing.T
	dir string
}

// creds loads role's credentials (id for a client).
func (d testDir) creds(role, id string) *Credentials {
	d.t.Helper()
	c, err := LoadCredentials(filepath.Join(d.dir, "pki"), role, id)
	if err != nil {
		d.t.Fatal(err)
	}
	return c
}

// db opens (creating) the database name, closed when the test ends.
func (d testDir) db(name string) *store.DB {
	d.t.Helper()
	db, err := store.Open(filepath.Join(d.dir, name))
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { db.Close() })
	return db
}

// serveAt serves g on addr until the test ends.
func serveAt(t *testing.T, g *grpc.Server, addr string) {
	t.Helper()
	l, err := listenRetry(addr)
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(l)
	t.Cleanup(g.Stop)
}

// startClients starts clients 0..n-1 of st against the shuffler at addr
// (test mode with seed), each with its credentials and database <id>.db
// from d, and returns the databases; each Run's error goes to errs, and wg
// counts the running clients.
func (d testDir) startClients(ctx context.Context, st *Setup, addr string, seed *uint64, n int, wg *sync.WaitGroup, errs chan<- error) []*store.DB {
	d.t.Helper()
	dbs := make([]*store.DB, n)
	for i := 0; i < n; i++ {
		id := ClientID(i)
		creds := d.creds("client", id)
		signer, err := pki.NewSigner(id, creds.Clients[id])
		if err != nil {
			d.t.Fatal(err)
		}
		conn, err := DialShuffler(creds, addr)
		if err != nil {
			d.t.Fatal(err)
		}
		d.t.Cleanup(func() { conn.Close() })
		dbs[i] = d.db(id + ".db")
		c, err := NewClient(ClientConfig{Setup: st, Index: i, Signer: signer, AnalyzerKey: creds.HPKEPublic, DB: dbs[i],
			Shuffler: wire.NewShufflerClient(conn), TestSeed: seed, Logf: func(string, ...any) {}})
		if err != nil {
			d.t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Run(ctx); err != nil {
				errs <- err
			}
		}()
	}
	return dbs
}
