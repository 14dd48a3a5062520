// Command mcp-harness is an MCP server (over stdio, or Streamable HTTP) that gives an AI
// coding agent persistent PTY sessions and a durable task-DAG engine on one workspace.
// This file only runs the command line of internal/cli and exits with the status it
// gives; internal/server serves.
package main

import (
	"os"

	"github.com/mcp-harness/mcp-harness/internal/cli"
)

// version is set at release time with -ldflags "-X main.version=..." (.goreleaser.yaml;
// .ci/run checks the static build reports it); when it is not, cli.Version reads the
// version from the build info.
var version string

func main() {
	if err := cli.NewRootCommand(version).Execute(); err != nil {
		os.Exit(cli.ExitStatus(err, os.Stderr))
	}
}
