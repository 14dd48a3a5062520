package pty

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"go.uber.org/goleak"
)

// The program starts in the directory EnterDir holds open, not in whatever Dir's path
// names by then: here the directory is swapped for a symlink to another one after it was
// opened, and the program still runs (and writes) in the one that was opened, while List
// shows Dir.
func TestManager_OpenEntersHeldDirectory(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd on this system")
	}
	m := newManager(t, Config{})
	root, elsewhere := t.TempDir(), t.TempDir()
	sub := filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(sub)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := os.Rename(sub, sub+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, sub); err != nil {
		t.Fatal(err)
	}

	enter := "/proc/self/fd/" + strconv.Itoa(int(held.Fd()))
	res := mustOpen(t, m, OpenOptions{Command: "touch marker; echo DONE", Dir: sub, EnterDir: enter},
		ReadOptions{WaitFor: regexp.MustCompile(`DONE`)})
	if _, err := os.Stat(filepath.Join(sub+".old", "marker")); err != nil {
		t.Errorf("the program did not write in the directory held open: %v", err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "marker")); err == nil {
		t.Errorf("the program wrote through the swapped path into %s", elsewhere)
	}
	for _, in := range m.List() {
		if in.ID == res.SessionID && in.Dir != sub {
			t.Errorf("List shows dir %q, want %q", in.Dir, sub)
		}
	}
}
