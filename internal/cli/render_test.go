package cli

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// testSnapshot is a graph "t" of the given tasks, in that order.
func testSnapshot(ts ...tasks.Task) tasks.Snapshot {
	for i := range ts {
		ts[i].Seq = i
	}
	return tasks.Snapshot{Graph: tasks.Graph{ID: "g-TEST", Name: "t"}, Tasks: ts}
}

// view is s analysed, as `tasks graph` draws it.
func view(s tasks.Snapshot) tasks.View {
	return tasks.AnalyzeGraph(s)
}

func testTask(id string, status tasks.State, deps ...string) tasks.Task {
	return tasks.Task{ID: id, Status: status, DependsOn: deps}
}

func TestRender_Tree(t *testing.T) {
	tests := []struct {
		name string
		snap tasks.Snapshot
		want string
	}{{
		name: "each task drawn in full at its depth",
		snap: testSnapshot(
			testTask("db", "running"),
			testTask("seed", "pending", "db", "migrate"),
			testTask("migrate", "pending", "db"),
			testTask("api", "succeeded"),
		),
		want: `graph g-TEST "t": running, 4 task(s)
db  running
├─ seed (see below)
└─ migrate  pending waiting on db (running)
   └─ seed  pending waiting on db (running), migrate (pending)
api  succeeded
`,
	}, {
		name: "blocked and ready",
		snap: testSnapshot(
			testTask("a", "failed"),
			testTask("b", "pending", "a"),
			testTask("c", "pending"),
		),
		want: `graph g-TEST "t": running, 3 task(s)
a  failed
└─ b  pending blocked by a (failed): it will be skipped
c  pending ready: waiting for a free slot
`,
	}, {
		name: "a dependency outside the graph and a cycle still draw every task once",
		snap: testSnapshot(
			testTask("x", "pending", "y"),
			testTask("y", "pending", "x"),
			testTask("z", "pending", "nope"),
		),
		want: `graph g-TEST "t": running, 3 task(s)
y  pending waiting on x (pending)
└─ x  pending waiting on y (pending)
   └─ y (see above)
z  pending waiting on nope (not in the graph)
`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := renderTree(&b, palette{}, tt.snap, view(tt.snap), nil); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("tree (-want +got):\n%s", diff)
			}
		})
	}

	// A long chain: the indentation stops growing, the output stays linear.
	var rows []tasks.Task
	for i := range 1000 {
		var deps []string
		if i > 0 {
			deps = []string{rows[i-1].ID}
		}
		rows = append(rows, testTask("t"+strconv.Itoa(i), "pending", deps...))
	}
	snap := testSnapshot(rows...)
	var b strings.Builder
	if err := renderTree(&b, palette{}, snap, view(snap), nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 1001 {
		t.Fatalf("chain of 1000: %d lines, want 1001", len(lines))
	}
	if last := lines[len(lines)-1]; len(last) > 200 || !strings.HasSuffix(last, "[depth 999]") {
		t.Errorf("last line of a chain of 1000 = %q (%d bytes), want a bounded indent and its depth", last, len(last))
	}
}

