package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcp-harness/mcp-harness/internal/quote"
	"github.com/mcp-harness/mcp-harness/internal/server"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// The operator CLI. `mcp-harness tasks list|status|logs|graph|cancel` read the workspace
// store that the running servers write (another process on the same SQLite file, in WAL
// mode, so reading never waits on a server) and cancel through it: a cancel is recorded in
// the store and the live server that owns the graph carries it out, within about 200 ms.
// This file is the cobra wiring only: each command checks its flags, makes one call on a
// tasks.Reader, and hands the result to render.go (or writeJSON).
//
// Exit codes: 0 when the command did what it was asked (whatever the state of the graph
// it shows), 1 when it could not (no state in the workspace, an unknown graph or task, a
// graph whose server is gone, a database error), 2 for a command-line mistake (an unknown
// flag or subcommand, a missing or extra argument, a bad flag value). `logs --exit-status`
// exits with the outcome instead: see newLogsCmd. Messages go to stderr; stdout carries
// only the output asked for, so `--json` output can be piped.
//
// Wherever a graph id is taken, a unique prefix of one does too (g-01M8QADD), in either
// case, and @latest names the newest graph; a task id may be a unique prefix of one of the
// graph's task ids (an exact id always wins). The MCP tools take whole ids only.
//
// The --json shapes are the tasks package's and are stable: fields are only ever added.
// Every field is present, null where it does not apply; times are RFC 3339 UTC with
// milliseconds; durations are whole milliseconds. list gives GraphList of tasks.Overview,
// status tasks.Detail, graph tasks.Report (the tasks_graph tool's shape), cancel
// tasks.CancelReport (the tasks_cancel tool's shape), and logs NDJSON: one tasks.LogEvent
// a line, a log event holding one line of the log.

// workspaceFlags are the flags every tasks subcommand takes.
type workspaceFlags struct {
	workspace string
	stateDir  string
}

// GraphList is `tasks list --json`: graphs newest first; more is true when --limit left
// older matching graphs out.
type GraphList struct {
	Graphs []tasks.Overview `json:"graphs"`
	More   bool             `json:"more"`
}

// Timings of the commands.
const (
	// maxGrace bounds --grace, as the tasks_cancel tool bounds graceMs.
	maxGrace = time.Minute
	// cancelSettle is how long cancel waits, beyond the grace, for signalled tasks to be
	// recorded as ended: the owner's SIGKILL comes at the grace, its record soon after.
	cancelSettle = 5 * time.Second
	// followPoll is how often `logs -f` looks at the log and the task's state: a person
	// can afford a fifth of a second, the pace of the servers' own cancel poll.
	followPoll = 200 * time.Millisecond
	// completionGraphs is how many of the newest graphs completion offers.
	completionGraphs = 100
)

// newTasksCmd is the operator CLI: `mcp-harness tasks ...` reads (and cancels through)
// the same workspace store as the running servers.
func newTasksCmd(version string) *cobra.Command {
	o := &workspaceFlags{}
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "See and steer the task graphs of a workspace from a terminal",
		Long: "See and steer the task graphs the agent runs on a workspace, from a terminal: list them,\n" +
			"show a graph's tasks, print or follow a task's log, draw the graph, cancel tasks.\n" +
			"These commands read the same store as the running servers and act on graphs a live\n" +
			"server is running.\n\n" +
			"--workspace and --state-dir can also be given as MCP_HARNESS_WORKSPACE and\n" +
			"MCP_HARNESS_STATE_DIR. Colours are used only when stdout is a terminal and NO_COLOR\n" +
			"is not set. Exit status: 0 done, 1 failed, 2 command-line mistake.\n\n" +
			"GRAPH is a graph id, a unique prefix of one (g-01M8QADD), or @latest for the newest\n" +
			"graph; TASK is a task id or a unique prefix of one.",
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return o.fromEnv(cmd)
		},
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.workspace, "workspace", ".", "the project directory the server runs on")
	pf.StringVar(&o.stateDir, "state-dir", "", "where the database and logs live (default <workspace>/.mcp-harness)")
	cmd.AddCommand(newListCmd(o), newStatusCmd(o), newLogsCmd(o), newGraphCmd(o), newCancelCmd(o), newRunCmd(o, version), newWatchCmd(o))
	return cmd
}

