//go:build !linux

package pty

import "syscall"

// signalSession sends sig to the process group pgid. Without /proc, background jobs an
// interactive shell moved to their own process groups are reached only through the
// shell's own SIGHUP forwarding.
func signalSession(pgid, sid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}
