// Package crashtest kills a test's child process with SIGKILL while it
// works, for the crash tests that check that nothing acknowledged is lost
// (transport/store, transport/jetstream). The child is the running test
// binary re-executed on one test; it reports each acknowledgement as a line
// on file descriptor 3.
package crashtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Timeout is how long Kill waits for the child's first line.
const Timeout = 60 * time.Second

// Kill re-executes the running test binary on the test run (a -test.run
// pattern) with env added to the environment, hands it a pipe as file
// descriptor 3, passes every line the child writes there to add, and
// SIGKILLs the child delay after its first line. Lines written before the
// kill lands are still passed to add. It returns add's first error, or an
// error when the child writes nothing within Timeout or ends other than by
// the SIGKILL (its stderr is in the error).
func Kill(run string, env []string, delay time.Duration, add func(line string) error) error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	defer pr.Close()
	cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.ExtraFiles = []*os.File{pw}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		pw.Close()
		return err
	}
	pw.Close()
	killed, perr := collect(cmd, pr, delay, add)
	err = cmd.Wait()
	if perr != nil {
		return perr
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !killed {
		return fmt.Errorf("child ended by itself (%v): %s", err, stderr.String())
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		return fmt.Errorf("child exited with %v, not SIGKILL: %s", err, stderr.String())
	}
	return nil
}

// collect reads the child's lines into add until the pipe closes, killing
// the child delay after the first line (or at Timeout without one). It
// returns whether it sent the SIGKILL and add's first error.
func collect(cmd *exec.Cmd, pr *os.File, delay time.Duration, add func(string) error) (bool, error) {
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var timer <-chan time.Time
	killed := false
	var perr error
	deadline := time.After(Timeout)
	for lines != nil {
		select {
		case l, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			if err := add(l); err != nil && perr == nil {
				perr = err
			}
			if timer == nil && !killed {
				timer = time.After(delay)
			}
		case <-timer:
			cmd.Process.Signal(syscall.SIGKILL)
			killed, timer = true, nil
		case <-deadline:
			cmd.Process.Signal(syscall.SIGKILL)
			killed = true
			if perr == nil {
				perr = fmt.Errorf("the child acknowledged nothing within %v", Timeout)
			}
		}
	}
	return killed, perr
}
