package main

import (
	"strings"

	"shufflefl/checks"
)

// errMissing is the error of a required flag that was not given.
func errMissing(flag string) error { return checks.Invalidf("%s is required", flag) }

// multiFlag is a repeatable string flag.
type multiFlag []string

// String implements flag.Value.
func (m *multiFlag) String() string { return strings.Join(*m, ",") }

// Set implements flag.Value.
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
