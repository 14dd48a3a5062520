package tasks

import (
	"time"

	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/store"
)

// This file holds what readers of the engine see: a stored graph and its tasks as typed
// values (Graph, Task, Snapshot), and the JSON shapes every adapter shows them in. The MCP
// tools, the operator CLI's --json and the archive manifest are built from the same parts
// (GraphHead, TaskHead, TaskTimes, Progress...), so a field is defined once and cannot
// drift between them. Field names are part of the tool contract: every field is always
// present, null where it does not apply.

// GraphState is a graph's status, derived from its tasks (see Progress.State).
type GraphState string

// The graph states.
const (
	GraphRunning   GraphState = "running"
	GraphSucceeded GraphState = "succeeded"
	GraphFailed    GraphState = "failed"
	GraphCancelled GraphState = "cancelled"
)

// GraphStates lists every graph state, in the order help texts give them.
func GraphStates() []GraphState {
	return []GraphState{GraphRunning, GraphSucceeded, GraphFailed, GraphCancelled}
}

// Graph is a stored graph's head.
type Graph struct {
	ID          string
	Name        string
	RunnerID    string // the runner that owns it now
	MaxParallel int
	FailFast    bool
	CreatedAt   time.Time
	FinishedAt  *time.Time // once every task is terminal
	ExpiredAt   *time.Time // once its live logs were removed after the retention
}

// Task is a stored task: its spec and its state.
type Task struct {
	GraphID    string
	ID         string
	Seq        int // its place in the submitted order
	Command    string
	Cwd        string
	Env        map[string]string
	DependsOn  []string
	TimeoutSec int
	Retries    int
	Status     State
	ErrorCode  *string
	ExitCode   *int
	Signal     *string
	Message    *string
	Attempt    int
	StartedAt  *time.Time
	FinishedAt *time.Time
	// Sandbox is the policy the task was accepted under (a runner may confine it further
	// with its own); nil for a task recorded before the sandbox existed, and for a task
	// that runs in a pod, which its pod confines.
	Sandbox *sandbox.Policy
	// Executor is where it runs (ExecutorLocal, ExecutorKubernetes); Resources is what its
	// pod asks for; Job, Pod and Node name where its current (or last) remote attempt
	// runs, nil until known.
	Executor       ExecutorName
	Resources      Resources
	Job, Pod, Node *string
}

// Snapshot is a graph and its tasks as stored, tasks in submitted order.
type Snapshot struct {
	Graph Graph
	Tasks []Task
}

// Task returns the task with the given id.
func (s Snapshot) Task(id string) (Task, bool) {
	for _, t := range s.Tasks {
		if t.ID == id {
			return t, true
		}
	}
	return Task{}, false
}

// Progress counts the snapshot's tasks per state.
func (s Snapshot) Progress() Progress { return ProgressOf(s.Tasks) }

// graphOf and taskOf are the one place store rows become what readers see.
func graphOf(r store.GraphRow) Graph {
	return Graph{ID: r.ID, Name: r.Name, RunnerID: r.RunnerID, MaxParallel: r.MaxParallel, FailFast: r.FailFast,
		CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt, ExpiredAt: r.ExpiredAt}
}

func taskOf(r store.TaskRow) Task {
	return Task{GraphID: r.GraphID, ID: r.ID, Seq: r.Seq, Command: r.Command, Cwd: r.Cwd, Env: r.Env,
		DependsOn: r.DependsOn, TimeoutSec: r.TimeoutSec, Retries: r.Retries, Status: State(r.Status),
		ErrorCode: r.ErrorCode, ExitCode: r.ExitCode, Signal: r.Signal, Message: r.Message, Attempt: r.Attempt,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Sandbox: policyPtr(r),
		Executor: ExecutorName(orText(r.Executor, string(ExecutorLocal))), Resources: Resources{CPU: r.CPU, Memory: r.Memory},
		Job: r.Job, Pod: r.Pod, Node: r.Node}
}

// policyPtr is the policy a task's record names, or nil for one recorded before the
// sandbox existed.
func policyPtr(r store.TaskRow) *sandbox.Policy {
	if p, ok := recordedPolicy(r.Sandbox, r.Network); ok {
		return &p
	}
	return nil
}

func tasksOf(rows []store.TaskRow) []Task {
	out := make([]Task, len(rows))
	for i, r := range rows {
		out[i] = taskOf(r)
	}
	return out
}

