//go:build !linux

package fl

import "time"

// threadCPU is not measured on this platform; the CPU-time metrics are
// omitted.
func threadCPU() time.Duration { return 0 }
