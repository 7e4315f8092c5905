// Command mksample writes the small Fashion-MNIST sample embedded by package
// data: the first 2,000 training and the first 500 test images (and their
// labels) of Fashion-MNIST, as gzip-compressed IDX files.
//
// Usage, from the repository root:
//
//	go run ./data/internal/mksample [-src /usr/share/datasets/fashion-mnist] [-out data/testdata/fashion-mnist-sample]
//
// The output is byte-for-byte reproducible (fixed gzip header, best
// compression). Fashion-MNIST is © Zalando SE, MIT licence; the LICENSE file
// in the output directory says so.
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shufflefl/shufflefl/learning/data"
)

func main() {
	src := flag.String("src", data.FashionMNISTDir, "directory holding the four Fashion-MNIST IDX files")
	out := flag.String("out", "data/testdata/fashion-mnist-sample", "output directory")
	nTrain := flag.Int("train", 2000, "number of training examples to keep")
	nTest := flag.Int("test", 500, "number of test examples to keep")
	flag.Parse()
	if err := run(*src, *out, *nTrain, *nTest); err != nil {
		fmt.Fprintln(os.Stderr, "mksample:", err)
		os.Exit(1)
	}
}

func run(src, out string, nTrain, nTest int) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	jobs := []struct {
		images, labels string
		n              int
	}{
		{data.TrainImagesFile, data.TrainLabelsFile, nTrain},
		{data.TestImagesFile, data.TestLabelsFile, nTest},
	}
	for _, j := range jobs {
		img, err := data.ReadIDXFile(filepath.Join(src, j.images+".gz"))
		if err != nil {
			return err
		}
		lbl, err := data.ReadIDXFile(filepath.Join(src, j.labels+".gz"))
		if err != nil {
			return err
		}
		if len(img.Dims) != 3 || len(lbl.Dims) != 1 || img.Dims[0] < j.n || lbl.Dims[0] < j.n {
			return fmt.Errorf("%s: want at least %d images and labels, got sizes %v and %v", src, j.n, img.Dims, lbl.Dims)
		}
		px := img.Dims[1] * img.Dims[2]
		if err := writeGz(filepath.Join(out, j.images+".gz"), []int{j.n, img.Dims[1], img.Dims[2]}, img.Data[:j.n*px]); err != nil {
			return err
		}
		if err := writeGz(filepath.Join(out, j.labels+".gz"), []int{j.n}, lbl.Data[:j.n]); err != nil {
			return err
		}
	}
	return nil
}

func writeGz(path string, dims []int, body []byte) error {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	if err := data.WriteIDX(zw, dims, body); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
