package tasks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDirectArgv(t *testing.T) {
	for _, tc := range []struct {
		name, command string
		want          []string
	}{
		{"bare program", "true", []string{"true"}},
		{"arguments", "go test -run=X ./pkg/... -count=1", []string{"go", "test", "-run=X", "./pkg/...", "-count=1"}},
		{"true with arguments", "true --help", nil},
		{"builtin", "echo hi", nil},
		{"keyword", "time make", nil},
		{"assignment", "CC=gcc make", nil},
		{"path", "./build.sh", nil},
		{"leading dash", "-x", nil},
		{"double space", "make  all", nil},
		{"trailing space", "make ", nil},
		{"empty", "", nil},
		{"quote", "grep 'a b' f", nil},
		{"variable", "echo $HOME", nil},
		{"glob", "ls *.go", nil},
		{"redirect", "make >out", nil},
		{"pipe", "make | tee", nil},
		{"separator", "make; make", nil},
		{"tab", "make\tall", nil},
		{"newline", "make\nall", nil},
		{"tilde", "ls ~", nil},
		{"comment", "make #x", nil},
		{"backslash", `make a\ b`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := directArgv(tc.command); !cmp.Equal(got, tc.want) {
				t.Errorf("directArgv(%q) = %q, want %q", tc.command, got, tc.want)
			}
		})
	}
}

func FuzzDirectArgv(f *testing.F) {
	for _, s := range []string{"true", "go test ./...", "echo $X", "a  b", "CC=1 make"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		argv := directArgv(s)
		if argv == nil {
			return
		}
		// What runs directly is what the shell would have split: the words rejoin to the
		// command, and none of them holds a byte the shell reads.
		if strings.Join(argv, " ") != s {
			t.Errorf("directArgv(%q) = %q: does not rejoin", s, argv)
		}
		for _, w := range argv {
			for i := 0; i < len(w); i++ {
				if !plainByte(w[i]) {
					t.Errorf("directArgv(%q) keeps byte %q", s, w[i])
				}
			}
		}
	})
}

// A command run without the shell sees what it would have under it: its directory, PWD
// naming it, and the task's environment; one that cannot start gets the shell's answer.
func TestEngine_DirectExec(t *testing.T) {
	te := newTestEngine(t)
	if err := os.Mkdir(filepath.Join(te.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		{ID: "pwd", Command: "printenv PWD", Cwd: "sub"},
		{ID: "env", Command: "printenv HARNESS_DIRECT", Env: map[string]string{"HARNESS_DIRECT": "yes"}},
		{ID: "missing", Command: "no-such-program-mcp-harness"},
	}})
	tasks := te.waitDone(t, sub.Graph.ID)
	wantState(t, tasks, "pwd", Succeeded, "")
	wantState(t, tasks, "env", Succeeded, "")
	wantState(t, tasks, "missing", Failed, CodeExitNonzero)
	if c := tasks["missing"].ExitCode; c == nil || *c != 127 {
		t.Errorf("missing program exit code = %v, want 127", c)
	}
	want, err := filepath.EvalSymlinks(filepath.Join(te.dir, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"pwd": want, "env": "yes", "missing": "not found"} {
		out, err := ReadLog(te.e.LogPath(sub.Graph.ID, id), 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.Text, want) {
			t.Errorf("log of %s = %q, want it to contain %q", id, out.Text, want)
		}
	}
}
