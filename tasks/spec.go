package tasks

import "time"

// State is a task's state. pending -> running -> succeeded | failed | cancelled, and
// pending -> skipped | cancelled; the last four are terminal and final.
type State string

// The task states.
const (
	Pending   State = "pending"
	Running   State = "running"
	Succeeded State = "succeeded"
	Failed    State = "failed"
	Cancelled State = "cancelled"
	Skipped   State = "skipped"
)

// Terminal reports whether s is final.
func (s State) Terminal() bool {
	return s == Succeeded || s == Failed || s == Cancelled || s == Skipped
}

// Spec is a graph as an agent submits it.
type Spec struct {
	Name           string
	Tasks          []TaskSpec
	MaxParallel    int // 0 = the engine's default (the CPU count)
	FailFast       bool
	IdempotencyKey string
}

// TaskSpec is one task as submitted.
type TaskSpec struct {
	ID         string
	Command    string
	DependsOn  []string
	Cwd        string            // as given: relative to the workspace, or absolute inside it
	Env        map[string]string // added to the inherited environment and the task defaults
	TimeoutSec int               // 0 = no timeout
	Retries    int               // extra attempts after a failed one
}

// Limits bound what Validate accepts.
type Limits struct {
	MaxTasks    int // tasks per graph; 0 = DefaultMaxTasks
	MaxParallel int // the largest maxParallel accepted; 0 = no cap
}

// Defaults and bounds of a submitted graph.
const (
	DefaultMaxTasks = 10000
	MaxRetries      = 100
	MaxTimeout      = 7 * 24 * time.Hour
	MaxCommandBytes = 128 << 10
	MaxNameBytes    = 200
)

// Validated is a Spec that passed Validate: every cwd resolved to an absolute directory
// (Dirs, by task index) and the tasks in a topological order (Order, task indexes, each
// task after all of its dependencies, ties in submitted order).
type Validated struct {
	Spec  Spec
	Dirs  []string
	Order []int
}
