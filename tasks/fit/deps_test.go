package fit

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps fit pure: of this project only the leaf helpers of internal/, so that it
// cannot reach the engine's state or the store.
func TestDeps(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/mcp-harness/mcp-harness/") &&
			!strings.HasPrefix(dep, "github.com/mcp-harness/mcp-harness/internal/") &&
			dep != "github.com/mcp-harness/mcp-harness/tasks/fit" {
			t.Errorf("fit depends on %s; it may use only the leaf helpers of internal/", dep)
		}
	}
}
