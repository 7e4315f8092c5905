package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/shufflefl/shufflefl/transport/jetstream"
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
// permissions for an external nats-server.

// NATS roles (the names of their key files).
const (
	NATSAnalyzer = "analyzer"
	NATSOpener   = "opener"
	NATSShuffler = "shuffler"
	NATSShard    = "shard"
)

// natsRoles are the roles a key directory holds, in a fixed order.
var natsRoles = []string{NATSAnalyzer, NATSOpener, NATSShuffler, NATSShard}

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
	return os.WriteFile(filepath.Join(nd, "nats-server.conf"), []byte(NATSServerConf(users)), 0o644)
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
// authentication: the server then decides).
func natsSeedOption(dir, role string) ([]jetstream.ConnOption, error) {
	if dir == "" {
		return nil, nil
	}
	path := NATSSeedFile(dir, role)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return []jetstream.ConnOption{jetstream.WithUserSeedFile(path)}, nil
}
