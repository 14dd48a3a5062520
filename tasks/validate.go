package tasks

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcp-harness/mcp-harness/internal/quote"
)

// Error kinds of a refused graph. Validate wraps them or returns a typed error whose Is
// method reports one, so the MCP adapter maps any of them to its code with errors.Is.
//
// The split between ErrInvalid and ErrLimit: a value that can never make sense (empty,
// negative, malformed, a NUL byte) is ErrInvalid; a well-formed value that is more than
// this server accepts (too many tasks, too long a command, too many retries, a maxParallel
// above the operator's cap) is ErrLimit, so the model knows to shrink rather than fix it.
var (
	ErrInvalid           = errors.New("invalid argument")   // INVALID_ARGUMENT
	ErrCycle             = errors.New("tasks form a cycle") // CYCLE
	ErrUnknownDependency = errors.New("unknown dependency") // UNKNOWN_DEPENDENCY
	ErrDuplicateTask     = errors.New("duplicate task id")  // DUPLICATE_TASK_ID
	ErrLimit             = errors.New("limit exceeded")     // LIMIT_EXCEEDED
)

// CycleError reports one cycle among the tasks of a graph. Path lists task ids, each one
// depending on the next, and ends with the id it starts with: [build test build] means
// build depends on test and test on build. A self-dependency is [a a].
type CycleError struct {
	Path []string
}

// Error says which tasks form the cycle and how to break it.
func (e *CycleError) Error() string {
	if len(e.Path) == 2 {
		return fmt.Sprintf("tasks form a cycle: %s -> %s: task %q depends on itself; remove %q from its dependsOn",
			e.Path[0], e.Path[1], e.Path[0], e.Path[0])
	}
	return "tasks form a cycle: " + strings.Join(e.Path, " -> ") +
		" (each task depends on the next); remove one of these dependsOn entries to break it"
}

// Is reports ErrCycle.
func (e *CycleError) Is(target error) bool { return target == ErrCycle }

// UnknownDependencyError reports a dependsOn entry that names no task of the graph.
// Closest holds up to three ids of the graph that look like a misspelling of Dependency.
type UnknownDependencyError struct {
	Task       string
	Dependency string
	Closest    []string
}

// Error names the task, the unknown id and the ids it may have meant.
func (e *UnknownDependencyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown dependency: task %q depends on %s, which is not a task in this graph",
		e.Task, quote.Short(e.Dependency))
	if len(e.Closest) > 0 {
		b.WriteString(" (did you mean ")
		for i, id := range e.Closest {
			if i > 0 {
				b.WriteString(" or ")
			}
			fmt.Fprintf(&b, "%q", id)
		}
		b.WriteString("?)")
	}
	b.WriteString("; dependsOn may only name ids of tasks submitted in the same graph")
	return b.String()
}

// Is reports ErrUnknownDependency.
func (e *UnknownDependencyError) Is(target error) bool { return target == ErrUnknownDependency }

// DuplicateTaskError reports two tasks with one id, by their indexes in Spec.Tasks.
type DuplicateTaskError struct {
	ID            string
	First, Second int
}

// Error names the id and the two tasks that share it.
func (e *DuplicateTaskError) Error() string {
	return fmt.Sprintf("duplicate task id %q: tasks[%d] and tasks[%d] both use it; give each task a unique id",
		e.ID, e.First, e.Second)
}

// Is reports ErrDuplicateTask.
func (e *DuplicateTaskError) Is(target error) bool { return target == ErrDuplicateTask }

// maxIDLen is the longest task id, fixed by the id pattern ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$.
const maxIDLen = 64

// idRule says what an id may be, for messages that tell how to fix one.
const idRule = "an id is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"

