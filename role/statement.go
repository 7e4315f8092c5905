package role

import (
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
)

// Statement turns a round's Privacy into the accountant's record: round
// s.Round at the rate s.SampleRate(), sampled clients sampled, reporters
// of them reporting, released or not.
func Statement(s protocol.Shape, sampled, reporters int, released bool, p protocol.Privacy) account.Statement {
	return account.Statement{
		Round: s.Round, SampleRate: s.SampleRate(), Sampled: sampled, Reporters: reporters, Released: released,
		Epsilon: p.CentralEpsilon, Delta: p.CentralDelta, Components: p.Components, RDP: p.RDP, TV: p.TV, Bound: p.Bound,
		Approximate: p.Approximate,
	}
}
