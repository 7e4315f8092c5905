package deploy

import (
	"errors"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

// TestSetupRefusesEarlyStopping: held-out validation clients are
// simulation-only; a deployment refuses them rather than run without them.
func TestSetupRefusesEarlyStopping(t *testing.T) {
	cfg := clusteredConfig("ifca-dp", 10, 1, map[string]float64{"k": 2, "nu": 1})
	cfg.HoldoutClients, cfg.ValidateEvery, cfg.Patience = 5, 1, 2
	_, err := NewSetup(cfg, testSplit(t, cfg), "holdout")
	if err == nil || !errors.Is(err, checks.ErrInvalid) || !strings.Contains(err.Error(), "simulation-only") {
		t.Fatalf("got %v, want a refusal of early stopping", err)
	}
}
