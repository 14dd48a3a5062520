package tasks

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// signalName is a signal's conventional name, e.g. "SIGKILL".
func signalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return sig.String()
}
