//go:build !linux

package mechanism

import "time"

var t0 = time.Now()

// threadCPU falls back to wall time where the thread CPU clock is not wired.
func threadCPU() int64 { return int64(time.Since(t0)) }
