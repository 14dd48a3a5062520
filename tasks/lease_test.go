package tasks

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
)

// A runner that stalled past its lease is judged gone by a peer, which adopts its graph
// (and so marks it stopped). When it wakes, the first graph it is given is stored under a
// new runner (a new epoch) that is live; the adopted graph is forgotten here: its process
// is killed and its pending task left to the adopter.
func TestEngine_LostLeaseRegistersAgain(t *testing.T) {
	te := newTestEngine(t, func(c *Config) { c.MaxParallel = 1 })
	old := te.e.RunnerID()
	pidFile := filepath.Join(te.dir, "pid")
	adopted := te.submit(t, Spec{MaxParallel: 1, Tasks: []TaskSpec{
		tsk("run", "echo $$ > "+pidFile+"; exec sleep 1000"), tsk("queued", "touch queued-ran"),
	}})
	te.waitStatus(t, adopted.Graph.ID, "run", Running)
	leader := waitForPid(t, pidFile)

	// The peer's judgement, as store.AdoptGraphs makes it: this runner is stopped and the
	// graph is the peer's.
	peer := te.adoptAsPeer(t, old)

	sub := te.submit(t, Spec{Tasks: []TaskSpec{tsk("after", "echo woke")}})
	now := te.e.RunnerID()
	if now == old {
		t.Fatalf("the runner stored a graph without registering again")
	}
	if sub.Graph.RunnerID != now {
		t.Errorf("the new graph belongs to %s, want the new runner %s", sub.Graph.RunnerID, now)
	}
	r, err := te.db.GetRunner(t.Context(), now)
	if err != nil || !r.Live(time.Now()) {
		t.Errorf("the new runner is not live: %+v, %v", r, err)
	}
	wantState(t, te.waitDone(t, sub.Graph.ID), "after", Succeeded, "")

	waitProcessGone(t, leader) // what ran of the adopted graph here does not run on
	te.e.mu.Lock()
	_, still := te.e.graphs[adopted.Graph.ID]
	te.e.mu.Unlock()
	if still {
		t.Errorf("the adopted graph is still scheduled here")
	}
	rows, _ := te.db.GraphTasks(t.Context(), adopted.Graph.ID)
	for _, row := range rows {
		if row.ID == "queued" && row.Status != "pending" {
			t.Errorf("queued = %s, want pending, left to the adopter", row.Status)
		}
	}
	if _, err := os.Stat(filepath.Join(te.dir, "queued-ran")); err == nil {
		t.Errorf("the adopted graph's pending task ran here")
	}
	if g, _ := te.db.GetGraph(t.Context(), adopted.Graph.ID); g.RunnerID != peer.ID {
		t.Errorf("the adopted graph belongs to %s, want the peer", g.RunnerID)
	}
}

// A runner found stopped without its graphs adopted (reconciled by a peer that adopted
// nothing, say) keeps them: the lease renewal that finds the lease lost registers again
// and moves them to the new runner, which runs them to the end.
func TestEngine_LostLeaseKeepsGraphsNoOneAdopted(t *testing.T) {
	te := newTestEngine(t)
	old := te.e.RunnerID()
	gate := filepath.Join(te.dir, "gate")
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		tsk("a", "while [ ! -f "+gate+" ]; do sleep 0.01; done"), tsk("b", "true", "a"),
	}})
	te.waitStatus(t, sub.Graph.ID, "a", Running)
	if err := te.db.MarkReaped(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	if err := te.e.keepLease(t.Context()); err != nil {
		t.Fatal(err)
	}
	now := te.e.RunnerID()
	if now == old {
		t.Fatal("the runner did not register again after finding its lease lost")
	}
	if g, _ := te.db.GetGraph(t.Context(), sub.Graph.ID); g.RunnerID != now {
		t.Fatalf("the graph belongs to %s, want the new runner %s", g.RunnerID, now)
	}
	os.WriteFile(gate, nil, 0o600)
	tasks := te.waitDone(t, sub.Graph.ID)
	wantState(t, tasks, "a", Succeeded, "")
	wantState(t, tasks, "b", Succeeded, "")
}

