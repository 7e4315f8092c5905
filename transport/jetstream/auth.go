package jetstream

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// User is one identity the server admits: an NKey (Ed25519) public key, a
// name for errors and logs, and what it may publish and subscribe to.
// A server with users refuses every connection that does not prove one of
// their keys (the NKey challenge-response of the NATS protocol).
type User struct {
	Name string
	// NKey is the user's public NKey ("U...").
	NKey string
	// Publish and Subscribe are the subjects it may publish to and
	// subscribe to: Allow lists what is allowed (empty: everything), Deny
	// what is refused even if allowed.
	Publish, Subscribe Perm
}

// Perm is a subject permission: allowed and denied subject patterns
// (NATS wildcards "*" and ">").
type Perm struct {
	Allow, Deny []string
}

// NewUserKey returns a fresh user NKey pair: its seed (the secret, "SU...")
// and its public key.
func NewUserKey() (seed []byte, public string, err error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, "", fmt.Errorf("jetstream: new user key: %w", err)
	}
	seed, err = kp.Seed()
	if err != nil {
		return nil, "", fmt.Errorf("jetstream: new user key: %w", err)
	}
	public, err = kp.PublicKey()
	if err != nil {
		return nil, "", fmt.Errorf("jetstream: new user key: %w", err)
	}
	return seed, public, nil
}

// PublicKeyOf returns the public key of a user seed.
func PublicKeyOf(seed []byte) (string, error) {
	kp, err := nkeys.FromSeed(seed)
	if err != nil {
		return "", fmt.Errorf("jetstream: user seed: %w", err)
	}
	defer kp.Wipe()
	return kp.PublicKey()
}

// WithUsers makes the server admit only the given users, each with its
// permissions; the in-process connections of [Server.Connect] prove an
// internal key of the server's own with every permission. Without it the
// server admits anyone who reaches it.
func WithUsers(users []User) Option {
	return func(c *serverConfig) error {
		if len(users) == 0 {
			return errors.New("no users")
		}
		for _, u := range users {
			if !nkeys.IsValidPublicUserKey(u.NKey) {
				return fmt.Errorf("user %q: %q is not a public user NKey", u.Name, u.NKey)
			}
		}
		c.users = append([]User(nil), users...)
		return nil
	}
}

// nkeyUsers returns the server's NKey users: users plus the internal one.
func nkeyUsers(users []User, internal string) []*server.NkeyUser {
	out := []*server.NkeyUser{{Nkey: internal}}
	for _, u := range users {
		out = append(out, &server.NkeyUser{Nkey: u.NKey, Permissions: &server.Permissions{
			Publish:   subjectPerm(u.Publish),
			Subscribe: subjectPerm(u.Subscribe),
			// Replies to requests the user makes need no grant of their
			// own (the _INBOX is allowed by Subscribe).
		}})
	}
	return out
}

func subjectPerm(p Perm) *server.SubjectPermission {
	if len(p.Allow) == 0 && len(p.Deny) == 0 {
		return nil
	}
	return &server.SubjectPermission{Allow: p.Allow, Deny: p.Deny}
}

// WithUserSeed makes the connection authenticate with the user NKey seed
// (the contents of a seed file: the first line that starts with "SU").
func WithUserSeed(seed []byte) ConnOption {
	return func(c *connConfig) error {
		s, err := parseSeed(seed)
		if err != nil {
			return err
		}
		c.seed = s
		return nil
	}
}

// WithUserSeedFile is WithUserSeed with the seed read from path.
func WithUserSeedFile(path string) ConnOption {
	return func(c *connConfig) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("NATS user seed: %w", err)
		}
		s, err := parseSeed(b)
		if err != nil {
			return fmt.Errorf("NATS user seed %s: %w", path, err)
		}
		c.seed = s
		return nil
	}
}

// parseSeed finds the user seed in b and checks it.
func parseSeed(b []byte) ([]byte, error) {
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "SU") {
			if _, err := nkeys.FromSeed([]byte(line)); err != nil {
				return nil, fmt.Errorf("not a user NKey seed: %w", err)
			}
			return []byte(line), nil
		}
	}
	return nil, errors.New("no user NKey seed (a line starting with SU)")
}

// nkeyOption is the nats option that proves seed's key.
func nkeyOption(seed []byte) (nats.Option, error) {
	kp, err := nkeys.FromSeed(seed)
	if err != nil {
		return nil, fmt.Errorf("jetstream: user seed: %w", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, err
	}
	return nats.Nkey(pub, func(nonce []byte) ([]byte, error) { return kp.Sign(nonce) }), nil
}
