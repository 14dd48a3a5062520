package tasks

import (
	"fmt"

	"github.com/mcp-harness/mcp-harness/internal/jsonsize"
	"github.com/mcp-harness/mcp-harness/tasks/dag"
	"github.com/mcp-harness/mcp-harness/tasks/fit"
)

// Report is a graph's View in the shape the tasks_graph tool and `mcp-harness tasks graph
// --json` both give: every list present (empty rather than null), and reason null for a
// task that is not pending. Explain reports every node; ExplainPage a page of them that
// fits a budget, with Mermaid null unless the whole graph and its chart fit.
type Report struct {
	GraphID      string       `json:"graphId"`
	Name         string       `json:"name"`
	Status       GraphState   `json:"status"`
	Nodes        []ReportNode `json:"nodes"`
	Edges        []ReportEdge `json:"edges"`
	Order        []string     `json:"order"`
	Mermaid      *string      `json:"mermaid"`
	OmittedNodes int          `json:"omittedNodes"`
	NextCursor   *string      `json:"nextCursor"`
	// Notes say in words what a page left out and how to get it; adapters show them (they
	// are not part of the JSON).
	Notes []string `json:"-"`
}

// ReportNode is one task in a Report. OmittedDeps counts the entries left out of its
// lists (dependsOn, dependents, waitingOn, blockedBy) to fit a page; 0 when they are whole.
type ReportNode struct {
	ID          string     `json:"id"`
	Status      State      `json:"status"`
	Depth       int        `json:"depth"`
	DependsOn   []string   `json:"dependsOn"`
	Dependents  []string   `json:"dependents"`
	Reason      *string    `json:"reason"`
	WaitingOn   []DepState `json:"waitingOn"`
	BlockedBy   []DepState `json:"blockedBy"`
	OmittedDeps int        `json:"omittedDeps"`
}

// ReportEdge is one dependency in a Report: To depends on From.
type ReportEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// AnalyzeGraph is a stored graph's View, for a caller that writes the graph's Report out
// node by node (ReportNodeOf) rather than hold it whole.
func AnalyzeGraph(s Snapshot) View { return dag.Analyze(nodesOf(s)) }

func nodesOf(s Snapshot) []dag.Node {
	nodes := make([]dag.Node, len(s.Tasks))
	for i, t := range s.Tasks {
		nodes[i] = dag.Node{ID: t.ID, Status: t.Status, DependsOn: t.DependsOn}
	}
	return nodes
}

// ReportNodeOf is a node of a View as a Report shows it.
func ReportNodeOf(n NodeView) ReportNode {
	rn := ReportNode{ID: n.ID, Status: n.Status, Depth: n.Depth, DependsOn: orEmpty(n.DependsOn),
		Dependents: orEmpty(n.Dependents), WaitingOn: orEmpty(n.WaitingOn), BlockedBy: orEmpty(n.BlockedBy)}
	if n.Reason != "" {
		reason := n.Reason
		rn.Reason = &reason
	}
	return rn
}

// PageQuery says which page of a graph's nodes ExplainPage reports.
type PageQuery struct {
	Cursor   string // the NextCursor of the previous page; "" for the first
	MaxBytes int    // the report's budget as JSON (see fit.go); 0 = DefaultMaxResult
}

