package dag

import (
	"slices"
	"strings"
)

// topoSort walks the graph given as flat adjacency lists (node i depends on
// adj[start[i]:start[i+1]]) depth first with an explicit stack, so a 10,000-task chain
// cannot overflow the goroutine stack, and returns the nodes in post-order: every node
// after its dependencies, roots taken in index order and dependencies in list order.
//
// A dependency found on the current path closes a cycle. With stopAtCycle, topoSort then
// returns that cycle as a path of nodes, each depending on the next, first == last.
// Without it, the edge is ignored and the walk goes on, so order still holds every node
// once (just not in dependency order around the cycle).
func topoSort(start, adj []int32, stopAtCycle bool) (order, cycle []int32) {
	const (
		unvisited = iota
		onPath
		done
	)
	n := len(start) - 1
	state := make([]uint8, n)
	order = make([]int32, 0, n)
	type frame struct{ node, next int32 } // next: index in adj of the next edge to follow
	var stack []frame
	for root := range int32(n) {
		if state[root] != unvisited {
			continue
		}
		state[root] = onPath
		stack = append(stack, frame{root, start[root]})
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next < start[top.node+1] {
				d := adj[top.next]
				top.next++
				switch state[d] {
				case unvisited:
					state[d] = onPath
					stack = append(stack, frame{d, start[d]})
				case onPath:
					if stopAtCycle {
						k := len(stack) - 1
						for stack[k].node != d {
							k--
						}
						for _, f := range stack[k:] {
							cycle = append(cycle, f.node)
						}
						return nil, append(cycle, d)
					}
				}
				continue
			}
			state[top.node] = done
			order = append(order, top.node)
			stack = stack[:len(stack)-1]
		}
	}
	return order, nil
}

// closestIDs returns up to three ids of tasks that dep is probably a misspelling of: equal
// but for case, or within a small edit distance. It runs only when a graph is refused.
func closestIDs(dep string, tasks []TaskSpec) []string {
	if dep == "" || len(dep) > maxIDLen+3 {
		return nil
	}
	limit := min(max(len(dep)/3, 1), 3)
	lower := strings.ToLower(dep)
	type match struct {
		id   string
		dist int
		i    int
	}
	var found []match
	for i := range tasks {
		id := tasks[i].ID
		if id == dep || len(id)-len(dep) > limit || len(dep)-len(id) > limit {
			continue
		}
		if d := EditDistance(lower, strings.ToLower(id)); d <= limit {
			found = append(found, match{id, d, i})
		}
	}
	slices.SortStableFunc(found, func(a, b match) int { return a.dist - b.dist })
	var ids []string
	for _, m := range found[:min(len(found), 3)] {
		ids = append(ids, m.id)
	}
	return ids
}

// EditDistance is the optimal-string-alignment distance between a and b: insertions,
// deletions, substitutions and swaps of adjacent bytes, the usual typing mistakes. The
// engine suggests task ids by it, and the tools suggest argument names by the same.
func EditDistance(a, b string) int {
	// Three rows of the dynamic-programming table: two back, one back, current.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
