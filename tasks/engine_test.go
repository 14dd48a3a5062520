package tasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
)

func TestEngine_DiamondRunsInDependencyOrder(t *testing.T) {
	te := newTestEngine(t)
	log := filepath.Join(te.dir, "order.txt")
	app := func(id string) string { return "echo " + id + " >> " + log }
	sub := te.submit(t, Spec{Name: "diamond", Tasks: []TaskSpec{
		tsk("d", app("d"), "b", "c"), tsk("b", app("b"), "a"), tsk("c", app("c"), "a"), tsk("a", app("a")),
	}})
	if !sub.Created || sub.Progress.Total != 4 || sub.Progress.Pending+sub.Progress.Running != 4 || sub.Remote != 0 {
		t.Fatalf("Submit = %+v", sub)
	}
	tasks := te.waitDone(t, sub.Graph.ID)
	for _, id := range []string{"a", "b", "c", "d"} {
		wantState(t, tasks, id, Succeeded, "")
		if r := tasks[id]; r.Attempt != 1 || r.ExitCode == nil || *r.ExitCode != 0 || r.StartedAt == nil || r.FinishedAt == nil {
			t.Errorf("task %s = %+v", id, r)
		}
	}
	rows, err := te.db.GraphTasks(t.Context(), sub.Graph.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Pid == nil {
			t.Errorf("task %s has no recorded pid", r.ID)
		}
	}
	b, _ := os.ReadFile(log)
	lines := strings.Fields(string(b))
	pos := map[string]int{}
	for i, l := range lines {
		pos[l] = i
	}
	if len(lines) != 4 || pos["a"] != 0 || pos["d"] != 3 {
		t.Errorf("run order = %v, want a first and d last", lines)
	}
	if ProgressOf(mapValues(tasks)).State() != GraphSucceeded {
		t.Errorf("graph status = %s", ProgressOf(mapValues(tasks)).State())
	}
}

// overlap returns the most tasks that ran at once, from "start"/"end" lines.
func overlap(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cur, most := 0, 0
	for _, l := range strings.Fields(string(b)) {
		if l == "start" {
			cur++
		} else {
			cur--
		}
		most = max(most, cur)
	}
	return most
}

func TestEngine_ParallelismCaps(t *testing.T) {
	t.Run("per graph", func(t *testing.T) {
		te := newTestEngine(t, func(c *Config) { c.MaxParallel = 8 })
		log := filepath.Join(te.dir, "spans.txt")
		var ts []TaskSpec
		for i := 0; i < 6; i++ {
			ts = append(ts, tsk(fmt.Sprintf("t%d", i), "echo start >> "+log+"; sleep 0.2; echo end >> "+log))
		}
		sub := te.submit(t, Spec{Tasks: ts, MaxParallel: 2})
		te.waitDone(t, sub.Graph.ID)
		if got := overlap(t, log); got != 2 {
			t.Errorf("most tasks at once = %d, want 2 (maxParallel)", got)
		}
	})
	t.Run("runner wide", func(t *testing.T) {
		// --max-parallel 1 holds each graph to one task at a time whatever its
		// maxParallel; a second graph gets the one slot every graph may take (see
		// TestEngine_NoGraphWaitsBehindAnother), and no more.
		te := newTestEngine(t, func(c *Config) { c.MaxParallel = 1 })
		all := filepath.Join(te.dir, "spans.txt")
		var subs []Submitted
		for g := 0; g < 2; g++ {
			own := filepath.Join(te.dir, fmt.Sprintf("spans%d.txt", g))
			span := "echo start >> " + all + "; echo start >> " + own + "; sleep 0.1; echo end >> " + own + "; echo end >> " + all
			subs = append(subs, te.submit(t, Spec{MaxParallel: 4, Tasks: []TaskSpec{tsk("x", span), tsk("y", span), tsk("z", span)}}))
		}
		for _, s := range subs {
			te.waitDone(t, s.Graph.ID)
		}
		for g := 0; g < 2; g++ {
			if got := overlap(t, filepath.Join(te.dir, fmt.Sprintf("spans%d.txt", g))); got != 1 {
				t.Errorf("graph %d: most tasks at once = %d, want 1 (--max-parallel)", g, got)
			}
		}
		if got := overlap(t, all); got > 2 {
			t.Errorf("most tasks at once over both graphs = %d, want at most 2 (one slot, and one for the second graph)", got)
		}
	})
}

