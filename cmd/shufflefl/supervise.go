package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
)

// Exit status 2 means bad input, and only that. The Go runtime, though,
// exits with status 2 on a panic that nothing recovers and on a fatal
// error such as running out of memory, in any goroutine. So the command
// runs itself as a child (supervise): the child writes any crash to a
// trace file too (debug.SetCrashOutput), and the parent turns a child that
// crashed into one line and exit status 1, the trace left in the file.

// supervisedEnv names the child's trace file; its presence marks the child.
const supervisedEnv = "SHUFFLEFL_CRASH_FILE"

// superviseOff, when set in the environment, runs the command in this
// process (no child): a crash then exits 2, as the Go runtime does.
const superviseOff = "SHUFFLEFL_NO_SUPERVISOR"

// crashOutput makes a supervised child write its crash trace to the file
// the parent named, and reports whether this is such a child.
func crashOutput() bool {
	path := os.Getenv(supervisedEnv)
	if path == "" {
		return false
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return true
	}
	_ = debug.SetCrashOutput(f, debug.CrashOptions{})
	f.Close()
	return true
}

// supervise runs the command line args as a child of this process with
// the same standard streams, forwards SIGINT, SIGTERM and SIGHUP to it (a
// terminal's Ctrl-C reaches both; a second SIGINT changes nothing for a
// command that is already stopping), and returns its exit status, or 1 with one line on stderr when it
// crashed. ok is false when no child could be started (the caller then
// runs the command itself).
func supervise(args []string) (code int, ok bool) {
	exe, err := os.Executable()
	if err != nil {
		return 0, false
	}
	trace, err := os.CreateTemp("", "shufflefl-crash-*.txt")
	if err != nil {
		return 0, false
	}
	path := trace.Name()
	trace.Close()
	// The child dies with this process (childAttr), whose thread must then
	// outlive it: the death signal follows the thread that started it.
	runtime.LockOSThread()
	cmd := exec.Command(exe, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), supervisedEnv+"="+path)
	cmd.SysProcAttr = childAttr()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		os.Remove(path)
		signal.Reset()
		return 0, false
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	code = cmd.ProcessState.ExitCode()
	if st, isStat := cmd.ProcessState.Sys().(syscall.WaitStatus); isStat && st.Signaled() {
		os.Remove(path)
		if st.Signal() == syscall.SIGKILL {
			fmt.Fprintf(os.Stderr, "shufflefl: internal error: killed (SIGKILL; out of memory?)\n")
			return 1, true
		}
		return 128 + int(st.Signal()), true
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		os.Remove(path)
		fmt.Fprintf(os.Stderr, "shufflefl: internal error: %v\n", err)
		return 1, true
	}
	if first := crashLine(path); first != "" {
		fmt.Fprintf(os.Stderr, "shufflefl: internal error: %s (trace in %s)\n", first, path)
		return 1, true
	}
	os.Remove(path)
	return code, true
}

// crashLine is the first line of a crash trace file ("" when the child
// did not crash).
func crashLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 1<<16))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			return line
		}
	}
	return ""
}
