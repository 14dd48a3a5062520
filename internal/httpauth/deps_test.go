package httpauth

import (
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/deptest"
)

// TestDeps keeps the HTTP guard in front of the protocol and beside nothing else: it
// knows the protocol's principal, not the tools or the engines behind them.
func TestDeps(t *testing.T) {
	why := "the guard decides who may reach the MCP endpoint; what they may do there is the tool table's and the engines' business"
	deptest.DepChecker{
		Pkg: ".",
		Banned: map[string]string{
			deptest.Module + "/tools":           why,
			deptest.Module + "/pty":             why,
			deptest.Module + "/tasks":           why,
			deptest.Module + "/store":           why,
			deptest.Module + "/internal/server": "the composition root builds the guard; the guard does not reach back",
			"github.com/spf13/cobra":            "only the command line parses flags; the guard takes a Config",
			"github.com/spf13/pflag":            "only the command line parses flags; the guard takes a Config",
		},
	}.Check(t)
}