// Validate checks a spec before anything is stored, resolves every task's cwd with confine
// and computes a topological order. It returns the first problem it finds, naming the task
// (by id, or as tasks[i] when the id itself is bad) and saying how to fix it; one invalid
// task refuses the whole graph.
//
// Checks run cheapest first, so a refused graph costs no file system access: the graph's
// own fields, then each task's fields in submitted order, then every dependsOn entry
// (unknown ids before cycles), then cycles, then the cwds. A dependsOn that names the same
// task twice is refused (ErrInvalid) rather than deduplicated, so that what is stored and
// shown back is exactly what was sent.
//
// confine must be non-nil. It receives each distinct cwd string once (a 10,000-task graph
// with one cwd resolves it once), "" included, which means the workspace root. It must
// return an absolute directory or an error; the error is returned wrapped with the id of
// the first task that uses that cwd, so errors.Is still finds its sentinel.
//
// Order is the order of a depth-first walk that takes tasks in submitted order and puts
// each one right after those of its dependencies (in dependsOn order) not yet placed. A
// submission already in dependency order therefore comes back unchanged, and otherwise a
// task comes as early as its dependencies let it. It costs O(tasks + dependencies) and
// finds a cycle, if there is one, on the way.
func Validate(spec Spec, lim Limits, confine func(cwd string) (string, error)) (Validated, error) {
	if confine == nil {
		return Validated{}, errors.New("tasks.Validate: no confine function")
	}
	n := len(spec.Tasks)
	maxTasks := lim.MaxTasks
	if maxTasks <= 0 {
		maxTasks = DefaultMaxTasks
	}
	switch {
	case n == 0:
		return Validated{}, fmt.Errorf(`%w: tasks is empty; give at least one task, e.g. {"id": "build", "command": "make"}`, ErrInvalid)
	case n > maxTasks:
		return Validated{}, fmt.Errorf("%w: the graph has %d tasks, at most %d are accepted per graph; split it into several graphs",
			ErrLimit, n, maxTasks)
	}
	if err := checkGraphFields(spec, lim); err != nil {
		return Validated{}, err
	}

	// index maps ids to task indexes; its size is known, so it is allocated once.
	index := make(map[string]int32, n)
	edges := 0
	for i := range spec.Tasks {
		t := &spec.Tasks[i]
		if err := checkID(i, t.ID); err != nil {
			return Validated{}, err
		}
		if first, dup := index[t.ID]; dup {
			return Validated{}, &DuplicateTaskError{ID: t.ID, First: int(first), Second: i}
		}
		index[t.ID] = int32(i)
		if err := checkTaskFields(t); err != nil {
			return Validated{}, err
		}
		edges += len(t.DependsOn)
	}

	// The dependencies as task indexes, laid out flat (task i's are adj[start[i]:start[i+1]])
	// so that a 10,000-task graph costs two allocations rather than 10,000.
	start := make([]int32, n+1)
	adj := make([]int32, 0, edges)
	seen := make([]int32, n) // seen[d] == i+1: task i already lists d
	for i := range spec.Tasks {
		t := &spec.Tasks[i]
		for _, dep := range t.DependsOn {
			d, ok := index[dep]
			if !ok {
				return Validated{}, &UnknownDependencyError{Task: t.ID, Dependency: dep, Closest: closestIDs(dep, spec.Tasks)}
			}
			if seen[d] == int32(i+1) {
				return Validated{}, fmt.Errorf("%w: task %q lists %q twice in dependsOn; list each dependency once",
					ErrInvalid, t.ID, dep)
			}
			seen[d] = int32(i + 1)
			adj = append(adj, d)
		}
		start[i+1] = int32(len(adj))
	}

	order, cycle := topoSort(start, adj, true)
	if cycle != nil {
		path := make([]string, len(cycle))
		for k, i := range cycle {
			path[k] = spec.Tasks[i].ID
		}
		return Validated{}, &CycleError{Path: path}
	}

	dirs := make([]string, n)
	resolved := make(map[string]string) // usually one or two entries, whatever n is
	for i := range spec.Tasks {
		t := &spec.Tasks[i]
		dir, ok := resolved[t.Cwd]
		if !ok {
			var err error
			if dir, err = confine(t.Cwd); err != nil {
				return Validated{}, fmt.Errorf("task %q: %w", t.ID, err)
			}
			if !filepath.IsAbs(dir) {
				// confine broke its contract; running the task in a relative dir would
				// depend on the server's own cwd, so refuse rather than guess.
				return Validated{}, fmt.Errorf("tasks.Validate: confine(%q) returned %q, not an absolute path", t.Cwd, dir)
			}
			resolved[t.Cwd] = dir
		}
		dirs[i] = dir
	}

	ord := make([]int, n)
	for k, i := range order {
		ord[k] = int(i)
	}
	return Validated{Spec: spec, Dirs: dirs, Order: ord}, nil
}

// checkGraphFields checks the fields of the graph itself, not of its tasks.
func checkGraphFields(spec Spec, lim Limits) error {
	if len(spec.Name) > MaxNameBytes {
		return fmt.Errorf("%w: name is %d bytes, at most %d are accepted; shorten it", ErrLimit, len(spec.Name), MaxNameBytes)
	}
	if len(spec.IdempotencyKey) > MaxIdempotencyKeyBytes {
		return fmt.Errorf("%w: idempotencyKey is %d bytes, at most %d are accepted; use a short key such as a UUID or a hash",
			ErrLimit, len(spec.IdempotencyKey), MaxIdempotencyKeyBytes)
	}
	if spec.MaxParallel < 0 {
		return fmt.Errorf("%w: maxParallel is %d; use a positive number, or 0 for the default (the CPU count)",
			ErrInvalid, spec.MaxParallel)
	}
	if lim.MaxParallel > 0 && spec.MaxParallel > lim.MaxParallel {
		return fmt.Errorf("%w: maxParallel is %d, at most %d is accepted by this server; lower it, or use 0 for the default",
			ErrLimit, spec.MaxParallel, lim.MaxParallel)
	}
	return nil
}

