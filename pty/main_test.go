package pty

import (
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// TestMain gives the programs the tests start the signal dispositions the server gives
// its own. The server handles SIGHUP and SIGINT (internal/cli), and the runtime gives a
// child the default action of every signal its parent handles, so a session's programs
// can be hung up and interrupted even when the server was started with those ignored
// (nohup; a background job of a script). A test binary handles no signal: run under
// nohup, every session it opened ignored the hangup that closing it sends.
func TestMain(m *testing.M) {
	for _, sig := range []os.Signal{syscall.SIGHUP, syscall.SIGINT} {
		if signal.Ignored(sig) {
			signal.Notify(make(chan os.Signal, 1), sig)
		}
	}
	os.Exit(m.Run())
}