// Progress counts a graph's tasks per state; Percent is the finished share, rounded down.
// Its JSON form is the progress object of the tool results and of the CLI's --json.
type Progress struct {
	Total     int `json:"total"`
	Pending   int `json:"pending"`
	Running   int `json:"running"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	Skipped   int `json:"skipped"`
	Percent   int `json:"percent"`
}

// Done is the number of finished tasks.
func (p Progress) Done() int { return p.Total - p.Pending - p.Running }

// State derives the graph's status: running while any task is pending or running, else
// failed if any failed, else cancelled if any was cancelled or skipped, else succeeded.
func (p Progress) State() GraphState {
	switch {
	case p.Pending+p.Running > 0:
		return GraphRunning
	case p.Failed > 0:
		return GraphFailed
	case p.Cancelled+p.Skipped > 0:
		return GraphCancelled
	}
	return GraphSucceeded
}

// add counts n tasks in state s.
func (p *Progress) add(s State, n int) {
	p.Total += n
	if c := p.counter(s); c != nil {
		*c += n
	}
}

// Count is the number of tasks in state s, for adapters that list the states a graph's
// tasks are in without pairing each field with its state by hand.
func (p Progress) Count(s State) int {
	if c := p.counter(s); c != nil {
		return *c
	}
	return 0
}

// counter is the field that counts state s; nil for a state Progress does not count.
func (p *Progress) counter(s State) *int {
	if field := progressFields[s]; field != nil {
		return field(p)
	}
	return nil
}

// progressFields maps each state to the field of Progress that counts it: one table that
// add and Count share (ProgressOf calls add once per task, so it must not allocate).
var progressFields = map[State]func(*Progress) *int{
	Pending:   func(p *Progress) *int { return &p.Pending },
	Running:   func(p *Progress) *int { return &p.Running },
	Succeeded: func(p *Progress) *int { return &p.Succeeded },
	Failed:    func(p *Progress) *int { return &p.Failed },
	Cancelled: func(p *Progress) *int { return &p.Cancelled },
	Skipped:   func(p *Progress) *int { return &p.Skipped },
}

func (p Progress) withPercent() Progress {
	if p.Total > 0 {
		p.Percent = p.Done() * 100 / p.Total
	}
	return p
}

// ProgressOf counts tasks per state.
func ProgressOf(ts []Task) Progress {
	var p Progress
	for _, t := range ts {
		p.add(t.Status, 1)
	}
	return p.withPercent()
}

// progressOfCounts turns the store's per-status counts into a Progress.
func progressOfCounts(counts map[string]int) Progress {
	var p Progress
	for s, n := range counts {
		p.add(State(s), n)
	}
	return p.withPercent()
}

// Time is an instant as every result shows it: RFC 3339, UTC, milliseconds.
type Time struct{ time.Time }

// timeLayout is RFC 3339 with exactly three fractional digits.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// String formats t as results show it.
func (t Time) String() string { return t.UTC().Format(timeLayout) }

// MarshalJSON writes t as a JSON string in the results' format.
func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(timeLayout)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, timeLayout)
	return append(b, '"'), nil
}

// UnmarshalJSON reads a time written by MarshalJSON (any RFC 3339 time).
func (t *Time) UnmarshalJSON(b []byte) error { return t.Time.UnmarshalJSON(b) }

// TimeOf wraps an optional time; nil stays nil.
func TimeOf(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	return &Time{*t}
}

// GraphHead is the part of a graph every result starts with.
type GraphHead struct {
	GraphID    string     `json:"graphId"`
	Name       string     `json:"name"`
	Status     GraphState `json:"status"`
	CreatedAt  Time       `json:"createdAt"`
	FinishedAt *Time      `json:"finishedAt"`
}

// Head is the graph's head in results; its status is derived from p.
func (g Graph) Head(p Progress) GraphHead {
	return GraphHead{GraphID: g.ID, Name: g.Name, Status: p.State(), CreatedAt: Time{g.CreatedAt}, FinishedAt: TimeOf(g.FinishedAt)}
}

// DurationMs is how long the graph has existed: to its end, or to now while it runs.
func (g Graph) DurationMs(now time.Time) int64 {
	end := now
	if g.FinishedAt != nil {
		end = *g.FinishedAt
	}
	return max(end.Sub(g.CreatedAt).Milliseconds(), 0)
}

// TaskHead is what every result says of a task's state.
type TaskHead struct {
	ID        string   `json:"id"`
	Status    State    `json:"status"`
	ErrorCode *string  `json:"errorCode"`
	ExitCode  *int     `json:"exitCode"`
	Signal    *string  `json:"signal"`
	Message   *string  `json:"message"`
	Attempt   int      `json:"attempt"`
	DependsOn []string `json:"dependsOn"`
}

// Head is the task's state in results.
func (t Task) Head() TaskHead {
	return TaskHead{ID: t.ID, Status: t.Status, ErrorCode: t.ErrorCode, ExitCode: t.ExitCode, Signal: t.Signal,
		Message: t.Message, Attempt: t.Attempt, DependsOn: orEmpty(t.DependsOn)}
}

// RanOn says where a task runs, or ran: its executor and, for a pod, the pod and its
// node (null until known, and for a local task).
type RanOn struct {
	Executor ExecutorName `json:"executor"`
	Pod      *string      `json:"pod"`
	Node     *string      `json:"node"`
}

// RanOn is where the task's current (or last) attempt runs.
func (t Task) RanOn() RanOn { return RanOn{Executor: t.Executor, Pod: t.Pod, Node: t.Node} }

// TaskTimes is when a task ran and for how long.
type TaskTimes struct {
	StartedAt  *Time  `json:"startedAt"`
	FinishedAt *Time  `json:"finishedAt"`
	DurationMs *int64 `json:"durationMs"`
}

// Times says when the task ran: durationMs runs to its end, or to now while it runs, and
// is null for a task that never started.
func (t Task) Times(now time.Time) TaskTimes {
	out := TaskTimes{StartedAt: TimeOf(t.StartedAt), FinishedAt: TimeOf(t.FinishedAt)}
	if t.StartedAt != nil {
		end := now
		if t.FinishedAt != nil {
			end = *t.FinishedAt
		}
		d := max(end.Sub(*t.StartedAt).Milliseconds(), 0)
		out.DurationMs = &d
	}
	return out
}

// Artifact is a finished graph's archive: the tar.gz holding its manifest and logs.
type Artifact struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// index is, for an archive in object storage, where its logs are (objects.go).
	index string
}

// TaskStatus is one task in tasks_status: its state, times and a slice of its log. Log
// is null when the log cannot be read any more (an expired graph whose archive is gone).
// OmittedDeps counts the ids left out of DependsOn to fit the result (see fit.go).
type TaskStatus struct {
	TaskHead
	TaskTimes
	RanOn
	Sandbox     *sandbox.Policy `json:"sandbox"`
	Log         *LogSlice       `json:"log"`
	OmittedDeps int             `json:"omittedDeps"`
}

// StatusReport is the tasks_status result: a graph, its progress, its runner, and a page
// of the selected tasks, failed first, then running, then the rest in submitted order.
// OmittedTasks counts the selected tasks not on this page; NextCursor reads the next page
// and is nil on the last one. Notes say in words what was left out or cut to fit and how
// to get it; adapters show them (they are not part of the JSON).
type StatusReport struct {
	GraphHead
	Expired      bool         `json:"expired"`
	Artifact     *Artifact    `json:"artifact"`
	Progress     Progress     `json:"progress"`
	Tasks        []TaskStatus `json:"tasks"`
	OmittedTasks int          `json:"omittedTasks"`
	NextCursor   *string      `json:"nextCursor"`
	Runner       RunnerRef    `json:"runner"`
	Notes        []string     `json:"-"`
}

// GraphSummary is one graph in tasks_list.
type GraphSummary struct {
	GraphHead
	Expired  bool     `json:"expired"`
	Progress Progress `json:"progress"`
}

// ListedTask is one task in tasks_list.
type ListedTask struct {
	GraphID   string  `json:"graphId"`
	ID        string  `json:"id"`
	Status    State   `json:"status"`
	ErrorCode *string `json:"errorCode"`
	ExitCode  *int    `json:"exitCode"`
	TaskTimes
}

// RunnerRef names the server process that owns a graph; Live is false once it stopped,
// its lease ran out or its process is gone.
type RunnerRef struct {
	ID   string `json:"id"`
	Pid  int    `json:"pid"`
	Live bool   `json:"live"`
}

// RunnerInfo is a graph's runner as the operator CLI shows it: a RunnerRef and the host
// it runs on.
type RunnerInfo struct {
	ID       string `json:"id"`
	Pid      int    `json:"pid"`
	Hostname string `json:"hostname"`
	Live     bool   `json:"live"`
}

// Ref is the runner as tasks_status names it.
func (r RunnerInfo) Ref() RunnerRef { return RunnerRef{ID: r.ID, Pid: r.Pid, Live: r.Live} }

// Overview is a graph as the operator CLI lists it: its head, how long it has run, its
// progress and the process that runs it.
type Overview struct {
	GraphHead
	DurationMs int64      `json:"durationMs"`
	Progress   Progress   `json:"progress"`
	Runner     RunnerInfo `json:"runner"`
}

// TaskDetail is one task as the operator CLI shows it: its state, its command, its times
// and where its log is (or will be).
type TaskDetail struct {
	TaskHead
	Command string `json:"command"`
	TaskTimes
	RanOn
	LogPath string `json:"logPath"`
}

// Detail is a graph as `mcp-harness tasks status` shows it: the overview and every task.
type Detail struct {
	Overview
	Tasks []TaskDetail `json:"tasks"`
}

// CancelOutcome says what a cancel request did to one task.
type CancelOutcome struct {
	ID             string  `json:"id"`
	PreviousStatus State   `json:"previousStatus"`
	Status         State   `json:"status"`
	Outcome        Outcome `json:"outcome"`
}

// CancelReport is the result of a cancel: the tasks concerned, in submitted order.
// OmittedTasks counts the outcomes left out to fit a bounded result (FitCancel); the CLI
// shows them all.
type CancelReport struct {
	GraphID      string          `json:"graphId"`
	Tasks        []CancelOutcome `json:"tasks"`
	OmittedTasks int             `json:"omittedTasks"`
}

// orEmpty turns a nil slice into an empty one, so it encodes as [] rather than null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
