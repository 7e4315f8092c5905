package fl

// EarlyStop implements early stopping on held-out clients (the
// group-privacy paper, Sections 5.1–5.3): the caller validates every Every
// rounds and reports the validation loss; after Patience consecutive
// validations without improvement the run should stop. The paper states
// patience in rounds (Section 5.1: 6 rounds, validating every round) or in
// validations (5.2: 30 validation rounds; 5.3: 5 validations every 5
// rounds = 25 rounds); here it counts validations, so Section 5.3 is
// Every = 5, Patience = 5. Patience 0 validates without ever stopping.
//
// Its fields are its whole state (plain data, so a checkpoint can keep it).
type EarlyStop struct {
	// Every and Patience are the validation interval (rounds) and the
	// number of validations without improvement after which to stop.
	Every    int `json:"every"`
	Patience int `json:"patience"`
	// BestLoss and BestRound are the lowest validation loss so far and its
	// round; Bad counts validations since then; Seen is false before the
	// first validation.
	BestLoss  float64 `json:"best_loss"`
	BestRound int     `json:"best_round"`
	Bad       int     `json:"bad"`
	Seen      bool    `json:"seen"`
}

// Due reports whether round (1-based) is a validation round.
func (e *EarlyStop) Due(round int) bool { return e.Every > 0 && round%e.Every == 0 }

// Observe records the validation loss of round and reports whether it
// improved on the best so far (strictly lower) and whether the run should
// stop. A NaN loss never improves.
func (e *EarlyStop) Observe(round int, loss float64) (improved, stop bool) {
	if loss == loss && (!e.Seen || loss < e.BestLoss) {
		e.BestLoss, e.BestRound, e.Bad, e.Seen = loss, round, 0, true
		return true, false
	}
	e.Bad++
	return false, e.Patience > 0 && e.Bad >= e.Patience
}

// Best returns the best validation loss and its round (0, 0 before any).
func (e *EarlyStop) Best() (loss float64, round int) { return e.BestLoss, e.BestRound }
