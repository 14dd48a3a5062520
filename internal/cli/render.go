package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcp-harness/mcp-harness/pty"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// Human rendering for the operator CLI: tables, colours, the dependency tree and the
// Graphviz text. Everything here formats values the tasks package computed; nothing reads
// the store. The --json output is the tasks types themselves, written by writeJSON.

// writeJSON writes v as indented JSON and a newline, one field a line.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // a terminal, not a web page: keep <br/> and && as they are
	return enc.Encode(v)
}

// palette paints text with ANSI colours, or leaves it alone when off.
type palette struct{ on bool }

// newPalette colours output written to w only when w is the process's stdout, stdout is a
// terminal, NO_COLOR is unset or empty (https://no-color.org) and TERM is not "dumb".
func newPalette(w io.Writer) palette {
	f, ok := w.(*os.File)
	if !ok || f != os.Stdout || !pty.IsTerminal(f.Fd()) || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return palette{}
	}
	return palette{on: true}
}

// SGR codes.
const (
	sgrBold   = "1"
	sgrDim    = "2"
	sgrRed    = "31"
	sgrGreen  = "32"
	sgrYellow = "33"
	sgrCyan   = "36"
)

func (p palette) paint(code, s string) string {
	if !p.on || code == "" || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// status is a task's or a graph's state: a graph's states are named as its tasks' are.
type status interface{ tasks.State | tasks.GraphState }

// stateColor is the colour of a task or graph state.
func stateColor[S status](s S) string {
	switch tasks.State(s) {
	case tasks.Succeeded:
		return sgrGreen
	case tasks.Failed:
		return sgrRed
	case tasks.Running:
		return sgrCyan
	case tasks.Cancelled:
		return sgrYellow
	case tasks.Skipped:
		return sgrDim
	}
	return ""
}

// paintState paints a state in its colour.
func paintState[S status](p palette, s S) string { return p.paint(stateColor(s), string(s)) }

// stateCell is a table cell showing a state in its colour.
func stateCell[S status](s S) cell { return cell{string(s), stateColor(s)} }

// cell is a table cell and its colour.
type cell struct {
	text  string
	color string
}

// writeTable writes rows under a header in columns two spaces apart, padding by the plain
// text so colours do not upset the alignment. The last column is not padded.
func writeTable(w io.Writer, p palette, header []string, rows [][]cell) error {
	width := make([]int, len(header))
	for i, h := range header {
		width[i] = utf8.RuneCountInString(h)
	}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c.text))
		}
	}
	var b strings.Builder
	line := func(cells []cell) error {
		b.Reset()
		for i, c := range cells {
			b.WriteString(p.paint(c.color, c.text))
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", width[i]-utf8.RuneCountInString(c.text)+2))
			}
		}
		// An empty last column leaves the padding before it: trim it.
		_, err := fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		return err
	}
	hs := make([]cell, len(header))
	for i, h := range header {
		hs[i] = cell{h, sgrBold}
	}
	if err := line(hs); err != nil {
		return err
	}
	for _, r := range rows {
		if err := line(r); err != nil {
			return err
		}
	}
	return nil
}

// shortDuration is a short, rounded duration: 850ms, 4.2s, 3m07s, 2h05m, 3d04h.
func shortDuration(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
		fallthrough
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// shortMillis is shortDuration of a durationMs field.
func shortMillis(ms int64) string { return shortDuration(time.Duration(ms) * time.Millisecond) }

// titled is a graph's id followed by its quoted name, if it has one: `g-01… "ci"`.
func titled(id, name string) string {
	if name != "" {
		id += fmt.Sprintf(" %q", name)
	}
	return id
}

// shorten cuts s to n characters with an ellipsis.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func runnerText(r tasks.RunnerInfo) string {
	if r.Live {
		return fmt.Sprintf("live (pid %d)", r.Pid)
	}
	return fmt.Sprintf("gone (pid %d)", r.Pid)
}

