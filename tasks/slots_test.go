package tasks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// gated is a command that runs until the file gate exists, like a dev server until the
// test is done with it.
func gated(gate string) string { return "while [ ! -e " + gate + " ]; do sleep 0.02; done" }

func holders(w *SlotWait) []string {
	if w == nil {
		return nil
	}
	var out []string
	for _, h := range w.HeldBy {
		out = append(out, h.TaskID)
	}
	return out
}

// Two endless tasks fill --max-parallel 2; a graph submitted after them still runs, one
// task at a time, and the readers name the tasks that hold the slots.
func TestEngine_NoGraphWaitsBehindAnother(t *testing.T) {
	te := newTestEngine(t, func(c *Config) { c.MaxParallel = 2 })
	serverGate := filepath.Join(te.dir, "stop-servers")
	t.Cleanup(func() { os.WriteFile(serverGate, nil, 0o600) })
	dev := te.submit(t, Spec{Name: "dev", MaxParallel: 4, Tasks: []TaskSpec{
		tsk("api", gated(serverGate)), tsk("web", gated(serverGate)), tsk("docs", "true"),
	}})
	te.waitStatus(t, dev.Graph.ID, "api", Running)
	te.waitStatus(t, dev.Graph.ID, "web", Running)

	snap, err := te.e.Snapshot(t.Context(), dev.Graph.ID)
	if err != nil {
		t.Fatal(err)
	}
	w, err := te.e.SlotWait(t.Context(), snap)
	if err != nil || w == nil || w.Cap != CapServer || !slices.Equal(holders(w), []string{"api", "web"}) {
		t.Fatalf("SlotWait(dev, docs ready) = %+v, %v; want the server's cap held by api and web", w, err)
	}

	ciGate := filepath.Join(te.dir, "ci-gate")
	ci := te.submit(t, Spec{Name: "ci", MaxParallel: 4, Tasks: []TaskSpec{
		tsk("build", gated(ciGate)), tsk("test", "echo tested"),
	}})
	te.waitStatus(t, ci.Graph.ID, "build", Running) // its own slot, over the cap
	snap, err = te.e.Snapshot(t.Context(), ci.Graph.ID)
	if err != nil {
		t.Fatal(err)
	}
	w, err = te.e.SlotWait(t.Context(), snap)
	if err != nil || w == nil || w.Cap != CapServer || !slices.Equal(holders(w), []string{"api", "web", "build"}) {
		t.Errorf("SlotWait(ci, test ready) = %+v, %v; want the server's cap held by api, web and build", w, err)
	}
	if err := os.WriteFile(ciGate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	done := te.waitDone(t, ci.Graph.ID) // test gets the graph's slot once build ends
	wantState(t, done, "build", Succeeded, "")
	wantState(t, done, "test", Succeeded, "")

	snap, err = te.e.Snapshot(t.Context(), dev.Graph.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range snap.Tasks {
		want := map[string]State{"api": Running, "web": Running, "docs": Pending}[tk.ID]
		if tk.Status != want {
			t.Errorf("dev/%s = %s, want %s: the dev graph is still held by its own cap", tk.ID, tk.Status, want)
		}
	}
}

// A graph's own maxParallel: its ready tasks wait for its own running ones.
func TestReader_SlotWaitGraphCap(t *testing.T) {
	te := newTestEngine(t, func(c *Config) { c.MaxParallel = 8 })
	gate := filepath.Join(te.dir, "gate")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o600) })
	sub := te.submit(t, Spec{MaxParallel: 1, Tasks: []TaskSpec{tsk("serve", gated(gate)), tsk("smoke", "true")}})
	te.waitStatus(t, sub.Graph.ID, "serve", Running)
	snap, err := te.e.Snapshot(t.Context(), sub.Graph.ID)
	if err != nil {
		t.Fatal(err)
	}
	w, err := te.e.SlotWait(t.Context(), snap)
	if err != nil || w == nil || w.Cap != CapGraph || w.Limit == nil || *w.Limit != 1 || !slices.Equal(holders(w), []string{"serve"}) {
		t.Errorf("SlotWait = %+v, %v; want the graph's cap of 1 held by serve", w, err)
	}
	os.WriteFile(gate, nil, 0o600)
	te.waitDone(t, sub.Graph.ID)
	snap, _ = te.e.Snapshot(t.Context(), sub.Graph.ID)
	if w, err := te.e.SlotWait(t.Context(), snap); w != nil || err != nil {
		t.Errorf("SlotWait of a finished graph = %+v, %v; want nil", w, err)
	}
}

