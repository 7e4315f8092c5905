package regress

import (
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
)

// Dataset is the data of a set of clients: client c holds inputs X[c] and
// targets Y[c] and belongs to latent group Group[c].
type Dataset struct {
	X     [][][]float64
	Y     [][]float64
	Group []int
}

// Clients returns one Client per client of d with the given model and SGD
// settings.
func (d Dataset) Clients(m Model, step float64, batch int) ([]*Client, error) {
	out := make([]*Client, len(d.X))
	for c := range d.X {
		cl, err := NewClient(m, d.X[c], d.Y[c], step, batch)
		if err != nil {
			return nil, err
		}
		out[c] = cl
	}
	return out, nil
}

// SyntheticLinear generates the data of the paper's Section 5.1: users
// clients with samples points each, every client drawn from one of the
// linear models y = x^T θ_g + u, u ~ U[0, 1) (Eqs. (23)-(24)), the group g
// chosen uniformly at random per client. The paper does not say how x is
// distributed; here x ~ N(0, I) (an assumption, stated in docs/DPRIVACY.md).
func SyntheticLinear(r *rand.Rand, thetas [][]float64, users, samples int) (Dataset, error) {
	if len(thetas) == 0 || len(thetas[0]) == 0 {
		return Dataset{}, checks.Invalidf("synthetic linear: no models")
	}
	for i, t := range thetas {
		if err := checks.Vector("theta", t, len(thetas[0])); err != nil {
			return Dataset{}, checks.Invalidf("synthetic linear: model %d: %v", i, err)
		}
	}
	if users < 1 || samples < 1 {
		return Dataset{}, checks.Invalidf("synthetic linear: need users >= 1 and samples >= 1, got %d and %d", users, samples)
	}
	d := len(thetas[0])
	var ds Dataset
	for range users {
		g := r.IntN(len(thetas))
		xs := make([][]float64, samples)
		ys := make([]float64, samples)
		for i := range xs {
			x := make([]float64, d)
			for k := range x {
				x[k] = r.NormFloat64()
			}
			xs[i] = x
			ys[i] = Linear{In: d}.Predict(thetas[g], x) + r.Float64()
		}
		ds.X, ds.Y, ds.Group = append(ds.X, xs), append(ds.Y, ys), append(ds.Group, g)
	}
	return ds, nil
}

// StandInTeachers are the three latent groups of the hospital-charge
// stand-in (HospitalStandIn): ReLUNet{3, 2} parameter vectors (W1 row-major,
// b1, w2, b2). All groups share the hidden features
// h1 = ReLU(2·service + 0.5·lon) and h2 = ReLU(lat − lon) and differ in how
// they price them (w2, b2), like provider types with different tariffs.
var StandInTeachers = [][]float64{
	{2, 0.5, 0, 0, -1, 1, 0, 0, 1.0, 0.5, 0.2},
	{2, 0.5, 0, 0, -1, 1, 0, 0, 2.0, -0.5, 0.5},
	{2, 0.5, 0, 0, -1, 1, 0, 0, 0.5, 1.5, 1.0},
}

// HospitalStandIn is a SYNTHETIC stand-in for the hospital-charge data of
// the paper's Section 5.2, which is not available here. It has the same
// shape: clients (providers) with 3 inputs per record (a service index in
// {1, 2, 3, 4} scaled to {0.25, ..., 1}, and the provider's longitude and
// latitude scaled to [0, 1)), a scalar target in the range of units, and
// several latent groups. Each client belongs to one of the
// len(StandInTeachers) groups (uniformly at random); it holds one record per
// service it offers (each of the 4 with probability 0.8, at least one) whose
// target is its group's teacher network plus N(0, noise²) noise. The real
// data's groups, sizes and noise are unknown; only the shape is matched.
func HospitalStandIn(r *rand.Rand, clients int, noise float64) (Dataset, error) {
	if clients < 1 {
		return Dataset{}, checks.Invalidf("hospital stand-in: clients must be >= 1, got %d", clients)
	}
	if err := checks.NonNegative("noise", noise); err != nil {
		return Dataset{}, err
	}
	net := ReLUNet{In: 3, Hidden: 2}
	var ds Dataset
	for range clients {
		g := r.IntN(len(StandInTeachers))
		lon, lat := r.Float64(), r.Float64()
		var xs [][]float64
		var ys []float64
		for len(xs) == 0 {
			for s := 1; s <= 4; s++ {
				if r.Float64() < 0.8 {
					x := []float64{float64(s) / 4, lon, lat}
					xs = append(xs, x)
					ys = append(ys, net.Predict(StandInTeachers[g], x)+noise*r.NormFloat64())
				}
			}
		}
		ds.X, ds.Y, ds.Group = append(ds.X, xs), append(ds.Y, ys), append(ds.Group, g)
	}
	return ds, nil
}
