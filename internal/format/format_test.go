package format

import (
	"math"
	"testing"
)

// TestSig: Sig rounds printed bounds to the safe side.
func TestSig(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		prec int
		up   bool
		want string
	}{
		{5.01e-6, 3, true, "5.01e-06"},
		{5.0149e-6, 3, true, "5.02e-06"},
		{5.0149e-6, 3, false, "5.01e-06"},
		{10 * 1e-6, 3, true, "1e-05"},
		{0.99999, 3, true, "1"},
		{1.0390852019190788, 6, false, "1.03908"},
		{1.0390852019190788, 6, true, "1.03909"},
		{0, 3, true, "0"},
		{math.NaN(), 3, true, "NaN"},
		{math.Inf(1), 3, true, "+Inf"},
		{123456.7, 3, true, "124000"},
	} {
		if got := Sig(tc.v, tc.prec, tc.up); got != tc.want {
			t.Errorf("Sig(%v, %d, %v) = %s, want %s", tc.v, tc.prec, tc.up, got, tc.want)
		}
	}
	if got := EpsUp(1234567.1); got != "1234570" {
		t.Errorf("EpsUp(1234567.1) = %s, want 1234570", got)
	}
	if got := DeltaUp(1.00001e-6); got != "1.001e-06" {
		t.Errorf("DeltaUp(1.00001e-6) = %s, want 1.001e-06", got)
	}
}

// TestFigure: large figures are written out, small ones keep %g's form.
func TestFigure(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		prec int
		want string
	}{
		{20000, 3, "20000"}, {23549.7, 4, "23550"}, {1e6, -1, "1000000"}, {1e-5, 3, "1e-05"},
		{0.5, 4, "0.5"}, {1e20, 4, "1e+20"}, {math.Inf(1), 4, "+Inf"}, {-12345, 2, "-12000"},
	} {
		if got := Figure(tc.v, tc.prec); got != tc.want {
			t.Errorf("Figure(%v, %d) = %s, want %s", tc.v, tc.prec, got, tc.want)
		}
	}
}
