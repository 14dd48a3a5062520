package archive

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps archive a file format: nothing of this project, so that it cannot reach
// the engine's state or the store.
func TestDeps(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/mcp-harness/mcp-harness/") && dep != "github.com/mcp-harness/mcp-harness/tasks/archive" {
			t.Errorf("archive depends on %s; it may use no package of this project", dep)
		}
	}
}