func TestEngine_FailureSkipsDependentsOnly(t *testing.T) {
	te := newTestEngine(t)
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		tsk("build", "echo compiling; exit 2"), tsk("test", "true", "build"), tsk("deploy", "true", "test"),
		tsk("lint", "true"),
	}})
	tasks := te.waitDone(t, sub.Graph.ID)
	wantState(t, tasks, "build", Failed, CodeExitNonzero)
	if r := tasks["build"]; r.ExitCode == nil || *r.ExitCode != 2 {
		t.Errorf("build exit code = %v, want 2", r.ExitCode)
	}
	wantState(t, tasks, "test", Skipped, CodeUpstreamFailed)
	wantState(t, tasks, "deploy", Skipped, CodeUpstreamFailed)
	wantState(t, tasks, "lint", Succeeded, "")
	if m := tasks["test"].Message; m == nil || !strings.Contains(*m, "build") {
		t.Errorf("skip message = %v, want it to name build", m)
	}
	if ProgressOf(mapValues(tasks)).State() != GraphFailed {
		t.Errorf("graph status = %s, want failed", ProgressOf(mapValues(tasks)).State())
	}
	tail, err := TailLog(te.e.LogPath(sub.Graph.ID, "build"), 100)
	if err != nil || tail.Text != "compiling\n" {
		t.Errorf("build log = %q, %v", tail.Text, err)
	}
}

func TestEngine_FailFast(t *testing.T) {
	te := newTestEngine(t)
	sub := te.submit(t, Spec{FailFast: true, MaxParallel: 2, Tasks: []TaskSpec{
		tsk("slow", "sleep 60"), tsk("bad", "exit 1"), tsk("later", "true", "slow"),
	}})
	tasks := te.waitDone(t, sub.Graph.ID)
	wantState(t, tasks, "bad", Failed, CodeExitNonzero)
	wantState(t, tasks, "slow", Cancelled, CodeCancelled)
	if s := tasks["later"].Status; s != Skipped && s != Cancelled {
		t.Errorf("later = %s, want skipped or cancelled", s)
	}
}

func TestEngine_Timeout(t *testing.T) {
	te := newTestEngine(t)
	sub := te.submit(t, Spec{Tasks: []TaskSpec{{ID: "hang", Command: "sleep 60", TimeoutSec: 1}, tsk("after", "true", "hang")}})
	tasks := te.waitDone(t, sub.Graph.ID)
	wantState(t, tasks, "hang", Failed, CodeTimeout)
	wantState(t, tasks, "after", Skipped, CodeUpstreamFailed)
}

func TestEngine_Retries(t *testing.T) {
	te := newTestEngine(t)
	marker := filepath.Join(te.dir, "tried")
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		{ID: "flaky", Command: "if [ -f " + marker + " ]; then echo second; else touch " + marker + "; echo first; exit 1; fi", Retries: 2},
		{ID: "broken", Command: "echo no; exit 3", Retries: 1},
	}})
	tasks := te.waitDone(t, sub.Graph.ID)
	wantState(t, tasks, "flaky", Succeeded, "")
	if a := tasks["flaky"].Attempt; a != 2 {
		t.Errorf("flaky attempts = %d, want 2", a)
	}
	wantState(t, tasks, "broken", Failed, CodeExitNonzero)
	if a := tasks["broken"].Attempt; a != 2 {
		t.Errorf("broken attempts = %d, want 2 (1 + 1 retry)", a)
	}
	log, _ := ReadLog(te.e.LogPath(sub.Graph.ID, "flaky"), 0, 1000)
	if !strings.Contains(log.Text, "first") || !strings.Contains(log.Text, "attempt 2 of 3") || !strings.Contains(log.Text, "second") {
		t.Errorf("flaky log = %q, want both attempts with a marker", log.Text)
	}
}

