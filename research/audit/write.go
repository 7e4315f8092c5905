package audit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/shufflefl/shufflefl/driver/rundir"
)

// Outputs are the files the audits write; WriteReport with overwrite
// removes them (and nothing else) before writing.
var Outputs = []string{"audit.md", "audit.json", "inversion-protocols.png", "inversion-nu.png"}

// WriteReport writes a report into dir, created by rundir.Prepare (the
// caller refuses a used dir first, rundir.Check): audit.md holding md, audit.json holding js, and
// every image (file name -> the function that writes its PNG).
func WriteReport(dir string, overwrite bool, md string, js []byte, images map[string]func(io.Writer) error) error {
	if err := rundir.Prepare(dir, overwrite); err != nil {
		return err
	}
	if overwrite {
		for _, n := range Outputs {
			if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("--overwrite: %w", err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "audit.md"), []byte(md), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "audit.json"), js, 0o644); err != nil {
		return err
	}
	for name, write := range images {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		werr := write(f)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("writing %s: %w", name, werr)
		}
	}
	return nil
}

// CommandLine is the command `shufflefl audit name args...` as a report
// quotes it, each argument with a space or a quote single-quoted.
func CommandLine(name string, args []string) string {
	q := make([]string, 0, len(args))
	for _, a := range args {
		if strings.ContainsAny(a, " \t'\"") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q = append(q, a)
	}
	return strings.TrimSpace("shufflefl audit " + name + " " + strings.Join(q, " "))
}
