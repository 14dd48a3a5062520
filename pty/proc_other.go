//go:build !linux

package pty

import "syscall"

// sessionMembers cannot list a session without /proc; it returns nothing, and background
// jobs an interactive shell moved to their own process groups are reached only through
// the shell's own SIGHUP forwarding.
func sessionMembers(sid int) []int { return nil }

// signalSession sends sig to the process group pgid.
func signalSession(pgid, sid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}
