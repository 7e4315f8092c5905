package trainer

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// helperEnv selects the behaviour of the test binary re-executed as a
// trainer (helperMain).
const helperEnv = "SHUFFLEFL_TRAINER_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

// helperMain is a trainer written against the codec: its update is
// −0.5·model + client, except in the failing modes, which misbehave on the
// first train request.
func helperMain(mode string) int {
	in, out := os.Stdin, os.Stdout
	f, err := ReadFrame(in, FrameLimit(0))
	if err != nil {
		return 9
	}
	var h Hello
	if err := decode(f, KindHello, &h); err != nil {
		return 9
	}
	switch mode {
	case "exit-at-hello":
		fmt.Fprintln(os.Stderr, "cannot load the data set")
		return 4
	case "version":
		WriteFrame(out, Frame{Kind: KindReady, Header: header(Ready{Protocol: Version + 1})})
		return 0
	}
	evaluates := strings.HasPrefix(mode, "eval")
	WriteFrame(out, Frame{Kind: KindReady, Header: header(Ready{Protocol: Version, Name: "helper", Evaluate: evaluates})})
	for {
		f, err := ReadFrame(in, FrameLimit(h.Dim))
		if err != nil || f.Kind == KindBye {
			return 0
		}
		if f.Kind == KindEvaluate {
			var req EvaluateRequest
			if err := decode(f, KindEvaluate, &req); err != nil || req.Split != "test" {
				return 9
			}
			// Accuracy: the model's first value; loss: its second.
			r := EvaluateResult{Round: req.Round, Examples: req.Examples, Accuracy: float64(f.Payload[0]), Loss: float64(f.Payload[1])}
			switch mode {
			case "eval-round":
				r.Round++
			case "eval-count":
				r.Examples--
			}
			WriteFrame(out, Frame{Kind: KindMetrics, Header: header(r)})
			continue
		}
		var req TrainRequest
		if err := decode(f, KindTrain, &req); err != nil {
			return 9
		}
		u := make([]float32, h.Dim)
		for i, v := range f.Payload {
			u[i] = -0.5*v + float32(req.Client)
		}
		switch mode {
		case "crash":
			fmt.Fprintln(os.Stderr, "Traceback: ZeroDivisionError")
			return 3
		case "hang":
			time.Sleep(time.Hour)
		case "short":
			u = u[1:]
		case "nan":
			u[2] = float32(math.NaN())
		case "inf":
			u[0] = float32(math.Inf(-1))
		case "error":
			WriteFrame(out, Frame{Kind: KindError, Header: header(ErrorMessage{Message: "client has no data"})})
			continue
		case "echo":
			req.Client++
		case "garbage":
			out.Write([]byte{0xff, 0xff, 0xff, 0xff})
			continue
		}
		WriteFrame(out, Frame{Kind: KindUpdate, Header: header(UpdateHeader{Round: req.Round, Client: req.Client, Steps: 3}), Payload: u})
	}
}

// startHelper starts the test binary as a trainer in mode.
func startHelper(t *testing.T, mode string, timeout time.Duration) (*Process, error) {
	t.Helper()
	t.Setenv(helperEnv, mode)
	return Start([]string{os.Args[0], "-test.run=^$"}, Hello{Dim: 4, Clients: [][2]int{{0, 9}}}, Options{Timeout: timeout})
}

