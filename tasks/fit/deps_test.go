package fit

import (
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/deptest"
)

// TestDeps keeps fit pure: of this project only the leaf helpers of internal/, so that it
// cannot reach the engine's state or the store.
func TestDeps(t *testing.T) {
	banned := deptest.NoAdapters()
	banned[deptest.Module] = "of this project, fit uses only the helpers of internal/"
	banned[deptest.Module+"/tasks"] = "the engine imports this package; this package reaching the engine's state would undo the cut"
	banned[deptest.Module+"/store"] = "a pure package reads and writes no database"
	deptest.DepChecker{Pkg: ".", Banned: banned, Allowed: []string{deptest.Module + "/internal"}}.Check(t)
}