// A task has no terminal and reads /dev/null: one that reads its input ends at once.
func TestEngine_StdinIsEmpty(t *testing.T) {
	te := newTestEngine(t)
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		tsk("cat", "cat; echo done"),
		tsk("ask", "read -r -p 'Continue? ' answer"),
		tsk("env", "echo $GIT_TERMINAL_PROMPT $PAGER $EXTRA"),
		{ID: "override", Command: "echo $PAGER", Env: map[string]string{"PAGER": "less"}},
	}})
	tasks := te.waitDone(t, sub.Graph.ID)
	wantState(t, tasks, "cat", Succeeded, "")
	wantState(t, tasks, "ask", Failed, CodeExitNonzero) // read fails on end of input
	if out, _ := ReadLog(te.e.LogPath(sub.Graph.ID, "env"), 0, 100); strings.TrimSpace(out.Text) != "0 cat" {
		t.Errorf("task env defaults = %q, want \"0 cat\"", out.Text)
	}
	if out, _ := ReadLog(te.e.LogPath(sub.Graph.ID, "override"), 0, 100); strings.TrimSpace(out.Text) != "less" {
		t.Errorf("env override = %q, want less", out.Text)
	}
}

func TestEngine_SpawnFailed(t *testing.T) {
	te := newTestEngine(t)
	if err := os.Mkdir(filepath.Join(te.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		tsk("rm", "rmdir "+filepath.Join(te.dir, "sub")),
		{ID: "in-sub", Command: "true", DependsOn: []string{"rm"}, Cwd: "sub"},
	}})
	tasks := te.waitDone(t, sub.Graph.ID)
	wantState(t, tasks, "in-sub", Failed, CodeSpawnFailed)
}

func TestEngine_CancelKillsProcessGroup(t *testing.T) {
	te := newTestEngine(t)
	pidFile := filepath.Join(te.dir, "grandchild.pid")
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		tsk("server", "sleep 1000 & echo $! > "+pidFile+"; wait"),
		tsk("after", "true", "server"),
		tsk("other", "sleep 1000"),
	}, MaxParallel: 1})
	te.waitStatus(t, sub.Graph.ID, "server", Running)
	grandchild := waitForPid(t, pidFile)

	res, err := te.e.Cancel(t.Context(), sub.Graph.ID, []string{"server"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]Outcome{}
	for _, r := range res {
		outcomes[r.ID] = r.Outcome
	}
	// "after" is skipped once "server" has actually stopped, not before.
	if outcomes["server"] != OutcomeCancelling || len(res) != 1 {
		t.Errorf("Cancel = %+v, want server cancelling", res)
	}
	te.waitStatus(t, sub.Graph.ID, "server", Cancelled)
	waitProcessGone(t, grandchild)

	// Cancelling the rest (the pending "other") and then again is idempotent.
	if _, err := te.e.Cancel(t.Context(), sub.Graph.ID, nil, time.Second); err != nil {
		t.Fatal(err)
	}
	tasks := te.waitDone(t, sub.Graph.ID)
	wantState(t, tasks, "server", Cancelled, CodeCancelled)
	wantState(t, tasks, "after", Skipped, CodeUpstreamCancelled)
	res, err = te.e.Cancel(t.Context(), sub.Graph.ID, []string{"server", "other"}, time.Second)
	if err != nil || len(res) != 2 || res[0].Outcome != OutcomeAlreadyTerminal || res[1].Outcome != OutcomeAlreadyTerminal {
		t.Errorf("second Cancel = %+v, %v; want already_terminal twice", res, err)
	}
	if _, err := te.e.Cancel(t.Context(), sub.Graph.ID, []string{"nope"}, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("Cancel of an unknown task = %v, want ErrNotFound", err)
	}
	if _, err := te.e.Cancel(t.Context(), "g-nope", nil, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("Cancel of an unknown graph = %v, want ErrNotFound", err)
	}
}

func TestEngine_Idempotency(t *testing.T) {
	te := newTestEngine(t)
	spec := Spec{IdempotencyKey: "build-42", Tasks: []TaskSpec{tsk("a", "true")}}
	first := te.submit(t, spec)
	second := te.submit(t, spec)
	if !first.Created || second.Created || second.Graph.ID != first.Graph.ID {
		t.Fatalf("second submit = %s created=%v, want %s not created", second.Graph.ID, second.Created, first.Graph.ID)
	}
	te.waitDone(t, first.Graph.ID)
	entries, _ := os.ReadDir(te.ws.LogsDir())
	if len(entries) != 1 {
		t.Errorf("log dirs = %d, want 1", len(entries))
	}
}

