package tasks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcp-harness/mcp-harness/internal/storetest"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/store"
)

// testBusyTimeout is the busy timeout of the stores in these tests: short, so that a lock
// held past it (and past the store's retries) takes seconds, not minutes.
const testBusyTimeout = 100 * time.Millisecond

// syncBuffer is a log destination read while the engine writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lockEnv is an engine on a store with a short busy timeout, its log captured.
type lockEnv struct {
	*testEnv
	log *syncBuffer
}

func newLockEnv(t *testing.T, mutate ...func(*Config)) *lockEnv {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
	ws, err := workspace.Open(workspace.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.OpenWith(t.Context(), ws.DBPath(), store.Options{BusyTimeout: testBusyTimeout})
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.RegisterRunner(t.Context(), "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	buf := &syncBuffer{}
	cfg := Config{
		DB: db, RunnerID: r.ID, Workspace: ws, MaxParallel: 4, KillGrace: time.Second,
		Logger: slog.New(slog.NewTextHandler(buf, nil)), Lease: time.Minute,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	e := NewEngine(cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testWait)
		defer cancel()
		e.Close(ctx)
		db.Close()
		if t.Failed() {
			t.Logf("engine log:\n%s", buf)
		}
	})
	<-e.started // its reconciliation at start is over: the tests take the lock after it
	return &lockEnv{testEnv: &testEnv{e: e, db: db, ws: ws, dir: ws.Root}, log: buf}
}

// waitLog waits until the engine's log contains want.
func waitLog(t *testing.T, log *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for !strings.Contains(log.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the engine never logged %q", want)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
}

// A write lock held by another process for longer than the busy timeout (and the store's
// retries) while tasks finish: no state is dropped, the runner says it waits, dependents
// run once the lock is released, and the graph finishes. Submit meanwhile answers a
// retryable store.ErrBusy and stores nothing.
func TestEngine_LockedDatabaseLosesNoState(t *testing.T) {
	te := newLockEnv(t, func(c *Config) { c.SubmitWait = time.Second })
	gate := filepath.Join(te.dir, "gate")
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		tsk("a", "while [ ! -f "+gate+" ]; do sleep 0.01; done; echo a done"),
		tsk("b", "echo b ran", "a"),
		tsk("c", "echo c ran", "b"),
	}})
	te.waitStatus(t, sub.Graph.ID, "a", Running)

	release := storetest.HoldWriteLock(t, te.db.Path())
	os.WriteFile(gate, nil, 0o600) // a exits 0 while nothing can be written
	waitLog(t, te.log, "waiting for the database to record task states")

	_, err := te.e.Submit(t.Context(), Spec{Tasks: []TaskSpec{tsk("x", "true")}})
	if !errors.Is(err, store.ErrBusy) {
		t.Errorf("Submit with the database locked = %v, want store.ErrBusy", err)
	}
	release()

	tasks := te.waitDone(t, sub.Graph.ID)
	for _, id := range []string{"a", "b", "c"} {
		wantState(t, tasks, id, Succeeded, "")
	}
	waitLog(t, te.log, "the database records task states again")
	if logs, _ := os.ReadFile(te.e.LogPath(sub.Graph.ID, "c")); string(logs) != "c ran\n" {
		t.Errorf("c's log = %q: the dependent did not run", logs)
	}
	if list, _ := te.db.ListGraphs(t.Context(), "", 10); len(list) != 1 {
		t.Errorf("%d graphs stored, want 1: a Submit refused as busy must store nothing", len(list))
	}
}

