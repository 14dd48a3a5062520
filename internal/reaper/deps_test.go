package reaper

import (
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/deptest"
)

// TestDeps keeps this a leaf helper that the engines and the server may import.
func TestDeps(t *testing.T) {
	banned := deptest.NoAdapters()
	banned[deptest.Module] = "a helper under internal/ that the engines import must import none of them"
	for _, goos := range []string{"", "darwin"} {
		deptest.DepChecker{Pkg: ".", Banned: banned, Allowed: []string{deptest.Module + "/internal"}, GOOS: goos}.Check(t)
	}
}
