package main

import (
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
	v, _ := tasks.Explain(s)
	return v
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
			if err := renderTree(&b, palette{}, tt.snap, view(tt.snap)); err != nil {
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
	if err := renderTree(&b, palette{}, snap, view(snap)); err != nil {
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
