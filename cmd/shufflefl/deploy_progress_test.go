package main

import (
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/shufflefl/shufflefl/driver/deploy"
)

// TestLiveProgress: deploy-local's progress display per mode.
func TestLiveProgress(t *testing.T) {
	ev := deploy.Progress{Role: "shuffler", Round: 1, Stage: deploy.StageReceiving, Done: 3, Total: 4}
	tests := []struct {
		mode string
		want string // a regular expression of the whole output
	}{
		{"log", `^\d\d:\d\d:\d\d\.\d{3} round 1: shuffler: receiving 3/4 reports \(75%\)\n$`},
		{"bar", `^\rround 1: shuffler: receiving 3/4 reports \(75%\)\x1b\[K\r\x1b\[K$`},
		{"none", `^$`},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			var out strings.Builder
			var mu sync.Mutex
			lp := newLiveProgress(tt.mode, &out, &mu)
			if f := lp.observer(); f != nil {
				f(ev)
			} else if tt.mode != "none" {
				t.Fatal("no observer")
			}
			lp.clear()
			lp.clear() // once only
			if !regexp.MustCompile(tt.want).MatchString(out.String()) {
				t.Fatalf("output %q, want %s", out.String(), tt.want)
			}
		})
	}
}
