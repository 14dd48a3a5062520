package tasks

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/procid"
	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks/archive"
)

// rawExec runs a statement on the database file directly, to set up states that only a
// crash or the passing of time produce.
func rawExec(t *testing.T, path, q string, args ...any) (sql.Result, error) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return db.ExecContext(t.Context(), q, args...)
}

// deadRunner registers a runner whose process has exited: gone at once, lease or not.
func deadRunner(t *testing.T, db *store.DB) store.Runner {
	t.Helper()
	r, err := db.RegisterRunner(t.Context(), "crashed", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// Make the row name a process that is gone: a child that has been reaped.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := rawExec(t, db.Path(), `UPDATE runners SET pid = ?, proc_start = 12345 WHERE id = ?`, cmd.Process.Pid, r.ID); err != nil {
		t.Fatal(err)
	}
	return r
}

// orphanGraph stores a graph of a dead runner as that runner left it: "run" running (a
// real process in its own session, with a grandchild), "after" waiting on it, "free"
// pending.
func orphanGraph(t *testing.T, te *testEnv, dead store.Runner) (graphID string, leader, grandchild int) {
	t.Helper()
	pidFile := filepath.Join(te.dir, "grandchild")
	cmd := exec.Command("bash", "-c", "sleep 1000 & echo $! > "+pidFile+"; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait() // reaped whenever it dies
	grandchild = waitForPid(t, pidFile)
	leader = cmd.Process.Pid
	ident := procid.Identify(leader)
	now := time.Now().UTC()
	g := store.GraphRow{ID: store.NewID("g-"), RunnerID: dead.ID, MaxParallel: 1, CreatedAt: now}
	rows := []store.TaskRow{
		{ID: "run", Seq: 0, Command: "sleep 1000", Cwd: te.dir, TaskState: store.TaskState{Status: "pending"}},
		{ID: "after", Seq: 1, Command: "true", Cwd: te.dir, DependsOn: []string{"run"}, TaskState: store.TaskState{Status: "pending"}},
		{ID: "free", Seq: 2, Command: "echo adopted", Cwd: te.dir, TaskState: store.TaskState{Status: "pending"}},
	}
	for i := range rows {
		rows[i].GraphID = g.ID
	}
	if _, _, err := te.db.InsertGraph(t.Context(), g, rows); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(te.ws.LogsDir(), g.ID), 0o700)
	if err := te.db.UpdateTasks(t.Context(), dead.ID, []store.TaskUpdate{{GraphID: g.ID, TaskID: "run", TaskState: store.TaskState{
		Status: "running", Attempt: 1, TaskDetail: store.TaskDetail{Pid: &leader, Pgid: &leader, ProcStart: &ident.ProcStart, StartedAt: &now}}}}); err != nil {
		t.Fatal(err)
	}
	return g.ID, leader, grandchild
}

func TestReconcile_AdoptsGraphsOfAGoneRunner(t *testing.T) {
	te := newTestEngine(t)
	dead := deadRunner(t, te.db)
	graphID, leader, grandchild := orphanGraph(t, te, dead)

	if err := te.e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	tasks := te.waitDone(t, graphID)
	wantState(t, tasks, "run", Failed, CodeRunnerRestarted)
	if m := tasks["run"].Message; m == nil || !strings.Contains(*m, dead.ID) {
		t.Errorf("message = %v, want it to name the gone runner", m)
	}
	wantState(t, tasks, "after", Skipped, CodeUpstreamFailed)
	wantState(t, tasks, "free", Succeeded, "")
	waitProcessGone(t, leader)
	waitProcessGone(t, grandchild)
	g, _ := te.db.GetGraph(t.Context(), graphID)
	if g.RunnerID != te.e.cfg.RunnerID {
		t.Errorf("graph owner = %s, want the adopting runner", g.RunnerID)
	}
	if rs, _ := te.db.UnreapedRunners(t.Context(), te.e.cfg.RunnerID); len(rs) != 0 {
		t.Errorf("runners left unreaped: %+v", rs)
	}
}

