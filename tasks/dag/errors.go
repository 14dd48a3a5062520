package dag

import (
	"errors"
	"fmt"
	"strings"

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
