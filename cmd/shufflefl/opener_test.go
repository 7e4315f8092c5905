package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/internal/longtest"
)

// asCLIEnv makes the test binary run as shufflefl (realMain on its
// arguments) instead of running tests: the opener processes deploy-local
// starts are the running executable, the test binary in a test.
const asCLIEnv = "SHUFFLEFL_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLIEnv) != "" {
		os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	if os.Getenv(asMainEnv) != "" {
		supervisedTestCommands()
		main()
	}
	os.Exit(m.Run())
}

func TestOpenerUsageErrors(t *testing.T) {
	dir := t.TempDir()
	badKey := filepath.Join(dir, "bad.key")
	if err := os.WriteFile(badKey, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := []string{"--dataset", "blobs", "--clients", "4", "--rounds", "1", "--out", filepath.Join(dir, "out")}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"opener"}, "--nats URL is required"},
		{[]string{"opener", "--nats", "nats://127.0.0.1:1"}, "--key FILE is required"},
		{[]string{"opener", "--nats", "nats://127.0.0.1:1", "--key", filepath.Join(dir, "none")}, "no such file"},
		{[]string{"opener", "--nats", "nats://127.0.0.1:1", "--key", badKey}, "bad.key"},
		{[]string{"opener", "--nats", "nats://127.0.0.1:1", "--key", badKey, "--workers", "0"}, "--workers 0"},
		{[]string{"opener", "--nats", "nats://127.0.0.1:1", "--key", badKey, "--nats-replicas", "-1"}, "--nats-replicas -1: want 1 to 5"},
		{[]string{"opener", "--nats", "nats://127.0.0.1:1", "--key", badKey, "--nats-replicas", "6"}, "--nats-replicas 6: want 1 to 5"},
		{[]string{"opener", "--nats", "nats://127.0.0.1:1", "extra"}, "unexpected argument"},
		{[]string{"opener", "--bogus"}, "bogus"},
		{append([]string{"deploy-local", "--worker-procs", "2"}, run...), "--openers N"},
		{append([]string{"deploy-local", "--openers", "-1"}, run...), "--openers -1"},
		{append([]string{"deploy-local", "--opener-chunk", "-5"}, run...), "--opener-chunk -5"},
		{append([]string{"analyzer", "--openers", "2", "--certs", dir, "--listen", "127.0.0.1:1", "--shuffler-control", "127.0.0.1:2", "--db", "x"}, run...), "deploy-local's"},
	} {
		var out, errb bytes.Buffer
		if code := realMain(tc.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// TestDeployLocalOpenersMatchRun: deploy-local with two 'shufflefl opener'
// processes over the embedded JetStream server writes the model weights of
// 'run --secure-noise --faithful' bit for bit, and the same metrics.jsonl
// but for the timings and the fields a deployment reports differently from
// a simulation (the shuffler's dummies, no round-alone statement); with the
// long tests also the model.json and metrics (but for the timings) of
// deploy-local opening in the analyzer. apes (per-coordinate, with
// metadata) runs in the default suite; ss-double (whose calibration takes
// seconds) and e-apes (whole reports) with the long tests.
func TestDeployLocalOpenersMatchRun(t *testing.T) {
	t.Setenv(asCLIEnv, "1") // for the opener processes (this binary)
	for _, tc := range []struct {
		proto, chunk string
		long         bool
	}{{"apes", "100", false}, {"ss-double", "100", true}, {"e-apes", "3", true}} {
		t.Run(tc.proto, func(t *testing.T) {
			if tc.long {
				longtest.Skip(t)
			}
			flags := []string{"--clients", "12", "--rounds", "2", "--dataset", "blobs", "--model", "logreg", "--local-epochs", "1",
				"--seed", "3", "--progress", "none", "--protocol", tc.proto}
			dir := t.TempDir()
			out := func(name string, args ...string) string {
				t.Helper()
				p := filepath.Join(dir, name)
				var o, e bytes.Buffer
				if code := realMain(append(append(args, flags...), "--out", p), &o, &e); code != 0 {
					t.Fatalf("%s: exit %d: %s", args, code, e.String())
				}
				return p
			}
			op := out("openers", "deploy-local", "--openers", "2", "--opener-chunk", tc.chunk)
			rn := out("run", "run", "--secure-noise", "--faithful")
			sameModelWeights(t, filepath.Join(op, "model.json"), filepath.Join(rn, "model.json"))
			sameMetrics(t, op, rn, "seconds", "timing", "dummies", "round_alone_epsilon", "round_alone_delta")
			if longtest.Enabled() { // driver/deploy's TestLocalOpenersEqualLocal checks it in the default suite
				dl := out("local", "deploy-local")
				sameFile(t, filepath.Join(op, "model.json"), filepath.Join(dl, "model.json"))
				sameMetrics(t, op, dl, "seconds", "timing")
			}
			b, err := os.ReadFile(filepath.Join(op, "run.log"))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range []string{"round 1: ", "round 2: "} {
				if !strings.Contains(string(b), "analyzer: "+r) || !strings.Contains(string(b), " opened on ") {
					t.Errorf("run.log says nothing of %sopening on the openers", r)
				}
			}
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, " opened on ") {
					t.Log(l)
				}
			}
		})
	}
}

// sameFile fails unless the two files hold the same bytes.
func sameFile(t *testing.T, a, b string) {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x, y) {
		t.Fatalf("%s and %s differ", a, b)
	}
}

// sameModelWeights fails unless the two model.json files hold the same
// weights (as JSON numbers, which round-trip float64 exactly).
func sameModelWeights(t *testing.T, a, b string) {
	t.Helper()
	read := func(p string) []json.Number {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		d := json.NewDecoder(f)
		d.UseNumber()
		var m struct{ Weights []json.Number }
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m.Weights
	}
	if x, y := read(a), read(b); len(x) == 0 || !reflect.DeepEqual(x, y) {
		t.Fatalf("the weights of %s and %s differ", a, b)
	}
}

// sameMetrics fails unless the metrics.jsonl of the two run directories
// hold the same records but for the keys skip.
func sameMetrics(t *testing.T, a, b string, skip ...string) {
	t.Helper()
	read := func(dir string) []map[string]any {
		data, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			d := json.NewDecoder(strings.NewReader(l))
			d.UseNumber()
			var r map[string]any
			if err := d.Decode(&r); err != nil {
				t.Fatal(err)
			}
			for _, k := range skip {
				delete(r, k)
			}
			out = append(out, r)
		}
		return out
	}
	x, y := read(a), read(b)
	if len(x) != len(y) {
		t.Fatalf("%d and %d rounds in metrics.jsonl", len(x), len(y))
	}
	for i := range x {
		for k := range x[i] {
			if !reflect.DeepEqual(x[i][k], y[i][k]) {
				t.Errorf("round %d %s: %v in %s, %v in %s", i+1, k, x[i][k], a, y[i][k], b)
			}
		}
		if len(x[i]) != len(y[i]) {
			t.Errorf("round %d: %d and %d keys", i+1, len(x[i]), len(y[i]))
		}
	}
}