// Close records what it stops truthfully and leaves no process behind.
func TestEngine_CloseRecordsShutdown(t *testing.T) {
	te := newTestEngine(t)
	pidFile := filepath.Join(te.dir, "pid")
	sub := te.submit(t, Spec{MaxParallel: 1, Tasks: []TaskSpec{
		tsk("run", "sleep 1000 & echo $! > "+pidFile+"; wait"), tsk("queued", "true"),
	}})
	te.waitStatus(t, sub.Graph.ID, "run", Running)
	grandchild := waitForPid(t, pidFile)
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	if err := te.e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitProcessGone(t, grandchild)
	rows, err := te.db.GraphTasks(t.Context(), sub.Graph.ID)
	if err != nil {
		t.Fatal(err)
	}
	tasks := map[string]Task{}
	for _, r := range rows {
		tasks[r.ID] = taskOf(r)
	}
	wantState(t, tasks, "run", Failed, CodeRunnerShutdown)
	wantState(t, tasks, "queued", Cancelled, CodeRunnerShutdown)
	if _, err := te.e.Submit(t.Context(), Spec{Tasks: []TaskSpec{tsk("x", "true")}}); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit after Close = %v, want ErrClosed", err)
	}
}

func TestEngine_WaitUntilChange(t *testing.T) {
	te := newTestEngine(t)
	gate := filepath.Join(te.dir, "gate")
	sub := te.submit(t, Spec{Tasks: []TaskSpec{tsk("a", "while [ ! -f "+gate+" ]; do sleep 0.05; done")}})
	te.waitStatus(t, sub.Graph.ID, "a", Running)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, ok, err := te.e.Wait(ctx, sub.Graph.ID, nil, UntilChange); ok || err != nil {
		t.Fatalf("Wait with nothing changing = %v, %v; want not met", ok, err)
	}
	os.WriteFile(gate, nil, 0o600)
	ctx2, cancel2 := context.WithTimeout(t.Context(), testWait)
	defer cancel2()
	snap, ok, err := te.e.Wait(ctx2, sub.Graph.ID, []string{"a"}, UntilChange)
	if !ok || err != nil || snap.Tasks[0].Status != Succeeded {
		t.Fatalf("Wait until change = %v, %v, %+v", ok, err, snap.Tasks)
	}
	if _, _, err := te.e.Wait(ctx2, sub.Graph.ID, []string{"zzz"}, UntilDone); !errors.Is(err, ErrNotFound) {
		t.Errorf("Wait on an unknown task = %v, want ErrNotFound", err)
	}
}

// After Close nothing of this runner changes any more: a wait on a graph it still owns
// unfinished (its last states saved for the next runner, as a Close past its deadline on
// a locked database leaves it) answers at once, not when its own deadline ends.
func TestEngine_WaitAfterCloseOnAnOwnedGraphReturns(t *testing.T) {
	te := newTestEngine(t)
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	if err := te.e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	g := store.GraphRow{ID: store.NewID("g-"), RunnerID: te.e.RunnerID(), MaxParallel: 1, CreatedAt: time.Now()}
	if _, _, err := te.db.InsertGraph(t.Context(), g, []store.TaskRow{{GraphID: g.ID, ID: "a", Command: "true", Cwd: te.dir,
		TaskState: store.TaskState{Status: string(Pending)}}}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		ids   []string
		until Until
	}{{nil, UntilDone}, {[]string{"a"}, UntilDone}, {nil, UntilChange}} {
		snap, ok, err := te.e.Wait(ctx, g.ID, w.ids, w.until)
		if ctx.Err() != nil {
			t.Fatalf("Wait(%v, %s) after Close ran until its deadline", w.ids, w.until)
		}
		if ok || err != nil || len(snap.Tasks) != 1 || snap.Tasks[0].Status != Pending {
			t.Errorf("Wait(%v, %s) after Close = %v, %v, %+v; want the graph as it is, not met", w.ids, w.until, ok, err, snap.Tasks)
		}
	}
}

