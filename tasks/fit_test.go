package tasks

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/jsonsize"
	"github.com/mcp-harness/mcp-harness/tasks/dag"
)

// syntheticGraph is a finished graph that exists only as a Snapshot: Status and
// ExplainPage read its state from it, and its logs from files the test writes, so a big
// graph costs no processes. failed says which tasks failed; deps which ids a task depends
// on.
func syntheticGraph(te *testEnv, n int, failed func(i int) bool, deps func(i int) []string) Snapshot {
	now := time.Now()
	g := Graph{ID: "g-synthetic", RunnerID: "r-none", CreatedAt: now.Add(-time.Minute), FinishedAt: &now}
	snap := Snapshot{Graph: g}
	for i := range n {
		t := Task{GraphID: g.ID, ID: fmt.Sprintf("t%d", i), Seq: i, Command: "true", Status: Succeeded, Attempt: 1,
			StartedAt: &g.CreatedAt, FinishedAt: &now}
		if failed != nil && failed(i) {
			t.Status, t.ErrorCode, t.ExitCode = Failed, strPtr("EXIT_NONZERO"), new(int(1))
		} else {
			t.ExitCode = new(int(0))
		}
		if deps != nil {
			t.DependsOn = deps(i)
		}
		snap.Tasks = append(snap.Tasks, t)
	}
	return snap
}