// ExplainPage is a page of a stored graph's Report that fits q.MaxBytes: nodes failed
// first, then running, then the rest in submitted order; the edges into the nodes of the
// page (each edge is on the page of its dependent); the page's ids in topological order;
// and the Mermaid chart only when the whole graph and its chart fit in one result.
// Paging a running graph shows the states as they are at each page (see Status).
func ExplainPage(s Snapshot, q PageQuery) (Report, error) {
	after, err := parsePagePos("tasks_graph", q.Cursor)
	if err != nil {
		return Report{}, err
	}
	limit := fit.Budget(q.MaxBytes)
	v := dag.Analyze(nodesOf(s))
	out := Report{GraphID: s.Graph.ID, Name: s.Graph.Name, Status: s.Progress().State(),
		Nodes: []ReportNode{}, Edges: []ReportEdge{}, Order: []string{}}
	todo := ordered(s.Tasks, nil, after) // Analyze keeps the tasks' order: node i is s.Tasks[i]
	index := make(map[string]int, len(s.Tasks))
	for i := len(s.Tasks) - 1; i >= 0; i-- {
		index[s.Tasks[i].ID] = i
	}

	head := out
	head.OmittedNodes = len(todo)
	head.NextCursor = &[]string{fit.Pos{Rank: 2, Seq: len(s.Tasks)}.String()}[0]
	used := fit.Size(head)
	itemMax := limit / 4
	type item struct {
		node  ReportNode
		edges []ReportEdge
		pos   fit.Pos
	}
	// The edges of node i are Edges[edgeStart[i]:edgeStart[i+1]]: Analyze lists them by
	// dependent, in submitted order.
	edgeStart := make([]int, len(v.Nodes)+1)
	for i, k := 0, 0; i < len(v.Nodes); i++ {
		for k < len(v.Edges) && v.Edges[k].To == v.Nodes[i].ID {
			k++
		}
		edgeStart[i+1] = k
	}
	var page []item
	cutDeps := 0
	for _, t := range todo {
		i := index[t.ID]
		full := ReportNodeOf(v.Nodes[i])
		var edges []ReportEdge
		for _, e := range v.Edges[edgeStart[i]:edgeStart[i+1]] {
			edges = append(edges, ReportEdge(e))
		}
		it := item{pos: fit.Pos{Rank: rank(t.Status), Seq: t.Seq}}
		cut := func(n int) int {
			it.node = full
			omitted := 0
			for _, c := range []int{
				fit.CutInto(&it.node.DependsOn, n), fit.CutInto(&it.node.Dependents, n),
				fit.CutInto(&it.node.WaitingOn, n), fit.CutInto(&it.node.BlockedBy, n),
			} {
				omitted += c
			}
			it.edges, _ = fit.Cut(edges, n)
			it.node.OmittedDeps = omitted
			return omitted
		}
		size := func(n int) int {
			if cut(n) > 0 {
				it.node.OmittedDeps = len(full.DependsOn) + len(full.Dependents) + len(full.WaitingOn) + len(full.BlockedBy)
			}
			return fit.Size(it.node) + fit.Size(it.edges) + jsonsize.String(t.ID) + 2
		}
		longest := max(len(full.DependsOn), len(full.Dependents), len(full.WaitingOn), len(full.BlockedBy))
		n := fit.Lists(longest, itemMax, size)
		s := size(n)
		if used+s > limit && len(page) > 0 {
			break
		}
		if cut(n) > 0 {
			cutDeps++
		}
		used += s
		page = append(page, item{node: it.node, edges: it.edges, pos: it.pos})
	}

	build := func(page []item) {
		out.Nodes, out.Edges, out.Order = out.Nodes[:0], out.Edges[:0], out.Order[:0]
		on := make(map[string]bool, len(page))
		for _, it := range page {
			out.Nodes = append(out.Nodes, it.node)
			out.Edges = append(out.Edges, it.edges...)
			on[it.node.ID] = true
		}
		for _, id := range v.Order {
			if on[id] {
				out.Order = append(out.Order, id)
			}
		}
		out.OmittedNodes, out.NextCursor = len(todo)-len(page), nil
		if len(page) < len(todo) {
			c := page[len(page)-1].pos.String()
			out.NextCursor = &c
		}
	}
	build(page)
	for fit.Size(out) > limit && len(page) > 1 { // see Status: a guard, not the plan
		page = page[:len(page)-1]
		build(page)
	}
	whole := after == nil && out.OmittedNodes == 0
	if whole && dag.Drawn(v.Mermaid) && used-4+jsonsize.String(v.Mermaid) <= limit {
		out.Mermaid = &v.Mermaid
		if fit.Size(out) > limit {
			out.Mermaid = nil
		}
	}

	if out.OmittedNodes > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%s of %d not shown: the result is limited to %s; pass cursor %q for the next page.",
			fit.Plural(out.OmittedNodes, "task"), len(todo), fit.SizeText(limit), *out.NextCursor))
	}
	switch {
	case out.Mermaid != nil:
	case !dag.Drawn(v.Mermaid):
		out.Notes = append(out.Notes, fmt.Sprintf("No Mermaid chart: a graph of more than %d tasks or %d dependencies is not drawn.", dag.MermaidMaxNodes, dag.MermaidMaxEdges))
	case whole:
		out.Notes = append(out.Notes, "No Mermaid chart: the graph and its chart do not fit in one result; `mcp-harness tasks graph "+s.Graph.ID+" --mermaid` in a shell prints it.")
	}
	if cutDeps > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("The dependency lists of %s were cut to fit (omittedDeps counts what is missing); `mcp-harness tasks graph %s --json` in a shell prints them whole.",
			fit.Plural(cutDeps, "task"), s.Graph.ID))
	}
	return out, nil
}
