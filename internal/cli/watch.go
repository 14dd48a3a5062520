package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/spf13/cobra"

	"github.com/mcp-harness/mcp-harness/pty"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// `mcp-harness tasks watch [GRAPH]`: a live, full-screen view of a graph for a person at a
// terminal, drawn with Bubble Tea and Lip Gloss (charm.land/bubbletea/v2 and lipgloss/v2,
// the versions that share the charmbracelet/ultraviolet and x/ansi the pty package's
// emulator uses). Like the other tasks commands it reads the workspace store, so it shows
// the graphs of any server on the workspace and detached ones alike, and it cancels
// through the store as `tasks cancel` does (tasks.Reader.CancelAndWait, the same call).
// This file is the command, what it reads (watchFeed) and the line output; watchmodel.go
// is the screen's state and keys, watchview.go its drawing.
//
// Which graph: GRAPH when given (an id, a unique prefix, @latest); else the newest
// running graph, else the newest; with no graph on the workspace yet, it waits for the
// first. `[` and `]` move to the newer and the older graph of the newest watchGraphs.
//
// How it refreshes: it polls the store every watchPoll (watchIdlePoll once the graph has
// ended), one read at a time: a poll that falls due while one runs is skipped, and a key
// that needs a read (a new selection, another graph) reads at once or right after the
// read under way. A poll reads the graph's change counter (tasks.Reader.Version, one
// indexed row) and reads and analyses the whole graph only when that moved; it reads the
// graph's runner (one row), what a ready task waits for when one is ready, and the tail
// of the selected task's log unless it has already read the whole of it (a bounded read
// from the end). The list of graphs is read every watchListEvery. So a graph where
// nothing happens costs two single-row queries a poll, whatever its size; Bubble Tea
// draws at most watchFPS frames a second. The servers' in-process notifier
// (tasks/notify.go) does not reach another process: polling the store is how a reader
// outside the server sees a graph move, as `logs -f` does.
//
// The screen: a header with the graph, its state, a progress bar and the counts; the
// tasks as a tree by dependency depth (each task once, under its dependency on its
// longest path, as `tasks graph` draws it in full), each with a state symbol and colour,
// its duration, and for a pending task why it waits (ready, waiting on..., blocked
// by...), for an ended one how it ended; a pane with the selected task's log tail,
// following it live; a status line; a footer with the keys. Only the rows on screen are
// drawn, and Bubble Tea writes only the cells that changed, so a graph of a thousand
// tasks scrolls as a small one does. enter shows the selected log full-screen (scroll
// back with the arrows; end follows again), c cancels the selected task and C the whole
// graph, each after a y/n question, q quits.
//
// The person's terminal is given back as it was on every way out (q, ctrl+c, SIGINT,
// SIGTERM, an error): Bubble Tea leaves the alternate screen, shows the cursor and puts
// the terminal out of raw mode before Run returns, and it turns SIGTERM and SIGINT into a
// quit rather than let them kill the process. When stdout is not a terminal, TERM is
// dumb, or with --no-tui, watch prints what `tasks logs -f GRAPH` prints instead.

// Timings and bounds of watch.
const (
	// watchPoll is how often watch reads the store: a fifth to a quarter of a second is
	// what a person perceives as live, the pace of `logs -f` and of the servers' cancel
	// poll.
	watchPoll = 250 * time.Millisecond
	// watchIdlePoll is how often watch reads the store once the graph it shows has ended:
	// only the list of graphs and the runner may change.
	watchIdlePoll = time.Second
	// watchFPS is the most frames a second Bubble Tea draws: its default, 60, wakes the
	// process 60 times a second to find nothing new, and a person reading a list of tasks
	// sees no difference at 20 (keys answer within 50 ms).
	watchFPS = 20
	// watchListEvery is how often the list of graphs (for `[` and `]`) is read again.
	watchListEvery = 2 * time.Second
	// watchGraphs is how many of the newest graphs `[` and `]` move through.
	watchGraphs = 50
	// watchLogBytes bounds a log tail read for the screen, however long its lines.
	watchLogBytes = 256 << 10
	// watchLogLines is how many lines of a log the full-screen view holds to scroll back.
	watchLogLines = 2000
)

