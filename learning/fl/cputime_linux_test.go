package fl

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time used so far by the calling OS thread (the
// caller must be locked to it), so that benchmarks can report a throughput
// that does not count time spent waiting for a core on a shared machine.
// CLOCK_THREAD_CPUTIME_ID is exact; getrusage(RUSAGE_THREAD) can lag by a
// scheduler tick, which matters for short windows.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
