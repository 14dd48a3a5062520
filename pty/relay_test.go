package pty

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// needLinuxInput skips a test that needs the kernel's view of the terminal.
func needLinuxInput(t *testing.T) {
	t.Helper()
	if !foregroundKnown {
		t.Skip("needs the kernel's view of the terminal")
	}
}

// needSudo skips a test unless sudo runs commands without asking (root, or NOPASSWD)
// and relays through a terminal of its own (Defaults use_pty, Debian's default), which
// is what the test is about.
func needSudo(t *testing.T) {
	t.Helper()
	needLinuxInput(t)
	if _, err := exec.LookPath("sudo"); err != nil {
		t.Skip("sudo is not installed")
	}
	if err := exec.Command("sudo", "-n", "true").Run(); err != nil {
		t.Skipf("sudo asks for a password here: %v", err)
	}
	out, _ := exec.Command("sudo", "-n", "-l").CombinedOutput()
	if !strings.Contains(string(out), "use_pty") {
		t.Skip("sudo does not relay through a terminal of its own (no Defaults use_pty)")
	}
}

// A program working behind a relay (sudo with use_pty, script) is not waiting for
// input: the relay reads the terminal only to pass keys on, and what runs on its inner
// terminal does not read. The run ends at its prompt with all of the output.
func TestRelay_working(t *testing.T) {
	needLinuxInput(t)
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	lines := []string{"script -q -c 'sleep 1; echo after' /dev/null"}
	if _, err := exec.LookPath("script"); err != nil {
		lines = nil
		t.Log("script is not installed: only sudo")
	}
	if _, err := exec.LookPath("sudo"); err == nil && exec.Command("sudo", "-n", "true").Run() == nil {
		lines = append(lines, "sudo sh -c 'sleep 1; echo after'")
	}
	if len(lines) == 0 {
		t.Skip("neither script nor a sudo without a password is here")
	}
	for _, line := range lines {
		res, err := m.IO(t.Context(), id, Input{Run: line}, ReadOptions{Timeout: waitLong})
		if err != nil || res.Reason != ReasonPrompt || res.Command == nil || !res.Command.Done || !strings.Contains(res.Output, "after") {
			t.Fatalf("run %q = %v, reason %q, waiting %+v, output %q; want it to end at its prompt with \"after\"", line, err, res.Reason, res.WaitingForInput, res.Output)
		}
	}
}

// A password prompt behind sudo's relay is a password question: the inner terminal's
// modes say so, not the raw mode sudo puts ours in.
func TestRelay_sudoPassword(t *testing.T) {
	needSudo(t)
	needPython(t)
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	res, err := m.IO(t.Context(), id, Input{Run: `sudo python3 -c 'import getpass; print("got", getpass.getpass("Secret: "))'`}, ReadOptions{Timeout: waitLong})
	if err != nil || res.Reason != ReasonInput || res.WaitingForInput == nil || res.WaitingForInput.Kind != InputPassword || res.WaitingForInput.Prompt != "Secret:" {
		t.Fatalf("run sudo getpass = %v, reason %q, waiting %+v; want input, password at \"Secret:\"", err, res.Reason, res.WaitingForInput)
	}
	res = mustIO(t, m, id, "hunter2\r", ReadOptions{WaitFor: regexp.MustCompile(`got hunter2`)})
	if res.Reason != ReasonMatched {
		t.Errorf("answering the password: reason %q output %q, want the program to get it", res.Reason, res.Output)
	}
}

// relayScript relays the terminal to a command over a socket pair, as ssh does to a
// remote machine: the command runs in a session of its own, with no terminal, so
// nothing on the far side can be seen from here.
const relayScript = `
import os, select, socket, subprocess, sys, termios, tty
a, b = socket.socketpair()
p = subprocess.Popen(sys.argv[1:], stdin=b, stdout=b, stderr=b, start_new_session=True)
b.close()
old = termios.tcgetattr(0)
tty.setraw(0)
try:
    while True:
        r, _, _ = select.select([0, a], [], [])
        if 0 in r:
            a.sendall(os.read(0, 1024))
        if a in r:
            d = a.recv(1024)
            if not d:
                break
            os.write(1, d.replace(b'\n', b'\r\n'))
finally:
    termios.tcsetattr(0, termios.TCSAFLUSH, old)
p.wait()
`

