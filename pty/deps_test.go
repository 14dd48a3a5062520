package pty

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps the engine an engine: no MCP library and no other package of the
// project but the leaf helpers of internal/ (after tailscale's tstest/deptest). A helper
// that imported an engine would bring it into the list, and fail here.
func TestDeps(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command:", err)
	}
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case strings.HasPrefix(dep, "github.com/mark3labs/mcp-go"),
			strings.HasPrefix(dep, "github.com/modelcontextprotocol/"),
			strings.HasPrefix(dep, "github.com/spf13/cobra"),
			strings.HasPrefix(dep, "github.com/mcp-harness/mcp-harness/") && dep != "github.com/mcp-harness/mcp-harness/pty" &&
				!strings.HasPrefix(dep, "github.com/mcp-harness/mcp-harness/internal/"):
			t.Errorf("pty depends on %s; engines must not import MCP, cobra or other project packages", dep)
		}
	}
}
