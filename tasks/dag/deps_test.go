package dag

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps dag pure: of this project it may use only the leaf helpers of internal/,
// never the engine (package tasks) nor the store, so that nothing here can reach state.
func TestDeps(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/mcp-harness/mcp-harness/") &&
			!strings.HasPrefix(dep, "github.com/mcp-harness/mcp-harness/internal/") &&
			dep != "github.com/mcp-harness/mcp-harness/tasks/dag" {
			t.Errorf("dag depends on %s; it may use only the leaf helpers of internal/", dep)
		}
	}
}