// Every unfinished graph has a live owner or is reconciled: a graph whose runner was
// reaped while it still held the graph (a runner that went on accepting graphs after it
// was reconciled, as a stalled one did) is adopted like any gone runner's.
func TestReconcile_AdoptsGraphsOfAReapedRunner(t *testing.T) {
	te := newTestEngine(t)
	zombie, err := te.db.RegisterRunner(t.Context(), "zombie", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	g := store.GraphRow{ID: store.NewID("g-"), RunnerID: zombie.ID, MaxParallel: 1, CreatedAt: time.Now()}
	if _, _, err := te.db.InsertGraph(t.Context(), g, []store.TaskRow{{GraphID: g.ID, ID: "a", Command: "true", Cwd: te.dir, TaskState: store.TaskState{Status: "pending"}}}); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(te.ws.LogsDir(), g.ID), 0o700)
	if err := te.db.MarkReaped(t.Context(), zombie.ID); err != nil {
		t.Fatal(err)
	}
	if err := te.e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantState(t, te.waitDone(t, g.ID), "a", Succeeded, "")
}

// A runner whose own lease lapsed (it stalled, or the database was locked and no runner
// could renew) judges nobody by silence until it has held its lease again for a whole
// lease: the others get the time to renew theirs.
func TestReconcile_NoJudgementBySilenceRightAfterALapse(t *testing.T) {
	te := newTestEngine(t)
	stalled, _ := te.db.RegisterRunner(t.Context(), "stalled", time.Minute) // this live process
	g := store.GraphRow{ID: store.NewID("g-"), RunnerID: stalled.ID, MaxParallel: 1, CreatedAt: time.Now()}
	te.db.InsertGraph(t.Context(), g, []store.TaskRow{{GraphID: g.ID, ID: "a", Command: "true", Cwd: te.dir, TaskState: store.TaskState{Status: "pending"}}})
	os.MkdirAll(filepath.Join(te.ws.LogsDir(), g.ID), 0o700)
	if _, err := rawExec(t, te.db.Path(), `UPDATE runners SET lease_expires_at = ? WHERE id = ?`, time.Now().Add(-time.Hour).UnixMilli(), stalled.ID); err != nil {
		t.Fatal(err)
	}
	te.e.lease.mu.Lock()
	te.e.lease.renewedAt = time.Now().Add(-time.Hour) // the last renewal before the lapse
	te.e.lease.mu.Unlock()
	if err := te.e.keepLease(t.Context()); err != nil {
		t.Fatal(err)
	}
	te.e.Reconcile(t.Context())
	if got, _ := te.db.GetGraph(t.Context(), g.ID); got.RunnerID != stalled.ID {
		t.Fatalf("a runner that had just renewed after a lapse took over a silent one")
	}
	te.e.lease.mu.Lock()
	te.e.lease.backSince = time.Now().Add(-te.e.cfg.Lease) // a lease later
	te.e.lease.mu.Unlock()
	te.e.Reconcile(t.Context())
	wantState(t, te.waitDone(t, g.ID), "a", Succeeded, "")
}

// A wait for a graph of this runner wakes only when the graph finished (or its owner
// changed): here the graph is adopted by a peer while the wait runs, this runner lets it
// go, and the peer finishes it; the wait sees that.
func TestEngine_WaitFollowsAnAdoptedGraph(t *testing.T) {
	te := newTestEngine(t, func(c *Config) { c.MaxParallel = 1 })
	pidFile := filepath.Join(te.dir, "pid")
	adopted := te.submit(t, Spec{MaxParallel: 1, Tasks: []TaskSpec{
		tsk("run", "echo $$ > "+pidFile+"; exec sleep 1000"), tsk("queued", "true"),
	}})
	te.waitStatus(t, adopted.Graph.ID, "run", Running)
	waitForPid(t, pidFile)
	type waited struct {
		ok  bool
		err error
	}
	done := make(chan waited, 1)
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	go func() {
		_, ok, err := te.e.Wait(ctx, adopted.Graph.ID, nil, UntilDone)
		done <- waited{ok, err}
	}()
	// Parked on this runner's finish before the adoption: a wait that reads the graph
	// only after it would find a foreign graph at once and never need the wake-up.
	waitParked(t, te.e.finishes, adopted.Graph.ID)

	peer := te.adoptAsPeer(t, te.e.RunnerID())
	te.submit(t, Spec{Tasks: []TaskSpec{tsk("after", "true")}}) // registers again, lets the adopted graph go
	// The peer runs what was left and records it.
	now := time.Now().UTC()
	zero := 0
	if err := te.db.UpdateTasks(t.Context(), peer.ID, []store.TaskUpdate{{GraphID: adopted.Graph.ID, TaskID: "queued",
		TaskState: store.TaskState{Status: string(Succeeded), Attempt: 1, TaskDetail: store.TaskDetail{ExitCode: &zero, StartedAt: &now, FinishedAt: &now}}}}); err != nil {
		t.Fatal(err)
	}
	if w := <-done; !w.ok || w.err != nil {
		t.Errorf("Wait on the adopted graph = %v, %v; want it finished", w.ok, w.err)
	}
}
