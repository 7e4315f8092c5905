package main

import "shufflefl/checks"

// errMissing is the error of a required flag that was not given.
func errMissing(flag string) error { return checks.Invalidf("%s is required", flag) }
