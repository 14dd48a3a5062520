package tasks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A task's log file is created with its first output: a task that prints nothing leaves
// no file and reads as an empty log; one that prints later has no file until it does, and
// then all it printed; a retry's marker creates the file before the attempt prints.
func TestEngine_LogCreatedWithFirstOutput(t *testing.T) {
	te := newTestEngine(t)
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		tsk("silent", "true"),
		tsk("silentShell", "x=1; test $x = 1"),
		te.gated(t, "late", "echo late"),
		{ID: "retried", Command: "exit 1", Retries: 1},
	}})
	lateLog := te.e.LogPath(sub.Graph.ID, "late")
	te.waitGated(t, "late") // its process runs: the start is behind it
	if _, err := os.Stat(lateLog); !os.IsNotExist(err) {
		t.Errorf("late's log exists before late printed anything (%v)", err)
	}
	openGate(t, filepath.Join(te.dir, "late"))
	tasks := te.waitDone(t, sub.Graph.ID)
	wantState(t, tasks, "silent", Succeeded, "")
	wantState(t, tasks, "silentShell", Succeeded, "")
	wantState(t, tasks, "late", Succeeded, "")
	wantState(t, tasks, "retried", Failed, CodeExitNonzero)
	for _, id := range []string{"silent", "silentShell"} {
		if _, err := os.Stat(te.e.LogPath(sub.Graph.ID, id)); !os.IsNotExist(err) {
			t.Errorf("%s printed nothing, but has a log file (%v)", id, err)
		}
	}
	if b, err := os.ReadFile(lateLog); err != nil || string(b) != "late\n" {
		t.Errorf("late's log = %q, %v; want \"late\\n\"", b, err)
	}
	if b, err := os.ReadFile(te.e.LogPath(sub.Graph.ID, "retried")); err != nil || !strings.Contains(string(b), "attempt 2 of 2") {
		t.Errorf("retried's log = %q, %v; want the second attempt's marker", b, err)
	}
	snap, err := te.e.Snapshot(t.Context(), sub.Graph.ID)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := te.e.Status(t.Context(), snap, StatusQuery{TaskIDs: []string{"silent"}, Log: LogQuery{Tail: DefaultLogTail}})
	if err != nil {
		t.Fatal(err)
	}
	if l := rep.Tasks[0].Log; l == nil || l.Text != "" || !l.EOF {
		t.Errorf("silent's log in tasks_status = %+v, want an empty one", l)
	}
}

