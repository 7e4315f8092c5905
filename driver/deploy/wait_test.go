package deploy

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// TestClientWaitsForShuffler: a client whose shuffler is not up retries
// its registration with a line a retry naming the shuffler, and gives up
// after its connect deadline with an error that says so (it used to wait
// silently until its context ended: "register: context canceled").
func TestClientWaitsForShuffler(t *testing.T) {
	cfg := testConfig("ss-simple", 2, 1)
	st, err := NewSetup(cfg, testSplit(t, cfg), "wait")
	if err != nil {
		t.Fatal(err)
	}
	creds, err := NewDevCredentials(cfg.Clients, seal.DefaultSuite)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	conn, err := DialShuffler(creds, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	db, err := store.Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	id := ClientID(0)
	signer, err := pki.NewSigner(id, creds.Clients[id])
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	c, err := NewClient(ClientConfig{Setup: st, Index: 0, Signer: signer, AnalyzerKey: creds.HPKEPublic, DB: db,
		Shuffler: wire.NewShufflerClient(conn), ShufflerAddr: addr, ConnectDeadline: 1500 * time.Millisecond,
		Logf: func(f string, a ...any) { mu.Lock(); lines = append(lines, fmt.Sprintf(f, a...)); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = c.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "not reachable") || !strings.Contains(err.Error(), "connect deadline") {
		t.Fatalf("%v: want the shuffler unreachable past the connect deadline", err)
	}
	if el := time.Since(start); el > 6*time.Second {
		t.Fatalf("gave up after %v (deadline 1.5 s)", el)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lines) == 0 || !strings.Contains(lines[0], "waiting for shuffler "+addr+" (retry 1)") {
		t.Fatalf("log %q: want a line a retry naming the shuffler", lines)
	}
}