// eventLog collects what Follow reports, safe to read while it runs.
type eventLog struct {
	mu     sync.Mutex
	events []LogEvent
}

func (l *eventLog) add(ev LogEvent) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
	return nil
}

func (l *eventLog) snapshot() []LogEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// text is the log text reported for task id.
func (l *eventLog) text(id string) string {
	var b strings.Builder
	for _, ev := range l.snapshot() {
		if ev.Type == EventLog && ev.TaskID == id {
			b.WriteString(*ev.Text)
		}
	}
	return b.String()
}

// waitEvent waits until an event matching ok has been reported.
func (l *eventLog) waitEvent(t *testing.T, what string, ok func(LogEvent) bool) LogEvent {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for time.Now().Before(deadline) {
		for _, ev := range l.snapshot() {
			if ok(ev) {
				return ev
			}
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
	t.Fatalf("no %s event within %v; got %+v", what, testWait, l.snapshot())
	return LogEvent{}
}

// Following a whole graph: why a task waits, its start, every task's log and how each
// ended, in that order per task; Follow returns once all are terminal.
func TestReader_FollowGraph(t *testing.T) {
	te := newTestEngine(t)
	gate := filepath.Join(te.dir, "gate")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o600) })
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		tsk("build", "echo compiling; "+gated(gate)+"; printf 'no newline at the end'"),
		tsk("test", "echo testing; exit 3", "build"),
		tsk("deploy", "echo never", "test"),
	}})
	te.waitStatus(t, sub.Graph.ID, "build", Running)
	snap, err := te.e.Snapshot(t.Context(), sub.Graph.ID)
	if err != nil {
		t.Fatal(err)
	}
	var l eventLog
	type result struct {
		ts  []Task
		err error
	}
	done := make(chan result, 1)
	go func() {
		ts, err := te.e.Follow(t.Context(), snap, FollowQuery{Tail: -1, Poll: 20 * time.Millisecond}, l.add)
		done <- result{ts, err}
	}()
	w := l.waitEvent(t, "waiting", func(ev LogEvent) bool { return ev.Type == EventWaiting && ev.TaskID == "test" })
	if w.Wait.Reason != ReasonWaiting || len(w.Wait.WaitingOn) != 1 || w.Wait.WaitingOn[0] != (DepState{ID: "build", Status: Running}) {
		t.Errorf("test waits = %+v, want on build (running)", w.Wait)
	}
	l.waitEvent(t, "build's first line", func(ev LogEvent) bool { return ev.Type == EventLog && ev.TaskID == "build" })
	os.WriteFile(gate, nil, 0o600)
	var res result
	select {
	case res = <-done:
	case <-time.After(testWait):
		t.Fatalf("Follow did not return within %v of the graph's end", testWait)
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	var got []string
	for _, tk := range res.ts {
		got = append(got, tk.ID+":"+string(tk.Status))
	}
	if want := []string{"build:succeeded", "test:failed", "deploy:skipped"}; !slices.Equal(got, want) {
		t.Errorf("Follow returned %v, want %v", got, want)
	}
	if got := l.text("build"); got != "compiling\nno newline at the end" {
		t.Errorf("build's log = %q", got)
	}
	if got := l.text("test"); got != "testing\n" {
		t.Errorf("test's log = %q", got)
	}
	// Per task: waiting before started before log before ended, and one ended each.
	order := map[string][]LogEventType{}
	for _, ev := range l.snapshot() {
		if o := order[ev.TaskID]; len(o) == 0 || o[len(o)-1] != ev.Type {
			order[ev.TaskID] = append(o, ev.Type)
		}
	}
	want := map[string][]LogEventType{
		"build":  {EventLog, EventEnded},
		"test":   {EventWaiting, EventStarted, EventLog, EventEnded},
		"deploy": {EventWaiting, EventEnded},
	}
	for id, w := range want {
		if !slices.Equal(order[id], w) {
			t.Errorf("events of %s = %v, want %v", id, order[id], w)
		}
	}
	for _, ev := range l.snapshot() {
		if ev.Type == EventEnded && ev.TaskID == "test" && (ev.Task == nil || ev.Task.ExitCode == nil || *ev.Task.ExitCode != 3) {
			t.Errorf("test's ended event = %+v, want exit code 3", ev.Task)
		}
	}
}

