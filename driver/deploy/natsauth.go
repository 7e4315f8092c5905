package deploy

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/pki"
)

// The engine is never open: every connection to a deployment's NATS
// JetStream server proves the NKey of one role, and each role may touch
// only its own streams.
//
//   - analyzer: everything (it creates the opener queue and reads the
//     opened values);
//   - opener: takes chunks from the opener queue and publishes results on
//     the results log, which it may neither read nor reconfigure (no
//     consumer, message get or stream update on it: an update could
//     republish the log to a subject it can read);
//   - shuffler (the sharded front) and shard: the shard queue only,
//     nothing of the opener queue or the results.
//
// Anything else — a process on the host without a key — is refused at
// connection. Keys are written by 'shufflefl certs' (and deploy-local)
// under DIR/nats: ROLE.nk holds a role's seed (0600), users.json the
// public keys the server admits, nats-server.conf the same users and
// permissions (and the TLS block) for an external nats-server.
//
// Every network connection to the engine is TLS 1.3: the server presents
// DIR/nats.crt (role "nats", issued by the deployment's CA; key
// DIR/nats.key) and every role verifies it against DIR/ca.crt, so that
// nothing crosses the network in clear and no process can pose as the
// engine; a cluster's nodes authenticate one another with the same
// certificate role (mutual TLS on the routes). A role that has the CA
// refuses a server without TLS.

// NATS roles (the names of their key files).
const (
	NATSAnalyzer = "analyzer"
	NATSOpener   = "opener"
	NATSShuffler = "shuffler"
	NATSShard    = "shard"
)

// natsRoles are the roles a key directory holds, in a fixed order.
var natsRoles = []string{NATSAnalyzer, NATSOpener, NATSShuffler, NATSShard}

// NATSCAFile is the CA certificate of the credentials directory dir, which
// verifies the engine's TLS certificate.
func NATSCAFile(dir string) string { return filepath.Join(dir, "ca.crt") }

// NATSCertFile is the engine's TLS certificate in the credentials
// directory dir.
func NATSCertFile(dir string) string { return filepath.Join(dir, "nats.crt") }

// NATSKeyFile is the key of the engine's TLS certificate in dir.
func NATSKeyFile(dir string) string { return filepath.Join(dir, "nats.key") }

// LoadNATSTLS reads the engine's certificate and the CA of the
// credentials directory dir, for an embedded server's WithTLS.
func LoadNATSTLS(dir string) (tls.Certificate, *x509.CertPool, error) {
	cert, err := tls.LoadX509KeyPair(NATSCertFile(dir), NATSKeyFile(dir))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("NATS TLS certificate (a credentials directory from 'shufflefl certs' holds nats.crt and nats.key): %w", err)
	}
	b, err := os.ReadFile(NATSCAFile(dir))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("NATS TLS: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(b) {
		return tls.Certificate{}, nil, fmt.Errorf("NATS TLS: %s holds no PEM certificate", NATSCAFile(dir))
	}
	return cert, roots, nil
}

// writeNATSTLS writes a fresh CA's certificate and an engine certificate
// it issued for the loopback addresses into dir (deploy-local's own keys;
// 'shufflefl certs' issues nats.crt from the deployment's CA instead).
func writeNATSTLS(dir string) error {
	now := time.Now()
	ca, err := pki.NewCA("shufflefl deploy-local NATS CA", now, 30*24*time.Hour)
	if err != nil {
		return err
	}
	is, err := ca.Issue(pki.RoleEngine, pki.DefaultHosts, now, 30*24*time.Hour)
	if err != nil {
		return err
	}
	key, err := pki.EncodeKeyPEM(is.Key)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{{NATSCAFile(dir), pki.EncodeCertPEM(ca.Cert), 0o644}, {NATSCertFile(dir), pki.EncodeCertPEM(is.Cert), 0o644}, {NATSKeyFile(dir), key, 0o600}} {
		if err := os.WriteFile(f.path, f.data, f.mode); err != nil {
			return fmt.Errorf("NATS TLS: %w", err)
		}
	}
	return nil
}