func newWatchCmd(o *workspaceFlags) *cobra.Command {
	var (
		noTUI bool
		grace time.Duration
	)
	cmd := &cobra.Command{
		Use:   "watch [GRAPH]",
		Short: "Watch a graph live, full-screen: its tasks, progress and logs; cancel from there",
		Long: "Show a graph live on the whole terminal: its tasks as a tree by dependency depth with\n" +
			"their state, duration and why a pending one waits, the graph's progress, and the\n" +
			"selected task's log following live. Without GRAPH: the newest running graph, else\n" +
			"the newest. It reads the workspace store every quarter second, so it shows the\n" +
			"graphs of any server on the workspace, detached ones too.\n\n" +
			"Keys: up/down (j/k) select a task, pgup/pgdn/home/end move further; enter shows its\n" +
			"log full-screen (esc goes back); c cancels the selected task, C the whole graph,\n" +
			"each after a y/n question (as `tasks cancel` does: SIGTERM, SIGKILL after --grace);\n" +
			"[ and ] move to the newer or older graph; q quits.\n\n" +
			"When stdout is not a terminal, or with --no-tui, it prints what\n" +
			"`tasks logs -f GRAPH` prints instead: every task's log, each line after its task's\n" +
			"name, until the graph has ended.",
		Example:           "  mcp-harness tasks watch\n  mcp-harness tasks watch g-01M8P0M0\n  mcp-harness tasks watch @latest --no-tui",
		Args:              nArgs(0, 1, "at most one argument, GRAPH"),
		ValidArgsFunction: o.complete(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			if grace < 0 || grace > maxGrace {
				return usagef("--grace %v: want 0 to %v", grace, maxGrace)
			}
			ctx := cmd.Context()
			r, err := o.open(ctx)
			if err != nil {
				return err
			}
			defer r.Close()
			graphID, err := pickGraph(ctx, r, args)
			if err != nil {
				return err
			}
			if noTUI || !onTerminal(cmd) {
				if graphID == "" {
					return fmt.Errorf("no graphs in %s yet", r.Where())
				}
				snap, err := snapshot(ctx, r, graphID)
				if err != nil {
					return err
				}
				return followGraph(ctx, cmd, r, snap)
			}
			return runWatch(ctx, r, graphID, grace)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&noTUI, "no-tui", false, "print the logs as `tasks logs -f GRAPH` does instead of the full-screen view")
	f.DurationVar(&grace, "grace", 5*time.Second, "when cancelling: time between SIGTERM and SIGKILL for running tasks")
	return cmd
}

// pickGraph is the graph watch starts on: the one args names, else the newest running
// graph, else the newest; "" when the workspace has no graph yet.
func pickGraph(ctx context.Context, r *tasks.Reader, args []string) (string, error) {
	if len(args) == 1 {
		s, err := snapshot(ctx, r, args[0])
		return s.Graph.ID, err
	}
	for _, q := range []tasks.GraphQuery{{States: []tasks.GraphState{tasks.GraphRunning}, Limit: 1}, {Limit: 1}} {
		gs, _, err := r.Graphs(ctx, q)
		if err != nil {
			return "", err
		}
		if len(gs) > 0 {
			return gs[0].GraphID, nil
		}
	}
	return "", nil
}

// onTerminal reports whether watch can draw full-screen: its output is the process's
// stdout, a terminal, and TERM does not say the terminal is dumb.
func onTerminal(cmd *cobra.Command) bool {
	f, ok := cmd.OutOrStdout().(*os.File)
	return ok && f == os.Stdout && pty.IsTerminal(f.Fd()) && os.Getenv("TERM") != "dumb"
}

// followGraph is the line output: `tasks logs -f GRAPH`, every task followed until the
// graph has ended.
func followGraph(ctx context.Context, cmd *cobra.Command, r *tasks.Reader, snap tasks.Snapshot) error {
	w, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	p := newLogPrinter(w, stderr, newPalette(w), snap, nil, false)
	ended, err := r.Follow(ctx, snap, tasks.FollowQuery{Tail: -1, Poll: followPoll}, p.event)
	if err != nil {
		p.flush()
		return fmt.Errorf("stopped following: %w", err)
	}
	p.done(ended)
	return nil
}

// runWatch runs the full-screen view on the process's terminal until the person quits.
func runWatch(ctx context.Context, r *tasks.Reader, graphID string, grace time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a read or a cancel still running when the person quits stops here
	feed := &watchFeed{ctx: ctx, r: r, grace: grace}
	opts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithFPS(watchFPS)}
	if os.Getenv("NO_COLOR") != "" {
		// colorprofile honours NO_COLOR=1/true only; https://no-color.org says any value.
		opts = append(opts, tea.WithColorProfile(colorprofile.Ascii))
	}
	_, err := tea.NewProgram(newWatchModel(feed, r.Where(), graphID), opts...).Run()
	if errors.Is(err, tea.ErrInterrupted) {
		return nil // ctrl+c outside raw mode, or SIGINT: the person asked to stop
	}
	return err
}

// watchSource is what the screen reads and does: a watchFeed on the store, or a fake in
// the tests of the model.
type watchSource interface {
	// load reads what q asks for; errors come back in the board.
	load(q watchReq) boardMsg
	// cancel cancels tasks of a graph (every unfinished one when ids is empty), as
	// `tasks cancel` does, and waits for it to play out.
	cancel(graphID string, ids []string) cancelDoneMsg
}

