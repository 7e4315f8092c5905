// Package longtest is the switch for the project's long tests: the
// statistical tests with many samples, the load tests and the crash
// (kill -9) loops. `go test ./...` skips them so that it stays quick;
// setting SHUFFLEFL_LONG=1 runs them, and .ci/run sets it.
//
//	SHUFFLEFL_LONG=1 go test ./...
package longtest

import (
	"os"
	"testing"
)

// Env is the environment variable that turns the long tests on.
const Env = "SHUFFLEFL_LONG"

// Enabled reports whether the long tests run: SHUFFLEFL_LONG is set to a
// value other than "", "0" or "false", and -short is not given.
func Enabled() bool {
	if testing.Testing() && testing.Short() {
		return false
	}
	switch os.Getenv(Env) {
	case "", "0", "false":
		return false
	}
	return true
}

// Skip skips t unless the long tests are enabled, saying how to run it.
func Skip(t testing.TB) {
	t.Helper()
	if !Enabled() {
		t.Skipf("long test: set %s=1 to run it", Env)
	}
}
