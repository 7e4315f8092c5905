package main

import (
	"bytes"
	"fmt"
	pkix "github.com/shufflefl/shufflefl/transport/pki"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/shufflefl/shufflefl/driver/deploy"
	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/transport/jetstream"
)

// TestDeployLocalShufflerShardsMatchRun: deploy-local with its shuffle
// split over two 'shufflefl shuffler-shard' processes (this binary) on the
// embedded JetStream server writes the model weights of 'run
// --secure-noise --faithful' bit for bit, and the same metrics.jsonl but
// for the timings and the fields a deployment reports differently from a
// simulation. apes (per-coordinate, with metadata) runs in the default
// suite; ss-double (padding) and e-apes (whole reports, three shards) with
// the long tests.
func TestDeployLocalShufflerShardsMatchRun(t *testing.T) {
	t.Setenv(asCLIEnv, "1") // for the shard processes (this binary)
	for _, tc := range []struct {
		proto, shards string
		long          bool
	}{{"apes", "2", false}, {"ss-double", "2", true}, {"e-apes", "3", true}} {
		t.Run(tc.proto, func(t *testing.T) {
			if tc.long {
				longtest.Skip(t)
			}
			flags := []string{"--clients", "12", "--rounds", "2", "--dataset", "blobs", "--model", "logreg", "--local-epochs", "1",
				"--seed", "3", "--progress", "none", "--protocol", tc.proto}
			dir := t.TempDir()
			out := func(name string, args ...string) string {
				o := filepath.Join(dir, name)
				var stdout, stderr bytes.Buffer
				if code := realMain(append(append(args, flags...), "--out", o), &stdout, &stderr); code != 0 {
					t.Fatalf("%s: exit %d: %s", args[0], code, stderr.String())
				}
				return o
			}
			sh := out("shards", "deploy-local", "--shuffler-shards", tc.shards)
			rn := out("run", "run", "--secure-noise", "--faithful")
			sameModelWeights(t, filepath.Join(sh, "model.json"), filepath.Join(rn, "model.json"))
			sameMetrics(t, sh, rn, "seconds", "timing", "dummies", "round_alone_epsilon", "round_alone_delta")
			b, err := os.ReadFile(filepath.Join(sh, "run.log"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"round 1: routed", "round 2: routed", "the manifest and " + tc.shards + " parts arrived"} {
				if !strings.Contains(string(b), want) {
					t.Errorf("run.log says nothing of %q", want)
				}
			}
		})
	}
}

// TestShufflerShardsFlags: --shuffler-shards out of range, on a role
// other than the shuffler, or on the shuffler without --nats; --shard-key
// off the shuffler: exit 2 with the reason.
func TestShufflerShardsFlags(t *testing.T) {
	dir := t.TempDir()
	run := []string{"--dataset", "blobs", "--clients", "4", "--rounds", "1", "--out", filepath.Join(dir, "out")}
	role := []string{"--certs", dir, "--db", filepath.Join(dir, "x.db"), "--listen", "127.0.0.1:1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append([]string{"deploy-local", "--shuffler-shards", "-1"}, run...), "--shuffler-shards -1"},
		{append([]string{"deploy-local", "--shuffler-shards", "257"}, run...), "--shuffler-shards 257"},
		{append(append([]string{"shuffler", "--shuffler-shards", "2", "--control-listen", "127.0.0.1:2", "--analyzer", "127.0.0.1:3"}, role...), run...), "needs the NATS JetStream server"},
		{append(append([]string{"analyzer", "--shuffler-shards", "2", "--shuffler-control", "127.0.0.1:2"}, role...), run...), "not analyzer's"},
		{append([]string{"deploy-local", "--shard-key", "k"}, run...), "--shard-key is the shuffler's"},
	} {
		var out, errb bytes.Buffer
		if code := realMain(tc.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// TestShufflerShardsServices runs a deployment as separate services, each
// through its own command as on separate machines: 'certs', an external
// NATS JetStream server, the analyzer, the front shuffler with
// --shuffler-shards 2, two 'shuffler-shard' services and every client.
// Each must exit 0 after the run's rounds: released from the two parts and
// the manifest of each, or void (a minimum above the clients), which the
// front announces to the shards so that they finish too.
func TestShufflerShardsServices(t *testing.T) {
	longtest.Skip(t) // two whole sharded deployments
	for _, tc := range []struct {
		name, min string
		want      []string
	}{
		{"released", "1", []string{"round 1: the manifest and 2 parts arrived", "round 2: the manifest and 2 parts arrived", "round 2: routed"}},
		{"void", "4", []string{"round 2 void"}}, // a minimum of 4 reports, 3 clients running
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := shardServices(t, tc.min)
			for _, want := range tc.want {
				if !strings.Contains(logs, want) {
					t.Errorf("the services' logs say nothing of %q", want)
				}
			}
		})
	}
}

// shardServices runs the services of TestShufflerShardsServices with the
// analyzer's minimum min, and returns their logs.
func shardServices(t *testing.T, min string) string {
	dir := t.TempDir()
	const clients = 4
	// A minimum of all the clients with one of them not running voids
	// every round at its deadline (a minimum above the clients is refused
	// at start).
	running, timeout := clients, "20s"
	if min == strconv.Itoa(clients) {
		running, timeout = clients-1, "4s"
	}
	run := []string{"--dataset", "blobs", "--model", "logreg", "--clients", strconv.Itoa(clients), "--rounds", "2",
		"--protocol", "ss-simple", "--epsilon", "4", "--clip", "0.5", "--local-epochs", "1", "--progress", "none"}
	with := func(args ...string) []string { return append(append([]string{}, args...), run...) }
	var stdout, stderr bytes.Buffer
	pki := filepath.Join(dir, "pki")
	if code := realMain([]string{"certs", "--out", pki, "--clients", strconv.Itoa(clients)}, &stdout, &stderr); code != 0 {
		t.Fatalf("certs: %s", stderr.String())
	}
	// The external server as DEPLOYMENT.md configures one: it admits only
	// the keys 'certs' wrote (nats/users.json, nats-server.conf).
	users, err := deploy.LoadNATSUsers(pki)
	if err != nil {
		t.Fatal(err)
	}
	cert, roots, err := deploy.LoadNATSTLS(pki)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := jetstream.Embedded(filepath.Join(dir, "nats"), jetstream.WithLoopbackPort(0), jetstream.WithUsers(users),
		jetstream.WithTLS(cert, roots, pkix.RequireRole(pkix.RoleEngine)))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	an, pub, ctl := freeAddr(t), freeAddr(t), freeAddr(t)
	roles := [][]string{
		with("analyzer", "--certs", pki, "--listen", an, "--shuffler-control", ctl, "--db", filepath.Join(dir, "analyzer.db"),
			"--round-timeout", timeout, "--min-reports", min),
		with("shuffler", "--certs", pki, "--listen", pub, "--control-listen", ctl, "--analyzer", an, "--db", filepath.Join(dir, "shuffler.db"),
			"--shuffler-shards", "2", "--nats", srv.URL()),
	}
	for s := 1; s <= 2; s++ {
		roles = append(roles, with("shuffler-shard", "--certs", pki, "--analyzer", an, "--nats", srv.URL(), "--shard-key", filepath.Join(pki, deploy.ShardKeyFile),
			"--index", strconv.Itoa(s), "--shards", "2", "--db", filepath.Join(dir, fmt.Sprintf("shard-%d.db", s))))
	}
	for i := range running {
		roles = append(roles, with("client", "--certs", pki, "--id", fmt.Sprintf("client-%06d", i+1), "--shuffler", pub,
			"--db", filepath.Join(dir, fmt.Sprintf("client-%d.db", i))))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var logs strings.Builder
	for _, args := range roles {
		wg.Go(func() {
			var o, e bytes.Buffer
			code := realMain(args, &o, &e)
			mu.Lock()
			defer mu.Unlock()
			logs.WriteString(e.String())
			if code != 0 {
				t.Errorf("%s: exit %d: %s", args[0], code, e.String())
			}
		})
	}
	wg.Wait()
	return logs.String()
}
