package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestWorkerUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--nats URL is required"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--workers", "0"}, "--workers 0"},
		{[]string{"--nats", "nats://127.0.0.1:1", "extra"}, "unexpected argument"},
		{[]string{"--bogus"}, "bogus"},
	} {
		var out, errb bytes.Buffer
		if code := realMain(append([]string{"worker"}, tc.args...), &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("worker %q: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
	var out, errb bytes.Buffer
	if code := realMain([]string{"run", "--worker-procs", "-1", "--dataset", "fashion-mnist-sample", "--clients", "10", "--rounds", "1", "--out", t.TempDir()}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "worker-procs") {
		t.Errorf("run --worker-procs -1: exit %d, stderr %q", code, errb.String())
	}
}