// renderList is `tasks list`: a table of graphs, newest first. statuses and limit are the
// flags, for the lines that say why the table is empty or short.
func renderList(w io.Writer, p palette, out GraphList, statuses []string, limit int, now time.Time) error {
	if len(out.Graphs) == 0 {
		if len(statuses) > 0 {
			_, err := fmt.Fprintf(w, "no graphs are %s\n", strings.Join(statuses, " or "))
			return err
		}
		_, err := fmt.Fprintln(w, "no task graphs yet")
		return err
	}
	var rows [][]cell
	for _, g := range out.Graphs {
		name := g.Name
		if name == "" {
			name = "-"
		}
		server := cell{runnerText(g.Runner), ""}
		if !g.Runner.Live && g.Status == tasks.GraphRunning {
			server.color = sgrRed // nothing will move this graph on until a server starts
		}
		rows = append(rows, []cell{
			{g.GraphID, ""}, {shorten(name, 30), ""}, stateCell(g.Status),
			{fmt.Sprintf("%d/%d", g.Progress.Done(), g.Progress.Total), ""},
			{shortDuration(now.Sub(g.CreatedAt.Time)), ""}, {shortMillis(g.DurationMs), ""}, server,
		})
	}
	if err := writeTable(w, p, []string{"GRAPH", "NAME", "STATUS", "DONE", "AGE", "DURATION", "SERVER"}, rows); err != nil {
		return err
	}
	if out.More {
		_, err := fmt.Fprintf(w, "(the newest %d; --limit shows more)\n", limit)
		return err
	}
	return nil
}

// taskResult is a task's exit code or error code, in a few characters.
func taskResult(t tasks.TaskHead) string {
	code := ""
	if t.ErrorCode != nil {
		code = *t.ErrorCode
	}
	switch {
	case t.ExitCode != nil && (code == "" || code == tasks.CodeExitNonzero):
		return fmt.Sprintf("exit %d", *t.ExitCode)
	case code == tasks.CodeSignaled && t.Signal != nil:
		return *t.Signal
	case code != "":
		return code
	}
	return "-"
}

// taskNote is what a task's message adds to its result, if anything.
func taskNote(t tasks.TaskHead) string {
	if t.Message == nil || t.Status == tasks.Succeeded {
		return ""
	}
	if t.ErrorCode != nil && (*t.ErrorCode == tasks.CodeExitNonzero || *t.ErrorCode == tasks.CodeSignaled) && t.Status == tasks.Failed {
		return "" // the result column says it all
	}
	return *t.Message
}

// pendingReason says why a pending task has not started, or "" for any other task.
func pendingReason(n tasks.NodeView) string {
	switch n.Reason {
	case tasks.ReasonReady:
		return "ready: waiting for a free slot"
	case tasks.ReasonWaiting:
		return "waiting on " + depStates(n.WaitingOn)
	case tasks.ReasonBlocked:
		return "blocked by " + depStates(n.BlockedBy) + ": it will be skipped"
	}
	return ""
}

// depStates lists dependencies with their states: "db (running), lint (failed)".
func depStates(ds []tasks.DepState) string {
	var b strings.Builder
	for i, d := range ds {
		if i > 0 {
			b.WriteString(", ")
		}
		st := string(d.Status)
		if d.Status == "" {
			st = "not in the graph"
		}
		b.WriteString(d.ID + " (" + st + ")")
	}
	return b.String()
}

// summaryLine counts a graph's tasks, failures first, naming the failed tasks.
func summaryLine(p palette, d tasks.Detail) string {
	pr := d.Progress
	var parts []string
	if pr.Failed > 0 {
		var names []string
		for _, t := range d.Tasks {
			if t.Status != tasks.Failed {
				continue
			}
			if len(names) == 5 {
				names = append(names, fmt.Sprintf("%d more", pr.Failed-5))
				break
			}
			names = append(names, t.ID+": "+taskResult(t.TaskHead))
		}
		parts = append(parts, p.paint(sgrRed, fmt.Sprintf("%d failed", pr.Failed))+" ("+strings.Join(names, ", ")+")")
	}
	for _, st := range []tasks.State{tasks.Cancelled, tasks.Skipped, tasks.Running, tasks.Pending, tasks.Succeeded} {
		if n := pr.Count(st); n > 0 {
			parts = append(parts, p.paint(stateColor(st), fmt.Sprintf("%d %s", n, st)))
		}
	}
	return fmt.Sprintf("%d/%d done: %s", pr.Done(), pr.Total, strings.Join(parts, ", "))
}

