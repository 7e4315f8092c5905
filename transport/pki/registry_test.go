package pki

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/checks"
)

func TestRegistryRoundTrip(t *testing.T) {
	reg := NewRegistry()
	for i, id := range []string{"client-2", "client-1", "client-10"} {
		if err := reg.Add(id, testClient(t, id, byte(i+1)).Public()); err != nil {
			t.Fatal(err)
		}
	}
	b, err := reg.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseRegistry(b)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.IDs(), ",") != "client-1,client-10,client-2" || got.Len() != 3 {
		t.Errorf("ids %v", got.IDs())
	}
	for _, id := range reg.IDs() {
		a, _ := reg.Key(id)
		b, ok := got.Key(id)
		if !ok || !a.Equal(b) {
			t.Errorf("%s: key changed", id)
		}
	}
}

func TestRegistryRejects(t *testing.T) {
	k1 := testClient(t, "a", 1).Public()
	reg := NewRegistry()
	if err := reg.Add("a", k1); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() error{
		"duplicate id":  func() error { return reg.Add("a", testClient(t, "a", 2).Public()) },
		"duplicate key": func() error { return reg.Add("b", k1) },
		"bad id":        func() error { return reg.Add("a/b", testClient(t, "x", 3).Public()) },
		"short key":     func() error { return reg.Add("c", k1[:31]) },
	} {
		if err := f(); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	good := `{"format":"shufflefl-client-registry","version":1,"clients":[{"id":"a","ed25519":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}]}`
	if _, err := ParseRegistry([]byte(good)); err != nil {
		t.Fatalf("good registry: %v", err)
	}
	for name, data := range map[string]string{
		"empty":          "",
		"not JSON":       "clients",
		"wrong format":   strings.Replace(good, "shufflefl-client-registry", "x", 1),
		"version 2":      strings.Replace(good, `"version":1`, `"version":2`, 1),
		"unknown field":  strings.Replace(good, `"version":1`, `"version":1,"extra":0`, 1),
		"trailing data":  good + "{}",
		"short key":      strings.Replace(good, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "AAAA", 1),
		"not base64":     strings.Replace(good, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "!!!!", 1),
		"bad id":         strings.Replace(good, `"id":"a"`, `"id":"a b"`, 1),
		"duplicate id":   strings.Replace(good, `}]}`, `},{"id":"a","ed25519":"AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}]}`, 1),
		"duplicate key":  strings.Replace(good, `}]}`, `},{"id":"b","ed25519":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}]}`, 1),
		"clients object": `{"format":"shufflefl-client-registry","version":1,"clients":{}}`,
	} {
		if _, err := ParseRegistry([]byte(data)); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestClientKeyPEM(t *testing.T) {
	s := testClient(t, "a", 1)
	b, err := EncodeKeyPEM(s.key)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ParseKeyPEM(b)
	if err != nil {
		t.Fatal(err)
	}
	if ek, ok := k.(ed25519.PrivateKey); !ok || !ek.Equal(s.key) {
		t.Errorf("Ed25519 key round trip: %T", k)
	}
	ck, err := ParseClientKeyPEM(b)
	if err != nil || !ck.Equal(s.key) {
		t.Errorf("ParseClientKeyPEM: %v", err)
	}
	ca, err := NewCA("x", t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, _ := EncodeKeyPEM(ca.Key)
	if _, err := ParseClientKeyPEM(ecKey); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("ECDSA key as a client key: %v", err)
	}
}
