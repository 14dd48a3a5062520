package pty

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// tmux's client polls only its socket; the server, a daemon started in the session,
// reads our terminal (the client passed it) and relays to each pane's terminal. A
// command working in the pane is not a question, one reading in the pane is, and
// `exit` in the pane ends tmux and the run at the shell's prompt.
func TestRelay_tmux(t *testing.T) {
	needLinuxInput(t)
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	sock := filepath.Join(t.TempDir(), "s")
	t.Cleanup(func() { _ = exec.Command(tmux, "-S", sock, "kill-server").Run() })
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	res, err := m.IO(t.Context(), id, Input{Run: "env -u TMUX " + tmux + " -S " + sock + " -f /dev/null new-session sh"}, ReadOptions{Timeout: waitLong})
	if err != nil || res.Reason != ReasonInput {
		t.Fatalf("run tmux = %v, reason %q, output %q; want input at the pane's shell", err, res.Reason, res.Output)
	}
	// d""one: the pane echoes the command line, and only the command's output says done.
	res, err = m.IO(t.Context(), id, Input{Data: []byte("sleep 2; echo d\"\"one\r")}, ReadOptions{WaitFor: regexp.MustCompile(`(?m)^done`), Timeout: waitLong})
	if err != nil || res.Reason != ReasonMatched {
		t.Fatalf("a command working in the pane = %v, reason %q, output %q; want it to run to \"done\", not input", err, res.Reason, res.Output)
	}
	res, err = m.IO(t.Context(), id, Input{Data: []byte("echo as\"\"k; read x; echo got $x\r")}, ReadOptions{Timeout: waitLong})
	if err != nil || res.Reason != ReasonInput || !strings.Contains(res.Output, "ask") {
		t.Fatalf("a question in the pane = %v, reason %q, output %q; want input after \"ask\"", err, res.Reason, res.Output)
	}
	mustIO(t, m, id, "yes\r", ReadOptions{WaitFor: regexp.MustCompile(`got yes`)})
	res, err = m.IO(t.Context(), id, Input{Data: []byte("exit\r")}, ReadOptions{Timeout: waitLong})
	if err != nil || res.Reason != ReasonPrompt || res.Command == nil || !res.Command.Done {
		t.Fatalf("exit in the pane = %v, reason %q, command %+v, output %q; want tmux to end and the run at its prompt", err, res.Reason, res.Command, res.Output)
	}
}

// asyncioScript asks a question and waits for the answer with asyncio's add_reader: an
// epoll on the terminal and on the loop's own socket pair (its wake-up), both ends of
// which the program holds.
const asyncioScript = `
import asyncio, sys
async def main():
    loop = asyncio.get_running_loop()
    got = asyncio.Future()
    print("Name? ", end="", flush=True)
    loop.add_reader(sys.stdin, lambda: got.done() or got.set_result(sys.stdin.readline()))
    print("got", (await got).strip())
asyncio.run(main())
`

// A socket whose other end is the program's own is no far side: an asyncio program's
// question is not held back by the quiet a relay's is.
func TestInput_asyncioSelfPipe(t *testing.T) {
	needLinuxInput(t)
	py := needPython(t)
	t.Cleanup(func() { goleak.VerifyNone(t) })
	script := filepath.Join(t.TempDir(), "asy.py")
	if err := os.WriteFile(script, []byte(asyncioScript), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	res, err := m.IO(t.Context(), id, Input{Run: py + " " + script}, ReadOptions{Timeout: waitLong})
	if err != nil || res.Reason != ReasonInput || res.WaitingForInput == nil || res.WaitingForInput.Prompt != "Name?" {
		t.Fatalf("run an asyncio question = %v, reason %q, waiting %+v; want input at \"Name?\"", err, res.Reason, res.WaitingForInput)
	}
	s, err := m.get("test", id)
	if err != nil {
		t.Fatal(err)
	}
	if fg, ok := s.foreground(); !ok || fg.opaque {
		t.Errorf("foreground = %+v, %v; want the program's own read, not an opaque relay", fg, ok)
	}
	mustIO(t, m, id, "Ann\r", ReadOptions{WaitFor: regexp.MustCompile(`got Ann`)})
}
