package remote

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// Protocol is the version of the calls below. The server starts the helper with it
// (`mcp-harness-remote serve <Protocol>`), and a helper of another version refuses to
// serve, saying so: a server and a helper from different releases are never mixed.
const Protocol = "1"

// The helper's calls: each is a POST of a JSON body to one of these paths on the helper's
// socket. A call answers 200 with its result (JSON, or the bytes of a stream), or 409
// with a WireError.
const (
	PathKubeOpen    = "/kube/open"
	PathKubeClose   = "/kube/close"
	PathKubeCheck   = "/kube/check"
	PathKubeStart   = "/kube/start"
	PathKubeAttach  = "/kube/attach" // a stream: the attempt's output
	PathKubeWait    = "/kube/wait"   // a stream of WaitEvent lines
	PathKubeStatus  = "/kube/status"
	PathKubeCancel  = "/kube/cancel"
	PathKubeList    = "/kube/list"
	PathKubeRelease = "/kube/release"

	PathS3Open   = "/s3/open"
	PathS3Put    = "/s3/put"
	PathS3Range  = "/s3/range" // a stream: the object's bytes
	PathS3Exists = "/s3/exists"
	PathS3Remove = "/s3/remove"
	PathS3Check  = "/s3/check"
)

// KubeConfig is what the helper makes a Kubernetes executor from (the fields of
// kube.Config that can cross a process boundary).
type KubeConfig struct {
	Kubeconfig, Context, Namespace, Image, ServiceAccount, Workspace string
	ScheduleTimeout                                                  time.Duration // 0 = the default
}

// KubeCall is the body of every kube call but open: the executor it is for (the id open
// returned) and the call's own arguments.
type KubeCall struct {
	Executor  int64           `json:"executor"`
	Attempt   *Attempt        `json:"attempt,omitempty"`
	ID        tasks.AttemptID `json:"id"`
	Offset    int64           `json:"offset,omitempty"`
	Grace     time.Duration   `json:"grace,omitempty"`
	Workspace string          `json:"workspace,omitempty"`
}

// Attempt is what a remote attempt is made of: tasks.Attempt without what only a local
// attempt has (a directory held open, a sandbox policy, a log file).
type Attempt struct {
	ID        tasks.AttemptID
	Runner    string
	Command   string
	Cwd       string
	Env       []string
	Resources tasks.Resources
	Snapshot  *tasks.SnapshotRef
}

// AttemptOf is a's remote part.
func AttemptOf(a tasks.Attempt) *Attempt {
	return &Attempt{ID: a.ID, Runner: a.Runner, Command: a.Command, Cwd: a.Cwd, Env: a.Env, Resources: a.Resources, Snapshot: a.Snapshot}
}

// Task is the tasks.Attempt the helper starts.
func (a *Attempt) Task() tasks.Attempt {
	return tasks.Attempt{ID: a.ID, Runner: a.Runner, Command: a.Command, Cwd: a.Cwd, Env: a.Env, Resources: a.Resources, Snapshot: a.Snapshot}
}

// RunStatus is tasks.RunStatus as it crosses: its log fault as words.
type RunStatus struct {
	ID        tasks.AttemptID
	Phase     tasks.Phase
	Placement tasks.Placement
	ExitCode  *int
	Signal    string
	Code      string
	Message   string
	Cancelled bool
	LogFault  string
}

// StatusOf is st as it crosses.
func StatusOf(st tasks.RunStatus) RunStatus {
	w := RunStatus{ID: st.ID, Phase: st.Phase, Placement: st.Placement, ExitCode: st.ExitCode, Signal: st.Signal,
		Code: st.Code, Message: st.Message, Cancelled: st.Cancelled}
	if st.LogFault != nil {
		w.LogFault = st.LogFault.Error()
	}
	return w
}

// Task is the tasks.RunStatus w carries.
func (w RunStatus) Task() tasks.RunStatus {
	st := tasks.RunStatus{ID: w.ID, Phase: w.Phase, Placement: w.Placement, ExitCode: w.ExitCode, Signal: w.Signal,
		Code: w.Code, Message: w.Message, Cancelled: w.Cancelled}
	if w.LogFault != "" {
		st.LogFault = errors.New(w.LogFault)
	}
	return st
}

// KubeResult is the answer of a kube call that is not a stream.
type KubeResult struct {
	Executor  int64           `json:"executor,omitempty"`
	Placement tasks.Placement `json:"placement"`
	Status    RunStatus       `json:"status"`
	Statuses  []RunStatus     `json:"statuses,omitempty"`
}

// WaitEvent is one line of a wait's stream: where the attempt runs, as it becomes known,
// then how it ended, or why the wait failed.
type WaitEvent struct {
	Placed *tasks.Placement `json:"placed,omitempty"`
	Ended  *RunStatus       `json:"ended,omitempty"`
	Error  *WireError       `json:"error,omitempty"`
}

// S3Call is the body of every s3 call: the bucket as an s3 URL gives it (its name and
// query) and the call's own arguments.
type S3Call struct {
	Bucket string `json:"bucket"`
	Query  string `json:"query,omitempty"`
	Key    string `json:"key,omitempty"`
	Path   string `json:"path,omitempty"` // put: the file to upload
	Size   int64  `json:"size,omitempty"`
	Sum    string `json:"sum,omitempty"`
	Offset int64  `json:"offset,omitempty"`
	Length int64  `json:"length,omitempty"`
	Prefix string `json:"prefix,omitempty"`
}

// S3Result is the answer of an s3 call that is not a stream.
type S3Result struct {
	Exists bool `json:"exists,omitempty"`
}

// WireError is an error as it crosses, with the kinds callers test for with errors.Is.
type WireError struct {
	Message        string `json:"message"`
	Unavailable    bool   `json:"unavailable,omitempty"`    // tasks.ErrExecutorUnavailable
	UnknownAttempt bool   `json:"unknownAttempt,omitempty"` // tasks.ErrUnknownAttempt
	NotExist       bool   `json:"notExist,omitempty"`       // fs.ErrNotExist
	Canceled       bool   `json:"canceled,omitempty"`       // context.Canceled
	Deadline       bool   `json:"deadline,omitempty"`       // context.DeadlineExceeded
}

// ErrorOf is err as it crosses (nil for nil).
func ErrorOf(err error) *WireError {
	if err == nil {
		return nil
	}
	return &WireError{
		Message:        err.Error(),
		Unavailable:    errors.Is(err, tasks.ErrExecutorUnavailable),
		UnknownAttempt: errors.Is(err, tasks.ErrUnknownAttempt),
		NotExist:       errors.Is(err, fs.ErrNotExist),
		Canceled:       errors.Is(err, context.Canceled),
		Deadline:       errors.Is(err, context.DeadlineExceeded),
	}
}

// Error is the message of the error the helper met, as it said it.
func (e *WireError) Error() string { return e.Message }

// Is makes the kinds the helper's error had hold of it here too.
func (e *WireError) Is(target error) bool {
	switch target {
	case tasks.ErrExecutorUnavailable:
		return e.Unavailable
	case tasks.ErrUnknownAttempt:
		return e.UnknownAttempt
	case fs.ErrNotExist:
		return e.NotExist
	case context.Canceled:
		return e.Canceled
	case context.DeadlineExceeded:
		return e.Deadline
	}
	return false
}
