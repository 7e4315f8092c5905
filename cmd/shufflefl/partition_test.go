package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/shufflefl/shufflefl/driver/deploy"
	"github.com/shufflefl/shufflefl/driver/rundir"
	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/learning/data"
)

// TestPartitionCommand: partition writes a shard per client and the
// manifest, refuses a used --out without --overwrite and bad settings with
// exit status 2.
func TestPartitionCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "shards")
	flags := []string{"partition", "--dataset", "blobs", "--clients", "12", "--seed", "3", "--out", out}
	var stdout, stderr bytes.Buffer
	if code := realMain(flags, &stdout, &stderr); code != 0 {
		t.Fatalf("partition: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "12 shards of blobs") {
		t.Errorf("partition printed %q", stdout.String())
	}
	m, err := deploy.ReadManifest(filepath.Join(out, deploy.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for i, s := range m.Shards {
		if s.File != deploy.ShardFile(i) || s.Client != deploy.ClientID(i) {
			t.Errorf("shard %d listed as %+v", i, s)
		}
		if _, _, err := data.ReadShardFile(filepath.Join(out, s.File)); err != nil {
			t.Error(err)
		}
		total += s.Examples
	}
	if m.Clients != 12 || total != data.DefaultBlobsTrain || m.Features != data.DefaultBlobsFeatures {
		t.Errorf("manifest: %d clients, %d examples, %d features", m.Clients, total, m.Features)
	}
	for _, args := range [][]string{
		flags, // --out is used
		{"partition", "--dataset", "blobs", "--clients", "0", "--out", t.TempDir()},
		{"partition", "--dataset", "blobs", "--partition", "bogus", "--out", t.TempDir()},
		{"partition", "--dataset", "blobs", "--holdout-clients", "2", "--out", t.TempDir()},
		{"client", "--dataset", "blobs", "--certs", "x", "--shuffler", "127.0.0.1:1", "--db", "x", "--id", "client-000001", "--shards", "x"},
		{"shuffler", "--dataset", "blobs", "--data", "x"},
	} {
		stderr.Reset()
		if code := realMain(args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
	if code := realMain(append(flags, "--overwrite"), &stdout, &stderr); code != 0 {
		t.Errorf("partition --overwrite: exit %d: %s", code, stderr.String())
	}
}

// TestDeployLocalShardsMatch: deploy-local whose clients read the shard
// files of `partition` writes the same model.json, bit for bit, as
// deploy-local without them; shards written for another seed are refused.
func TestDeployLocalShardsMatch(t *testing.T) {
	flags := []string{"--clients", "12", "--rounds", "2", "--dataset", "blobs", "--model", "logreg", "--local-epochs", "1",
		"--seed", "3", "--progress", "none", "--protocol", "apes", "--epsilon", "4", "--clip", "0.5"}
	dir := t.TempDir()
	shards, other := filepath.Join(dir, "shards"), filepath.Join(dir, "other")
	run := func(out string, extra ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		args := append(append([]string{extra[0]}, flags...), extra[1:]...) // the extra flags override
		code := realMain(append(args, "--out", filepath.Join(dir, out)), &stdout, &stderr)
		return code, stderr.String()
	}
	if code, msg := run("shards", "partition"); code != 0 {
		t.Fatalf("partition: exit %d: %s", code, msg)
	}
	if code, msg := run("other", "partition", "--seed", "4"); code != 0 {
		t.Fatalf("partition: exit %d: %s", code, msg)
	}
	if code, msg := run("whole", "deploy-local"); code != 0 {
		t.Fatalf("deploy-local: exit %d: %s", code, msg)
	}
	if code, msg := run("sharded", "deploy-local", "--shards", shards); code != 0 {
		t.Fatalf("deploy-local --shards: exit %d: %s", code, msg)
	}
	a, b := readModel(t, filepath.Join(dir, "whole")), readModel(t, filepath.Join(dir, "sharded"))
	if len(a.Weights) != len(b.Weights) || len(a.Weights) == 0 {
		t.Fatalf("models of %d and %d weights", len(a.Weights), len(b.Weights))
	}
	for j := range a.Weights {
		if math.Float64bits(a.Weights[j]) != math.Float64bits(b.Weights[j]) {
			t.Fatalf("weight %d: %v without shard files, %v with", j, a.Weights[j], b.Weights[j])
		}
	}
	code, msg := run("refused", "deploy-local", "--shards", other)
	if code != 2 || !strings.Contains(msg, `seed is "4" there, "3" here`) {
		t.Errorf("deploy-local with another seed's shards: exit %d: %s", code, msg)
	}
}

func readModel(t *testing.T, dir string) rundir.Model {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m rundir.Model
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// maxClientBytes is the bar for a shard client's peak resident memory:
// 50 MB (issue 19).
const maxClientBytes = 50_000_000

// childArgsEnv carries the arguments of a shufflefl command run in a child
// process of the test binary (TestShardClientChild).
const childArgsEnv = "SHUFFLEFL_TEST_CHILD_ARGS"

// TestShardClientChild is not a test: run by runChild in a child process,
// it runs the shufflefl command of childArgsEnv and prints the process's
// VmHWM and VmRSS (kB) before exiting with the command's status.
func TestShardClientChild(t *testing.T) {
	js := os.Getenv(childArgsEnv)
	if js == "" {
		t.Skip("runs only as runChild's child process")
	}
	var args []string
	if err := json.Unmarshal([]byte(js), &args); err != nil {
		t.Fatal(err)
	}
	code := realMain(args, os.Stdout, os.Stderr)
	hwm, rss := procStatus("self")
	os.Stdout.WriteString("child VmHWM " + strconv.Itoa(hwm) + " VmRSS " + strconv.Itoa(rss) + "\n")
	os.Exit(code)
}

// procStatus returns VmHWM and VmRSS (kB) of /proc/PID/status, or zeros.
func procStatus(pid string) (hwm, rss int) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && (f[0] == "VmHWM:" || f[0] == "VmRSS:") {
			v, _ := strconv.Atoi(f[1])
			if f[0] == "VmHWM:" {
				hwm = v
			} else {
				rss = v
			}
		}
	}
	return hwm, rss
}

// runChild runs `shufflefl ARGS` in a child process of the test binary and
// returns its exit status, its output and its VmHWM in kB (0 if /proc has
// none).
func runChild(t *testing.T, args []string) (code int, out string, hwm int) {
	t.Helper()
	js, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestShardClientChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childArgsEnv+"="+string(js))
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	out = buf.String()
	if i := strings.LastIndex(out, "child VmHWM "); i >= 0 {
		hwm, _ = strconv.Atoi(strings.Fields(out[i:])[2])
	}
	return code, out, hwm
}

// freeAddr returns a free loopback address.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// shardClientRun partitions dataset for clients clients, serves the
// analyzer and the shuffler of a one-round run in this process, and runs
// client-000001 in a child process with --data and a --data-dir that is an
// empty directory: it returns the child's exit status, output and VmHWM
// (kB).
func shardClientRun(t *testing.T, dataset, dataDir string, clients int) (int, string, int) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	run := []string{"--dataset", dataset, "--data-dir", dataDir, "--model", "logreg", "--clients", strconv.Itoa(clients), "--rounds", "1",
		"--protocol", "apes", "--epsilon", "4", "--clip", "0.5", "--local-epochs", "1", "--progress", "none"}
	with := func(args ...string) []string { return append(append([]string{}, args...), run...) }
	var stdout, stderr bytes.Buffer
	pki, shards := filepath.Join(dir, "pki"), filepath.Join(dir, "shards")
	if code := realMain([]string{"certs", "--out", pki, "--clients", strconv.Itoa(clients)}, &stdout, &stderr); code != 0 {
		t.Fatalf("certs: %s", stderr.String())
	}
	if code := realMain(with("partition", "--out", shards), &stdout, &stderr); code != 0 {
		t.Fatalf("partition: %s", stderr.String())
	}
	an, pub, ctl := freeAddr(t), freeAddr(t), freeAddr(t)
	var wg sync.WaitGroup
	for _, args := range [][]string{
		with("shuffler", "--certs", pki, "--listen", pub, "--control-listen", ctl, "--analyzer", an, "--db", filepath.Join(dir, "shuffler.db")),
		with("analyzer", "--certs", pki, "--listen", an, "--shuffler-control", ctl, "--db", filepath.Join(dir, "analyzer.db"),
			"--round-timeout", "4s", "--min-reports", "1"),
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var o, e bytes.Buffer
			if code := realMain(args, &o, &e); code != 0 {
				t.Errorf("%s: exit %d: %s", args[0], code, e.String())
			}
		}()
	}
	defer wg.Wait()
	// The client's --data-dir is empty: a client that opened the dataset
	// would fail.
	client := []string{"client", "--certs", pki, "--id", "client-000001", "--shuffler", pub, "--db", filepath.Join(dir, "client.db"),
		"--data", filepath.Join(shards, deploy.ShardFile(0))}
	return runChild(t, append(with(client...), "--data-dir", empty))
}