// A clean shutdown while another process holds the lock: Close still returns (within its
// deadline and a little more), the states it could not write are saved beside the
// database, and the runner that reconciles this one records them: a that exited 0 is
// succeeded, b that never started and c pending are cancelled with RUNNER_SHUTDOWN.
func TestEngine_CloseWithLockedDatabaseSavesStates(t *testing.T) {
	te := newLockEnv(t)
	gate := filepath.Join(te.dir, "gate")
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		tsk("a", "while [ ! -f "+gate+" ]; do sleep 0.01; done"),
		tsk("b", "echo b ran", "a"),
		tsk("c", "echo c ran", "b"),
	}})
	te.waitStatus(t, sub.Graph.ID, "a", Running)
	release := storetest.HoldWriteLock(t, te.db.Path())
	os.WriteFile(gate, nil, 0o600)
	waitLog(t, te.log, "waiting for the database to record task states")

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- te.e.Close(ctx) }()
	select {
	case <-closed:
	case <-time.After(testWait):
		t.Fatal("Close did not return while the database was locked")
	}
	waitLog(t, te.log, "saved for the next runner")
	if _, err := os.Stat(filepath.Join(te.ws.StateDir, "unrecorded", te.e.RunnerID()+".jsonl")); err != nil {
		t.Fatalf("no saved states: %v", err)
	}
	release()
	// Server.Close marks the runner stopped after the engine's Close: it could not, with
	// the lock held; it is done here so that the next runner finds this one gone at once
	// (the process of a real runner would be dead by then).
	if err := te.db.StopRunner(t.Context(), te.e.RunnerID()); err != nil {
		t.Fatal(err)
	}

	r, err := te.db.RegisterRunner(t.Context(), "next", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	next := NewEngine(Config{DB: te.db, RunnerID: r.ID, Workspace: te.ws, Logger: slog.New(slog.NewTextHandler(te.log, nil))})
	defer next.Close(context.Background())
	if err := next.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows, err := te.db.GraphTasks(t.Context(), sub.Graph.ID)
	if err != nil {
		t.Fatal(err)
	}
	tasks := map[string]Task{}
	for _, row := range rows {
		tasks[row.ID] = taskOf(row)
	}
	wantState(t, tasks, "a", Succeeded, "")
	wantState(t, tasks, "b", Cancelled, CodeRunnerShutdown)
	wantState(t, tasks, "c", Cancelled, CodeRunnerShutdown)
	if tasks["b"].Attempt != 0 || tasks["b"].StartedAt != nil {
		t.Errorf("b = attempt %d, started %v: it never started", tasks["b"].Attempt, tasks["b"].StartedAt)
	}
	if g, _ := te.db.GetGraph(t.Context(), sub.Graph.ID); g.FinishedAt == nil {
		t.Errorf("the graph is not finished")
	}
	if _, err := os.Stat(filepath.Join(te.ws.StateDir, "unrecorded", te.e.RunnerID()+".jsonl")); !os.IsNotExist(err) {
		t.Errorf("the saved states are still there after they were recorded: %v", err)
	}
}

// With a long chain pending, a shutdown records every pending task cancelled with
// RUNNER_SHUTDOWN: none is "skipped because a dependency was cancelled".
func TestEngine_CloseRecordsChainCancelled(t *testing.T) {
	te := newTestEngine(t)
	const n = 2000
	ts := []TaskSpec{tsk("t0", "sleep 1000")}
	for i := 1; i < n; i++ {
		ts = append(ts, tsk(fmt.Sprintf("t%d", i), "true", fmt.Sprintf("t%d", i-1)))
	}
	sub := te.submit(t, Spec{Tasks: ts})
	te.waitStatus(t, sub.Graph.ID, "t0", Running)
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	if err := te.e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := te.db.GraphTasks(t.Context(), sub.Graph.ID)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, r := range rows[1:] {
		code := ""
		if r.ErrorCode != nil {
			code = *r.ErrorCode
		}
		counts[r.Status+"/"+code]++
	}
	if want := (map[string]int{"cancelled/RUNNER_SHUTDOWN": n - 1}); fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("the pending tasks of the chain were recorded %v, want %v", counts, want)
	}
	if r := rows[0]; r.Status != "failed" || r.ErrorCode == nil || *r.ErrorCode != CodeRunnerShutdown {
		t.Errorf("the running task = %s/%v, want failed/RUNNER_SHUTDOWN", r.Status, r.ErrorCode)
	}
}
