package rundir

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func TestWorkersFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    Workers
		wantErr string
	}{
		{nil, Workers{}, ""},
		{[]string{"--worker-procs", "4"}, Workers{Procs: 4}, ""},
		{[]string{"--nats", "nats://127.0.0.1:4222"}, Workers{NATS: "nats://127.0.0.1:4222"}, ""},
		{[]string{"--worker-procs", "-1"}, Workers{}, "not a count of processes"},
		{[]string{"--worker-procs", "two"}, Workers{}, "not a count of processes"},
	} {
		var w Workers
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		w.RegisterFlags(fs)
		err := fs.Parse(tc.args)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: error %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || w.Procs != tc.want.Procs || w.NATS != tc.want.NATS {
			t.Errorf("%v: %+v, %v; want %+v", tc.args, w, err, tc.want)
		}
	}
}

func TestWorkersStartNeedsCommand(t *testing.T) {
	w := Workers{Procs: 1}
	var stops []func()
	if err := w.start("nats://127.0.0.1:1", io.Discard, &stops); err == nil || !strings.Contains(err.Error(), "no worker command") {
		t.Fatalf("start without a command: %v", err)
	}
	if len(stops) != 0 {
		t.Fatalf("%d processes started", len(stops))
	}
}
