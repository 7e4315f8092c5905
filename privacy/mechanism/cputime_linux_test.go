//go:build linux

package mechanism

import (
	"syscall"
	"unsafe"
)

// threadCPU returns the CPU time consumed by the calling OS thread
// (clock_gettime(CLOCK_THREAD_CPUTIME_ID)), which, unlike wall time, does not
// grow when other processes compete for the cores.
func threadCPU() int64 {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}
