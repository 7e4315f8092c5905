//go:build unix

package main

import (
	"fmt"
	"syscall"
)

// cpuTime says how much CPU this process used so far (user and system),
// for a service's last line; "" if it cannot tell.
func cpuTime() string {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return ""
	}
	sec := func(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }
	return fmt.Sprintf("; CPU %.1f s user, %.1f s system", sec(ru.Utime), sec(ru.Stime))
}
