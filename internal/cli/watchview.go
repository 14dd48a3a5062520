package cli

import (
	"fmt"
	"strings"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// The drawing of `tasks watch`'s screen (watchmodel.go holds its state): View and what
// it is made of. It reads the model and changes nothing.

// paint is a Lip Gloss style's escape codes, taken once: Style.Render lays out a block
// (borders, margins, padding, wrapping) at every call, while the screen paints a few
// words of one line in a handful of styles, for each row on screen, several times a
// second (it took three quarters of the time of a frame).
type paint struct{ open, close string }

func paintOf(st lipgloss.Style) paint {
	r := st.Render("x")
	i := strings.Index(r, "x")
	return paint{r[:i], r[i+1:]}
}

// on paints s, a piece of one line.
func (p paint) on(s string) string {
	if s == "" {
		return ""
	}
	return p.open + s + p.close
}

// Styles. Colours are those of the other tasks commands; Bubble Tea drops them for a
// terminal without colours, and with NO_COLOR (see runWatch); the symbols say the state
// without them.
var (
	paintBold   = paintOf(lipgloss.NewStyle().Bold(true))
	paintDim    = paintOf(lipgloss.NewStyle().Faint(true))
	paintSel    = paintOf(lipgloss.NewStyle().Reverse(true))
	paintErr    = paintOf(lipgloss.NewStyle().Foreground(lipgloss.Red))
	paintAsk    = paintOf(lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Yellow))
	statePaints = map[tasks.State]paint{
		tasks.Succeeded: paintOf(lipgloss.NewStyle().Foreground(lipgloss.Green)),
		tasks.Failed:    paintOf(lipgloss.NewStyle().Foreground(lipgloss.Red)),
		tasks.Running:   paintOf(lipgloss.NewStyle().Foreground(lipgloss.Cyan)),
		tasks.Cancelled: paintOf(lipgloss.NewStyle().Foreground(lipgloss.Yellow)),
		tasks.Skipped:   paintDim,
	}
	stateSymbols = map[tasks.State]string{
		tasks.Pending: "○", tasks.Running: "●", tasks.Succeeded: "✓",
		tasks.Failed: "✗", tasks.Cancelled: "⊘", tasks.Skipped: "-",
	}
)

// stateOn paints text in the colour of state s (a task's or a graph's).
func stateOn[S status](s S, text string) string {
	if p, ok := statePaints[tasks.State(s)]; ok {
		return p.on(text)
	}
	return text
}

// fit cuts a line that may hold escape sequences to w columns.
func fit(s string, w int) string {
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// fitPlain cuts plain text to w columns; most of it is ASCII, one column a byte.
func fitPlain(s string, w int) string {
	if w <= 0 {
		return ""
	}
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		ascii = s[i] < utf8.RuneSelf
	}
	if ascii {
		if len(s) <= w {
			return s
		}
		return s[:w-1] + "…"
	}
	return fit(s, w)
}

// View draws the screen.
func (m *watchModel) View() tea.View {
	v := tea.NewView(m.frame())
	v.AltScreen = true
	return v
}

// frame is the screen's text: height lines, none wider than width. Each part fits its
// lines to the width itself (a row is built to fit), so the thousand-task graph costs
// what the rows on screen do.
func (m *watchModel) frame() string {
	var lines []string
	switch {
	case m.graphID == "":
		lines = append(lines, fit(paintBold.on("mcp-harness tasks watch"), m.width), "",
			fit("no task graphs in "+m.where+" yet: waiting for the first", m.width))
	case m.version < 0:
		lines = append(lines, fit(paintBold.on(m.graphID), m.width), "", "reading the graph…")
	default:
		lines = append(lines, m.header()...)
		if m.mode == modeLog {
			lines = append(lines, m.logScreen()...)
		} else {
			lines = append(lines, m.tree()...)
			lines = append(lines, m.pane()...)
		}
	}
	body := max(m.height-2, 0)
	for len(lines) < body {
		lines = append(lines, "")
	}
	lines = append(lines[:body], m.statusLine(), m.keysLine())
	return strings.Join(lines[:min(len(lines), m.height)], "\n")
}

