// Package cli is the mcp-harness command line, everything the binary does before and
// around server.Serve: the stdio command (flags become a server.Config; SIGTERM, SIGINT and
// SIGHUP, or a client that stops reading stdout, cancel server.Serve), the http command
// (the same flags and signals, and where it listens and whom it lets in, for
// server.ServeHTTP), the hidden runner of
// a detached graph, the operator commands under `tasks`, the terminal-session commands
// `sessions`, `attach` and `answer` (clients of the servers' operator sockets,
// internal/operator), the server's rotating log file, and the exit status each error gets. The main package only executes the command tree
// NewRootCommand makes; internal/server serves.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// EnvPrefix names the environment variables that stand in for flags: --max-wait can be
// given as MCP_HARNESS_MAX_WAIT, since some clients make env easier to set than args.
const EnvPrefix = "MCP_HARNESS_"

// NewRootCommand is the whole command tree of mcp-harness. released is the version set at
// release time (the main package's -X main.version), or "" for a build without it: see
// Version.
func NewRootCommand(released string) *cobra.Command {
	version := Version(released)
	root := &cobra.Command{
		Use:           "mcp-harness",
		Short:         "An MCP server with persistent terminals and durable task graphs for coding agents",
		Long:          "mcp-harness is an MCP server that an MCP client (Claude Desktop, Codex, Cursor)\nlaunches (stdio), or reaches over the network (http), to get persistent PTY sessions and\na durable task-DAG engine on a workspace.\n\nFlags can also be set through environment variables: --max-wait as MCP_HARNESS_MAX_WAIT.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	root.SetVersionTemplate("{{.Version}}\n") // as `mcp-harness version` prints it
	root.AddCommand(newStdioCmd(version), newHTTPCmd(version), newVersionCmd(version), newTasksCmd(version), newRunnerCmd(version),
		newSessionsCmd(), newAttachCmd(), newAnswerCmd())
	setUsageErrors(root) // after every command is added: see setUsageErrors
	return root
}

// ExitStatus is the status the process exits with after the root command returned err,
// which is not nil; it says what went wrong on stderr, unless the command has said it
// already.
func ExitStatus(err error, stderr io.Writer) int {
	var status exitStatus
	if errors.As(err, &status) {
		return int(status)
	}
	fmt.Fprintln(stderr, "mcp-harness:", printableLines(err.Error())) // it may quote what a server or the agent said
	if _, ok := err.(usageError); ok {
		return 2
	}
	return 1
}

// Exit statuses: 0 done, 1 failed, 2 a command-line mistake (as flag parsing and most Unix
// tools have it). Every mistake cobra or a command finds is a usageError: an unknown
// command (with cobra's "did you mean" suggestion when it has one) or flag, a missing or
// extra argument, a value that does not parse or makes no sense. It is found before
// anything is opened or created.

// usageError is a command-line mistake: exit status 2.
type usageError struct{ error }

// exitStatus is an outcome to exit with and nothing to say: `tasks logs --exit-status`
// has already said how the task ended.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// setUsageErrors makes every command-line mistake under root a usageError: flag errors,
// argument checks, and an unknown subcommand, which also gets cobra's suggestions. It also
// adds cobra's help and completion commands first, so that theirs are covered too.
func setUsageErrors(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	// Subcommands inherit the flag error function.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		switch {
		case c.HasSubCommands():
			c.Args = unknownSubcommand
			c.SuggestionsMinimumDistance = 2
			if !c.Runnable() {
				// cobra shows a command without Run its help, exit 0, before it checks
				// the arguments: `completion fsh` would not say it is mistyped.
				c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
			}
		case c.Args != nil:
			check := c.Args
			c.Args = func(cmd *cobra.Command, args []string) error {
				err := check(cmd, args)
				var u usageError
				if err == nil || errors.As(err, &u) {
					return err
				}
				return usageError{fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())}
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// unknownSubcommand is the argument check of a command that only groups subcommands: an
// argument cobra did not take for a subcommand is a mistyped one.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usageError{errors.New(msg + " (see " + cmd.CommandPath() + " --help)")}
}
