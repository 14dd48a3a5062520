package tasks

import "github.com/mcp-harness/mcp-harness/tasks/dag"

// The words of a graph and the pure code that checks and explains one live in package
// dag, so that they can be read and tested without an engine. The names the engine's
// callers use keep their tasks spelling here: these are aliases, the same types and
// values, so a dag.State is a tasks.State and errors.Is matches either sentinel.

// State is a task's state (see dag.State).
type State = dag.State

// The task states.
const (
	Pending   = dag.Pending
	Running   = dag.Running
	Succeeded = dag.Succeeded
	Failed    = dag.Failed
	Cancelled = dag.Cancelled
	Skipped   = dag.Skipped
)

// States lists every task state, in lifecycle order.
func States() []State { return dag.States() }

// Spec is a graph as an agent submits it (see dag.Spec).
type Spec = dag.Spec

// TaskSpec is one task as submitted (see dag.TaskSpec).
type TaskSpec = dag.TaskSpec

// Limits bound what Validate accepts (see dag.Limits).
type Limits = dag.Limits

// Bounds of a submitted graph that adapters state in their help and schemas.
const (
	DefaultMaxTasks = dag.DefaultMaxTasks
	MaxRetries      = dag.MaxRetries
)

// Error kinds of a refused graph (see dag.ErrInvalid). ErrInvalid is also what the read
// side's usage errors report.
var (
	ErrInvalid           = dag.ErrInvalid
	ErrCycle             = dag.ErrCycle
	ErrUnknownDependency = dag.ErrUnknownDependency
	ErrDuplicateTask     = dag.ErrDuplicateTask
	ErrLimit             = dag.ErrLimit
)

// Validate checks a spec before anything is stored (see dag.Validate).
func Validate(spec Spec, lim Limits, confine func(cwd string) (string, error)) (dag.Validated, error) {
	return dag.Validate(spec, lim, confine)
}

// EditDistance is the optimal-string-alignment distance between a and b (see
// dag.EditDistance); the tools suggest argument names by it.
func EditDistance(a, b string) int { return dag.EditDistance(a, b) }

// View is what tasks_graph shows of a graph (see dag.View).
type View = dag.View

// NodeView is one task as tasks_graph shows it (see dag.NodeView).
type NodeView = dag.NodeView

// DepState names a dependency and its state (see dag.DepState).
type DepState = dag.DepState

// Reasons a pending task has not started, as NodeView.Reason gives them.
const (
	ReasonReady   = dag.ReasonReady
	ReasonWaiting = dag.ReasonWaiting
	ReasonBlocked = dag.ReasonBlocked
)