// header is the graph's line, its progress bar and a rule.
func (m *watchModel) header() []string {
	g := m.snap.Graph
	p := m.snap.Progress()
	state := p.State()
	took := "running for " + shortMillis(g.DurationMs(m.now))
	if g.FinishedAt != nil {
		took = "took " + shortMillis(g.DurationMs(m.now))
	}
	server := "server " + runnerText(m.runner)
	if !m.runner.Live && state == tasks.GraphRunning {
		server = paintErr.on(server + ": a server starting on this workspace takes its tasks over")
	}
	line := paintBold.on(g.ID)
	if g.Name != "" {
		line += fmt.Sprintf(" %q", g.Name)
	}
	line += "  " + stateOn(state, string(state)) + " · " + took + " · " + server
	if n := len(m.graphs); n > 1 {
		pos := "-"
		for i, o := range m.graphs {
			if o.GraphID == g.ID {
				pos = fmt.Sprint(i + 1)
			}
		}
		right := fmt.Sprintf("graph %s of %d [ ]", pos, n)
		if gap := m.width - ansi.StringWidth(line) - len(right); gap >= 2 {
			line += strings.Repeat(" ", gap) + paintDim.on(right)
		}
	}
	return []string{fit(line, m.width), fit(progressBar(p, min(40, max(m.width/3, 10)))+"  "+progressCounts(p), m.width),
		paintDim.on(strings.Repeat("─", m.width))}
}

// progressBar draws a graph's tasks as cells of their states' colours, finished first.
func progressBar(p tasks.Progress, width int) string {
	var b strings.Builder
	cum, drawn := 0, 0
	for _, s := range []tasks.State{tasks.Succeeded, tasks.Failed, tasks.Cancelled, tasks.Skipped, tasks.Running, tasks.Pending} {
		cum += p.Count(s)
		end := width
		if p.Total > 0 {
			end = cum * width / p.Total
		}
		if n := end - drawn; n > 0 {
			cell := "█"
			switch s {
			case tasks.Running:
				cell = "▒"
			case tasks.Pending:
				cell = "░"
			}
			b.WriteString(stateOn(s, strings.Repeat(cell, n)))
			drawn = end
		}
	}
	return b.String()
}

// progressCounts says how many tasks are done and in which states.
func progressCounts(p tasks.Progress) string {
	s := fmt.Sprintf("%d/%d done", p.Done(), p.Total)
	for _, st := range []tasks.State{tasks.Failed, tasks.Cancelled, tasks.Skipped, tasks.Running, tasks.Pending, tasks.Succeeded} {
		if n := p.Count(st); n > 0 {
			s += " · " + stateOn(st, fmt.Sprintf("%d %s", n, st))
		}
	}
	return s
}

// tree draws the rows on screen.
func (m *watchModel) tree() []string {
	h := m.treeHeight()
	nameW := min(m.nameW, max(m.width*2/5, 12))
	out := make([]string, 0, h)
	for i := m.top; i < len(m.rows) && i < m.top+h; i++ {
		out = append(out, m.row(i, nameW))
	}
	for len(out) < h {
		out = append(out, "")
	}
	return out
}

// rowFixed is the width of a row but its tree, id and note: the selection mark, the
// symbol, the state, the duration and the spaces between.
const rowFixed = 2 + 2 + 2 + 9 + 2 + 6 + 2

// row draws one task: selection mark, state symbol, tree and id, state, duration, note.
// Ids are ASCII (tasks/dag's id pattern) and the tree's characters one column each.
func (m *watchModel) row(i, nameW int) string {
	r := m.rows[i]
	n := m.view.Nodes[r.node]
	t := m.snap.Tasks[r.node]
	prefix, id := r.prefix, n.ID
	pw := utf8.RuneCountInString(prefix)
	if pw+len(id) > nameW { // cut the tree first, then the id
		if pw >= nameW/2 {
			prefix, pw = "", 0
		}
		if len(id) > nameW-pw {
			id = id[:max(nameW-pw-1, 0)] + "…"
		}
	}
	pad := strings.Repeat(" ", max(nameW-pw-utf8.RuneCountInString(id), 0))
	dur := "-"
	if d := t.Times(m.now).DurationMs; d != nil {
		dur = shortMillis(*d)
	}
	sym, ok := stateSymbols[n.Status]
	if !ok {
		sym = "?"
	}
	note := fitPlain(m.note(r.node), m.width-rowFixed-nameW)
	var line string
	if i == m.sel {
		line = fmt.Sprintf("› %s %s%s%s  %-9s  %6s  %s", sym, prefix, id, pad, n.Status, dur, note)
		line = paintSel.on(line + strings.Repeat(" ", max(m.width-rowFixed-nameW-ansi.StringWidth(note), 0)))
	} else {
		line = fmt.Sprintf("  %s %s%s%s  %s  %6s  %s", stateOn(n.Status, sym), paintDim.on(prefix), id, pad,
			stateOn(n.Status, fmt.Sprintf("%-9s", n.Status)), dur, paintDim.on(note))
	}
	if m.width < rowFixed+nameW {
		return fit(line, m.width)
	}
	return line
}

