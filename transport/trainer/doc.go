// Package trainer runs a client's local training in another program: the
// user's trainer process, written in any language or framework, which
// speaks the trainer protocol (docs/TRAINER.md) over its standard input and
// output. The process receives the global model and a client's example
// indices and returns the client's update; everything that makes the
// update private (clipping, the local randomizer, sealing, shuffling and
// the accountant) stays with the caller, so the process never sees noise
// or another client's update.
//
// The package has two halves: the frame codec (Frame, WriteFrame,
// ReadFrame and the messages Hello, Ready, TrainRequest, UpdateHeader and
// ErrorMessage), which is pure and bounds-checked, and Process, which
// starts the program, handshakes, sends train requests under a deadline,
// checks the answers (length, finiteness) and kills the program by its
// process id on Close. Every failure of the process wraps ErrTrainer.
package trainer
