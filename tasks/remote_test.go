package tasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/store"
)

// fakeRemote is a remote executor made of this machine's processes, for the engine's own
// tests of its remote path (the real one needs a cluster: tasks/kube and the e2e tests).
// Unlike the local executor it writes an attempt's output to a file of its own, so the
// engine must follow it into the task's log with Attach, as it follows a pod's log.
type fakeRemote struct {
	inner *LocalExecutor
	ws    string // the workspace root: attempts run in it (no snapshot needed)
	out   string // where attempts write their output

	mu         sync.Mutex
	running    int
	peak       int
	starts     int
	failStarts int   // Starts to refuse as unavailable before one succeeds
	checkErr   error // what Check says
}

func newFakeRemote(t *testing.T, ws string) *fakeRemote {
	inner := NewLocalExecutor(nil, nil)
	t.Cleanup(func() { inner.Close() })
	return &fakeRemote{inner: inner, ws: ws, out: t.TempDir()}
}

func (f *fakeRemote) Name() ExecutorName { return ExecutorKubernetes }

func (f *fakeRemote) Check(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.checkErr
}

func (f *fakeRemote) Start(ctx context.Context, a Attempt) (Placement, error) {
	f.mu.Lock()
	if f.failStarts > 0 {
		f.failStarts--
		f.mu.Unlock()
		return Placement{}, fmt.Errorf("%w: the fake cluster does not answer", ErrExecutorUnavailable)
	}
	f.mu.Unlock()
	if _, err := f.inner.Status(ctx, a.ID); err == nil {
		return Placement{Job: "job-" + a.ID.TaskID}, nil // taken over
	}
	dir := filepath.Join(f.ws, a.Cwd)
	la := a
	la.Log = filepath.Join(f.out, fmt.Sprintf("%s-%s-%d", a.ID.GraphID, a.ID.TaskID, a.ID.Attempt))
	la.Dir, la.Policy = &sandbox.Where{Path: dir, Exec: dir}, sandbox.Unconfined
	la.Env = append(os.Environ(), a.Env...)
	if _, err := f.inner.Start(ctx, la); err != nil {
		return Placement{}, err
	}
	f.mu.Lock()
	f.starts++
	f.running++
	f.peak = max(f.peak, f.running)
	f.mu.Unlock()
	return Placement{Job: "job-" + a.ID.TaskID}, nil
}

func (f *fakeRemote) Attach(ctx context.Context, id AttemptID, offset int64) (io.ReadCloser, error) {
	return f.inner.Attach(ctx, id, offset)
}

func (f *fakeRemote) Wait(ctx context.Context, id AttemptID, placed func(Placement)) (RunStatus, error) {
	if placed != nil {
		placed(Placement{Job: "job-" + id.TaskID, Pod: "pod-" + id.TaskID, Node: "node-1"})
	}
	st, err := f.inner.Wait(ctx, id, nil)
	if err == nil {
		f.mu.Lock()
		f.running--
		f.mu.Unlock()
	}
	return st, err
}

func (f *fakeRemote) Status(ctx context.Context, id AttemptID) (RunStatus, error) {
	return f.inner.Status(ctx, id)
}

func (f *fakeRemote) Cancel(ctx context.Context, id AttemptID, grace time.Duration) error {
	return f.inner.Cancel(ctx, id, grace)
}

func (f *fakeRemote) List(ctx context.Context, ws string) ([]RunStatus, error) {
	return f.inner.List(ctx, ws)
}

func (f *fakeRemote) Release(id AttemptID) { f.inner.Release(id) }

func remoteTask(id, cmd string, deps ...string) TaskSpec {
	return TaskSpec{ID: id, Command: cmd, DependsOn: deps, Executor: ExecutorKubernetes}
}

