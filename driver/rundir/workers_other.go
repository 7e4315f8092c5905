//go:build !linux

package rundir

import "syscall"

// workerProcAttr is nil where the system cannot tie a child's life to its
// parent's: a worker started by a run that is killed outlives it.
func workerProcAttr() *syscall.SysProcAttr { return nil }