// Several runners reconciling at once: exactly one adopts each graph.
func TestReconcile_ExactlyOneAdopter(t *testing.T) {
	te := newTestEngine(t)
	dead := deadRunner(t, te.db)
	var graphs []string
	for i := 0; i < 5; i++ {
		now := time.Now()
		g := store.GraphRow{ID: store.NewID("g-"), RunnerID: dead.ID, MaxParallel: 1, CreatedAt: now}
		if _, _, err := te.db.InsertGraph(t.Context(), g, []store.TaskRow{{GraphID: g.ID, ID: "a", Command: "true", Cwd: te.dir, TaskState: store.TaskState{Status: "pending"}}}); err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(te.ws.LogsDir(), g.ID), 0o700)
		graphs = append(graphs, g.ID)
	}
	engines := []*Engine{te.e}
	for i := 0; i < 2; i++ {
		r, _ := te.db.RegisterRunner(t.Context(), "peer", time.Minute)
		e := NewEngine(Config{DB: te.db, RunnerID: r.ID, Workspace: te.ws,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		t.Cleanup(func() { e.Close(context.Background()) })
		engines = append(engines, e)
	}
	var wg sync.WaitGroup
	for _, e := range engines {
		wg.Go(func() { e.Reconcile(t.Context()) })
	}
	wg.Wait()
	for _, id := range graphs {
		tasks := te.waitDone(t, id)
		if r := tasks["a"]; r.Status != Succeeded || r.Attempt != 1 {
			t.Errorf("graph %s task = %s attempt %d, want succeeded once", id, r.Status, r.Attempt)
		}
	}
}

// A running runner is not gone just because it is another runner.
func TestReconcile_LeavesLiveRunnersAlone(t *testing.T) {
	te := newTestEngine(t)
	r, _ := te.db.RegisterRunner(t.Context(), "alive", time.Hour) // this process: alive
	g := store.GraphRow{ID: store.NewID("g-"), RunnerID: r.ID, MaxParallel: 1, CreatedAt: time.Now()}
	te.db.InsertGraph(t.Context(), g, []store.TaskRow{{GraphID: g.ID, ID: "a", Command: "true", Cwd: te.dir, TaskState: store.TaskState{Status: "pending"}}})
	if err := te.e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, _ := te.db.GetGraph(t.Context(), g.ID)
	if got.RunnerID != r.ID {
		t.Errorf("a live runner's graph was adopted")
	}
}

// readArtifact returns the manifest and the logs of an artifact.
func readArtifact(t *testing.T, path string) (Manifest, map[string][]byte) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var m Manifest
	logs := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "manifest.json" {
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
		} else {
			logs[h.Name] = b
		}
	}
	return m, logs
}

// checkManifest fails unless every log in the archive matches its manifest entry.
func checkManifest(t *testing.T, m Manifest, logs map[string][]byte) {
	t.Helper()
	for _, mt := range m.Tasks {
		if mt.Log == nil {
			continue
		}
		b, ok := logs[mt.Log.Name]
		sum := sha256.Sum256(b)
		if !ok || int64(len(b)) != mt.Log.Bytes || hex.EncodeToString(sum[:]) != mt.Log.SHA256 {
			t.Errorf("log %s: %d bytes in the archive, manifest says %d bytes sha256 %s", mt.Log.Name, len(b), mt.Log.Bytes, mt.Log.SHA256)
		}
	}
}

