package tasks

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mcp-harness/mcp-harness/internal/jsonsize"
)

// Node is one task's place in a graph for analysis: its id, state and dependencies.
type Node struct {
	ID        string
	Status    State
	DependsOn []string
}

// DepState names a dependency and its state.
type DepState struct {
	ID     string `json:"id"`
	Status State  `json:"status"`
}

// Reasons a pending task has not started, as NodeView.Reason gives them.
const (
	ReasonReady   = "ready"   // every dependency succeeded: it waits for a free slot
	ReasonWaiting = "waiting" // some dependency has not finished yet
	ReasonBlocked = "blocked" // some dependency failed, was cancelled or skipped: it will be skipped
)

// NodeView is one task as tasks_graph shows it.
type NodeView struct {
	ID     string
	Status State
	// Depth is the number of edges on the longest path from a root (a task with no
	// dependencies in the graph, depth 0) to this task.
	Depth     int
	DependsOn []string // as stored, nil when none
	// Dependents are the tasks that depend on this one, in submitted order; nil when none.
	Dependents []string
	// Reason says why a pending task has not started: ReasonBlocked if any dependency
	// failed, was cancelled or skipped, else ReasonWaiting if any has not succeeded yet,
	// else ReasonReady. Only direct dependencies count: a task behind a blocked one is
	// waiting (and will be skipped in turn). It is "" for every other task: a running task
	// is already past the question (its status says so), and a finished one will never
	// start again.
	Reason string
	// WaitingOn lists, for a waiting task only, its unfinished dependencies in dependsOn
	// order: pending or running ones, and ids that are not in the graph (with Status "").
	WaitingOn []DepState
	// BlockedBy lists, for a blocked task only, its dependencies that failed, were
	// cancelled or were skipped, in dependsOn order.
	BlockedBy []DepState
}

// Edge is one dependency: To depends on From, so From runs first.
type Edge struct {
	From, To string
}

// View is what tasks_graph shows of a graph. Nodes, Edges and Order are never nil, so they
// encode as [] for an empty graph.
type View struct {
	Nodes []NodeView // in submitted order
	Edges []Edge     // by dependent in submitted order, then in its dependsOn order
	Order []string   // the ids in a topological order, the one Validate computes
	// Mermaid is a flowchart of the graph with the states as classes, for clients that
	// render Markdown. A graph of over 500 tasks or 500 dependencies, or whose chart would
	// pass 50,000 bytes, is not drawn: the chart is then one node saying so, since
	// Mermaid's default configuration refuses (maxEdges) or truncates (maxTextSize)
	// anything larger, and an agent gets nothing from a 10,000-box picture.
	Mermaid string
}

