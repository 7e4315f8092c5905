package trainer

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// ErrTrainer is wrapped by every error of a trainer process: it did not
// start, crashed, hung past its deadline, spoke another protocol version,
// sent a malformed frame, reported an error, or returned an update of the
// wrong length or with a value that is not finite.
var ErrTrainer = errors.New("trainer process failed")

// DefaultTimeout is the deadline of one request (the handshake, or one
// client's training) when Options.Timeout is zero.
const DefaultTimeout = 2 * time.Minute

// closeGrace is how long Close waits for the process to exit after its bye
// before it kills it.
const closeGrace = 2 * time.Second

// Error is a trainer process's failure. It wraps ErrTrainer (and the
// underlying error, if any).
type Error struct {
	// Round and Client are the request's (both 0 for the handshake).
	Round, Client int
	// PID is the process id, Command the program's command line.
	PID     int
	Command string
	// Reason says what went wrong.
	Reason string
	// Stderr is the end of what the process wrote to its standard error.
	Stderr string
	// Err is the underlying error, if any.
	Err error
}

// Error returns "trainer: REASON (process PID: COMMAND); its stderr ends: …".
// The round and client are not repeated: callers name them.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "trainer: %s (process %d: %s)", e.Reason, e.PID, e.Command)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		fmt.Fprintf(&b, "; its stderr ends: %s", s)
	}
	return b.String()
}

// Unwrap returns ErrTrainer and the underlying error.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrTrainer}
	}
	return []error{ErrTrainer, e.Err}
}

// Options configure a trainer process.
type Options struct {
	// Timeout is the deadline of each request: the handshake, and each
	// client's training (0: DefaultTimeout). A process that does not answer
	// in time is killed, and the next request restarts it.
	Timeout time.Duration
	// Stderr, if set, receives a copy of the process's standard error (the
	// end of which every Error carries anyway).
	Stderr io.Writer
	// Dir is the process's working directory ("": the caller's).
	Dir string
}

// Process is a running trainer program. It is not safe for concurrent use:
// give each worker its own Process.
type Process struct {
	argv  []string
	hello Hello
	opt   Options
	limit int

	cmd    *exec.Cmd
	in     *os.File // the process's standard input
	out    *os.File // its standard output
	stderr *tail
	done   chan struct{} // closed when the process has exited
	// waitErr is cmd.Wait's result, valid once done is closed.
	waitErr error
	// broken is set when the process can no longer be trusted to be in
	// step with the protocol; the next Train restarts it.
	broken bool
	// ready is the process's answer to the hello.
	ready Ready

	// Buffers reused across requests: the model sent, the frame written,
	// the frame read and its payload.
	model   []float32
	wbuf    []byte
	rbuf    []byte
	payload []float32
}

// Start starts the program argv (argv[0] is looked up in $PATH), sends it
// h and waits for its Ready. h.Protocol is set to Version. A program that
// cannot be started, exits, does not answer within the timeout, or answers
// with another version is an error wrapping ErrTrainer.
func Start(argv []string, h Hello, o Options) (*Process, error) {
	if len(argv) == 0 {
		return nil, &Error{Command: "", Reason: "no command given", Err: errors.New("empty command")}
	}
	if h.Dim <= 0 {
		return nil, fmt.Errorf("trainer: a model of %d parameters", h.Dim)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	h.Protocol = Version
	p := &Process{argv: argv, hello: h, opt: o, limit: FrameLimit(h.Dim), model: make([]float32, h.Dim)}
	if err := p.start(); err != nil {
		return nil, err
	}
	return p, nil
}

// PID returns the process id of the running program (0 if none).
func (p *Process) PID() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// start starts the program and handshakes.
func (p *Process) start() error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return p.fail(0, 0, "cannot make a pipe", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return p.fail(0, 0, "cannot make a pipe", err)
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir = p.opt.Dir
	cmd.Stdin, cmd.Stdout = inR, outW
	p.stderr = &tail{copy: p.opt.Stderr}
	cmd.Stderr = p.stderr
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return p.fail(0, 0, "cannot start", err)
	}
	p.cmd, p.in, p.out, p.broken = cmd, inW, outR, false
	p.done = make(chan struct{})
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()

	f, err := p.exchange(0, 0, "the handshake", Frame{Kind: KindHello, Header: header(p.hello)})
	if err != nil {
		p.kill()
		return err
	}
	var r Ready
	if err := decode(f, KindReady, &r); err != nil {
		p.kill()
		return p.fail(0, 0, "answered the hello with a bad frame", err)
	}
	if r.Protocol != Version {
		p.kill()
		return p.fail(0, 0, fmt.Sprintf("speaks trainer protocol version %d, shufflefl speaks version %d", r.Protocol, Version), nil)
	}
	p.ready = r
	return nil
}

