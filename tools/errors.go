package tools

import (
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/store"
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
	case errors.Is(err, store.ErrOutsideWorkspace):
		return codeCwdOutsideWorkspace
	case errors.Is(err, errInvalid), errors.Is(err, store.ErrBadDir):
		return codeInvalidArgument
	case errors.Is(err, store.ErrNotFound):
		return codeNotFound
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
	return mcp.NewToolResultError(code + ": " + err.Error())
}