func TestProcessTrains(t *testing.T) {
	p, err := startHelper(t, "ok", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dst := make([]float64, 4)
	for c := range 3 {
		u, err := p.Train(dst, []float64{2, 4, 6, 8}, TrainRequest{Round: 1, Client: c, Indices: []int{0}})
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range dst {
			if want := -float64(i+1) + float64(c); v != want {
				t.Errorf("client %d: update[%d] = %v, want %v", c, i, v, want)
			}
		}
		if u.Steps != 3 {
			t.Errorf("steps %d, want 3", u.Steps)
		}
	}
	if err := p.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

func TestProcessFailures(t *testing.T) {
	for _, c := range []struct {
		mode    string
		want    string // in the error
		restart bool   // the next request restarts the process
	}{
		{"crash", "exited (exit status 3) in training (process", true},
		{"hang", "did not answer within 300ms (--trainer-timeout) in training; killed", true},
		{"short", "returned an update of 3 values for a model of 4 parameters", false},
		{"nan", "returned an update whose value 2 is NaN", false},
		{"inf", "returned an update whose value 0 is -Inf", false},
		{"error", "reported an error in training: client has no data", false},
		{"echo", "answered the request of round 7, client 5 with the update of round 7, client 6", true},
		{"garbage", "sent a malformed frame in training", true},
	} {
		t.Run(c.mode, func(t *testing.T) {
			p, err := startHelper(t, c.mode, 300*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			pid := p.PID()
			_, err = p.Train(make([]float64, 4), make([]float64, 4), TrainRequest{Round: 7, Client: 5, Indices: []int{0}})
			var e *Error
			if !errors.Is(err, ErrTrainer) || !errors.As(err, &e) {
				t.Fatalf("got %v, want an *Error wrapping ErrTrainer", err)
			}
			if !strings.Contains(err.Error(), c.want) || e.Round != 7 || e.Client != 5 || e.PID != pid {
				t.Errorf("got %q (round %d, client %d, pid %d), want it to contain %q (round 7, client 5, pid %d)", err, e.Round, e.Client, e.PID, c.want, pid)
			}
			if c.mode == "crash" && e.Stderr != "Traceback: ZeroDivisionError\n" {
				t.Errorf("stderr %q, want the trainer's traceback", e.Stderr)
			}
			if c.restart {
				// The broken process is gone; the next request starts another.
				if err := syscallAlive(pid); err == nil {
					t.Errorf("process %d still runs after the failure", pid)
				}
				p.Train(make([]float64, 4), make([]float64, 4), TrainRequest{Round: 8, Client: 1, Indices: []int{0}})
				if p.PID() == pid {
					t.Errorf("not restarted: pid %d", pid)
				}
			}
		})
	}
}

// TestProcessEvaluates: a trainer that says it evaluates is sent the model
// and answers with its test accuracy and loss; bad answers and a trainer
// that does not evaluate are errors wrapping ErrTrainer.
func TestProcessEvaluates(t *testing.T) {
	req := EvaluateRequest{Round: 4, Split: "test", Examples: 500, LabelsSHA256: "ab"}
	for _, c := range []struct {
		mode  string
		model []float64
		want  string // in the error; "" for success
	}{
		{"eval", []float64{0.75, 0.5, 0, 0}, ""},
		{"eval", []float64{1.5, 0.5, 0, 0}, "returned accuracy 1.5, outside [0, 1]"},
		{"eval", []float64{0.75, -1, 0, 0}, "returned loss -1, not a finite non-negative number"},
		{"eval-round", []float64{0.75, 0.5, 0, 0}, "answered the evaluation of round 4 with round 5's"},
		{"eval-count", []float64{0.75, 0.5, 0, 0}, "evaluated 499 examples, the test set has 500"},
		{"ok", []float64{0.75, 0.5, 0, 0}, `does not evaluate (its ready frame has no "evaluate": true)`},
	} {
		p, err := startHelper(t, c.mode, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Evaluates(); got != (c.mode != "ok") {
			t.Errorf("%s: Evaluates() = %v", c.mode, got)
		}
		r, err := p.Evaluate(c.model, req)
		switch {
		case c.want == "" && (err != nil || r != EvaluateResult{Round: 4, Examples: 500, Accuracy: 0.75, Loss: 0.5}):
			t.Errorf("%s %v: got %+v, %v", c.mode, c.model, r, err)
		case c.want != "" && (!errors.Is(err, ErrTrainer) || !strings.Contains(fmt.Sprint(err), c.want)):
			t.Errorf("%s %v: got %v, want an ErrTrainer containing %q", c.mode, c.model, err, c.want)
		}
		// The process still trains after an evaluation, good or bad.
		if _, err := p.Train(make([]float64, 4), make([]float64, 4), TrainRequest{Round: 4, Client: 1, Indices: []int{0}}); err != nil {
			t.Errorf("%s: training after the evaluation: %v", c.mode, err)
		}
		p.Close()
	}
	p, err := startHelper(t, "eval", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Evaluate(make([]float64, 3), req); err == nil || !strings.Contains(err.Error(), "a model of 3 values to evaluate, the run's has 4") {
		t.Errorf("a short model: %v", err)
	}
}

func TestProcessRefusesOversizeRequest(t *testing.T) {
	p, err := startHelper(t, "ok", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, err = p.Train(make([]float64, 4), make([]float64, 4), TrainRequest{Round: 1, Client: 2, Indices: make([]int, MaxHeader/2)})
	if !errors.Is(err, ErrTrainer) || !strings.Contains(err.Error(), "cannot be sent the train request: its header of") {
		t.Fatalf("got %v", err)
	}
	// Nothing was sent: the process still serves.
	if _, err := p.Train(make([]float64, 4), make([]float64, 4), TrainRequest{Round: 1, Client: 2, Indices: []int{0}}); err != nil {
		t.Errorf("after the refusal: %v", err)
	}
}

func TestStartFailures(t *testing.T) {
	for _, c := range []struct{ mode, want string }{
		{"version", "speaks trainer protocol version 2, shufflefl speaks version 1"},
		{"exit-at-hello", "exited (exit status 4) in the handshake (process"},
	} {
		p, err := startHelper(t, c.mode, 5*time.Second)
		if !errors.Is(err, ErrTrainer) || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("%s: got %v, want an ErrTrainer containing %q", c.mode, err, c.want)
		}
		if p != nil {
			p.Close()
		}
	}
	if _, err := Start([]string{"/nonexistent/trainer"}, Hello{Dim: 1}, Options{}); !errors.Is(err, ErrTrainer) || !strings.Contains(err.Error(), "cannot start") {
		t.Errorf("a missing program: %v", err)
	}
}

// TestHelloHeader pins the JSON field names of the hello a trainer reads.
func TestHelloHeader(t *testing.T) {
	b := header(Hello{Protocol: 1, Dim: 2, Layers: []Layer{{Name: "fc1.bias", Offset: 0, Shape: []int{2}}}, Clients: [][2]int{{0, 1}}})
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"protocol", "dim", "layers", "model", "dataset", "data_dir", "features", "classes", "train_examples", "train_labels_sha256", "clients", "seed"} {
		if _, ok := m[k]; !ok {
			t.Errorf("hello has no %q: %s", k, b)
		}
	}
}
