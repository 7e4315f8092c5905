package data

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
)

// Base names of the four files of an MNIST-format directory. Each may be
// stored gzip-compressed with a ".gz" suffix (preferred when both exist) or
// uncompressed without it.
const (
	TrainImagesFile = "train-images-idx3-ubyte"
	TrainLabelsFile = "train-labels-idx1-ubyte"
	TestImagesFile  = "t10k-images-idx3-ubyte"
	TestLabelsFile  = "t10k-labels-idx1-ubyte"
)

// FashionMNISTDir is where the Debian package dataset-fashion-mnist installs
// Fashion-MNIST (Xiao, Rasul and Vollgraf 2017).
const FashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// sampleFS holds the first 2,000 training and 500 test images of
// Fashion-MNIST (MIT licence, see testdata/fashion-mnist-sample/LICENSE),
// written by data/internal/mksample.
//
//go:embed testdata/fashion-mnist-sample/*.gz
var sampleFS embed.FS

const sampleDir = "testdata/fashion-mnist-sample"

// LoadIDXDir loads the four standard MNIST-format files (see TrainImagesFile
// and friends) from dir into a Split named name. Images become Rows×Cols
// features scaled to [0, 1]; every label must be below classes, and each
// labels file must hold one label per image. Errors wrap ErrData and name
// the file; a missing file also wraps fs.ErrNotExist.
func LoadIDXDir(dir, name string, classes int) (Split, error) {
	return LoadIDXFS(os.DirFS(dir), dir, name, classes)
}

// LoadIDXFS is LoadIDXDir on the root of fsys; display is the directory
// name used in error messages.
func LoadIDXFS(fsys fs.FS, display, name string, classes int) (Split, error) {
	if classes < 2 || classes > 256 {
		return Split{}, checks.Invalidf("%s: class count must be in [2, 256], got %d", name, classes)
	}
	if err := checkIDXFiles(fsys, display); err != nil {
		return Split{}, err
	}
	var (
		wg             sync.WaitGroup
		train, test    *Dataset
		errTr, errTest error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		train, errTr = loadIDXPair(fsys, display, name, TrainImagesFile, TrainLabelsFile, classes)
	}()
	test, errTest = loadIDXPair(fsys, display, name, TestImagesFile, TestLabelsFile, classes)
	wg.Wait()
	if err := errors.Join(errTr, errTest); err != nil {
		return Split{}, err
	}
	if train.Rows != test.Rows || train.Cols != test.Cols {
		return Split{}, corrupt("%s: training images are %dx%d but test images are %dx%d",
			display, train.Rows, train.Cols, test.Rows, test.Cols)
	}
	return Split{Train: train, Test: test}, nil
}

// loadIDXPair reads one images file and its labels file.
func loadIDXPair(fsys fs.FS, display, name, imagesBase, labelsBase string, classes int) (*Dataset, error) {
	imgName, imgPath, err := findIDX(fsys, display, imagesBase)
	if err != nil {
		return nil, err
	}
	lblName, lblPath, err := findIDX(fsys, display, labelsBase)
	if err != nil {
		return nil, err
	}
	img, err := readIDXFS(fsys, imgName, imgPath, idxOpts{ndims: 3, unit: true})
	if err != nil {
		return nil, err
	}
	lbl, err := readIDXFS(fsys, lblName, lblPath, idxOpts{ndims: 1})
	if err != nil {
		return nil, err
	}
	n, rows, cols := img.dims[0], img.dims[1], img.dims[2]
	if lbl.dims[0] != n {
		return nil, corrupt("%s holds %d labels but %s holds %d images", lblPath, lbl.dims[0], imgPath, n)
	}
	for i, y := range lbl.data {
		if int(y) >= classes {
			return nil, corrupt("%s: label %d of example %d is out of range [0, %d)", lblPath, y, i, classes)
		}
	}
	return &Dataset{
		Name:     name,
		X:        img.unit,
		Y:        lbl.data,
		Features: rows * cols,
		Classes:  classes,
		Rows:     rows,
		Cols:     cols,
	}, nil
}

// checkIDXFiles reports, in one error, which of the four standard files
// are missing.
func checkIDXFiles(fsys fs.FS, display string) error {
	if _, err := fs.Stat(fsys, "."); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrData, display, unwrapPathError(err))
	}
	var missing []string
	for _, base := range []string{TrainImagesFile, TrainLabelsFile, TestImagesFile, TestLabelsFile} {
		if _, _, err := findIDX(fsys, display, base); err != nil {
			missing = append(missing, base+"[.gz]")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s: missing %s: %w", ErrData, display, strings.Join(missing, ", "), fs.ErrNotExist)
	}
	return nil
}

// findIDX returns the name in fsys and the display path of base+".gz" or,
// failing that, base.
func findIDX(fsys fs.FS, display, base string) (name, path string, err error) {
	for _, n := range []string{base + ".gz", base} {
		if _, err := fs.Stat(fsys, n); err == nil {
			return n, filepath.Join(display, n), nil
		}
	}
	return "", "", fmt.Errorf("%w: %s: neither %s.gz nor %s exists: %w",
		ErrData, display, base, base, fs.ErrNotExist)
}

// loadFashionMNIST loads Fashion-MNIST from dir (default FashionMNISTDir).
func loadFashionMNIST(dir string) (Split, error) {
	if dir == "" {
		dir = FashionMNISTDir
	}
	s, err := LoadIDXDir(dir, "fashion-mnist", 10)
	if err != nil && errors.Is(err, fs.ErrNotExist) {
		return Split{}, fmt.Errorf("%w; Fashion-MNIST comes from the Debian package dataset-fashion-mnist: run `sudo apt-get install dataset-fashion-mnist` (it installs %s), or point the data directory at a copy", err, FashionMNISTDir)
	}
	return s, err
}

// loadFashionMNISTSample loads the embedded 2,000/500 Fashion-MNIST sample.
func loadFashionMNISTSample() (Split, error) {
	sub, err := fs.Sub(sampleFS, sampleDir)
	if err != nil {
		return Split{}, fmt.Errorf("%w: embedded sample: %w", ErrData, err)
	}
	return LoadIDXFS(sub, "embedded:"+sampleDir, "fashion-mnist-sample", 10)
}
