// Command mcp-harness is an MCP server (over stdio, or Streamable HTTP) that gives an AI
// coding agent persistent PTY sessions and a durable task-DAG engine on one workspace.
// This file only runs the command line of internal/cli and exits with the status it
// gives; internal/server serves. Kubernetes tasks and s3:// buckets run in a helper
// executable, mcp-harness-remote (internal/remote).
package main

import (
	"os"

	"github.com/mcp-harness/mcp-harness/internal/cli"
	"github.com/mcp-harness/mcp-harness/internal/remote"
)

// version is set at release time with -ldflags "-X main.version=..." (.goreleaser.yaml;
// .ci/run checks the static build reports it); when it is not, cli.Version reads the
// version from the build info.
var version string

func main() {
	os.Exit(run())
}

// run runs the command line with Kubernetes and s3:// buckets reached through the remote
// helper (internal/remote), and stops the helper, if it was started, before the exit.
func run() int {
	remote.Install()
	defer remote.Shared.Close()
	if err := cli.NewRootCommand(version).Execute(); err != nil {
		return cli.ExitStatus(err, os.Stderr)
	}
	return 0
}
