package pty

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcp-harness/mcp-harness/internal/quote"
	"github.com/mcp-harness/mcp-harness/pty/vt"
)

// Sentinel errors. Callers (the MCP adapter) map them to stable codes with errors.Is, so
// every error the package returns wraps exactly one of them, or is a typed error whose Is
// method reports one.
var (
	// ErrNoSession reports an unknown or already closed session id.
	ErrNoSession = errors.New("no such session")
	// ErrLimit reports that MaxSessions live sessions exist; the error is a *LimitError.
	ErrLimit = errors.New("session limit reached")
	// ErrUnknownKey reports a key name ParseKeys does not know; the error is an *UnknownKeyError.
	ErrUnknownKey = errors.New("unknown key")
	// ErrExited reports input sent to a session whose program has exited. Reading such a
	// session is fine: it returns the output that is left.
	ErrExited = errors.New("program has exited")
	// ErrInvalid reports a bad argument: the caller can fix the input and retry.
	ErrInvalid = errors.New("invalid argument")
	// ErrClosed reports a call on a Manager that has been shut down.
	ErrClosed = errors.New("manager is shut down")
	// ErrBusy refuses a run while the session's shell is still running a command (or is
	// not back at its prompt); the error is a *BusyError. Nothing was typed.
	ErrBusy = errors.New("shell is busy")
	// ErrNoIntegration refuses a run in a session whose shell has no shell integration
	// (not a shell the package knows, integration turned off, or no marks arrived).
	ErrNoIntegration = errors.New("no shell integration")
	// ErrReadOnly refuses a viewer's keys until the person asks to write (SetWrite).
	ErrReadOnly = errors.New("the view is read-only")
	// ErrViewerClosed reports a call on a Viewer after its Close.
	ErrViewerClosed = errors.New("viewer closed")
	// ErrNotAsking refuses an answer to a session whose program does not wait for input
	// from its terminal; the error is a *NotAskingError.
	ErrNotAsking = errors.New("not waiting for input")
	// ErrAnswerPending refuses an answer while another person's answer to the same
	// session is pending.
	ErrAnswerPending = errors.New("another answer is pending")
)

// invalidf returns a usage error of op that wraps ErrInvalid. The message reaches a model
// after its code (the MCP adapter drops the operation, which names our Go function), so it
// is one sentence that says what was wrong and what to change, naming the argument, the
// accepted values and what was given: "cols and rows must be 1..1000, got 0x5".
func invalidf(op, format string, args ...any) error {
	return fmt.Errorf("%s: %w", op, &usageError{fmt.Sprintf(format, args...)})
}

// usageError is the sentence of an invalidf error: errors.Is(err, ErrInvalid) holds, but
// its text does not repeat "invalid argument", which the caller's code already says.
type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == ErrInvalid }

// Sentence is the message alone, for a person or a model: an adapter finds it with
// errors.As on interface{ Sentence() string } instead of cutting the operation off the
// error's text.
func (e *usageError) Sentence() string { return e.msg }

// LimitError is returned by Open when MaxSessions sessions are open and none of them has
// exited (an exited one would have been evicted instead).
type LimitError struct {
	Max int
	// Closable lists the sessions worth closing to make room: exited ones first, then the
	// live ones oldest first, so a model can pick without listing sessions first.
	Closable []string
}

// Error says the limit and what to close, so the message alone lets a model recover.
func (e *LimitError) Error() string {
	msg := fmt.Sprintf("%s: %d sessions are open", ErrLimit, e.Max)
	if len(e.Closable) > 0 {
		msg += "; close one of: " + strings.Join(e.Closable, ", ")
	}
	return msg
}

// Is makes errors.Is(err, ErrLimit) true for a *LimitError.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// UnknownKeyError names a key ParseKeys does not know and lists the valid ones, so the
// message alone is enough to correct the call.
type UnknownKeyError struct {
	Name string
}

// Error names the key and lists the valid ones.
func (e *UnknownKeyError) Error() string {
	return fmt.Sprintf("%s %s; valid keys: %s", ErrUnknownKey, quote.Short(e.Name), vt.KeySummary)
}

// Is makes errors.Is(err, ErrUnknownKey) true for an *UnknownKeyError.
func (e *UnknownKeyError) Is(target error) bool { return target == ErrUnknownKey }