// renderStatus is `tasks status`: the graph, a summary and a table of its tasks. nodes are
// the graph's analysis (tasks.AnalyzeGraph), in the order of d.Tasks, for why pending tasks wait;
// slots says what its ready tasks wait for (nil when none does).
func renderStatus(w io.Writer, p palette, d tasks.Detail, nodes []tasks.NodeView, slots *tasks.SlotWait, now time.Time) error {
	fmt.Fprintf(w, "graph %s: %s\n", titled(p.paint(sgrBold, d.GraphID), d.Name), paintState(p, d.Status))
	fmt.Fprintln(w, summaryLine(p, d))
	ran := "running for " + shortMillis(d.DurationMs)
	if d.FinishedAt != nil {
		ran = "took " + shortMillis(d.DurationMs)
	}
	server := runnerText(d.Runner)
	if !d.Runner.Live && d.Status == tasks.GraphRunning {
		server = p.paint(sgrRed, server+": a server live on this workspace (or the next to start) takes its tasks over")
	}
	created := d.CreatedAt.Time
	fmt.Fprintf(w, "created %s (%s ago) · %s · server %s\n\n",
		created.Local().Format("2006-01-02 15:04:05"), shortDuration(now.Sub(created)), ran, server)
	var rows [][]cell
	for i, t := range d.Tasks {
		dur := "-"
		if t.DurationMs != nil {
			dur = shortMillis(*t.DurationMs)
		}
		note := taskNote(t.TaskHead)
		if i < len(nodes) {
			if why := pendingReason(nodes[i]); why != "" {
				note = strings.TrimSuffix(why+"; "+note, "; ")
			}
		}
		rows = append(rows, []cell{{t.ID, ""}, stateCell(t.Status), {taskResult(t.TaskHead), ""},
			{fmt.Sprint(t.Attempt), ""}, {dur, ""}, {note, ""}})
	}
	if err := writeTable(w, p, []string{"TASK", "STATUS", "RESULT", "ATTEMPT", "DURATION", "NOTE"}, rows); err != nil {
		return err
	}
	if slots != nil {
		fmt.Fprintf(w, "\nready tasks wait for a free slot: %s\n", slotText(slots, d.GraphID, now))
	}
	for _, t := range d.Tasks {
		if t.Status == tasks.Failed {
			_, err := fmt.Fprintf(w, "\nwhy %s failed: mcp-harness tasks logs %s %s\n", t.ID, d.GraphID, t.ID)
			return err
		}
	}
	return nil
}

// maxIndent bounds the indentation of the tree: a chain of ten thousand tasks must not
// print lines of forty thousand spaces. Deeper tasks say their depth instead.
const maxIndent = 24

