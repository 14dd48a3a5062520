// Package executortest is the conformance suite of tasks.Executor: the one contract this
// machine's executor (tasks.LocalExecutor) and the Kubernetes one (tasks/kube) both pass,
// run against each by its own test with a Harness that knows how to make its attempts.
//
// What it holds an executor to: an attempt's output is its stdout and stderr interleaved
// as written, readable with Attach from any byte offset, following the attempt while it
// runs and ending at its end; it runs in its task's directory of the workspace, with its
// environment, and sees the workspace's files; Wait reports its exit code, or that
// Cancel ended it; Start is idempotent on the attempt's identity (a second Start takes
// over the first one's attempt, the command runs once); List finds an attempt by its
// workspace and no other; an attempt never started is unknown.
package executortest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// Harness is what the suite needs of the executor under test.
type Harness struct {
	Executor tasks.Executor
	// Workspace is the workspace id the attempts carry.
	Workspace string
	// Attempt makes the attempt that runs command in directory cwd of the workspace (""
	// for its root) with env added to what the executor gives every command; the suite
	// fills in nothing else. The workspace holds WorkspaceFile with WorkspaceText in it.
	Attempt func(t *testing.T, id tasks.AttemptID, command, cwd string, env []string) tasks.Attempt
	// Patience bounds every wait of the suite: a pod takes seconds to start where a
	// process takes a millisecond.
	Patience time.Duration
}

// The workspace file every harness provides, for the suite to read from its attempts.
const (
	WorkspaceDir  = "sub"
	WorkspaceFile = "sub/file.txt"
	WorkspaceText = "from the workspace"
)

// Run runs the suite against h.
func Run(t *testing.T, h Harness) {
	if h.Patience <= 0 {
		h.Patience = 30 * time.Second
	}
	for _, c := range []struct {
		name string
		run  func(*testing.T, Harness)
	}{
		{"OutputInterleaved", testOutput},
		{"AttachFromOffset", testAttachOffset},
		{"ExitCode", testExitCode},
		{"CwdEnvAndFiles", testCwdEnvFiles},
		{"AttachFollows", testFollow},
		{"StartIdempotent", testIdempotent},
		{"Cancel", testCancel},
		{"ListByWorkspace", testList},
		{"UnknownAttempt", testUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case has attempts of its own: a cluster starts their pods side by side
			c.run(t, h)
		})
	}
}

var seq atomic.Int64

// newID is a fresh attempt id of h's workspace.
func newID(t *testing.T, h Harness) tasks.AttemptID {
	return tasks.AttemptID{Workspace: h.Workspace, GraphID: fmt.Sprintf("g-conformance-%d-%d", time.Now().UnixNano(), seq.Add(1)),
		TaskID: strings.ToLower(strings.ReplaceAll(t.Name()[strings.LastIndexByte(t.Name(), '/')+1:], "_", "-")), Attempt: 1}
}

// start starts command and registers its release.
func start(t *testing.T, h Harness, id tasks.AttemptID, command, cwd string, env ...string) tasks.Attempt {
	t.Helper()
	a := h.Attempt(t, id, command, cwd, env)
	ctx, cancel := context.WithTimeout(t.Context(), h.Patience)
	defer cancel()
	if _, err := h.Executor.Start(ctx, a); err != nil {
		t.Fatalf("Start(%s) = %v", id, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), h.Patience)
		defer cancel()
		if st, err := h.Executor.Status(ctx, id); err == nil && st.Phase != tasks.PhaseEnded && st.Phase != tasks.PhaseGone {
			h.Executor.Cancel(ctx, id, 0)
			h.Executor.Wait(ctx, id, nil)
		}
		h.Executor.Release(id)
	})
	return a
}

// wait waits for the attempt's end.
func wait(t *testing.T, h Harness, id tasks.AttemptID) tasks.RunStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), h.Patience)
	defer cancel()
	st, err := h.Executor.Wait(ctx, id, nil)
	if err != nil {
		t.Fatalf("Wait(%s) = %v", id, err)
	}
	if st.Phase != tasks.PhaseEnded {
		t.Fatalf("Wait(%s) returned phase %s, want %s", id, st.Phase, tasks.PhaseEnded)
	}
	return st
}