// NATSSeedFile is role's seed file in the credentials directory dir.
func NATSSeedFile(dir, role string) string { return filepath.Join(dir, "nats", role+".nk") }

// WriteNATSKeys writes a fresh NKey for every role under dir/nats (see
// above), replacing any there.
func WriteNATSKeys(dir string) error {
	nd := filepath.Join(dir, "nats")
	if err := os.MkdirAll(nd, 0o700); err != nil {
		return fmt.Errorf("NATS keys: %w", err)
	}
	pubs := map[string]string{}
	for _, r := range natsRoles {
		seed, pub, err := jetstream.NewUserKey()
		if err != nil {
			return err
		}
		if err := os.WriteFile(NATSSeedFile(dir, r), append(seed, '\n'), 0o600); err != nil {
			return fmt.Errorf("NATS keys: %w", err)
		}
		pubs[r] = pub
	}
	b, err := json.MarshalIndent(pubs, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(nd, "users.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("NATS keys: %w", err)
	}
	users, err := natsUsers(pubs)
	if err != nil {
		return err
	}
	conf := NATSServerConf(users)
	if _, err := os.Stat(NATSCertFile(dir)); err == nil {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("NATS keys: %w", err)
		}
		conf += NATSServerTLSConf(abs)
	}
	return os.WriteFile(filepath.Join(nd, "nats-server.conf"), []byte(conf), 0o644)
}

// NATSServerTLSConf is the TLS block of an external nats-server's
// configuration serving the engine certificate of the credentials
// directory dir (absolute), and the TLS of a cluster's routes, whose
// nodes verify one another against the deployment's CA. A route from a
// certificate of another role of the same CA is not told apart by
// nats-server's configuration: keep the route port off networks the
// deployment does not own.
func NATSServerTLSConf(dir string) string {
	q := func(p string) string { return fmt.Sprintf("%q", p) }
	return fmt.Sprintf("tls {\n  cert_file: %s\n  key_file: %s\n  timeout: 5\n}\n"+
		"# In a cluster, add to its cluster { } block:\n#   tls { cert_file: %s, key_file: %s, ca_file: %s, verify: true, timeout: 5 }\n",
		q(NATSCertFile(dir)), q(NATSKeyFile(dir)), q(NATSCertFile(dir)), q(NATSKeyFile(dir)), q(NATSCAFile(dir)))
}

// LoadNATSUsers reads the users a deployment's server admits from
// dir/nats/users.json.
func LoadNATSUsers(dir string) ([]jetstream.User, error) {
	b, err := os.ReadFile(filepath.Join(dir, "nats", "users.json"))
	if err != nil {
		return nil, fmt.Errorf("NATS users: %w", err)
	}
	pubs := map[string]string{}
	if err := json.Unmarshal(b, &pubs); err != nil {
		return nil, fmt.Errorf("NATS users %s: %w", filepath.Join(dir, "nats", "users.json"), err)
	}
	return natsUsers(pubs)
}

// natsUsers gives every role's public key its permissions.
func natsUsers(pubs map[string]string) ([]jetstream.User, error) {
	var out []jetstream.User
	for _, r := range natsRoles {
		pub, ok := pubs[r]
		if !ok {
			return nil, fmt.Errorf("NATS users: no key of role %s", r)
		}
		p, s := natsPermissions(r)
		out = append(out, jetstream.User{Name: r, NKey: pub, Publish: p, Subscribe: s})
	}
	return out, nil
}

// jsStream is what a client needs to create, open and publish on stream
// name; jsConsume to read it through a pull consumer.
func jsStream(name string) []string {
	return []string{"$JS.API.STREAM.INFO." + name, "$JS.API.STREAM.CREATE." + name, "$JS.API.STREAM.UPDATE." + name, name + ".>"}
}

