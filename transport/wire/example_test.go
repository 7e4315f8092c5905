package wire_test

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// A round announcement with one model: encode, decode with validation, and
// read the weights back.
func Example() {
	m, err := wire.NewModel("global", []float64{0.25, -1, 3})
	if err != nil {
		panic(err)
	}
	ann := &wire.RoundAnnouncement{
		Round: 1, RunId: "run-1", Protocol: "apes", Models: []*wire.Model{m},
		DeadlineUnixNano: 1_800_000_000_000_000_000, TtlMillis: 30_000, MinReports: 50, SamplingRate: 0.2,
		AnalyzerPublicKey: make([]byte, 32), HpkeSuite: "X25519-HKDF-SHA256/HKDF-SHA256/AES-128-GCM",
	}
	b, _ := proto.Marshal(ann)

	var got wire.RoundAnnouncement
	if err := wire.Unmarshal(b, &got); err != nil {
		panic(err)
	}
	w, _ := got.Models[0].Float64s()
	fmt.Println(got.Protocol, w)

	got.SamplingRate = 0 // an invalid announcement
	err = got.Validate()
	fmt.Println(errors.Is(err, checks.ErrInvalid), err)
	// Output:
	// apes [0.25 -1 3]
	// true wire: RoundAnnouncement.sampling_rate: invalid parameter: must be in (0, 1], got 0
}
