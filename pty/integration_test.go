package pty

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestShellCommand(t *testing.T) {
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	bash := lookPath("bash", env)
	if bash == "" {
		t.Skip("no bash in PATH")
	}
	for _, tt := range []struct {
		command string
		want    []string // nil: not an interactive shell we integrate with
		kind    shellKind
	}{
		{"bash", []string{bash}, kindBash},
		{"exec bash --norc --noprofile -i", []string{bash, "--norc", "--noprofile", "-i"}, kindBash},
		{"  bash   -o vi ", []string{bash, "-o", "vi"}, kindBash},
		{bash + " -l", []string{bash, "-l"}, kindBash},
		{"bash -c ls", nil, ""},
		{"bash -lc ls", nil, ""},
		{"bash script.sh", nil, ""},
		{"bash -- script.sh", nil, ""},
		{"bash 'x'", nil, ""},
		{"bash | cat", nil, ""},
		{"bash; ls", nil, ""},
		{"FOO=1 bash", nil, ""},
		{"exec", nil, ""},
		{"python3", nil, ""},
		{"no-such-shell-anywhere", nil, ""},
		{"./bash", nil, ""},
	} {
		argv, k, ok := shellCommand(tt.command, nil, env)
		if ok != (tt.want != nil) || !cmp.Equal(argv, tt.want) || k != tt.kind {
			t.Errorf("shellCommand(%q) = %q, %q, %v; want %q, %q", tt.command, argv, k, ok, tt.want, tt.kind)
		}
	}
	if argv, k, ok := shellCommand("", []string{"/bin/sh", "-i"}, env); !ok || k != kindSh || !cmp.Equal(argv, []string{"/bin/sh", "-i"}) {
		t.Errorf("shellCommand(default /bin/sh) = %q, %q, %v; want it as is, kind sh", argv, k, ok)
	}
}

func TestIntegrate(t *testing.T) {
	dir := "/d"
	for _, tt := range []struct {
		name     string
		kind     shellKind
		argv     []string
		env      []string
		wantArgv []string
		wantEnv  []string // added to env
	}{
		{"bash reads our rc file, which reads the user's", kindBash, []string{"/bin/bash", "-i"}, nil,
			[]string{"/bin/bash", "--rcfile", "/d/bashrc.sh", "-i"}, nil},
		{"bash --norc loads from PROMPT_COMMAND", kindBash, []string{"/bin/bash", "--norc", "-i"}, nil,
			[]string{"/bin/bash", "--norc", "-i"}, []string{"PROMPT_COMMAND=__mh_load=1 . '/d/bash.sh'"}},
		{"bash login shell keeps the user's PROMPT_COMMAND", kindBash, []string{"/bin/bash", "-il"}, []string{"PROMPT_COMMAND=mine"},
			[]string{"/bin/bash", "-il"}, []string{"PROMPT_COMMAND=__mh_load=1 . '/d/bash.sh'\nmine"}},
		{"zsh", kindZsh, []string{"/bin/zsh"}, nil, []string{"/bin/zsh"}, []string{"ZDOTDIR=/d/zsh"}},
		{"zsh with a ZDOTDIR", kindZsh, []string{"/bin/zsh"}, []string{"ZDOTDIR=/u"}, []string{"/bin/zsh"},
			[]string{"MCP_HARNESS_ZDOTDIR=/u", "ZDOTDIR=/d/zsh"}},
		{"fish", kindFish, []string{"/usr/bin/fish", "-l"}, nil, []string{"/usr/bin/fish", "--init-command", "source '/d/fish.fish'", "-l"}, nil},
		{"sh", kindSh, []string{"/bin/sh", "-i"}, []string{"ENV=/u/.shrc"}, []string{"/bin/sh", "-i"},
			[]string{"MCP_HARNESS_ENV=/u/.shrc", "ENV=/d/sh.sh"}},
	} {
		argv, env := integrate(tt.kind, tt.argv, tt.env, dir, "N")
		tt.wantEnv = append([]string{nonceVar + "=N"}, tt.wantEnv...)
		if !cmp.Equal(argv, tt.wantArgv) || !cmp.Equal(env[len(tt.env):], tt.wantEnv, cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })) {
			t.Errorf("%s: integrate = %q, env + %q; want %q, + %q", tt.name, argv, env[len(tt.env):], tt.wantArgv, tt.wantEnv)
		}
	}
}

// needShell skips a test when a shell is not installed (.ci/run installs zsh and fish).
func needShell(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed (.ci/run installs it from Debian packages): %v", name, err)
	}
}

