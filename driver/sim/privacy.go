package sim

import (
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/privacy/account"
)

// PrivacyPlan returns the run's pre-flight privacy statement.
func (e *Engine) PrivacyPlan() round.Plan { return e.plan }

// Accountant returns the run's stateful accountant (nil for non-private
// protocols): every round that happened, composed.
func (e *Engine) Accountant() *account.Accountant { return e.acct }

// Halted returns why the run stopped before its planned rounds ("" if it
// did not).
func (e *Engine) Halted() string { return e.halted }
