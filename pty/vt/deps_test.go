package vt

import (
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/deptest"
)

// TestDeps keeps vt pure: nothing of this project, so that it stays a model of a terminal
// over bytes.
func TestDeps(t *testing.T) {
	banned := deptest.NoAdapters()
	banned[deptest.Module] = "vt models a terminal over bytes: it uses no package of this project"
	banned[deptest.Module+"/pty"] = "the pty package imports this one; this one reaching sessions, goroutines or locks would undo the cut"
	banned[deptest.Module+"/tasks"] = "a pure part of the PTY engine has no business with the task engine"
	banned[deptest.Module+"/store"] = "a pure package reads and writes no database"
	deptest.DepChecker{Pkg: ".", Banned: banned}.Check(t)
}