// Analyze explains a stored graph, nodes in submitted order, in O(tasks + dependencies).
//
// It expects a valid DAG, as Validate admits, but takes anything without panicking or
// looping: a dependency id that is not in nodes is reported in WaitingOn with Status ""
// and draws no edge; a dependency listed twice counts once; the second of two nodes with
// one id is shown but every reference to the id means the first; the edge that closes a
// cycle is left out of Depth and Order (Order still holds every task once).
func Analyze(nodes []Node) View {
	n := len(nodes)
	index := make(map[string]int32, n)
	deps := 0
	for i := range nodes {
		if _, dup := index[nodes[i].ID]; !dup {
			index[nodes[i].ID] = int32(i)
		}
		deps += len(nodes[i].DependsOn)
	}

	// Known dependencies as node indexes, flat and deduplicated, as in Validate.
	start := make([]int32, n+1)
	adj := make([]int32, 0, deps)
	mark := make([]int32, n) // mark[d] == i+1: node i already lists d
	for i := range nodes {
		for _, dep := range nodes[i].DependsOn {
			if d, ok := index[dep]; ok && mark[d] != int32(i+1) {
				mark[d] = int32(i + 1)
				adj = append(adj, d)
			}
		}
		start[i+1] = int32(len(adj))
	}

	order, _ := topoSort(start, adj, false)
	pos := make([]int32, n)
	for k, i := range order {
		pos[i] = int32(k)
	}
	// In order, every dependency comes first, except across the edge closing a cycle,
	// which the pos test leaves out; so one pass gives the longest chains.
	depth := make([]int, n)
	for _, i := range order {
		for _, d := range adj[start[i]:start[i+1]] {
			if pos[d] < pos[i] && depth[d]+1 > depth[i] {
				depth[i] = depth[d] + 1
			}
		}
	}

	// Dependents are carved out of one backing array: capacities are exact, so no append
	// here reallocates, and a caller appending to one list cannot overwrite the next.
	count := make([]int32, n)
	for _, d := range adj {
		count[d]++
	}
	backing := make([]string, len(adj))
	dependents := make([][]string, n)
	off := 0
	for i, c := range count {
		if c > 0 {
			dependents[i] = backing[off : off : off+int(c)]
			off += int(c)
		}
	}
	edges := make([]Edge, 0, len(adj))
	for i := range nodes {
		for _, d := range adj[start[i]:start[i+1]] {
			dependents[d] = append(dependents[d], nodes[i].ID)
			edges = append(edges, Edge{From: nodes[d].ID, To: nodes[i].ID})
		}
	}

	// The per-node lists come out of shared arenas too, sized for the worst case (every
	// dependency listed), so a large graph costs a handful of allocations, not one per node.
	views := make([]NodeView, n)
	depsArena := make([]string, 0, deps)
	stateArena := make([]DepState, 0, deps)
	var scratch explainScratch
	clear(mark) // reused by explain, with the same i+1 stamps
	for i := range nodes {
		v := NodeView{
			ID:         nodes[i].ID,
			Status:     nodes[i].Status,
			Depth:      depth[i],
			Dependents: dependents[i],
		}
		if ds := nodes[i].DependsOn; ds != nil {
			at := len(depsArena)
			depsArena = append(depsArena, ds...)
			v.DependsOn = depsArena[at:len(depsArena):len(depsArena)]
		}
		if v.Status == Pending {
			var list []DepState
			v.Reason, list = scratch.explain(nodes, index, i, mark)
			if list != nil {
				at := len(stateArena)
				stateArena = append(stateArena, list...)
				list = stateArena[at:len(stateArena):len(stateArena)]
			}
			switch v.Reason {
			case ReasonWaiting:
				v.WaitingOn = list
			case ReasonBlocked:
				v.BlockedBy = list
			}
		}
		views[i] = v
	}

	ids := make([]string, n)
	for k, i := range order {
		ids[k] = nodes[i].ID
	}
	return View{Nodes: views, Edges: edges, Order: ids, Mermaid: mermaidChart(nodes, start, adj)}
}

// explainScratch holds the buffers explain reuses from one node to the next.
type explainScratch struct {
	waiting, blocked []DepState
	unknown          []string
}

// explain says why pending node i has not started and returns the dependencies that say
// so (WaitingOn or BlockedBy, by the reason), in a buffer valid until the next call. mark
// is scratch space of len(nodes) that no earlier call stamped with i+1.
func (s *explainScratch) explain(nodes []Node, index map[string]int32, i int, mark []int32) (string, []DepState) {
	s.waiting, s.blocked, s.unknown = s.waiting[:0], s.blocked[:0], s.unknown[:0]
	for _, dep := range nodes[i].DependsOn {
		var st State // "" for an id not in the graph
		if d, ok := index[dep]; ok {
			if mark[d] == int32(i+1) {
				continue
			}
			mark[d] = int32(i + 1)
			st = nodes[d].Status
		} else {
			if slices.Contains(s.unknown, dep) { // usually none: a linear scan is fine
				continue
			}
			s.unknown = append(s.unknown, dep)
		}
		switch st {
		case Succeeded:
		case Failed, Cancelled, Skipped:
			s.blocked = append(s.blocked, DepState{ID: dep, Status: st})
		default: // pending, running, missing, or a state this code does not know: not done
			s.waiting = append(s.waiting, DepState{ID: dep, Status: st})
		}
	}
	switch {
	case len(s.blocked) > 0:
		return ReasonBlocked, s.blocked
	case len(s.waiting) > 0:
		return ReasonWaiting, s.waiting
	}
	return ReasonReady, nil
}

// Bounds of a drawn Mermaid chart. The edge and text bounds are Mermaid's own defaults
// (maxEdges 500, maxTextSize 50000): past them GitHub and most Markdown viewers show an
// error box instead of a diagram. 500 nodes is about where a flowchart stops being
// readable anyway.
const (
	mermaidMaxNodes = 500
	mermaidMaxEdges = 500
	mermaidMaxBytes = 50000
)

