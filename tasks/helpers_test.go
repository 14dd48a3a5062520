package tasks

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/store"
)

// testWait bounds every wait in these tests. It is generous on purpose: it only limits
// how long a broken test hangs; nothing here asserts speed.
const testWait = 60 * time.Second

type testEnv struct {
	e   *Engine
	db  *store.DB
	ws  *workspace.Workspace
	dir string // the workspace root
}

func newTestEngine(t *testing.T, mutate ...func(*Config)) *testEnv {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
	return startTestEngine(t, mutate...)
}

// startTestEngine is newTestEngine for a test's further engines: the test's first checks
// that nothing is left once they are all closed (the cleanups run last first).
func startTestEngine(t *testing.T, mutate ...func(*Config)) *testEnv {
	t.Helper()
	ws, err := workspace.Open(workspace.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(t.Context(), ws.DBPath())
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.RegisterRunner(t.Context(), "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		DB: db, RunnerID: r.ID, Workspace: ws, MaxParallel: 4,
		KillGrace: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
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
	})
	// The tests set up the runners the engine is to reconcile after it started: its own
	// reconciliation at start must not catch one half set up.
	select {
	case <-e.started:
	case <-time.After(testWait):
		t.Fatal("the engine's reconciliation at start did not end")
	}
	return &testEnv{e: e, db: db, ws: ws, dir: ws.Root}
}

func (te *testEnv) submit(t *testing.T, spec Spec) Submitted {
	t.Helper()
	sub, err := te.e.Submit(t.Context(), spec)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	return sub
}

// waitDone waits until the graph is finished and returns its tasks by id.
func (te *testEnv) waitDone(t *testing.T, graphID string) map[string]Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	snap, ok, err := te.e.Wait(ctx, graphID, nil, UntilDone)
	if err != nil || !ok {
		t.Fatalf("graph %s not done within %v: %v", graphID, testWait, err)
	}
	if snap.Graph.FinishedAt == nil {
		t.Errorf("graph finished but finishedAt is not set")
	}
	byID := map[string]Task{}
	for _, r := range snap.Tasks {
		byID[r.ID] = r
	}
	return byID
}

// waitStatus waits until task id of the graph is in state want.
func (te *testEnv) waitStatus(t *testing.T, graphID, id string, want State) Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	var found Task
	_, ok, err := te.e.WaitFor(ctx, graphID, func(s Snapshot) (bool, error) {
		for _, r := range s.Tasks {
			if r.ID == id && r.Status == want {
				found = r
				return true, nil
			}
		}
		return false, nil
	})
	if !ok || err != nil {
		t.Fatalf("task %s never became %s: %v", id, want, err)
	}
	return found
}

func tsk(id, cmd string, deps ...string) TaskSpec {
	return TaskSpec{ID: id, Command: cmd, DependsOn: deps}
}

func wantState(t *testing.T, tasks map[string]Task, id string, state State, code string) {
	t.Helper()
	r := tasks[id]
	gotCode := ""
	if r.ErrorCode != nil {
		gotCode = *r.ErrorCode
	}
	if r.Status != state || gotCode != code {
		msg := ""
		if r.Message != nil {
			msg = *r.Message
		}
		t.Errorf("task %s = %s/%q (%s), want %s/%q", id, r.Status, gotCode, msg, state, code)
	}
}
func waitForPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	waitUntil(t, "a pid in "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

// waitProcessGone waits until pid has exited (a zombie counts: it runs no more).
func waitProcessGone(t *testing.T, pid int) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("process %d gone", pid), func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		i := strings.LastIndexByte(string(b), ')')
		return i > 0 && len(b) > i+2 && b[i+2] == 'Z'
	})
}

// waitUntil polls cond until it holds, failing the test after testWait.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", testWait, what)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
}

func mapValues(m map[string]Task) []Task {
	out := make([]Task, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// waitParked waits until some waiter holds n's channel for graphID: a wait that is
// parked on it depends on the channel's next fire to wake.
func waitParked(t *testing.T, n *notifier, graphID string) {
	t.Helper()
	waitUntil(t, "a wait parked on graph "+graphID, func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.chans[graphID] != nil
	})
}

// waitGone waits until nothing exists at path.
func waitGone(t *testing.T, path string) {
	t.Helper()
	waitUntil(t, path+" to be gone", func() bool {
		_, err := os.Stat(path)
		return os.IsNotExist(err)
	})
}

// adoptAsPeer makes a peer runner adopt the graphs of runner id as store.AdoptGraphs does
// when it judges a runner gone: id is stopped and its unfinished graphs are the peer's.
func (te *testEnv) adoptAsPeer(t *testing.T, id string) store.Runner {
	t.Helper()
	peer, err := te.db.RegisterRunner(t.Context(), "peer", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	self, err := te.db.GetRunner(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := te.db.AdoptGraphs(t.Context(), self, peer.ID, CodeRunnerRestarted, "judged gone"); err != nil {
		t.Fatal(err)
	}
	return peer
}

// fifoGate makes a FIFO named name in dir for one task to wait on (`read x < gate`) and
// returns its path. One task a gate: a second reader of the same FIFO may read end of file.
func fifoGate(t *testing.T, dir, name string) string {
	t.Helper()
	gate := filepath.Join(dir, name)
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	return gate
}

// gated is task id running then once let through its own gate: it writes its pid to
// <dir>/<id>.pid first, so that waitGated knows its process runs (a task recorded running
// may still be starting), then waits at the FIFO <dir>/<id> (openGate).
func (te *testEnv) gated(t *testing.T, id, then string, deps ...string) TaskSpec {
	t.Helper()
	gate := fifoGate(t, te.dir, id)
	return tsk(id, "echo $$ > "+gate+".pid; read x < "+gate+"; "+then, deps...)
}

// waitGated waits until task id (gated) runs and waits at its gate.
func (te *testEnv) waitGated(t *testing.T, id string) {
	t.Helper()
	waitForPid(t, filepath.Join(te.dir, id+".pid"))
}

// openGate lets the task waiting on gate (fifoGate) go on.
func openGate(t *testing.T, gate string) {
	t.Helper()
	f, err := os.OpenFile(gate, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("go\n")
	f.Close()
}
