package store

import (
	"os/exec"
	"strings"
	"testing"
)

// The engines know nothing of MCP: only tools/ and main may import mcp-go.
func TestDependencies_NoMCP(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/mark3labs/mcp-go") || strings.HasPrefix(dep, "github.com/mcp-harness/mcp-harness/tools") {
			t.Errorf("store depends on %s", dep)
		}
	}
}