// fromEnv sets --workspace and --state-dir from MCP_HARNESS_WORKSPACE and
// MCP_HARNESS_STATE_DIR when they were not given. Only these two: a variable named after a
// subcommand's own flag (MCP_HARNESS_STATUS, MCP_HARNESS_JSON) must not change what it does.
func (o *workspaceFlags) fromEnv(cmd *cobra.Command) error {
	fs := pflag.NewFlagSet("env", pflag.ContinueOnError)
	for _, name := range []string{"workspace", "state-dir"} {
		if f := cmd.Flags().Lookup(name); f != nil {
			fs.AddFlag(f)
		}
	}
	return flagsFromEnv(fs)
}

// open opens the workspace's store for reading. Unlike a server, it creates nothing: a
// workspace without state has nothing to show, and the message says where to point.
func (o *workspaceFlags) open(ctx context.Context) (*tasks.Reader, error) {
	r, err := tasks.OpenReader(ctx, workspace.Config{Dir: o.workspace, StateDir: o.stateDir})
	if errors.Is(err, workspace.ErrNoState) {
		return nil, fmt.Errorf("%w: no server has run tasks there (point --workspace or --state-dir at the project the agent works on)", err)
	}
	return r, err
}

// openGraph opens the store and reads the graph ref names (an id, a unique prefix of one,
// or @latest); the caller closes the Reader.
func (o *workspaceFlags) openGraph(ctx context.Context, ref string) (*tasks.Reader, tasks.Snapshot, error) {
	r, err := o.open(ctx)
	if err != nil {
		return nil, tasks.Snapshot{}, err
	}
	snap, err := snapshot(ctx, r, ref)
	if err != nil {
		r.Close()
		return nil, tasks.Snapshot{}, err
	}
	return r, snap, nil
}

// snapshot reads the graph ref names; an unknown id says so and where to find the ids.
func snapshot(ctx context.Context, r *tasks.Reader, ref string) (tasks.Snapshot, error) {
	id, err := r.ResolveGraph(ctx, ref)
	if err == nil {
		var s tasks.Snapshot
		if s, err = r.Snapshot(ctx, id); err == nil {
			return s, nil
		}
	}
	if errors.Is(err, tasks.ErrNotFound) {
		if strings.EqualFold(ref, tasks.Latest) {
			return tasks.Snapshot{}, fmt.Errorf("no graphs in %s yet", r.Where())
		}
		return tasks.Snapshot{}, fmt.Errorf("no graph %s in %s: `mcp-harness tasks list` shows the graphs", quote.Short(ref), r.Where())
	}
	return tasks.Snapshot{}, err
}

// findTask returns the task of snap that ref names (its id or a unique prefix), or an
// error that says how to see the graph's tasks.
func findTask(snap tasks.Snapshot, ref string) (tasks.Task, error) {
	id, err := tasks.ResolveTask(snap, ref)
	if errors.Is(err, tasks.ErrNotFound) {
		return tasks.Task{}, fmt.Errorf("graph %s has no task %s: `mcp-harness tasks status %s` lists its tasks", snap.Graph.ID, quote.Short(ref), snap.Graph.ID)
	}
	if err != nil {
		return tasks.Task{}, err
	}
	t, _ := snap.Task(id)
	return t, nil
}

// nArgs accepts between min and max arguments (max < 0: no upper bound); anything else
// is a usage error that says what the command takes.
func nArgs(min, max int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= min && (max < 0 || len(args) <= max) {
			return nil
		}
		return usageError{fmt.Errorf("%s takes %s, got %d argument(s) (see %s --help)", cmd.CommandPath(), what, len(args), cmd.CommandPath())}
	}
}

// graphStateNames are the graph states --status takes.
func graphStateNames() []string {
	names := make([]string, len(tasks.GraphStates()))
	for i, s := range tasks.GraphStates() {
		names[i] = string(s)
	}
	return names
}