// mermaidClasses styles each state: the colours of GitHub's own status labels, light
// fills with dark text so that they read in light and dark themes.
var mermaidClasses = []struct {
	state State
	style string
}{
	{Pending, "fill:#f6f8fa,stroke:#8c959f,color:#1f2328"},
	{Running, "fill:#ddf4ff,stroke:#0969da,color:#1f2328"},
	{Succeeded, "fill:#dafbe1,stroke:#1a7f37,color:#1f2328"},
	{Failed, "fill:#ffebe9,stroke:#cf222e,color:#1f2328"},
	{Cancelled, "fill:#fff8c5,stroke:#9a6700,color:#1f2328"},
	{Skipped, "fill:#ffffff,stroke:#8c959f,color:#59636e,stroke-dasharray: 5 5"},
}

// mermaidChart draws the graph as a Mermaid flowchart, top-down, dependencies above their
// dependents. Node keys are n0, n1... (the index), never the id, so nothing a stored id
// holds can break the syntax; labels are quoted and escaped.
func mermaidChart(nodes []Node, start, adj []int32) string {
	if len(nodes) > mermaidMaxNodes || len(adj) > mermaidMaxEdges {
		return mermaidOmitted(len(nodes), len(adj))
	}
	var b strings.Builder
	b.Grow(64 * (len(nodes) + len(adj) + len(mermaidClasses)))
	b.WriteString("flowchart TD\n")
	for i := range nodes {
		fmt.Fprintf(&b, "    n%d[\"%s<br/>%s\"]\n", i, mermaidText(nodes[i].ID), mermaidText(string(nodes[i].Status)))
	}
	for i := range nodes {
		for _, d := range adj[start[i]:start[i+1]] {
			fmt.Fprintf(&b, "    n%d --> n%d\n", d, i)
		}
	}
	for _, c := range mermaidClasses {
		fmt.Fprintf(&b, "    classDef %s %s\n", c.state, c.style)
	}
	for _, c := range mermaidClasses {
		first := true
		for i := range nodes {
			if nodes[i].Status != c.state {
				continue
			}
			if first {
				b.WriteString("    class ")
				first = false
			} else {
				b.WriteByte(',')
			}
			b.WriteByte('n')
			b.WriteString(strconv.Itoa(i))
		}
		if !first {
			fmt.Fprintf(&b, " %s\n", c.state)
		}
	}
	if b.Len() > mermaidMaxBytes {
		return mermaidOmitted(len(nodes), len(adj))
	}
	return b.String()
}

// mermaidOmitted is the chart of a graph too large to draw: still valid Mermaid, so a
// client that renders it shows why there is no picture.
func mermaidOmitted(tasks, deps int) string {
	return mermaidNotDrawn + fmt.Sprintf(" at most %d tasks, %d dependencies and %d characters render\n"+
		"    omitted[\"%d tasks and %d dependencies - too large to draw, see nodes and edges\"]\n",
		mermaidMaxNodes, mermaidMaxEdges, mermaidMaxBytes, tasks, deps)
}

// mermaidNotDrawn starts the chart of a graph too large to draw. A drawn chart cannot
// start so: its labels escape '%' (mermaidText).
const mermaidNotDrawn = "flowchart TD\n    %% not drawn:"

// drawn reports whether a chart of Analyze draws its graph.
func drawn(chart string) bool { return !strings.HasPrefix(chart, mermaidNotDrawn) }

// mermaidText escapes s for a quoted Mermaid label: everything but letters, digits,
// space, '.', '_' and '-' becomes a #code; entity, so quotes, '#', HTML and line breaks
// cannot end the label or inject markup.
func mermaidText(s string) string {
	safe := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != ' ' && c != '.' && c != '_' && c != '-' {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 && (isAlnum(byte(r)) || r == ' ' || r == '.' || r == '_' || r == '-') {
			b.WriteRune(r)
			continue
		}
		b.WriteByte('#')
		b.WriteString(strconv.Itoa(int(r)))
		b.WriteByte(';')
	}
	return b.String()
}

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

// Explain analyzes a stored graph and returns its View and its whole Report, for a person
// (the CLI writes it out item by item: see ReportNodeOf).
func Explain(s Snapshot) (View, Report) {
	v := Analyze(nodesOf(s))
	r := Report{GraphID: s.Graph.ID, Name: s.Graph.Name, Status: s.Progress().State(),
		Nodes: make([]ReportNode, 0, len(v.Nodes)), Edges: make([]ReportEdge, 0, len(v.Edges)),
		Order: orEmpty(v.Order), Mermaid: &v.Mermaid}
	for _, n := range v.Nodes {
		r.Nodes = append(r.Nodes, ReportNodeOf(n))
	}
	for _, e := range v.Edges {
		r.Edges = append(r.Edges, ReportEdge{From: e.From, To: e.To})
	}
	return v, r
}