// output reads the attempt's output from offset to its end.
func output(t *testing.T, h Harness, id tasks.AttemptID, offset int64) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), h.Patience)
	defer cancel()
	rc, err := h.Executor.Attach(ctx, id, offset)
	if err != nil {
		t.Fatalf("Attach(%s, %d) = %v", id, offset, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading Attach(%s, %d): %v", id, offset, err)
	}
	return string(b)
}

func exitCode(st tasks.RunStatus) string {
	if st.ExitCode == nil {
		return fmt.Sprintf("no exit code (signal %q, code %q: %s)", st.Signal, st.Code, st.Message)
	}
	return fmt.Sprint(*st.ExitCode)
}

// stdout and stderr interleave in the order they were written.
func testOutput(t *testing.T, h Harness) {
	id := newID(t, h)
	start(t, h, id, `echo out; echo err >&2; sleep 0.2; echo again >&2; printf 'no newline'`, "")
	st := wait(t, h, id)
	if got := exitCode(st); got != "0" {
		t.Errorf("exit code = %s, want 0", got)
	}
	if got, want := output(t, h, id, 0), "out\nerr\nagain\nno newline"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
}

// Attach from an offset skips exactly that many bytes.
func testAttachOffset(t *testing.T, h Harness) {
	id := newID(t, h)
	start(t, h, id, `printf 'line 1\nline 2\nline 3\n'`, "")
	wait(t, h, id)
	for _, c := range []struct {
		offset int64
		want   string
	}{{0, "line 1\nline 2\nline 3\n"}, {7, "line 2\nline 3\n"}, {10, "e 2\nline 3\n"}, {21, ""}} {
		if got := output(t, h, id, c.offset); got != c.want {
			t.Errorf("Attach(offset %d) read %q, want %q", c.offset, got, c.want)
		}
	}
}

func testExitCode(t *testing.T, h Harness) {
	id := newID(t, h)
	start(t, h, id, `echo failing; exit 3`, "")
	st := wait(t, h, id)
	if got := exitCode(st); got != "3" {
		t.Errorf("exit code = %s, want 3", got)
	}
	if st.Code != "" || st.Cancelled {
		t.Errorf("an attempt whose command exited 3 reports code %q, cancelled %v; want neither", st.Code, st.Cancelled)
	}
}

// The command runs in its directory of the workspace, with its environment, and reads
// the workspace's files.
func testCwdEnvFiles(t *testing.T, h Harness) {
	id := newID(t, h)
	start(t, h, id, `basename "$PWD"; echo "FOO=$FOO"; cat file.txt`, WorkspaceDir, "FOO=bar baz")
	st := wait(t, h, id)
	got := output(t, h, id, 0)
	if want := WorkspaceDir + "\nFOO=bar baz\n" + WorkspaceText + "\n"; got != want || exitCode(st) != "0" {
		t.Errorf("output = %q, exit %s; want %q, exit 0", got, exitCode(st), want)
	}
}

