package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// asMainEnv makes the test binary run main (with its supervisor) on its
// arguments; supervisedTestCommands adds two commands only the supervised
// child of the test binary knows.
const asMainEnv = "SHUFFLEFL_TEST_AS_MAIN"

// supervisedTestCommands runs, in a supervised child, "test-crash" (a
// panic in a goroutine, as a bug would) and "test-sleep FILE" (writes its
// pid to FILE and sleeps).
func supervisedTestCommands() {
	if os.Getenv(supervisedEnv) == "" || len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case "test-crash":
		crashOutput()
		go func() { panic("test crash in a goroutine") }()
		time.Sleep(time.Minute)
	case "test-sleep":
		os.WriteFile(os.Args[2], []byte(strconv.Itoa(os.Getpid())), 0o600)
		time.Sleep(time.Minute)
		os.Exit(0)
	}
}

func mainCmd(args ...string) *exec.Cmd {
	exe, _ := os.Executable()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	return cmd
}

// TestCrashExitsOne: a panic in any goroutine is an internal error — exit
// status 1, one line naming it and the file holding its trace — never the
// Go runtime's exit status 2, which means bad input; bad input still
// exits 2.
func TestCrashExitsOne(t *testing.T) {
	var stderr bytes.Buffer
	cmd := mainCmd("test-crash")
	cmd.Stderr = &stderr
	err := cmd.Run()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("a crash: %v, want exit status 1; stderr %q", err, stderr.String())
	}
	line := strings.TrimSpace(stderr.String())
	line = line[strings.LastIndex(line, "\n")+1:]
	if !strings.Contains(line, "internal error: panic: test crash in a goroutine") || !strings.Contains(line, "trace in ") {
		t.Fatalf("last line %q: want the panic and its trace file", line)
	}
	path := strings.TrimSuffix(line[strings.Index(line, "trace in ")+len("trace in "):], ")")
	trace, err := os.ReadFile(path)
	os.Remove(path)
	if err != nil || !bytes.Contains(trace, []byte("goroutine")) {
		t.Fatalf("trace file %s: %v %q", path, err, trace)
	}
	bad := mainCmd("run", "--protocol", "nope", "--out", filepath.Join(t.TempDir(), "o"))
	if err := bad.Run(); bad.ProcessState.ExitCode() != 2 {
		t.Fatalf("bad input through the supervisor: %v, want exit status 2", err)
	}
}

// TestSupervisedChildDiesWithParent: kill -9 of the process started (the
// supervisor) ends the command too.
func TestSupervisedChildDiesWithParent(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := mainCmd("test-sleep", pidFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var child int
	for deadline := time.Now().Add(20 * time.Second); child == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the child never started")
		}
		b, _ := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(string(b))
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(child, 0) != nil {
			return // gone
		}
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat"); bytes.Contains(b, []byte(") Z ")) {
			return // a zombie waiting for its reaper: dead
		}
		if time.Now().After(deadline) {
			syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("the child %d outlived its killed parent", child)
		}
	}
}

// TestSupervisorForwardsInterrupt: SIGINT sent to the started process
// (not to its process group) reaches the command: it stops, and the
// supervisor exits with the command's status for a signal.
func TestSupervisorForwardsInterrupt(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := mainCmd("test-sleep", pidFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(pidFile); len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child never started")
		}
	}
	start := time.Now()
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("the command stopped %v after SIGINT", el)
	}
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGINT) {
		t.Fatalf("exit status %d after SIGINT, want %d", code, 128+int(syscall.SIGINT))
	}
}
