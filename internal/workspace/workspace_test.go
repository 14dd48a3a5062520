package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkspace_Confine(t *testing.T) {
	outside := t.TempDir()
	root := t.TempDir()
	for _, d := range []string{"src/pkg", "link-target-inside"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "file.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, outside, filepath.Join(root, "escape"))
	mustSymlink(t, filepath.Join(root, "link-target-inside"), filepath.Join(root, "inner"))
	mustSymlink(t, "../..", filepath.Join(root, "src", "up2"))
	mustSymlink(t, StateDirName+"/logs", filepath.Join(root, "to-state"))
	if err := os.MkdirAll(filepath.Join(root, "src", StateDirName), 0o755); err != nil {
		t.Fatal(err)
	}

	// The workspace is given through a symlink: its root must come out resolved.
	alias := filepath.Join(t.TempDir(), "alias")
	mustSymlink(t, root, alias)
	ws, err := Open(Config{Dir: alias})
	if err != nil {
		t.Fatal(err)
	}
	realRoot, _ := filepath.EvalSymlinks(root)
	if ws.Root != realRoot {
		t.Fatalf("Root = %q, want %q", ws.Root, realRoot)
	}

	tests := []struct {
		name, cwd, want string
		err             error
	}{
		{name: "empty is root", cwd: "", want: realRoot},
		{name: "relative", cwd: "src/pkg", want: filepath.Join(realRoot, "src/pkg")},
		{name: "dot dot inside", cwd: "src/pkg/../..", want: realRoot},
		{name: "absolute inside", cwd: filepath.Join(realRoot, "src"), want: filepath.Join(realRoot, "src")},
		{name: "absolute through alias", cwd: filepath.Join(alias, "src"), want: filepath.Join(realRoot, "src")},
		{name: "symlink in", cwd: "inner", want: filepath.Join(realRoot, "link-target-inside")},
		{name: "dot dot out", cwd: "..", err: ErrOutside},
		{name: "dot dot out missing", cwd: "../nowhere", err: ErrOutside},
		{name: "absolute out", cwd: outside, err: ErrOutside},
		{name: "root of fs", cwd: "/", err: ErrOutside},
		{name: "symlink out", cwd: "escape", err: ErrOutside},
		{name: "symlink out then down", cwd: "escape/.", err: ErrOutside},
		{name: "symlink up and out", cwd: "src/up2", err: ErrOutside},
		{name: "missing", cwd: "no/such/dir", err: ErrBadDir},
		{name: "a file", cwd: "file.txt", err: ErrBadDir},
		{name: "prefix sibling", cwd: realRoot + "-sibling", err: ErrOutside},
		{name: "state dir", cwd: StateDirName, err: ErrStateDir},
		{name: "inside the state dir", cwd: StateDirName + "/logs", err: ErrStateDir},
		{name: "state dir absolute", cwd: filepath.Join(realRoot, StateDirName, "artifacts"), err: ErrStateDir},
		{name: "symlink into the state dir", cwd: "to-state", err: ErrStateDir},
		{name: "state-like sibling", cwd: "src/" + StateDirName, want: filepath.Join(realRoot, "src", StateDirName)},
		{name: "longer than a path", cwd: strings.Repeat("d/", MaxPathBytes), err: ErrBadDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ws.Confine(tt.cwd)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Confine(%.80q) = %q, %v; want error %v", tt.cwd, got, err, tt.err)
				}
				if len(err.Error()) > 500 {
					t.Errorf("Confine(%.80q) error is %d bytes: what was sent must be quoted short", tt.cwd, len(err.Error()))
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Confine(%q) = %q, %v; want %q", tt.cwd, got, err, tt.want)
			}
		})
	}
}

func TestOpenWorkspace_Errors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(dir, "missing"), file} {
		if _, err := Open(Config{Dir: d}); err == nil {
			t.Errorf("Open(%q) succeeded", d)
		}
	}
	// Nothing was created next to the file or in place of the missing dir.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("entries after failed opens = %d, want 1", len(entries))
	}
}

func TestOpenWorkspace_Overrides(t *testing.T) {
	root, state, arts := t.TempDir(), t.TempDir(), t.TempDir()
	ws, err := Open(Config{Dir: root, StateDir: filepath.Join(state, "s"), ArtifactsDir: filepath.Join(arts, "a")})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{ws.StateDir, ws.ArtifactsDir, ws.LogsDir()} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("%s not created: %v", d, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, StateDirName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("default state dir created despite override: %v", err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
