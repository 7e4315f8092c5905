package rundir

import (
	"testing"

	"github.com/shufflefl/shufflefl/transport/jetstream"
)

// TestWorkersServerClosed: the embedded server of 'run --worker-procs'
// admits the run's own key (the one its workers get) and refuses a
// connection without it.
func TestWorkersServerClosed(t *testing.T) {
	var s Workers
	var stops []func()
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}()
	url, _, err := s.connect(&stops)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := jetstream.Connect(url); err == nil {
		c.Close()
		t.Fatal("the workers' server admitted a connection without a key")
	}
	c, err := jetstream.Connect(url, jetstream.WithUserSeedFile(s.seedFile))
	if err != nil {
		t.Fatalf("the run's key: %v", err)
	}
	c.Close()
}
