package account

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// DefaultRDPOrders returns the Rényi orders used by SampledGaussianEpsilon:
// the grid of TensorFlow Privacy and Opacus (1.1, 1.2, ..., 10.9 and
// 12, 13, ..., 63) extended with the integer orders 11, 64, 80, 96, 128, 192,
// 256, 384 and 512, which help when the total RDP is very small. Every order
// yields a valid (epsilon, delta) statement, so more orders only tighten the
// minimum. The slice is a fresh copy.
func DefaultRDPOrders() []float64 {
	out := make([]float64, len(defaultOrders))
	copy(out, defaultOrders)
	return out
}

var defaultOrders = func() []float64 {
	var o []float64
	for x := 1; x < 100; x++ {
		o = append(o, 1+float64(x)/10)
	}
	for a := 11; a < 64; a++ {
		o = append(o, float64(a))
	}
	return append(o, 64, 80, 96, 128, 192, 256, 384, 512)
}()

// validateOrders checks that every order is finite and > 1 and that rdp has
// one entry per order (rdp may hold +Inf, meaning "no bound at this order").
func validateRDP(orders, rdp []float64) error {
	if len(orders) == 0 {
		return checks.Invalidf("need at least one Rényi order")
	}
	if len(rdp) != len(orders) {
		return checks.Invalidf("got %d RDP values for %d orders", len(rdp), len(orders))
	}
	for i, a := range orders {
		if err := checks.Finite(fmt.Sprintf("orders[%d]", i), a); err != nil {
			return err
		}
		if a <= 1 {
			return checks.Invalidf("orders[%d] must be > 1, got %v", i, a)
		}
		if math.IsNaN(rdp[i]) || rdp[i] < 0 {
			return checks.Invalidf("rdp[%d] must be >= 0 (or +Inf), got %v", i, rdp[i])
		}
	}
	return nil
}

// rdpEpsilon is the improved RDP-to-DP conversion at one order: an
// (alpha, rho)-RDP mechanism is (eps, delta)-DP for
//
//	eps = rho + log((alpha-1)/alpha) - (log delta + log alpha)/(alpha-1)
//
// (Balle, Berrada, Dupont, Hajek, Kenthapadi, Upadhyay and Wang 2020,
// Theorem 21; Canonne, Kamath and Steinke 2020, Proposition 12), clamped at 0.
// It is also (0, delta)-DP as soon as delta >= sqrt(1 - e^{-rho}): the KL
// divergence is at most rho (RDP is non-decreasing in the order) and the
// Bretagnolle–Huber inequality bounds the total variation distance, hence
// delta at eps = 0, by sqrt(1 - e^{-KL}).
func rdpEpsilon(alpha, rho, delta, logDelta float64) float64 {
	if -math.Expm1(-rho) <= delta*delta {
		return 0
	}
	e := rho + math.Log1p(-1/alpha) - (logDelta+math.Log(alpha))/(alpha-1)
	return math.Max(e, 0)
}

// RDPToEpsilon converts a Rényi-DP curve (rdp[i] at orders[i]) into the
// smallest epsilon such that the mechanism is (epsilon, delta)-DP, by the
// improved conversion of Balle et al. 2020 (Theorem 21) / Canonne, Kamath and
// Steinke 2020 (Proposition 12), minimized over the orders:
//
//	eps = min_alpha rho(alpha) + log((alpha-1)/alpha) - (log delta + log alpha)/(alpha-1).
//
// It also returns the order that achieved the minimum. It is never smaller
// than 0, and it is 0 when delta >= sqrt(1 - e^{-rho}) at some order (see
// rdpEpsilon); +Inf means no order gives a finite bound. Orders must be > 1 and
// delta in (0, 1).
func RDPToEpsilon(orders, rdp []float64, delta float64) (eps, order float64, err error) {
	if err := checks.Delta("delta", delta); err != nil {
		return 0, 0, fmt.Errorf("RDP to (epsilon, delta): %w", err)
	}
	if err := validateRDP(orders, rdp); err != nil {
		return 0, 0, fmt.Errorf("RDP to (epsilon, delta): %w", err)
	}
	return rdpToEpsilon(orders, rdp, 1, delta)
}

// rdpToEpsilon is RDPToEpsilon on validated input, with the curve scaled by
// steps (composition of identical mechanisms).
func rdpToEpsilon(orders, rdp []float64, steps, delta float64) (float64, float64, error) {
	ld := math.Log(delta)
	best, bestOrder := math.Inf(1), math.NaN()
	for i, a := range orders {
		e := rdpEpsilon(a, steps*rdp[i], delta, ld)
		if e < best {
			best, bestOrder = e, a
		}
	}
	return best, bestOrder, nil
}

