package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// The operator CLI. `mcp-harness tasks list|status|logs|graph|cancel` read the workspace
// store that the running servers write (another process on the same SQLite file, in WAL
// mode, so reading never waits on a server) and cancel through it: a cancel is recorded in
// the store and the live server that owns the graph carries it out, within about 200 ms.
//
// Exit codes: 0 when the command did what it was asked (whatever the state of the graph
// it shows), 1 when it could not (no state in the workspace, an unknown graph or task, a
// graph whose server is gone, a database error), 2 for a command-line mistake (an unknown
// flag or subcommand, a missing or extra argument, a bad flag value). Messages go to
// stderr; stdout carries only the output asked for, so `--json` output can be piped.
//
// The --json shapes are stable: fields are only ever added. They follow the tools' result
// shapes (DESIGN.md): every field is present, null where it does not apply; times are
// RFC 3339 UTC with milliseconds; durations are whole milliseconds. See cliGraph,
// cliStatus, cliGraphView and cliCancel for the field lists.

// tasksOptions are the flags every tasks subcommand takes.
type tasksOptions struct {
	workspace string
	stateDir  string
}

// cliGraphStates are the derived statuses a graph can have (tasks.GraphStatus).
var cliGraphStates = []string{"running", "succeeded", "failed", "cancelled"}

// newTasksCmd is the operator CLI: `mcp-harness tasks ...` reads (and cancels through)
// the same workspace store as the running servers.
func newTasksCmd() *cobra.Command {
	o := &tasksOptions{}
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "See and steer the task graphs of a workspace from a terminal",
		Long: "See and steer the task graphs the agent runs on a workspace, from a terminal: list them,\n" +
			"show a graph's tasks, print or follow a task's log, draw the graph, cancel tasks.\n" +
			"These commands read the same store as the running servers and act on graphs a live\n" +
			"server is running.\n\n" +
			"--workspace and --state-dir can also be given as MCP_HARNESS_WORKSPACE and\n" +
			"MCP_HARNESS_STATE_DIR. Colours are used only when stdout is a terminal and NO_COLOR\n" +
			"is not set. Exit status: 0 done, 1 failed, 2 command-line mistake.",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += "; did you mean " + strings.Join(s, " or ") + "?"
			}
			return usageError{errors.New(msg + " (see " + cmd.CommandPath() + " --help)")}
		},
		RunE:                       func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		SuggestionsMinimumDistance: 2,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return o.fromEnv(cmd)
		},
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.workspace, "workspace", ".", "the project directory the server runs on")
	pf.StringVar(&o.stateDir, "state-dir", "", "where the database and logs live (default <workspace>/.mcp-harness)")
	// cobra's own flag errors (unknown flag, bad value) are command-line mistakes: exit 2.
	// Subcommands inherit this.
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
	cmd.AddCommand(newTasksListCmd(o), newTasksStatusCmd(o), newTasksLogsCmd(o), newTasksGraphCmd(o), newTasksCancelCmd(o))
	return cmd
}

// fromEnv sets --workspace and --state-dir from MCP_HARNESS_WORKSPACE and
// MCP_HARNESS_STATE_DIR when they were not given. Only these two: a variable named after a
// subcommand's own flag (MCP_HARNESS_STATUS, MCP_HARNESS_JSON) must not change what it does.
func (o *tasksOptions) fromEnv(cmd *cobra.Command) error {
	fs := pflag.NewFlagSet("env", pflag.ContinueOnError)
	for _, name := range []string{"workspace", "state-dir"} {
		if f := cmd.Flags().Lookup(name); f != nil {
			fs.AddFlag(f)
		}
	}
	return flagsFromEnv(fs)
}

// cliArgs accepts between min and max arguments (max < 0: no upper bound); anything else
// is a usage error that says what the command takes.
func cliArgs(min, max int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= min && (max < 0 || len(args) <= max) {
			return nil
		}
		return usageError{fmt.Errorf("%s takes %s, got %d argument(s) (see %s --help)", cmd.CommandPath(), what, len(args), cmd.CommandPath())}
	}
}

func cliUsagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func newTasksListCmd(o *tasksOptions) *cobra.Command {
	var (
		statuses []string
		limit    int
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the task graphs, newest first",
		Long: "List the task graphs of the workspace, newest first, with their state, progress\n" +
			"(finished/total tasks), age, duration, and the server process that runs them (live or gone).",
		Example: "  mcp-harness tasks list\n  mcp-harness tasks list --status running,failed --limit 5\n  mcp-harness tasks list --json",
		Args:    cliArgs(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, s := range statuses {
				if !slices.Contains(cliGraphStates, s) {
					return cliUsagef("--status %q: want one of %s", s, strings.Join(cliGraphStates, ", "))
				}
			}
			if limit < 1 {
				return cliUsagef("--limit %d: want 1 or more", limit)
			}
			ctx := cmd.Context()
			ws, err := o.open(ctx)
			if err != nil {
				return err
			}
			defer ws.Close()
			snaps, more, err := cliListGraphs(ctx, ws.DB, statuses, limit)
			if err != nil {
				return err
			}
			now := time.Now()
			out := cliList{Graphs: []cliGraph{}, More: more}
			for _, s := range snaps {
				r, err := ws.runner(ctx, s.Graph.RunnerID, now)
				if err != nil {
					return err
				}
				out.Graphs = append(out.Graphs, cliGraphOf(s, r, now))
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return writeCLIJSON(w, out)
			}
			return renderCLIList(w, newCLIPalette(w), out, statuses, limit, now)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&statuses, "status", nil, "only graphs in these states: running, succeeded, failed, cancelled (comma-separated or repeated)")
	f.IntVarP(&limit, "limit", "n", 20, "the most graphs to show")
	f.BoolVar(&asJSON, "json", false, "print JSON: {graphs: [...], more}")
	cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(cliGraphStates, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func newTasksStatusCmd(o *tasksOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status GRAPH",
		Short: "Show a graph and its tasks",
		Long: "Show a graph and a table of its tasks: state, exit code or error code, attempt and\n" +
			"duration. The summary line counts failures first and names the tasks that failed.",
		Example:           "  mcp-harness tasks status g-01M8P0M0F0M8T333\n  mcp-harness tasks status g-01M8P0M0F0M8T333 --json",
		Args:              cliArgs(1, 1, "one argument, GRAPH"),
		ValidArgsFunction: o.complete(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ws, err := o.open(ctx)
			if err != nil {
				return err
			}
			defer ws.Close()
			snap, err := ws.snapshot(ctx, args[0])
			if err != nil {
				return err
			}
			now := time.Now()
			r, err := ws.runner(ctx, snap.Graph.RunnerID, now)
			if err != nil {
				return err
			}
			out := cliStatusOf(snap, r, ws.LogsDir, now)
			w := cmd.OutOrStdout()
			if asJSON {
				return writeCLIJSON(w, out)
			}
			return renderCLIStatus(w, newCLIPalette(w), out, now)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: the graph as in list, with its tasks")
	return cmd
}

func newTasksLogsCmd(o *tasksOptions) *cobra.Command {
	var (
		follow bool
		tail   int
	)
	cmd := &cobra.Command{
		Use:   "logs GRAPH TASK",
		Short: "Print a task's log; -f follows it until the task ends",
		Long: "Print a task's log (its stdout and stderr, interleaved as written). With -f it goes on\n" +
			"printing what the task writes until the task ends, then stops by itself; a task that\n" +
			"has not started yet is waited for.",
		Example: "  mcp-harness tasks logs g-01M8P0M0F0M8T333 build\n" +
			"  mcp-harness tasks logs -f --tail 20 g-01M8P0M0F0M8T333 test",
		Args:              cliArgs(2, 2, "two arguments, GRAPH and TASK"),
		ValidArgsFunction: o.complete(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("tail") && tail < 0 {
				return cliUsagef("--tail %d: want 0 or more lines", tail)
			}
			ctx := cmd.Context()
			ws, err := o.open(ctx)
			if err != nil {
				return err
			}
			defer ws.Close()
			snap, err := ws.snapshot(ctx, args[0])
			if err != nil {
				return err
			}
			t, err := cliFindTask(snap, args[1])
			if err != nil {
				return err
			}
			if snap.Graph.ExpiredAt != nil { // finished long ago: the log is in the archive
				return cliPrintArchivedLog(ctx, ws.DB, cmd.OutOrStdout(), snap.Graph.ID, t.ID, tail)
			}
			path := tasks.LogPath(ws.LogsDir, snap.Graph.ID, t.ID)
			lf := cliLogFollower{db: ws.DB, graph: snap.Graph, taskID: t.ID, path: path, w: cmd.OutOrStdout(), poll: cliFollowPoll}
			if err := lf.start(tail); err != nil {
				return err
			}
			if !follow {
				_, err := lf.drain()
				if err == nil && lf.offset == 0 && tasks.State(t.Status).Terminal() && t.StartedAt == nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "mcp-harness: task %s never started (%s), so it has no log\n", t.ID, t.Status)
				}
				return err
			}
			end, err := lf.follow(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "mcp-harness: task %s %s\n", end.ID, cliDescribeEnd(end))
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&follow, "follow", "f", false, "go on printing the log as the task writes it, until the task ends")
	f.IntVar(&tail, "tail", -1, "start with the last N lines only (default: the whole log)")
	return cmd
}

func newTasksGraphCmd(o *tasksOptions) *cobra.Command {
	var mermaid, dot, asJSON bool
	cmd := &cobra.Command{
		Use:   "graph GRAPH",
		Short: "Draw a graph's dependency tree (or Mermaid / Graphviz text)",
		Long: "Draw a graph as an indented tree: each task under the tasks it depends on, with its\n" +
			"state, and for a pending task why it has not started (ready, waiting on..., blocked by...).\n" +
			"A task with several dependencies appears under each; its subtree is drawn once.\n" +
			"--mermaid prints a Mermaid flowchart and --dot a Graphviz digraph, to paste elsewhere\n" +
			"(for example: mcp-harness tasks graph G --dot | dot -Tsvg > graph.svg).",
		Example:           "  mcp-harness tasks graph g-01M8P0M0F0M8T333\n  mcp-harness tasks graph g-01M8P0M0F0M8T333 --mermaid",
		Args:              cliArgs(1, 1, "one argument, GRAPH"),
		ValidArgsFunction: o.complete(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			n := 0
			for _, b := range []bool{mermaid, dot, asJSON} {
				if b {
					n++
				}
			}
			if n > 1 {
				return cliUsagef("--mermaid, --dot and --json are alternatives: give one")
			}
			ctx := cmd.Context()
			ws, err := o.open(ctx)
			if err != nil {
				return err
			}
			defer ws.Close()
			snap, err := ws.snapshot(ctx, args[0])
			if err != nil {
				return err
			}
			v := cliViewOf(snap)
			w := cmd.OutOrStdout()
			switch {
			case asJSON:
				return writeCLIJSON(w, v.json)
			case mermaid:
				_, err := io.WriteString(w, v.view.Mermaid)
				return err
			case dot:
				_, err := io.WriteString(w, cliDot(snap.Graph, v.view))
				return err
			}
			return renderCLITree(w, newCLIPalette(w), snap, v)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&mermaid, "mermaid", false, "print a Mermaid flowchart")
	f.BoolVar(&dot, "dot", false, "print a Graphviz dot digraph")
	f.BoolVar(&asJSON, "json", false, "print JSON: nodes, edges, order and the Mermaid text")
	return cmd
}

func newTasksCancelCmd(o *tasksOptions) *cobra.Command {
	var (
		grace  time.Duration
		noWait bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "cancel GRAPH [TASK...]",
		Short: "Cancel a graph's unfinished tasks (or the ones named)",
		Long: "Cancel tasks of a graph, by default every unfinished one, also when another process (the\n" +
			"agent's server) runs it: pending tasks are cancelled at once, running ones get SIGTERM to\n" +
			"their whole process group, then SIGKILL after --grace. Tasks that depend on a cancelled\n" +
			"one are skipped. The command waits (up to --grace and a few seconds more) until the\n" +
			"running tasks it cancelled have stopped, then prints each task's outcome: cancelled,\n" +
			"cancelling (still stopping), skipped, or already_terminal. Safe to repeat.",
		Example:           "  mcp-harness tasks cancel g-01M8P0M0F0M8T333\n  mcp-harness tasks cancel g-01M8P0M0F0M8T333 dev-server --grace 10s",
		Args:              cliArgs(1, -1, "GRAPH and optionally TASK ids"),
		ValidArgsFunction: o.complete(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			if grace < 0 || grace > cliMaxGrace {
				return cliUsagef("--grace %v: want 0 to %v", grace, cliMaxGrace)
			}
			ctx := cmd.Context()
			ws, err := o.open(ctx)
			if err != nil {
				return err
			}
			defer ws.Close()
			out, pending, err := ws.cancel(ctx, args[0], args[1:], grace, !noWait)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return writeCLIJSON(w, out)
			}
			return renderCLICancel(w, newCLIPalette(w), out, pending, grace)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&grace, "grace", 5*time.Second, "time between SIGTERM and SIGKILL for running tasks")
	f.BoolVar(&noWait, "no-wait", false, "return once the server has taken the request, without waiting for running tasks to stop")
	f.BoolVar(&asJSON, "json", false, "print JSON: {graphId, tasks: [{id, previousStatus, status, outcome}]}")
	return cmd
}

// cliMaxGrace bounds --grace, as the tasks_cancel tool bounds graceMs.
const cliMaxGrace = time.Minute

// cliCancelSettle is how long cancel waits, beyond the grace, for signalled tasks to be
// recorded as ended: the owner's SIGKILL comes at the grace, its record soon after.
const cliCancelSettle = 5 * time.Second

// cliFindTask returns the task of snap with the given id, or an error that says how to see
// the graph's tasks.
func cliFindTask(snap tasks.Snapshot, id string) (store.TaskRow, error) {
	for _, t := range snap.Tasks {
		if t.ID == id {
			return t, nil
		}
	}
	return store.TaskRow{}, fmt.Errorf("graph %s has no task %q: `mcp-harness tasks status %s` lists its tasks", snap.Graph.ID, id, snap.Graph.ID)
}

// complete completes GRAPH from the store, newest graphs first, and with withTasks the
// TASK arguments after it from that graph. It never fails loudly: a shell completion that
// finds no workspace offers nothing.
func (o *tasksOptions) complete(withTasks bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		const none = cobra.ShellCompDirectiveNoFileComp
		if len(args) > 0 && !withTasks || cmd.Name() == "logs" && len(args) > 1 {
			return nil, none // GRAPH only, or logs' one TASK already given
		}
		if err := o.fromEnv(cmd); err != nil {
			return nil, none
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		ws, err := o.open(ctx)
		if err != nil {
			cobra.CompDebugln(err.Error(), true)
			return nil, none
		}
		defer ws.Close()
		var out []cobra.Completion
		if len(args) == 0 {
			snaps, _, err := cliListGraphs(ctx, ws.DB, nil, cliCompletionGraphs)
			if err != nil {
				return nil, none
			}
			for _, s := range snaps {
				if strings.HasPrefix(s.Graph.ID, toComplete) {
					desc := tasks.GraphStatus(s.Tasks)
					if s.Graph.Name != "" {
						desc = s.Graph.Name + " · " + desc
					}
					out = append(out, cobra.CompletionWithDesc(s.Graph.ID, desc))
				}
			}
			return out, none | cobra.ShellCompDirectiveKeepOrder
		}
		snap, err := tasks.LoadSnapshot(ctx, ws.DB, args[0])
		if err != nil {
			return nil, none
		}
		for _, t := range snap.Tasks {
			if strings.HasPrefix(t.ID, toComplete) && !slices.Contains(args[1:], t.ID) {
				out = append(out, cobra.CompletionWithDesc(t.ID, t.Status))
			}
		}
		return out, none | cobra.ShellCompDirectiveKeepOrder
	}
}

// cliCompletionGraphs is how many of the newest graphs completion offers.
const cliCompletionGraphs = 100

// writeCLIJSON writes v as indented JSON and a newline, one field a line.
func writeCLIJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // a terminal, not a web page: keep <br/> and && as they are
	return enc.Encode(v)
}

// newCLIPalette colours output written to w only when w is the process's stdout, stdout is a
// terminal, NO_COLOR is unset or empty (https://no-color.org) and TERM is not "dumb".
func newCLIPalette(w io.Writer) cliPalette {
	f, ok := w.(*os.File)
	if !ok || f != os.Stdout || !isTerminal(f.Fd()) || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return cliPalette{}
	}
	return cliPalette{on: true}
}
