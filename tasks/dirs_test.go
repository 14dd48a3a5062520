package tasks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A graph holds its tasks' working directories open between starts (dirs.go), but each
// start still runs where the cwd's path leads at that moment, as checked then: in a
// directory made anew under the same name, and never out of the workspace through a
// directory swapped for a symlink.
func TestEngine_HeldCwdFollowsChanges(t *testing.T) {
	te := newTestEngine(t)
	outside := t.TempDir()
	for _, d := range []string{"sub", "out"} {
		if err := os.Mkdir(filepath.Join(te.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		{ID: "a", Command: "touch old-marker", Cwd: "sub"},
		{ID: "b", Command: "mv sub sub.old && mkdir sub", DependsOn: []string{"a"}},
		{ID: "c", Command: "ls -A", Cwd: "sub", DependsOn: []string{"b"}},
		{ID: "d", Command: "printenv PWD", Cwd: "sub", DependsOn: []string{"c"}},
		{ID: "e", Command: "true", Cwd: "out", DependsOn: []string{"d"}},
		{ID: "f", Command: "mv out out.old && ln -s " + outside + " out", DependsOn: []string{"e"}},
		{ID: "g", Command: "touch escaped", Cwd: "out", DependsOn: []string{"f"}},
	}})
	tasks := te.waitDone(t, sub.Graph.ID)
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		wantState(t, tasks, id, Succeeded, "")
	}
	wantState(t, tasks, "g", Failed, CodeSpawnFailed)
	if m := tasks["g"].Message; m == nil || !strings.Contains(*m, "outside the workspace") {
		t.Errorf("g's message = %v, want it to say outside the workspace", m)
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Errorf("g ran outside the workspace")
	}
	logOf := func(id string) string {
		s, err := ReadLog(te.e.LogPath(sub.Graph.ID, id), 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return s.Text
	}
	if got := logOf("c"); got != "" {
		t.Errorf("c listed %q, want the new, empty sub (not the old one a wrote in)", got)
	}
	if got, want := strings.TrimSpace(logOf("d")), filepath.Join(te.dir, "sub"); got != want {
		t.Errorf("d's PWD = %q, want %q", got, want)
	}
}