// renderTree draws the graph as a tree: the tasks without dependencies at the left, each
// task under every task it depends on. A task is drawn in full once, under the first of
// its dependencies on its longest path from the left (where it sits in the run order);
// under its other dependencies it is only named, "(see above)" or "(see below)". So the
// output is as long as tasks plus dependencies, and every task is drawn as deep as it is.
// v is s analysed (tasks.AnalyzeGraph); slots says what its ready tasks wait for (nil: none).
func renderTree(w io.Writer, p palette, s tasks.Snapshot, v tasks.View, slots *tasks.SlotWait) error {
	// Written as it is drawn: a dense graph's tree runs to tens of megabytes (every task
	// under each of its dependencies), which a person may pipe to less or head.
	b := bufio.NewWriterSize(w, 64<<10)
	fmt.Fprintf(b, "graph %s: %s, %d task(s)\n", titled(p.paint(sgrBold, s.Graph.ID), s.Graph.Name), paintState(p, s.Progress().State()), len(v.Nodes))
	index := make(map[string]int, len(v.Nodes))
	for i, n := range v.Nodes {
		if _, dup := index[n.ID]; !dup {
			index[n.ID] = i
		}
	}
	// home[i] is the node task i is drawn in full under: its first dependency one level
	// up; -1 for a task without dependencies.
	home := make([]int, len(v.Nodes))
	for i, n := range v.Nodes {
		home[i] = -1
		for _, dep := range n.DependsOn {
			if d, ok := index[dep]; ok && v.Nodes[d].Depth == n.Depth-1 {
				home[i] = d
				break
			}
		}
	}
	seen := make([]bool, len(v.Nodes))
	label := func(n tasks.NodeView) string {
		l := n.ID + "  " + paintState(p, n.Status)
		t, _ := s.Task(n.ID)
		res := taskResult(t.Head())
		switch {
		case n.Reason != "":
			l += " " + p.paint(sgrDim, pendingReason(n))
		case (n.Status == tasks.Failed || n.Status == tasks.Cancelled) && res != "-":
			l += " (" + res + ")"
		case n.Status == tasks.Skipped && t.Message != nil:
			l += " " + p.paint(sgrDim, "("+*t.Message+")")
		}
		return l
	}
	// walk is iterative: a chain of ten thousand tasks is a legal graph.
	type frame struct {
		node   int
		parent int    // -1 at the left
		prefix string // drawn before this node's connector
		last   bool   // the last child of its parent
		level  int
	}
	var stack []frame
	push := func(parent int, prefix string, level int) {
		children := v.Nodes[parent].Dependents
		for i := len(children) - 1; i >= 0; i-- {
			if c, ok := index[children[i]]; ok {
				stack = append(stack, frame{c, parent, prefix, i == len(children)-1, level})
			}
		}
	}
	draw := func(root int) {
		stack = append(stack[:0], frame{node: root, parent: -1})
		for len(stack) > 0 {
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			n := v.Nodes[f.node]
			connector, childPrefix := "", f.prefix
			if f.level > 0 {
				connector = "├─ "
				if f.last {
					connector = "└─ "
				}
				if f.level <= maxIndent {
					if f.last {
						childPrefix += "   "
					} else {
						childPrefix += "│  "
					}
				}
			}
			b.WriteString(p.paint(sgrDim, f.prefix+connector))
			switch {
			case seen[f.node]:
				b.WriteString(n.ID + p.paint(sgrDim, " (see above)") + "\n")
				continue
			case f.parent >= 0 && home[f.node] >= 0 && home[f.node] != f.parent:
				b.WriteString(n.ID + p.paint(sgrDim, " (see below)") + "\n")
				continue
			}
			seen[f.node] = true
			b.WriteString(label(n))
			if f.level > maxIndent {
				fmt.Fprintf(b, " [depth %d]", n.Depth)
			}
			if _, err := b.WriteString("\n"); err != nil {
				return // the reader is gone; Flush reports it
			}
			push(f.node, childPrefix, f.level+1)
		}
	}
	for i, n := range v.Nodes {
		if n.Depth == 0 && !seen[i] {
			draw(i)
		}
	}
	for i := range v.Nodes { // what a cycle kept from having depth 0; Validate admits none
		if !seen[i] {
			draw(i)
		}
	}
	if slots != nil {
		fmt.Fprintf(b, "ready tasks wait for a free slot: %s\n", slotText(slots, s.Graph.ID, time.Now()))
	}
	return b.Flush()
}