// A refused graph leaves no row and no file.
func TestEngine_InvalidGraphStoresNothing(t *testing.T) {
	te := newTestEngine(t)
	bad := []Spec{
		{Tasks: []TaskSpec{tsk("a", "true", "b"), tsk("b", "true", "a")}},
		{Tasks: []TaskSpec{tsk("a", "true", "nope")}},
		{Tasks: []TaskSpec{tsk("a", "true"), tsk("a", "true")}},
		{Tasks: []TaskSpec{tsk("a", "  ")}},
		{Tasks: []TaskSpec{{ID: "a", Command: "true", Cwd: ".."}}},
	}
	for _, spec := range bad {
		if _, err := te.e.Submit(t.Context(), spec); err == nil {
			t.Errorf("Submit(%+v) succeeded", spec.Tasks)
		}
	}
	if tasks, _, err := te.db.ListTasks(t.Context(), store.ListFilter{Limit: 10}); err != nil || len(tasks) != 0 {
		t.Errorf("stored tasks after refusals = %d, %v", len(tasks), err)
	}
	if entries, _ := os.ReadDir(te.ws.LogsDir()); len(entries) != 0 {
		t.Errorf("log dirs after refusals = %d, want 0", len(entries))
	}
}

func TestLogs_PagingAndTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.log")
	var b strings.Builder
	for i := 0; b.Len() < 3<<20; i++ {
		b.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	content := b.String()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	offset := int64(0)
	for pages := 0; ; pages++ {
		s, err := ReadLog(path, offset, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(s.Text)
		if s.Size != int64(len(content)) || s.Offset != offset {
			t.Fatalf("page %d: %+v", pages, s)
		}
		offset = s.NextOffset
		if s.EOF {
			break
		}
	}
	if got.String() != content {
		t.Errorf("paged read differs from the file")
	}
	tail, err := TailLog(path, 100)
	if err != nil || !strings.HasSuffix(content, tail.Text) || len(tail.Text) > 100 || len(tail.Text) < 80 || content[tail.Offset-1] != '\n' || !tail.EOF {
		t.Errorf("TailLog = %d bytes, eof %v, %v; want the last lines of at most 100 bytes", len(tail.Text), tail.EOF, err)
	}
	missing, err := TailLog(filepath.Join(t.TempDir(), "none.log"), 100)
	if err != nil || missing.Text != "" || !missing.EOF {
		t.Errorf("TailLog of a missing log = %+v, %v", missing, err)
	}
	utf := filepath.Join(t.TempDir(), "utf.log")
	os.WriteFile(utf, []byte("héllo wörld"), 0o600)
	if s, _ := TailLog(utf, 4); s.Text != "rld" { // the 4th byte from the end is half of ö
		t.Errorf("TailLog(4) = %q, want \"rld\" (no half character)", s.Text)
	}
}

// A cancel from another process goes through the store; the owning runner carries it out.
func TestEngine_CancelFromAnotherRunner(t *testing.T) {
	owner := newTestEngine(t)
	r2, err := owner.db.RegisterRunner(t.Context(), "second", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	other := NewEngine(Config{DB: owner.db, RunnerID: r2.ID, Workspace: owner.ws,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { other.Close(context.Background()) })

	pidFile := filepath.Join(owner.dir, "pid")
	sub := owner.submit(t, Spec{MaxParallel: 1, Tasks: []TaskSpec{
		tsk("run", "sleep 1000 & echo $! > "+pidFile+"; wait"), tsk("queued", "true"), tsk("after", "true", "queued"),
	}})
	owner.waitStatus(t, sub.Graph.ID, "run", Running)
	grandchild := waitForPid(t, pidFile)

	res, err := other.Cancel(t.Context(), sub.Graph.ID, nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Outcome{}
	for _, r := range res {
		got[r.ID] = r.Outcome
	}
	// The running task may already be stopped and recorded by the time the answer is read.
	if (got["run"] != OutcomeCancelling && got["run"] != OutcomeCancelled) || got["queued"] != OutcomeCancelled ||
		(got["after"] != OutcomeSkipped && got["after"] != OutcomeCancelled) || len(got) != 3 {
		t.Errorf("cross-runner Cancel = %v, want run cancelling or cancelled, queued cancelled, after skipped or cancelled", got)
	}
	tasks := owner.waitDone(t, sub.Graph.ID)
	wantState(t, tasks, "run", Cancelled, CodeCancelled)
	wantState(t, tasks, "queued", Cancelled, CodeCancelled)
	waitProcessGone(t, grandchild)

	// A graph whose runner is gone cannot be cancelled through it: the canceller
	// reconciles the gone runner at once, and cancels the graph it adopted.
	dead, err := owner.db.RegisterRunner(t.Context(), "dead", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	orphan := store.GraphRow{ID: store.NewID("g-"), RunnerID: dead.ID, MaxParallel: 1, CreatedAt: time.Now()}
	if _, _, err := owner.db.InsertGraph(t.Context(), orphan, []store.TaskRow{{ID: "x", Command: "sleep 1000", Cwd: owner.dir, TaskState: store.TaskState{Status: "pending"}}}); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(owner.ws.LogsDir(), orphan.ID), 0o700)
	owner.db.StopRunner(t.Context(), dead.ID) // a stopped runner can store no graph: stop it after
	res, err = other.Cancel(t.Context(), orphan.ID, nil, time.Second)
	if err != nil || len(res) != 1 || (res[0].Outcome != OutcomeCancelled && res[0].Outcome != OutcomeCancelling) {
		t.Errorf("Cancel of a dead runner's graph = %+v, %v, want x cancelled (or cancelling)", res, err)
	}
	// The canceller reconciled the dead runner at once (or the other engine did, on its
	// own round, a moment before): a live runner carried the cancel out.
	wantState(t, owner.waitDone(t, orphan.ID), "x", Cancelled, CodeCancelled)
}

// TestEngine_EveryDependencyHolds runs a web of tasks whose dependencies are named out of
// submitted order, some tasks with many and some with none, one of them failing: every
// task that ran must have run after each of its dependencies, and every task downstream of
// the failure must be skipped naming a dependency of its own that did not succeed. The
// engine keeps the edges of a graph in one array (linkEdges); a task reading another's
// range would run early or be skipped for a task it does not depend on.
func TestEngine_EveryDependencyHolds(t *testing.T) {
	te := newTestEngine(t)
	log := filepath.Join(te.dir, "order.txt")
	const n = 40
	deps := make([][]string, n)
	var specs []TaskSpec
	for i := range n {
		// Dependencies on later and earlier tasks alike, never on itself nor in a cycle:
		// task i depends on tasks with a higher number, a few of them.
		for _, j := range []int{i + 1, i + 3, i + 7, 2*i + 5} {
			if j < n && (j%4 != 0 || i%5 == 0) && !slices.Contains(deps[i], fmt.Sprintf("t%d", j)) {
				deps[i] = append(deps[i], fmt.Sprintf("t%d", j))
			}
		}
		cmd := "echo t" + strconv.Itoa(i) + " >> " + log
		if i == 21 {
			cmd = "exit 3"
		}
		specs = append(specs, tsk(fmt.Sprintf("t%d", i), cmd, deps[i]...))
	}
	sub := te.submit(t, Spec{Name: "web", Tasks: specs})
	tasks := te.waitDone(t, sub.Graph.ID)

	b, _ := os.ReadFile(log)
	pos := map[string]int{}
	for i, l := range strings.Fields(string(b)) {
		pos[l] = i
	}
	// failedUpstream says whether id is the failing task or downstream of it.
	var failedUpstream func(id string) bool
	failedUpstream = func(id string) bool {
		if id == "t21" {
			return true
		}
		i, _ := strconv.Atoi(strings.TrimPrefix(id, "t"))
		return slices.ContainsFunc(deps[i], failedUpstream)
	}
	skipped := 0
	for i := range n {
		id := fmt.Sprintf("t%d", i)
		r := tasks[id]
		switch {
		case id == "t21":
			wantState(t, tasks, id, Failed, CodeExitNonzero)
		case failedUpstream(id):
			skipped++
			wantState(t, tasks, id, Skipped, CodeUpstreamFailed)
			if r.Message == nil || !slices.ContainsFunc(deps[i], func(d string) bool {
				return strings.Contains(*r.Message, "dependency "+d+" ") && tasks[d].Status != Succeeded
			}) {
				t.Errorf("%s skipped with %v, want a dependency of its own (%v) that did not succeed named", id, r.Message, deps[i])
			}
		default:
			wantState(t, tasks, id, Succeeded, "")
			for _, d := range deps[i] {
				if pos[d] >= pos[id] {
					t.Errorf("%s ran at %d, before (or with) its dependency %s at %d", id, pos[id], d, pos[d])
				}
			}
		}
	}
	if skipped == 0 {
		t.Fatal("no task was downstream of the failure: the test checks nothing of skips")
	}
}