func TestSpool_ArchivesFinishedGraphsAndExpires(t *testing.T) {
	te := newTestEngine(t, func(c *Config) {
		c.Retention = time.Hour
		c.ArtifactsDir = c.Workspace.ArtifactsDir
	})
	sub := te.submit(t, Spec{Name: "spooled", Tasks: []TaskSpec{tsk("a", "seq 1 1000"), tsk("b", "echo bye; exit 3")}})
	te.waitDone(t, sub.Graph.ID)

	a, err := te.e.spool(t.Context(), sub.Graph.ID)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(a.Path); err != nil || fi.Size() != a.Bytes || fi.Mode().Perm() != 0o600 {
		t.Fatalf("artifact %s: %v %v", a.Path, fi, err)
	}
	m, logs := readArtifact(t, a.Path)
	checkManifest(t, m, logs)
	if m.Graph.GraphID != sub.Graph.ID || m.Graph.Status != "failed" || len(m.Tasks) != 2 || *m.Tasks[1].ExitCode != 3 {
		t.Errorf("manifest = %+v", m)
	}
	if string(logs["logs/b.log"]) != "bye\n" {
		t.Errorf("b.log in the archive = %q", logs["logs/b.log"])
	}
	again, err := te.e.spool(t.Context(), sub.Graph.ID)
	if err != nil || again.SHA256 != a.SHA256 {
		t.Errorf("second spool = %v, %v; want the same archive", again.SHA256, err)
	}

	// Retention: make the graph have finished two hours ago; Expire removes its live logs.
	if _, err := rawExec(t, te.db.Path(), `UPDATE graphs SET finished_at = finished_at - 7200000 WHERE id = ?`, sub.Graph.ID); err != nil {
		t.Fatal(err)
	}
	if err := te.e.Expire(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(te.ws.LogsDir(), sub.Graph.ID)); !os.IsNotExist(err) {
		t.Errorf("live logs still there after expiry: %v", err)
	}
	if g, _ := te.db.GetGraph(t.Context(), sub.Graph.ID); g.ExpiredAt == nil {
		t.Errorf("graph not marked expired")
	}
	tail, err := readArtifactLog(a.Path, "a", -9, 9)
	if err != nil || tail.Text != "999\n1000\n" || !tail.EOF {
		t.Errorf("tail from the artifact = %q, %v", tail.Text, err)
	}
	page, err := readArtifactLog(a.Path, "a", 0, 4)
	if err != nil || page.Text != "1\n2\n" || page.NextOffset != 4 || page.EOF {
		t.Errorf("page from the artifact = %+v, %v", page, err)
	}
}

