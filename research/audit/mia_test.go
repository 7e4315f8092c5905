package audit

import (
	"math"
	"os"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
)

func miaConfig(t testing.TB, protocol string) MIAConfig {
	c := round.DefaultConfig()
	c.Dataset = "fashion-mnist-sample"
	c.Model = "mlp"
	c.Protocol = protocol
	c.Clients = 20
	c.SamplesPerClient = 10
	c.Rounds = 40
	c.LocalEpochs = 5
	c.Out = ""
	c.Workers = 2
	return MIAConfig{Train: c, Pool: sampleSplit(t), References: 1}
}

// TestMembershipInference: a non-private MLP on 200 examples overfits, and
// the loss attack must see it (AUC well above 1/2; with 200 members and
// 200 non-members the AUC of a useless attack has standard deviation
// about 0.03, so 0.6 is over 3 standard deviations). Through dp-central
// at a central epsilon of 1 the AUC must stay below the bound that epsilon
// implies (MaxAUC, 0.82) plus 3 standard deviations of the estimate.
func TestMembershipInference(t *testing.T) {
	if testing.Short() || os.Getenv("SHUFFLEFL_AUDIT_SLOW") == "" {
		t.Skip("trains four MLPs (about 30 s): set SHUFFLEFL_AUDIT_SLOW=1")
	}
	res, err := MembershipInference(miaConfig(t, "nonprivate"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("nonprivate: %+v", res)
	if res.Loss.AUC < 0.6 || res.Calibrated.AUC < 0.6 {
		t.Fatalf("no membership signal on an overfit model: %+v", res)
	}
	cfg := miaConfig(t, "dp-central")
	cfg.Train.TargetEpsilon = 1
	res, err = MembershipInference(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dp-central: %+v", res)
	if res.EpsClaimed == nil || res.Loss.AUC > res.AUCBound+0.09 || res.Calibrated.AUC > res.AUCBound+0.09 {
		t.Fatalf("membership signal through dp-central at eps 1: %+v", res)
	}
}

func TestMaxAUC(t *testing.T) {
	// eps = 0: no test beats chance. Pure eps: the curve min(e^eps f,
	// 1 - e^-eps (1-f)) meets at f = 1/(1+e^eps); its integral is
	// 1 - 1/(1+e^eps) ... computed independently below.
	if a := MaxAUC(0, 0); math.Abs(a-0.5) > 1e-4 {
		t.Fatalf("MaxAUC(0, 0) = %v", a)
	}
	for _, eps := range []float64{0.5, 1, 3} {
		e := math.Exp(eps)
		f0 := 1 / (1 + e)
		// int_0^f0 e f df + int_f0^1 (1 - (1-f)/e) df
		want := e*f0*f0/2 + (1 - f0) - (1-f0)*(1-f0)/(2*e)
		if a := MaxAUC(eps, 0); math.Abs(a-want) > 1e-4 {
			t.Fatalf("MaxAUC(%v, 0) = %v, want %v", eps, a, want)
		}
	}
}

func TestROC(t *testing.T) {
	r := NewROC([]float64{3, 4, 5}, []float64{0, 1, 2})
	if r.AUC != 1 || r.TPR1 != 1 || r.Advant != 1 {
		t.Fatalf("separable: %+v", r)
	}
	r = NewROC([]float64{1, 1}, []float64{1, 1})
	if r.AUC != 0.5 {
		t.Fatalf("ties: %+v", r)
	}
	r = NewROC([]float64{0, 2}, []float64{1, 3})
	if r.AUC != 0.25 {
		t.Fatalf("AUC %v, want 0.25", r.AUC)
	}
}
