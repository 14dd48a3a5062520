package clean

import (
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/deptest"
)

// TestDeps keeps clean pure: of this project only the ring it reads from, so that it
// stays text over bytes.
func TestDeps(t *testing.T) {
	banned := deptest.NoAdapters()
	banned[deptest.Module] = "clean is text over bytes: of this project it reads only the ring buffer"
	banned[deptest.Module+"/pty"] = "the pty package imports this one; this one reaching sessions, goroutines or locks would undo the cut"
	banned[deptest.Module+"/tasks"] = "a pure part of the PTY engine has no business with the task engine"
	banned[deptest.Module+"/store"] = "a pure package reads and writes no database"
	deptest.DepChecker{Pkg: ".", Banned: banned, Allowed: []string{deptest.Module + "/pty/ring"}}.Check(t)
}