// Evaluates reports whether the trainer answers evaluate requests (its
// ready said so).
func (p *Process) Evaluates() bool { return p.ready.Evaluate }

// Evaluate sends the model (len(model) must be the model's dimension) to
// be evaluated on the test set req describes and returns the trainer's
// result. A trainer that does not evaluate, or answers with another
// round, another number of examples, or an accuracy outside [0, 1] or a
// loss that is negative or not finite, is an error wrapping ErrTrainer.
func (p *Process) Evaluate(model []float64, req EvaluateRequest) (EvaluateResult, error) {
	d := p.hello.Dim
	if len(model) != d {
		return EvaluateResult{}, fmt.Errorf("trainer: a model of %d values to evaluate, the run's has %d", len(model), d)
	}
	if err := p.restart(req.Round, 0); err != nil {
		return EvaluateResult{}, err
	}
	if !p.ready.Evaluate {
		return EvaluateResult{}, p.fail(req.Round, 0, "does not evaluate (its ready frame has no \"evaluate\": true)", nil)
	}
	for i, v := range model {
		p.model[i] = float32(v)
	}
	f, err := p.exchange(req.Round, 0, "evaluation", Frame{Kind: KindEvaluate, Header: header(req), Payload: p.model})
	if err != nil {
		return EvaluateResult{}, err
	}
	var r EvaluateResult
	if err := decode(f, KindMetrics, &r); err != nil {
		p.kill()
		return EvaluateResult{}, p.fail(req.Round, 0, "answered an evaluate request with a bad frame", err)
	}
	switch {
	case r.Round != req.Round:
		return EvaluateResult{}, p.fail(req.Round, 0, fmt.Sprintf("answered the evaluation of round %d with round %d's", req.Round, r.Round), nil)
	case r.Examples != req.Examples:
		return EvaluateResult{}, p.fail(req.Round, 0, fmt.Sprintf("evaluated %d examples, the test set has %d", r.Examples, req.Examples), nil)
	case !(r.Accuracy >= 0 && r.Accuracy <= 1):
		return EvaluateResult{}, p.fail(req.Round, 0, fmt.Sprintf("returned accuracy %v, outside [0, 1]", r.Accuracy), nil)
	case !(r.Loss >= 0) || math.IsInf(r.Loss, 0):
		return EvaluateResult{}, p.fail(req.Round, 0, fmt.Sprintf("returned loss %v, not a finite non-negative number", r.Loss), nil)
	}
	return r, nil
}

// Train sends one client's train request with the global model and writes
// the update the trainer returns into dst (len(dst) must be the model's
// dimension, as must len(global)). The update is refused if it has another
// length or a value that is not finite. A process that crashed or was
// killed by a previous request is restarted first.
func (p *Process) Train(dst []float64, global []float64, req TrainRequest) (UpdateHeader, error) {
	d := p.hello.Dim
	if len(dst) != d || len(global) != d {
		return UpdateHeader{}, fmt.Errorf("trainer: buffers of %d and %d values for a model of %d", len(dst), len(global), d)
	}
	if err := p.restart(req.Round, req.Client); err != nil {
		return UpdateHeader{}, err
	}
	for i, v := range global {
		p.model[i] = float32(v)
	}
	f, err := p.exchange(req.Round, req.Client, "training", Frame{Kind: KindTrain, Header: header(req), Payload: p.model})
	if err != nil {
		return UpdateHeader{}, err
	}
	var u UpdateHeader
	if err := decode(f, KindUpdate, &u); err != nil {
		p.kill()
		return UpdateHeader{}, p.fail(req.Round, req.Client, "answered a train request with a bad frame", err)
	}
	if u.Round != req.Round || u.Client != req.Client {
		p.kill()
		return UpdateHeader{}, p.fail(req.Round, req.Client, fmt.Sprintf("answered the request of round %d, client %d with the update of round %d, client %d", req.Round, req.Client, u.Round, u.Client), nil)
	}
	if len(f.Payload) != d {
		return UpdateHeader{}, p.fail(req.Round, req.Client, fmt.Sprintf("returned an update of %d values for a model of %d parameters", len(f.Payload), d), nil)
	}
	for i, v := range f.Payload {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return UpdateHeader{}, p.fail(req.Round, req.Client, fmt.Sprintf("returned an update whose value %d is %v", i, v), nil)
		}
		dst[i] = float64(v)
	}
	return u, nil
}