// A task that never started has no log, even when an empty file is there for it (earlier
// builds created logs ahead of the starts, and a start may not come): tasks_status, the
// CLI's logs and the graph's archive show it exactly as they show a task without a file.
func TestEngine_TaskThatNeverStartedHasNoLog(t *testing.T) {
	te := newTestEngine(t, func(c *Config) { c.ArtifactsDir = c.Workspace.ArtifactsDir })
	gate := fifoGate(t, te.dir, "gate")
	// a fails once b and d have their empty files; the three are skipped.
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		tsk("a", "read x < "+gate+"; echo failing; exit 3"), tsk("b", "echo b", "a"), tsk("c", "echo c", "b"), tsk("d", "echo d", "a"),
	}})
	for _, id := range []string{"b", "d"} {
		if err := os.WriteFile(te.e.LogPath(sub.Graph.ID, id), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	openGate(t, gate)
	tasks := te.waitDone(t, sub.Graph.ID)
	wantState(t, tasks, "a", Failed, CodeExitNonzero)
	for _, id := range []string{"b", "c", "d"} {
		wantState(t, tasks, id, Skipped, CodeUpstreamFailed)
	}
	// Close archives the graph.
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	if err := te.e.Close(ctx); err != nil {
		t.Fatal(err)
	}

	snap, err := te.e.Snapshot(t.Context(), sub.Graph.ID)
	if err != nil {
		t.Fatal(err)
	}
	// tasks_status: the tail, and a page from the start.
	offset := int64(0)
	for _, lq := range []LogQuery{{Tail: DefaultLogTail}, {Offset: &offset, Limit: DefaultLogLimit}} {
		logs := map[string]LogSlice{}
		for _, id := range []string{"a", "b", "c", "d"} {
			rep, err := te.e.Status(t.Context(), snap, StatusQuery{TaskIDs: []string{id}, Log: lq})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Tasks) != 1 || rep.Tasks[0].Log == nil {
				t.Fatalf("status of %s: %+v", id, rep.Tasks)
			}
			s := *rep.Tasks[0].Log
			s.Path = ""
			logs[id] = s
		}
		if logs["a"].Text != "failing\n" {
			t.Errorf("a's log in tasks_status = %+v", logs["a"])
		}
		for _, id := range []string{"b", "d"} {
			if diff := cmp.Diff(logs["c"], logs[id]); diff != "" {
				t.Errorf("tasks_status shows the empty file of %s otherwise than no file (-none +empty):\n%s", id, diff)
			}
		}
	}
	// The CLI's logs, all of it and a tail.
	for _, id := range []string{"b", "c", "d"} {
		for _, tail := range []int{-1, 10} {
			var out strings.Builder
			if err := te.e.CopyLog(t.Context(), snap, id, tail, &out); err != nil || out.Len() != 0 {
				t.Errorf("logs of %s (tail %d) = %q, %v; want nothing", id, tail, out.String(), err)
			}
		}
	}
	// The archive.
	art, err := te.db.GetArtifact(t.Context(), sub.Graph.ID)
	if err != nil {
		t.Fatal(err)
	}
	m, logs := readArtifact(t, art.Path)
	checkManifest(t, m, logs)
	for _, mt := range m.Tasks {
		if hasLog := mt.Log != nil; hasLog != (mt.ID == "a") {
			t.Errorf("task %s in the manifest: log %+v", mt.ID, mt.Log)
		}
	}
}

// An empty log file left for a task that never started is not archived as the task's log;
// a task that ran and wrote nothing, whose log file was never created, is archived with
// an empty log.
func TestSpool_EmptyLogOfTaskThatNeverStartedIsNoLog(t *testing.T) {
	// No ArtifactsDir while the graph runs, so that only the spool below archives it.
	te := newTestEngine(t)
	sub := te.submit(t, Spec{Tasks: []TaskSpec{tsk("a", "exit 3"), tsk("b", "echo b", "a"), tsk("e", ": > /dev/null")}})
	te.waitDone(t, sub.Graph.ID)
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	if err := te.e.Close(ctx); err != nil { // nothing runs behind the change of config
		t.Fatal(err)
	}
	te.e.cfg.ArtifactsDir = te.ws.ArtifactsDir
	if err := os.WriteFile(te.e.LogPath(sub.Graph.ID, "b"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := te.e.spool(t.Context(), sub.Graph.ID)
	if err != nil {
		t.Fatal(err)
	}
	m, logs := readArtifact(t, a.Path)
	checkManifest(t, m, logs)
	for _, mt := range m.Tasks {
		switch {
		case mt.ID == "b" && mt.Log != nil:
			t.Errorf("b never started, but the manifest has its log: %+v", mt.Log)
		case mt.ID != "b" && (mt.Log == nil || mt.Log.Bytes != 0):
			t.Errorf("%s ran and wrote nothing: manifest log %+v, want an empty one", mt.ID, mt.Log)
		}
	}
}

// A runner that lets go of a graph a peer adopted (forgetLocked) must leave the logs of
// that graph alone: the peer may have started a task, opened its log and not written to
// it yet.
func TestEngine_LettingGoOfAnAdoptedGraphKeepsTheAdoptersLog(t *testing.T) {
	te := newTestEngine(t)
	pidFile := filepath.Join(te.dir, "pid")
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		tsk("run", "echo $$ > "+pidFile+"; exec sleep 1000"), tsk("x", "echo x", "run"),
	}})
	te.waitStatus(t, sub.Graph.ID, "run", Running)
	waitForPid(t, pidFile)
	xlog := te.e.LogPath(sub.Graph.ID, "x")
	te.adoptAsPeer(t, te.e.RunnerID())
	// The peer starts x and opens its log, as the pump of a task that printed does.
	peerLog, err := openLog(xlog)
	if err != nil {
		t.Fatal(err)
	}
	defer peerLog.Close()
	// Registering again lets the adopted graph go: run is killed here, and x, which this
	// runner will never start, is skipped in its memory.
	te.submit(t, Spec{Tasks: []TaskSpec{tsk("after", "true")}})
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	if err := te.e.Close(ctx); err != nil { // everything queued for the logs is done
		t.Fatal(err)
	}
	if _, err := peerLog.WriteString("x's output\n"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(xlog); err != nil || string(b) != "x's output\n" {
		t.Errorf("the log of x, which the adopter started, reads %q, %v: the runner that let the graph go removed it", b, err)
	}
}

