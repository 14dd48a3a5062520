// Package dag is a task graph as it is submitted and as it is shown: the words of a graph
// (a task's State, a Spec and its TaskSpecs, the Limits a server sets), the validation
// that admits a Spec (Validate: ids, fields, dependencies, cycles, cwds, a topological
// order) and the analysis that explains a stored one (Analyze: depths, dependents, why a
// pending task has not started, a Mermaid chart).
//
// It is pure: no store, no processes, no clock, nothing shared between calls. A function
// gets what it works on and returns what it found, so the rules of a graph can be read,
// tested and fuzzed without an engine. The task engine (package tasks) re-exports the
// names its callers use, so they are spelled tasks.State, tasks.Spec and so on outside.
package dag

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

// States lists every task state, in lifecycle order.
func States() []State { return []State{Pending, Running, Succeeded, Failed, Cancelled, Skipped} }

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
	// Executor is where a task that names none runs: "" or ExecutorLocal (this machine),
	// or ExecutorKubernetes (a pod).
	Executor ExecutorName
}

// ExecutorName names where a task runs.
type ExecutorName string

// The executors a task may name (Spec.Executor, TaskSpec.Executor).
const (
	ExecutorLocal      ExecutorName = "local"
	ExecutorKubernetes ExecutorName = "kubernetes"
)

// TaskSpec is one task as submitted.
type TaskSpec struct {
	ID         string
	Command    string
	DependsOn  []string
	Cwd        string            // as given: relative to the workspace, or absolute inside it
	Env        map[string]string // added to the inherited environment and the task defaults
	TimeoutSec int               // 0 = no timeout
	Retries    int               // extra attempts after a failed one
	// Sandbox and Network are the policy the task runs under, as the adapter settled it
	// from the server's and the call's (internal/sandbox); "" is the runner's own.
	Sandbox, Network string
	// Executor is where it runs: "" (the graph's), ExecutorLocal or ExecutorKubernetes.
	// CPU and Memory are what its pod asks for, as Kubernetes quantities ("500m", "2",
	// "512Mi"); only a Kubernetes task may ask.
	Executor    ExecutorName
	CPU, Memory string
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
	// MaxCommandBytes: a command is one argument of bash -c, and Linux refuses an argument
	// of 128 KiB or more (MAX_ARG_STRLEN counts its terminating NUL).
	MaxCommandBytes = 128<<10 - 1
	MaxNameBytes    = 200
	// MaxIdempotencyKeyBytes bounds an idempotencyKey: a key is an id of the caller's
	// choosing (a UUID, a hash), stored with the graph.
	MaxIdempotencyKeyBytes = 200
	// A task's env: at most MaxEnvVars variables, each value at most MaxEnvValueBytes, the
	// names and values together at most MaxEnvBytes (the environment shares the kernel's
	// limit on what a program is started with, and a value over 128 KiB cannot be passed
	// at all).
	MaxEnvVars       = 100
	MaxEnvValueBytes = 32 << 10
	MaxEnvBytes      = 128 << 10
)

// Validated is a Spec that passed Validate: every cwd resolved to an absolute directory
// (Dirs, by task index) and the tasks in a topological order (Order, task indexes, each
// task after all of its dependencies, ties in submitted order).
type Validated struct {
	Spec  Spec
	Dirs  []string
	Order []int
}