// dotColors styles each state in Graphviz as the Mermaid chart does (GitHub's label
// colours: light fills, dark text).
var dotColors = map[tasks.State]struct{ fill, stroke, extra string }{
	tasks.Pending:   {"#f6f8fa", "#8c959f", ""},
	tasks.Running:   {"#ddf4ff", "#0969da", ""},
	tasks.Succeeded: {"#dafbe1", "#1a7f37", ""},
	tasks.Failed:    {"#ffebe9", "#cf222e", ""},
	tasks.Cancelled: {"#fff8c5", "#9a6700", ""},
	tasks.Skipped:   {"#ffffff", "#8c959f", ",dashed"},
}

// renderDot draws the graph as a Graphviz digraph, dependencies above their dependents.
// Node names are n0, n1... (the index) and labels are quoted and escaped, so nothing an id
// holds can break the syntax.
func renderDot(g tasks.Graph, v tasks.View) string {
	var b strings.Builder
	index := make(map[string]int, len(v.Nodes))
	for i, n := range v.Nodes {
		if _, dup := index[n.ID]; !dup {
			index[n.ID] = i
		}
	}
	fmt.Fprintf(&b, "digraph %s {\n", dotQuote(g.ID))
	fmt.Fprintf(&b, "  label=%s;\n  labelloc=t;\n  rankdir=TB;\n", dotQuote(titled(g.ID, g.Name)))
	b.WriteString("  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n")
	for i, n := range v.Nodes {
		c, ok := dotColors[n.Status]
		if !ok {
			c = dotColors[tasks.Pending]
		}
		fmt.Fprintf(&b, "  n%d [label=%s, fillcolor=%q, color=%q", i, dotQuote(n.ID+"\n"+string(n.Status)), c.fill, c.stroke)
		if c.extra != "" {
			fmt.Fprintf(&b, ", style=%q", "rounded,filled"+c.extra)
		}
		b.WriteString("];\n")
	}
	for _, e := range v.Edges {
		fmt.Fprintf(&b, "  n%d -> n%d;\n", index[e.From], index[e.To])
	}
	b.WriteString("}\n")
	return b.String()
}

// dotQuote quotes s as a Graphviz string: backslashes and quotes escaped, newlines as \n.
func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "")
	return `"` + r.Replace(s) + `"`
}

// renderCancel is `tasks cancel`: what became of each task concerned, and which are still
// stopping after the wait.
func renderCancel(w io.Writer, p palette, out tasks.CancelReport, stopping []string, grace time.Duration) error {
	if len(out.Tasks) == 0 {
		_, err := fmt.Fprintf(w, "graph %s: nothing to cancel, every task has finished\n", out.GraphID)
		return err
	}
	fmt.Fprintf(w, "graph %s: %d task(s) concerned\n", out.GraphID, len(out.Tasks))
	var rows [][]cell
	for _, t := range out.Tasks {
		rows = append(rows, []cell{{t.ID, ""}, stateCell(t.PreviousStatus), stateCell(t.Status), {string(t.Outcome), ""}})
	}
	if err := writeTable(w, p, []string{"TASK", "WAS", "NOW", "OUTCOME"}, rows); err != nil {
		return err
	}
	if len(stopping) > 0 {
		_, err := fmt.Fprintf(w, "still stopping: %s (signalled; SIGKILL after %v): `mcp-harness tasks status %s` shows when they have ended\n",
			strings.Join(stopping, ", "), grace, out.GraphID)
		return err
	}
	return nil
}

// describeEnd says how a task ended, for the line `logs -f` writes to stderr at the end.
func describeEnd(t tasks.TaskHead) string {
	s := string(t.Status)
	switch {
	case t.ExitCode != nil:
		s += fmt.Sprintf(" (exit %d)", *t.ExitCode)
	case t.Signal != nil:
		s += " (" + *t.Signal + ")"
	}
	if t.Message != nil && *t.Message != "" && (t.ErrorCode == nil || *t.ErrorCode != tasks.CodeExitNonzero) {
		s += ": " + *t.Message
	}
	return s
}

// maxHolders is how many slot holders a line names; the rest are counted.
const maxHolders = 3

