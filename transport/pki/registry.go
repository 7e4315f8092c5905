package pki

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/shufflefl/shufflefl/checks"
)

// registryFormat names the registry's JSON format.
const registryFormat = "shufflefl-client-registry"

// Registry maps client ids to their registered Ed25519 public keys: the
// shuffler's list of who may report. No two clients share a key (one key
// holder must not act as two clients). A Registry is not safe for
// concurrent modification; a Verifier only reads it.
type Registry struct {
	keys  map[string]ed25519.PublicKey
	owner map[string]string // public key -> id
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{keys: map[string]ed25519.PublicKey{}, owner: map[string]string{}}
}

// Add registers client id with its public key. A duplicate id or key is an
// error.
func (r *Registry) Add(id string, pub ed25519.PublicKey) error {
	if err := CheckID(id); err != nil {
		return err
	}
	if len(pub) != ed25519.PublicKeySize {
		return checks.Invalidf("pki: client %s: Ed25519 public key has %d bytes, want %d", id, len(pub), ed25519.PublicKeySize)
	}
	if _, dup := r.keys[id]; dup {
		return checks.Invalidf("pki: client %s is registered twice", id)
	}
	if other, dup := r.owner[string(pub)]; dup {
		return checks.Invalidf("pki: clients %s and %s have the same public key", other, id)
	}
	r.keys[id] = append(ed25519.PublicKey(nil), pub...)
	r.owner[string(pub)] = id
	return nil
}

// Key returns the public key of client id.
func (r *Registry) Key(id string) (ed25519.PublicKey, bool) {
	k, ok := r.keys[id]
	return k, ok
}

// Len returns the number of registered clients.
func (r *Registry) Len() int { return len(r.keys) }

// IDs returns the registered ids in lexical order.
func (r *Registry) IDs() []string {
	ids := make([]string, 0, len(r.keys))
	for id := range r.keys {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

type registryJSON struct {
	Format  string        `json:"format"`
	Version int           `json:"version"`
	Clients []clientEntry `json:"clients"`
}

type clientEntry struct {
	ID      string `json:"id"`
	Ed25519 []byte `json:"ed25519"` // base64 (standard, padded)
}

// MarshalJSON encodes the registry, clients in lexical order:
//
//	{"format": "shufflefl-client-registry", "version": 1,
//	 "clients": [{"id": "client-000001", "ed25519": "BASE64"}, ...]}
func (r *Registry) MarshalJSON() ([]byte, error) {
	out := registryJSON{Format: registryFormat, Version: 1, Clients: []clientEntry{}}
	for _, id := range r.IDs() {
		out.Clients = append(out.Clients, clientEntry{ID: id, Ed25519: r.keys[id]})
	}
	return json.MarshalIndent(out, "", "  ")
}

// ParseRegistry decodes a registry written by MarshalJSON, strictly: the
// format name and version, no unknown fields, no trailing data, valid ids,
// 32-byte keys, no duplicate id or key.
func ParseRegistry(data []byte) (*Registry, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var in registryJSON
	if err := dec.Decode(&in); err != nil {
		return nil, checks.Invalidf("pki: client registry: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, checks.Invalidf("pki: client registry: trailing data after the JSON object")
	}
	if in.Format != registryFormat || in.Version != 1 {
		return nil, checks.Invalidf("pki: client registry: format %q version %d, want %q version 1", in.Format, in.Version, registryFormat)
	}
	r := NewRegistry()
	for i, c := range in.Clients {
		if err := r.Add(c.ID, c.Ed25519); err != nil {
			return nil, fmt.Errorf("pki: client registry entry %d: %w", i, err)
		}
	}
	return r, nil
}
