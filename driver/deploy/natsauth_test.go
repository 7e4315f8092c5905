package deploy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/pki"
)

// natsFixture is an embedded server as deploy-local starts it — TLS with
// an engine certificate, admitting only the roles' keys of a fresh key
// directory — with one opened value published on the results log by the
// analyzer (in process).
func natsFixture(t *testing.T) (srv *jetstream.Server, keys string) {
	t.Helper()
	keys = t.TempDir()
	if err := writeNATSTLS(keys); err != nil {
		t.Fatal(err)
	}
	if err := WriteNATSKeys(keys); err != nil {
		t.Fatal(err)
	}
	users, err := LoadNATSUsers(keys)
	if err != nil {
		t.Fatal(err)
	}
	cert, roots, err := LoadNATSTLS(keys)
	if err != nil {
		t.Fatal(err)
	}
	srv, err = jetstream.Embedded(t.TempDir(), jetstream.WithLoopbackPort(0), jetstream.WithUsers(users),
		jetstream.WithTLS(cert, roots, pki.RequireRole(pki.RoleEngine)))
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
	ca := jetstream.WithRootCAFile(NATSCAFile(keys))
	if c, err := jetstream.Connect(srv.URL(), ca); err == nil {
		c.Close()
		t.Fatal("a connection without a key was admitted")
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Logf("refused: %v", err)
	}
	stranger, _, err := jetstream.NewUserKey()
	if err != nil {
		t.Fatal(err)
	}
	if c, err := jetstream.Connect(srv.URL(), ca, jetstream.WithUserSeed(stranger)); err == nil {
		c.Close()
		t.Fatal("a connection with an unknown key was admitted")
	}
	for _, r := range natsRoles {
		opts, err := natsSeedOption(keys, r)
		if err != nil {
			t.Fatal(err)
		}
		c, err := jetstream.Connect(srv.URL(), opts...)
		if err != nil {
			t.Fatalf("role %s: %v", r, err)
		}
		c.Close()
	}
	if st, err := os.Stat(NATSSeedFile(keys, NATSOpener)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("seed file mode %v (%v), want 0600", st.Mode(), err)
	}
	conf, err := os.ReadFile(filepath.Join(keys, "nats", "nats-server.conf"))
	if err != nil || !strings.Contains(string(conf), "authorization") || !strings.Contains(string(conf), "cert_file: \""+NATSCertFile(keys)+"\"") {
		t.Fatalf("nats-server.conf: %v %q", err, conf)
	}
}

// TestNATSPlaintextRefused: the deployment's engine speaks TLS only. A
// role's valid key without TLS, or over TLS that trusts another CA (a
// server posing as the engine would be refused the same way), does not
// connect; with the deployment's CA it does.
func TestNATSPlaintextRefused(t *testing.T) {
	srv, keys := natsFixture(t)
	if !strings.HasPrefix(srv.URL(), "tls://") {
		t.Fatalf("URL %q, want tls://", srv.URL())
	}
	other := t.TempDir()
	if err := writeNATSTLS(other); err != nil {
		t.Fatal(err)
	}
	seed := jetstream.WithUserSeedFile(NATSSeedFile(keys, NATSOpener))
	plain := "nats://" + strings.TrimPrefix(srv.URL(), "tls://")
	for _, tc := range []struct {
		name string
		url  string
		opts []jetstream.ConnOption
		ok   bool
	}{
		{"key without TLS", plain, []jetstream.ConnOption{seed}, false},
		{"key over TLS trusting another CA", srv.URL(), []jetstream.ConnOption{seed, jetstream.WithRootCAFile(NATSCAFile(other))}, false},
		{"key over TLS with the deployment's CA", srv.URL(), []jetstream.ConnOption{seed, jetstream.WithRootCAFile(NATSCAFile(keys))}, true},
		{"key and CA, nats:// URL (TLS is still required)", plain, []jetstream.ConnOption{seed, jetstream.WithRootCAFile(NATSCAFile(keys))}, true},
	} {
		c, err := jetstream.Connect(tc.url, tc.opts...)
		if err == nil {
			c.Close()
		}
		if (err == nil) != tc.ok {
			t.Errorf("%s: connected %v (%v), want %v", tc.name, err == nil, err, tc.ok)
		}
	}
	// The external server's configuration parses, admits the four roles'
	// keys and serves TLS with the engine certificate.
	so, err := server.ProcessConfigFile(filepath.Join(keys, "nats", "nats-server.conf"))
	if err != nil {
		t.Fatalf("nats-server.conf: %v", err)
	}
	if len(so.Nkeys) != len(natsRoles) || so.TLSConfig == nil || len(so.TLSConfig.Certificates) != 1 {
		t.Fatalf("nats-server.conf: %d nkeys, TLS %v", len(so.Nkeys), so.TLSConfig != nil)
	}
	users, err := LoadNATSUsers(keys)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]jetstream.User{}
	for _, u := range users {
		byKey[u.NKey] = u
	}
	sorted := func(xs []string) []string { return slices.Sorted(slices.Values(xs)) }
	for _, nu := range so.Nkeys {
		u, ok := byKey[nu.Nkey]
		if !ok {
			t.Fatalf("nats-server.conf admits an unknown key %s", nu.Nkey)
		}
		var pub, sub []string
		if p := nu.Permissions; p != nil {
			if p.Publish != nil {
				pub = p.Publish.Allow
			}
			if p.Subscribe != nil {
				sub = p.Subscribe.Allow
			}
		}
		if !slices.Equal(sorted(pub), sorted(u.Publish.Allow)) || !slices.Equal(sorted(sub), sorted(u.Subscribe.Allow)) {
			t.Errorf("%s: nats-server.conf grants publish %v subscribe %v, the embedded server %v %v", u.Name, pub, sub, u.Publish.Allow, u.Subscribe.Allow)
		}
	}
	// A role with the CA refuses a server without TLS.
	bare, err := jetstream.Embedded(t.TempDir(), jetstream.WithLoopbackPort(0), jetstream.WithUsers(users))
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Shutdown()
	opts, err := natsSeedOption(keys, NATSOpener)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := jetstream.Connect(bare.URL(), opts...); err == nil {
		c.Close()
		t.Fatal("a role holding the CA connected to a server without TLS")
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
			opts, err := natsSeedOption(keys, role)
			if err != nil {
				t.Fatal(err)
			}
			c, err := jetstream.Connect(srv.URL(), opts...)
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
