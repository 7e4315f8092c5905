package data

import "github.com/shufflefl/shufflefl/internal/rng"

// Stream labels of the synthetic sets: rng.Stream(seed, labelData, set,
// part). labelData lies outside the rng.Label* range, so these streams never
// coincide with those of training, noise or partitioning.
const (
	labelData     uint64 = 0x64617461 // "data"
	setBlobs      uint64 = 1
	setClusters   uint64 = 2
	partCenters   uint64 = 0
	partTrain     uint64 = 1
	partTest      uint64 = 2
	blobsClasses         = 10
	blobsCenterSD        = 1.0
)

// ClusterOptima are the optimal parameters θ*_1 = [+5, +6] and
// θ*_2 = [+4, −4.5] of the two linear models of synthetic-clusters (Galli
// et al., "Group privacy for personalized federated learning", Section 5.1,
// Eqs. (23)–(24)).
var ClusterOptima = [2][2]float64{{5, 6}, {4, -4.5}}

// Blobs returns Gaussian blobs: 10 classes with centres drawn once from
// N(0, I_features), and examples x = centre(y) + N(0, spread² I). Labels cycle
// 0, 1, ..., 9 so the classes are balanced and any prefix is too. With
// features = 8 and spread = 1 the Bayes classifier (nearest centre) is right
// about 85% of the time, so the set is learnable but not trivial.
// Train and test share the centres and use independent streams derived from
// seed. Sizes must be non-negative and spread finite (Load checks them).
func Blobs(seed uint64, nTrain, nTest, features int, spread float64) Split {
	cr := rng.Stream(seed, labelData, setBlobs, partCenters)
	centers := make([]float64, blobsClasses*features)
	for i := range centers {
		centers[i] = blobsCenterSD * cr.NormFloat64()
	}
	gen := func(part uint64, n int) *Dataset {
		r := rng.Stream(seed, labelData, setBlobs, part)
		ds := &Dataset{Name: "blobs", X: make([]float32, n*features), Y: make([]uint8, n),
			Features: features, Classes: blobsClasses}
		for i := range n {
			y := i % blobsClasses
			ds.Y[i] = uint8(y)
			row := ds.X[i*features : (i+1)*features]
			for j := range row {
				row[j] = float32(centers[y*features+j] + spread*r.NormFloat64())
			}
		}
		return ds
	}
	return Split{Train: gen(partTrain, nTrain), Test: gen(partTest, nTest)}
}

// SyntheticClusters reproduces the synthetic data of Galli et al., "Group
// privacy for personalized federated learning", Section 5.1: k = 2 linear
// regression models
//
//	y = xᵀθ*_j + u,  u ~ Uniform[0, 1),  θ*_1 = [+5, +6], θ*_2 = [+4, −4.5]
//
// and users holding perUser samples each, all drawn from one of the two
// models. The paper uses 100 training users × 10 samples and "another set of
// users with the same characteristics" held out for validation; here the
// test set has testUsers such users.
//
// It is a regression set: Classes = 0, Y = nil, the response y is in Target,
// Features = 2 (no intercept, as in Eqs. (23)–(24)). Rows are grouped by
// user: user c holds rows [c·perUser, (c+1)·perUser), so
// PartitionContiguous(train.Len(), users, perUser) recovers the paper's
// users. Group records each row's model (0 or 1) as ground truth for
// evaluating the clustering; it must not be shown to the learner.
//
// Two choices the paper leaves open: users are assigned to the models by
// RotationGroups (a uniformly random balanced assignment, 50/50), and
// x ~ N(0, I₂) as in the synthetic experiment of IFCA (Ghosh et al. 2020),
// which Algorithm 1 builds on. A zero-mean x also makes the least-squares
// fit of each cluster converge to θ*_j despite the non-zero mean of u, which
// matches the paper's report that training ends "very close to the two
// optimal parameters". Sizes must be non-negative (Load checks them).
func SyntheticClusters(seed uint64, users, testUsers, perUser int) Split {
	gen := func(part uint64, users int) *Dataset {
		r := rng.Stream(seed, labelData, setClusters, part)
		groups := RotationGroups(r, users, len(ClusterOptima))
		n := users * perUser
		ds := &Dataset{Name: "synthetic-clusters", X: make([]float32, 2*n), Target: make([]float32, n),
			Group: make([]uint8, n), Features: 2, Classes: 0}
		for c, g := range groups {
			th := ClusterOptima[g]
			for s := range perUser {
				i := c*perUser + s
				x0, x1 := r.NormFloat64(), r.NormFloat64()
				ds.X[2*i], ds.X[2*i+1] = float32(x0), float32(x1)
				ds.Target[i] = float32(x0*th[0] + x1*th[1] + r.Float64())
				ds.Group[i] = uint8(g)
			}
		}
		return ds
	}
	return Split{Train: gen(partTrain, users), Test: gen(partTest, testUsers)}
}
