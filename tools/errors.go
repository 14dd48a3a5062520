package tools

import (
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

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
	codeInternal            = "INTERNAL"
)

// errInvalid marks argument problems caught in this package.
var errInvalid = errors.New("invalid argument")

// invalidf reports a bad argument with a message that says what to change.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errInvalid}, args...)...)
}

// codeOf is the one map from engine errors to the contract's codes.
func codeOf(err error) string {
	switch {
	case errors.Is(err, tasks.ErrCycle):
		return codeCycle
	case errors.Is(err, tasks.ErrUnknownDependency):
		return codeUnknownDependency
	case errors.Is(err, tasks.ErrDuplicateTask):
		return codeDuplicateTaskID
	case errors.Is(err, tasks.ErrLimit):
		return codeLimitExceeded
	case errors.Is(err, store.ErrOutsideWorkspace):
		return codeCwdOutsideWorkspace
	case errors.Is(err, errInvalid), errors.Is(err, store.ErrBadDir),
		errors.Is(err, pty.ErrInvalid), errors.Is(err, pty.ErrUnknownKey), errors.Is(err, tasks.ErrInvalid):
		return codeInvalidArgument
	case errors.Is(err, store.ErrNotFound), errors.Is(err, pty.ErrNoSession), errors.Is(err, tasks.ErrNotFound):
		return codeNotFound
	case errors.Is(err, pty.ErrLimit):
		return codeLimitExceeded
	case errors.Is(err, pty.ErrExited):
		return codeSessionExited
	}
	return codeInternal
}

// toolError shapes err as an isError tool result whose text starts with its stable code.
// Errors the caller cannot fix are logged, since their details belong in our logs.
func (s *Server) toolError(tool string, err error) *mcp.CallToolResult {
	code := codeOf(err)
	if code == codeInternal {
		s.log.Error("tool failed", "tool", tool, "err", err)
	} else {
		s.log.Debug("tool refused", "tool", tool, "code", code, "err", err)
	}
	return mcp.NewToolResultError(code + ": " + err.Error() + hint(err))
}

// hint says what to do next when the error message alone does not.
func hint(err error) string {
	switch {
	case errors.Is(err, pty.ErrNoSession):
		return "; shell_list shows the sessions that exist"
	case errors.Is(err, pty.ErrExited):
		return "; read what it printed with shell_io (no input), then shell_close it"
	case errors.Is(err, tasks.ErrNotFound):
		return "; tasks_list shows the graphs and tasks that exist"
	}
	return ""
}
