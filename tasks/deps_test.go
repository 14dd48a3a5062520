package tasks

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps the engine an engine: no MCP library, no cobra, and of the project only
// the store it records into, the leaf helpers of internal/ and its own subpackages.
func TestDeps(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		own := strings.HasPrefix(dep, "github.com/mcp-harness/mcp-harness/") &&
			!strings.HasPrefix(dep, "github.com/mcp-harness/mcp-harness/internal/") &&
			!strings.HasPrefix(dep, "github.com/mcp-harness/mcp-harness/tasks/")
		switch {
		case strings.HasPrefix(dep, "github.com/mark3labs/mcp-go"),
			strings.HasPrefix(dep, "github.com/modelcontextprotocol/"),
			strings.HasPrefix(dep, "github.com/spf13/cobra"),
			own && dep != "github.com/mcp-harness/mcp-harness/tasks" && dep != "github.com/mcp-harness/mcp-harness/store":
			t.Errorf("tasks depends on %s; it may use only the store of this project, and no MCP or CLI library", dep)
		}
	}
}
