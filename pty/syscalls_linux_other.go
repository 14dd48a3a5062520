//go:build linux && !amd64

package pty

// legacyWaitSyscall: other architectures' extra waiting calls are not classified; their
// programs are seen through the calls every architecture has.
func legacyWaitSyscall(nr int64) waitKind { return waitOther }
