package workspace

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A process started in a Dir's ExecPath runs in the directory that was opened and checked,
// even when its path has since been swapped for a symlink out of the workspace (Linux,
// where /proc is there; elsewhere the path is checked again right before the start, see
// ExecPath).
func TestWorkspace_OpenDir(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	ws, err := Open(Config{Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(ws.Root, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := ws.OpenDir("sub")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Path != sub {
		t.Errorf("Path = %q, want %q", d.Path, sub)
	}
	if _, err := os.Stat("/proc/self/fd"); err != nil || runtime.GOOS != "linux" {
		t.Skip("the swap is caught only where a chdir can follow /proc/self/fd")
	}
	if !strings.HasPrefix(d.ExecPath(), "/proc/self/fd/") {
		t.Fatalf("ExecPath = %q, want /proc/self/fd/N", d.ExecPath())
	}

	if err := os.Rename(sub, sub+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, sub); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "touch marker; pwd -P")
	cmd.Dir = d.ExecPath()
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != sub+".old" {
		t.Errorf("the process ran in %q, want the directory opened (now %s)", got, sub+".old")
	}
	if _, err := os.Stat(filepath.Join(outside, "marker")); err == nil {
		t.Errorf("the process wrote outside the workspace")
	}

	// Opened again now, the swapped path is refused.
	if _, err := ws.OpenDir("sub"); !errors.Is(err, ErrOutside) {
		t.Errorf("OpenDir(swapped) = %v, want ErrOutside", err)
	}
}

func TestWorkspace_OpenDirRefuses(t *testing.T) {
	root := t.TempDir()
	ws, err := Open(Config{Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	for cwd, want := range map[string]error{
		"..":           ErrOutside,
		StateDirName:   ErrStateDir,
		"missing":      ErrBadDir,
		".gitignore-x": ErrBadDir,
	} {
		if d, err := ws.OpenDir(cwd); !errors.Is(err, want) {
			if d != nil {
				d.Close()
			}
			t.Errorf("OpenDir(%q) = %v, want %v", cwd, err, want)
		}
	}
}

// Recheck vouches for a directory held open only while its path still leads to it: one
// renamed away, or replaced (by a new directory or a symlink out of the workspace), must
// be opened afresh.
func TestWorkspace_Recheck(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	ws, err := Open(Config{Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(ws.Root, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := ws.OpenDir("sub")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := os.Stat("/proc/self/fd"); err != nil || runtime.GOOS != "linux" {
		if _, err := ws.Recheck(d, "sub"); !errors.Is(err, ErrDirChanged) {
			t.Errorf("Recheck without /proc = %v, want ErrDirChanged (always open afresh)", err)
		}
		return
	}
	for _, cwd := range []string{"sub", sub} {
		if got, err := ws.Recheck(d, cwd); err != nil || got != sub {
			t.Errorf("Recheck(%q) unchanged = %q, %v; want %q", cwd, got, err, sub)
		}
	}
	if err := os.Rename(sub, sub+".old"); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Recheck(d, "sub"); !errors.Is(err, ErrDirChanged) {
		t.Errorf("Recheck after a rename = %v, want ErrDirChanged", err)
	}
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Recheck(d, "sub"); !errors.Is(err, ErrDirChanged) {
		t.Errorf("Recheck of a directory made anew = %v, want ErrDirChanged", err)
	}
	if err := os.Remove(sub); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, sub); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Recheck(d, "sub"); !errors.Is(err, ErrDirChanged) {
		t.Errorf("Recheck of a symlink out = %v, want ErrDirChanged", err)
	}
	// The held directory itself moved out of the workspace, and the path made to lead to
	// it there: refused by the check of where it is.
	if err := os.Remove(sub); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(outside, "moved")
	if err := os.Rename(sub+".old", moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, sub); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Recheck(d, "sub"); !errors.Is(err, ErrOutside) {
		t.Errorf("Recheck of the held directory moved out = %v, want ErrOutside", err)
	}
}
