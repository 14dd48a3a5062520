package dag

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Nodes travel as text for fuzzing: one per line, fields split by single spaces: id,
// status ("-" for ""), dependencies.

func encodeNodes(nodes []Node) string {
	var lines []string
	for _, n := range nodes {
		st := string(n.Status)
		if st == "" {
			st = "-"
		}
		lines = append(lines, strings.Join(append([]string{n.ID, st}, n.DependsOn...), " "))
	}
	return strings.Join(lines, "\n")
}

func decodeNodes(text string) []Node {
	var nodes []Node
	for _, line := range strings.Split(text, "\n") {
		f := strings.Split(line, " ")
		for len(f) < 2 {
			f = append(f, "")
		}
		n := Node{ID: f[0], Status: State(f[1]), DependsOn: f[2:]}
		if n.Status == "-" {
			n.Status = ""
		}
		if len(n.DependsOn) == 0 {
			n.DependsOn = nil
		}
		nodes = append(nodes, n)
	}
	return nodes
}

func FuzzAnalyze(f *testing.F) {
	for _, nodes := range [][]Node{
		{node("a", Succeeded), node("b", Succeeded, "a"), node("c", Running, "a"), node("d", Pending, "b", "c")},
		{node("c", Pending, "b"), node("b", Pending, "a"), node("a", Running)},
		{node("a", Failed), node("b", Cancelled), node("c", Skipped, "a"), node("d", Pending, "a", "b", "z"), node("e", Pending, "z")},
		{node("a", Pending, "b"), node("b", Pending, "a"), node("c", Pending, "c"), node("d", Pending, "a", "a"), node("a", Succeeded)},
		{node(`a"<#`, "x]", "")},
	} {
		f.Add(encodeNodes(nodes))
	}
	f.Fuzz(func(t *testing.T, text string) {
		nodes := decodeNodes(text)
		got := Analyze(nodes)
		if len(got.Nodes) != len(nodes) || len(got.Order) != len(nodes) {
			t.Fatalf("Analyze() has %d nodes and %d in order, want %d", len(got.Nodes), len(got.Order), len(nodes))
		}

		// The plainest possible restatement of the rules.
		first := map[string]int{}
		for i, n := range nodes {
			if _, ok := first[n.ID]; !ok {
				first[n.ID] = i
			}
		}
		var ids []string
		var edges []Edge
		dependents := make([][]string, len(nodes))
		for i, n := range nodes {
			ids = append(ids, n.ID)
			var deps []string
			var waiting, blocked []DepState
			for _, d := range n.DependsOn {
				if slices.Contains(deps, d) {
					continue
				}
				deps = append(deps, d)
				var st State
				if j, ok := first[d]; ok {
					st = nodes[j].Status
					edges = append(edges, Edge{From: d, To: n.ID})
					dependents[j] = append(dependents[j], n.ID)
				}
				switch st {
				case Succeeded:
				case Failed, Cancelled, Skipped:
					blocked = append(blocked, DepState{d, st})
				default:
					waiting = append(waiting, DepState{d, st})
				}
			}
			want := NodeView{ID: n.ID, Status: n.Status, DependsOn: n.DependsOn}
			if n.Status == Pending {
				switch {
				case blocked != nil:
					want.Reason, want.BlockedBy = ReasonBlocked, blocked
				case waiting != nil:
					want.Reason, want.WaitingOn = ReasonWaiting, waiting
				default:
					want.Reason = ReasonReady
				}
			}
			g := got.Nodes[i]
			g.Depth, g.Dependents = 0, nil
			if diff := cmp.Diff(want, g); diff != "" {
				t.Fatalf("Analyze() node %d mismatch (-want +got):\n%s", i, diff)
			}
		}
		if diff := cmp.Diff(edges, got.Edges, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("Analyze().Edges mismatch (-want +got):\n%s", diff)
		}
		for i := range nodes {
			if diff := cmp.Diff(dependents[i], got.Nodes[i].Dependents); diff != "" {
				t.Fatalf("Analyze() node %d dependents mismatch (-want +got):\n%s", i, diff)
			}
		}
		if !slices.Equal(slices.Sorted(slices.Values(ids)), slices.Sorted(slices.Values(got.Order))) {
			t.Fatalf("Analyze().Order = %q, want each of %q once", got.Order, ids)
		}

		// With unique ids and no cycle, Order is topological and Depth the longest chain,
		// found by relaxing every edge n times.
		unique := len(first) == len(nodes)
		spec := Spec{}
		for _, n := range nodes {
			var known []string
			for _, d := range n.DependsOn {
				if _, ok := first[d]; ok && !slices.Contains(known, d) {
					known = append(known, d)
				}
			}
			spec.Tasks = append(spec.Tasks, TaskSpec{ID: n.ID, DependsOn: known})
		}
		if unique && !oracleCyclic(spec) {
			checkViewOrder(t, nodes, got.Order)
			depth := make([]int, len(nodes))
			for range nodes {
				for i, ts := range spec.Tasks {
					for _, d := range ts.DependsOn {
						depth[i] = max(depth[i], depth[first[d]]+1)
					}
				}
			}
			for i := range nodes {
				if got.Nodes[i].Depth != depth[i] {
					t.Fatalf("Analyze() node %d depth = %d, want %d", i, got.Nodes[i].Depth, depth[i])
				}
			}
		}
		checkMermaid(t, nodes, got.Mermaid)
	})
}
