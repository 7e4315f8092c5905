package sim

import (
	"encoding/binary"
	"hash/crc64"
	"math"
)

// Fingerprint digests what the engine calibrated before round 1 (protocol,
// dimension, every client's budget) and the clients' data (the training
// examples and every client's shard): two engines built from the same
// settings and data by the same code have the same fingerprint. It reads
// the whole training set once.
func (e *Engine) Fingerprint() uint64 {
	h := crc64.New(crc64.MakeTable(crc64.ECMA))
	name := e.proto.Name()
	b := append(binary.AppendUvarint(nil, uint64(len(name))), name...)
	b = binary.AppendUvarint(b, uint64(e.model.Dim()))
	for i := range e.budgets.Len() {
		bu := e.budgets.At(i)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(bu.Epsilon))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(bu.Delta))
		if len(b) >= 1<<16 {
			h.Write(b)
			b = b[:0]
		}
	}
	h.Write(b)
	b = b[:0]
	for i, x := range e.trainEx.X {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		if len(b) >= 1<<16 || i == len(e.trainEx.X)-1 {
			h.Write(b)
			b = b[:0]
		}
	}
	h.Write(e.trainEx.Y)
	for c := range e.nshards {
		sh := e.part.Shard(c)
		b = binary.AppendUvarint(b[:0], uint64(len(sh)))
		for _, i := range sh {
			b = binary.AppendUvarint(b, uint64(i))
		}
		h.Write(b)
	}
	return h.Sum64()
}
