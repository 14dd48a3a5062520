package store

import (
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/deptest"
)

// TestDeps keeps the store at the bottom of the engines: the engines import it, so it
// imports none of them, no MCP library and no CLI library; of the project it uses only the
// leaf helpers of internal/. Checked for macOS too, whose files import differently.
func TestDeps(t *testing.T) {
	banned := deptest.NoAdapters()
	banned[deptest.Module] = "the store is the bottom of the engines: of this project it uses only the helpers of internal/"
	banned[deptest.Module+"/pty"] = "the PTY engine is recorded through the adapter; the store knows sessions only as rows"
	banned[deptest.Module+"/tasks"] = "the task engine builds on the store; the store knows graphs and tasks only as rows"
	for _, goos := range []string{"", "darwin"} {
		deptest.DepChecker{
			Pkg:     ".",
			Banned:  banned,
			Allowed: []string{deptest.Module + "/internal"},
			GOOS:    goos,
		}.Check(t)
	}
}