// writeLog writes a task's live log.
func writeLog(t *testing.T, te *testEnv, graphID, taskID, text string) {
	t.Helper()
	path := te.e.LogPath(graphID, taskID)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func checkFits(t *testing.T, what string, v any, limit int) {
	t.Helper()
	if n := jsonsize.Of(v); n > limit {
		t.Fatalf("%s is %d bytes of JSON, over its budget of %d", what, n, limit)
	}
}

// When every task fits without its log but not with it, the tails shrink, all to the
// same cap (the short ones whole), each to a line start, and no task is left out.
func TestStatus_LogsShrinkBeforeTasksLeave(t *testing.T) {
	te := newTestEngine(t)
	snap := syntheticGraph(te, 30, func(i int) bool { return i%10 == 3 }, nil)
	logs := map[string]string{}
	for i, task := range snap.Tasks {
		text := strings.Repeat(fmt.Sprintf("line %d of task %d <&>\n", i, i), 100) // 2 KB and more, some of it escaped
		if i == 0 {
			text = "short\n"
		}
		logs[task.ID] = text
		writeLog(t, te, snap.Graph.ID, task.ID, text)
	}
	const limit = 16 << 10
	out, err := te.e.Status(t.Context(), snap, StatusQuery{Log: LogQuery{Tail: MaxLogTail}, MaxBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	checkFits(t, "the report", out, limit)
	if out.OmittedTasks != 0 || out.NextCursor != nil || len(out.Tasks) != 30 {
		t.Fatalf("omitted %d, cursor %v, %d tasks: want all 30 tasks on one page", out.OmittedTasks, out.NextCursor, len(out.Tasks))
	}
	var ids []string
	longest := 0
	for _, task := range out.Tasks {
		ids = append(ids, task.ID)
		l, full := task.Log, logs[task.ID]
		if !strings.HasSuffix(full, l.Text) || l.Offset != int64(len(full)-len(l.Text)) || l.NextOffset != int64(len(full)) || !l.EOF {
			t.Errorf("%s: log %+v is not the tail of its log", task.ID, l)
		}
		// Cut to fit, a tail still starts at a line and says what it skipped.
		if l.Offset > 0 && full[l.Offset-1] != '\n' || l.SkippedBytes == nil || *l.SkippedBytes != l.Offset {
			t.Errorf("%s: a tail cut to fit starts mid-line at %d: %.30q (skippedBytes %v)", task.ID, l.Offset, l.Text, l.SkippedBytes)
		}
		longest = max(longest, len(l.Text))
	}
	if got := out.Tasks[slices.IndexFunc(out.Tasks, func(x TaskStatus) bool { return x.ID == "t0" })].Log.Text; got != "short\n" {
		t.Errorf("a short log was cut: %q", got)
	}
	if longest == 0 || longest >= len(logs["t5"]) {
		t.Errorf("longest tail %d bytes: want the tails cut, not dropped", longest)
	}
	if want := []string{"t3", "t13", "t23", "t0", "t1"}; !slices.Equal(ids[:5], want) {
		t.Errorf("order starts %v, want failed first then submitted order: %v", ids[:5], want)
	}
	if !slices.ContainsFunc(out.Notes, func(n string) bool { return strings.Contains(n, "were cut to at most") }) {
		t.Errorf("notes %q do not say the tails were cut", out.Notes)
	}
}

// A graph too big for one result comes in pages that hold every task once, failed first,
// each within the budget; the logs are left out, and the notes say how to read them.
func TestStatus_Pages(t *testing.T) {
	te := newTestEngine(t)
	snap := syntheticGraph(te, 150, func(i int) bool { return i%25 == 7 }, func(i int) []string {
		if i == 0 {
			return nil
		}
		return []string{fmt.Sprintf("t%d", i-1)}
	})
	for _, task := range snap.Tasks {
		writeLog(t, te, snap.Graph.ID, task.ID, strings.Repeat("x", 500)+"\n")
	}
	const limit = 8 << 10
	seen := map[string]int{}
	var order []string
	cursor := ""
	for page := 0; ; page++ {
		if page > 150 {
			t.Fatal("more pages than tasks")
		}
		out, err := te.e.Status(t.Context(), snap, StatusQuery{Log: LogQuery{Tail: DefaultLogTail}, Cursor: cursor, MaxBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		checkFits(t, fmt.Sprintf("page %d", page), out, limit)
		if len(out.Tasks) == 0 {
			t.Fatalf("page %d is empty", page)
		}
		for _, task := range out.Tasks {
			seen[task.ID]++
			order = append(order, task.ID)
			if out.OmittedTasks > 0 && task.Log.Text != "" {
				t.Errorf("page %d: %s has log text although tasks were left out", page, task.ID)
			}
		}
		if out.OmittedTasks+len(order) != 150 {
			t.Errorf("page %d: %d omitted after %d shown, want 150 in all", page, out.OmittedTasks, len(order))
		}
		if out.NextCursor == nil {
			break
		}
		if page == 0 && !slices.ContainsFunc(out.Notes, func(n string) bool { return strings.Contains(n, `taskIds ["t7","t32"`) }) {
			t.Errorf("first page notes %q do not name the failed tasks to ask for", out.Notes)
		}
		cursor = *out.NextCursor
	}
	if len(seen) != 150 {
		t.Errorf("pages showed %d distinct tasks, want 150", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s shown %d times", id, n)
		}
	}
	if want := []string{"t7", "t32", "t57", "t82", "t107", "t132", "t0", "t1"}; !slices.Equal(order[:8], want) {
		t.Errorf("order starts %v, want %v", order[:8], want)
	}
	if _, err := te.e.Status(t.Context(), snap, StatusQuery{Cursor: "9.x"}); err == nil || !strings.Contains(err.Error(), "not one tasks_status returned") {
		t.Errorf("a bad cursor: %v", err)
	}
}

// One task's log paged with logOffset/logLimit comes back whole, page by page, each page
// within the budget whatever the log holds (escape codes take six bytes of JSON each).
func TestStatus_PageOneLog(t *testing.T) {
	te := newTestEngine(t)
	snap := syntheticGraph(te, 1, nil, nil)
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "\x1b[31m<%d>&\x1b[0m é\n", i)
	}
	full := b.String()
	writeLog(t, te, snap.Graph.ID, "t0", full)
	const limit = 8 << 10
	var got strings.Builder
	offset := int64(0)
	for pages := 0; ; pages++ {
		if pages > len(full) {
			t.Fatal("no progress")
		}
		out, err := te.e.Status(t.Context(), snap, StatusQuery{TaskIDs: []string{"t0"}, Log: LogQuery{Offset: &offset, Limit: MaxLogSlice}, MaxBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		checkFits(t, "a page", out, limit)
		l := out.Tasks[0].Log
		if l.Offset != offset || l.NextOffset != offset+int64(len(l.Text)) {
			t.Fatalf("page at %d: offset %d, nextOffset %d for %d bytes", offset, l.Offset, l.NextOffset, len(l.Text))
		}
		got.WriteString(l.Text)
		offset = l.NextOffset
		if l.EOF {
			break
		}
		if !slices.ContainsFunc(out.Notes, func(n string) bool { return strings.Contains(n, "go on from nextOffset") }) {
			t.Fatalf("a cut page does not say so: %q", out.Notes)
		}
	}
	if got.String() != full {
		t.Errorf("paged log differs from the log (%d bytes, want %d)", got.Len(), len(full))
	}
}

// A task that depends on thousands of others still fits: its dependsOn is cut, and
// omittedDeps counts the rest.
func TestStatus_CutsAHugeDependsOn(t *testing.T) {
	te := newTestEngine(t)
	snap := syntheticGraph(te, 2001, nil, func(i int) []string {
		if i < 2000 {
			return nil
		}
		deps := make([]string, 2000)
		for j := range deps {
			deps[j] = fmt.Sprintf("t%d", j)
		}
		return deps
	})
	const limit = 8 << 10
	out, err := te.e.Status(t.Context(), snap, StatusQuery{TaskIDs: []string{"t2000"}, MaxBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	checkFits(t, "the report", out, limit)
	task := out.Tasks[0]
	if task.OmittedDeps == 0 || len(task.DependsOn)+task.OmittedDeps != 2000 || task.DependsOn[0] != "t0" {
		t.Errorf("dependsOn %d shown + %d omitted, want a cut list of 2000", len(task.DependsOn), task.OmittedDeps)
	}
	if !slices.ContainsFunc(out.Notes, func(n string) bool { return strings.Contains(n, "dependsOn list of 1 task was cut") }) {
		t.Errorf("notes %q", out.Notes)
	}
}

// The pages of a graph hold every node and every edge once, each page within the budget;
// a page's order is the graph's topological order restricted to it; only a graph that
// fits whole, with its chart, gets the chart.
func TestExplainPage(t *testing.T) {
	te := newTestEngine(t)
	deps := func(i int) []string {
		if i < 10 {
			return nil
		}
		return []string{fmt.Sprintf("t%d", i-10), fmt.Sprintf("t%d", i-10+(i%3))}
	}
	small := syntheticGraph(te, 5, nil, nil)
	r, err := ExplainPage(small, PageQuery{})
	if err != nil || r.Mermaid == nil || !strings.HasPrefix(*r.Mermaid, "flowchart") || r.OmittedNodes != 0 || r.NextCursor != nil {
		t.Fatalf("a small graph: %v, %+v", err, r)
	}

	// A graph too big to draw fits whole in a big budget, without a chart.
	big := syntheticGraph(te, dag.MermaidMaxNodes+1, nil, nil)
	if r, err := ExplainPage(big, PageQuery{MaxBytes: 1 << 20}); err != nil || r.Mermaid != nil || r.OmittedNodes != 0 ||
		!slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "is not drawn") }) {
		t.Errorf("a graph of %d tasks in 1 MiB: %v, mermaid %v, omitted %d, notes %q", len(big.Tasks), err, r.Mermaid != nil, r.OmittedNodes, r.Notes)
	}

	snap := syntheticGraph(te, 300, func(i int) bool { return i == 150 }, deps)
	whole := wholeReport(snap)
	pos := map[string]int{}
	for i, id := range whole.Order {
		pos[id] = i
	}
	const limit = 8 << 10
	nodes, edges := map[string]int{}, map[ReportEdge]int{}
	cursor := ""
	for page := 0; ; page++ {
		if page > 300 {
			t.Fatal("more pages than nodes")
		}
		r, err := ExplainPage(snap, PageQuery{Cursor: cursor, MaxBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		checkFits(t, fmt.Sprintf("page %d", page), r, limit)
		if r.Mermaid != nil {
			t.Errorf("page %d of a paged graph has a chart", page)
		}
		if page == 0 && r.Nodes[0].ID != "t150" {
			t.Errorf("first node %s, want the failed t150 first", r.Nodes[0].ID)
		}
		for _, n := range r.Nodes {
			nodes[n.ID]++
		}
		for _, e := range r.Edges {
			edges[e]++
		}
		if len(r.Order) != len(r.Nodes) || !slices.IsSortedFunc(r.Order, func(a, b string) int { return pos[a] - pos[b] }) {
			t.Errorf("page %d order %v is not the topological order of its nodes", page, r.Order)
		}
		if r.NextCursor == nil {
			break
		}
		cursor = *r.NextCursor
	}
	if len(nodes) != 300 || len(edges) != len(whole.Edges) {
		t.Errorf("pages hold %d nodes and %d edges, want 300 and %d", len(nodes), len(edges), len(whole.Edges))
	}
	for k, n := range nodes {
		if n != 1 {
			t.Errorf("node %s on %d pages", k, n)
		}
	}
	for k, n := range edges {
		if n != 1 {
			t.Errorf("edge %v on %d pages", k, n)
		}
	}
}

// A pending task waiting on 899 others (a graph with 404,550 dependencies) fits a page:
// its lists are cut and counted.
func TestExplainPage_Dense(t *testing.T) {
	te := newTestEngine(t)
	snap := syntheticGraph(te, 900, nil, func(i int) []string {
		deps := make([]string, i)
		for j := range deps {
			deps[j] = fmt.Sprintf("t%d", j)
		}
		return deps
	})
	for i := range snap.Tasks {
		if i > 0 {
			snap.Tasks[i].Status, snap.Tasks[i].ExitCode = Pending, nil
		}
	}
	const limit = DefaultMaxResult
	r, err := ExplainPage(snap, PageQuery{MaxBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	checkFits(t, "the first page", r, limit)
	if r.Mermaid != nil || r.OmittedNodes == 0 || r.NextCursor == nil {
		t.Fatalf("mermaid %v, omitted %d: want a page", r.Mermaid != nil, r.OmittedNodes)
	}
	// Further on, a node's lists are long: the 451st waits on 450 tasks and is waited on by
	// 449. A cursor (rank 2, after the 450th) jumps there.
	r2, err := ExplainPage(snap, PageQuery{Cursor: "2.449", MaxBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	checkFits(t, "a later page", r2, limit)
	n := r2.Nodes[0]
	whole := wholeReport(snap)
	full := whole.Nodes[450]
	if n.ID != "t450" || full.ID != "t450" {
		t.Fatalf("page starts at %s, want t450", n.ID)
	}
	shown := len(n.DependsOn) + len(n.Dependents) + len(n.WaitingOn) + len(n.BlockedBy)
	all := len(full.DependsOn) + len(full.Dependents) + len(full.WaitingOn) + len(full.BlockedBy)
	if n.OmittedDeps == 0 || shown+n.OmittedDeps != all {
		t.Errorf("t450: %d list entries shown + %d omitted, want a cut of %d", shown, n.OmittedDeps, all)
	}
	edges := 0
	for _, e := range r2.Edges {
		if e.To == "t450" {
			edges++
		}
	}
	if edges != len(n.DependsOn) {
		t.Errorf("t450: %d edges on the page for %d dependencies shown", edges, len(n.DependsOn))
	}
}

func TestFitCancel(t *testing.T) {
	var outs []CancelOutcome
	for i := range 10000 {
		outs = append(outs, CancelOutcome{ID: fmt.Sprintf("t%d", i), PreviousStatus: Pending, Status: Cancelled, Outcome: OutcomeCancelled})
	}
	r := FitCancel(CancelReport{GraphID: "g", Tasks: outs}, 8<<10)
	checkFits(t, "the report", r, 8<<10)
	if len(r.Tasks) == 0 || len(r.Tasks)+r.OmittedTasks != 10000 || r.Tasks[0].ID != "t0" {
		t.Errorf("%d listed + %d omitted, want 10000 from t0", len(r.Tasks), r.OmittedTasks)
	}
	if r := FitCancel(CancelReport{GraphID: "g"}, 0); r.Tasks == nil || r.OmittedTasks != 0 {
		t.Errorf("no outcomes: %+v", r)
	}
}

// A page of tasks_list holds as many tasks as fit, and its cursor goes on after the last.
func TestList_Fit(t *testing.T) {
	te := newTestEngine(t)
	var ids []string
	for g := range 3 {
		var specs []TaskSpec
		for i := range 60 {
			specs = append(specs, tsk(fmt.Sprintf("task-%d-%d", g, i), "true"))
		}
		sub := te.submit(t, Spec{Tasks: specs})
		te.waitDone(t, sub.Graph.ID)
		ids = append(ids, sub.Graph.ID)
	}
	const limit = 4 << 10
	var got []string
	cursor := ""
	for page := 0; ; page++ {
		if page > 180 {
			t.Fatal("more pages than tasks")
		}
		out, err := te.e.List(t.Context(), ListQuery{Limit: MaxListLimit, Cursor: cursor, MaxBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		checkFits(t, "a page", out, limit)
		for _, task := range out.Tasks {
			got = append(got, task.GraphID+"/"+task.ID)
			if !slices.ContainsFunc(out.Graphs, func(g GraphSummary) bool { return g.GraphID == task.GraphID }) {
				t.Errorf("page %d lists %s without its graph's summary", page, task.ID)
			}
		}
		if out.NextCursor == nil {
			break
		}
		cursor = *out.NextCursor
	}
	var want []string
	for g := 2; g >= 0; g-- {
		for i := range 60 {
			want = append(want, fmt.Sprintf("%s/task-%d-%d", ids[g], g, i))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages hold %d tasks, want the 180 newest graph first", len(got))
	}
}

// An expired graph whose archive was deleted (or damaged) still answers: the tasks'
// states, no logs, and a note that says the logs are gone.
func TestStatus_ArchiveGone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(path string) error
		says  string
	}{
		{"Deleted", os.Remove, "is missing, so its logs are gone"},
		{"Damaged", func(path string) error { return os.WriteFile(path, []byte("not a tar.gz"), 0o600) }, "cannot be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := newExpiringEngine(t)
			id := expirableGraph(t, te)
			if err := te.e.Expire(t.Context()); err != nil {
				t.Fatal(err)
			}
			snap, err := te.e.Snapshot(t.Context(), id)
			if err != nil || snap.Graph.ExpiredAt == nil {
				t.Fatalf("graph not expired: %v", err)
			}
			art, err := te.db.GetArtifact(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.spoil(art.Path); err != nil {
				t.Fatal(err)
			}
			out, err := te.e.Status(t.Context(), snap, StatusQuery{Log: LogQuery{Tail: DefaultLogTail}})
			if err != nil {
				t.Fatalf("Status of an expired graph whose archive is spoilt: %v", err)
			}
			if len(out.Tasks) != 1 || out.Tasks[0].Status != Succeeded || out.Tasks[0].Log != nil {
				t.Errorf("tasks %+v: want the state, and log null", out.Tasks)
			}
			if !slices.ContainsFunc(out.Notes, func(n string) bool { return strings.Contains(n, tc.says) }) {
				t.Errorf("notes %q do not say %q", out.Notes, tc.says)
			}
		})
	}
}
