package wire

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/checks"
)

// Message is a generated message with its Validate method; every message
// of shufflefl.wire.v1 is one.
type Message interface {
	proto.Message
	Validate() error
}

// Unmarshal decodes b into m and validates it: the decoder for bytes from
// the network or from disk. b longer than DefaultMaxMessageBytes, bytes that
// are not a valid encoding, and a decoded message failing Validate all
// return errors wrapping checks.ErrInvalid (the latter a *FieldError).
func Unmarshal(b []byte, m Message) error {
	if len(b) > DefaultMaxMessageBytes {
		return fmt.Errorf("wire: decoding %T: %w", m, fmt.Errorf("%w (%w)",
			checks.Invalidf("%d bytes exceed %d", len(b), DefaultMaxMessageBytes), ErrTooLarge))
	}
	if err := proto.Unmarshal(b, m); err != nil {
		return fmt.Errorf("wire: decoding %T: %w", m, checks.Invalidf("%v", err))
	}
	return m.Validate()
}
