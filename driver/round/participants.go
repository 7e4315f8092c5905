package round

import "fmt"

// Participants is a round's sample: the clients taking part, in increasing
// order. When the whole population takes part it is the range 0..n-1 and
// takes no memory per client; a sampled round's clients are listed.
type Participants struct {
	n   int   // the range 0..n-1 when ids is nil
	ids []int // the sampled clients, increasing
}

// AllClients is every client of a population of n.
func AllClients(n int) Participants { return Participants{n: n} }

// ParticipantList is the clients ids (increasing; kept, not copied).
func ParticipantList(ids []int) Participants { return Participants{n: len(ids), ids: ids} }

// Len is the number of participants.
func (p Participants) Len() int { return p.n }

// At is the i-th participant (0 <= i < Len).
func (p Participants) At(i int) int {
	if i < 0 || i >= p.n {
		panic(fmt.Sprintf("round: participant %d of %d", i, p.n))
	}
	if p.ids != nil {
		return p.ids[i]
	}
	return i
}

// Slice returns the participants as a list: the listed clients (not a
// copy), or a new list 0..n-1.
func (p Participants) Slice() []int {
	if p.ids != nil {
		return p.ids
	}
	out := make([]int, p.n)
	for i := range out {
		out[i] = i
	}
	return out
}

// Block returns participants lo..hi-1 as a new list.
func (p Participants) Block(lo, hi int) []int {
	out := make([]int, hi-lo)
	for i := range out {
		out[i] = p.At(lo + i)
	}
	return out
}