// slotText says which cap a graph's ready tasks wait for and which running tasks hold its
// slots, the longest running first: tasks of the graph graphID by their id, others as
// graph/task.
func slotText(w *tasks.SlotWait, graphID string, now time.Time) string {
	var b strings.Builder
	switch w.Cap {
	case tasks.CapGraph:
		limit := 0
		if w.Limit != nil {
			limit = *w.Limit
		}
		fmt.Fprintf(&b, "the graph's maxParallel (%d) is taken by ", limit)
	case tasks.CapPods:
		b.WriteString("the server's --kube-max-pods (over all its graphs) is taken by ")
	default:
		b.WriteString("the server's --max-parallel (over all its graphs) is taken by ")
	}
	for i, h := range w.HeldBy {
		if i == maxHolders {
			fmt.Fprintf(&b, " and %d more", len(w.HeldBy)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		name := h.TaskID
		if h.GraphID != graphID {
			name = h.GraphID + "/" + h.TaskID
		}
		b.WriteString(name)
		if h.StartedAt != nil {
			fmt.Fprintf(&b, " (running %s)", shortDuration(now.Sub(h.StartedAt.Time)))
		}
	}
	return b.String()
}

// waitText says why a task has not started, after "task X is".
func waitText(w tasks.TaskWait, graphID string, now time.Time) string {
	switch w.Reason {
	case tasks.ReasonWaiting:
		return "waiting on " + someDeps(w.WaitingOn)
	case tasks.ReasonBlocked:
		return "blocked by " + someDeps(w.BlockedBy) + ": it will be skipped"
	}
	if w.Slots == nil {
		return "ready to start"
	}
	return "ready, waiting for a free slot: " + slotText(w.Slots, graphID, now)
}

// maxDepsShown is how many dependencies a line of `logs -f` names; the rest are counted.
const maxDepsShown = 5

// someDeps is depStates of the first few of ds, and how many more there are.
func someDeps(ds []tasks.DepState) string {
	if len(ds) <= maxDepsShown {
		return depStates(ds)
	}
	return fmt.Sprintf("%s and %d more", depStates(ds[:maxDepsShown]), len(ds)-maxDepsShown)
}

// quietAbove is the size of graph above which following all its tasks reports only the
// waits for a slot: for a thousand pending tasks, a line each on why is noise.
const quietAbove = 50

// taskColors are the colours of the task names before the lines of `tasks logs` for a
// whole graph, given in turn, as docker compose colours its services.
var taskColors = []string{sgrCyan, sgrYellow, sgrGreen, "35", "34", "36;1", "33;1", "32;1", "35;1", "34;1"}

// maxNameWidth bounds the column of task names before the lines: a long id is cut.
const maxNameWidth = 20

// logPrinter prints what `tasks logs` reads. On stdout: one task's log as it is; the logs
// of several tasks line by line, each after its task's name (a line is printed once it is
// whole, or once its task ended); or, with --json, NDJSON records of tasks.LogEvent, a log
// record holding one line. On stderr (not with --json): why a task has not started, its
// starts, and how it ended.
type logPrinter struct {
	w, stderr io.Writer
	p         palette
	graphID   string
	json      bool
	lines     bool // several tasks: line by line, after the task's name
	width     int
	color     map[string]string
	partial   map[string]string // a line not yet ended, per task
	order     []string          // the tasks in partial, in the order their text came
	enc       *json.Encoder
	quiet     bool // report only waits for a slot (see quietAbove)
}

// newLogPrinter prints the logs of the tasks of snap named in ids (every task when
// empty) to w, and what it has to say about them to stderr.
func newLogPrinter(w, stderr io.Writer, p palette, snap tasks.Snapshot, ids []string, asJSON bool) *logPrinter {
	lp := &logPrinter{w: w, stderr: stderr, p: p, graphID: snap.Graph.ID, json: asJSON, lines: len(ids) != 1,
		color: map[string]string{}, partial: map[string]string{}, quiet: len(ids) != 1 && len(snap.Tasks) > quietAbove}
	for i, t := range snap.Tasks {
		lp.width = max(lp.width, min(utf8.RuneCountInString(t.ID), maxNameWidth))
		lp.color[t.ID] = taskColors[i%len(taskColors)]
	}
	if asJSON {
		lp.enc = json.NewEncoder(w)
		lp.enc.SetEscapeHTML(false)
	}
	return lp
}

// logWriter is where the log of task id is written.
func (lp *logPrinter) logWriter(id string) io.Writer {
	return writerFunc(func(b []byte) (int, error) {
		if err := lp.text(id, string(b)); err != nil {
			return 0, err
		}
		return len(b), nil
	})
}

// text prints a piece of task id's log.
func (lp *logPrinter) text(id, s string) error {
	if !lp.json && !lp.lines {
		_, err := io.WriteString(lp.w, s)
		return err
	}
	if _, ok := lp.partial[id]; !ok {
		lp.order = append(lp.order, id)
	}
	s = lp.partial[id] + s
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			break
		}
		if err := lp.line(id, strings.TrimSuffix(s[:i], "\r")); err != nil {
			return err
		}
		s = s[i+1:]
	}
	if s == "" {
		lp.drop(id)
	} else {
		lp.partial[id] = s
	}
	return nil
}

