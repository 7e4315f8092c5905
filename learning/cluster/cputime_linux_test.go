//go:build linux

package cluster

import (
	"syscall"
	"unsafe"
)

// processCPU returns the CPU time consumed by the whole process, all
// threads (clock_gettime(CLOCK_PROCESS_CPUTIME_ID)): unlike wall time it does
// not grow when other processes compete for the cores.
func processCPU() int64 {
	var ts syscall.Timespec
	const clockProcessCPUTimeID = 2
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockProcessCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}
