package deploy

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
)

// runLocalOn is RunLocal with every NATS stream of the run (the opener
// queue, its results, the shard queue) on conn, a connection to the
// cluster at url, instead of on a server RunLocal embeds or connects to
// itself: conn creates the streams with its replicas (WithReplicas).
func runLocalOn(ctx context.Context, st *Setup, o LocalOptions, url string, conn *jetstream.Conn) (*LocalResult, error) {
	return (&localRun{st: st, o: o, natsURL: url, natsConn: conn}).run(ctx)
}

// clusterStreams creates the run's streams (the opener queue and its
// results, the shard queue) on conn as the roles create them, retrying
// for a minute while a freshly started cluster cannot place a replicated
// stream yet (no meta leader, or not all its peers known).
func clusterStreams(t *testing.T, conn *jetstream.Conn) *openStreams {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		q, err := openOpenerStreams(ctx, conn, true)
		if err == nil {
			_, err = openShardQueue(ctx, conn)
		}
		cancel()
		if err == nil {
			return q
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run's replicated streams: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// clientLedgers returns every client's ledger rows in the run directory
// dir.
func clientLedgers(t *testing.T, dir string, clients int) [][]ledgerRow {
	t.Helper()
	out := make([][]ledgerRow, clients)
	for i := range clients {
		db, err := store.Open(filepath.Join(dir, "clients", ClientID(i)+".db"))
		if err != nil {
			t.Fatal(err)
		}
		es, err := db.LedgerStore().Entries(ClientID(i))
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = rowsOf(es)
	}
	return out
}

// TestJetStreamClusterRoundsNodeKilled: a whole deployment in test mode —
// the analyzer opening on two openers (each on its own connection with
// the opener's key), the shuffler a front over two shards — runs three
// rounds of ss-double with every stream R3 on a 3-node JetStream cluster.
// In round 2, once the openers have answered part of the batch, the node
// leading the opener queue is killed with SIGKILL. The run must finish
// with the fault-free deployment's result bit for bit (one shuffler,
// opening in the analyzer, same seed): the same model, the same opened
// counts, the same statements and rounds, every client's ledger charged
// once per released round as there; and the queues end empty.
func TestJetStreamClusterRoundsNodeKilled(t *testing.T) {
	longtest.Skip(t)
	const clients, rounds, killRound = 8, 3, 2
	cfg := testConfig("ss-double", clients, rounds)
	split := testSplit(t, cfg)
	newSetup := func() *Setup {
		st, err := NewSetup(cfg, split, "cluster-rounds")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	run := func(o LocalOptions, on func(*LocalOptions) (*LocalResult, error)) (*LocalResult, []round.RoundResult) {
		var got []round.RoundResult
		seed := cfg.Seed
		o.TestSeed, o.RoundTimeout, o.Workers, o.Logf = &seed, time.Minute, 1, t.Logf
		o.Observe = func(r round.RoundResult) { got = append(got, r) }
		res, err := on(&o)
		if err != nil {
			t.Fatal(err)
		}
		return res, got
	}
	wantDir := t.TempDir()
	want, wantRounds := run(LocalOptions{Dir: wantDir}, func(o *LocalOptions) (*LocalResult, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return RunLocal(ctx, newSetup(), *o)
	})

	cl := startTestCluster(t)
	conn := cl.connect(t, NATSAnalyzer)
	streams := clusterStreams(t, conn)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	st := newSetup()
	creds, err := NewDevCredentials(clients, seal.DefaultSuite)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		op, err := NewOpener(ctx, OpenerConfig{Conn: cl.connect(t, NATSOpener), Key: creds.HPKE, Workers: 1, AckWait: crashAckWait,
			Name: fmt.Sprint("cluster-", i), Logf: t.Logf, Restricted: true})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { op.Serve(ctx) })
	}
	var killed, during string
	kill := func(p Progress) {
		if killed != "" || p.Role != "analyzer" || p.Round != killRound || p.Stage != StageOpening || p.Done == 0 || p.Done == p.Total {
			return
		}
		lctx, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer lcancel()
		leader, err := conn.StreamLeader(lctx, openQueueName)
		if err != nil {
			t.Errorf("round %d: the opener queue's leader: %v", p.Round, err)
			return
		}
		cl.kill(t, leader)
		killed, during = leader, p.String()
	}
	dir := t.TempDir()
	start := time.Now()
	got, gotRounds := run(LocalOptions{Dir: dir, Creds: creds, NATSKeys: cl.keys, Progress: kill, ProgressEvery: time.Millisecond,
		Openers: &LocalOpeners{NATS: cl.urls, Chunk: 10, AckWait: crashAckWait}, ShufflerShards: &LocalShards{Shards: 2, NATS: cl.urls}},
		func(o *LocalOptions) (*LocalResult, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			return runLocalOn(ctx, st, *o, cl.urls, conn)
		})
	if killed == "" {
		t.Fatalf("no node was killed: round %d's opening never reported partial progress", killRound)
	}
	t.Logf("killed %s, the leader of %s, at %q; the run took %.1fs", killed, openQueueName, during, time.Since(start).Seconds())

	if slices.Equal(want.Model, st.Init) {
		t.Fatal("the model never moved: the comparison would prove nothing")
	}
	for j := range want.Model {
		if math.Float64bits(got.Model[j]) != math.Float64bits(want.Model[j]) {
			t.Fatalf("parameter %d: %v on the cluster with a node killed, %v fault-free", j, got.Model[j], want.Model[j])
		}
	}
	if got.Opened != want.Opened || got.Opened.Accepted == 0 {
		t.Errorf("opened %+v on the cluster, %+v fault-free", got.Opened, want.Opened)
	}
	if len(gotRounds) != rounds || len(wantRounds) != rounds {
		t.Fatalf("%d rounds released on the cluster, %d fault-free, want %d", len(gotRounds), len(wantRounds), rounds)
	}
	for i, r := range gotRounds {
		w := wantRounds[i]
		if r.Round != w.Round || r.Participants != w.Participants || r.Reports != w.Reports || r.Dummies != w.Dummies ||
			math.Float64bits(r.TestAccuracy) != math.Float64bits(w.TestAccuracy) || r.Privacy.CumulativeEpsilon != w.Privacy.CumulativeEpsilon {
			t.Errorf("round %d: %d participants, %d reports, %d dummies, accuracy %v, epsilon %v on the cluster; fault-free %d, %d, %d, %v, %v",
				r.Round, r.Participants, r.Reports, r.Dummies, r.TestAccuracy, r.Privacy.CumulativeEpsilon,
				w.Participants, w.Reports, w.Dummies, w.TestAccuracy, w.Privacy.CumulativeEpsilon)
		}
	}
	if len(got.Statements) != len(want.Statements) {
		t.Fatalf("%d statements on the cluster, %d fault-free", len(got.Statements), len(want.Statements))
	}
	for i := range got.Statements {
		if got.Statements[i].Epsilon != want.Statements[i].Epsilon {
			t.Errorf("statement %d: epsilon %v on the cluster, %v fault-free", i, got.Statements[i].Epsilon, want.Statements[i].Epsilon)
		}
	}
	gotL, wantL := clientLedgers(t, dir, clients), clientLedgers(t, wantDir, clients)
	charged := 0
	for i := range clients {
		if len(gotL[i]) != rounds || !slices.Equal(gotL[i], wantL[i]) {
			t.Errorf("client %d: charged %v on the cluster, %v fault-free (want one charge a released round)", i, gotL[i], wantL[i])
		}
		charged += len(gotL[i])
	}
	qctx, qcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer qcancel()
	chunks, err := streams.chunks.Len(qctx)
	if err != nil || chunks != 0 {
		t.Errorf("the opener queue holds %d chunks after the run (%v)", chunks, err)
	}
	sq, err := openShardQueue(qctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := sq.q.Len(qctx); err != nil || n != 0 {
		t.Errorf("the shard queue holds %d messages after the run (%v)", n, err)
	}
	t.Logf("%d rounds, %d messages opened (%d accepted), %d ledger charges to %d clients: equal to the fault-free run bit for bit",
		rounds, got.Opened.Accepted+got.Opened.Rejected(), got.Opened.Accepted, charged, clients)
}
