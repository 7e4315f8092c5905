package wire

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shufflefl/shufflefl/checks"
)

// Errorf returns a gRPC status error with code and an ErrorDetail (reason,
// field, round, and the formatted message) attached: what every shufflefl
// server returns instead of a bare status. Use round -1 when no round is
// concerned.
func Errorf(code codes.Code, reason Reason, field string, round int64, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	if len(msg) > MaxMessageTextBytes {
		msg = msg[:MaxMessageTextBytes]
	}
	if len(field) > MaxIDBytes {
		field = field[:MaxIDBytes]
	}
	st := status.New(code, msg)
	if d, err := st.WithDetails(&ErrorDetail{Reason: reason, Field: field, Message: msg, Round: round}); err == nil {
		st = d
	}
	return st.Err()
}

// StatusOf converts a Validate or Unmarshal error into the status a server
// returns: InvalidArgument with REASON_MALFORMED, or ResourceExhausted with
// REASON_TOO_LARGE for size violations, naming the field (Unmarshal's
// bytes that do not decode: InvalidArgument, REASON_MALFORMED, no field).
// An error that already is a status is returned unchanged; nil stays nil;
// anything else becomes Internal with REASON_INTERNAL.
func StatusOf(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		code := codes.InvalidArgument
		if fe.Reason() == Reason_REASON_TOO_LARGE {
			code = codes.ResourceExhausted
		}
		return Errorf(code, fe.Reason(), fe.Field, -1, "%v", err)
	}
	if errors.Is(err, ErrTooLarge) {
		return Errorf(codes.ResourceExhausted, Reason_REASON_TOO_LARGE, "", -1, "%v", err)
	}
	if errors.Is(err, checks.ErrInvalid) {
		return Errorf(codes.InvalidArgument, Reason_REASON_MALFORMED, "", -1, "%v", err)
	}
	return Errorf(codes.Internal, Reason_REASON_INTERNAL, "", -1, "%v", err)
}

// DetailOf returns the ErrorDetail attached to a status error, if any (and
// valid).
func DetailOf(err error) (*ErrorDetail, bool) {
	st, ok := status.FromError(err)
	if !ok {
		return nil, false
	}
	for _, d := range st.Details() {
		if e, ok := d.(*ErrorDetail); ok && e.Validate() == nil {
			return e, true
		}
	}
	return nil, false
}
