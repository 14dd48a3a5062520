package pty

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestManager_SessionID(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{SessionID: ServerSessionIDs(4)})
	for _, want := range []string{"s4-1", "s4-2"} {
		res := mustOpen(t, m, OpenOptions{Command: "echo hi"}, ReadOptions{WaitFor: regexp.MustCompile("hi")})
		if res.SessionID != want {
			t.Errorf("Open() id = %q, want %q", res.SessionID, want)
		}
	}
	// An unknown id names the sessions that exist, with their ids as given.
	_, err := m.IO(t.Context(), "s4-9", Input{}, ReadOptions{})
	if !errors.Is(err, ErrNoSession) || !strings.Contains(err.Error(), "s4-1, s4-2") {
		t.Errorf("IO(s4-9) = %v, want ErrNoSession naming s4-1, s4-2", err)
	}
}

func TestServerOf(t *testing.T) {
	for _, tc := range []struct {
		id     string
		server int
		ok     bool
	}{
		{"s4-2", 4, true},
		{"s12-130", 12, true},
		{"s1", 0, false},
		{"s0-1", 0, false},
		{"s04-1", 0, false},
		{"s4-", 0, false},
		{"s4-0", 0, false},
		{"x4-1", 0, false},
		{"s-1-2", 0, false},
	} {
		if server, ok := ServerOf(tc.id); server != tc.server || ok != tc.ok {
			t.Errorf("ServerOf(%q) = %d, %v, want %d, %v", tc.id, server, ok, tc.server, tc.ok)
		}
	}
}

func FuzzServerOf(f *testing.F) {
	for _, id := range []string{"s4-2", "s1", "s0-1", "s04-1", "s-1-2", "s9999999999999999999999-1"} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		server, ok := ServerOf(id)
		if !ok {
			return
		}
		// Every id it accepts is one ServerSessionIDs makes.
		_, seq, _ := strings.Cut(strings.TrimPrefix(id, "s"), "-")
		var k int
		for _, c := range seq {
			k = k*10 + int(c-'0')
		}
		if got := ServerSessionIDs(server)(k); got != id {
			t.Errorf("ServerOf(%q) = %d, but ServerSessionIDs(%d)(%d) = %q", id, server, server, k, got)
		}
	})
}

// nextFrame waits for a frame for which ok holds.
func nextFrame(t *testing.T, v *Viewer, what string, ok func(Frame) bool) Frame {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLong)
	defer cancel()
	var last Frame
	for {
		f, err := v.Next(ctx)
		if err != nil {
			t.Fatalf("Next() waiting for %s = %v; last frame %q", what, err, last.Lines)
		}
		if ok(f) {
			return f
		}
		last = f
	}
}

func frameHas(s string) func(Frame) bool {
	return func(f Frame) bool { return strings.Contains(stripSGR(strings.Join(f.Lines, "\n")), s) }
}

var sgr = regexp.MustCompile(`\x1b\[[0-9;:]*m`)

func stripSGR(s string) string { return sgr.ReplaceAllString(s, "") }

