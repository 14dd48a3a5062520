package tasks

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// readWholeLog reads a task's log as it is on disk; no file is an empty log (a task that
// never printed has none: lazyLog).
func readWholeLog(t *testing.T, te *testEnv, graphID, taskID string) string {
	t.Helper()
	b, err := os.ReadFile(te.e.LogPath(graphID, taskID))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// A task that opens its own output again (O_TRUNC, through /proc/self/fd) writes to its
// pipe, not over its log, and stdout and stderr stay in the order written.
func TestEngine_OutputReopenedKeepsTheLog(t *testing.T) {
	var interleaved strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&interleaved, "o%d\ne%d\n", i, i)
	}
	tests := []struct {
		name, command, want string
	}{
		{"devstdout", "echo a; echo b > /dev/stdout; echo c", "a\nb\nc\n"},
		{"devstderr", "echo a; echo b > /dev/stderr; echo c", "a\nb\nc\n"},
		{"tee", "echo a; echo b | tee /dev/stderr; echo c", "a\nb\nb\nc\n"}, // tee writes b to stdout and stderr
		{"exec3", "exec 3>/dev/stdout; echo a; echo b >&3; echo c", "a\nb\nc\n"},
		{"procfd", "echo a; echo b > /proc/self/fd/1; echo c", "a\nb\nc\n"},
		{"interleaved", "for i in $(seq 1 200); do echo o$i; echo e$i >&2; done", interleaved.String()},
		{"silent", "true", ""},
	}
	te := newTestEngine(t)
	var spec Spec
	for _, tt := range tests {
		spec.Tasks = append(spec.Tasks, tsk(tt.name, tt.command))
	}
	sub := te.submit(t, spec)
	tasks := te.waitDone(t, sub.Graph.ID)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantState(t, tasks, tt.name, Succeeded, "")
			if got := readWholeLog(t, te, sub.Graph.ID, tt.name); got != tt.want {
				t.Errorf("log of %q = %q, want %q", tt.command, got, tt.want)
			}
		})
	}
}

// A task that prints 50 MB leaves all of it in its log by the time it is recorded ended.
func TestEngine_LoudTaskLogIsWhole(t *testing.T) {
	const size = 50_000_000
	te := newTestEngine(t)
	sub := te.submit(t, Spec{Tasks: []TaskSpec{tsk("loud", fmt.Sprintf(`head -c %d /dev/zero | tr '\0' a`, size))}})
	wantState(t, te.waitDone(t, sub.Graph.ID), "loud", Succeeded, "")
	b, err := os.ReadFile(te.e.LogPath(sub.Graph.ID, "loud"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != size || bytes.Count(b, []byte("a")) != size {
		t.Errorf("the log has %d bytes, %d of them 'a', want %d of 'a' only", len(b), bytes.Count(b, []byte("a")), size)
	}
}

// A retry writes after the attempt before it and its marker line, whole.
func TestEngine_RetryLogAppendsAfterTheMarker(t *testing.T) {
	te := newTestEngine(t)
	tried := filepath.Join(te.dir, "tried")
	sub := te.submit(t, Spec{Tasks: []TaskSpec{{ID: "flaky", Retries: 2,
		Command: "if [ -f " + tried + " ]; then echo second; else touch " + tried + "; echo first; echo oops >&2; exit 1; fi"}}})
	wantState(t, te.waitDone(t, sub.Graph.ID), "flaky", Succeeded, "")
	want := "first\noops\n\n--- mcp-harness: attempt 2 of 3 ---\nsecond\n"
	if got := readWholeLog(t, te, sub.Graph.ID, "flaky"); got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
}

// A process the task started outside its process group (setsid) still holds the task's
// output when the task ends. The task is recorded ended all the same, while that process
// still runs; what the process writes afterwards is not recorded (its write kills it with
// SIGPIPE), and the engine's Close leaves no goroutine behind (newTestEngine's goleak).
func TestEngine_OutputHolderOutsideTheGroup(t *testing.T) {
	te := newTestEngine(t)
	ready, release := filepath.Join(te.dir, "ready"), filepath.Join(te.dir, "release")
	for _, fifo := range []string{ready, release} {
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pidFile := filepath.Join(te.dir, "holder.pid")
	// The task waits until the holder has left its session (it says so on ready), so the
	// kill of the task's group at its end cannot catch it before it has.
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		tsk("leaves", "echo start; setsid sh -c 'echo $$ > "+ready+"; read x < "+release+"; echo late' & read pid < "+ready+"; echo $pid > "+pidFile),
		tsk("after", "echo after", "leaves"),
	}})
	tasks := te.waitDone(t, sub.Graph.ID)
	holder := waitForPid(t, pidFile)
	t.Cleanup(func() { syscall.Kill(holder, syscall.SIGKILL) }) // should the test fail first
	wantState(t, tasks, "leaves", Succeeded, "")
	wantState(t, tasks, "after", Succeeded, "")
	if !running(holder) {
		t.Fatalf("the holder of the task's output (pid %d) is gone: the test proves nothing", holder)
	}
	// The graph ended while the holder holds the pipe and waits on release: let it write.
	f, err := os.OpenFile(release, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("go\n")
	f.Close()
	waitProcessGone(t, holder) // SIGPIPE: the pipe has no reader any more
	if got := readWholeLog(t, te, sub.Graph.ID, "leaves"); got != "start\n" {
		t.Errorf("log = %q, want %q: output after the task ended is not recorded", got, "start\n")
	}
}

// running reports whether pid runs (a zombie does not).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && len(b) > i+2 && b[i+2] != 'Z'
}

