package cli

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/google/go-cmp/cmp"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// The screen of `tasks watch`, driven as Bubble Tea drives it: messages in, View and
// commands out. fakeSource stands for the store; the end-to-end test in e2e/ drives the
// real thing in tmux.

// fakeSource records what the screen asks for and answers with what the test set.
type fakeSource struct {
	mu      sync.Mutex
	reqs    []watchReq
	cancels []cancelCall
	board   boardMsg
	done    cancelDoneMsg
}

type cancelCall struct {
	graphID string
	ids     []string
}

func (f *fakeSource) load(q watchReq) boardMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, q)
	return f.board
}

func (f *fakeSource) cancel(graphID string, ids []string) cancelDoneMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels = append(f.cancels, cancelCall{graphID, ids})
	return f.done
}

// lastReq is the last request the screen made, and how many it made.
func (f *fakeSource) lastReq() (watchReq, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		return watchReq{}, 0
	}
	return f.reqs[len(f.reqs)-1], len(f.reqs)
}

// run carries out a command as Bubble Tea would, a batch's commands one by one, and
// returns the messages they send. A tick waits for its timer.
func run(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		var out []tea.Msg
		for _, c := range b {
			out = append(out, run(c)...)
		}
		return out
	}
	return []tea.Msg{msg}
}

// settle feeds m the messages of cmd, and of the commands that gives, until none is
// left. A tick is not answered: the tests send their own.
func settle(m *watchModel, cmd tea.Cmd) {
	for _, msg := range run(cmd) {
		if _, ok := msg.(tickMsg); ok {
			continue
		}
		_, next := m.Update(msg)
		settle(m, next)
	}
}

// watchT0 is the time of the boards of these tests.
var watchT0 = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) *time.Time {
	t := watchT0.Add(d)
	return &t
}

func intp(n int) *int { return &n }

func secs(n float64) time.Duration { return time.Duration(n * float64(time.Second)) }

// ciBoard is a running graph of seven tasks, as a poll of the store reads it.
func ciBoard() boardMsg {
	snap := tasks.Snapshot{Graph: tasks.Graph{ID: "g-01TEST", Name: "ci", RunnerID: "r-1", MaxParallel: 2, CreatedAt: watchT0.Add(-secs(12))},
		Tasks: []tasks.Task{
			{ID: "build", Status: tasks.Running, Attempt: 1, StartedAt: at(-secs(10))},
			{ID: "test", Status: tasks.Pending, DependsOn: []string{"build"}},
			{ID: "package", Status: tasks.Pending, DependsOn: []string{"test", "build"}},
			{ID: "serve", Status: tasks.Running, Attempt: 1, StartedAt: at(-secs(9.5))},
			{ID: "smoke", Status: tasks.Pending, DependsOn: []string{"serve"}},
			{ID: "lint", Status: tasks.Failed, Attempt: 1, ExitCode: intp(3), ErrorCode: strp(tasks.CodeExitNonzero), StartedAt: at(-secs(11)), FinishedAt: at(-secs(10.95))},
			{ID: "docs", Status: tasks.Pending, DependsOn: []string{"lint"}},
		}}
	for i := range snap.Tasks {
		snap.Tasks[i].Seq = i
	}
	return boardMsg{at: watchT0, graphID: snap.Graph.ID, changed: true, version: 7, snap: snap, view: tasks.AnalyzeGraph(snap),
		runner: tasks.RunnerInfo{ID: "r-1", Pid: 4242, Live: true},
		log:    &logTail{taskID: "build", attempt: 1, lines: 9, text: "compiling\n\x1b[1mstep 1\x1b[0m\nprogress 10%\rprogress 100%\n"}}
}

// newTestWatch is the screen of width x height after it read board.
func newTestWatch(t *testing.T, width, height int, board boardMsg) (*watchModel, *fakeSource) {
	t.Helper()
	src := &fakeSource{board: board}
	m := newWatchModel(src, "/work/ws", board.graphID)
	m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	if msgs := run(m.poll()); len(msgs) != 1 {
		t.Fatalf("the first poll sent %v, want one board", msgs)
	} else {
		m.Update(msgs[0])
	}
	return m, src
}