// Where the relay's far side cannot be seen, output that still flows is not a question,
// and a question is reported once: a read without input after it waits for new output.
func TestRelay_opaque(t *testing.T) {
	needLinuxInput(t)
	py := needPython(t)
	t.Cleanup(func() { goleak.VerifyNone(t) })
	script := filepath.Join(t.TempDir(), "relay.py")
	if err := os.WriteFile(script, []byte(relayScript), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	far := `for i in $(seq 15); do echo tick $i; sleep 0.1; done; echo ask; read a; echo got $a`
	res, err := m.IO(t.Context(), id, Input{Run: py + " " + script + " sh -c " + shQuote(far)}, ReadOptions{Timeout: waitLong})
	if err != nil || res.Reason != ReasonInput || !strings.Contains(res.Output, "ask") {
		t.Fatalf("run through an opaque relay = %v, reason %q, output %q; want input only once the output stopped, after \"ask\"", err, res.Reason, res.Output)
	}
	res, err = m.IO(t.Context(), id, Input{}, ReadOptions{Timeout: 300 * time.Millisecond})
	if err != nil || res.Reason == ReasonInput {
		t.Fatalf("read without input after input = %v, reason %q; want it to wait for new output, not input again", err, res.Reason)
	}
	answered := mustIO(t, m, id, "yes\n", ReadOptions{WaitFor: regexp.MustCompile(`got yes`)})
	if answered.Reason != ReasonMatched {
		t.Fatalf("answer through the relay: reason %q output %q, want the far side to get it", answered.Reason, answered.Output)
	}
	// The prompt may come with the answer's output or after it: the command's end is in
	// whichever result returned it.
	res = mustIO(t, m, id, "", ReadOptions{Timeout: waitLong})
	done := func(r ReadResult) bool { return r.Command != nil && r.Command.Done }
	if res.Reason != ReasonPrompt || !done(res) && !done(answered) {
		t.Errorf("read after the relay ended = reason %q command %+v (the answer's %+v), want its prompt and the command done", res.Reason, res.Command, answered.Command)
	}
}

// A silent reader has no prompt (not the shell's echoed command line), a program that
// asks has its question, and a question already answered "input" is not asked again by
// a read without input: that read waits for new output or its timeout.
func TestInput_promptAndOnce(t *testing.T) {
	needLinuxInput(t)
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	res, err := m.IO(t.Context(), id, Input{Run: "cat"}, ReadOptions{Timeout: waitLong})
	if err != nil || res.Reason != ReasonInput || res.WaitingForInput == nil || res.WaitingForInput.Prompt != "" {
		t.Fatalf("run cat = %v, reason %q, waiting %+v; want input with no prompt", err, res.Reason, res.WaitingForInput)
	}
	res, err = m.IO(t.Context(), id, Input{}, ReadOptions{Timeout: 300 * time.Millisecond})
	if err != nil || res.Reason != ReasonTimeout {
		t.Fatalf("read without input after input = %v, reason %q; want the timeout, not input again", err, res.Reason)
	}
	res = mustIO(t, m, id, "hello\n", ReadOptions{WaitFor: regexp.MustCompile(`(?m)^hello\r?\n`)})
	if res.Reason != ReasonMatched {
		t.Fatalf("typing to cat: reason %q output %q", res.Reason, res.Output)
	}
	// New output makes a new quiet state: cat still waits, and says so.
	res = mustIO(t, m, id, "", ReadOptions{})
	if res.Reason != ReasonInput {
		t.Fatalf("read after cat's new output = reason %q output %q, want input", res.Reason, res.Output)
	}
	keys, _ := ParseKeys([]string{"C-d"})
	if res = mustIO(t, m, id, string(keys), ReadOptions{}); res.Reason != ReasonPrompt {
		t.Fatalf("C-d to cat = reason %q, want its prompt", res.Reason)
	}
	res, err = m.IO(t.Context(), id, Input{Run: `read -p "Name? " x`}, ReadOptions{Timeout: waitLong})
	if err != nil || res.Reason != ReasonInput || res.WaitingForInput == nil || res.WaitingForInput.Prompt != "Name?" {
		t.Fatalf("run read -p = %v, reason %q, waiting %+v; want input at \"Name?\"", err, res.Reason, res.WaitingForInput)
	}
}

// A read without input at the prompt while a background job runs is a long-poll read:
// it waits for the job's output.
func TestRead_backgroundJob(t *testing.T) {
	needLinuxInput(t)
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	run(t, m, id, "(sleep 1; echo late) &")
	res := mustIO(t, m, id, "", ReadOptions{Timeout: waitLong})
	if !strings.Contains(res.Output, "late") || res.Reason == ReasonTimeout {
		t.Fatalf("read with a background job running = reason %q output %q; want it to wait for \"late\"", res.Reason, res.Output)
	}
	// With no job left that can print (a stopped one, one writing elsewhere) the prompt
	// answers at once.
	run(t, m, id, "sleep 30 & kill -STOP $!; sleep 30 >/dev/null 2>&1 &")
	res = mustIO(t, m, id, "", ReadOptions{Timeout: waitLong})
	if res.Reason != ReasonPrompt {
		t.Errorf("read with only a stopped job and a quiet one = reason %q output %q, want the prompt at once", res.Reason, res.Output)
	}
	if res := run(t, m, id, "kill -KILL $(jobs -p); wait"); exitOf(res) != 0 {
		t.Errorf("ending the jobs: exit %d, output %q", exitOf(res), res.Output)
	}
}

// gpg asks for a passphrase through gpg-agent's pinentry-curses, which opens the
// terminal by name from a session of its own while gpg, the foreground, waits on the
// agent's socket: the dialog is a question all the same.
func TestInput_pinentry(t *testing.T) {
	needLinuxInput(t)
	gpg, err1 := exec.LookPath("gpg")
	pinentry, err2 := exec.LookPath("pinentry-curses")
	gpgconf, err3 := exec.LookPath("gpgconf")
	if err1 != nil || err2 != nil || err3 != nil {
		t.Skip("gpg, gpgconf or pinentry-curses is not installed")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	home, err := os.MkdirTemp("", "gpg")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "gpg-agent.conf"), []byte("pinentry-program "+pinentry+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "in.txt"), []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The agent is a daemon of its own: ending it ends its pinentry too.
		kill := exec.Command(gpgconf, "--kill", "gpg-agent")
		kill.Env = append(os.Environ(), "GNUPGHOME="+home)
		if out, err := kill.CombinedOutput(); err != nil {
			t.Errorf("gpgconf --kill gpg-agent: %v %s", err, out)
		}
		os.RemoveAll(home)
	})
	os.Chmod(home, 0o700)
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	line := "GNUPGHOME=" + home + " " + gpg + " --pinentry-mode ask --symmetric -o " + filepath.Join(home, "out.gpg") + " " + filepath.Join(home, "in.txt")
	res, err := m.IO(t.Context(), id, Input{Run: line}, ReadOptions{Timeout: waitLong})
	if err != nil || res.Reason != ReasonInput || res.WaitingForInput == nil {
		t.Fatalf("run gpg --symmetric = %v, reason %q, waiting %+v; want input at pinentry's dialog", err, res.Reason, res.WaitingForInput)
	}
	// The agent's end does not end a pinentry that reads a terminal: end it here.
	s, err := m.get("test", id)
	if err != nil {
		t.Fatal(err)
	}
	// A look at the foreground answers "not now" while output is still on its way to the
	// reader or the modes change under it (curses redrawing the dialog on a loaded
	// machine): looked at until it answers, as the next wait would.
	var fg foregroundRead
	eventually(t, "a reader other than the shell in the foreground", func() bool {
		var ok bool
		fg, ok = s.foreground()
		return ok && fg.pid != s.pid
	})
	if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(fg.pid) + "/comm"); !strings.HasPrefix(string(comm), "pinentry") {
		t.Errorf("the process that waits is %q, want pinentry", comm)
	}
	if err := syscall.Kill(fg.pid, syscall.SIGKILL); err != nil {
		t.Errorf("kill pinentry %d: %v", fg.pid, err)
	}
	eventually(t, "pinentry to go", func() bool { st, _, ok := procStat(fg.pid); return !ok || st == 'Z' })
}

// A shell's first marks that are still in the reader's hands when the kernel already
// shows the shell reading at its prompt (a loaded machine: the reader is held up) do
// not make an integrated shell look like one without integration: the wait asks the
// reader to catch up instead of trusting a time hold.
func TestOpen_readerHeldUp(t *testing.T) {
	needLinuxInput(t)
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var once sync.Once
	readHook = func(p []byte) {
		if bytes.Contains(p, []byte("133;")) {
			once.Do(func() { time.Sleep(time.Second) }) // the reader, held up
		}
	}
	t.Cleanup(func() { readHook = nil })
	m := newManager(t, Config{})
	openShell(t, m, "bash", nil) // fails unless it opens at an integrated prompt
}
