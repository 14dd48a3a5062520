package pty

import (
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/deptest"
)

// TestDeps keeps the engine an engine: no MCP library, no CLI library, and of the project
// only its own subpackages and the leaf helpers of internal/. A helper that imported an
// engine would bring it into the list, and fail here. Checked for macOS too, whose files
// import differently.
func TestDeps(t *testing.T) {
	banned := deptest.NoAdapters()
	banned[deptest.Module] = "the PTY engine stands alone: of this project it uses only its own subpackages and the helpers of internal/"
	banned[deptest.Module+"/tasks"] = "the two engines meet only in the adapters, which hand each what it needs of the other"
	banned[deptest.Module+"/store"] = "a PTY session is recorded by the adapter, not by the engine, which needs no database"
	banned["github.com/mattn/go-sqlite3"] = "the PTY engine keeps no records; linking SQLite would need CGo for nothing"
	for _, goos := range []string{"", "darwin"} {
		deptest.DepChecker{
			Pkg:     ".",
			Banned:  banned,
			Allowed: []string{deptest.Module + "/internal", deptest.Module + "/pty"},
			GOOS:    goos,
		}.Check(t)
	}
}
