package dag

import "slices"

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