func jsConsume(name string) []string {
	return []string{"$JS.API.CONSUMER.CREATE." + name, "$JS.API.CONSUMER.CREATE." + name + ".>", "$JS.API.CONSUMER.DURABLE.CREATE." + name + ".>",
		"$JS.API.CONSUMER.INFO." + name + ".>", "$JS.API.CONSUMER.MSG.NEXT." + name + ".>", "$JS.API.CONSUMER.DELETE." + name + ".>",
		"$JS.API.STREAM.PURGE." + name, "$JS.ACK." + name + ".>"}
}

// natsPermissions are role's publish and subscribe permissions (an empty
// Perm allows everything).
func natsPermissions(role string) (pub, sub jetstream.Perm) {
	inbox := jetstream.Perm{Allow: []string{"_INBOX.>"}}
	base := []string{"$JS.API.INFO"}
	switch role {
	case NATSAnalyzer:
		return jetstream.Perm{}, jetstream.Perm{}
	case NATSOpener:
		allow := append(append(append(base, jsStream(openQueueName)...), jsConsume(openQueueName)...),
			"$JS.API.STREAM.INFO."+openLogName, openLogName+".>")
		return jetstream.Perm{Allow: allow}, inbox
	case NATSShuffler, NATSShard:
		allow := append(append(base, jsStream(shardQueueName)...), jsConsume(shardQueueName)...)
		return jetstream.Perm{Allow: allow}, inbox
	}
	return jetstream.Perm{Allow: []string{"_NONE_"}}, jetstream.Perm{Allow: []string{"_NONE_"}}
}

// NATSServerConf is the authorization block of an external nats-server's
// configuration admitting users (nkeys with permissions).
func NATSServerConf(users []jetstream.User) string {
	var b strings.Builder
	b.WriteString("# shufflefl: the deployment's NATS users (written by 'shufflefl certs').\n")
	b.WriteString("# Include it in the server's configuration; every connection must prove one of these keys.\n")
	b.WriteString("jetstream: enabled\nauthorization {\n  users = [\n")
	list := func(xs []string) string {
		q := make([]string, len(xs))
		for i, x := range xs {
			q[i] = fmt.Sprintf("%q", x)
		}
		sort.Strings(q)
		return "[" + strings.Join(q, ", ") + "]"
	}
	for _, u := range users {
		fmt.Fprintf(&b, "    # %s\n    { nkey: %q", u.Name, u.NKey)
		if len(u.Publish.Allow)+len(u.Subscribe.Allow) > 0 {
			b.WriteString(", permissions: {")
			if len(u.Publish.Allow) > 0 {
				fmt.Fprintf(&b, " publish: { allow: %s }", list(u.Publish.Allow))
			}
			if len(u.Subscribe.Allow) > 0 {
				if len(u.Publish.Allow) > 0 {
					b.WriteString(",") // nats-server's map entries need a separator on one line
				}
				fmt.Fprintf(&b, " subscribe: { allow: %s }", list(u.Subscribe.Allow))
			}
			b.WriteString(" }")
		}
		b.WriteString(" }\n")
	}
	b.WriteString("  ]\n}\n")
	return b.String()
}

// natsSeedOption is the connection option proving role's key from the
// credentials directory dir, or none when dir holds no key of it (a
// deployment made before keys existed, or an external server without
// authentication: the server then decides), with natsCAOption's.
func natsSeedOption(dir, role string) ([]jetstream.ConnOption, error) {
	if dir == "" {
		return nil, nil
	}
	opts := natsCAOption(dir)
	path := NATSSeedFile(dir, role)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return opts, nil
	}
	return append(opts, jetstream.WithUserSeedFile(path)), nil
}

// natsCAOption makes a connection require TLS verified against the CA of
// the credentials directory dir, when it has one.
func natsCAOption(dir string) []jetstream.ConnOption {
	if _, err := os.Stat(NATSCAFile(dir)); err != nil {
		return nil
	}
	return []jetstream.ConnOption{jetstream.WithRootCAFile(NATSCAFile(dir))}
}
