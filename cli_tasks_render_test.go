package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks"
)

func cliSnapshot(ts ...store.TaskRow) tasks.Snapshot {
	for i := range ts {
		ts[i].Seq = i
	}
	return tasks.Snapshot{Graph: store.GraphRow{ID: "g-TEST", Name: "t"}, Tasks: ts}
}

func cliRow(id, status string, deps ...string) store.TaskRow {
	return store.TaskRow{ID: id, DependsOn: deps, TaskState: store.TaskState{Status: status}}
}

func TestCLI_Tree(t *testing.T) {
	tests := []struct {
		name string
		snap tasks.Snapshot
		want string
	}{{
		name: "each task drawn in full at its depth",
		snap: cliSnapshot(
			cliRow("db", "running"),
			cliRow("seed", "pending", "db", "migrate"),
			cliRow("migrate", "pending", "db"),
			cliRow("api", "succeeded"),
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
		snap: cliSnapshot(
			cliRow("a", "failed"),
			cliRow("b", "pending", "a"),
			cliRow("c", "pending"),
		),
		want: `graph g-TEST "t": running, 3 task(s)
a  failed
└─ b  pending blocked by a (failed): it will be skipped
c  pending ready: waiting for a free slot
`,
	}, {
		name: "a dependency outside the graph and a cycle still draw every task once",
		snap: cliSnapshot(
			cliRow("x", "pending", "y"),
			cliRow("y", "pending", "x"),
			cliRow("z", "pending", "nope"),
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
			if err := renderCLITree(&b, cliPalette{}, tt.snap, cliViewOf(tt.snap)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("tree (-want +got):\n%s", diff)
			}
		})
	}

	// A long chain: the indentation stops growing, the output stays linear.
	var rows []store.TaskRow
	for i := range 1000 {
		var deps []string
		if i > 0 {
			deps = []string{rows[i-1].ID}
		}
		rows = append(rows, cliRow("t"+strconv.Itoa(i), "pending", deps...))
	}
	snap := cliSnapshot(rows...)
	var b strings.Builder
	if err := renderCLITree(&b, cliPalette{}, snap, cliViewOf(snap)); err != nil {
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

func TestCLI_TailOffset(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		content string
		n       int
		want    string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc\n", 3, "a\nb\nc\n"},
		{"a\nb\nc\n", 9, "a\nb\nc\n"},
		{"a\nb\nc\n", 0, ""},
		{"a\nb\nc", 1, "c"}, // no final newline: the partial line counts
		{"a\nb\nc", 2, "b\nc"},
		{"\n\n", 1, "\n"},
		{"", 5, ""},
		{strings.Repeat("x", 200000) + "\nlast\n", 1, "last\n"}, // across read blocks
		{"one\n" + strings.Repeat("y", 100000) + "\n", 1, strings.Repeat("y", 100000) + "\n"},
	}
	for i, tt := range tests {
		path := filepath.Join(dir, strconv.Itoa(i)+".log")
		if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
			t.Fatal(err)
		}
		off, err := cliTailOffset(path, tt.n)
		if err != nil {
			t.Fatal(err)
		}
		if got := tt.content[off:]; got != tt.want {
			t.Errorf("cliTailOffset(%.20q, %d) gives %.20q, want %.20q", tt.content, tt.n, got, tt.want)
		}
	}
	if off, err := cliTailOffset(filepath.Join(dir, "missing.log"), 3); off != 0 || err != nil {
		t.Errorf("cliTailOffset(missing) = %d, %v; want 0, nil (a task not started yet)", off, err)
	}
}

func TestCLI_DotQuote(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:      `"plain"`,
		`a"b`:        `"a\"b"`,
		`back\slash`: `"back\\slash"`,
		"two\nlines": `"two\nlines"`,
	} {
		if got := cliDotQuote(in); got != want {
			t.Errorf("cliDotQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestCLI_Duration(t *testing.T) {
	for _, tt := range []struct {
		ms   int64
		want string
	}{{0, "0ms"}, {850, "850ms"}, {4200, "4.2s"}, {42_000, "42s"}, {187_000, "3m07s"}, {7_500_000, "2h05m"}, {273_600_000, "3d04h"}, {-5, "0ms"}} {
		if got := cliMillis(tt.ms); got != tt.want {
			t.Errorf("cliMillis(%d) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}