// line prints one whole line of task id's log.
func (lp *logPrinter) line(id, line string) error {
	if lp.json {
		return lp.enc.Encode(tasks.LogEvent{Type: tasks.EventLog, GraphID: lp.graphID, TaskID: id, Text: &line})
	}
	name := shorten(id, maxNameWidth)
	name += strings.Repeat(" ", lp.width-utf8.RuneCountInString(name))
	_, err := fmt.Fprintf(lp.w, "%s | %s\n", lp.p.paint(lp.color[id], name), line)
	return err
}

func (lp *logPrinter) drop(id string) {
	delete(lp.partial, id)
	for i, x := range lp.order {
		if x == id {
			lp.order = append(lp.order[:i:i], lp.order[i+1:]...)
			break
		}
	}
}

// flushTask prints what is left of task id's last line.
func (lp *logPrinter) flushTask(id string) error {
	s, ok := lp.partial[id]
	if !ok {
		return nil
	}
	lp.drop(id)
	return lp.line(id, s)
}

// flush prints what is left of every task's last line.
func (lp *logPrinter) flush() error {
	for len(lp.order) > 0 {
		if err := lp.flushTask(lp.order[0]); err != nil {
			return err
		}
	}
	return nil
}

// event prints what a follower reports (tasks.Reader.Follow).
func (lp *logPrinter) event(ev tasks.LogEvent) error {
	switch ev.Type {
	case tasks.EventLog:
		if ev.Text != nil {
			return lp.text(ev.TaskID, *ev.Text)
		}
		return nil
	case tasks.EventEnded:
		if err := lp.flushTask(ev.TaskID); err != nil {
			return err
		}
	}
	if lp.json {
		return lp.enc.Encode(ev)
	}
	var say string
	switch {
	case ev.Type == tasks.EventWaiting && ev.Wait != nil && lp.quiet && ev.Wait.Reason != tasks.ReasonReady:
		return nil
	case ev.Type == tasks.EventWaiting && ev.Wait != nil:
		say = "is " + waitText(*ev.Wait, lp.graphID, time.Now())
	case ev.Type == tasks.EventStarted && ev.Task != nil:
		say = "started"
		if ev.Task.Attempt > 1 {
			say += fmt.Sprintf(" (attempt %d)", ev.Task.Attempt)
		}
	case ev.Type == tasks.EventEnded && ev.Task != nil:
		say = describeEnd(*ev.Task)
	default:
		return nil
	}
	_, err := fmt.Fprintf(lp.stderr, "mcp-harness: task %s %s\n", ev.TaskID, say)
	return err
}

