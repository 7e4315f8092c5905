package jetstream

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// freePort returns a loopback port nothing listens on (just closed).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// TestConnectWait: a service started before its NATS server waits for it
// with a line a retry and connects once the server is up; with no server
// it gives up after its deadline, saying so.
func TestConnectWait(t *testing.T) {
	port := freePort(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	var mu sync.Mutex
	var lines []string
	logf := func(f string, a ...any) { mu.Lock(); lines = append(lines, fmt.Sprintf(f, a...)); mu.Unlock() }

	t.Run("server comes up", func(t *testing.T) {
		go func() {
			time.Sleep(700 * time.Millisecond)
			s, err := Embedded(t.TempDir(), WithLoopbackPort(port))
			if err != nil {
				t.Error(err)
				return
			}
			t.Cleanup(s.Shutdown)
		}()
		c, err := ConnectWait(context.Background(), url, 20*time.Second, logf)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		mu.Lock()
		defer mu.Unlock()
		if len(lines) < 2 || !strings.Contains(lines[0], "waiting for NATS "+url+" (retry 1)") || !strings.Contains(lines[len(lines)-1], "connected") {
			t.Fatalf("log lines %q: want waiting lines, then connected", lines)
		}
	})
	t.Run("no server", func(t *testing.T) {
		start := time.Now()
		_, err := ConnectWait(context.Background(), fmt.Sprintf("nats://127.0.0.1:%d", freePort(t)), time.Second, nil)
		if err == nil || !strings.Contains(err.Error(), "connect deadline") {
			t.Fatalf("%v: want the deadline named", err)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("gave up after %v, deadline 1s", el)
		}
	})
}

// TestConnectWaitRefusedKey: a key the server refuses fails at once, not
// after the connect deadline.
func TestConnectWaitRefusedKey(t *testing.T) {
	_, pub, err := NewUserKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Embedded(t.TempDir(), WithLoopbackPort(0), WithUsers([]User{{Name: "only", NKey: pub}}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	other, _, _ := NewUserKey()
	start := time.Now()
	_, err = ConnectWait(context.Background(), s.URL(), time.Minute, nil, WithUserSeed(other))
	if err == nil || !strings.Contains(err.Error(), "refuses this key") || time.Since(start) > 10*time.Second {
		t.Fatalf("%v after %v: want the refused key named at once", err, time.Since(start))
	}
}
