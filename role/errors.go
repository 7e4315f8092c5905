package role

import "errors"

// Errors of the roles' state machines; test with errors.Is. Each is wrapped
// with the details of the refused operation.
var (
	// ErrOrder: an operation out of its protocol order (encode before the
	// charge is durable, a report for a round that is not open, a batch
	// for another round).
	ErrOrder = errors.New("out of order")
	// ErrDuplicateSender: a second submission from the same sender in a
	// round.
	ErrDuplicateSender = errors.New("second submission from a sender in this round")
	// ErrClosed: the round is closed (or void) and accepts nothing more.
	ErrClosed = errors.New("round is closed")
	// ErrTooFew: fewer senders than the minimum when the round closed; the
	// round is void and nothing is released.
	ErrTooFew = errors.New("too few reports: round void")
	// ErrReleased: the round's update was already released.
	ErrReleased = errors.New("round already released")
	// ErrBadMessage: a malformed submission (label outside the protocol's
	// range, a repeated label, a missing report).
	ErrBadMessage = errors.New("malformed message")
)
