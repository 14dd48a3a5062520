package tasks

// This file is where an attempt of a task runs: the Executor interface, which this
// machine's processes (LocalExecutor, local.go) and a Kubernetes cluster's pods (package
// tasks/kube) both implement, and the words they share. The engine drives every attempt
// through it: Start (idempotent on the attempt's identity, so a runner that re-attaches
// after a restart takes over what runs rather than starting it twice), Wait for its end,
// Cancel, and, for an executor whose output is not written into the task's log by the
// process itself, Attach from the byte the log has (attach.go). One conformance suite
// (tasks/executortest) holds both executors to the same contract.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/tasks/dag"
)

// ExecutorName names where a task runs (see dag.ExecutorName).
type ExecutorName = dag.ExecutorName

// The executors a task may name.
const (
	ExecutorLocal      = dag.ExecutorLocal      // a process group on this machine
	ExecutorKubernetes = dag.ExecutorKubernetes // a Job's pod on the server's cluster
)

// Executors lists the executors a task may name, the default first.
func Executors() []ExecutorName { return []ExecutorName{ExecutorLocal, ExecutorKubernetes} }

// Executor runs attempts of tasks somewhere: this machine, or a cluster. Every method is
// safe for concurrent use. An attempt is named by its AttemptID from Start to Release;
// methods given an id the executor does not know return ErrUnknownAttempt.
type Executor interface {
	// Name is the executor's name as tasks give it (ExecutorLocal, ExecutorKubernetes).
	Name() ExecutorName
	// Check reports whether the executor can take an attempt now; the error says why not
	// in words a person can act on, and wraps ErrExecutorUnavailable.
	Check(ctx context.Context) error
	// Start starts an attempt, or takes over the one already started under the same
	// identity (a second Start never runs the command twice). It returns where the
	// attempt runs as far as known at once. A start that failed because the executor
	// could not be reached wraps ErrExecutorUnavailable: nothing was started, and the
	// attempt may be started again later.
	Start(ctx context.Context, a Attempt) (Placement, error)
	// Attach returns the attempt's output (stdout and stderr, interleaved as written) from
	// byte offset on, following it until the attempt ends: the reader reaches io.EOF once
	// the attempt has ended and everything it wrote was read. A reader may also end with
	// an error (a connection lost), after which Attach may be called again.
	Attach(ctx context.Context, id AttemptID, offset int64) (io.ReadCloser, error)
	// Wait blocks until the attempt has ended, or ctx ends (ctx's error), and returns how
	// it ended. placed, if not nil, is called whenever more of where it runs becomes known
	// (a pod's name, its node).
	Wait(ctx context.Context, id AttemptID, placed func(Placement)) (RunStatus, error)
	// Status says how the attempt is now.
	Status(ctx context.Context, id AttemptID) (RunStatus, error)
	// Cancel asks the attempt to stop (SIGTERM, or the pod's deletion) and forces it after
	// grace (at once when grace <= 0). It returns once the request is made; Wait reports
	// the end, as Cancelled.
	Cancel(ctx context.Context, id AttemptID, grace time.Duration) error
	// List reports the attempts the executor runs or holds for a workspace (by its
	// WorkspaceID), found by their label, whichever runner started them.
	List(ctx context.Context, workspace string) ([]RunStatus, error)
	// Release says the engine has recorded the attempt's end: the executor may forget it.
	Release(id AttemptID)
}

// ErrUnknownAttempt reports an attempt the executor does not hold.
var ErrUnknownAttempt = errors.New("no such attempt")

// ErrExecutorUnavailable reports an executor that cannot take tasks: none is configured,
// or its cluster does not answer. tasks_run answers EXECUTOR_UNAVAILABLE with the reason.
var ErrExecutorUnavailable = errors.New("executor unavailable")

// AttemptID names one attempt of one task: the workspace it belongs to (WorkspaceID),
// the graph, the task and the attempt's number (1 for the first).
type AttemptID struct {
	Workspace string
	GraphID   string
	TaskID    string
	Attempt   int
}