// exchange sends f and reads the answer under the deadline. An error frame
// is returned as an Error (the process stays usable); any other failure
// marks the process broken, killing it if it is still running.
func (p *Process) exchange(round, client int, what string, f Frame) (Frame, error) {
	if len(f.Header) > MaxHeader {
		return Frame{}, p.fail(round, client, fmt.Sprintf("cannot be sent the %s request: its header of %d bytes exceeds the protocol's %d", f.Kind, len(f.Header), MaxHeader), ErrFrame)
	}
	deadline := time.Now().Add(p.opt.Timeout)
	p.in.SetWriteDeadline(deadline)
	p.out.SetReadDeadline(deadline)
	p.wbuf = AppendFrame(p.wbuf[:0], f)
	if _, err := p.in.Write(p.wbuf); err != nil {
		return Frame{}, p.lost(round, client, what, err)
	}
	body, err := readBody(p.out, p.limit, p.rbuf)
	if err != nil {
		return Frame{}, p.lost(round, client, what, err)
	}
	p.rbuf = body
	ans, err := decodeBody(body, p.payload)
	if err != nil {
		return Frame{}, p.lost(round, client, what, err)
	}
	p.payload = ans.Payload
	if ans.Kind == KindError {
		var m ErrorMessage
		if err := decode(ans, KindError, &m); err != nil {
			p.kill()
			return Frame{}, p.fail(round, client, "sent a bad error frame", err)
		}
		e := p.fail(round, client, "reported an error in "+what+": "+m.Message, nil)
		e.Stderr = "" // the message is the trainer's own account
		return Frame{}, e
	}
	return ans, nil
}

// lost handles a failed write or read: the process hung, exited or broke
// the framing. It is killed and marked broken.
func (p *Process) lost(round, client int, what string, err error) error {
	p.broken = true
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		p.kill()
		return p.fail(round, client, fmt.Sprintf("did not answer within %v (--trainer-timeout) in %s; killed", p.opt.Timeout, what), err)
	case errors.Is(err, ErrFrame):
		p.kill()
		return p.fail(round, client, fmt.Sprintf("sent a malformed frame in %s (%v; a program that prints to its standard output outside the protocol breaks the framing)", what, err), err)
	}
	// The pipe closed: the process exited (or closed its output).
	select {
	case <-p.done:
	case <-time.After(closeGrace):
		p.kill()
	}
	status := "closed its output"
	if p.exited() {
		status = "exited"
		if p.waitErr != nil {
			status = "exited (" + p.waitErr.Error() + ")"
		}
	}
	return p.fail(round, client, status+" in "+what, err)
}

// exited reports whether the process has exited.
func (p *Process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// fail builds an Error for the current process.
func (p *Process) fail(round, client int, reason string, err error) *Error {
	e := &Error{Round: round, Client: client, PID: p.PID(), Command: strings.Join(p.argv, " "), Reason: reason, Err: err}
	if p.stderr != nil {
		if p.done != nil && p.exited() {
			e.Stderr = p.stderr.String()
		} else {
			// Give the process's last lines a moment to arrive.
			time.Sleep(10 * time.Millisecond)
			e.Stderr = p.stderr.String()
		}
	}
	return e
}

// restart starts the program again if a previous request broke it; a
// failure is set to the request (round, client) it was made for.
func (p *Process) restart(round, client int) error {
	if !p.broken {
		return nil
	}
	p.kill()
	err := p.start()
	var e *Error
	if errors.As(err, &e) {
		e.Round, e.Client = round, client
		e.Reason = "restarted after a failure, " + e.Reason
	}
	return err
}

// kill kills the running process by its id, waits for it to exit and
// marks the process broken, so that the next request restarts it.
func (p *Process) kill() {
	p.broken = true
	if p.cmd == nil || p.cmd.Process == nil || p.done == nil {
		return
	}
	if !p.exited() {
		p.cmd.Process.Kill()
		<-p.done
	}
	p.in.Close()
	p.out.Close()
}

// Close asks the trainer to exit (a bye frame, then end of input), waits
// briefly and kills it if it is still running. It returns an error only if
// the process exited with a failure status after its bye.
func (p *Process) Close() error {
	if p.cmd == nil || p.done == nil {
		return nil
	}
	if p.exited() {
		p.kill()
		return nil
	}
	p.in.SetWriteDeadline(time.Now().Add(closeGrace))
	WriteFrame(p.in, Frame{Kind: KindBye, Header: []byte("{}")})
	p.in.Close()
	select {
	case <-p.done:
	case <-time.After(closeGrace):
	}
	if !p.exited() {
		p.kill()
		return nil
	}
	p.out.Close()
	if p.waitErr != nil && !p.broken {
		return p.fail(0, 0, "exited with "+p.waitErr.Error()+" after its bye", p.waitErr)
	}
	return nil
}

// tailSize is how much of a process's standard error an Error keeps.
const tailSize = 2048

// tail keeps the last tailSize bytes written to it, copying everything to
// copy if set.
type tail struct {
	mu   sync.Mutex
	buf  []byte
	copy io.Writer
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.copy != nil {
		t.copy.Write(b)
	}
	t.buf = append(t.buf, b...)
	if len(t.buf) > tailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
	}
	return len(b), nil
}

// String returns the kept bytes, starting at a line boundary when the
// start was cut off.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.buf)
	if len(t.buf) == tailSize {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return s
}
