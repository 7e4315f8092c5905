//go:build unix

package trainer

import "syscall"

// syscallAlive returns nil if process pid exists.
func syscallAlive(pid int) error { return syscall.Kill(pid, 0) }