func TestRender_DotQuote(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:      `"plain"`,
		`a"b`:        `"a\"b"`,
		`back\slash`: `"back\\slash"`,
		"two\nlines": `"two\nlines"`,
	} {
		if got := dotQuote(in); got != want {
			t.Errorf("dotQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestRender_Duration(t *testing.T) {
	for _, tt := range []struct {
		ms   int64
		want string
	}{{0, "0ms"}, {850, "850ms"}, {4200, "4.2s"}, {42_000, "42s"}, {187_000, "3m07s"}, {7_500_000, "2h05m"}, {273_600_000, "3d04h"}, {-5, "0ms"}} {
		if got := shortMillis(tt.ms); got != tt.want {
			t.Errorf("shortMillis(%d) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}

func strp(s string) *string { return &s }

// The printer of `tasks logs`: several tasks line by line after their names (a line cut
// between two reads comes out whole, a last line without newline at the task's end), or
// NDJSON; waits and ends on stderr.
func TestRender_LogPrinter(t *testing.T) {
	snap := testSnapshot(testTask("build", tasks.Running), testTask("unit-tests", tasks.Pending, "build"))
	code := 0
	ended := tasks.TaskHead{ID: "build", Status: tasks.Succeeded, ExitCode: &code}
	events := []tasks.LogEvent{
		{Type: tasks.EventLog, TaskID: "build", Text: strp("compil")},
		{Type: tasks.EventWaiting, TaskID: "unit-tests", Wait: &tasks.TaskWait{Reason: tasks.ReasonWaiting,
			WaitingOn: []tasks.DepState{{ID: "build", Status: tasks.Running}}}},
		{Type: tasks.EventLog, TaskID: "build", Text: strp("ing\r\nlinked\nno newline")},
		{Type: tasks.EventEnded, TaskID: "build", Task: &ended},
	}
	var out, errOut strings.Builder
	lp := newLogPrinter(&out, &errOut, palette{}, snap, nil, false)
	for _, ev := range events {
		if err := lp.event(ev); err != nil {
			t.Fatal(err)
		}
	}
	if want := "build      | compiling\nbuild      | linked\nbuild      | no newline\n"; out.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), want)
	}
	if want := "mcp-harness: task unit-tests is waiting on build (running)\nmcp-harness: task build succeeded (exit 0)\n"; errOut.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", errOut.String(), want)
	}

	// One task: its log as it is.
	out.Reset()
	lp = newLogPrinter(&out, &errOut, palette{}, snap, []string{"build"}, false)
	lp.event(events[0])
	lp.event(events[2])
	if out.String() != "compiling\r\nlinked\nno newline" {
		t.Errorf("one task's log = %q, want it as written", out.String())
	}

	// --json: one record a line, each log record one line of the log.
	out.Reset()
	errOut.Reset()
	lp = newLogPrinter(&out, &errOut, palette{}, snap, nil, true)
	for _, ev := range events {
		lp.event(ev)
	}
	var types []string
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var ev tasks.LogEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not a record: %q", line)
		}
		s := string(ev.Type)
		if ev.Text != nil {
			s += ":" + *ev.Text
		}
		types = append(types, s)
	}
	if diff := cmp.Diff([]string{"waiting", "log:compiling", "log:linked", "log:no newline", "ended"}, types); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr with --json = %q, want nothing", errOut.String())
	}
}

// Following a large graph whole, only waits for a slot are told; a long list of
// dependencies is cut.
func TestRender_LogPrinterLargeGraph(t *testing.T) {
	var ts []tasks.Task
	var deps []tasks.DepState
	for i := 0; i <= quietAbove; i++ {
		id := "t" + strconv.Itoa(i)
		ts = append(ts, testTask(id, tasks.Pending))
		deps = append(deps, tasks.DepState{ID: id, Status: tasks.Pending})
	}
	snap := testSnapshot(ts...)
	var out, errOut strings.Builder
	lp := newLogPrinter(&out, &errOut, palette{}, snap, nil, false)
	lp.event(tasks.LogEvent{Type: tasks.EventWaiting, TaskID: "t1", Wait: &tasks.TaskWait{Reason: tasks.ReasonWaiting, WaitingOn: deps}})
	lp.event(tasks.LogEvent{Type: tasks.EventWaiting, TaskID: "t2", Wait: &tasks.TaskWait{Reason: tasks.ReasonReady,
		Slots: &tasks.SlotWait{Cap: tasks.CapServer, HeldBy: []tasks.SlotOwner{{GraphID: "g-OTHER", TaskID: "serve"}}}}})
	if want := "mcp-harness: task t2 is ready, waiting for a free slot: the server's --max-parallel (over all its graphs) is taken by g-OTHER/serve\n"; errOut.String() != want {
		t.Errorf("stderr = %q, want only the slot wait: %q", errOut.String(), want)
	}
	lp = newLogPrinter(&out, &errOut, palette{}, snap, []string{"t1"}, false)
	errOut.Reset()
	lp.event(tasks.LogEvent{Type: tasks.EventWaiting, TaskID: "t1", Wait: &tasks.TaskWait{Reason: tasks.ReasonWaiting, WaitingOn: deps}})
	if want := "waiting on t0 (pending), t1 (pending), t2 (pending), t3 (pending), t4 (pending) and 46 more\n"; !strings.HasSuffix(errOut.String(), want) {
		t.Errorf("one task's wait = %q, want it cut: %q", errOut.String(), want)
	}
}
