package tasks

import (
	"context"
	"os"
	"testing"
)

// A task's log is created ahead of its start (prelog.go), but a task that never starts
// has no log: not on disk once the engine is done, and not in the graph's archive.
func TestEngine_TaskThatNeverStartedHasNoLog(t *testing.T) {
	te := newTestEngine(t, func(c *Config) { c.ArtifactsDir = c.Workspace.ArtifactsDir })
	// When a starts, b and d (whose only dependency runs) have their logs prepared; a
	// fails, so they and c are skipped.
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
	if _, err := os.Stat(te.e.LogPath(sub.Graph.ID, "a")); err != nil {
		t.Errorf("the log of a, which ran: %v", err)
	}
	for _, id := range []string{"b", "c", "d"} {
		if _, err := os.Stat(te.e.LogPath(sub.Graph.ID, id)); !os.IsNotExist(err) {
			t.Errorf("task %s never started, but its log is there (%v)", id, err)
		}
	}
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
