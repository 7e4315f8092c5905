package data

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkLoadFashionMNIST loads all of Fashion-MNIST (60,000 + 10,000
// gzip-compressed images) from the Debian package, as Load does.
func BenchmarkLoadFashionMNIST(b *testing.B) {
	loadFashionOrSkip(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load("fashion-mnist", Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadIDXImages separates the cost of the IDX reader itself from
// that of gzip: it decodes the 60,000 training images from memory, raw and
// compressed.
func BenchmarkReadIDXImages(b *testing.B) {
	loadFashionOrSkip(b)
	gz, err := os.ReadFile(filepath.Join(FashionMNISTDir, TrainImagesFile+".gz"))
	if err != nil {
		b.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		b.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		in   []byte
	}{{"raw", raw}, {"gzip", gz}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, _, _, _, err := ReadIDXImages(bytes.NewReader(bc.in)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
