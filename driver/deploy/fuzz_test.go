package deploy

import (
	"testing"

	"github.com/shufflefl/shufflefl/role"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// FuzzSubmission feeds the shuffler's decoding of a submission — the
// sealed headers (seal.Parse), the wire labels, and the role's label rules
// on a probe — arbitrary bytes: it must answer with a status or accept,
// never panic, and accept only messages whose header matches the round and
// the label.
func FuzzSubmission(f *testing.F) {
	cfg := testConfig("ss-double", 4, 1)
	st, err := NewSetup(cfg, testSplit(f, cfg), "fuzz")
	if err != nil {
		f.Fatal(err)
	}
	key, err := seal.GenerateKey(seal.DefaultSuite)
	if err != nil {
		f.Fatal(err)
	}
	sl, _ := seal.NewSealer(key.Public(), "fuzz")
	good, _ := sl.Seal(1, seal.Coord(3), []float64{1})
	meta, _ := sl.Seal(1, seal.Meta, []float64{1})
	f.Add(good, uint32(3), int64(1))
	f.Add(meta, uint32(0), int64(1))
	f.Add([]byte("SF"), uint32(0), int64(2))
	f.Add(good[:30], uint32(3), int64(1))
	s := &Shuffler{st: st, cfg: ShufflerConfig{AnalyzerKey: key.Public()}}
	f.Fuzz(func(t *testing.T, ct []byte, label uint32, round int64) {
		if round < 0 {
			return // SubmitReportRequest.Validate refuses it before the handler
		}
		msgs, err := s.parse(round, []*wire.SealedMessage{{Label: label, Ciphertext: ct}})
		if err != nil {
			if _, ok := wire.DetailOf(err); !ok {
				t.Fatalf("refusal without a detail: %v", err)
			}
			return
		}
		env, perr := seal.Parse(ct)
		if perr != nil || int64(env.Round) != round || wireLabel(env.Label) != label {
			t.Fatalf("accepted a message whose header does not match: %v", perr)
		}
		if round >= 1 {
			if live, err := role.NewShuffler[[]byte](st.Proto, st.Shape(int(round)), 0); err == nil {
				_ = live.Check(msgs)
			}
		}
	})
}
