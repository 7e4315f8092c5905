package deploy

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// TestSampleSurvivesRestart: a restarted shuffler (same database) serves
// the open round to the same sample, from the same registered population,
// and keeps every client's declared budget: the sample and the
// registrations are durable, so a restart cannot re-draw the sample (which
// would offer the round to clients outside the sample the rate was stated
// for) or forget a budget.
func TestSampleSurvivesRestart(t *testing.T) {
	cfg := testConfig("apes", 12, 2)
	cfg.ClientsPerRound = 4
	st, err := NewSetup(cfg, testSplit(t, cfg), "restart")
	if err != nil {
		t.Fatal(err)
	}
	creds, err := NewDevCredentials(cfg.Clients, seal.DefaultSuite)
	if err != nil {
		t.Fatal(err)
	}
	// Never dialled: the round is not closed in this test.
	conn, err := grpc.NewClient("127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	path := filepath.Join(t.TempDir(), "shuffler.db")
	start := func() (*Shuffler, *store.DB) {
		db, err := store.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sh, err := NewShuffler(ShufflerConfig{Setup: st, DB: db, Registry: creds.Registry, AnalyzerKey: creds.HPKEPublic,
			Analyzer: wire.NewAnalyzerClient(conn), Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		return sh, db
	}
	sh, db := start()
	for i := 0; i < 9; i++ { // 9 of the 12 register, each with its own budget
		s, err := pki.NewSigner(ClientID(i), creds.Clients[ClientID(i)])
		if err != nil {
			t.Fatal(err)
		}
		req := &wire.RegisterRequest{Auth: &wire.RequestAuth{}, PublicKey: s.Public(), KeyAlgorithm: "ed25519", Epsilon: float64(i+1) / 4}
		if err := sign(s, testRand(), time.Now(), wire.Shuffler_Register_FullMethodName, 0, req); err != nil {
			t.Fatal(err)
		}
		if _, err := sh.Register(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	ann := &wire.RoundAnnouncement{Round: 1, RunId: st.RunID, Protocol: cfg.Protocol, MinReports: 1,
		DeadlineUnixNano: time.Now().Add(time.Hour).UnixNano()}
	resp, err := sh.Announce(context.Background(), &wire.AnnounceRequest{Announcement: ann})
	if err != nil {
		t.Fatal(err)
	}
	if resp.RegisteredClients != 9 {
		t.Fatalf("announced to a population of %d, want the 9 registered", resp.RegisteredClients)
	}
	ids := func(sh *Shuffler) []string {
		var out []string
		for id := range sh.cur.sample {
			out = append(out, id)
		}
		slices.Sort(out)
		return out
	}
	before, pop := ids(sh), sh.cur.population
	sh.Close()
	db.Close()

	sh2, db2 := start()
	defer db2.Close()
	defer sh2.Close()
	if sh2.cur == nil || sh2.cur.t != 1 {
		t.Fatal("the restarted shuffler did not resume round 1")
	}
	after := ids(sh2)
	if !slices.Equal(before, after) || sh2.cur.population != pop || len(after) != 4 || pop != 9 {
		t.Fatalf("sample %v of %d before the restart, %v of %d after (want 4 of 9, unchanged)", before, pop, after, sh2.cur.population)
	}
	if len(sh2.budgets) != 9 || sh2.budgets[ClientID(8)].Epsilon != 9.0/4 {
		t.Fatalf("registrations after the restart: %v", sh2.budgets)
	}
}
