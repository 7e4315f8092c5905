package rundir_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/rundir"
)

// Execute runs the engine into a directory: here one round of the default
// protocol on the small built-in sample of Fashion-MNIST.
func ExampleExecute() {
	dir, err := os.MkdirTemp("", "rundir-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	cfg := round.RunDefaults()
	cfg.Dataset, cfg.Clients, cfg.Rounds, cfg.Workers = "fashion-mnist-sample", 10, 1, 1
	cfg.Out = filepath.Join(dir, "run")
	if err := rundir.CheckRun(cfg); err != nil {
		fmt.Println(err)
		return
	}
	var log io.Writer = io.Discard
	err = rundir.Execute(cfg, rundir.Options{Progress: "none", Version: "example", Stdout: io.Discard, Stderr: io.Discard}, &log)
	if c, ok := log.(io.Closer); ok {
		c.Close()
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	recs, err := rundir.ReadRecords(filepath.Join(cfg.Out, "metrics.jsonl"))
	fmt.Println(len(recs), "round recorded", err)
	entries, _ := os.ReadDir(cfg.Out)
	for _, e := range entries {
		fmt.Println(e.Name())
	}
	// Output:
	// 1 round recorded <nil>
	// accuracy.png
	// checkpoint.json
	// config.yaml
	// metrics.jsonl
	// model.json
	// model.safetensors
	// privacy.png
	// run.log
	// summary.json
}
