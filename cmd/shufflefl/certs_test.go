package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/seal"
)

// runCertsCmd runs `shufflefl certs args...` and returns the exit status,
// stdout and stderr.
func runCertsCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := realMain(append([]string{"certs"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCertsWritesCredentials(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "creds")
	code, out, errs := runCertsCmd("--out", dir, "--clients", "3", "--hosts", "localhost,127.0.0.1,::1,shuffler.local")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "wrote 15 files") || !strings.Contains(out, "shard key") {
		t.Errorf("stdout: %q", out)
	}
	read := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// Modes: private keys 0600, nothing writable by others.
	var names []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		names = append(names, rel)
		st, _ := os.Stat(p)
		perm := st.Mode().Perm()
		if (strings.HasSuffix(rel, ".key") || strings.HasSuffix(rel, ".nk")) && perm != 0o600 {
			t.Errorf("private key %s has mode %v, want 0600", rel, perm)
		}
		if perm&0o022 != 0 {
			t.Errorf("%s is writable by others (mode %v)", rel, perm)
		}
		return nil
	})
	if len(names) != 21 || !slices.Contains(names, "nats.crt") || !slices.Contains(names, "nats.key") || !slices.Contains(names, "shard.key") || !slices.Contains(names, "nats/opener.nk") || !slices.Contains(names, "nats/nats-server.conf") {
		t.Errorf("files %v", names)
	}

	// The certificates chain to the CA, with their roles and hosts.
	roots, err := pki.Pool(read("ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []pki.Role{pki.RoleShuffler, pki.RoleAnalyzer, pki.RoleEngine} {
		pair, err := pki.KeyPair(read(string(role)+".crt"), read(string(role)+".key"))
		if err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		cert, _ := x509.ParseCertificate(pair.Certificate[0])
		if r, ok := pki.RoleOf(cert); !ok || r != role {
			t.Errorf("%s certificate has role %q", role, r)
		}
		for _, host := range []string{"localhost", "127.0.0.1", "::1", "shuffler.local"} {
			if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
				t.Errorf("%s for %s: %v", role, host, err)
			}
		}
		if d := time.Until(cert.NotAfter); d < 719*time.Hour || d > 721*time.Hour {
			t.Errorf("%s valid for %v, want 720h", role, d)
		}
	}

	// The external server's configuration serves the engine certificate.
	abs, _ := filepath.Abs(dir)
	if conf := string(read("nats/nats-server.conf")); !strings.Contains(conf, "tls {") || !strings.Contains(conf, `cert_file: "`+filepath.Join(abs, "nats.crt")+`"`) {
		t.Errorf("nats-server.conf has no TLS block serving nats.crt:\n%s", conf)
	}

	// The HPKE key pair matches and works.
	hk, err := seal.ParsePrivateKeyPEM(read("analyzer-hpke.key"))
	if err != nil {
		t.Fatal(err)
	}
	hp, err := seal.ParsePublicKeyPEM(read("analyzer-hpke.pub"))
	if err != nil || !hp.Equal(hk.Public()) || hp.Suite() != seal.X25519 {
		t.Fatalf("HPKE public key: %v", err)
	}

	// Every client key is registered under its id, and nothing else is.
	reg, err := pki.ParseRegistry(read("clients.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(reg.IDs(), ",") != "client-000001,client-000002,client-000003" {
		t.Errorf("registry ids %v", reg.IDs())
	}
	for _, id := range reg.IDs() {
		k, err := pki.ParseKeyPEM(read(filepath.Join("clients", id+".key")))
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := reg.Key(id)
		if !k.(ed25519.PrivateKey).Public().(ed25519.PublicKey).Equal(pub) {
			t.Errorf("%s: registered key differs from its private key", id)
		}
	}
}

func TestCertsOutDir(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := runCertsCmd("--out", dir, "--clients", "3", "--suite", "xwing"); code != 0 {
		t.Fatal(errs)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	// A used directory is refused without --overwrite.
	code, _, errs := runCertsCmd("--out", dir, "--clients", "2")
	if code != 2 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "--overwrite") {
		t.Errorf("used --out: exit %d, stderr %q", code, errs)
	}
	old, _ := os.ReadFile(filepath.Join(dir, "ca.key"))
	// --overwrite replaces the credentials, removes the third client's key
	// and keeps other files.
	if code, _, errs := runCertsCmd("--out", dir, "--clients", "2", "--overwrite"); code != 0 {
		t.Fatal(errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "clients", "client-000003.key")); !os.IsNotExist(err) {
		t.Errorf("stale client key kept: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "mine" {
		t.Error("--overwrite removed a file it did not write")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "ca.key")); bytes.Equal(b, old) {
		t.Error("--overwrite kept the old CA key")
	}
	hk, err := seal.ParsePrivateKeyPEM(certsMust(os.ReadFile(filepath.Join(dir, "analyzer-hpke.key"))))
	if err != nil || hk.Suite() != seal.X25519 {
		t.Errorf("overwritten HPKE key: %v", err)
	}
}

func certsMust[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestCertsBadInput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "x")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--clients", "2"}, "--out is required"},
		{[]string{"--out", dir}, "--clients must be in [1, 100000], got 0"},
		{[]string{"--out", dir, "--clients", "-1"}, "--clients"},
		{[]string{"--out", dir, "--clients", "100001"}, "--clients"},
		{[]string{"--out", dir, "--clients", "x"}, "invalid value"},
		{[]string{"--out", dir, "--clients", "2", "--hosts", "local host"}, "--hosts"},
		{[]string{"--out", dir, "--clients", "2", "--hosts", ""}, "--hosts"},
		{[]string{"--out", dir, "--clients", "2", "--suite", "p256"}, "--suite: unknown HPKE suite"},
		{[]string{"--out", dir, "--clients", "2", "--validity", "-1h"}, "--validity"},
		{[]string{"--out", dir, "--clients", "2", "--validity", "30d"}, "--validity"},
		{[]string{"--out", dir, "--clients", "2", "extra"}, "unexpected argument"},
		{[]string{"--bogus"}, "flag provided but not defined: --bogus"},
	}
	for _, tt := range tests {
		code, out, errs := runCertsCmd(tt.args...)
		if code != 2 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, tt.want) || !strings.HasPrefix(errs, "shufflefl certs: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want %q)", tt.args, code, out, errs, tt.want)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Error("a rejected invocation created --out")
	}
	// --out naming a file.
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if code, _, errs := runCertsCmd("--out", f, "--clients", "1"); code != 2 || !strings.Contains(errs, "is a file") {
		t.Errorf("--out file: %d %q", code, errs)
	}
	code, help, _ := runCertsCmd("--help")
	if code != 0 || !strings.Contains(help, "\n  --clients int\n") || !strings.Contains(help, "0600") || !strings.Contains(help, "Examples:\n  shufflefl certs") {
		t.Errorf("--help: %d %q", code, help)
	}
	var viaHelp bytes.Buffer
	if code := realMain([]string{"help", "certs"}, &viaHelp, &bytes.Buffer{}); code != 0 || viaHelp.String() != help {
		t.Errorf("help certs: status %d, output differs from certs --help", code)
	}
}
