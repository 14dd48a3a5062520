package store

import (
	"os"
	"testing"
	"time"
)

// States saved because they could not be written are applied in order by the runner that
// reconciles their runner, once: a line cut short by a crash ends the list, and a task
// already terminal stays as it is.
func TestUnrecorded_SaveAndApply(t *testing.T) {
	db := openTestDB(t)
	r, _ := db.RegisterRunner(t.Context(), "test", time.Minute)
	g, err := insertTestGraph(t, db, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	one, zero := 1, 0
	path, err := db.SaveUnrecorded(r.ID, []TaskUpdate{
		{GraphID: g.ID, TaskID: "a", TaskState: TaskState{Status: "running", Attempt: 1, TaskDetail: TaskDetail{StartedAt: &now}}},
		{GraphID: g.ID, TaskID: "a", TaskState: TaskState{Status: "succeeded", Attempt: 1, TaskDetail: TaskDetail{ExitCode: &zero, StartedAt: &now, FinishedAt: &now}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SaveUnrecorded(r.ID, []TaskUpdate{
		{GraphID: g.ID, TaskID: "a", TaskState: TaskState{Status: "failed", Attempt: 2, TaskDetail: TaskDetail{ExitCode: &one}}},
	}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("saved file %s: %v, %v", path, fi, err)
	}
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"GraphID":"` + g.ID + `","TaskID":"a","Status":"pend`) // cut short
	f.Close()

	n, err := db.ApplyUnrecorded(t.Context(), r.ID)
	if err != nil || n != 3 {
		t.Fatalf("ApplyUnrecorded = %d, %v, want 3 states", n, err)
	}
	tasks, _ := db.GraphTasks(t.Context(), g.ID)
	if a := tasks[0]; a.Status != "succeeded" || a.ExitCode == nil || *a.ExitCode != 0 {
		t.Errorf("a = %s (exit %v), want succeeded: the terminal state is final", a.Status, a.ExitCode)
	}
	if got, _ := db.GetGraph(t.Context(), g.ID); got.FinishedAt == nil {
		t.Errorf("the graph is not finished once its last state is applied")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the file is still there after it was applied: %v", err)
	}
	if n, err := db.ApplyUnrecorded(t.Context(), r.ID); n != 0 || err != nil {
		t.Errorf("a second ApplyUnrecorded = %d, %v, want nothing to do", n, err)
	}
}