// TestShardClientProcess: a real client process given its shard file and
// an empty data directory registers, trains and reports (it never opens
// the dataset, which it could not find), and its resident memory stays
// under 50 MB (VmHWM, the process's peak); without --data the same client
// fails on the empty data directory.
func TestShardClientProcess(t *testing.T) {
	// mnist-dir over the embedded Fashion-MNIST sample's files: 2,000
	// images over 33 clients, 60 each as in Fashion-MNIST's 1,000.
	sample, err := filepath.Abs("../../learning/data/testdata/fashion-mnist-sample")
	if err != nil {
		t.Fatal(err)
	}
	code, out, hwm := shardClientRun(t, "mnist-dir", sample, 33)
	if code != 0 || !strings.Contains(out, "client client-000001: done") {
		t.Fatalf("client --data: exit %d: %s", code, out)
	}
	t.Logf("client --data: VmHWM %d kB", hwm)
	if hwm*1024 >= maxClientBytes {
		t.Errorf("client --data: VmHWM %d kB, want under %d bytes", hwm, maxClientBytes)
	}
	empty := t.TempDir()
	certs := filepath.Join(t.TempDir(), "certs") // real credentials: the data is what is missing
	if c, _, errs := runCertsCmd("--out", certs, "--clients", "1"); c != 0 {
		t.Fatalf("certs: %s", errs)
	}
	code, out, _ = runChild(t, []string{"client", "--dataset", "mnist-dir", "--data-dir", empty, "--certs", certs, "--id", "client-000001",
		"--shuffler", "127.0.0.1:1", "--db", filepath.Join(empty, "c.db")})
	if code == 0 || !strings.Contains(out, "train-images-idx3-ubyte") {
		t.Errorf("client without --data on an empty data directory: exit %d: %s", code, out)
	}
}

// TestShardClientProcessFashionMNIST: the same for one shard of the
// installed Fashion-MNIST split over 1,000 clients (60 images each):
// VmHWM under 50 MB.
func TestShardClientProcessFashionMNIST(t *testing.T) {
	longtest.Skip(t)
	if _, err := os.Stat(data.FashionMNISTDir); err != nil {
		t.Skipf("Fashion-MNIST is not installed: %v", err)
	}
	code, out, hwm := shardClientRun(t, "fashion-mnist", data.FashionMNISTDir, 1000)
	if code != 0 || !strings.Contains(out, "client client-000001: done") {
		t.Fatalf("client --data: exit %d: %s", code, out)
	}
	t.Logf("client --data: VmHWM %d kB", hwm)
	if hwm*1024 >= maxClientBytes {
		t.Errorf("client --data: VmHWM %d kB, want under %d bytes", hwm, maxClientBytes)
	}
}
