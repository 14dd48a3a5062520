package envpolicy

import (
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/deptest"
)

// TestDeps keeps this pure code a leaf: the engines and the command line import it, so it
// imports none of them, no MCP library and no CLI library.
func TestDeps(t *testing.T) {
	banned := deptest.NoAdapters()
	banned[deptest.Module] = "a helper under internal/ that the engines import must import none of them"
	banned["github.com/mattn/go-sqlite3"] = "only the store opens the database; a helper that linked SQLite would need CGo for nothing"
	deptest.DepChecker{
		Pkg:     ".",
		Banned:  banned,
		Allowed: []string{deptest.Module + "/internal"},
	}.Check(t)
}
