package trainer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"slices"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	for _, f := range []Frame{
		{Kind: KindBye, Header: []byte("{}")},
		{Kind: KindTrain, Header: []byte(`{"round":1,"client":2}`), Payload: []float32{0, -1.5, float32(math.Inf(1)), math.MaxFloat32}},
		{Kind: KindUpdate, Header: nil, Payload: []float32{1}},
		{Kind: Kind(0x7f)},
	} {
		var buf bytes.Buffer
		if err := WriteFrame(&buf, f); err != nil {
			t.Fatalf("%s: %v", f.Kind, err)
		}
		got, err := ReadFrame(&buf, FrameLimit(len(f.Payload)))
		if err != nil {
			t.Fatalf("%s: %v", f.Kind, err)
		}
		if got.Kind != f.Kind || !bytes.Equal(got.Header, f.Header) || !slices.Equal(got.Payload, f.Payload) {
			t.Errorf("%s: read %+v, wrote %+v", f.Kind, got, f)
		}
		if buf.Len() != 0 {
			t.Errorf("%s: %d bytes left after the frame", f.Kind, buf.Len())
		}
	}
}

// raw builds a frame body with the given length prefix, kind, header length
// and trailing bytes.
func raw(length, hlen uint32, rest []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, length)
	b = append(b, 'U')
	b = binary.BigEndian.AppendUint32(b, hlen)
	return append(b, rest...)
}

func TestReadFrameRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		in    []byte
		limit int
		want  error
	}{
		{"empty input", nil, 100, io.EOF},
		{"cut length", []byte{0, 0}, 100, io.ErrUnexpectedEOF},
		{"shorter than the fixed bytes", raw(4, 0, nil)[:8], 100, ErrFrame},
		{"longer than the model's frames", raw(1<<31, 0, nil), 100, ErrFrame},
		{"one past the limit", raw(101, 0, make([]byte, 96)), 100, ErrFrame},
		{"cut body", raw(20, 0, make([]byte, 3)), 100, io.ErrUnexpectedEOF},
		{"header past the frame", raw(9, 5, make([]byte, 4)), 100, ErrFrame},
		{"header beyond MaxHeader", raw(9, MaxHeader+1, make([]byte, 4)), 100, ErrFrame},
		{"payload not whole float32s", raw(8, 0, make([]byte, 3)), 100, ErrFrame},
	} {
		_, err := ReadFrame(bytes.NewReader(c.in), c.limit)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

func TestWriteFrameRefusesLargeHeader(t *testing.T) {
	var buf bytes.Buffer
	err := WriteFrame(&buf, Frame{Kind: KindTrain, Header: make([]byte, MaxHeader+1)})
	if !errors.Is(err, ErrFrame) || buf.Len() != 0 {
		t.Errorf("got %v and %d bytes written, want ErrFrame and nothing", err, buf.Len())
	}
}

func TestDecodeRefusesOtherKind(t *testing.T) {
	var r Ready
	if err := decode(Frame{Kind: KindUpdate, Header: []byte("{}")}, KindReady, &r); !errors.Is(err, ErrFrame) {
		t.Errorf("an update read as ready: %v", err)
	}
	if err := decode(Frame{Kind: KindReady, Header: []byte("{")}, KindReady, &r); !errors.Is(err, ErrFrame) {
		t.Errorf("a broken header: %v", err)
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add(AppendFrame(nil, Frame{Kind: KindUpdate, Header: []byte(`{"round":1}`), Payload: []float32{1, 2}}))
	f.Add(raw(9, 5, make([]byte, 4)))
	f.Add([]byte{0, 0, 0, 5, 'Q', 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		fr, err := ReadFrame(bytes.NewReader(in), FrameLimit(16))
		if err != nil {
			return
		}
		out := AppendFrame(nil, fr)
		if len(out) > len(in) || !bytes.Equal(out, in[:len(out)]) {
			t.Fatalf("frame %+v re-encodes to %x, read from %x", fr, out, in)
		}
		if len(fr.Payload) > 16+MaxHeader/4 {
			t.Fatalf("a payload of %d values past the limit", len(fr.Payload))
		}
	})
}
