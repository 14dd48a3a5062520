package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/workspace"
)

func insertTestGraph(t *testing.T, db *DB, runnerID string) (GraphRow, error) {
	t.Helper()
	g := GraphRow{ID: NewID("g-"), RunnerID: runnerID, MaxParallel: 1, CreatedAt: time.Now()}
	_, _, err := db.InsertGraph(t.Context(), g, []TaskRow{{GraphID: g.ID, ID: "a", Command: "true", Cwd: "/", TaskState: TaskState{Status: "pending"}}})
	return g, err
}

// A runner without its lease stores no graph: one judged gone (stopped), and one whose
// lease ran out before it renewed it.
func TestInsertGraph_ErrLeaseLost(t *testing.T) {
	db := openTestDB(t)
	r, err := db.RegisterRunner(t.Context(), "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := insertTestGraph(t, db, r.ID); err != nil {
		t.Fatalf("InsertGraph for a live runner: %v", err)
	}
	expired, _ := db.RegisterRunner(t.Context(), "test", time.Millisecond)
	time.Sleep(5 * time.Millisecond) // the lease runs out: the passing of time is the point
	if _, err := insertTestGraph(t, db, expired.ID); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("InsertGraph for an expired lease = %v, want ErrLeaseLost", err)
	}
	if err := db.RenewLease(t.Context(), expired.ID, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := insertTestGraph(t, db, expired.ID); err != nil {
		t.Errorf("InsertGraph after renewing: %v", err)
	}
	if err := db.StopRunner(t.Context(), r.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := insertTestGraph(t, db, r.ID); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("InsertGraph for a stopped runner = %v, want ErrLeaseLost", err)
	}
	if err := db.RenewLease(t.Context(), r.ID, time.Minute); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("RenewLease of a stopped runner = %v, want ErrLeaseLost", err)
	}
}

// An adoption is a compare-and-swap on the lease it was judged by: a runner that renewed
// since keeps its graphs; one that did not is stopped with the adoption, in the same
// transaction; a stopped adopter adopts nothing.
func TestAdoptGraphs_JudgedLease(t *testing.T) {
	db := openTestDB(t)
	gone, _ := db.RegisterRunner(t.Context(), "gone", time.Minute)
	adopter, _ := db.RegisterRunner(t.Context(), "adopter", time.Minute)
	g, err := insertTestGraph(t, db, gone.ID)
	if err != nil {
		t.Fatal(err)
	}
	judged, _ := db.GetRunner(t.Context(), gone.ID)
	time.Sleep(2 * time.Millisecond) // a renewal a millisecond later must differ
	if err := db.RenewLease(t.Context(), gone.ID, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AdoptGraphs(t.Context(), judged, adopter.ID, "RUNNER_RESTARTED", "x"); !errors.Is(err, ErrRenewed) {
		t.Fatalf("AdoptGraphs after a renewal = %v, want ErrRenewed", err)
	}
	if got, _ := db.GetGraph(t.Context(), g.ID); got.RunnerID != gone.ID {
		t.Fatalf("a runner that renewed lost its graph")
	}

	judged, _ = db.GetRunner(t.Context(), gone.ID)
	tos, err := db.AdoptGraphs(t.Context(), judged, adopter.ID, "RUNNER_RESTARTED", "x")
	if err != nil || len(tos) != 1 {
		t.Fatalf("AdoptGraphs = %v, %v", tos, err)
	}
	if r, _ := db.GetRunner(t.Context(), gone.ID); r.StoppedAt == nil {
		t.Errorf("the adopted runner is not marked stopped")
	}
	if err := db.RenewLease(t.Context(), gone.ID, time.Minute); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("RenewLease after being adopted = %v, want ErrLeaseLost", err)
	}

	other, _ := db.RegisterRunner(t.Context(), "other", time.Minute)
	insertTestGraph(t, db, other.ID)
	otherRow, _ := db.GetRunner(t.Context(), other.ID)
	db.StopRunner(t.Context(), adopter.ID)
	if _, err := db.AdoptGraphs(t.Context(), otherRow, adopter.ID, "RUNNER_RESTARTED", "x"); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("AdoptGraphs by a stopped adopter = %v, want ErrLeaseLost", err)
	}
}

