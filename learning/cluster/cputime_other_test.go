//go:build !linux

package cluster

import "time"

var t0 = time.Now()

// processCPU falls back to wall time where the CPU clock is not wired.
func processCPU() int64 { return int64(time.Since(t0)) }
