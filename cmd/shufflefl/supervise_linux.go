package main

import "syscall"

// childAttr makes the supervised child die with its parent (kill -9 of the
// process a user or a test started ends the command).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
