package cli

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// The screen of `tasks watch` (see watch.go): a Bubble Tea model. It holds what the last
// poll read and what the person chose, and does no I/O of its own: reads and cancels are
// commands that call its watchSource, and their results come back as messages. So the
// tests feed it messages and read View, with no terminal and no store. watchview.go
// draws it.

// watchMode is what the screen shows.
type watchMode int

const (
	modeTree watchMode = iota // the graph's tasks and the selected task's log tail
	modeLog                   // the selected task's log, full-screen
)

// tickMsg is the clock of the polls.
type tickMsg time.Time

// cancelAsk is a cancel waiting for the person's y or n.
type cancelAsk struct {
	graphID string
	ids     []string // empty: every unfinished task of the graph
	prompt  string
}

// treeRow is one task on the screen: its node in the graph's View (and task in the
// snapshot: Analyze keeps the order) and the tree drawn before its id.
type treeRow struct {
	node   int
	prefix string
}

// watchModel is the state of the screen.
type watchModel struct {
	src    watchSource
	where  string // the workspace's state, for messages
	width  int
	height int
	now    time.Time

	graphID  string // "" until there is a graph to show
	graphs   []tasks.Overview
	listedAt time.Time
	version  int64 // of snap; -1 before the first read
	snap     tasks.Snapshot
	view     tasks.View
	slots    *tasks.SlotWait
	runner   tasks.RunnerInfo
	rows     []treeRow
	rowOf    map[string]int // task id -> row
	nameW    int            // the widest tree prefix and id

	sel int // the selected row
	top int // the first row on screen

	log    *logTail // of the selected task, once read
	lines  []string // log's text as lines fit to show
	mode   watchMode
	back   int      // the full-screen log: lines scrolled back from the end; 0 follows
	frozen []string // the lines shown while scrolled back

	confirm   *cancelAsk
	status    string
	statusErr bool
	loading   bool // a load runs
	again     bool // load again as soon as it returns
	loadErr   bool // status holds a load's error, cleared by the next good load
}

func newWatchModel(src watchSource, where, graphID string) *watchModel {
	return &watchModel{src: src, where: where, graphID: graphID, version: -1, width: 80, height: 24, now: time.Now()}
}

// Init starts the clock and the first read.
func (m *watchModel) Init() tea.Cmd {
	return tea.Batch(m.poll(), m.tick())
}

