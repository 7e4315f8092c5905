package deploy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/transport/jetstream"
)

// natsFixture is an embedded server admitting only the roles' keys of a
// fresh key directory, with one opened value published on the results
// log by the analyzer (in process).
func natsFixture(t *testing.T) (srv *jetstream.Server, keys string) {
	t.Helper()
	keys = t.TempDir()
	if err := WriteNATSKeys(keys); err != nil {
		t.Fatal(err)
	}
	users, err := LoadNATSUsers(keys)
	if err != nil {
		t.Fatal(err)
	}
	srv, err = jetstream.Embedded(t.TempDir(), jetstream.WithLoopbackPort(0), jetstream.WithUsers(users))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	an, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(an.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	q, err := openOpenerStreams(ctx, an, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.results.Publish(ctx, resultSubject("run", 1, "0"), "r-1", []byte("an opened value")); err != nil {
		t.Fatal(err)
	}
	return srv, keys
}

// TestNATSUnauthenticatedRefused: the deployment's NATS server refuses a
// connection that proves no key, or a key it does not know; the roles'
// keys connect. (Before, any local process connected and read every
// opened value from the results log.)
func TestNATSUnauthenticatedRefused(t *testing.T) {
	srv, keys := natsFixture(t)
	if c, err := jetstream.Connect(srv.URL()); err == nil {
		c.Close()
		t.Fatal("a connection without a key was admitted")
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Logf("refused: %v", err)
	}
	stranger, _, err := jetstream.NewUserKey()
	if err != nil {
		t.Fatal(err)
	}
	if c, err := jetstream.Connect(srv.URL(), jetstream.WithUserSeed(stranger)); err == nil {
		c.Close()
		t.Fatal("a connection with an unknown key was admitted")
	}
	for _, r := range natsRoles {
		c, err := jetstream.Connect(srv.URL(), jetstream.WithUserSeedFile(NATSSeedFile(keys, r)))
		if err != nil {
			t.Fatalf("role %s: %v", r, err)
		}
		c.Close()
	}
	if st, err := os.Stat(NATSSeedFile(keys, NATSOpener)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("seed file mode %v (%v), want 0600", st.Mode(), err)
	}
	conf, err := os.ReadFile(filepath.Join(keys, "nats", "nats-server.conf"))
	if err != nil || !strings.Contains(string(conf), "authorization") {
		t.Fatalf("nats-server.conf: %v %q", err, conf)
	}
}

// TestNATSRolesCannotReadResults: with their own keys, a shuffler shard
// and an opener cannot read the opened values on the results log (no
// consumer on it); the shard cannot even open it, the opener only to
// publish.
func TestNATSRolesCannotReadResults(t *testing.T) {
	srv, keys := natsFixture(t)
	// Positive control: the analyzer reads the value.
	an, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer an.Close()
	actx, acancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer acancel()
	al, err := an.OpenLog(actx, openLogName)
	if err != nil {
		t.Fatal(err)
	}
	ar, err := al.Read(actx, openLogName+".>")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := ar.Next(actx); err != nil || string(e.Data) != "an opened value" {
		t.Fatalf("the analyzer cannot read the results: %q %v", e.Data, err)
	}
	ar.Close()
	for _, role := range []string{NATSShard, NATSShuffler, NATSOpener} {
		t.Run(role, func(t *testing.T) {
			c, err := jetstream.Connect(srv.URL(), jetstream.WithUserSeedFile(NATSSeedFile(keys, role)))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			l, err := c.OpenLog(ctx, openLogName)
			if role != NATSOpener {
				if err == nil {
					t.Fatalf("%s opened the results log", role)
				}
				return
			}
			if err != nil {
				t.Fatalf("the opener cannot open the results log to publish: %v", err)
			}
			if r, err := l.Read(ctx, openLogName+".>"); err == nil {
				defer r.Close()
				if e, err := r.Next(ctx); err == nil {
					t.Fatalf("the opener read an opened value: %q", e.Data)
				}
			}
			if _, err := c.Log(ctx, jetstream.LogConfig{Name: openLogName}); err == nil {
				t.Fatal("the opener reconfigured the results log")
			}
		})
	}
}