// A viewer sees the screen at once and follows it, without moving the agent's read
// cursor: what the agent has not read is still there for its next call.
func TestViewer_followsScreen(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	o := bash(t)
	o.Cols, o.Rows = 40, 10
	res := mustOpen(t, m, o, ReadOptions{WaitFor: prompt})
	mustIO(t, m, res.SessionID, "echo before_$((40+2))\n", ReadOptions{WaitFor: regexp.MustCompile(`(?m)^before_42`)})

	v, err := m.Attach(res.SessionID, AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	// The prompt after before_42 may be in the first frame or come in a later one.
	f := nextFrame(t, v, "the prompt after before_42", func(f Frame) bool {
		return f.CursorRow >= 0 && strings.HasPrefix(stripSGR(f.Lines[f.CursorRow]), "PROMPT>")
	})
	if !frameHas("before_42")(f) || f.Cols != 40 || f.Rows != 10 || len(f.Lines) != 10 || f.Viewers != 1 {
		t.Errorf("frame = %dx%d viewers %d lines %q, want 40x10, 1 viewer, before_42 on it", f.Cols, f.Rows, f.Viewers, f.Lines)
	}
	if want := "PROMPT> "; f.CursorCol != len(want) {
		t.Errorf("cursor at row %d col %d (%q), want after the prompt", f.CursorRow, f.CursorCol, f.Lines[f.CursorRow])
	}

	// Output the agent has not read: the viewer sees it, the agent's read still gets it.
	typed, err := m.IO(t.Context(), res.SessionID, Input{Data: []byte("echo after_$((40+3))\n")}, ReadOptions{Timeout: 0})
	if err != nil {
		t.Fatal(err)
	}
	nextFrame(t, v, "after_43", frameHas("after_43"))
	// From where the typing call's read began: it may have read some of the output.
	got := mustIO(t, m, res.SessionID, "", ReadOptions{Since: &typed.Since, WaitFor: regexp.MustCompile(`(?m)^after_43`)})
	if !strings.Contains(got.Output, "after_43") || got.Viewers != 1 || got.PersonTyped {
		t.Errorf("agent's read = %q, viewers %d, personTyped %v; want after_43, 1 viewer, no person input", got.Output, got.Viewers, got.PersonTyped)
	}
}

// A read-only viewer's keys reach nothing; once it writes, they do, and the agent's next
// result says a person typed (and the one after it does not).
func TestViewer_write(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, bash(t), ReadOptions{WaitFor: prompt})
	v, err := m.Attach(res.SessionID, AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if n, err := v.Write(t.Context(), []byte("echo ro_$((1+1))\r")); !errors.Is(err, ErrReadOnly) || n != 0 {
		t.Errorf("read-only Write() = %d, %v, want 0, ErrReadOnly", n, err)
	}
	v.SetWrite(true)
	if _, err := v.Write(t.Context(), []byte("echo rw_$((2+1))\r")); err != nil {
		t.Fatal(err)
	}
	got := mustIO(t, m, res.SessionID, "", ReadOptions{WaitFor: regexp.MustCompile(`(?m)^rw_3`)})
	if strings.Contains(got.Output, "ro_") || !got.PersonTyped {
		t.Errorf("agent's read after the person typed = %q, personTyped %v; want rw_3 only, true", got.Output, got.PersonTyped)
	}
	if info, _ := m.Get(res.SessionID); info.PersonTyped || info.Viewers != 1 {
		t.Errorf("Get() after the agent's read: personTyped %v viewers %d, want false, 1", info.PersonTyped, info.Viewers)
	}
	again := mustIO(t, m, res.SessionID, "echo agent\n", ReadOptions{WaitFor: regexp.MustCompile(`(?m)^agent`)})
	if again.PersonTyped {
		t.Errorf("the agent's next result says personTyped again")
	}
	v.Close()
	if _, err := v.Write(t.Context(), []byte("x")); !errors.Is(err, ErrViewerClosed) {
		t.Errorf("Write() after Close = %v, want ErrViewerClosed", err)
	}
	if _, err := v.Next(t.Context()); !errors.Is(err, ErrViewerClosed) {
		t.Errorf("Next() after Close = %v, want ErrViewerClosed", err)
	}
	if info, _ := m.Get(res.SessionID); info.Viewers != 0 {
		t.Errorf("Get().Viewers after Close = %d, want 0", info.Viewers)
	}
}

// A view smaller than the screen follows the cursor; a larger one is padded with blank
// rows. With Resize the session takes the person's size.
func TestViewer_sizes(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, OpenOptions{Command: "printf 'r1\\nr2\\nr3\\nr4 0123456789ABCDEF'; exec cat", Cols: 20, Rows: 6},
		ReadOptions{WaitFor: regexp.MustCompile("ABCDEF")})
	small, err := m.Attach(res.SessionID, AttachOptions{Cols: 10, Rows: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	f := nextFrame(t, small, "a frame", func(Frame) bool { return true })
	// The cursor is after the last character, column 19: the view ends there.
	want := []string{"", "789ABCDEF"}
	if got := []string{stripSGR(f.Lines[0]), stripSGR(f.Lines[1])}; !equalStrings(got, want) || f.Top != 2 || f.Left != 10 || f.CursorRow != 1 || f.CursorCol != 9 {
		t.Errorf("10x2 view = %q top %d left %d cursor %d,%d; want %q top 2 left 10 cursor 1,9", got, f.Top, f.Left, f.CursorRow, f.CursorCol, want)
	}
	big, err := m.Attach(res.SessionID, AttachOptions{Cols: 30, Rows: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	f = nextFrame(t, big, "a frame", func(Frame) bool { return true })
	if len(f.Lines) != 8 || f.Lines[6] != "" || f.Lines[7] != "" || f.ScreenCols != 20 || f.ScreenRows != 6 || f.Viewers != 2 {
		t.Errorf("30x8 view of 20x6 = %q (screen %dx%d, viewers %d), want 8 rows, the last two blank, 2 viewers", f.Lines, f.ScreenCols, f.ScreenRows, f.Viewers)
	}
	if info, _ := m.Get(res.SessionID); info.Cols != 20 || info.Rows != 6 {
		t.Errorf("the session's size after views = %dx%d, want 20x6 kept", info.Cols, info.Rows)
	}
	resizing, err := m.Attach(res.SessionID, AttachOptions{Cols: 30, Rows: 8, Resize: true})
	if err != nil {
		t.Fatal(err)
	}
	defer resizing.Close()
	if err := resizing.SetSize(32, 9); err != nil {
		t.Fatal(err)
	}
	if info, _ := m.Get(res.SessionID); info.Cols != 32 || info.Rows != 9 {
		t.Errorf("the session's size after a resizing view = %dx%d, want 32x9", info.Cols, info.Rows)
	}
	nextFrame(t, big, "the screen at 32x9", func(f Frame) bool { return f.ScreenCols == 32 && f.ScreenRows == 9 })
}

func equalStrings(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// The program's exit ends the view: a last frame with its output and the exit status,
// then ErrExited; an exited session cannot be attached.
func TestViewer_exit(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, OpenOptions{Command: "read x; echo bye_$x; exit 3"}, ReadOptions{})
	v, err := m.Attach(res.SessionID, AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	nextFrame(t, v, "the first frame", func(Frame) bool { return true })
	mustIO(t, m, res.SessionID, "now\n", ReadOptions{WaitFor: never})
	f := nextFrame(t, v, "the last frame", func(f Frame) bool { return f.Exited })
	if !frameHas("bye_now")(f) || f.ExitCode == nil || *f.ExitCode != 3 {
		t.Errorf("last frame %q exit %v, want bye_now and exit code 3", f.Lines, f.ExitCode)
	}
	if _, err := v.Next(t.Context()); !errors.Is(err, ErrExited) {
		t.Errorf("Next() after the last frame = %v, want ErrExited", err)
	}
	if _, err := m.Attach(res.SessionID, AttachOptions{}); !errors.Is(err, ErrExited) {
		t.Errorf("Attach(exited session) = %v, want ErrExited", err)
	}
	if _, err := m.Attach("s99", AttachOptions{}); !errors.Is(err, ErrNoSession) {
		t.Errorf("Attach(unknown) = %v, want ErrNoSession", err)
	}
}

// Closing the session (or shutting the Manager down) ends a viewer's wait.
func TestViewer_closedSession(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, OpenOptions{Command: "exec cat"}, ReadOptions{})
	v, err := m.Attach(res.SessionID, AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	nextFrame(t, v, "the first frame", func(Frame) bool { return true })
	done := make(chan error, 1)
	go func() {
		for {
			f, err := v.Next(t.Context())
			if err != nil || f.Exited {
				done <- err
				return
			}
		}
	}()
	if _, err := m.Close(t.Context(), res.SessionID, syscall.SIGHUP, DefaultGrace); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Next() as the session closed = %v, want the last frame", err)
		}
	case <-time.After(waitLong):
		t.Fatal("Next() still waiting after the session was closed")
	}
}

// A flood of output costs a viewer about ten frames a second, each of the newest screen.
func TestViewer_floodCoalesced(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, bash(t), ReadOptions{WaitFor: prompt})
	v, err := m.Attach(res.SessionID, AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	nextFrame(t, v, "the first frame", func(Frame) bool { return true })
	// About 20 MB of numbered lines, then a last line to wait for.
	start := time.Now()
	if _, err := m.IO(t.Context(), res.SessionID, Input{Data: []byte("seq 1 3000000; echo FLOOD_$((6*7))\n")}, ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	frames := 0
	nextFrame(t, v, "the end of the flood", func(f Frame) bool { frames++; return frameHas("FLOOD_42")(f) })
	took := time.Since(start)
	if most := int(took/bulkFrameGap) + 10; frames > most {
		t.Errorf("%d frames in %v of flood, want at most %d", frames, took, most)
	}
	t.Logf("%d frames in %v of flood", frames, took)
}
