package cli

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// The streamed --json outputs are byte for byte what writeJSON writes of the whole value.
func TestWriteJSONStream_SameAsWriteJSON(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 6e6, time.UTC)
	exit := 0
	graph := func(n int) tasks.Snapshot {
		s := tasks.Snapshot{Graph: tasks.Graph{ID: "g-1", Name: `a "name" <b>&`, CreatedAt: now}}
		for i := range n {
			tk := tasks.Task{GraphID: "g-1", ID: fmt.Sprintf("t%d", i), Seq: i, Command: "echo <&>", Status: tasks.Pending}
			if i%3 == 0 {
				tk.Status, tk.ExitCode, tk.StartedAt, tk.FinishedAt = tasks.Succeeded, &exit, &now, &now
			}
			if i > 0 {
				tk.DependsOn = []string{fmt.Sprintf("t%d", i-1), fmt.Sprintf("t%d", i/2)}
			}
			s.Tasks = append(s.Tasks, tk)
		}
		return s
	}
	for _, n := range []int{0, 1, 7, 300} {
		snap := graph(n)
		report := wholeReport(snap)
		var want, got bytes.Buffer
		if err := writeJSON(&want, report); err != nil {
			t.Fatal(err)
		}
		if err := writeReport(&got, snap, tasks.AnalyzeGraph(snap)); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.String(), got.String()); diff != "" {
			t.Errorf("graph of %d: writeReport differs from writeJSON (-want +got):\n%s", n, diff)
		}

		d := tasks.Detail{Overview: tasks.Overview{GraphHead: snap.Graph.Head(snap.Progress()), Progress: snap.Progress()}, Tasks: []tasks.TaskDetail{}}
		for _, tk := range snap.Tasks {
			d.Tasks = append(d.Tasks, tasks.TaskDetail{TaskHead: tk.Head(), Command: tk.Command, TaskTimes: tk.Times(now), LogPath: "/l/" + tk.ID})
		}
		want.Reset()
		got.Reset()
		if err := writeJSON(&want, d); err != nil {
			t.Fatal(err)
		}
		if err := writeDetail(&got, d); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.String(), got.String()); diff != "" {
			t.Errorf("detail of %d: writeDetail differs from writeJSON (-want +got):\n%s", n, diff)
		}
	}
}

// A reader that goes away (`| head`) stops the writing at once.
func TestWriteJSONStream_StopsOnWriteError(t *testing.T) {
	items := 0
	err := writeJSONStream(failingWriter{}, struct {
		List []int `json:"list"`
	}{List: []int{}}, streamedList{"list", 1 << 30, func(i int) any { items++; return i }})
	if err == nil || items > 1<<20 {
		t.Errorf("writing to a closed pipe: err %v after %d items", err, items)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// wholeReport is the Report of `tasks graph --json` held whole, built from the graph's
// analysis as the tasks engine defines each part, for the streamed output to match.
func wholeReport(s tasks.Snapshot) tasks.Report {
	v := tasks.AnalyzeGraph(s)
	r := tasks.Report{GraphID: s.Graph.ID, Name: s.Graph.Name, Status: s.Progress().State(),
		Nodes: []tasks.ReportNode{}, Edges: []tasks.ReportEdge{}, Order: v.Order, Mermaid: &v.Mermaid}
	for _, n := range v.Nodes {
		r.Nodes = append(r.Nodes, tasks.ReportNodeOf(n))
	}
	for _, e := range v.Edges {
		r.Edges = append(r.Edges, tasks.ReportEdge(e))
	}
	return r
}
