package main

import "github.com/spf13/cobra"

// newTasksCmd is the operator CLI: `mcp-harness tasks ...` reads (and cancels through)
// the same workspace store as the running servers.
func newTasksCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "tasks",
		Short: "See and steer the task graphs of a workspace from a terminal",
	}
}
