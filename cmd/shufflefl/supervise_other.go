//go:build !linux

package main

import "syscall"

// childAttr is nil where the child cannot be tied to its parent's death.
func childAttr() *syscall.SysProcAttr { return nil }