// A ready task waiting for the server's slots says which tasks hold them.
func TestReader_FollowSaysWhoHoldsTheSlot(t *testing.T) {
	te := newTestEngine(t, func(c *Config) { c.MaxParallel = 1 })
	gate := filepath.Join(te.dir, "gate")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o600) })
	sub := te.submit(t, Spec{MaxParallel: 2, Tasks: []TaskSpec{tsk("serve", gated(gate)), tsk("check", "echo checked")}})
	te.waitStatus(t, sub.Graph.ID, "serve", Running)
	snap, err := te.e.Snapshot(t.Context(), sub.Graph.ID)
	if err != nil {
		t.Fatal(err)
	}
	var l eventLog
	done := make(chan error, 1)
	go func() {
		_, err := te.e.Follow(t.Context(), snap, FollowQuery{TaskIDs: []string{"check"}, Tail: -1, Poll: 20 * time.Millisecond}, l.add)
		done <- err
	}()
	w := l.waitEvent(t, "waiting", func(ev LogEvent) bool { return ev.Type == EventWaiting })
	if w.Wait.Reason != ReasonReady || w.Wait.Slots == nil || w.Wait.Slots.Cap != CapServer || !slices.Equal(holders(w.Wait.Slots), []string{"serve"}) {
		t.Errorf("check waits = %+v (slots %+v), want ready, the server's slot held by serve", w.Wait, w.Wait.Slots)
	}
	os.WriteFile(gate, nil, 0o600)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testWait):
		t.Fatalf("Follow did not return within %v", testWait)
	}
	if got := l.text("check"); got != "checked\n" {
		t.Errorf("check's log = %q", got)
	}
}

func TestReader_Resolve(t *testing.T) {
	te := newTestEngine(t)
	ctx := t.Context()
	if _, err := te.e.ResolveGraph(ctx, Latest); !errors.Is(err, ErrNotFound) {
		t.Errorf("ResolveGraph(@latest) with no graphs = %v, want ErrNotFound", err)
	}
	var ids []string
	for range 3 {
		sub := te.submit(t, Spec{Tasks: []TaskSpec{tsk("build", "true"), tsk("build-arm", "true"), tsk("test", "true")}})
		ids = append(ids, sub.Graph.ID)
	}
	last := ids[len(ids)-1]
	for _, tt := range []struct {
		ref, want string
		err       error
	}{
		{ref: "@latest", want: last}, {ref: "@LATEST", want: last},
		{ref: last, want: last},
		{ref: strings.ToLower(last), want: last},
		{ref: last[:len(last)-1], want: last}, // the random characters tell them apart
		{ref: "g-", err: &AmbiguousError{}},
		{ref: "g-ZZZZ", err: ErrNotFound},
		{ref: "", err: ErrNotFound},
		{ref: last + "X", err: ErrNotFound},
	} {
		got, err := te.e.ResolveGraph(ctx, tt.ref)
		var amb *AmbiguousError
		switch {
		case tt.err == nil && (err != nil || got != tt.want):
			t.Errorf("ResolveGraph(%q) = %q, %v; want %q", tt.ref, got, err, tt.want)
		case errors.Is(tt.err, ErrNotFound) && !errors.Is(err, ErrNotFound):
			t.Errorf("ResolveGraph(%q) = %q, %v; want ErrNotFound", tt.ref, got, err)
		case tt.err != nil && !errors.Is(tt.err, ErrNotFound) && (!errors.As(err, &amb) || len(amb.Matches) != 3):
			t.Errorf("ResolveGraph(%q) = %q, %v; want ambiguous among the 3", tt.ref, got, err)
		}
	}

	snap, err := te.e.Snapshot(ctx, last)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ ref, want, err string }{
		{ref: "build", want: "build"}, // an id wins over being a prefix of build-arm
		{ref: "build-", want: "build-arm"},
		{ref: "te", want: "test"},
		{ref: "bu", err: `task id prefix "bu" is ambiguous: it matches build, build-arm`},
		{ref: "x", err: "has no task"},
		{ref: "", err: "has no task"},
	} {
		got, err := ResolveTask(snap, tt.ref)
		if tt.err == "" && (err != nil || got != tt.want) || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("ResolveTask(%q) = %q, %v; want %q %q", tt.ref, got, err, tt.want, tt.err)
		}
	}
}

// Follow stops on the emitter's error.
func TestReader_FollowStopsOnEmitError(t *testing.T) {
	te := newTestEngine(t)
	sub := te.submit(t, Spec{Tasks: []TaskSpec{tsk("a", "echo hi")}})
	te.waitDone(t, sub.Graph.ID)
	snap, _ := te.e.Snapshot(t.Context(), sub.Graph.ID)
	boom := errors.New("boom")
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	if _, err := te.e.Follow(ctx, snap, FollowQuery{Tail: -1, Poll: 20 * time.Millisecond}, func(LogEvent) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Follow with a failing emitter = %v, want boom", err)
	}
}