// String names the attempt in messages.
func (id AttemptID) String() string {
	return fmt.Sprintf("%s/%s attempt %d", id.GraphID, id.TaskID, id.Attempt)
}

// The defaults of the Kubernetes executor (package tasks/kube) that the command line shows:
// they are here because the server's command line does not link that package (it runs
// in the remote helper, package internal/remote).
const (
	DefaultKubeImage           = "debian:bookworm-slim" // the image task pods run
	DefaultKubeScheduleTimeout = 5 * time.Minute        // how long a pod may wait for a node
)

// Resources is what a pod asks for: Kubernetes quantities, "" for none.
type Resources struct {
	CPU    string `json:"cpu"`
	Memory string `json:"memory"`
}

// Attempt is what Start runs: a task's command with its directory and environment, and
// what each executor needs besides.
type Attempt struct {
	ID AttemptID
	// Runner is the runner that starts it (a label on a remote attempt).
	Runner  string
	Command string
	// Cwd is the task's directory relative to the workspace's root ("" for the root).
	Cwd string
	// Env is the whole environment the command gets.
	Env []string
	// Resources is what a pod asks for; a local attempt takes what the machine has.
	Resources Resources

	// For a local attempt: Dir is the directory, checked and held open (the command
	// enters it through its descriptor); Policy confines it; Log is the file its output
	// goes to (through a pipe the runner moves into it, the file created with the first
	// output: logpipe.go), after Header (a retry's marker line, written at the start).
	// ShellOnly keeps a plain command from running without the shell (direct.go): the
	// task sets its own PATH, which the shell searches and this process would not.
	Dir       *sandbox.Where
	Policy    sandbox.Policy
	Log       string
	Header    string
	ShellOnly bool

	// For a remote attempt: Snapshot is the workspace as the command finds it, streamed
	// into its pod before the command starts; nil sends nothing.
	Snapshot *SnapshotRef
}

// SnapshotRef is a snapshot of the workspace: a gzipped tar of its files at Path, named by
// its SHA256 (see snapshot.go).
type SnapshotRef struct {
	Path   string
	SHA256 string
	Bytes  int64
}

// Placement is where an attempt runs, as far as known: a process (Pid, ProcStart) or a
// Job's pod on a node.
type Placement struct {
	Pid       int
	ProcStart uint64
	Job       string
	Pod       string
	Node      string
}

// Phase is how far an attempt has come.
type Phase string

// The phases of an attempt.
const (
	PhasePending Phase = "pending" // started, not running yet (a pod being scheduled, its image pulled)
	PhaseRunning Phase = "running"
	PhaseEnded   Phase = "ended" // over: see RunStatus for how
	PhaseGone    Phase = "gone"  // the executor knows nothing of it (its Job was deleted)
)

// RunStatus is how an attempt is, or how it ended.
type RunStatus struct {
	ID        AttemptID
	Phase     Phase
	Placement Placement
	// How it ended (PhaseEnded): the command's exit code, or the signal that killed it
	// (its name, "SIGKILL"), or, when the command never ran to its end for a reason of
	// the executor's, Code (CodeSpawnFailed, CodeUnschedulable, CodeNodeLost) and
	// Message. Cancelled is set when Cancel ended it.
	ExitCode  *int
	Signal    string
	Code      string
	Message   string
	Cancelled bool
	// LogFault is a write to the log that failed (a full disk), for an attempt whose
	// process writes its log itself.
	LogFault error
}

// Error codes of remote attempts that did not run to their end (see RunStatus.Code).
const (
	CodeUnschedulable = "UNSCHEDULABLE" // no node could take the pod within the schedule timeout
	CodeNodeLost      = "NODE_LOST"     // the pod's node went away, or the pod was removed under it
)

// WorkspaceID is a workspace's label on remote attempts: a short hash of the machine and
// the workspace's root, valid as a Kubernetes label value, so a runner finds the Jobs of
// its workspace and no other's.
func WorkspaceID(hostname, root string) string {
	return shortHash(hostname + "\x00" + root)
}

// shortHash is the first 16 hex digits of the sha256 of s.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
