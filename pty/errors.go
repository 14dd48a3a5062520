package pty

import (
	"errors"
	"fmt"
	"strings"
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
)

// invalidf returns a usage error of op that wraps ErrInvalid. The message reaches a model
// as it is (the MCP adapter adds only a code), so it is one sentence that says what was
// wrong and what to change, naming the argument, the accepted values and what was given:
// "cols and rows must be 1..1000, got 0x5".
func invalidf(op, format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", op, ErrInvalid, fmt.Sprintf(format, args...))
}

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
	return fmt.Sprintf("%s %q; valid keys: %s", ErrUnknownKey, e.Name, keySummary)
}

// Is makes errors.Is(err, ErrUnknownKey) true for an *UnknownKeyError.
func (e *UnknownKeyError) Is(target error) bool { return target == ErrUnknownKey }