// A remote task's output reaches its log through Attach, stdout and stderr interleaved;
// where it ran is recorded; its dependents and a local task beside it run as usual.
func TestRemote_RunsAndFollows(t *testing.T) {
	var fake *fakeRemote
	te := newTestEngine(t, func(c *Config) {
		fake = newFakeRemote(t, c.Workspace.Root)
		c.Kubernetes = fake
	})
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		remoteTask("first", "echo out; echo err >&2; sleep 0.1; echo more"),
		remoteTask("second", "exit 4", "first"),
		tsk("here", "echo local", "first"),
		remoteTask("third", "true", "second"),
	}})
	byID := te.waitDone(t, sub.Graph.ID)
	wantState(t, byID, "first", Succeeded, "")
	wantState(t, byID, "second", Failed, CodeExitNonzero)
	wantState(t, byID, "here", Succeeded, "")
	wantState(t, byID, "third", Skipped, CodeUpstreamFailed)
	if b, _ := os.ReadFile(te.e.LogPath(sub.Graph.ID, "first")); string(b) != "out\nerr\nmore\n" {
		t.Errorf("first's log = %q", b)
	}
	f := byID["first"]
	if f.Executor != ExecutorKubernetes || f.Pod == nil || *f.Pod != "pod-first" || f.Node == nil || *f.Node != "node-1" || f.Job == nil {
		t.Errorf("first ran on %s, job %v, pod %v, node %v", f.Executor, f.Job, f.Pod, f.Node)
	}
	if byID["here"].Executor != ExecutorLocal || byID["here"].Pod != nil {
		t.Errorf("here ran on %s, pod %v", byID["here"].Executor, byID["here"].Pod)
	}
}

// Remote tasks wait for a pod slot: never more at once than MaxPods, whatever the graph
// allows, and the local cap does not hold them back.
func TestRemote_MaxPods(t *testing.T) {
	var fake *fakeRemote
	te := newTestEngine(t, func(c *Config) {
		fake = newFakeRemote(t, c.Workspace.Root)
		c.Kubernetes, c.MaxPods, c.MaxParallel = fake, 3, 1
	})
	var list []TaskSpec
	for i := range 12 {
		list = append(list, remoteTask(fmt.Sprintf("t%d", i), "sleep 0.2"))
	}
	sub := te.submit(t, Spec{Tasks: list, MaxParallel: 12})
	for id, tk := range te.waitDone(t, sub.Graph.ID) {
		if tk.Status != Succeeded {
			t.Errorf("%s = %s", id, tk.Status)
		}
	}
	if fake.peak != 3 {
		t.Errorf("%d remote attempts ran at once, want 3 (MaxPods), the local cap of 1 not applying", fake.peak)
	}
}

// A graph with a remote task is refused when no cluster is configured or it does not
// answer: ErrExecutorUnavailable, and nothing stored.
func TestRemote_Unavailable(t *testing.T) {
	fake := &fakeRemote{checkErr: fmt.Errorf("%w: the API server does not answer", ErrExecutorUnavailable)}
	for _, c := range []struct {
		name string
		ex   Executor
		want string
	}{{"NotConfigured", nil, "no Kubernetes cluster is configured"}, {"NotAnswering", fake, "does not answer"}} {
		t.Run(c.name, func(t *testing.T) {
			te := newTestEngine(t, func(cfg *Config) { cfg.Kubernetes = c.ex })
			_, err := te.e.Submit(t.Context(), Spec{Executor: ExecutorKubernetes, Tasks: []TaskSpec{tsk("a", "true")}})
			if !errors.Is(err, ErrExecutorUnavailable) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Submit = %v, want ErrExecutorUnavailable saying %q", err, c.want)
			}
			if gs, _ := te.db.ListGraphs(t.Context(), "", 10); len(gs) != 0 {
				t.Errorf("a refused graph was stored: %+v", gs)
			}
		})
	}
}

// A start the cluster does not answer leaves the task pending, and it starts once the
// cluster answers again: never lost, never failed for it.
func TestRemote_StartRetriedWhileUnavailable(t *testing.T) {
	var fake *fakeRemote
	te := newTestEngine(t, func(c *Config) {
		fake = newFakeRemote(t, c.Workspace.Root)
		fake.failStarts = 2
		c.Kubernetes = fake
	})
	sub := te.submit(t, Spec{Tasks: []TaskSpec{remoteTask("a", "echo finally")}})
	byID := te.waitDone(t, sub.Graph.ID)
	wantState(t, byID, "a", Succeeded, "")
	if byID["a"].Attempt != 1 {
		t.Errorf("attempt = %d, want 1: the starts refused were no attempts", byID["a"].Attempt)
	}
	if b, _ := os.ReadFile(te.e.LogPath(sub.Graph.ID, "a")); string(b) != "finally\n" {
		t.Errorf("log = %q", b)
	}
}