// watchReq is what one poll reads.
type watchReq struct {
	graphID  string // "" before a graph is chosen: the newest running, else the newest
	version  int64  // the graph's version the screen shows; -1 for none
	list     bool   // read the list of graphs too
	logTask  string // whose log tail to read; "" for none
	logLines int
}

// boardMsg is what a poll read, at at.
type boardMsg struct {
	at      time.Time
	listed  bool             // graphs was read
	graphs  []tasks.Overview // newest first
	graphID string           // the graph read; "" when there is none yet
	changed bool             // snap and view are of a version the screen does not show
	version int64            // of snap
	snap    tasks.Snapshot
	view    tasks.View
	slots   *tasks.SlotWait
	runner  tasks.RunnerInfo
	log     *logTail // when a log was read
	err     error
}

// logTail is the end of a task's log, as read at one poll.
type logTail struct {
	taskID  string
	attempt int
	final   bool // the task had ended before it was read: the log is whole
	lines   int  // how many lines were asked for
	text    string
}

// cancelDoneMsg says how a cancel asked for on the screen played out.
type cancelDoneMsg struct {
	graphID  string
	ids      []string // empty: the whole graph
	report   tasks.CancelReport
	stopping []string
	err      error
}

// watchFeed reads the store for the screen. One load runs at a time (the model sees to
// it); a cancel may run beside it, and shares nothing with it but the Reader.
type watchFeed struct {
	ctx   context.Context
	r     *tasks.Reader
	grace time.Duration

	mu      sync.Mutex
	graphID string // the graph of snap
	version int64  // its version when snap was read
	snap    tasks.Snapshot
	view    tasks.View // snap analysed
	ready   bool       // some task of snap is ready: it waits for a slot
}

func (f *watchFeed) load(q watchReq) boardMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx := f.ctx
	out := boardMsg{at: time.Now(), graphID: q.graphID}
	if q.list || q.graphID == "" {
		gs, _, err := f.r.Graphs(ctx, tasks.GraphQuery{Limit: watchGraphs})
		if err != nil {
			out.err = err
			return out
		}
		out.graphs, out.listed = gs, true
		if out.graphID == "" {
			out.graphID = newestRunning(gs)
		}
	}
	if out.graphID == "" {
		return out // no graph yet
	}
	v, err := f.r.Version(ctx, out.graphID)
	if err != nil {
		out.err = err
		return out
	}
	if out.graphID != f.graphID || v != f.version {
		snap, err := f.r.Snapshot(ctx, out.graphID)
		if err != nil {
			out.err = err
			return out
		}
		f.graphID, f.version, f.snap, f.view = out.graphID, v, snap, tasks.AnalyzeGraph(snap)
		f.ready = slices.ContainsFunc(f.view.Nodes, func(n tasks.NodeView) bool { return n.Reason == tasks.ReasonReady })
	}
	if out.graphID != q.graphID || v != q.version {
		out.changed, out.version, out.snap, out.view = true, v, f.snap, f.view
	}
	// Each poll, not only when the graph moved: another graph may free a slot, and a
	// runner's lease runs out without a write.
	if f.ready {
		if out.slots, err = f.r.SlotWait(ctx, f.snap); err != nil {
			out.err = err
			return out
		}
	}
	if out.runner, err = f.r.Runner(ctx, f.snap.Graph.RunnerID, out.at); err != nil {
		out.err = err
		return out
	}
	if t, ok := f.snap.Task(q.logTask); ok && (t.Status != tasks.Pending || t.Attempt > 0) {
		// The state was read before the log: a task read ended has written all of it.
		text, err := f.r.LogTail(ctx, out.graphID, t.ID, q.logLines, watchLogBytes)
		if err != nil {
			out.err = err
			return out
		}
		out.log = &logTail{taskID: t.ID, attempt: t.Attempt, final: t.Status.Terminal(), lines: q.logLines, text: text}
	}
	return out
}

// newestRunning is the id of the newest running graph of gs (newest first), else of the
// newest; "" when gs is empty.
func newestRunning(gs []tasks.Overview) string {
	if i := slices.IndexFunc(gs, func(g tasks.Overview) bool { return g.Status == tasks.GraphRunning }); i >= 0 {
		return gs[i].GraphID
	}
	if len(gs) > 0 {
		return gs[0].GraphID
	}
	return ""
}

func (f *watchFeed) cancel(graphID string, ids []string) cancelDoneMsg {
	rep, stopping, err := f.r.CancelAndWait(f.ctx, graphID, ids, f.grace, f.grace+cancelSettle)
	return cancelDoneMsg{graphID: graphID, ids: ids, report: rep, stopping: stopping, err: err}
}
