package crashtest

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

const childEnv = "SHUFFLEFL_CRASHTEST_CHILD"

// TestChild is the child: it writes numbered lines to descriptor 3 until
// killed, or exits at once when told to.
func TestChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("the child of TestKill")
	}
	out := os.NewFile(3, "acks")
	if mode == "exit" {
		fmt.Fprintln(out, "0")
		return
	}
	for i := 0; ; i++ {
		fmt.Fprintln(out, i)
		time.Sleep(time.Millisecond)
	}
}

func TestKill(t *testing.T) {
	n := 0
	if err := Kill("^TestChild$", []string{childEnv + "=run"}, 30*time.Millisecond, func(string) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no line collected")
	}
	// A child that ends by itself is an error, not a kill.
	err := Kill("^TestChild$", []string{childEnv + "=exit"}, time.Minute, func(string) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "ended by itself") {
		t.Fatalf("a child that exits: %v", err)
	}
	// add's error is returned.
	err = Kill("^TestChild$", []string{childEnv + "=run"}, 20*time.Millisecond, func(l string) error { return fmt.Errorf("bad line %s", l) })
	if err == nil || !strings.Contains(err.Error(), "bad line 0") {
		t.Fatalf("add's error: %v", err)
	}
}