// checkID checks the id of tasks[i] against ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$, by hand
// because a regexp would be the slowest part of validating a large graph.
func checkID(i int, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: tasks[%d] has no id; give it one such as \"build\" (%s)", ErrInvalid, i, idRule)
	case len(id) > maxIDLen:
		return fmt.Errorf("%w: tasks[%d]: id %s is %d bytes long; shorten it (%s)", ErrInvalid, i, quote.Short(id), len(id), idRule)
	}
	for k := 0; k < len(id); k++ {
		c := id[k]
		if isAlnum(c) || (k > 0 && (c == '.' || c == '_' || c == '-')) {
			continue
		}
		r, _ := utf8.DecodeRuneInString(id[k:]) // name the character, not its first byte
		what := fmt.Sprintf("contains %q", r)
		if k == 0 {
			what = fmt.Sprintf("starts with %q", r)
		}
		return fmt.Errorf("%w: tasks[%d]: id %q %s; %s", ErrInvalid, i, id, what, idRule)
	}
	return nil
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// maxTimeoutSec is MaxTimeout in the unit of TaskSpec.TimeoutSec.
const maxTimeoutSec = int(MaxTimeout / time.Second)

// checkTaskFields checks the fields of a task that need nothing but the task itself. Its
// id has been checked, so messages name the task by id.
func checkTaskFields(t *TaskSpec) error {
	switch {
	case t.Command == "":
		return fmt.Errorf("%w: task %q has no command; give the shell command to run, e.g. \"make test\"", ErrInvalid, t.ID)
	case strings.TrimSpace(t.Command) == "":
		return fmt.Errorf("%w: task %q: command is blank (only white space); give the shell command to run", ErrInvalid, t.ID)
	case len(t.Command) > MaxCommandBytes:
		return fmt.Errorf("%w: task %q: command is %d bytes, at most %d are accepted; put a long script in a file in the workspace and run that",
			ErrLimit, t.ID, len(t.Command), MaxCommandBytes)
	}
	if k := strings.IndexByte(t.Command, 0); k >= 0 {
		return fmt.Errorf("%w: task %q: command has a NUL byte at offset %d; remove it (a command is one bash -c argument)",
			ErrInvalid, t.ID, k)
	}
	switch {
	case t.TimeoutSec < 0:
		return fmt.Errorf("%w: task %q: timeoutSec is %d; use a number of seconds, or 0 for no timeout", ErrInvalid, t.ID, t.TimeoutSec)
	case t.TimeoutSec > maxTimeoutSec:
		return fmt.Errorf("%w: task %q: timeoutSec is %d, at most %d (%d days) is accepted; lower it, or use 0 for no timeout",
			ErrLimit, t.ID, t.TimeoutSec, maxTimeoutSec, MaxTimeout/(24*time.Hour))
	case t.Retries < 0:
		return fmt.Errorf("%w: task %q: retries is %d; use 0 for a single attempt, or the number of extra attempts", ErrInvalid, t.ID, t.Retries)
	case t.Retries > MaxRetries:
		return fmt.Errorf("%w: task %q: retries is %d, at most %d are accepted; lower it", ErrLimit, t.ID, t.Retries, MaxRetries)
	}
	if strings.IndexByte(t.Cwd, 0) >= 0 {
		return fmt.Errorf("%w: task %q: cwd has a NUL byte; give a directory relative to the workspace", ErrInvalid, t.ID)
	}
	if err := checkEnvSize(t); err != nil {
		return err
	}
	// Map order is random: report the smallest bad name so that the same spec always
	// gets the same message.
	var bad, why string
	for k, v := range t.Env {
		if w := envProblem(k, v); w != "" && (why == "" || k < bad) {
			bad, why = k, w
		}
	}
	if why != "" {
		return fmt.Errorf("%w: task %q: env %s %s", ErrInvalid, t.ID, quote.Short(bad), why)
	}
	return nil
}

// checkEnvSize refuses an env over the limits before its entries are looked at.
func checkEnvSize(t *TaskSpec) error {
	if len(t.Env) > MaxEnvVars {
		return fmt.Errorf("%w: task %q: env has %d variables, at most %d are accepted", ErrLimit, t.ID, len(t.Env), MaxEnvVars)
	}
	total := 0
	var big string // the smallest name with a value over the limit: the same spec, the same message
	for k, v := range t.Env {
		total += len(k) + len(v)
		if len(v) > MaxEnvValueBytes && (big == "" || k < big) {
			big = k
		}
	}
	switch {
	case big != "":
		return fmt.Errorf("%w: task %q: env %s is %d bytes long, at most %d are accepted per value; pass a long value in a file instead",
			ErrLimit, t.ID, quote.Short(big), len(t.Env[big]), MaxEnvValueBytes)
	case total > MaxEnvBytes:
		return fmt.Errorf("%w: task %q: env is %d bytes (names and values), at most %d are accepted", ErrLimit, t.ID, total, MaxEnvBytes)
	}
	return nil
}

// envProblem says what is wrong with one environment entry, or "" when nothing is.
func envProblem(k, v string) string {
	switch {
	case k == "":
		return "has an empty name; name the variable or remove the entry"
	case strings.IndexByte(k, '=') >= 0:
		return "has '=' in its name; a name cannot contain '=', put the value on the right-hand side"
	case strings.IndexByte(k, 0) >= 0:
		return "has a NUL byte in its name; remove it"
	case strings.IndexByte(v, 0) >= 0:
		return "has a NUL byte in its value; remove it"
	}
	return ""
}

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
