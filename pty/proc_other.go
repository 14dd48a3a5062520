//go:build !linux

package pty

import "syscall"

// sessionMembers cannot list a session without /proc; it returns nothing, and background
// jobs an interactive shell moved to their own process groups are reached only through
// the shell's own SIGHUP forwarding.
func sessionMembers(sid int) []int { return nil }

// signalSession sends sig to the process group leader (with bySid false, not even
// that: the group may be a stranger's by now). It returns no pids: nothing outside the
// group is signalled here.
func signalSession(r sessionRef, sig syscall.Signal) []procKey {
	leader, bySid := r.leader, r.bySid
	if bySid {
		_ = syscall.Kill(-leader, sig)
	}
	return nil
}
