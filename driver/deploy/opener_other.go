//go:build !linux

package deploy

import "syscall"

// openerProcAttr is nil where the system cannot tie a child's life to its
// parent's: an opener started by a deploy-local that is killed outlives it.
func openerProcAttr() *syscall.SysProcAttr { return nil }
