package rundir

import "syscall"

// workerProcAttr makes a worker process started by run get SIGTERM when run
// dies, even by kill -9, so that no worker outlives its coordinator.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
