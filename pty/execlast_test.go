package pty

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestExecLast(t *testing.T) {
	for _, tt := range []struct{ command, want string }{
		{"python3 app.py", "exec python3 app.py"},
		{"  vim notes.txt", "  exec vim notes.txt"},
		{"cd web && npm run dev", "cd web && exec npm run dev"},
		{"make || true; ./serve --port 0;", "make || true; exec ./serve --port 0;"},
		{"FOO=1 BAR='a b' prog", "FOO=1 BAR='a b' exec prog"},
		{">log 2>&1 prog -v", ">log 2>&1 exec prog -v"},
		{"prog >log 2>&1", "exec prog >log 2>&1"},
		{`python3 -c 'print(1); print(2)'`, `exec python3 -c 'print(1); print(2)'`},
		{`echo "$(date; id)" && less "${f:-a b}"`, `echo "$(date; id)" && exec less "${f:-a b}"`},
		{"prog $((1+2)) # a comment; with a separator", "exec prog $((1+2)) # a comment; with a separator"},
		{`'python3' x`, `exec 'python3' x`},
		{"echo trap; prog", "echo trap; exec prog"},
		{"command -v prog >/dev/null && prog", "command -v prog >/dev/null && exec prog"},
		{"prog # the last line #", "exec prog # the last line #"},
		// Left to sh as written.
		{"exec python3", "exec python3"},
		{"ls | less", "ls | less"},
		{"(cd x; prog)", "(cd x; prog)"},
		{"{ a; b; }", "{ a; b; }"},
		{"if true; then prog; fi", "if true; then prog; fi"},
		{"for i in 1 2; do echo $i; done", "for i in 1 2; do echo $i; done"},
		{"while read l; do :; done", "while read l; do :; done"},
		{"case x in x) prog;; esac", "case x in x) prog;; esac"},
		{"! prog", "! prog"},
		{"prog &", "prog &"},
		{"sleep 1000 & echo PID=$!; wait", "sleep 1000 & echo PID=$!; wait"},
		{"echo bye; exit 3", "echo bye; exit 3"},
		{"kill -TERM $$", "kill -TERM $$"},
		{"cd /tmp", "cd /tmp"},
		{"trap 'echo bye' EXIT; prog", "trap 'echo bye' EXIT; prog"},
		{". ./env.sh; prog", ". ./env.sh; prog"},
		{"source ./env.sh && prog", "source ./env.sh && prog"},
		{"eval \"$setup\"; prog", "eval \"$setup\"; prog"},
		{"command -p trap 'echo bye' EXIT; prog", "command -p trap 'echo bye' EXIT; prog"},
		{"'tr'ap 'echo bye' EXIT; prog", "'tr'ap 'echo bye' EXIT; prog"},
		{"$setup; prog", "$setup; prog"},
		{"f() { prog; }; f", "f() { prog; }; f"},
		{"date # first\necho SECOND", "date # first\necho SECOND"},
		{"a\nb", "a\nb"},
		{"cat <<EOF\nx\nEOF", "cat <<EOF\nx\nEOF"},
		{"echo `date`", "echo `date`"},
		{"echo 'unterminated", "echo 'unterminated"},
		{"FOO=1", "FOO=1"},
		{">log", ">log"},
	} {
		if got := execLast(tt.command); got != tt.want {
			t.Errorf("execLast(%q) = %q, want %q", tt.command, got, tt.want)
		}
	}
}

// shOutput runs command under sh -c in dir and returns what it printed and its exit code.
func shOutput(t *testing.T, dir, command string) (string, int) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("sh -c %q: %v", command, err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// What the shell prints and how it exits is the same with exec as without: a comment
// ends its line and the lines after it still run, an EXIT trap still runs wherever it
// was set (on the line, in a sourced file, through eval or command), and what sets up
// the shell before the program (set -e, ulimit, umask, exec redirections, assignments)
// still holds for the program.
func TestExecLast_keepsWhatTheCommandDoes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "env.sh"), []byte("trap 'echo cleanup ran' EXIT\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		command string
		out     string
		code    int
	}{
		{"ls -d / # a comment\necho SECOND", "/\nSECOND\n", 0},
		{"ls -d / # build first\nls -d /", "/\n/\n", 0},
		{"ls -d / #\nfalse", "/\n", 1},
		{". ./env.sh; ls -d /", "/\ncleanup ran\n", 0},
		{". ./env.sh && sh -c 'exit 3'", "cleanup ran\n", 3},
		{"eval \"trap 'echo cleanup ran' EXIT\"; ls -d /", "/\ncleanup ran\n", 0},
		{"command trap 'echo cleanup ran' EXIT; ls -d /", "/\ncleanup ran\n", 0},
		{"t=trap; $t 'echo cleanup ran' EXIT; ls -d /", "/\ncleanup ran\n", 0},
		// exec does not change these; they get it.
		{"set -e; sh -c 'exit 4'", "", 4},
		{"set -o nounset; ls -d /", "/\n", 0},
		{"ulimit -n 64; sh -c 'ulimit -n'", "64\n", 0},
		{"umask 077; sh -c umask", "0077\n", 0},
		{"exec 3>&1; sh -c 'echo to-three >&3'", "to-three\n", 0},
		{"FOO=bar env | grep ^FOO=", "FOO=bar\n", 0},
		{"FOO=bar sh -c 'echo $FOO'", "bar\n", 0},
		{"alias ls=false; ls -d /", "/\n", 0},
	} {
		wantOut, wantCode := shOutput(t, dir, tt.command)
		if wantOut != tt.out || wantCode != tt.code {
			t.Fatalf("sh -c %q prints %q and exits %d, the test wants %q and %d", tt.command, wantOut, wantCode, tt.out, tt.code)
		}
		got := execLast(tt.command)
		if out, code := shOutput(t, dir, got); out != wantOut || code != wantCode {
			t.Errorf("sh -c %q (from %q) prints %q and exits %d, want %q and %d as written", got, tt.command, out, code, wantOut, wantCode)
		}
	}
}
