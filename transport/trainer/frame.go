package trainer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// Version is the version of the trainer protocol this package speaks: the
// "protocol" field of Hello and Ready. A trainer that answers with another
// version is refused.
const Version = 1

// Kind is a frame's type byte.
type Kind byte

// The kinds of frame. shufflefl sends Hello, Train and Bye; the trainer
// answers Hello with Ready, Train with Update, and either with Error.
const (
	KindHello  Kind = 'H' // shufflefl → trainer: the run (Hello)
	KindReady  Kind = 'R' // trainer → shufflefl: the handshake's answer (Ready)
	KindTrain  Kind = 'T' // shufflefl → trainer: one client's local training (TrainRequest), payload the global model
	KindUpdate Kind = 'U' // trainer → shufflefl: the client's update (UpdateHeader), payload the update
	KindError  Kind = 'E' // trainer → shufflefl: the request failed (ErrorMessage)
	KindBye    Kind = 'Q' // shufflefl → trainer: exit now (empty header)

	KindEvaluate Kind = 'V' // shufflefl → trainer: evaluate a model on the test set (EvaluateRequest), payload the model
	KindMetrics  Kind = 'M' // trainer → shufflefl: the evaluation's result (EvaluateResult)
)

// String returns the kind's name ("hello", "train", ...).
func (k Kind) String() string {
	switch k {
	case KindHello:
		return "hello"
	case KindReady:
		return "ready"
	case KindTrain:
		return "train"
	case KindUpdate:
		return "update"
	case KindError:
		return "error"
	case KindBye:
		return "bye"
	case KindEvaluate:
		return "evaluate"
	case KindMetrics:
		return "metrics"
	}
	return fmt.Sprintf("kind 0x%02x", byte(k))
}

// A Frame is one message of the protocol: a kind, a JSON object (the
// header) and a payload of little-endian float32 values.
//
// On the wire a frame is
//
//	length   uint32, big-endian: the number of bytes that follow
//	kind     1 byte
//	hlen     uint32, big-endian: the header's length in bytes
//	header   hlen bytes, a UTF-8 JSON object
//	payload  length − 5 − hlen bytes: float32 values, little-endian
type Frame struct {
	Kind    Kind
	Header  []byte
	Payload []float32
}

// frameOverhead is the kind byte and the header length.
const frameOverhead = 5

// ErrFrame is wrapped by every error of a malformed or oversized frame.
var ErrFrame = errors.New("malformed trainer frame")

// FrameLimit is the largest frame length (the value of the length prefix)
// ReadFrame accepts for a model of dim parameters: the float32 payload of
// the model plus maxHeader bytes of header.
func FrameLimit(dim int) int { return frameOverhead + MaxHeader + 4*dim }

// MaxHeader bounds a frame's JSON header (16 MiB): enough for the example
// indices of a client of two million examples.
const MaxHeader = 16 << 20

// AppendFrame appends f's encoding to b.
func AppendFrame(b []byte, f Frame) []byte {
	n := frameOverhead + len(f.Header) + 4*len(f.Payload)
	b = slices.Grow(b, 4+n)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = append(b, byte(f.Kind))
	b = binary.BigEndian.AppendUint32(b, uint32(len(f.Header)))
	b = append(b, f.Header...)
	at := len(b)
	b = b[:at+4*len(f.Payload)]
	for i, v := range f.Payload {
		binary.LittleEndian.PutUint32(b[at+4*i:], math.Float32bits(v))
	}
	return b
}

// WriteFrame writes f to w in one Write. A header longer than MaxHeader is
// an error wrapping ErrFrame, and nothing is written.
func WriteFrame(w io.Writer, f Frame) error {
	if len(f.Header) > MaxHeader {
		return fmt.Errorf("%w: a %s header of %d bytes (at most %d)", ErrFrame, f.Kind, len(f.Header), MaxHeader)
	}
	if n := frameOverhead + len(f.Header) + 4*len(f.Payload); n > math.MaxUint32 {
		return fmt.Errorf("%w: a %s frame of %d bytes does not fit its length prefix", ErrFrame, f.Kind, n)
	}
	_, err := w.Write(AppendFrame(nil, f))
	return err
}

// ReadFrame reads one frame from r. A length prefix beyond limit (see
// FrameLimit) is refused before anything is allocated; a frame whose header
// length or payload does not fit its length, or whose header is larger
// than MaxHeader, is an error wrapping ErrFrame. An io.EOF before the first
// byte is returned as io.EOF, a frame cut short as io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, limit int) (Frame, error) {
	body, err := readBody(r, limit, nil)
	if err != nil {
		return Frame{}, err
	}
	return decodeBody(body, nil)
}

// readBody reads a frame's length prefix and body, into buf if it is large
// enough; see ReadFrame.
func readBody(r io.Reader, limit int, buf []byte) ([]byte, error) {
	var pre [4]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, err
	}
	n := int64(binary.BigEndian.Uint32(pre[:]))
	if n < frameOverhead {
		return nil, fmt.Errorf("%w: length %d is shorter than a frame's %d fixed bytes", ErrFrame, n, frameOverhead)
	}
	if n > int64(limit) {
		return nil, fmt.Errorf("%w: length %d exceeds the %d bytes this model's frames can need", ErrFrame, n, limit)
	}
	body := buf[:0]
	if int64(cap(buf)) < n {
		body = make([]byte, n)
	}
	body = body[:n]
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// DecodeBody decodes a frame's body: the bytes after its length prefix. It
// is ReadFrame without the reading; errors wrap ErrFrame.
func DecodeBody(body []byte) (Frame, error) { return decodeBody(body, nil) }

// decodeBody is DecodeBody with the payload decoded into payload's array
// if it is large enough. The header aliases body.
func decodeBody(body []byte, payload []float32) (Frame, error) {
	if len(body) < frameOverhead {
		return Frame{}, fmt.Errorf("%w: %d bytes is shorter than a frame's %d fixed bytes", ErrFrame, len(body), frameOverhead)
	}
	k := Kind(body[0])
	h := int64(binary.BigEndian.Uint32(body[1:5]))
	rest := int64(len(body) - frameOverhead)
	if h > MaxHeader {
		return Frame{}, fmt.Errorf("%w: a %s header of %d bytes (at most %d)", ErrFrame, k, h, MaxHeader)
	}
	if h > rest {
		return Frame{}, fmt.Errorf("%w: a %s header of %d bytes in a frame of %d", ErrFrame, k, h, rest)
	}
	p := rest - h
	if p%4 != 0 {
		return Frame{}, fmt.Errorf("%w: a %s payload of %d bytes is not a whole number of float32 values", ErrFrame, k, p)
	}
	f := Frame{Kind: k, Header: body[frameOverhead : frameOverhead+h]}
	if p > 0 {
		raw := body[frameOverhead+h:]
		f.Payload = payload[:0]
		if int64(cap(payload)) < p/4 {
			f.Payload = make([]float32, p/4)
		}
		f.Payload = f.Payload[:p/4]
		for i := range f.Payload {
			f.Payload[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	}
	return f, nil
}