// AnalyzeGraph is a stored graph's View: Explain without the Report, for a caller that
// writes the Report out node by node (ReportNodeOf) rather than hold it whole.
func AnalyzeGraph(s Snapshot) View { return Analyze(nodesOf(s)) }

func nodesOf(s Snapshot) []Node {
	nodes := make([]Node, len(s.Tasks))
	for i, t := range s.Tasks {
		nodes[i] = Node{ID: t.ID, Status: t.Status, DependsOn: t.DependsOn}
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
	limit := budget(q.MaxBytes)
	v := Analyze(nodesOf(s))
	out := Report{GraphID: s.Graph.ID, Name: s.Graph.Name, Status: s.Progress().State(),
		Nodes: []ReportNode{}, Edges: []ReportEdge{}, Order: []string{}}
	todo := ordered(s.Tasks, nil, after) // Analyze keeps the tasks' order: node i is s.Tasks[i]
	index := make(map[string]int, len(s.Tasks))
	for i := len(s.Tasks) - 1; i >= 0; i-- {
		index[s.Tasks[i].ID] = i
	}

	head := out
	head.OmittedNodes = len(todo)
	head.NextCursor = &[]string{pagePos{2, len(s.Tasks)}.String()}[0]
	used := jsonSize(head)
	itemMax := limit / 4
	type item struct {
		node  ReportNode
		edges []ReportEdge
		pos   pagePos
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
			edges = append(edges, ReportEdge{From: e.From, To: e.To})
		}
		it := item{pos: pagePos{rank(t.Status), t.Seq}}
		cut := func(n int) int {
			it.node = full
			omitted := 0
			for _, c := range []int{
				cutInto(&it.node.DependsOn, n), cutInto(&it.node.Dependents, n),
				cutInto(&it.node.WaitingOn, n), cutInto(&it.node.BlockedBy, n),
			} {
				omitted += c
			}
			it.edges, _ = cutList(edges, n)
			it.node.OmittedDeps = omitted
			return omitted
		}
		size := func(n int) int {
			if cut(n) > 0 {
				it.node.OmittedDeps = len(full.DependsOn) + len(full.Dependents) + len(full.WaitingOn) + len(full.BlockedBy)
			}
			return jsonSize(it.node) + jsonSize(it.edges) + jsonsize.String(t.ID) + 2
		}
		longest := max(len(full.DependsOn), len(full.Dependents), len(full.WaitingOn), len(full.BlockedBy))
		n := fitLists(longest, itemMax, size)
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
	for jsonSize(out) > limit && len(page) > 1 { // see Status: a guard, not the plan
		page = page[:len(page)-1]
		build(page)
	}
	whole := after == nil && out.OmittedNodes == 0
	if whole && drawn(v.Mermaid) && used-4+jsonsize.String(v.Mermaid) <= limit {
		out.Mermaid = &v.Mermaid
		if jsonSize(out) > limit {
			out.Mermaid = nil
		}
	}

	if out.OmittedNodes > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%s of %d not shown: the result is limited to %s; pass cursor %q for the next page.",
			plural(out.OmittedNodes, "task"), len(todo), sizeText(limit), *out.NextCursor))
	}
	switch {
	case out.Mermaid != nil:
	case !drawn(v.Mermaid):
		out.Notes = append(out.Notes, fmt.Sprintf("No Mermaid chart: a graph of more than %d tasks or %d dependencies is not drawn.", mermaidMaxNodes, mermaidMaxEdges))
	case whole:
		out.Notes = append(out.Notes, "No Mermaid chart: the graph and its chart do not fit in one result; `mcp-harness tasks graph "+s.Graph.ID+" --mermaid` in a shell prints it.")
	}
	if cutDeps > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("The dependency lists of %s were cut to fit (omittedDeps counts what is missing); `mcp-harness tasks graph %s --json` in a shell prints them whole.",
			plural(cutDeps, "task"), s.Graph.ID))
	}
	return out, nil
}

// cutInto cuts *list to at most n entries and returns how many it left out.
func cutInto[T any](list *[]T, n int) int {
	var omitted int
	*list, omitted = cutList(*list, n)
	return omitted
}