// openShell opens an integrated shell with its own empty HOME (plus files), and checks
// that Open came back at its first prompt with integration on.
func openShell(t *testing.T, m *Manager, command string, files map[string]string) ReadResult {
	t.Helper()
	home := t.TempDir()
	for name, body := range files {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	res := mustOpen(t, m, OpenOptions{Command: command, Env: map[string]string{"HOME": home, "HISTFILE": "/dev/null"}}, ReadOptions{})
	// Closed before its HOME is removed (cleanups run last first): a shell that still
	// runs may write there (fish's history) while the directory is being removed.
	t.Cleanup(func() {
		_, _ = m.Close(context.WithoutCancel(t.Context()), res.SessionID, syscall.SIGHUP, DefaultGrace)
	})
	if res.Reason != ReasonPrompt || !res.Integration {
		t.Fatalf("Open(%s) reason %q integration %v, want %q, true; output %q", command, res.Reason, res.Integration, ReasonPrompt, res.Output)
	}
	return res
}

// run runs a command line in an integrated shell and checks it finished.
func run(t *testing.T, m *Manager, id, line string) ReadResult {
	t.Helper()
	res, err := m.IO(t.Context(), id, Input{Run: line}, ReadOptions{Timeout: waitLong})
	if err != nil {
		t.Fatalf("run %q: %v", line, err)
	}
	if res.Reason != ReasonPrompt || res.Command == nil || !res.Command.Done || res.Command.Text != line {
		t.Fatalf("run %q: reason %q command %+v, want %q and the command done; output %q", line, res.Reason, res.Command, ReasonPrompt, res.Output)
	}
	return res
}

func exitOf(res ReadResult) int {
	if res.Command == nil || res.Command.ExitCode == nil {
		return -1
	}
	return *res.Command.ExitCode
}

// A shell that never sends marks (its rc replaces it with a shell without integration)
// still opens at once, as before: the kernel says it waits at its terminal.
func TestOpen_marksNeverCome(t *testing.T) {
	if !foregroundKnown {
		t.Skip("needs the kernel's view of the terminal")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	home := t.TempDir()
	rc := "PS1='PROMPT> ' exec bash --norc --noprofile\n"
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	res := mustOpen(t, m, OpenOptions{Command: "bash", Env: map[string]string{"HOME": home}}, ReadOptions{Timeout: waitLong})
	if res.Reason != ReasonIdle || res.Integration || !strings.HasSuffix(res.Output, "PROMPT> ") {
		t.Errorf("Open(shell without marks) = reason %q, integration %v, output %q; want %q at its prompt, false", res.Reason, res.Integration, res.Output, ReasonIdle)
	}
}

// What a program waiting for input wants, from the terminal's modes; and the question.
func TestIO_waitingForInput(t *testing.T) {
	if !foregroundKnown {
		t.Skip("needs the kernel's view of the terminal")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	py := python(t)
	m := newManager(t, Config{})
	for _, tt := range []struct {
		command string
		kind    InputKind
		prompt  string
	}{
		{py + ` -c 'print(input("Name? "))'`, InputLine, "Name?"},
		{py + ` -c 'import getpass; getpass.getpass("Secret: ")'`, InputPassword, "Secret:"},
		{py + ` -q -i`, InputKeys, ">>>"},
		{`printf 'Continue? [y/N] '; read a`, InputLine, "Continue? [y/N]"},
		{`cat | cat`, InputLine, ""},
	} {
		res := mustOpen(t, m, OpenOptions{Command: tt.command}, ReadOptions{WaitFor: never})
		w := res.WaitingForInput
		if res.Reason != ReasonInput || w == nil || w.Kind != tt.kind || w.Prompt != tt.prompt {
			t.Errorf("Open(%s) = reason %q, waiting %+v; want %q, {%s %q}", tt.command, res.Reason, w, ReasonInput, tt.kind, tt.prompt)
		}
	}
}

// waitPort ends a wait when a process of the session listens; List shows the port.
func TestIO_waitPort(t *testing.T) {
	if !portsKnown {
		t.Skip("needs /proc to map sockets to processes")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	port := freePort(t)
	res, err := m.IO(t.Context(), id, Input{Run: python(t) + " -m http.server --bind 127.0.0.1 " + strconv.Itoa(port)}, ReadOptions{WaitPort: port, Timeout: waitLong})
	if err != nil || res.Reason != ReasonPort || res.Command == nil || res.Command.Done {
		t.Fatalf("run http.server with waitPort %d = %v, reason %q command %+v; want %q, the server running", port, err, res.Reason, res.Command, ReasonPort)
	}
	if infos := m.List(); len(infos) != 1 || !slices.Contains(infos[0].Ports, port) {
		t.Errorf("List() ports = %v, want %d", infos[0].Ports, port)
	}
	// A port something else listens on does not count.
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	res, err = m.IO(t.Context(), id, Input{}, ReadOptions{WaitPort: other.Addr().(*net.TCPAddr).Port, Timeout: 300 * time.Millisecond})
	if err != nil || res.Reason != ReasonTimeout {
		t.Errorf("waitPort on another process's port = %v, reason %q; want %q", err, res.Reason, ReasonTimeout)
	}
}

// Marks are consumed: neither cleaned nor raw output shows them.
func TestMarks_neverInOutput(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	for _, sh := range []string{"bash", "dash", "zsh", "fish"} {
		if _, err := exec.LookPath(sh); err != nil {
			t.Logf("%s is not installed: skipped", sh)
			continue
		}
		id := openShell(t, m, sh, nil).SessionID
		run(t, m, id, "echo hello")
		mustIO(t, m, id, "echo typed\n", ReadOptions{})
		for _, raw := range []bool{false, true} {
			res := mustIO(t, m, id, "", ReadOptions{Since: new(int64(0)), Raw: raw})
			if strings.Contains(res.Output, "133;") || strings.Contains(res.Output, "\x1b]7;") {
				t.Errorf("%s: output (raw %v) shows marks: %q", sh, raw, res.Output)
			}
		}
	}
}

// Bracketed paste: a heredoc pasted into bash is one edit, run as one command.
func TestIO_pasteHeredoc(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	text := "cat <<'EOF'\nline one\n  line $two\nEOF\n"
	res, err := m.IO(t.Context(), id, Input{Data: []byte(text), Paste: true}, ReadOptions{Timeout: waitLong})
	if err != nil || res.Reason != ReasonPrompt {
		t.Fatalf("paste = %v, reason %q; want %q", err, res.Reason, ReasonPrompt)
	}
	info, _ := m.Get(id)
	if len(info.Commands) != 1 || exitOf(ReadResult{Command: &info.Commands[0]}) != 0 {
		t.Fatalf("commands after the paste = %+v, want one that exited 0", info.Commands)
	}
	c := info.Commands[0]
	out, err := m.IO(t.Context(), id, Input{}, ReadOptions{Since: &c.Since, End: &c.Cursor})
	if err != nil || out.Output != "line one\n  line $two\n" {
		t.Errorf("the pasted heredoc printed %q, %v; want its two lines as written", out.Output, err)
	}
	// Once: readline draws a paste twice (highlighted, then again), the text is what was
	// pasted.
	if want := strings.TrimSuffix(text, "\n"); c.Text != want || res.Command == nil || res.Command.Text != want {
		t.Errorf("command text %q (result %+v), want the pasted heredoc %q once", c.Text, res.Command, want)
	}
}

// python returns the real path of python3 (not a version manager's shim, which would
// put a shell script between the terminal and the program).
func python(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skipf("python3: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// The scripts live in one directory per user and version, shared by every server and
// left in place (a server killed with SIGKILL leaves nothing behind); a directory at that
// name that is not exactly ours is not used, and a private one is made and removed.
func TestShellFiles(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	shared := filepath.Join(os.TempDir(), sharedName())
	var a, b shellFiles
	da, err1 := a.path()
	db, err2 := b.path()
	if err1 != nil || err2 != nil || da != shared || db != shared || !intact(shared) {
		t.Fatalf("path() = %q, %q (%v, %v), want both %q, intact", da, db, err1, err2, shared)
	}
	a.remove()
	if !intact(shared) {
		t.Errorf("remove() took the shared directory away")
	}

	// A changed script is not read: a private copy is made instead.
	if err := os.WriteFile(filepath.Join(shared, "bash.sh"), []byte("echo pwned\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var c shellFiles
	dc, err := c.path()
	if err != nil || dc == shared || !intact(dc) {
		t.Fatalf("path() with a changed shared copy = %q, %v; want a private intact copy", dc, err)
	}
	c.remove()
	if _, err := os.Stat(dc); !os.IsNotExist(err) {
		t.Errorf("remove() left the private copy %s: %v", dc, err)
	}
	// Open to other users: not used either.
	os.RemoveAll(shared)
	var d shellFiles
	if _, err := d.path(); err != nil || !intact(shared) {
		t.Fatalf("path() after the shared copy went = %v, want it written again", err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if intact(shared) {
		t.Errorf("intact(a directory others can write) = true")
	}
}

// Marks a program prints are its output: printf of a command's end and a prompt, cat of
// a log holding marks, a mark with another session's nonce. None ends the run, sets its
// status or hides output, in every shell the package integrates with.
func TestMarks_spoofed(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	log := filepath.Join(t.TempDir(), "session.log")
	marks := `\033]133;D;0\007\033]7;file:///spoofed\007\033]133;A\007\033]133;B\007\033]133;D;mh=0123;0\007\033]133;A;mh=0123\007`
	if err := os.WriteFile(log, []byte(strings.ReplaceAll(strings.ReplaceAll(marks, `\033`, "\x1b"), `\007`, "\a")+"logged\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, sh := range []string{"bash", "dash", "zsh", "fish"} {
		if _, err := exec.LookPath(sh); err != nil {
			t.Logf("%s is not installed: skipped", sh)
			continue
		}
		id := openShell(t, m, sh, nil).SessionID
		for _, tt := range []struct{ line, out string }{
			{"printf '" + marks + "'; echo real-output; false", "real-output\n"},
			{"cat " + log + "; false", "logged\n"},
		} {
			res := run(t, m, id, tt.line)
			if res.Output != tt.out || exitOf(res) != 1 {
				t.Errorf("%s: run %q = %q exit %d, want %q exit 1: the printed marks are output", sh, tt.line, res.Output, exitOf(res), tt.out)
			}
		}
		if res := run(t, m, id, "echo after"); res.Output != "after\n" || exitOf(res) != 0 || res.Command.ID != 3 || res.Command.Cwd == "/spoofed" {
			t.Errorf("%s: run after the spoofed marks = %q exit %d command %+v, want after, exit 0, id 3, the real cwd", sh, res.Output, exitOf(res), res.Command)
		}
		raw := mustIO(t, m, id, "", ReadOptions{Since: new(int64(0)), Raw: true})
		if !strings.Contains(raw.Output, "\x1b]133;D;0\a") {
			t.Errorf("%s: raw output %q, want the printed marks kept as output", sh, raw.Output)
		}
	}
}

// A directory whose name holds what looks like a percent escape is reported as it is:
// sh cannot percent-encode its OSC 7, so its path is not decoded; the shells that encode
// have theirs decoded.
func TestMarks_cwdWithPercent(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	dir := filepath.Join(t.TempDir(), "a%41b c")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, sh := range []string{"dash", "bash", "zsh", "fish"} {
		if _, err := exec.LookPath(sh); err != nil {
			t.Logf("%s is not installed: skipped", sh)
			continue
		}
		id := openShell(t, m, sh, nil).SessionID
		res := run(t, m, id, "cd '"+dir+"'")
		if res.Command.Cwd != dir {
			t.Errorf("%s: cwd after cd = %q, want %q", sh, res.Command.Cwd, dir)
		}
		if info, err := m.Get(id); err != nil || info.Dir != dir {
			t.Errorf("%s: Get().Dir = %q, %v; want %q", sh, info.Dir, err, dir)
		}
	}
}

// The nonce stays the shell's: the commands it runs do not inherit it, also where the
// prompts that hold marks came from the environment (and would be exported).
func TestMarks_nonceNotInherited(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	for _, sh := range []string{"bash", "dash", "zsh", "fish"} {
		if _, err := exec.LookPath(sh); err != nil {
			t.Logf("%s is not installed: skipped", sh)
			continue
		}
		env := map[string]string{"HOME": t.TempDir(), "HISTFILE": "/dev/null", "PS1": "PROMPT> ", "PS2": "more> ", "PS0": ""}
		res := mustOpen(t, m, OpenOptions{Command: sh, Env: env}, ReadOptions{})
		if !res.Integration {
			t.Fatalf("%s: Open: integration false, output %q", sh, res.Output)
		}
		s, err := m.get("test", res.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		out := run(t, m, res.SessionID, "env; sh -c env").Output
		if nonce := s.filter.Nonce; nonce == "" || strings.Contains(out, nonce) || strings.Contains(out, nonceVar) {
			t.Errorf("%s: the environment of its commands holds the nonce %q:\n%s", sh, nonce, out)
		}
		// Before its HOME goes (fish writes its history there).
		if _, err := m.Close(t.Context(), res.SessionID, syscall.SIGHUP, DefaultGrace); err != nil {
			t.Fatal(err)
		}
	}
}
