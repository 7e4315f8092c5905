package deploy

import (
	"testing"
	"time"
)

// TestShufflerFinishedAfterLastRound: the shuffler's Finished channel closes
// once the analyzer acknowledged the run's last round, not before (here two
// rounds nobody reports in, each void at its deadline), so that the service
// exits after the run instead of serving forever.
func TestShufflerFinishedAfterLastRound(t *testing.T) {
	h := newHarnessTimeout(t, testConfig("ss-double", 2, 2), 1, 300*time.Millisecond)
	h.waitFinished(t, 1)
	select {
	case <-h.sh.Finished():
		if h.an.Round() < 2 {
			t.Fatal("Finished closed after round 1 of 2")
		}
	default:
	}
	h.waitFinished(t, 2)
	select {
	case <-h.sh.Finished():
	case <-time.After(30 * time.Second):
		t.Fatal("Finished not closed after the last round")
	}
	if _, err := h.sh.PruneClosed(); err != nil {
		t.Fatal(err)
	}
}
