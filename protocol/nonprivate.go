package protocol

import (
	"math/rand/v2"
)

func init() {
	Register("nonprivate", "FedAvg without privacy: clients send their updates as they are", func(p Params) (Protocol, error) {
		if err := extraKeys(p); err != nil {
			return nil, err
		}
		return NonPrivateFedAvg{}, nil
	})
	RegisterInfo("nonprivate", Info{
		Summary: "FedAvg without privacy: clients send their updates unchanged",
		Paper:   "NP-FL baseline (FedAvg, McMahan et al. 2017)",
		Budgets: "none",
	})
}

// NonPrivateFedAvg is plain federated averaging (McMahan et al. 2017): each
// client sends its update unchanged and the analyzer averages them. It is
// the NP-FL baseline of FLAME and the Non-Private row of APES Table 3.
type NonPrivateFedAvg struct{}

// Name implements Protocol.
func (NonPrivateFedAvg) Name() string { return "nonprivate" }

// Check implements Protocol.
func (NonPrivateFedAvg) Check(s Shape, _ []Budget) error { return s.Validate() }

// Mode implements Protocol: there is no shuffler.
func (NonPrivateFedAvg) Mode() ShuffleMode { return NoShuffle }

// Encode implements Protocol: the report is the update itself.
func (NonPrivateFedAvg) Encode(_ *rand.Rand, s Shape, update []float64, _ Budget, out *Report) error {
	if err := checkUpdate(s, update); err != nil {
		return err
	}
	out.Reset()
	out.Coords = nil
	out.Values = append(out.Values, update...)
	return nil
}

// Pad implements Protocol: no padding.
func (NonPrivateFedAvg) Pad(*rand.Rand, Shape, []int64, func(int, float64)) error { return nil }

// Estimate implements Protocol: the per-coordinate mean.
func (NonPrivateFedAvg) Estimate(_ *rand.Rand, s Shape, agg *Aggregate, dst []float64) error {
	return meanEstimate(s, agg, dst)
}

// Account implements Protocol: no guarantee.
func (NonPrivateFedAvg) Account(Shape, []Budget) (Privacy, error) { return NonPrivate(), nil }