// A command that can write the logs directory (a server without the mount layer) may put
// something at its own log's path before it first prints: a symbolic link out of its
// sandbox, which the runner must not write through, or a FIFO, whose open must not hang
// the runner. Either way nothing is written outside, the task's output is cut off (its
// next write kills it), and its record says the log could not be written. A log path that
// is no regular file, or a logs directory that is gone, before the task starts refuses the
// start, as a log that could not be opened at the start always did.
func TestEngine_LogPathTakenBeforeFirstOutput(t *testing.T) {
	te := newTestEngine(t)
	outside := filepath.Join(te.dir, "outside")
	if err := os.WriteFile(outside, []byte("untouched\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Once let through, each prints, much more than a pipe holds.
	sub := te.submit(t, Spec{MaxParallel: 2, Tasks: []TaskSpec{
		te.gated(t, "link", "echo secret; seq 1 10000000"),
		te.gated(t, "fifo", "echo secret; seq 1 10000000"),
	}})
	for _, id := range []string{"link", "fifo"} {
		te.waitGated(t, id) // started: its log's path was checked
	}
	if err := os.Symlink(outside, te.e.LogPath(sub.Graph.ID, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(te.e.LogPath(sub.Graph.ID, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	openGate(t, filepath.Join(te.dir, "link"))
	openGate(t, filepath.Join(te.dir, "fifo"))
	tasks := te.waitDone(t, sub.Graph.ID)
	for _, id := range []string{"link", "fifo"} {
		wantState(t, tasks, id, Failed, CodeSignaled)
		if msg := deref(tasks[id].Message); !strings.Contains(msg, "the task's log could not be written") {
			t.Errorf("%s's message = %q, want it to say its log could not be written", id, msg)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "untouched\n" {
		t.Errorf("the file the link pointed to reads %q: the runner wrote the task's output through the link", b)
	}

	// Before the start: a directory at the log's path, and a graph whose logs directory
	// went while its first task ran.
	later := te.submit(t, Spec{Tasks: []TaskSpec{te.gated(t, "first1", "true"), tsk("dir", "echo x", "first1")}})
	if err := os.Mkdir(te.e.LogPath(later.Graph.ID, "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	gone := te.submit(t, Spec{Tasks: []TaskSpec{te.gated(t, "first2", "true"), tsk("nodir", "echo x", "first2")}})
	te.waitGated(t, "first2")
	if err := os.RemoveAll(filepath.Dir(te.e.LogPath(gone.Graph.ID, "nodir"))); err != nil {
		t.Fatal(err)
	}
	openGate(t, filepath.Join(te.dir, "first1"))
	openGate(t, filepath.Join(te.dir, "first2"))
	for _, c := range []struct{ graph, task string }{{later.Graph.ID, "dir"}, {gone.Graph.ID, "nodir"}} {
		tasks := te.waitDone(t, c.graph)
		wantState(t, tasks, c.task, Failed, CodeSpawnFailed)
		if msg := deref(tasks[c.task].Message); !strings.Contains(msg, "cannot open the log") {
			t.Errorf("%s's message = %q, want it to say the log cannot be opened", c.task, msg)
		}
	}
}