// tick is the clock: every watchPoll while the graph runs, every watchIdlePoll once it
// has ended (nothing of it changes any more; a key still reads at once).
func (m *watchModel) tick() tea.Cmd {
	d := watchPoll
	if m.snap.Graph.FinishedAt != nil {
		d = watchIdlePoll
	}
	return tea.Tick(d, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// poll reads the store now, or as soon as the read under way returns.
func (m *watchModel) poll() tea.Cmd {
	if m.loading {
		m.again = true
		return nil
	}
	m.loading = true
	q := m.request()
	src := m.src
	return func() tea.Msg { return src.load(q) }
}

// request is what the next poll reads: the list of graphs when it is due, and the
// selected task's log unless what was read of it is whole and long enough.
func (m *watchModel) request() watchReq {
	q := watchReq{graphID: m.graphID, version: m.version, list: m.now.Sub(m.listedAt) >= watchListEvery}
	t, ok := m.selected()
	if !ok {
		return q
	}
	want := m.logWant()
	if l := m.log; l != nil && l.taskID == t.ID && l.final && l.attempt == t.Attempt && l.lines >= want {
		return q
	}
	q.logTask, q.logLines = t.ID, want
	return q
}

// logWant is how many lines of the selected log the screen needs.
func (m *watchModel) logWant() int {
	if m.mode == modeLog {
		return watchLogLines
	}
	_, pane := m.layout()
	return max(pane-1, 1) // the pane's title takes a line
}

// selected is the selected task.
func (m *watchModel) selected() (tasks.Task, bool) {
	if m.sel < 0 || m.sel >= len(m.rows) {
		return tasks.Task{}, false
	}
	return m.snap.Tasks[m.rows[m.sel].node], true
}

// Update takes a message and says what to do next.
func (m *watchModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.scroll()
		return m, nil
	case tickMsg:
		m.now = time.Time(msg)
		if m.loading {
			return m, m.tick()
		}
		return m, tea.Batch(m.poll(), m.tick())
	case boardMsg:
		return m, m.board(msg)
	case cancelDoneMsg:
		m.status, m.statusErr = cancelText(msg), msg.err != nil
		m.loadErr = false
		return m, m.poll()
	case tea.KeyPressMsg:
		return m, m.key(msg.String())
	}
	return m, nil
}

// board takes what a poll read.
func (m *watchModel) board(b boardMsg) tea.Cmd {
	m.loading = false
	m.now = b.at
	if b.listed {
		m.graphs, m.listedAt = b.graphs, b.at
	}
	switch {
	case b.err != nil:
		m.status, m.statusErr, m.loadErr = "reading the store: "+b.err.Error(), true, true
	case m.loadErr:
		m.status, m.statusErr, m.loadErr = "", false, false
	}
	if m.graphID == "" && b.graphID != "" {
		m.graphID = b.graphID // the first graph of a workspace that had none
	}
	if b.err == nil && b.graphID != "" && b.graphID == m.graphID {
		if b.changed {
			m.setSnapshot(b.version, b.snap, b.view)
		}
		m.slots, m.runner = b.slots, b.runner
		if t, ok := m.selected(); ok && b.log != nil && b.log.taskID == t.ID {
			m.setLog(b.log)
		}
	}
	if m.again {
		m.again = false
		return m.poll()
	}
	return nil
}

// setSnapshot shows a newly read graph, keeping the selected task selected.
func (m *watchModel) setSnapshot(version int64, snap tasks.Snapshot, v tasks.View) {
	var keep string
	if t, ok := m.selected(); ok {
		keep = t.ID
	}
	m.version, m.snap, m.view = version, snap, v
	m.rows, m.nameW = treeRows(v)
	m.rowOf = make(map[string]int, len(m.rows))
	for i, r := range m.rows {
		m.rowOf[v.Nodes[r.node].ID] = i
	}
	if i, ok := m.rowOf[keep]; ok {
		m.sel = i
	}
	m.sel = min(max(m.sel, 0), max(len(m.rows)-1, 0))
	m.scroll()
}

// setLog shows what was read of the selected task's log.
func (m *watchModel) setLog(l *logTail) {
	m.log = l
	m.lines = splitLog(l.text)
}

// switchGraph shows another graph.
func (m *watchModel) switchGraph(id string) tea.Cmd {
	m.graphID, m.version = id, -1
	m.snap, m.view, m.rows, m.rowOf, m.slots = tasks.Snapshot{}, tasks.View{}, nil, nil, nil
	m.sel, m.top, m.mode, m.back, m.frozen = 0, 0, modeTree, 0, nil
	m.log, m.lines, m.confirm = nil, nil, nil
	return m.poll()
}

// key acts on a key the person pressed.
func (m *watchModel) key(k string) tea.Cmd {
	if k == "ctrl+c" {
		return tea.Quit
	}
	if a := m.confirm; a != nil {
		m.confirm = nil
		if k != "y" && k != "Y" {
			m.status, m.statusErr = "not cancelled", false
			return nil
		}
		m.status, m.statusErr = "cancelling "+cancelWhat(a.graphID, a.ids)+"…", false
		src := m.src
		return func() tea.Msg { return src.cancel(a.graphID, a.ids) }
	}
	switch k {
	case "q":
		return tea.Quit
	case "c":
		m.askCancelTask()
		return nil
	case "C":
		m.askCancelGraph()
		return nil
	case "[", "]":
		return m.stepGraph(k == "]")
	}
	if m.mode == modeLog {
		return m.logKey(k)
	}
	page := max(m.treeHeight()-1, 1)
	switch k {
	case "up", "k":
		return m.move(-1)
	case "down", "j":
		return m.move(1)
	case "pgup":
		return m.move(-page)
	case "pgdown", "space":
		return m.move(page)
	case "home", "g":
		return m.move(-len(m.rows))
	case "end", "G":
		return m.move(len(m.rows))
	case "enter":
		if _, ok := m.selected(); ok {
			m.mode, m.back, m.frozen = modeLog, 0, nil
			return m.poll() // more lines than the pane held
		}
	case "esc":
		m.status, m.statusErr = "", false
	}
	return nil
}

// logKey scrolls the full-screen log: while scrolled back it stands still, at the end it
// follows.
func (m *watchModel) logKey(k string) tea.Cmd {
	page := m.logBody()
	var d int
	switch k {
	case "esc", "enter":
		m.mode, m.back, m.frozen = modeTree, 0, nil
		return nil
	case "up", "k":
		d = 1
	case "down", "j":
		d = -1
	case "pgup":
		d = page
	case "pgdown", "space":
		d = -page
	case "home", "g":
		d = 1 << 30
	case "end", "G":
		d = -(1 << 30)
	default:
		return nil
	}
	if m.back == 0 && d > 0 {
		m.frozen = m.lines
	}
	m.back = min(max(m.back+d, 0), max(len(m.frozen)-page, 0)) // the top line at most
	if m.back == 0 {
		m.frozen = nil
	}
	return nil
}

// move moves the selection by d rows and reads the newly selected task's log.
func (m *watchModel) move(d int) tea.Cmd {
	if len(m.rows) == 0 {
		return nil
	}
	was := m.sel
	m.sel = min(max(m.sel+d, 0), len(m.rows)-1)
	m.scroll()
	if m.sel == was {
		return nil
	}
	m.log, m.lines = nil, nil
	return m.poll()
}

// stepGraph moves to the next older graph of the list (or newer).
func (m *watchModel) stepGraph(older bool) tea.Cmd {
	i := -1
	for j, g := range m.graphs {
		if g.GraphID == m.graphID {
			i = j
		}
	}
	switch {
	case older && i+1 < len(m.graphs):
		i++
	case !older && i > 0:
		i--
	default:
		return nil
	}
	return m.switchGraph(m.graphs[i].GraphID)
}

func (m *watchModel) askCancelTask() {
	t, ok := m.selected()
	if !ok {
		return
	}
	if t.Status.Terminal() {
		m.status, m.statusErr = fmt.Sprintf("task %s has ended (%s): nothing to cancel", t.ID, t.Status), false
		return
	}
	m.confirm = &cancelAsk{graphID: m.graphID, ids: []string{t.ID},
		prompt: fmt.Sprintf("cancel task %s (%s)? y/n", t.ID, t.Status)}
}

func (m *watchModel) askCancelGraph() {
	if m.graphID == "" || len(m.snap.Tasks) == 0 {
		return
	}
	p := m.snap.Progress()
	if p.Pending+p.Running == 0 {
		m.status, m.statusErr = fmt.Sprintf("graph %s has ended (%s): nothing to cancel", m.graphID, p.State()), false
		return
	}
	m.confirm = &cancelAsk{graphID: m.graphID,
		prompt: fmt.Sprintf("cancel graph %s: its %d unfinished task(s)? y/n", titled(m.graphID, m.snap.Graph.Name), p.Pending+p.Running)}
}

// cancelWhat names what a cancel is of.
func cancelWhat(graphID string, ids []string) string {
	if len(ids) == 0 {
		return "graph " + graphID
	}
	return "task " + strings.Join(ids, ", ")
}

// cancelText says how a cancel played out, in a line.
func cancelText(c cancelDoneMsg) string {
	if c.err != nil {
		return "cancel " + cancelWhat(c.graphID, c.ids) + " failed: " + c.err.Error()
	}
	if len(c.report.Tasks) == 0 {
		return cancelWhat(c.graphID, c.ids) + ": nothing to cancel, it has ended"
	}
	var parts []string
	if len(c.report.Tasks) <= 4 {
		for _, t := range c.report.Tasks {
			parts = append(parts, t.ID+" "+string(t.Outcome))
		}
	} else {
		n := map[tasks.Outcome]int{}
		for _, t := range c.report.Tasks {
			n[t.Outcome]++
		}
		for _, o := range tasks.Outcomes() {
			if n[o] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n[o], o))
			}
		}
	}
	s := "cancelled " + cancelWhat(c.graphID, c.ids) + ": " + strings.Join(parts, ", ")
	if len(c.stopping) > 0 {
		s += " (still stopping: " + strings.Join(c.stopping, ", ") + ")"
	}
	return s
}

