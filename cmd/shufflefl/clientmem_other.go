//go:build !linux

package main

// dropExecutablePages does nothing outside Linux.
func dropExecutablePages() {}
