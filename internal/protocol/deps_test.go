package protocol

import (
	"os/exec"
	"strings"
	"testing"
)

// The protocol knows no tool and no engine: a transport over it, and the tool table under
// it, can change without it. What it needs of them comes in through Config.
func TestDeps_NoToolsNorEngines(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const module = "github.com/mcp-harness/mcp-harness/"
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"tools", "internal/server", "tasks", "pty", "store"} {
			if dep == module+banned || strings.HasPrefix(dep, module+banned+"/") {
				t.Errorf("internal/protocol imports %s: the tool table and the engines reach it through Config", dep)
			}
		}
	}
}
