package trainer

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkProcessTrain measures the process boundary alone: one train
// request and its update through a trainer that does no training (the
// update is −0.5·model + client), for the logreg (d=7,850), the mlp
// (d=101,770) and the cnn (d=1,199,882) of 28×28 images with 600 example
// indices. "go" is a trainer written in Go (the test binary), "python" the
// protocol loop of python/shufflefl_trainer.py (skipped without NumPy).
func BenchmarkProcessTrain(b *testing.B) {
	py, pyErr := exec.LookPath("/usr/bin/python3")
	if pyErr == nil && exec.Command(py, "-c", "import numpy").Run() != nil {
		pyErr = fmt.Errorf("no numpy")
	}
	lib, _ := filepath.Abs(filepath.Join("..", "..", "python"))
	echo := "import sys; sys.path.insert(0, " + fmt.Sprintf("%q", lib) + ")\n" +
		"from shufflefl_trainer import serve\n" +
		"sys.exit(serve(lambda h, r, m: -0.5 * m + r['client']))\n"
	idx := make([]int, 600)
	for i := range idx {
		idx[i] = 10 * i
	}
	for _, side := range []string{"go", "python"} {
		for _, d := range []int{7850, 101770, 1199882} {
			b.Run(fmt.Sprintf("%s/d=%d", side, d), func(b *testing.B) {
				argv := []string{os.Args[0], "-test.run=^$"}
				if side == "python" {
					if pyErr != nil {
						b.Skipf("python3 with NumPy: %v", pyErr)
					}
					argv = []string{py, "-c", echo}
				} else {
					b.Setenv(helperEnv, "ok")
				}
				p, err := Start(argv, Hello{Dim: d}, Options{Timeout: time.Minute})
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close()
				dst, global := make([]float64, d), make([]float64, d)
				b.ResetTimer()
				for i := range b.N {
					if _, err := p.Train(dst, global, TrainRequest{Round: 1, Client: i % 100, Indices: idx, Local: LocalConfig{Mode: "fedavg", Epochs: 1, Batch: 10, LR: 0.1}}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
