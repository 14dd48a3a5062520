package main

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// cliPalette paints text with ANSI colours, or leaves it alone when off.
type cliPalette struct{ on bool }

// SGR codes.
const (
	sgrBold   = "1"
	sgrDim    = "2"
	sgrRed    = "31"
	sgrGreen  = "32"
	sgrYellow = "33"
	sgrCyan   = "36"
)

func (p cliPalette) paint(code, s string) string {
	if !p.on || code == "" || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// cliStateColor is the colour of a task or graph state.
func cliStateColor(s string) string {
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

func (p cliPalette) state(s string) string { return p.paint(cliStateColor(s), s) }

// cliCell is a table cell and its colour.
type cliCell struct {
	text  string
	color string
}

// writeCLITable writes rows under a header in columns two spaces apart, padding by the
// plain text so colours do not upset the alignment. The last column is not padded.
func writeCLITable(w io.Writer, p cliPalette, header []string, rows [][]cliCell) error {
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
	line := func(cells []cliCell) {
		b.Reset()
		for i, c := range cells {
			b.WriteString(p.paint(c.color, c.text))
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", width[i]-utf8.RuneCountInString(c.text)+2))
			}
		}
		// An empty last column leaves the padding before it: trim it.
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	hs := make([]cliCell, len(header))
	for i, h := range header {
		hs[i] = cliCell{h, sgrBold}
	}
	line(hs)
	for _, r := range rows {
		line(r)
	}
	return nil
}

// cliDuration is a short, rounded duration: 850ms, 4.2s, 3m07s, 2h05m, 3d04h.
func cliDuration(d time.Duration) string {
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

func cliMillis(ms int64) string { return cliDuration(time.Duration(ms) * time.Millisecond) }

// cliQuoted is a graph's name for a heading: ` "name"`, or nothing.
func cliQuoted(name string) string {
	if name == "" {
		return ""
	}
	return fmt.Sprintf(" %q", name)
}

// cliShorten cuts s to n characters with an ellipsis.
func cliShorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func cliRunnerText(r cliRunner) string {
	if r.Live {
		return fmt.Sprintf("live (pid %d)", r.Pid)
	}
	return fmt.Sprintf("gone (pid %d)", r.Pid)
}

func renderCLIList(w io.Writer, p cliPalette, out cliList, statuses []string, limit int, now time.Time) error {
	if len(out.Graphs) == 0 {
		if len(statuses) > 0 {
			_, err := fmt.Fprintf(w, "no graphs are %s\n", strings.Join(statuses, " or "))
			return err
		}
		_, err := fmt.Fprintln(w, "no task graphs yet")
		return err
	}
	var rows [][]cliCell
	for _, g := range out.Graphs {
		name := g.Name
		if name == "" {
			name = "-"
		}
		created, _ := time.Parse(time.RFC3339Nano, g.CreatedAt)
		server := cliCell{cliRunnerText(g.Runner), ""}
		if !g.Runner.Live && g.Status == "running" {
			server.color = sgrRed // nothing will move this graph on until a server starts
		}
		rows = append(rows, []cliCell{
			{g.GraphID, ""}, {cliShorten(name, 30), ""}, {g.Status, cliStateColor(g.Status)},
			{fmt.Sprintf("%d/%d", g.Progress.Done(), g.Progress.Total), ""},
			{cliDuration(now.Sub(created)), ""}, {cliMillis(g.DurationMs), ""}, server,
		})
	}
	if err := writeCLITable(w, p, []string{"GRAPH", "NAME", "STATUS", "DONE", "AGE", "DURATION", "SERVER"}, rows); err != nil {
		return err
	}
	if out.More {
		_, err := fmt.Fprintf(w, "(the newest %d; --limit shows more)\n", limit)
		return err
	}
	return nil
}

// cliResult is a task's exit code or error code, in a few characters.
func cliResult(t cliTask) string {
	code := ""
	if t.ErrorCode != nil {
		code = *t.ErrorCode
	}
	switch {
	case t.ExitCode != nil && (code == "" || code == "EXIT_NONZERO"):
		return fmt.Sprintf("exit %d", *t.ExitCode)
	case code == "SIGNALED" && t.Signal != nil:
		return *t.Signal
	case code != "":
		return code
	}
	return "-"
}

// cliNote is what a task's message adds to its result, if anything.
func cliNote(t cliTask) string {
	if t.Message == nil || t.Status == string(tasks.Succeeded) {
		return ""
	}
	if t.ErrorCode != nil && (*t.ErrorCode == "EXIT_NONZERO" || *t.ErrorCode == "SIGNALED") && t.Status == string(tasks.Failed) {
		return "" // the result column says it all
	}
	return *t.Message
}

// cliPendingReason says why a pending task has not started, or "" for any other task.
func cliPendingReason(n tasks.NodeView) string {
	switch n.Reason {
	case tasks.ReasonReady:
		return "ready: waiting for a free slot"
	case tasks.ReasonWaiting:
		return "waiting on " + cliDepList(n.WaitingOn)
	case tasks.ReasonBlocked:
		return "blocked by " + cliDepList(n.BlockedBy) + ": it will be skipped"
	}
	return ""
}

// cliSummaryLine counts a graph's tasks, failures first, naming the failed tasks.
func cliSummaryLine(p cliPalette, s cliStatus) string {
	pr := s.Progress
	var parts []string
	if pr.Failed > 0 {
		var names []string
		for _, t := range s.Tasks {
			if t.Status != string(tasks.Failed) {
				continue
			}
			if len(names) == 5 {
				names = append(names, fmt.Sprintf("%d more", pr.Failed-5))
				break
			}
			names = append(names, t.ID+": "+cliResult(t))
		}
		parts = append(parts, p.paint(sgrRed, fmt.Sprintf("%d failed", pr.Failed))+" ("+strings.Join(names, ", ")+")")
	}
	for _, c := range []struct {
		n     int
		state tasks.State
	}{{pr.Cancelled, tasks.Cancelled}, {pr.Skipped, tasks.Skipped}, {pr.Running, tasks.Running}, {pr.Pending, tasks.Pending}, {pr.Succeeded, tasks.Succeeded}} {
		if c.n > 0 {
			parts = append(parts, p.paint(cliStateColor(string(c.state)), fmt.Sprintf("%d %s", c.n, c.state)))
		}
	}
	return fmt.Sprintf("%d/%d done: %s", pr.Done(), pr.Total, strings.Join(parts, ", "))
}

func renderCLIStatus(w io.Writer, p cliPalette, s cliStatus, now time.Time) error {
	fmt.Fprintf(w, "graph %s%s: %s\n", p.paint(sgrBold, s.GraphID), cliQuoted(s.Name), p.state(s.Status))
	fmt.Fprintln(w, cliSummaryLine(p, s))
	created, _ := time.Parse(time.RFC3339Nano, s.CreatedAt)
	ran := "running for " + cliMillis(s.DurationMs)
	if s.FinishedAt != nil {
		ran = "took " + cliMillis(s.DurationMs)
	}
	server := cliRunnerText(s.Runner)
	if !s.Runner.Live && s.Status == "running" {
		server = p.paint(sgrRed, server+": a server live on this workspace (or the next to start) takes its tasks over")
	}
	fmt.Fprintf(w, "created %s (%s ago) · %s · server %s\n\n",
		created.Local().Format("2006-01-02 15:04:05"), cliDuration(now.Sub(created)), ran, server)
	// Why each pending task has not started, as tasks graph says it.
	nodes := make([]tasks.Node, len(s.Tasks))
	for i, t := range s.Tasks {
		nodes[i] = tasks.Node{ID: t.ID, Status: tasks.State(t.Status), DependsOn: t.DependsOn}
	}
	views := tasks.Analyze(nodes).Nodes
	var rows [][]cliCell
	for i, t := range s.Tasks {
		dur := "-"
		if t.DurationMs != nil {
			dur = cliMillis(*t.DurationMs)
		}
		note := cliNote(t)
		if why := cliPendingReason(views[i]); why != "" {
			note = strings.TrimSuffix(why+"; "+note, "; ")
		}
		rows = append(rows, []cliCell{{t.ID, ""}, {t.Status, cliStateColor(t.Status)}, {cliResult(t), ""},
			{fmt.Sprint(t.Attempt), ""}, {dur, ""}, {note, ""}})
	}
	if err := writeCLITable(w, p, []string{"TASK", "STATUS", "RESULT", "ATTEMPT", "DURATION", "NOTE"}, rows); err != nil {
		return err
	}
	for _, t := range s.Tasks {
		if t.Status == string(tasks.Failed) {
			_, err := fmt.Fprintf(w, "\nwhy %s failed: mcp-harness tasks logs %s %s\n", t.ID, s.GraphID, t.ID)
			return err
		}
	}
	return nil
}

// cliMaxIndent bounds the indentation of the tree: a chain of ten thousand tasks must
// not print lines of forty thousand spaces. Deeper tasks say their depth instead.
const cliMaxIndent = 24

// renderCLITree draws the graph as a tree: the tasks without dependencies at the left, each
// task under every task it depends on. A task is drawn in full once, under the first of
// its dependencies on its longest path from the left (where it sits in the run order);
// under its other dependencies it is only named, "(see above)" or "(see below)". So the
// output is as long as tasks plus dependencies, and every task is drawn as deep as it is.
func renderCLITree(w io.Writer, p cliPalette, s tasks.Snapshot, gv cliView) error {
	v := gv.view
	fmt.Fprintf(w, "graph %s%s: %s, %d task(s)\n", p.paint(sgrBold, s.Graph.ID), cliQuoted(s.Graph.Name), p.state(gv.json.Status), len(v.Nodes))
	index := make(map[string]int, len(v.Nodes))
	for i, n := range v.Nodes {
		if _, dup := index[n.ID]; !dup {
			index[n.ID] = i
		}
	}
	rows := make(map[string]store.TaskRow, len(s.Tasks))
	for _, t := range s.Tasks {
		rows[t.ID] = t
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
	var b strings.Builder
	seen := make([]bool, len(v.Nodes))
	label := func(n tasks.NodeView) string {
		l := n.ID + "  " + p.state(string(n.Status))
		t := rows[n.ID]
		ct := cliTask{ErrorCode: t.ErrorCode, ExitCode: t.ExitCode, Signal: t.Signal}
		switch {
		case n.Reason != "":
			l += " " + p.paint(sgrDim, cliPendingReason(n))
		case (n.Status == tasks.Failed || n.Status == tasks.Cancelled) && cliResult(ct) != "-":
			l += " (" + cliResult(ct) + ")"
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
				if f.level <= cliMaxIndent {
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
			if f.level > cliMaxIndent {
				fmt.Fprintf(&b, " [depth %d]", n.Depth)
			}
			b.WriteString("\n")
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
	_, err := io.WriteString(w, b.String())
	return err
}

func cliDepList(ds []tasks.DepState) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		st := string(d.Status)
		if st == "" {
			st = "not in the graph"
		}
		parts[i] = fmt.Sprintf("%s (%s)", d.ID, st)
	}
	return strings.Join(parts, ", ")
}

// cliDotColors styles each state in Graphviz as the Mermaid chart does (GitHub's label
// colours: light fills, dark text).
var cliDotColors = map[tasks.State]struct{ fill, stroke, extra string }{
	tasks.Pending:   {"#f6f8fa", "#8c959f", ""},
	tasks.Running:   {"#ddf4ff", "#0969da", ""},
	tasks.Succeeded: {"#dafbe1", "#1a7f37", ""},
	tasks.Failed:    {"#ffebe9", "#cf222e", ""},
	tasks.Cancelled: {"#fff8c5", "#9a6700", ""},
	tasks.Skipped:   {"#ffffff", "#8c959f", ",dashed"},
}

// cliDot draws the graph as a Graphviz digraph, dependencies above their dependents.
// Node names are n0, n1... (the index) and labels are quoted and escaped, so nothing an id
// holds can break the syntax.
func cliDot(g store.GraphRow, v tasks.View) string {
	var b strings.Builder
	index := make(map[string]int, len(v.Nodes))
	for i, n := range v.Nodes {
		if _, dup := index[n.ID]; !dup {
			index[n.ID] = i
		}
	}
	fmt.Fprintf(&b, "digraph %s {\n", cliDotQuote(g.ID))
	fmt.Fprintf(&b, "  label=%s;\n  labelloc=t;\n  rankdir=TB;\n", cliDotQuote(strings.TrimSpace(g.ID+cliQuoted(g.Name))))
	b.WriteString("  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n")
	for i, n := range v.Nodes {
		c, ok := cliDotColors[n.Status]
		if !ok {
			c = cliDotColors[tasks.Pending]
		}
		fmt.Fprintf(&b, "  n%d [label=%s, fillcolor=%q, color=%q", i, cliDotQuote(n.ID+"\n"+string(n.Status)), c.fill, c.stroke)
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

// cliDotQuote quotes s as a Graphviz string: backslashes and quotes escaped, newlines as \n.
func cliDotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "")
	return `"` + r.Replace(s) + `"`
}

func renderCLICancel(w io.Writer, p cliPalette, out cliCancel, stopping []string, grace time.Duration) error {
	if len(out.Tasks) == 0 {
		_, err := fmt.Fprintf(w, "graph %s: nothing to cancel, every task has finished\n", out.GraphID)
		return err
	}
	fmt.Fprintf(w, "graph %s: %d task(s) concerned\n", out.GraphID, len(out.Tasks))
	var rows [][]cliCell
	for _, t := range out.Tasks {
		rows = append(rows, []cliCell{{t.ID, ""}, {t.PreviousStatus, cliStateColor(t.PreviousStatus)},
			{t.Status, cliStateColor(t.Status)}, {t.Outcome, ""}})
	}
	if err := writeCLITable(w, p, []string{"TASK", "WAS", "NOW", "OUTCOME"}, rows); err != nil {
		return err
	}
	if len(stopping) > 0 {
		_, err := fmt.Fprintf(w, "still stopping: %s (signalled; SIGKILL after %v): `mcp-harness tasks status %s` shows when they have ended\n",
			strings.Join(stopping, ", "), grace, out.GraphID)
		return err
	}
	return nil
}