// layout divides the height: the tree's rows and the log pane's (its title included; 0
// when the screen is too short for one). Three lines of header, a status line and the
// keys take the rest.
func (m *watchModel) layout() (tree, pane int) {
	rest := max(m.height-5, 0)
	if rest < 12 {
		return rest, 0
	}
	pane = max(rest/3, 4)
	return rest - pane, pane
}

// logBody is how many lines of log the full-screen log shows: all but the header, its
// title, the status line and the keys.
func (m *watchModel) logBody() int { return max(m.height-6, 1) }

func (m *watchModel) treeHeight() int {
	t, _ := m.layout()
	return t
}

// scroll keeps the selected row on screen.
func (m *watchModel) scroll() {
	h := max(m.treeHeight(), 1)
	if m.sel < m.top {
		m.top = m.sel
	}
	if m.sel >= m.top+h {
		m.top = m.sel - h + 1
	}
	m.top = min(m.top, max(len(m.rows)-h, 0))
	m.top = max(m.top, 0)
}

// treeRows lays the graph out as a tree, as renderTree does, but each task once: under
// its first dependency one level up (so at its depth), the tasks without dependencies at
// the left. It returns the rows and the widest prefix and id.
func treeRows(v tasks.View) ([]treeRow, int) {
	index := make(map[string]int, len(v.Nodes))
	for i, n := range v.Nodes {
		if _, dup := index[n.ID]; !dup {
			index[n.ID] = i
		}
	}
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
	children := make([][]int, len(v.Nodes))
	for i, n := range v.Nodes {
		for _, id := range n.Dependents {
			if c, ok := index[id]; ok && home[c] == i {
				children[i] = append(children[i], c)
			}
		}
	}
	rows := make([]treeRow, 0, len(v.Nodes))
	seen := make([]bool, len(v.Nodes))
	width := 0
	type frame struct {
		node   int
		prefix string // drawn before this node's connector
		last   bool
		level  int
	}
	var stack []frame
	draw := func(root int) {
		stack = append(stack[:0], frame{node: root})
		for len(stack) > 0 {
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[f.node] {
				continue
			}
			seen[f.node] = true
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
			r := treeRow{node: f.node, prefix: f.prefix + connector}
			rows = append(rows, r)
			width = max(width, ansi.StringWidth(r.prefix+v.Nodes[f.node].ID))
			cs := children[f.node]
			for i := len(cs) - 1; i >= 0; i-- {
				stack = append(stack, frame{cs[i], childPrefix, i == len(cs)-1, f.level + 1})
			}
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
	return rows, width
}
