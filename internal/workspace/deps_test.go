package workspace

import (
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/deptest"
)

// TestDeps keeps this a leaf helper: the engines import it, so it imports none of them, no
// MCP library and no CLI library. Checked for macOS too, whose files import differently.
func TestDeps(t *testing.T) {
	banned := deptest.NoAdapters()
	banned[deptest.Module] = "a helper under internal/ that the engines import must import none of them"
	banned["github.com/mattn/go-sqlite3"] = "only the store opens the database; a helper that linked SQLite would need CGo for nothing"
	for _, goos := range []string{"", "darwin"} {
		deptest.DepChecker{
			Pkg:     ".",
			Banned:  banned,
			Allowed: []string{deptest.Module + "/internal"},
			GOOS:    goos,
		}.Check(t)
	}
}