// A log that cannot be written (here /dev/full, which answers every write with ENOSPC and
// takes no splice, so the plain copy is used) stops the pump: the task's next write kills
// it with SIGPIPE, its record says its log's file system is full, and its dependent is
// skipped.
func TestEngine_LogWriteFault(t *testing.T) {
	// loud's log opens as /dev/full when loud first prints (registered before the engine,
	// so that it is put back after the engine's pumps are done).
	t.Cleanup(func() { openLazyLog = openLog })
	openLazyLog = func(path string) (*os.File, error) {
		if filepath.Base(path) == "loud.log" {
			return os.OpenFile("/dev/full", os.O_WRONLY, 0)
		}
		return openLog(path)
	}
	te := newTestEngine(t)
	gate := fifoGate(t, te.dir, "gate")
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		tsk("gate", "read x < "+gate),
		tsk("loud", "seq 1 10000000", "gate"),
		tsk("dep", "echo dep", "loud"),
		tsk("quiet", "echo quiet"),
	}})
	openGate(t, gate)
	tasks := te.waitDone(t, sub.Graph.ID)
	wantState(t, tasks, "loud", Failed, CodeSignaled)
	wantState(t, tasks, "dep", Skipped, CodeUpstreamFailed)
	wantState(t, tasks, "quiet", Succeeded, "")
	loud := tasks["loud"]
	if loud.Signal == nil || *loud.Signal != "SIGPIPE" {
		t.Errorf("loud's signal = %v, want SIGPIPE", loud.Signal)
	}
	if msg := deref(loud.Message); !strings.Contains(msg, "the file system of the task's log is full (no space left on device)") {
		t.Errorf("loud's message = %q, want it to say the log's file system is full", msg)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func TestLogFault(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string // "" for no message
	}{
		{"none", nil, ""},
		{"ENOSPC", os.NewSyscallError("splice", syscall.ENOSPC), "the file system of the task's log is full (no space left on device)"},
		{"ENOSPC/write", &os.PathError{Op: "write", Path: "x.log", Err: syscall.ENOSPC}, "no space left on device"},
		{"EDQUOT", os.NewSyscallError("splice", syscall.EDQUOT), "disk quota exceeded"},
		{"EFBIG", os.NewSyscallError("splice", syscall.EFBIG), "file too large"},
		{"EIO", os.NewSyscallError("splice", syscall.EIO), "the task's log could not be written (input/output error)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := logFault(tt.err)
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("logFault(%v) = %q, want it to say %q", tt.err, got, tt.want)
			}
			if strings.Contains(got, "splice") || strings.Contains(got, "x.log") {
				t.Errorf("logFault(%v) = %q names the system call or the file", tt.err, got)
			}
		})
	}
}
