//go:build !unix

package main

// cpuTime is empty where getrusage is not available.
func cpuTime() string { return "" }