// screen is what the person sees: the frame's lines without colours, trailing spaces
// trimmed.
func screen(m *watchModel) []string {
	v := m.View()
	lines := strings.Split(ansi.Strip(v.Content), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return lines
}

// press types keys: a name Bubble Tea gives a key (up, enter, esc, ctrl+c) or a character.
func press(m *watchModel, keys ...string) tea.Cmd {
	var cmds []tea.Cmd
	for _, k := range keys {
		var msg tea.KeyPressMsg
		switch k {
		case "up":
			msg = tea.KeyPressMsg{Code: tea.KeyUp}
		case "down":
			msg = tea.KeyPressMsg{Code: tea.KeyDown}
		case "enter":
			msg = tea.KeyPressMsg{Code: tea.KeyEnter}
		case "esc":
			msg = tea.KeyPressMsg{Code: tea.KeyEscape}
		case "end":
			msg = tea.KeyPressMsg{Code: tea.KeyEnd}
		case "pgup":
			msg = tea.KeyPressMsg{Code: tea.KeyPgUp}
		case "ctrl+c":
			msg = tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
		default:
			r := []rune(k)[0]
			msg = tea.KeyPressMsg{Code: r, Text: k}
		}
		_, cmd := m.Update(msg)
		cmds = append(cmds, cmd)
	}
	return tea.Batch(cmds...)
}

func TestWatch_Screen(t *testing.T) {
	m, _ := newTestWatch(t, 100, 24, ciBoard())
	want := []string{
		`g-01TEST "ci"  running · running for 12s · server live (pid 4242)`,
		`████▒▒▒▒▒▒▒▒▒▒░░░░░░░░░░░░░░░░░░░  1/7 done · 1 failed · 2 running · 4 pending`,
		strings.Repeat("─", 100),
		"› ● build          running       10s",
		"  ○ └─ test        pending         -  waiting on build (running)",
		"  ○    └─ package  pending         -  waiting on test (pending), build (running)",
		"  ● serve          running      9.5s",
		"  ○ └─ smoke       pending         -  waiting on serve (running)",
		"  ✗ lint           failed       50ms  exit 3",
		"  ○ └─ docs        pending         -  blocked by lint (failed): it will be skipped",
		"", "", "", "", "", "",
		"── log of build · running · following " + strings.Repeat("─", 62),
		"compiling",
		"step 1",
		"progress 100%",
		"", "",
		"", // the status line
		"↑/↓ select · enter log · c cancel task · C cancel graph · [ ] graphs · q quit",
	}
	if diff := cmp.Diff(want, screen(m)); diff != "" {
		t.Errorf("screen (-want +got):\n%s", diff)
	}
	if v := m.View(); !v.AltScreen {
		t.Errorf("View().AltScreen = false, want the full-screen view on the alternate screen")
	}
	// Every line fits the width, colours included.
	for i, l := range strings.Split(m.View().Content, "\n") {
		if w := ansi.StringWidth(l); w > 100 {
			t.Errorf("line %d is %d columns wide, more than the terminal's 100: %q", i, w, l)
		}
	}
}

func TestWatch_NoGraphYet(t *testing.T) {
	m, src := newTestWatch(t, 80, 10, boardMsg{at: watchT0, listed: true})
	if got := screen(m); !slices.Contains(got, "no task graphs in /work/ws yet: waiting for the first") {
		t.Errorf("screen with no graph =\n%s\nwant it to say it waits for one", strings.Join(got, "\n"))
	}
	// The next poll lists the graphs again and takes the first that appears.
	b := ciBoard()
	b.listed, b.graphs = true, []tasks.Overview{{GraphHead: tasks.GraphHead{GraphID: "g-01TEST"}}}
	src.board = b
	m.now = watchT0.Add(watchListEvery)
	for _, msg := range run(m.poll()) {
		m.Update(msg)
	}
	if q, _ := src.lastReq(); q.graphID != "" || !q.list {
		t.Errorf("poll before any graph asked for %+v, want the list and no graph", q)
	}
	if got := screen(m)[0]; !strings.HasPrefix(got, `g-01TEST "ci"  running`) {
		t.Errorf("first line once a graph appeared = %q, want the graph", got)
	}
}

// Moving the selection reads the newly selected task's log at once, and the screen says
// it is reading it until it comes.
func TestWatch_SelectReadsLog(t *testing.T) {
	m, src := newTestWatch(t, 100, 24, ciBoard())
	m.loading = true // a read under way: the keys' read comes after it
	press(m, "j", "j", "j")
	if got := screen(m)[6]; !strings.HasPrefix(got, "› ● serve") {
		t.Fatalf("selected row after three downs = %q, want serve", got)
	}
	if got := screen(m)[17]; got != "reading…" {
		t.Errorf("log pane before serve's log came = %q, want reading…", got)
	}
	b := ciBoard()
	b.changed, b.log = false, &logTail{taskID: "serve", attempt: 1, lines: 5, text: "listening on :8080\n"}
	src.board = b
	_, n := src.lastReq()
	_, cmd := m.Update(b) // the read under way ends
	settle(m, cmd)
	q, n2 := src.lastReq()
	if n2 != n+1 || q.logTask != "serve" || q.logLines != 5 || q.version != 7 {
		t.Errorf("%d reads after the keys, the last %+v; want one, of serve's log, 5 lines (the pane), version 7", n2-n, q)
	}
	if got := screen(m)[17]; got != "listening on :8080" {
		t.Errorf("log pane = %q, want serve's log", got)
	}
	// Up on the first row stays, and reads nothing.
	settle(m, press(m, "g"))
	if cmd := press(m, "k"); cmd != nil {
		t.Errorf("up on the first row gave a command, want none")
	}
}

// A task's whole log is read once; the log of a running task at every poll.
func TestWatch_FinalLogReadOnce(t *testing.T) {
	b := ciBoard()
	m, src := newTestWatch(t, 100, 24, b)
	b.changed, b.log = false, &logTail{taskID: "lint", attempt: 1, final: true, lines: 5, text: "bad\n"}
	src.board = b
	settle(m, press(m, "G", "k")) // lint, the failed task
	if got := screen(m)[17]; got != "bad" {
		t.Errorf("log pane with lint selected = %q, want its log", got)
	}
	if q := m.request(); q.logTask != "" {
		t.Errorf("request after lint's whole log was read = %+v, want no log read", q)
	}
	settle(m, press(m, "k", "k")) // serve, running
	if q := m.request(); q.logTask != "serve" {
		t.Errorf("request with serve selected = %+v, want its log", q)
	}
}

func TestWatch_CancelTask(t *testing.T) {
	m, src := newTestWatch(t, 100, 24, ciBoard())
	settle(m, press(m, "down", "down", "down")) // serve
	if cmd := press(m, "c"); cmd != nil {
		t.Errorf("c gave a command before the answer")
	}
	if got := screen(m)[22]; got != "cancel task serve (running)? y/n" {
		t.Errorf("status line after c = %q, want the question", got)
	}
	// Any key but y keeps the task.
	press(m, "n")
	if got := screen(m)[22]; got != "not cancelled" || len(src.cancels) != 0 {
		t.Errorf("after n: status %q, cancels %v; want not cancelled and none", got, src.cancels)
	}
	press(m, "c")
	cmd := press(m, "y")
	if got := screen(m)[22]; got != "cancelling task serve…" {
		t.Errorf("status line while cancelling = %q", got)
	}
	src.done = cancelDoneMsg{graphID: "g-01TEST", ids: []string{"serve"}, report: tasks.CancelReport{GraphID: "g-01TEST", Tasks: []tasks.CancelOutcome{
		{ID: "serve", PreviousStatus: tasks.Running, Status: tasks.Cancelled, Outcome: tasks.OutcomeCancelled},
		{ID: "smoke", PreviousStatus: tasks.Pending, Status: tasks.Skipped, Outcome: tasks.OutcomeSkipped},
	}}}
	msgs := run(cmd)
	if diff := cmp.Diff([]cancelCall{{"g-01TEST", []string{"serve"}}}, src.cancels, cmp.AllowUnexported(cancelCall{})); diff != "" {
		t.Fatalf("cancels (-want +got):\n%s", diff)
	}
	_, before := src.lastReq()
	for _, msg := range msgs {
		_, cmd := m.Update(msg)
		settle(m, cmd)
	}
	if got := screen(m)[22]; got != "cancelled task serve: serve cancelled, smoke skipped" {
		t.Errorf("status line after the cancel = %q", got)
	}
	if _, n := src.lastReq(); n != before+1 {
		t.Errorf("the cancel's end read the store %d times, want once, to show it", n-before)
	}

	// A task that has ended is not asked about.
	settle(m, press(m, "G", "k")) // lint
	press(m, "c")
	if got := screen(m)[22]; got != "task lint has ended (failed): nothing to cancel" || m.confirm != nil {
		t.Errorf("c on an ended task: status %q, question %v", got, m.confirm)
	}

	// A cancel that fails says why.
	src.done = cancelDoneMsg{graphID: "g-01TEST", ids: []string{"build"}, err: fmt.Errorf("graph g-01TEST: %w", tasks.ErrOwnerGone)}
	settle(m, press(m, "g"))
	press(m, "c")
	settle(m, press(m, "y"))
	if got := screen(m)[22]; got != "cancel task build failed: graph g-01TEST: the server process that ran this graph is gone" {
		t.Errorf("status line after a failed cancel = %q", got)
	}
}

func TestWatch_CancelGraph(t *testing.T) {
	m, src := newTestWatch(t, 100, 24, ciBoard())
	press(m, "C")
	if got := screen(m)[22]; got != `cancel graph g-01TEST "ci": its 6 unfinished task(s)? y/n` {
		t.Errorf("status line after C = %q", got)
	}
	run(press(m, "y"))
	if diff := cmp.Diff([]cancelCall{{graphID: "g-01TEST"}}, src.cancels, cmp.AllowUnexported(cancelCall{})); diff != "" {
		t.Errorf("cancels (-want +got):\n%s", diff)
	}
}

func TestWatch_Quit(t *testing.T) {
	for _, k := range []string{"q", "ctrl+c"} {
		m, _ := newTestWatch(t, 100, 24, ciBoard())
		msgs := run(press(m, k))
		if len(msgs) != 1 {
			t.Errorf("%s sent %v, want a quit", k, msgs)
			continue
		}
		if _, ok := msgs[0].(tea.QuitMsg); !ok {
			t.Errorf("%s sent %T, want tea.QuitMsg", k, msgs[0])
		}
	}
	// While a cancel is asked about, q answers no rather than quit.
	m, _ := newTestWatch(t, 100, 24, ciBoard())
	press(m, "c")
	if cmd := press(m, "q"); cmd != nil {
		t.Errorf("q at the question gave a command, want it to answer no")
	}
}

// One read at a time: a tick during a read reads nothing; a key during a read reads
// again as soon as it returns.
func TestWatch_OneReadAtATime(t *testing.T) {
	m, src := newTestWatch(t, 100, 24, ciBoard())
	load := m.poll()
	if load == nil || !m.loading {
		t.Fatalf("poll() = %v, loading %v; want a read", load, m.loading)
	}
	_, tickCmd := m.Update(tickMsg(watchT0.Add(time.Second)))
	for _, msg := range run(tickCmd) { // the next tick only
		if _, ok := msg.(tickMsg); !ok {
			t.Errorf("tick during a read sent %T, want only the next tick", msg)
		}
	}
	if cmd := press(m, "j"); cmd != nil {
		t.Errorf("a key during a read gave a command, want the read after it")
	}
	_, n := src.lastReq()
	_, again := m.Update(run(load)[0])
	if again == nil {
		t.Fatalf("the read's end gave no command, want the read the key asked for")
	}
	run(again)
	if q, n2 := src.lastReq(); n2 != n+2 || q.logTask != "test" {
		t.Errorf("reads = %d then %+v, want two more, the last of test's log", n2-n, q)
	}
}

// A graph of a thousand tasks: the screen shows the rows that fit, and the selection
// moves through all of them.
func TestWatch_LargeGraph(t *testing.T) {
	var ts []tasks.Task
	for i := range 1000 {
		tk := tasks.Task{ID: fmt.Sprintf("t%04d", i), Seq: i, Status: tasks.Pending}
		if i > 0 {
			tk.DependsOn = []string{fmt.Sprintf("t%04d", (i-1)/2)}
		} else {
			tk.Status, tk.StartedAt, tk.Attempt = tasks.Running, at(-time.Second), 1
		}
		ts = append(ts, tk)
	}
	snap := tasks.Snapshot{Graph: tasks.Graph{ID: "g-01BIG", CreatedAt: watchT0}, Tasks: ts}
	b := boardMsg{at: watchT0, graphID: "g-01BIG", changed: true, version: 1, snap: snap, view: tasks.AnalyzeGraph(snap)}
	m, _ := newTestWatch(t, 120, 40, b)
	got := screen(m)
	if len(got) != 40 {
		t.Fatalf("screen has %d lines, want 40", len(got))
	}
	rows := 0
	for _, l := range got {
		if strings.HasPrefix(l, "  ○ ") || strings.HasPrefix(l, "› ") || strings.HasPrefix(l, "  ● ") {
			rows++
		}
	}
	if tree, _ := m.layout(); rows != tree {
		t.Errorf("%d task rows on screen, want %d (the tree's height)", rows, tree)
	}
	press(m, "end")
	got = screen(m)
	selected := slices.IndexFunc(got, func(l string) bool { return strings.HasPrefix(l, "›") })
	if selected < 0 || !strings.Contains(got[selected], "t0") {
		t.Fatalf("after end no task row is selected:\n%s", strings.Join(got, "\n"))
	}
	last := m.rows[len(m.rows)-1]
	if id := m.view.Nodes[last.node].ID; !strings.Contains(got[selected], id) {
		t.Errorf("selected row after end = %q, want the last row, %s", got[selected], id)
	}
	if !strings.Contains(strings.Join(got, "\n"), "t0999") {
		t.Errorf("t0999 is not on screen after end")
	}
	if strings.Contains(strings.Join(got, "\n"), "t0000") {
		t.Errorf("t0000 is still on screen after end: the tree did not scroll")
	}
	press(m, "pgup")
	if m.sel != len(m.rows)-1-(m.treeHeight()-1) {
		t.Errorf("pgup from the last row selected row %d, want %d", m.sel, len(m.rows)-1-(m.treeHeight()-1))
	}
}

// enter shows the log full-screen; scrolled back it stands still while the log grows,
// end follows it again, esc goes back.
func TestWatch_LogScreen(t *testing.T) {
	b := ciBoard()
	var text strings.Builder
	for i := range 100 {
		fmt.Fprintf(&text, "line %d\n", i)
	}
	b.log.text = text.String()
	m, src := newTestWatch(t, 80, 12, b)
	for _, msg := range run(press(m, "enter")) {
		m.Update(msg)
	}
	if q, _ := src.lastReq(); q.logLines != watchLogLines {
		t.Errorf("enter read %d lines, want %d to scroll back through", q.logLines, watchLogLines)
	}
	got := screen(m)
	if got[3] != "── log of build · running · following "+strings.Repeat("─", 42) || got[9] != "line 99" || got[4] != "line 94" {
		t.Errorf("log screen =\n%s", strings.Join(got, "\n"))
	}
	press(m, "k", "k")
	b.changed = false
	b.log = &logTail{taskID: "build", attempt: 1, lines: watchLogLines, text: text.String() + "line 100\n"}
	m.Update(b)
	got = screen(m)
	if got[9] != "line 97" || !strings.Contains(got[3], "2 lines up, end follows") {
		t.Errorf("scrolled back two lines while the log grew:\n%s", strings.Join(got, "\n"))
	}
	press(m, "end")
	if got := screen(m)[9]; got != "line 100" {
		t.Errorf("last line after end = %q, want line 100", got)
	}
	press(m, "g")
	if got := screen(m); got[4] != "line 0" || got[9] != "line 5" {
		t.Errorf("log screen after home shows %q to %q, want line 0 to line 5", got[4], got[9])
	}
	press(m, "esc")
	if got := screen(m)[3]; !strings.HasPrefix(got, "› ● build") {
		t.Errorf("after esc the first row = %q, want the tree back", got)
	}
}

func TestWatch_SwitchGraph(t *testing.T) {
	b := ciBoard()
	b.listed = true
	b.graphs = []tasks.Overview{{GraphHead: tasks.GraphHead{GraphID: "g-01NEWER"}}, {GraphHead: tasks.GraphHead{GraphID: "g-01TEST"}}, {GraphHead: tasks.GraphHead{GraphID: "g-01OLDER"}}}
	m, src := newTestWatch(t, 120, 24, b)
	if got := screen(m)[0]; !strings.HasSuffix(got, "graph 2 of 3 [ ]") {
		t.Errorf("header = %q, want where the graph is in the list", got)
	}
	run(press(m, "]"))
	if q, _ := src.lastReq(); q.graphID != "g-01OLDER" || q.version != -1 {
		t.Errorf("] read %+v, want the older graph, afresh", q)
	}
	if got := screen(m)[2]; got != "reading the graph…" {
		t.Errorf("screen while the other graph is read: %q", got)
	}
	// What a read of the graph left comes back: it is not shown.
	m.Update(ciBoard())
	if m.version != -1 {
		t.Errorf("a board of the graph left was taken: version %d", m.version)
	}
	run(press(m, "["))
	if q, _ := src.lastReq(); q.graphID != "g-01TEST" {
		t.Errorf("[ read %+v, want the newer graph", q)
	}
}

func TestWatch_ErrorsShowAndClear(t *testing.T) {
	m, _ := newTestWatch(t, 100, 24, ciBoard())
	m.Update(boardMsg{at: watchT0, graphID: "g-01TEST", err: fmt.Errorf("database is locked")})
	if got := screen(m)[22]; got != "reading the store: database is locked" {
		t.Errorf("status line after a failed read = %q", got)
	}
	if got := screen(m)[3]; !strings.HasPrefix(got, "› ● build") {
		t.Errorf("a failed read lost the graph: %q", got)
	}
	b := ciBoard()
	b.changed = false
	m.Update(b)
	if got := screen(m)[22]; got != "" {
		t.Errorf("status line after a good read = %q, want it cleared", got)
	}
}

func TestSplitLog(t *testing.T) {
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"", nil},
		{"a\nb\n", []string{"a", "b"}},
		{"a\r\nb", []string{"a", "b"}},
		{"10%\r50%\r100%\n", []string{"100%"}},
		{"\x1b[31mred\x1b[0m \x1b]0;title\x07ok\n", []string{"red ok"}},
		{"a\tb\n", []string{"a       b"}},
		{"bell\x07 nul\x00 bad\xff end\n", []string{"bell nul bad end"}},
	} {
		if got := splitLog(tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("splitLog(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestFitPlain(t *testing.T) {
	for _, tt := range []struct {
		s    string
		w    int
		want string
	}{
		{"abc", 3, "abc"}, {"abcd", 3, "ab…"}, {"abc", 0, ""}, {"日本語", 4, "日…"}, {"日本", 4, "日本"},
	} {
		if got := fitPlain(tt.s, tt.w); got != tt.want {
			t.Errorf("fitPlain(%q, %d) = %q, want %q", tt.s, tt.w, got, tt.want)
		}
	}
}
