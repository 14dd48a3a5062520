package operator

import (
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/deptest"
)

// TestDeps keeps the operator socket an adapter of the PTY engine alone: no MCP, no
// command line, no store and no task engine (a person's commands on graphs go through the
// store, not this socket). Checked for macOS too, whose files import differently.
func TestDeps(t *testing.T) {
	banned := deptest.NoAdapters()
	banned[deptest.Module+"/tools"] = "the operator socket is an adapter beside the MCP tools, not on top of them"
	banned[deptest.Module+"/internal/server"] = "the composition root starts the operator socket, not the other way round"
	banned[deptest.Module+"/internal/cli"] = "the command line is the socket's client; the socket knows nothing of flags"
	banned[deptest.Module+"/tasks"] = "the operator socket serves terminal sessions; graphs are read from the store by the CLI"
	banned[deptest.Module+"/store"] = "the socket needs no database: a socket's name says whether its server lives"
	for _, goos := range []string{"", "darwin"} {
		deptest.DepChecker{Pkg: ".", Banned: banned, GOOS: goos}.Check(t)
	}
}
