package tasks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A task's log is created ahead of its start (prelog.go), and stays when the task never
// starts (a removal could take the log of a peer that adopted the graph), but a task that
// never started has no log all the same: tasks_status, the CLI's logs and the graph's
// archive show it exactly as they show a task whose log was never prepared.
func TestEngine_TaskThatNeverStartedHasNoLog(t *testing.T) {
	te := newTestEngine(t, func(c *Config) { c.ArtifactsDir = c.Workspace.ArtifactsDir })
	// When a starts, b and d (whose only dependency runs) have their logs prepared, c
	// (whose dependency does not run) not; a fails, so the three are skipped.
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		tsk("a", "echo failing; exit 3"), tsk("b", "echo b", "a"), tsk("c", "echo c", "b"), tsk("d", "echo d", "a"),
	}})
	tasks := te.waitDone(t, sub.Graph.ID)
	wantState(t, tasks, "a", Failed, CodeExitNonzero)
	for _, id := range []string{"b", "c", "d"} {
		wantState(t, tasks, id, Skipped, CodeUpstreamFailed)
	}
	// Close finishes the work queued for the logs, then archives the graph.
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	if err := te.e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The preparer did its work: without it this test would show nothing.
	for _, id := range []string{"b", "d"} {
		if fi, err := os.Stat(te.e.LogPath(sub.Graph.ID, id)); err != nil || fi.Size() != 0 {
			t.Errorf("task %s's log was not prepared (an empty file): %v", id, err)
		}
	}
	if _, err := os.Stat(te.e.LogPath(sub.Graph.ID, "c")); !os.IsNotExist(err) {
		t.Errorf("task c's log was prepared, though its dependency never ran (%v)", err)
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
				t.Errorf("tasks_status shows the prepared log of %s otherwise than a log never prepared (-never +prepared):\n%s", id, diff)
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

// An empty log left for a task that never started (a graph adopted by another runner
// keeps the logs this one prepared) is not archived as the task's log.
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

// A runner that lets go of a graph a peer adopted (forgetLocked) must leave the logs it
// prepared for that graph alone: the peer may have started the task, opened the log (it
// found the prepared file) and not written to it yet.
func TestEngine_LettingGoOfAnAdoptedGraphKeepsTheAdoptersLog(t *testing.T) {
	te := newTestEngine(t)
	pidFile := filepath.Join(te.dir, "pid")
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		tsk("run", "echo $$ > "+pidFile+"; exec sleep 1000"), tsk("x", "echo x", "run"),
	}})
	te.waitStatus(t, sub.Graph.ID, "run", Running)
	waitForPid(t, pidFile)
	xlog := te.e.LogPath(sub.Graph.ID, "x")
	waitFile(t, xlog) // prepared when run started
	te.adoptAsPeer(t, te.e.RunnerID())
	// The peer starts x as spawn does: its open finds the prepared file.
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
