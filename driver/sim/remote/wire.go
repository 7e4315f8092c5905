package remote

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/protocol"
)

// The messages between a coordinator and its remote workers. The run's and
// a round's settings are gob-encoded (gob writes a float64's bits exactly);
// tasks and results, one per block, have a small binary form in which every
// float64 travels as its 64 bits, so that a block's partial aggregate
// reaches the coordinator bit for bit as the worker computed it.

// wireVersion is the first byte of a task or result.
const wireVersion = 1

// runSpec is what a worker needs to build the run's engine itself: the
// settings and the budgets the coordinator's engine was built from (one
// per client, or Uniform, the budget every client has), and a fingerprint
// of the calibrated engine that the worker's must match.
type runSpec struct {
	Config      round.Config
	Budgets     []protocol.Budget
	Uniform     *protocol.Budget
	Fingerprint uint64
}

// budgets returns the run's budgets as the coordinator's engine was given
// them; given is false when the spec has none (they are then resolved
// from the configuration).
func (rs runSpec) budgets() (b round.ClientBudgets, given bool) {
	switch {
	case rs.Uniform != nil:
		return round.UniformBudgets(rs.Config.Clients, *rs.Uniform), true
	case rs.Budgets != nil:
		return round.ListBudgets(rs.Budgets), true
	}
	return round.ClientBudgets{}, false
}

// roundSpec is what a round's blocks share: the round's shape and the
// global model the clients train from.
type roundSpec struct {
	Round   int
	Shape   protocol.Shape
	Weights []float64
}

// blockTask asks a worker for the partial aggregate of one block of a
// round's participants.
type blockTask struct {
	Run     string
	Round   int
	Block   int
	Clients []int
}

// blockResult is a worker's answer to a blockTask: the block's partial
// aggregate, or why it could not be computed, and the CPU time the block's
// clients took.
type blockResult struct {
	Run                      string
	Round                    int
	Block                    int
	Err                      string
	TrainNS, EncodeNS, AggNS int64
	Agg                      *protocol.Aggregate
}

func gobEncode(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func gobDecode(data []byte, v any) error {
	return gob.NewDecoder(bytes.NewReader(data)).Decode(v)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func (t *blockTask) marshal() []byte {
	b := []byte{wireVersion}
	b = appendString(b, t.Run)
	b = binary.AppendUvarint(b, uint64(t.Round))
	b = binary.AppendUvarint(b, uint64(t.Block))
	b = binary.AppendUvarint(b, uint64(len(t.Clients)))
	for _, c := range t.Clients {
		b = binary.AppendUvarint(b, uint64(c))
	}
	return b
}

func (t *blockTask) unmarshal(data []byte) error {
	r := wireReader{b: data}
	r.version()
	t.Run = r.string()
	t.Round, t.Block = r.int(), r.int()
	n := r.count(1)
	t.Clients = make([]int, n)
	for i := range t.Clients {
		t.Clients[i] = r.int()
	}
	return r.done("block task")
}

func (res *blockResult) marshal() []byte {
	b := []byte{wireVersion}
	b = appendString(b, res.Run)
	b = binary.AppendUvarint(b, uint64(res.Round))
	b = binary.AppendUvarint(b, uint64(res.Block))
	b = appendString(b, res.Err)
	for _, ns := range []int64{res.TrainNS, res.EncodeNS, res.AggNS} {
		b = binary.AppendUvarint(b, uint64(max(ns, 0)))
	}
	if res.Err != "" {
		return b
	}
	a := res.Agg
	b = binary.AppendUvarint(b, uint64(a.Reports))
	b = binary.AppendUvarint(b, uint64(a.Dim()))
	for _, v := range a.Sum {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	for _, c := range a.Count {
		b = binary.AppendUvarint(b, uint64(c))
	}
	b = binary.AppendUvarint(b, uint64(len(a.Meta)))
	for _, v := range a.Meta {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// unmarshal decodes a result; its aggregate, if any, is written into agg
// (reset first), whose dimension it must have.
func (res *blockResult) unmarshal(data []byte, agg *protocol.Aggregate) error {
	r := wireReader{b: data}
	r.version()
	res.Run = r.string()
	res.Round, res.Block = r.int(), r.int()
	res.Err = r.string()
	res.TrainNS, res.EncodeNS, res.AggNS = int64(r.int()), int64(r.int()), int64(r.int())
	if res.Err != "" || r.err != nil {
		return r.done("block result")
	}
	agg.Reset()
	agg.Reports = int64(r.int())
	if d := r.int(); r.err == nil && d != agg.Dim() {
		return fmt.Errorf("block result of dimension %d, the model's is %d", d, agg.Dim())
	}
	for j := range agg.Sum {
		agg.Sum[j] = r.float()
	}
	for j := range agg.Count {
		agg.Count[j] = int64(r.int())
	}
	n := r.count(8)
	for range n {
		agg.Meta = append(agg.Meta, r.float())
	}
	res.Agg = agg
	return r.done("block result")
}

// wireReader reads a task or result, remembering the first error.
type wireReader struct {
	b   []byte
	err error
}

var errShort = errors.New("truncated")

func (r *wireReader) version() {
	if len(r.b) == 0 || r.b[0] != wireVersion {
		r.err = fmt.Errorf("not a version-%d message", wireVersion)
		return
	}
	r.b = r.b[1:]
}

func (r *wireReader) int() int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > math.MaxInt64 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

// count reads a length whose items take at least size bytes each.
func (r *wireReader) count(size int) int {
	n := r.int()
	if r.err == nil && n > len(r.b)/size {
		r.err = errShort
		return 0
	}
	return n
}

func (r *wireReader) string() string {
	n := r.count(1)
	if r.err != nil {
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *wireReader) float() float64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.err = errShort
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

func (r *wireReader) done(what string) error {
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes left over", len(r.b))
	}
	if r.err != nil {
		return fmt.Errorf("%s: %w", what, r.err)
	}
	return nil
}