// A remote task that a gone runner left running is not RUNNER_RESTARTED: the adopter
// takes its attempt over and follows its output from the byte the log has (what the gone
// runner had followed is not written twice), and the task ends as its command did.
func TestRemote_AdopterReattaches(t *testing.T) {
	var fake *fakeRemote
	te := newTestEngine(t, func(c *Config) {
		fake = newFakeRemote(t, c.Workspace.Root)
		c.Kubernetes = fake
	})
	dead := deadRunner(t, te.db)
	now := time.Now().UTC()
	g := store.GraphRow{ID: store.NewID("g-"), RunnerID: dead.ID, MaxParallel: 2, CreatedAt: now}
	rows := []store.TaskRow{
		{ID: "long", Seq: 0, Command: "for i in 1 2 3 4 5 6; do echo line $i; sleep 0.1; done", Cwd: te.dir, Executor: string(ExecutorKubernetes), TaskState: store.TaskState{Status: "pending"}},
		{ID: "after", Seq: 1, Command: "echo after", Cwd: te.dir, Executor: string(ExecutorKubernetes), DependsOn: []string{"long"}, TaskState: store.TaskState{Status: "pending"}},
	}
	for i := range rows {
		rows[i].GraphID = g.ID
	}
	if _, _, err := te.db.InsertGraph(t.Context(), g, rows); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(te.ws.LogsDir(), g.ID), 0o700)
	// What the gone runner did: it started the attempt and followed its first two lines
	// into the task's log, after a line of its own (the attempt starts at byte 9).
	id := AttemptID{Workspace: te.e.workspaceID, GraphID: g.ID, TaskID: "long", Attempt: 1}
	if _, err := fake.Start(t.Context(), Attempt{ID: id, Command: rows[0].Command}); err != nil {
		t.Fatal(err)
	}
	logPath := te.e.LogPath(g.ID, "long")
	head := "preface\n"
	waitUntil(t, "two lines of output", func() bool {
		rc, err := fake.Attach(t.Context(), id, 0)
		if err != nil {
			return false
		}
		defer rc.Close()
		b := make([]byte, 14)
		n, _ := io.ReadFull(rc, b)
		if n == 14 {
			head += string(b) // "line 1\nline 2\n"
			return true
		}
		return false
	})
	os.WriteFile(logPath, []byte(head), 0o600)
	start := int64(len("preface\n"))
	job := "job-long"
	if err := te.db.UpdateTasks(t.Context(), dead.ID, []store.TaskUpdate{{GraphID: g.ID, TaskID: "long", TaskState: store.TaskState{
		Status: "running", Attempt: 1, TaskDetail: store.TaskDetail{StartedAt: &now, Job: &job, LogStart: &start}}}}); err != nil {
		t.Fatal(err)
	}
	if err := te.e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	byID := te.waitDone(t, g.ID)
	wantState(t, byID, "long", Succeeded, "")
	wantState(t, byID, "after", Succeeded, "")
	b, _ := os.ReadFile(logPath)
	if want := "preface\nline 1\nline 2\nline 3\nline 4\nline 5\nline 6\n"; string(b) != want {
		t.Errorf("the log after the take-over = %q, want %q", b, want)
	}
	if fake.starts != 2 {
		t.Errorf("%d processes started, want 2 (long once, after once)", fake.starts)
	}
}

// A remote task taken over whose Job is gone cannot be followed, nor told how it ended:
// RUNNER_RESTARTED, saying so.
func TestRemote_AdopterFindsJobGone(t *testing.T) {
	te := newTestEngine(t, func(c *Config) { c.Kubernetes = newFakeRemote(t, c.Workspace.Root) })
	dead := deadRunner(t, te.db)
	now := time.Now().UTC()
	g := store.GraphRow{ID: store.NewID("g-"), RunnerID: dead.ID, MaxParallel: 1, CreatedAt: now}
	rows := []store.TaskRow{{GraphID: g.ID, ID: "lost", Command: "true", Cwd: te.dir, Executor: string(ExecutorKubernetes), TaskState: store.TaskState{Status: "pending"}}}
	te.db.InsertGraph(t.Context(), g, rows)
	job := "job-lost"
	te.db.UpdateTasks(t.Context(), dead.ID, []store.TaskUpdate{{GraphID: g.ID, TaskID: "lost", TaskState: store.TaskState{Status: "running", Attempt: 1, TaskDetail: store.TaskDetail{StartedAt: &now, Job: &job}}}})
	if err := te.e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	byID := te.waitDone(t, g.ID)
	wantState(t, byID, "lost", Failed, CodeRunnerRestarted)
	if m := byID["lost"].Message; m == nil || !strings.Contains(*m, "gone") {
		t.Errorf("message = %v", m)
	}
}

