package sim

import "github.com/shufflefl/shufflefl/driver/round"

// Budgets returns every client's budget for one round, as the rounds spend
// it (after the calibration to the run's target).
func (e *Engine) Budgets() round.ClientBudgets { return e.budgets }