func newListCmd(o *workspaceFlags) *cobra.Command {
	var (
		statuses []string
		limit    int
		asJSON   bool
	)
	names := graphStateNames()
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the task graphs, newest first",
		Long: "List the task graphs of the workspace, newest first, with their state, progress\n" +
			"(finished/total tasks), age, duration, and the server process that runs them (live or gone).",
		Example: "  mcp-harness tasks list\n  mcp-harness tasks list --status running,failed --limit 5\n  mcp-harness tasks list --json",
		Args:    nArgs(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := tasks.GraphQuery{Limit: limit}
			for _, s := range statuses {
				if !slices.Contains(names, s) {
					return usagef("--status %q: want one of %s", s, strings.Join(names, ", "))
				}
				q.States = append(q.States, tasks.GraphState(s))
			}
			if limit < 1 {
				return usagef("--limit %d: want 1 or more", limit)
			}
			ctx := cmd.Context()
			r, err := o.open(ctx)
			if err != nil {
				return err
			}
			defer r.Close()
			graphs, more, err := r.Graphs(ctx, q)
			if err != nil {
				return err
			}
			out := GraphList{Graphs: graphs, More: more}
			if out.Graphs == nil {
				out.Graphs = []tasks.Overview{}
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(w, out)
			}
			return renderList(w, newPalette(w), out, statuses, limit, time.Now())
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&statuses, "status", nil, "only graphs in these states: "+strings.Join(names, ", ")+" (comma-separated or repeated)")
	f.IntVarP(&limit, "limit", "n", 20, "the most graphs to show")
	f.BoolVar(&asJSON, "json", false, "print JSON: {graphs: [...], more}")
	cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(names, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func newStatusCmd(o *workspaceFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status GRAPH",
		Short: "Show a graph and its tasks",
		Long: "Show a graph and a table of its tasks: state, exit code or error code, attempt and\n" +
			"duration. The summary line counts failures first and names the tasks that failed.",
		Example:           "  mcp-harness tasks status g-01M8P0M0F0M8T333\n  mcp-harness tasks status g-01M8P0M0F0M8T333 --json",
		Args:              nArgs(1, 1, "one argument, GRAPH"),
		ValidArgsFunction: o.complete(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			r, snap, err := o.openGraph(ctx, args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			d, err := r.Detail(ctx, snap)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return writeDetail(w, d) // a task at a time: see writeJSONStream
			}
			v := tasks.AnalyzeGraph(snap) // why each pending task has not started
			slots, err := r.SlotWait(ctx, snap)
			if err != nil {
				return err
			}
			return renderStatus(w, newPalette(w), d, v.Nodes, slots, time.Now())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: the graph as in list, with its tasks")
	return cmd
}

func newLogsCmd(o *workspaceFlags) *cobra.Command {
	var (
		follow, asJSON, exitStatus bool
		tail                       int
	)
	cmd := &cobra.Command{
		Use:   "logs GRAPH [TASK]",
		Short: "Print a task's log, or every task's; -f follows them until they end",
		Long: "Print a task's log (its stdout and stderr, interleaved as written) or, without TASK, the\n" +
			"logs of every task of the graph, each line after its task's name (as docker compose logs\n" +
			"does). With -f it goes on printing what the tasks write until they have all ended, then\n" +
			"stops by itself; while a task has not started it says why on stderr (the dependencies\n" +
			"it waits on, or the running tasks that hold the slot it needs; following a graph of\n" +
			"more than 50 tasks, only the waits for a slot), and when one ends, how.\n\n" +
			"--json prints NDJSON, one record a line: {type, graphId, taskId, text, wait, task} with\n" +
			"type log (text: one line, without its newline), waiting (wait: why), started or ended\n" +
			"(task: its state).\n\n" +
			"--exit-status exits with the outcome rather than 0: for a task, 0 if it succeeded, its\n" +
			"exit status if it exited non-zero, 1 if it failed otherwise, was cancelled or skipped;\n" +
			"for a graph, 0 if every task succeeded, else 1. A task or graph that has not finished\n" +
			"has no outcome yet: without -f that exits 1.",
		Example: "  mcp-harness tasks logs g-01M8P0M0F0M8T333 build\n" +
			"  mcp-harness tasks logs -f --tail 20 @latest test\n" +
			"  mcp-harness tasks logs -f --exit-status g-01M8P0M0\n" +
			"  mcp-harness tasks logs -f --json @latest | jq -r 'select(.type==\"log\") | .text'",
		Args:              nArgs(1, 2, "GRAPH and optionally TASK"),
		ValidArgsFunction: o.complete(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("tail") && tail < 0 {
				return usagef("--tail %d: want 0 or more lines", tail)
			}
			ctx := cmd.Context()
			r, snap, err := o.openGraph(ctx, args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			var ids []string // every task when empty
			if len(args) == 2 {
				t, err := findTask(snap, args[1])
				if err != nil {
					return err
				}
				ids = []string{t.ID}
			}
			w, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			p := newLogPrinter(w, stderr, newPalette(w), snap, ids, asJSON)
			var ended []tasks.Task
			if follow {
				ended, err = r.Follow(ctx, snap, tasks.FollowQuery{TaskIDs: ids, Tail: tail, Poll: followPoll}, p.event)
				if errors.Is(err, tasks.ErrOwnerGone) {
					p.flush()
					return fmt.Errorf("stopped following: %w", err)
				}
				if err != nil {
					return err
				}
				p.done(ended)
			} else {
				for _, t := range snap.Tasks {
					if len(ids) > 0 && t.ID != ids[0] {
						continue
					}
					if err := r.CopyLog(ctx, snap, t.ID, tail, p.logWriter(t.ID)); err != nil {
						return err
					}
					p.flush()
					ended = append(ended, t)
				}
				if len(ids) == 1 && ended[0].Status.Terminal() && ended[0].StartedAt == nil && !asJSON {
					fmt.Fprintf(stderr, "mcp-harness: task %s never started (%s), so it has no log\n", ended[0].ID, ended[0].Status)
				}
			}
			if !exitStatus {
				return nil
			}
			return outcome(snap.Graph.ID, ended, len(ids) == 1)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&follow, "follow", "f", false, "go on printing the logs as the tasks write them, until they end")
	f.IntVar(&tail, "tail", -1, "start with the last N lines of each log only (default: the whole log)")
	f.BoolVar(&asJSON, "json", false, "print NDJSON records (see above)")
	f.BoolVar(&exitStatus, "exit-status", false, "exit with the task's (or graph's) outcome: see above")
	return cmd
}

func newRunCmd(o *workspaceFlags, version string) *cobra.Command {
	var (
		file         string
		asJSON, wait bool
	)
	cmd := &cobra.Command{
		Use:   "run -f GRAPH.json",
		Short: "Submit a graph from a terminal; it runs detached",
		Long: "Submit a graph of tasks from a terminal. The file holds one JSON object with the same\n" +
			"fields as the tasks_run tool's arguments (\"-\" reads stdin). The graph runs in a runner\n" +
			"process of its own that outlives this command; it prints the graph's id (--json: the\n" +
			"tasks_run result). --wait then follows the tasks' logs on stderr until the graph ends\n" +
			"and exits with its outcome: 0 if every task succeeded, else 1.",
		Example: "  mcp-harness tasks run -f ci.json\n  mcp-harness tasks run -f ci.json --wait",
		Args:    nArgs(0, 0, "no arguments (the graph is given with -f)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usagef("-f is required: the graph file (JSON, as tasks_run's arguments)")
			}
			var data []byte
			var err error
			if file == "-" {
				data, err = io.ReadAll(cmd.InOrStdin())
			} else {
				data, err = os.ReadFile(file)
			}
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			runner, err := runnerCommand(cmd.Flags())
			if err != nil {
				return err
			}
			logger, closeLog, err := newLogger(workspace.Config{Dir: o.workspace, StateDir: o.stateDir}, defaultLogLevel, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer closeLog()
			res, err := server.SubmitDetached(ctx, server.Config{Workspace: o.workspace, StateDir: o.stateDir,
				Version: version, Logger: logger, RunnerCommand: runner}, data)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				err = writeJSON(w, res)
			} else {
				_, err = fmt.Fprintln(w, res.GraphID)
			}
			if err != nil || !wait {
				return err
			}
			r, snap, err := o.openGraph(ctx, res.GraphID)
			if err != nil {
				return err
			}
			defer r.Close()
			stderr := cmd.ErrOrStderr()
			p := newLogPrinter(stderr, stderr, newPalette(stderr), snap, nil, false)
			ended, err := r.Follow(ctx, snap, tasks.FollowQuery{Tail: -1, Poll: followPoll}, p.event)
			if err != nil {
				p.flush()
				return fmt.Errorf("stopped following: %w", err)
			}
			p.done(ended)
			return outcome(snap.Graph.ID, ended, false)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "the graph: a JSON file with tasks_run's arguments, - for stdin")
	f.BoolVar(&asJSON, "json", false, "print the tasks_run result as JSON instead of the graph id")
	f.BoolVar(&wait, "wait", false, "follow the graph to its end and exit with its outcome (0 succeeded, 1 otherwise)")
	return cmd
}

// outcome is the exit status --exit-status asks for: 0 when every task in ts succeeded;
// for one task (single) that exited non-zero its exit status; 1 for any other failure, and
// when a task has not finished (there is no outcome yet).
func outcome(graphID string, ts []tasks.Task, single bool) error {
	if p := tasks.ProgressOf(ts); p.Pending+p.Running > 0 {
		if single {
			return fmt.Errorf("task %s has not finished (%s): there is no outcome yet (-f waits for it)", ts[0].ID, ts[0].Status)
		}
		return fmt.Errorf("graph %s has not finished (%d of %d tasks done): there is no outcome yet (-f waits for it)", graphID, p.Done(), p.Total)
	}
	for _, t := range ts {
		if t.Status == tasks.Succeeded {
			continue
		}
		if single && t.ExitCode != nil && *t.ExitCode > 0 && *t.ExitCode < 256 {
			return exitStatus(*t.ExitCode)
		}
		return exitStatus(1)
	}
	return nil
}

func newGraphCmd(o *workspaceFlags) *cobra.Command {
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
		Args:              nArgs(1, 1, "one argument, GRAPH"),
		ValidArgsFunction: o.complete(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			n := 0
			for _, b := range []bool{mermaid, dot, asJSON} {
				if b {
					n++
				}
			}
			if n > 1 {
				return usagef("--mermaid, --dot and --json are alternatives: give one")
			}
			ctx := cmd.Context()
			r, snap, err := o.openGraph(ctx, args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			v := tasks.AnalyzeGraph(snap)
			w := cmd.OutOrStdout()
			switch {
			case asJSON:
				return writeReport(w, snap, v) // a node at a time: see writeJSONStream
			case mermaid:
				_, err := io.WriteString(w, v.Mermaid)
				return err
			case dot:
				_, err := io.WriteString(w, renderDot(snap.Graph, v))
				return err
			}
			slots, err := r.SlotWait(ctx, snap)
			if err != nil {
				return err
			}
			return renderTree(w, newPalette(w), snap, v, slots)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&mermaid, "mermaid", false, "print a Mermaid flowchart")
	f.BoolVar(&dot, "dot", false, "print a Graphviz dot digraph")
	f.BoolVar(&asJSON, "json", false, "print JSON: nodes, edges, order and the Mermaid text")
	return cmd
}

func newCancelCmd(o *workspaceFlags) *cobra.Command {
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
		Args:              nArgs(1, -1, "GRAPH and optionally TASK ids"),
		ValidArgsFunction: o.complete(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			if grace < 0 || grace > maxGrace {
				return usagef("--grace %v: want 0 to %v", grace, maxGrace)
			}
			ctx := cmd.Context()
			r, snap, err := o.openGraph(ctx, args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			var ids []string
			for _, ref := range args[1:] {
				t, err := findTask(snap, ref)
				if err != nil {
					return err
				}
				ids = append(ids, t.ID)
			}
			var settle time.Duration // --no-wait: report as soon as the owner has taken the request
			if !noWait {
				settle = grace + cancelSettle
			}
			out, stopping, err := r.CancelAndWait(ctx, snap.Graph.ID, ids, grace, settle)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(w, out)
			}
			return renderCancel(w, newPalette(w), out, stopping, grace)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&grace, "grace", 5*time.Second, "time between SIGTERM and SIGKILL for running tasks")
	f.BoolVar(&noWait, "no-wait", false, "return once the server has taken the request, without waiting for running tasks to stop")
	f.BoolVar(&asJSON, "json", false, "print JSON: {graphId, tasks: [{id, previousStatus, status, outcome}]}")
	return cmd
}

// complete completes GRAPH from the store, newest graphs first, and with withTasks the
// TASK arguments after it from that graph. It never fails loudly: a shell completion that
// finds no workspace offers nothing.
func (o *workspaceFlags) complete(withTasks bool) cobra.CompletionFunc {
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
		r, err := o.open(ctx)
		if err != nil {
			cobra.CompDebugln(err.Error(), true)
			return nil, none
		}
		defer r.Close()
		var out []cobra.Completion
		if len(args) == 0 {
			graphs, _, err := r.Graphs(ctx, tasks.GraphQuery{Limit: completionGraphs})
			if err != nil {
				return nil, none
			}
			if len(graphs) > 0 && strings.HasPrefix(tasks.Latest, toComplete) {
				out = append(out, cobra.CompletionWithDesc(tasks.Latest, "the newest graph: "+graphs[0].GraphID))
			}
			for _, g := range graphs {
				if strings.HasPrefix(g.GraphID, toComplete) {
					desc := string(g.Status)
					if g.Name != "" {
						desc = g.Name + " · " + desc
					}
					out = append(out, cobra.CompletionWithDesc(g.GraphID, desc))
				}
			}
			return out, none | cobra.ShellCompDirectiveKeepOrder
		}
		snap, err := snapshot(ctx, r, args[0])
		if err != nil {
			return nil, none
		}
		for _, t := range snap.Tasks {
			if strings.HasPrefix(t.ID, toComplete) && !slices.Contains(args[1:], t.ID) {
				out = append(out, cobra.CompletionWithDesc(t.ID, string(t.Status)))
			}
		}
		return out, none | cobra.ShellCompDirectiveKeepOrder
	}
}
