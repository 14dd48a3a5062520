package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcp-harness/mcp-harness/internal/procid"
	"github.com/mcp-harness/mcp-harness/pty"
)

const waitLong = 30 * time.Second

// deepDir is a state directory whose path is far longer than a socket address can hold.
func deepDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), strings.Repeat("a-rather-long-directory-name-", 3), strings.Repeat("and-another-one-", 4), ".mcp-harness")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if len(dir) < 200 {
		t.Fatalf("state dir %q is only %d bytes", dir, len(dir))
	}
	return dir
}

type fixture struct {
	dir string
	m   *pty.Manager
	srv *Server
}

func start(t *testing.T) *fixture { t.Helper(); return startWith(t, nil) }

// startWith is start with the server's Config changed by edit first.
func startWith(t *testing.T, edit func(*Config)) *fixture {
	t.Helper()
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	f := &fixture{dir: deepDir(t), m: pty.NewManager(pty.Config{SessionID: pty.ServerSessionIDs(7), Logger: log})}
	t.Cleanup(func() {
		if err := f.m.Shutdown(context.WithoutCancel(t.Context())); err != nil {
			t.Errorf("Shutdown() = %v", err)
		}
	})
	cfg := Config{StateDir: f.dir, Sessions: f.m, Logger: log,
		Server: ServerInfo{Number: 7, Pid: os.Getpid(), Version: "test", Workspace: "/ws"}, RunnerID: func() string { return "r-TEST" }}
	if edit != nil {
		edit(&cfg)
		f.dir = cfg.StateDir
	}
	srv, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	t.Cleanup(func() {
		if err := srv.Close(context.WithoutCancel(t.Context())); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	return f
}

func (f *fixture) dial(t *testing.T) *Client {
	t.Helper()
	eps, err := Endpoints(f.dir)
	if err != nil || len(eps) != 1 {
		t.Fatalf("Endpoints() = %v, %v, want this server's", eps, err)
	}
	c, err := Dial(f.dir, eps[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(waitLong)); err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fixture) shell(t *testing.T) string {
	t.Helper()
	res, err := f.m.Open(t.Context(), pty.OpenOptions{Command: "exec bash --norc --noprofile -i",
		Env: map[string]string{"PS1": "PROMPT> ", "HOME": t.TempDir(), "HISTFILE": "/dev/null"}},
		pty.ReadOptions{WaitFor: regexp.MustCompile(`PROMPT> $`), Timeout: waitLong})
	if err != nil {
		t.Fatal(err)
	}
	return res.SessionID
}

// The socket is made in a state directory too deep for a socket address, 0600, found and
// reached by its name, and removed by Close.
func TestListen_longStateDir(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := start(t)
	fi, err := os.Stat(filepath.Join(f.dir, f.srv.Name()))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode = %v, want a socket, 0600", fi.Mode())
	}
	r, err := f.dial(t).Call(Request{Op: OpHello})
	if err != nil {
		t.Fatal(err)
	}
	if r.Server == nil || r.Server.Number != 7 || r.Server.RunnerID != "r-TEST" || r.Server.Pid != os.Getpid() {
		t.Errorf("hello = %+v, want server 7, runner r-TEST, this pid", r.Server)
	}
	if err := f.srv.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if eps, _ := Endpoints(f.dir); len(eps) != 0 {
		t.Errorf("Endpoints() after Close = %v, want none", eps)
	}
}

// A socket whose process is gone is removed by Reconcile (and by the next server's
// Listen); a live one is not.
func TestReconcile(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	dir := t.TempDir()
	// A process that has exited: its pid and start time name a dead server.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("op-3-%d-1.sock", cmd.Process.Pid)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, stale), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := Listen(Config{StateDir: dir, Sessions: pty.NewManager(pty.Config{Logger: log}), Server: ServerInfo{Number: 4}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.WithoutCancel(t.Context()))
	eps, err := Endpoints(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != 1 || eps[0].Number != 4 || !eps[0].Live() {
		t.Errorf("Endpoints() after Listen = %+v, want only server 4's, live", eps)
	}
	if removed, err := Reconcile(dir); err != nil || len(removed) != 0 {
		t.Errorf("Reconcile() with only a live server = %v, %v, want nothing removed", removed, err)
	}
}

// sessions lists every session with what it does now.
func TestServer_sessions(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := start(t)
	id := f.shell(t)
	out, err := Survey(t.Context(), f.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].Err != nil || out[0].Server.Number != 7 || len(out[0].Sessions) != 1 {
		t.Fatalf("Survey() = %+v, want server 7 with one session", out)
	}
	s := out[0].Sessions[0]
	if s.SessionID != id || s.State != pty.StateRunning && s.State != pty.StatePrompt || s.Server.Number != 7 || s.Cols != pty.DefaultCols {
		t.Errorf("session = %+v, want %s, its server and size", s, id)
	}
}

// A view: the first frame, read-only keys that reach nothing, write mode whose keys do,
// the agent told a person typed, detach.
func TestServer_attach(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := start(t)
	id := f.shell(t)
	c := f.dial(t)
	r, err := c.Call(Request{Op: OpAttach, Session: id, Cols: 60, Rows: 10})
	if err != nil {
		t.Fatal(err)
	}
	if r.Attached == nil || r.Attached.SessionID != id {
		t.Fatalf("attach = %+v, want attached to %s", r, id)
	}
	var screen []string
	frame := func(what string, ok func(*Frame) bool) *Frame {
		t.Helper()
		for {
			r, err := c.Recv()
			if err != nil {
				t.Fatalf("waiting for %s: %v", what, err)
			}
			if r.Frame == nil {
				continue
			}
			screen = r.Frame.Apply(screen)
			r.Frame.Lines = screen
			if ok(r.Frame) {
				return r.Frame
			}
		}
	}
	has := func(s string) func(*Frame) bool {
		return func(f *Frame) bool { return strings.Contains(strings.Join(f.Lines, "\n"), s) }
	}
	first := frame("the first frame", func(*Frame) bool { return true })
	if first.Cols != 60 || first.Rows != 10 || first.Viewers != 1 || !has("PROMPT>")(first) {
		t.Errorf("first frame = %+v, want 60x10 with the prompt, 1 viewer", first)
	}
	// Read-only: the keys are dropped.
	if err := c.Send(Request{Op: OpInput, Data: []byte("echo RO_$((1+1))\r")}); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(Request{Op: OpWrite, On: true}); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(Request{Op: OpInput, Data: []byte("echo RW_$((2+1))\r")}); err != nil {
		t.Fatal(err)
	}
	frame("RW_3 printed", has("\nRW_3"))
	res, err := f.m.IO(t.Context(), id, pty.Input{}, pty.ReadOptions{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Output, "RO_") || !strings.Contains(res.Output, "RW_3") || !res.PersonTyped || res.Viewers != 1 {
		t.Errorf("agent's read = %q personTyped %v viewers %d; want RW_3 only, a person typed, 1 viewer", res.Output, res.PersonTyped, res.Viewers)
	}
	if err := c.Send(Request{Op: OpDetach}); err != nil {
		t.Fatal(err)
	}
	for {
		r, err := c.Recv()
		if err != nil {
			t.Fatalf("waiting for the end of the view: %v", err)
		}
		if r.End != nil {
			if r.End.Reason != EndDetached {
				t.Errorf("end = %+v, want detached", r.End)
			}
			break
		}
	}
	if _, err := c.Recv(); err != io.EOF {
		t.Errorf("Recv() after the end = %v, want EOF", err)
	}
}

// An unknown session and an exited one are refused with their codes.
func TestServer_attachRefused(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := start(t)
	res, err := f.m.Open(t.Context(), pty.OpenOptions{Command: "true"}, pty.ReadOptions{Timeout: waitLong, WaitFor: regexp.MustCompile(`[^\s\S]`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ session, code string }{{"s7-99", CodeNotFound}, {res.SessionID, CodeExited}} {
		_, err := f.dial(t).Call(Request{Op: OpAttach, Session: tc.session})
		var e *Error
		if !errors.As(err, &e) || e.Code != tc.code {
			t.Errorf("attach %s = %v, want %s", tc.session, err, tc.code)
		}
	}
}

// answer writes a password to read -s; a second answer while one is pending is refused;
// the agent's output and the server's log never hold it.
func TestServer_answer(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var logs strings.Builder
	f := start(t)
	f.srv.log = slog.New(slog.NewTextHandler(&lockedWriter{w: &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	id := f.shell(t)
	res, err := f.m.IO(t.Context(), id, pty.Input{Data: []byte("read -rs -p 'Pass: ' pw; echo; echo len=${#pw}\n")}, pty.ReadOptions{Timeout: waitLong, WaitFor: regexp.MustCompile(`[^\s\S]`)})
	if err != nil || res.Reason != pty.ReasonInput {
		t.Fatalf("read -s = %v, reason %q, want input", err, res.Reason)
	}
	c := f.dial(t)
	r, err := c.Call(Request{Op: OpAnswer, Session: id})
	if err != nil {
		t.Fatal(err)
	}
	if r.Asking == nil || r.Asking.Kind != pty.InputPassword || r.Asking.Prompt != "Pass:" {
		t.Fatalf("answer = %+v, want asking for a password at Pass:", r)
	}
	_, err = f.dial(t).Call(Request{Op: OpAnswer, Session: id})
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeAnswerPending {
		t.Errorf("second answer = %v, want %s", err, CodeAnswerPending)
	}
	const secret = "s3cr3t-Passw0rd"
	r, err = c.Call(Request{Op: OpLine, Data: []byte(secret)})
	if err != nil || !r.Answered {
		t.Fatalf("line = %+v, %v, want answered", r, err)
	}
	got, err := f.m.IO(t.Context(), id, pty.Input{}, pty.ReadOptions{Timeout: waitLong, WaitFor: regexp.MustCompile(`len=\d+`)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Output, fmt.Sprintf("len=%d", len(secret))) || strings.Contains(got.Output, secret) || !got.PersonTyped {
		t.Errorf("after the answer the agent reads %q (personTyped %v), want the length only", got.Output, got.PersonTyped)
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the server's log holds the secret:\n%s", logs.String())
	}
	// Nothing asks now: refused.
	_, err = f.dial(t).Call(Request{Op: OpAnswer, Session: id})
	if !errors.As(err, &e) || e.Code != CodeNotAsking {
		t.Errorf("answer at the prompt = %v, want %s", err, CodeNotAsking)
	}
}

// Close ends a view with an End saying the server is shutting down, and every goroutine.
func TestServer_closeEndsViews(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := start(t)
	id := f.shell(t)
	c := f.dial(t)
	if _, err := c.Call(Request{Op: OpAttach, Session: id}); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Recv(); err != nil || r.Frame == nil {
		t.Fatalf("first frame = %+v, %v", r, err)
	}
	// An answer waiting for its line, too.
	a := f.dial(t)
	if _, err := f.m.IO(t.Context(), id, pty.Input{Data: []byte("read -r x\n")}, pty.ReadOptions{Timeout: waitLong, WaitFor: regexp.MustCompile(`[^\s\S]`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Call(Request{Op: OpAnswer, Session: id}); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	for {
		r, err := c.Recv()
		if err != nil {
			t.Fatalf("view after Close: %v before an End", err)
		}
		if r.End != nil {
			if r.End.Reason != EndShutdown {
				t.Errorf("end = %+v, want %s", r.End, EndShutdown)
			}
			break
		}
	}
	if _, err := a.Recv(); err != io.EOF {
		t.Errorf("a pending answer after Close: %v, want EOF", err)
	}
	if _, err := Dial(f.dir, Endpoint{Number: 7, Pid: os.Getpid(), Name: f.srv.Name(), start: mustStart(t)}); !errors.Is(err, ErrGone) {
		t.Errorf("Dial() after Close = %v, want ErrGone", err)
	}
}

// mustStart is this process's start time, as its socket names carry it.
func mustStart(t *testing.T) uint64 {
	t.Helper()
	start := procid.Identify(os.Getpid()).ProcStart
	if start == 0 {
		t.Fatal("this process's start time cannot be read")
	}
	return start
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestFrame_Apply(t *testing.T) {
	full := &Frame{Rows: 3, Lines: []string{"a", "b", "c"}}
	screen := full.Apply(nil)
	upd := &Frame{Rows: 3, Update: []RowUpdate{{Row: 1, Text: "B"}, {Row: 9, Text: "ignored"}}}
	got := upd.Apply(screen)
	if strings.Join(got, ",") != "a,B,c" || strings.Join(screen, ",") != "a,b,c" {
		t.Errorf("Apply(update) = %q (before: %q), want a,B,c and the screen before unchanged", got, screen)
	}
	// A frame of another size carries every row; an update that does not fit the screen
	// before is taken as blank rows.
	if got := (&Frame{Rows: 2, Lines: []string{"x", "y"}}).Apply(got); strings.Join(got, ",") != "x,y" {
		t.Errorf("Apply(resized) = %q, want x,y", got)
	}
	if got := (&Frame{Rows: 2, Update: []RowUpdate{{Row: 0, Text: "z"}}}).Apply([]string{"a", "b", "c"}); len(got) != 2 {
		t.Errorf("Apply(update of another size) = %q, want 2 rows", got)
	}
	// frameOf sends only what changed.
	f := frameOf(pty.Frame{Rows: 3, Lines: []string{"a", "B", "c"}}, []string{"a", "b", "c"})
	if f.Lines != nil || len(f.Update) != 1 || f.Update[0] != (RowUpdate{Row: 1, Text: "B"}) {
		t.Errorf("frameOf(one row changed) = %+v, want that row alone", f)
	}
}
