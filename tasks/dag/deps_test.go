package dag

import (
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/deptest"
)

// TestDeps keeps dag pure: of this project it may use only the leaf helpers of internal/,
// never the engine (package tasks) nor the store, so that nothing here can reach state.
func TestDeps(t *testing.T) {
	banned := deptest.NoAdapters()
	banned[deptest.Module] = "of this project, dag uses only the helpers of internal/"
	banned[deptest.Module+"/tasks"] = "the engine imports this package; this package reaching the engine's state would undo the cut"
	banned[deptest.Module+"/store"] = "a pure package reads and writes no database"
	deptest.DepChecker{Pkg: ".", Banned: banned, Allowed: []string{deptest.Module + "/internal"}}.Check(t)
}
