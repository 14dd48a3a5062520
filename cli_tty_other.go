//go:build !linux && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd

package main

// isTerminal reports false where this program cannot tell: no colours there.
func isTerminal(fd uintptr) bool { return false }
