package tasks

import (
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/deptest"
)

// TestDeps keeps the engine an engine: no MCP library, no CLI library, and of the project
// only the store it records into, its own subpackages and the leaf helpers of internal/.
// Checked for macOS too, whose files import differently.
func TestDeps(t *testing.T) {
	banned := deptest.NoAdapters()
	banned[deptest.Module] = "the task engine uses of this project only the store it records into, its own subpackages and the helpers of internal/"
	banned[deptest.Module+"/pty"] = "the two engines meet only in the adapters, which hand each what it needs of the other"
	for _, goos := range []string{"", "darwin"} {
		deptest.DepChecker{
			Pkg:     ".",
			Banned:  banned,
			Allowed: []string{deptest.Module + "/internal", deptest.Module + "/store", deptest.Module + "/tasks"},
			GOOS:    goos,
		}.Check(t)
	}
}