// A spool cut short leaves only a temporary file; the next runner removes it and spools
// the graph again, and nothing ever appears half-written under the final name.
func TestSpool_InterruptedIsRedone(t *testing.T) {
	te := newTestEngine(t)
	sub := te.submit(t, Spec{Tasks: []TaskSpec{tsk("a", "seq 1 100")}})
	te.waitDone(t, sub.Graph.ID)
	dead := deadRunner(t, te.db)
	stale := filepath.Join(te.ws.ArtifactsDir, archive.TempPrefix+dead.ID+"-"+sub.Graph.ID+"-123")
	if err := os.WriteFile(stale, []byte("half an archive"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A new engine with spooling on plays the next runner to start.
	r, _ := te.db.RegisterRunner(t.Context(), "next", time.Minute)
	next := NewEngine(Config{DB: te.db, RunnerID: r.ID, Workspace: te.ws,
		ArtifactsDir: te.ws.ArtifactsDir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	deadline := time.Now().Add(testWait)
	for {
		if _, err := te.db.GetArtifact(t.Context(), sub.Graph.ID); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the unspooled graph was not spooled by the next runner")
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
	next.Close(context.Background())
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary archive still there: %v", err)
	}
	a, _ := te.db.GetArtifact(t.Context(), sub.Graph.ID)
	m, logs := readArtifact(t, a.Path)
	checkManifest(t, m, logs)
}

// A gone runner's PTY session rows: the processes are killed and the rows closed.
func TestReconcile_KillsSessionsOfAGoneRunner(t *testing.T) {
	te := newTestEngine(t)
	dead := deadRunner(t, te.db)
	cmd := exec.Command("bash", "-c", "sleep 1000 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	pid := cmd.Process.Pid
	if err := te.db.InsertSession(t.Context(), store.SessionRow{RunnerID: dead.ID, ID: "s1", Command: "bash", Cwd: te.dir,
		Identity: procid.Identify(pid), Pgid: pid, StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := te.e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitProcessGone(t, pid)
	if open, _ := te.db.OpenSessions(t.Context(), dead.ID); len(open) != 0 {
		t.Errorf("session rows still open: %+v", open)
	}
}

// A runner whose process exists but has been silent well past its lease has stalled: it is
// gone, unless the judge has itself just woken up (its own lease expired too).
func TestReconcile_StalledRunner(t *testing.T) {
	te := newTestEngine(t)
	stalled, _ := te.db.RegisterRunner(t.Context(), "stalled", time.Minute) // this live process
	g := store.GraphRow{ID: store.NewID("g-"), RunnerID: stalled.ID, MaxParallel: 1, CreatedAt: time.Now()}
	te.db.InsertGraph(t.Context(), g, []store.TaskRow{{GraphID: g.ID, ID: "a", Command: "true", Cwd: te.dir, TaskState: store.TaskState{Status: "pending"}}})
	os.MkdirAll(filepath.Join(te.ws.LogsDir(), g.ID), 0o700)
	expire := func(id string, ago time.Duration) {
		if _, err := rawExec(t, te.db.Path(), `UPDATE runners SET lease_expires_at = ? WHERE id = ?`, time.Now().Add(-ago).UnixMilli(), id); err != nil {
			t.Fatal(err)
		}
	}
	expire(stalled.ID, 10*time.Second) // not silent for long enough yet
	te.e.Reconcile(t.Context())
	if got, _ := te.db.GetGraph(t.Context(), g.ID); got.RunnerID != stalled.ID {
		t.Fatalf("a runner 10s past its lease was taken over")
	}
	expire(stalled.ID, time.Hour)
	expire(te.e.cfg.RunnerID, time.Second) // the judge itself has just woken up
	te.e.Reconcile(t.Context())
	if got, _ := te.db.GetGraph(t.Context(), g.ID); got.RunnerID != stalled.ID {
		t.Fatalf("a runner whose own lease expired took over a stalled one")
	}
	if err := te.db.RenewLease(t.Context(), te.e.cfg.RunnerID, time.Minute); err != nil {
		t.Fatal(err)
	}
	te.e.Reconcile(t.Context())
	tasks := te.waitDone(t, g.ID)
	wantState(t, tasks, "a", Succeeded, "")
}

// A runner whose graph was adopted by another does not start its tasks any more.
func TestEngine_AdoptedGraphIsNotStartedTwice(t *testing.T) {
	te := newTestEngine(t, func(c *Config) { c.MaxParallel = 1 })
	gate := filepath.Join(te.dir, "gate")
	sub := te.submit(t, Spec{Tasks: []TaskSpec{tsk("first", "while [ ! -f "+gate+" ]; do sleep 0.02; done"), tsk("second", "touch second-ran")}})
	te.waitStatus(t, sub.Graph.ID, "first", Running)
	other, _ := te.db.RegisterRunner(t.Context(), "adopter", time.Minute)
	if _, err := rawExec(t, te.db.Path(), `UPDATE graphs SET runner_id = ? WHERE id = ?`, other.ID, sub.Graph.ID); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(gate, nil, 0o600) // first ends; the slot frees; second must not start here
	deadline := time.Now().Add(testWait)
	for {
		te.e.mu.Lock()
		_, still := te.e.graphs[sub.Graph.ID]
		te.e.mu.Unlock()
		if !still {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runner still schedules graph %s, adopted by another, after %v", sub.Graph.ID, testWait)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
	if _, err := os.Stat(filepath.Join(te.dir, "second-ran")); err == nil {
		t.Errorf("the second task ran although the graph was adopted by another runner")
	}
	rows, _ := te.db.GraphTasks(t.Context(), sub.Graph.ID)
	for _, r := range rows {
		if r.ID == "second" && State(r.Status) != Pending {
			t.Errorf("second = %s, want pending (left to the adopter)", r.Status)
		}
	}
}

// A runner that died between starting a task and recording its pid: the next runner finds
// the task's processes by the marker in their environment.
func TestReconcile_FindsUnrecordedProcessesByMarker(t *testing.T) {
	te := newTestEngine(t)
	dead := deadRunner(t, te.db)
	g := store.GraphRow{ID: store.NewID("g-"), RunnerID: dead.ID, MaxParallel: 1, CreatedAt: time.Now()}
	if _, _, err := te.db.InsertGraph(t.Context(), g, []store.TaskRow{{GraphID: g.ID, ID: "a", Command: "sleep 1000", Cwd: te.dir, TaskState: store.TaskState{Status: "pending"}}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	te.db.UpdateTasks(t.Context(), dead.ID, []store.TaskUpdate{{GraphID: g.ID, TaskID: "a", TaskState: store.TaskState{Status: "running", Attempt: 1, TaskDetail: store.TaskDetail{StartedAt: &now}}}})
	cmd := exec.Command("sleep", "1000")
	cmd.Env = append(os.Environ(), taskMarker(g.ID, "a"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	if err := te.e.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitProcessGone(t, cmd.Process.Pid)
	wantState(t, te.waitDone(t, g.ID), "a", Failed, CodeRunnerRestarted)
}