// Cancelling a remote task stops its attempt; a timeout too, and retries apply.
func TestRemote_CancelTimeoutRetry(t *testing.T) {
	te := newTestEngine(t, func(c *Config) { c.Kubernetes = newFakeRemote(t, c.Workspace.Root) })
	to := remoteTask("slow", "sleep 30")
	to.TimeoutSec = 1
	flaky := remoteTask("flaky", `test -e marker || { touch marker; exit 1; }; echo second`)
	flaky.Retries = 1
	sub := te.submit(t, Spec{Tasks: []TaskSpec{remoteTask("long", "sleep 30"), to, flaky}})
	te.waitStatus(t, sub.Graph.ID, "long", Running)
	waitUntil(t, "long's attempt to run", func() bool {
		te.e.mu.Lock()
		defer te.e.mu.Unlock()
		return te.e.graphs[sub.Graph.ID] != nil && te.e.graphs[sub.Graph.ID].task("long").run != nil
	})
	if _, err := te.e.Cancel(t.Context(), sub.Graph.ID, []string{"long"}, time.Second); err != nil {
		t.Fatal(err)
	}
	byID := te.waitDone(t, sub.Graph.ID)
	wantState(t, byID, "long", Cancelled, CodeCancelled)
	wantState(t, byID, "slow", Failed, CodeTimeout)
	wantState(t, byID, "flaky", Succeeded, "")
	if byID["flaky"].Attempt != 2 {
		t.Errorf("flaky ran %d attempts, want 2", byID["flaky"].Attempt)
	}
	b, _ := os.ReadFile(te.e.LogPath(sub.Graph.ID, "flaky"))
	if !strings.Contains(string(b), "--- mcp-harness: attempt 2 of 2 ---\nsecond\n") {
		t.Errorf("flaky's log = %q, want the retry's marker and its output", b)
	}
}

// The sweep for remote attempts nothing follows never stops one this engine starts or
// follows, and stops another runner's only when two sweeps in a row find it unfollowed: a
// Job is created before its runner records the attempt, and a sweep in between must not
// take it for an orphan.
func TestRemote_SweepSparesNewAttempts(t *testing.T) {
	var fake *fakeRemote
	te := newTestEngine(t, func(c *Config) {
		fake = newFakeRemote(t, c.Workspace.Root)
		// A long lease: the watch loop sweeps once, at its start; the test sweeps itself.
		c.Kubernetes, c.Lease = fake, time.Hour
	})
	sub := te.submit(t, Spec{Tasks: []TaskSpec{remoteTask("mine", "sleep 30")}})
	waitUntil(t, "mine's attempt to run", func() bool {
		te.e.mu.Lock()
		defer te.e.mu.Unlock()
		return te.e.graphs[sub.Graph.ID] != nil && te.e.graphs[sub.Graph.ID].task("mine").run != nil
	})
	// Another runner's attempt, not recorded in the store (yet, or ever).
	other := AttemptID{Workspace: te.e.workspaceID, GraphID: "g-other", TaskID: "theirs", Attempt: 1}
	if _, err := fake.Start(t.Context(), Attempt{ID: other, Command: "sleep 30"}); err != nil {
		t.Fatal(err)
	}
	phase := func(id AttemptID) Phase {
		st, err := fake.Status(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return st.Phase
	}
	mine := AttemptID{Workspace: te.e.workspaceID, GraphID: sub.Graph.ID, TaskID: "mine", Attempt: 1}
	seen, err := te.e.sweepRemote(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if phase(other) != PhaseRunning || phase(mine) != PhaseRunning {
		t.Fatalf("after one sweep: theirs %s, mine %s; want both running", phase(other), phase(mine))
	}
	if !seen[other] || seen[mine] {
		t.Errorf("the first sweep found unfollowed %v, want theirs only", seen)
	}
	if _, err := te.e.sweepRemote(t.Context(), seen); err != nil {
		t.Fatal(err)
	}
	st, err := fake.Wait(t.Context(), other, nil)
	if err != nil || !st.Cancelled {
		t.Errorf("after the second sweep theirs = %+v, %v; want it cancelled", st, err)
	}
	if phase(mine) != PhaseRunning {
		t.Errorf("after two sweeps mine = %s, want running", phase(mine))
	}
	if _, err := te.e.Cancel(t.Context(), sub.Graph.ID, []string{"mine"}, time.Second); err != nil {
		t.Fatal(err)
	}
	wantState(t, te.waitDone(t, sub.Graph.ID), "mine", Cancelled, CodeCancelled)
}
