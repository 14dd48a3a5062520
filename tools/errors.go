package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/internal/protocol"
	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/pty"
	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// The stable error codes a failed tool result starts with. A model (and a client's code)
// may switch on them, so they never change meaning.
const (
	codeInvalidArgument     = "INVALID_ARGUMENT"
	codeNotFound            = "NOT_FOUND"
	codeCycle               = "CYCLE"
	codeUnknownDependency   = "UNKNOWN_DEPENDENCY"
	codeDuplicateTaskID     = "DUPLICATE_TASK_ID"
	codeCwdOutsideWorkspace = "CWD_OUTSIDE_WORKSPACE"
	codeLimitExceeded       = "LIMIT_EXCEEDED"
	codeSessionExited       = "SESSION_EXITED"
	codeBusy                = "BUSY"                 // retry later: the server is at a limit of calls in flight, or a shell runs a command
	codeNoIntegration       = "NO_INTEGRATION"       // run needs a shell that reports its prompts
	codeShuttingDown        = "SHUTTING_DOWN"        // the call was cut short: the server is shutting down
	codeSandboxUnavailable  = "SANDBOX_UNAVAILABLE"  // a sandbox the call asked for cannot be enforced on this system
	codeExecutorUnavailable = "EXECUTOR_UNAVAILABLE" // a task names an executor this server has no cluster for, or whose cluster does not answer
	codeInternal            = "INTERNAL"
)

// errInvalid marks argument problems caught in this package.
var errInvalid = errors.New("invalid argument")

// invalidError is an argument problem caught in this package: its message is the sentence
// the caller reads after the code, without the sentinel's words.
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == errInvalid }

// invalidf reports a bad argument with a message that says what to change.
func invalidf(format string, args ...any) error {
	return &invalidError{fmt.Sprintf(format, args...)}
}

// errorCodes is the one map from engine errors to the contract's codes, checked in
// order: the first entry with an error that err wraps gives its code.
var errorCodes = []struct {
	code string
	errs []error
}{
	// First: whatever a call cut short by the shutdown ran into on its way out.
	{codeShuttingDown, []error{protocol.ErrShuttingDown, tasks.ErrClosed, pty.ErrClosed}},
	{codeBusy, []error{store.ErrBusy}}, // another process holds the database's lock
	{codeCycle, []error{tasks.ErrCycle}},
	{codeUnknownDependency, []error{tasks.ErrUnknownDependency}},
	{codeDuplicateTaskID, []error{tasks.ErrDuplicateTask}},
	{codeLimitExceeded, []error{tasks.ErrLimit}},
	{codeCwdOutsideWorkspace, []error{workspace.ErrOutside, workspace.ErrStateDir}},
	{codeInvalidArgument, []error{errInvalid, workspace.ErrBadDir, pty.ErrInvalid, pty.ErrUnknownKey, tasks.ErrInvalid, tasks.ErrNoDetach,
		sandbox.ErrInvalid, sandbox.ErrLoosen}},
	{codeSandboxUnavailable, []error{sandbox.ErrUnavailable}},
	{codeExecutorUnavailable, []error{tasks.ErrExecutorUnavailable}},
	{codeNotFound, []error{store.ErrNotFound, pty.ErrNoSession, tasks.ErrNotFound}},
	{codeLimitExceeded, []error{pty.ErrLimit}},
	{codeSessionExited, []error{pty.ErrExited}},
	{codeBusy, []error{pty.ErrBusy}},
	{codeNoIntegration, []error{pty.ErrNoIntegration}},
}

// codeOf is the contract's code for err: its entry in errorCodes, or INTERNAL.
func codeOf(err error) string {
	for _, c := range errorCodes {
		for _, target := range c.errs {
			if errors.Is(err, target) {
				return c.code
			}
		}
	}
	return codeInternal
}

// shutdownCause is err, from a call whose context is ctx, marked as the shutdown's when
// the call was cut short by it (its context ends with protocol.ErrShuttingDown): the
// engines return the context's error, which cannot tell a shutdown from a failure.
func shutdownCause(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(context.Cause(ctx), protocol.ErrShuttingDown) && !errors.Is(err, protocol.ErrShuttingDown) {
		return fmt.Errorf("%w: %w", protocol.ErrShuttingDown, err)
	}
	return err
}

// toolError shapes err as an isError tool result whose text starts with its stable code.
// Errors the caller cannot fix are logged, since their details belong in our logs.
func (s *Table) toolError(tool string, err error) *mcp.CallToolResult {
	code := codeOf(err)
	switch {
	case errors.Is(err, context.Canceled), code == codeShuttingDown:
		// The client cancelled the call (it gets no answer) or the server is shutting
		// down: nothing failed.
		s.log.Debug("tool call cancelled", "tool", tool, "err", err)
	case code == codeInternal:
		s.log.Error("tool failed", "tool", tool, "err", err)
	default:
		s.log.Debug("tool refused", "tool", tool, "code", code, "err", err)
	}
	return mcp.NewToolResultError(code + ": " + errorText(tool, code, err))
}

// hint says what to do next when the error message alone does not (pty's ErrExited says
// it: read without input, or close).
func hint(err error) string {
	switch {
	case errors.Is(err, pty.ErrNoSession):
		return "; shell_list shows the sessions that exist"
	case errors.Is(err, tasks.ErrNotFound):
		return "; tasks_list shows the graphs and tasks that exist"
	}
	return ""
}

// errorText is what a failed result says after its code: one sentence saying what was wrong
// and what to change. Engines name the operation and the sentinel in their errors
// ("pty.IO: ...", "invalid argument: ..."), which is right for the log but noise to a
// model, whose code already says it: both are taken off. An internal error says in words
// what failed; its detail goes to the log (see toolError), not to the model.
func errorText(tool, code string, err error) string {
	switch code {
	case codeInternal:
		return internalMessage(tool, err)
	case codeShuttingDown:
		return tool + " was cut short: the server is shutting down (its client closed the connection, or it was signalled); call again once it runs again"
	}
	msg := err.Error()
	for {
		trimmed := goOp.ReplaceAllString(msg, "")
		for _, sentinel := range []error{tasks.ErrInvalid, tasks.ErrLimit, tasks.ErrExecutorUnavailable, pty.ErrInvalid, errInvalid} {
			trimmed = strings.TrimPrefix(trimmed, sentinel.Error()+": ")
		}
		if trimmed == msg {
			break
		}
		msg = trimmed
	}
	return msg + hint(err)
}

// goOp matches the operation an engine error starts with: "pty.IO: ".
var goOp = regexp.MustCompile(`^[a-z]+\.[A-Z][A-Za-z]*: `)

// internalMessage says what failed when the server is at fault, in words a model can
// relay: which part gave way, and that retrying may help.
func internalMessage(tool string, err error) string {
	var what string
	var pathErr *fs.PathError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		what = "an operation ran out of time"
	case errors.As(err, &pathErr):
		what = "a file in the workspace's state directory could not be read or written"
		if errors.Is(err, fs.ErrNotExist) {
			what = "a file in the workspace's state directory is missing"
		}
	case strings.Contains(err.Error(), "database") || strings.Contains(err.Error(), "sqlite"):
		what = "the workspace database did not answer"
	default:
		what = "something went wrong inside the server"
	}
	return fmt.Sprintf("%s failed: %s (the details are in the server's log); try again, and report it if it goes on", tool, what)
}
