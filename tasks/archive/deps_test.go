package archive

import (
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/deptest"
)

// TestDeps keeps archive a file format: nothing of this project, so that it cannot reach
// the engine's state or the store.
func TestDeps(t *testing.T) {
	banned := deptest.NoAdapters()
	banned[deptest.Module] = "archive is a file format: it uses no package of this project"
	banned[deptest.Module+"/tasks"] = "the engine imports this package; this package reaching the engine's state would undo the cut"
	banned[deptest.Module+"/store"] = "a pure package reads and writes no database"
	deptest.DepChecker{Pkg: ".", Banned: banned}.Check(t)
}
