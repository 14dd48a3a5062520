//go:build !linux && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd

package pty

// IsTerminal reports false where this package cannot ask: callers then treat fd as a file
// or a pipe (no colours, no notice for a person at a terminal).
func IsTerminal(fd uintptr) bool { return false }
