package server

import (
	"runtime/debug"
	"testing"
)

// The memory limit leaves room for every session's ring on top of the base, so a server
// whose sessions hold full buffers does not spend its time collecting; GOMEMLIMIT wins.
func TestSetMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	t.Setenv("GOMEMLIMIT", "")
	setMemoryLimit(Config{MaxSessions: 8, ShellBuffer: 1 << 20})
	if got, want := debug.SetMemoryLimit(-1), int64(memoryLimit+8<<20); got != want {
		t.Errorf("limit %d, want %d", got, want)
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(123 << 20)
	setMemoryLimit(Config{})
	if got := debug.SetMemoryLimit(-1); got != 123<<20 {
		t.Errorf("with GOMEMLIMIT set the limit became %d", got)
	}
}