// done says, after following every task of a graph, how the graph ended.
func (lp *logPrinter) done(ended []tasks.Task) {
	if lp.json || !lp.lines {
		return
	}
	p := tasks.ProgressOf(ended)
	fmt.Fprintf(lp.stderr, "mcp-harness: graph %s %s: %d succeeded, %d failed, %d cancelled, %d skipped\n",
		lp.graphID, p.State(), p.Succeeded, p.Failed, p.Cancelled, p.Skipped)
}

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// The operator CLI prints everything a person asks for (the tools, read by a model, are
// bounded instead), but a graph with 400,000 dependencies is 35 MB of JSON: encoding/json
// would build all of it in memory before writing a byte, beside a copy of the graph in
// the result types. So the big --json outputs are written a list item at a time, from the
// analysis the command already holds, in the same shape and layout as writeJSON.

// streamedList is a list of a JSON object written an item at a time: n items, the i-th
// given by item.
type streamedList struct {
	name string
	n    int
	item func(i int) any
}

// writeJSONStream writes head as writeJSON does, except that each list named in lists,
// which head carries empty, is written from its items one by one.
func writeJSONStream(w io.Writer, head any, lists ...streamedList) error {
	var buf bytes.Buffer
	if err := writeJSON(&buf, head); err != nil {
		return err
	}
	text := buf.Bytes()
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, l := range lists {
		// A member of the top-level object starts a line indented by two spaces; a string
		// value holds no raw newline, so this finds the member and nothing else.
		marker := []byte("\n  \"" + l.name + "\": []")
		i := bytes.Index(text, marker)
		if i < 0 {
			return fmt.Errorf("writing JSON: no empty list %q in %T", l.name, head)
		}
		bw.Write(text[:i])
		if err := writeItems(bw, l); err != nil {
			return err
		}
		text = text[i+len(marker):]
	}
	bw.Write(text)
	return bw.Flush()
}

// writeItems writes a top-level member's list, items indented as writeJSON indents them.
func writeItems(w *bufio.Writer, l streamedList) error {
	fmt.Fprintf(w, "\n  %q: [", l.name)
	if l.n == 0 {
		w.WriteString("]")
		return nil
	}
	var item bytes.Buffer
	enc := json.NewEncoder(&item)
	enc.SetIndent("    ", "  ")
	enc.SetEscapeHTML(false)
	for i := range l.n {
		item.Reset()
		if err := enc.Encode(l.item(i)); err != nil {
			return err
		}
		if i > 0 {
			w.WriteByte(',')
		}
		w.WriteString("\n    ")
		// A write error sticks: stop at the first (a closed pipe: `... | head`).
		if _, err := w.Write(bytes.TrimSuffix(item.Bytes(), []byte("\n"))); err != nil {
			return err
		}
	}
	_, err := w.WriteString("\n  ]")
	return err
}

// writeReport writes `tasks graph --json`: the graph's tasks.Report, from its analysis v,
// a node and an edge at a time.
func writeReport(w io.Writer, s tasks.Snapshot, v tasks.View) error {
	head := tasks.Report{GraphID: s.Graph.ID, Name: s.Graph.Name, Status: s.Progress().State(),
		Nodes: []tasks.ReportNode{}, Edges: []tasks.ReportEdge{}, Order: []string{}, Mermaid: &v.Mermaid}
	return writeJSONStream(w, head,
		streamedList{"nodes", len(v.Nodes), func(i int) any { return tasks.ReportNodeOf(v.Nodes[i]) }},
		streamedList{"edges", len(v.Edges), func(i int) any { return tasks.ReportEdge{From: v.Edges[i].From, To: v.Edges[i].To} }},
		streamedList{"order", len(v.Order), func(i int) any { return v.Order[i] }},
	)
}

// writeDetail writes `tasks status --json`: d, a task at a time.
func writeDetail(w io.Writer, d tasks.Detail) error {
	all := d.Tasks
	d.Tasks = []tasks.TaskDetail{}
	return writeJSONStream(w, d, streamedList{"tasks", len(all), func(i int) any { return all[i] }})
}