// Registering again hands over, in one transaction, the unfinished graphs the old runner
// still owns and its open session rows, and leaves the old runner stopped; graphs another
// runner adopted stay with it.
func TestReregister(t *testing.T) {
	db := openTestDB(t)
	old, _ := db.RegisterRunner(t.Context(), "v1", time.Minute)
	peer, _ := db.RegisterRunner(t.Context(), "v1", time.Minute)
	kept, _ := insertTestGraph(t, db, old.ID)
	taken, _ := insertTestGraph(t, db, old.ID)
	if err := db.InsertSession(t.Context(), SessionRow{RunnerID: old.ID, ID: "s1", Name: "sh", Command: "sh", Cwd: "/", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	oldRow, _ := db.GetRunner(t.Context(), old.ID)
	if _, err := db.AdoptGraphs(t.Context(), oldRow, peer.ID, "RUNNER_RESTARTED", "x"); err != nil {
		t.Fatal(err)
	}
	// The peer adopted both; give one back to the old runner, as one whose last states
	// the old runner queued before it was judged gone would be seen by its new epoch.
	if _, err := db.sql.ExecContext(t.Context(), `UPDATE graphs SET runner_id = ? WHERE id = ?`, old.ID, kept.ID); err != nil {
		t.Fatal(err)
	}
	r, moved, err := db.Reregister(t.Context(), old.ID, "v1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(moved) != 1 || moved[0] != kept.ID {
		t.Errorf("moved = %v, want only %s", moved, kept.ID)
	}
	for id, want := range map[string]string{kept.ID: r.ID, taken.ID: peer.ID} {
		if g, _ := db.GetGraph(t.Context(), id); g.RunnerID != want {
			t.Errorf("graph %s belongs to %s, want %s", id, g.RunnerID, want)
		}
	}
	if open, _ := db.OpenSessions(t.Context(), r.ID); len(open) != 1 {
		t.Errorf("the new runner has %d open sessions, want the old one's", len(open))
	}
	if got, _ := db.GetRunner(t.Context(), r.ID); !got.Live(time.Now()) {
		t.Errorf("the new runner is not live: %+v", got)
	}
	if got, _ := db.GetRunner(t.Context(), old.ID); got.StoppedAt == nil {
		t.Errorf("the old runner is not stopped")
	}
}

// Every unfinished graph has a live owner or is found by reconciliation: a reaped runner
// that still owns one is listed.
func TestUnreapedRunners_ReapedWithUnfinishedGraph(t *testing.T) {
	db := openTestDB(t)
	self, _ := db.RegisterRunner(t.Context(), "v1", time.Minute)
	zombie, _ := db.RegisterRunner(t.Context(), "v1", time.Minute)
	done, _ := db.RegisterRunner(t.Context(), "v1", time.Minute)
	if _, err := insertTestGraph(t, db, zombie.ID); err != nil {
		t.Fatal(err)
	}
	db.MarkReaped(t.Context(), zombie.ID)
	db.MarkReaped(t.Context(), done.ID)
	rs, _ := db.UnreapedRunners(t.Context(), self.ID)
	var ids []string
	for _, x := range rs {
		ids = append(ids, x.ID)
	}
	if !slices.Contains(ids, zombie.ID) || slices.Contains(ids, done.ID) {
		t.Errorf("UnreapedRunners = %v, want the reaped %s (it owns an unfinished graph) and not the reaped %s", ids, zombie.ID, done.ID)
	}
}

// A write waiting on a lock another process holds ends as ErrBusy, after the store's
// retries or when the caller's context ends, and writes nothing.
func TestWrite_ErrBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), workspace.DBFileName)
	db, err := OpenWith(t.Context(), path, Options{BusyTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RegisterRunner(t.Context(), "test", time.Minute); !errors.Is(err, ErrBusy) {
		t.Errorf("a write with the lock held past the retries = %v, want ErrBusy", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	if _, err := db.RegisterRunner(ctx, "test", time.Minute); !errors.Is(err, ErrBusy) {
		t.Errorf("a write whose context ended while the lock was held = %v, want ErrBusy", err)
	}
	conn.ExecContext(t.Context(), "ROLLBACK")
	if rs, _ := db.ListRunners(t.Context()); len(rs) != 0 {
		t.Errorf("a busy write wrote %d runners", len(rs))
	}
	if _, err := db.RegisterRunner(t.Context(), "test", time.Minute); err != nil {
		t.Errorf("a write after the lock was released: %v", err)
	}
}

// UpdateOwnedTasks names the graphs whose updates it ignored because another runner owns
// them, and only those: an update ignored because the task is final already is not one.
func TestUpdateOwnedTasks_Disowned(t *testing.T) {
	db := openTestDB(t)
	owner, _ := db.RegisterRunner(t.Context(), "owner", time.Minute)
	gone, _ := db.RegisterRunner(t.Context(), "gone", time.Minute)
	mine, err := insertTestGraph(t, db, owner.ID)
	if err != nil {
		t.Fatal(err)
	}
	adopted, err := insertTestGraph(t, db, gone.ID)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	done := TaskState{Status: "succeeded", Attempt: 1, TaskDetail: TaskDetail{StartedAt: &now, FinishedAt: &now}}
	if _, err := db.UpdateOwnedTasks(t.Context(), owner.ID, []TaskUpdate{{GraphID: mine.ID, TaskID: "a", TaskState: done}}); err != nil {
		t.Fatal(err)
	}
	running := TaskState{Status: "running", Attempt: 2, TaskDetail: TaskDetail{StartedAt: &now}}
	got, err := db.UpdateOwnedTasks(t.Context(), owner.ID, []TaskUpdate{
		{GraphID: mine.ID, TaskID: "a", TaskState: running}, // final already: ignored, still ours
		{GraphID: adopted.ID, TaskID: "a", TaskState: running},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{adopted.ID}; !slices.Equal(got, want) {
		t.Errorf("UpdateOwnedTasks = %q, want %q", got, want)
	}
	if rows, _ := db.GraphTasks(t.Context(), adopted.ID); rows[0].Status != "pending" {
		t.Errorf("task of a graph not ours = %s, want pending", rows[0].Status)
	}
}