// Attach while the attempt runs follows it: what it writes later arrives, then the end.
func testFollow(t *testing.T, h Harness) {
	id := newID(t, h)
	start(t, h, id, `echo one; sleep 2; echo two`, "")
	ctx, cancel := context.WithTimeout(t.Context(), h.Patience)
	defer cancel()
	rc, err := h.Executor.Attach(ctx, id, 0)
	if err != nil {
		t.Fatalf("Attach = %v", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading while it runs: %v", err)
	}
	if got := string(b); got != "one\ntwo\n" {
		t.Errorf("followed output = %q, want %q", got, "one\ntwo\n")
	}
	wait(t, h, id)
}

// A second Start of the same attempt takes over the first: the command runs once.
func testIdempotent(t *testing.T, h Harness) {
	id := newID(t, h)
	a := start(t, h, id, `echo started; sleep 1`, "")
	ctx, cancel := context.WithTimeout(t.Context(), h.Patience)
	defer cancel()
	p1, err := h.Executor.Start(ctx, a)
	if err != nil {
		t.Fatalf("second Start = %v", err)
	}
	p2, err := h.Executor.Start(ctx, a)
	if err != nil {
		t.Fatalf("third Start = %v", err)
	}
	if p1 != p2 {
		t.Errorf("Start placed the same attempt at %+v, then %+v", p1, p2)
	}
	wait(t, h, id)
	if got := output(t, h, id, 0); got != "started\n" {
		t.Errorf("output = %q, want one %q: the command ran more than once", got, "started\n")
	}
	runs, err := h.Executor.List(ctx, h.Workspace)
	if err != nil {
		t.Fatalf("List = %v", err)
	}
	n := 0
	for _, r := range runs {
		if r.ID.GraphID == id.GraphID && r.ID.TaskID == id.TaskID {
			n++
		}
	}
	if n != 1 {
		t.Errorf("List shows the attempt %d times, want once", n)
	}
}

// Cancel stops a running attempt within its grace; Wait then reports it cancelled.
func testCancel(t *testing.T, h Harness) {
	id := newID(t, h)
	start(t, h, id, `echo waiting; sleep 600`, "")
	ctx, cancel := context.WithTimeout(t.Context(), h.Patience)
	defer cancel()
	for {
		st, err := h.Executor.Status(ctx, id)
		if err != nil {
			t.Fatalf("Status = %v", err)
		}
		if st.Phase == tasks.PhaseRunning {
			break
		}
		if st.Phase == tasks.PhaseEnded {
			t.Fatalf("the attempt ended before it was cancelled: %+v", st)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the attempt did not run within %s", h.Patience)
		case <-time.After(50 * time.Millisecond):
		}
	}
	began := time.Now()
	if err := h.Executor.Cancel(ctx, id, time.Second); err != nil {
		t.Fatalf("Cancel = %v", err)
	}
	st := wait(t, h, id)
	if !st.Cancelled {
		t.Errorf("Wait after Cancel = %+v, want Cancelled", st)
	}
	if d := time.Since(began); d > h.Patience/2 {
		t.Errorf("a cancelled attempt took %s to end", d)
	}
	if st, err := h.Executor.Status(ctx, id); err != nil || (st.Phase != tasks.PhaseEnded && st.Phase != tasks.PhaseGone) {
		t.Errorf("Status after the end = %+v, %v; want it ended or gone", st, err)
	}
}

// List finds an attempt by its workspace, and not by another's.
func testList(t *testing.T, h Harness) {
	id := newID(t, h)
	start(t, h, id, `sleep 2`, "")
	ctx, cancel := context.WithTimeout(t.Context(), h.Patience)
	defer cancel()
	has := func(workspace string) bool {
		runs, err := h.Executor.List(ctx, workspace)
		if err != nil {
			t.Fatalf("List(%s) = %v", workspace, err)
		}
		for _, r := range runs {
			if r.ID.GraphID == id.GraphID && r.ID.TaskID == id.TaskID && r.ID.Attempt == id.Attempt {
				return true
			}
		}
		return false
	}
	if !has(h.Workspace) {
		t.Errorf("List(%s) does not show an attempt of that workspace", h.Workspace)
	}
	if has(h.Workspace + "x") {
		t.Errorf("List of another workspace shows this workspace's attempt")
	}
	wait(t, h, id)
}

// An attempt never started is unknown: an error that says so, or gone.
func testUnknown(t *testing.T, h Harness) {
	id := newID(t, h)
	ctx, cancel := context.WithTimeout(t.Context(), h.Patience)
	defer cancel()
	st, err := h.Executor.Status(ctx, id)
	if err == nil && st.Phase != tasks.PhaseGone {
		t.Errorf("Status of an attempt never started = %+v, want ErrUnknownAttempt or PhaseGone", st)
	}
	if err != nil && !errors.Is(err, tasks.ErrUnknownAttempt) {
		t.Errorf("Status of an attempt never started = %v, want ErrUnknownAttempt", err)
	}
	if _, err := h.Executor.Wait(ctx, id, nil); !errors.Is(err, tasks.ErrUnknownAttempt) {
		t.Errorf("Wait of an attempt never started = %v, want ErrUnknownAttempt", err)
	}
}