// note says why a pending task waits, or how an ended one ended.
func (m *watchModel) note(i int) string {
	n := m.view.Nodes[i]
	t := m.snap.Tasks[i]
	h := t.Head()
	switch {
	case n.Reason == tasks.ReasonReady && m.slots != nil:
		return "ready, waiting for a free slot: " + slotText(m.slots, m.graphID, m.now)
	case n.Reason != "":
		return pendingReason(n)
	case n.Status == tasks.Running && t.Attempt > 1:
		return fmt.Sprintf("attempt %d", t.Attempt)
	case n.Status == tasks.Failed || n.Status == tasks.Cancelled:
		s := taskResult(h)
		if note := taskNote(h); note != "" {
			s += ": " + note
		}
		return s
	case n.Status == tasks.Skipped && t.Message != nil:
		return *t.Message
	}
	return ""
}

// pane is the log pane under the tree: a title and the end of the selected task's log.
func (m *watchModel) pane() []string {
	_, h := m.layout()
	if h == 0 {
		return nil
	}
	t, ok := m.selected()
	if !ok {
		return nil
	}
	out := []string{m.logTitle(t)}
	switch {
	case t.Status == tasks.Pending && t.Attempt == 0:
		return append(out, paintDim.on("(not started)"))
	case m.log == nil || m.log.taskID != t.ID:
		return append(out, paintDim.on("reading…"))
	case len(m.lines) == 0:
		return append(out, paintDim.on("(no output)"))
	}
	for _, l := range m.lines[max(len(m.lines)-(h-1), 0):] {
		out = append(out, fitPlain(l, m.width))
	}
	return out
}

// logTitle is the rule over a log: whose it is, its state, whether it follows.
func (m *watchModel) logTitle(t tasks.Task) string {
	title := "── log of " + t.ID + " · " + stateOn(t.Status, string(t.Status))
	switch {
	case m.mode == modeLog && m.back > 0:
		title += fmt.Sprintf(" · %d lines up, end follows", m.back)
	case !t.Status.Terminal() && t.Status != tasks.Pending:
		title += " · following"
	}
	title += " "
	return fit(title+paintDim.on(strings.Repeat("─", max(m.width-ansi.StringWidth(title), 0))), m.width)
}

// logScreen is the selected task's log on the whole screen below the header.
func (m *watchModel) logScreen() []string {
	t, ok := m.selected()
	if !ok {
		return nil
	}
	h := m.logBody()
	lines := m.lines
	if m.back > 0 {
		lines = m.frozen
	}
	out := []string{m.logTitle(t)}
	switch {
	case m.log == nil || m.log.taskID != t.ID:
		return append(out, paintDim.on("reading…"))
	case len(lines) == 0:
		return append(out, paintDim.on("(no output)"))
	}
	end := max(len(lines)-m.back, 0)
	for _, l := range lines[max(end-h, 0):end] {
		out = append(out, fitPlain(l, m.width))
	}
	return out
}

func (m *watchModel) statusLine() string {
	switch {
	case m.confirm != nil:
		return fit(paintAsk.on(m.confirm.prompt), m.width)
	case m.statusErr:
		return fit(paintErr.on(m.status), m.width)
	}
	return fitPlain(m.status, m.width)
}

func (m *watchModel) keysLine() string {
	keys := "↑/↓ select · enter log · c cancel task · C cancel graph · [ ] graphs · q quit"
	if m.mode == modeLog {
		keys = "↑/↓ pgup/pgdn scroll · end follow · esc back · c cancel task · q quit"
	}
	return fit(paintDim.on(keys), m.width)
}

// splitLog turns log text into lines a terminal shows as they are: escape sequences
// dropped, a line redrawn with carriage returns shown as it was last drawn, tabs
// expanded, other control characters and invalid UTF-8 dropped.
func splitLog(text string) []string {
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return nil
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		l = strings.TrimSuffix(l, "\r")
		if j := strings.LastIndexByte(l, '\r'); j >= 0 {
			l = l[j+1:]
		}
		l = ansi.Strip(strings.ToValidUTF8(l, ""))
		var b strings.Builder
		col := 0
		for _, r := range l {
			switch {
			case r == '\t':
				n := 8 - col%8
				b.WriteString(strings.Repeat(" ", n))
				col += n
			case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			default:
				b.WriteRune(r)
				col++
			}
		}
		lines[i] = b.String()
	}
	return lines
}