// RDPToDelta converts a Rényi-DP curve into the smallest delta such that the
// mechanism is (eps, delta)-DP, inverting the conversion of RDPToEpsilon at
// each order:
//
//	delta = min_alpha exp((alpha-1)(rho - eps)) / alpha * (1 - 1/alpha)^(alpha-1),
//
// capped at 1 (Canonne, Kamath and Steinke 2020, Proposition 12), and also
// by sqrt(1 - e^{-rho}) (Bretagnolle–Huber, see rdpEpsilon). It returns the
// minimizing order too.
func RDPToDelta(orders, rdp []float64, eps float64) (delta, order float64, err error) {
	if err := checks.EpsilonOrZero("epsilon", eps); err != nil {
		return 0, 0, fmt.Errorf("RDP to (epsilon, delta): %w", err)
	}
	if err := validateRDP(orders, rdp); err != nil {
		return 0, 0, fmt.Errorf("RDP to (epsilon, delta): %w", err)
	}
	best, bestOrder := 0.0, math.NaN() // log delta
	for i, a := range orders {
		ld := (a-1)*(rdp[i]-eps) + (a-1)*math.Log1p(-1/a) - math.Log(a)
		// Bretagnolle–Huber: delta <= sqrt(1 - e^{-rho}) at any eps >= 0.
		ld = math.Min(ld, 0.5*math.Log(-math.Expm1(-rdp[i])))
		if ld < best {
			best, bestOrder = ld, a
		}
	}
	return math.Exp(best), bestOrder, nil
}

// ComposeRDP adds Rényi-DP curves given at the same orders: RDP composes
// additively at every order (Mironov 2017, Proposition 1). The curves must
// all have the same length.
func ComposeRDP(curves ...[]float64) ([]float64, error) {
	if len(curves) == 0 {
		return nil, fmt.Errorf("RDP composition: %w", checks.Invalidf("need at least one curve"))
	}
	out := make([]float64, len(curves[0]))
	for c, curve := range curves {
		if len(curve) != len(out) {
			return nil, fmt.Errorf("RDP composition: %w", checks.Invalidf("curve %d has %d orders, curve 0 has %d", c, len(curve), len(out)))
		}
		for i, v := range curve {
			if math.IsNaN(v) || v < 0 {
				return nil, fmt.Errorf("RDP composition: %w", checks.Invalidf("curve %d, order %d: RDP must be >= 0, got %v", c, i, v))
			}
			out[i] += v
		}
	}
	return out, nil
}

// GaussianRDP returns the Rényi-DP curve alpha/(2 sigma^2) of the Gaussian
// mechanism with L2 sensitivity 1 and noise standard deviation sigma
// (Mironov 2017, Proposition 7), at each order.
func GaussianRDP(sigma float64, orders []float64) ([]float64, error) {
	if err := checks.Positive("sigma", sigma); err != nil {
		return nil, fmt.Errorf("Gaussian RDP: %w", err)
	}
	out := make([]float64, len(orders))
	if err := validateRDP(orders, out); err != nil {
		return nil, fmt.Errorf("Gaussian RDP: %w", err)
	}
	for i, a := range orders {
		out[i] = a / (2 * sigma * sigma)
	}
	return out, nil
}

// RDPToEpsilonClassic is the original RDP-to-DP conversion of Mironov 2017
// (Proposition 3): eps = min_alpha rho(alpha) + log(1/delta)/(alpha-1). It is
// looser than RDPToEpsilon and exists to reproduce numbers published with it
// (TensorFlow Privacy before 2020, Abadi-style tutorials).
func RDPToEpsilonClassic(orders, rdp []float64, delta float64) (eps, order float64, err error) {
	if err := checks.Delta("delta", delta); err != nil {
		return 0, 0, fmt.Errorf("RDP to (epsilon, delta): %w", err)
	}
	if err := validateRDP(orders, rdp); err != nil {
		return 0, 0, fmt.Errorf("RDP to (epsilon, delta): %w", err)
	}
	best, bestOrder := math.Inf(1), math.NaN()
	for i, a := range orders {
		if e := rdp[i] - math.Log(delta)/(a-1); e < best {
			best, bestOrder = e, a
		}
	}
	return best, bestOrder, nil
}
