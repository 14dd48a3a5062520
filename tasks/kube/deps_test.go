package kube

import (
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/deptest"
)

// TestDeps keeps the executor an engine's part: no MCP, no command line of its own, and of
// the project only the task engine's words it implements and its subpackages.
func TestDeps(t *testing.T) {
	banned := deptest.NoAdapters()
	// client-go's clientcmd (kubeconfig loading) defines pflag flags for programs that
	// want them; nothing here parses a flag.
	delete(banned, "github.com/spf13/pflag")
	banned[deptest.Module] = "the executor implements tasks.Executor and uses nothing else of the project"
	deptest.DepChecker{
		Pkg:     ".",
		Banned:  banned,
		Allowed: []string{deptest.Module + "/tasks", deptest.Module + "/store", deptest.Module + "/internal"},
	}.Check(t)
}
