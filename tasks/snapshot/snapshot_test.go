package snapshot

import (
	"archive/tar"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/klauspost/compress/gzip"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// entries lists a snapshot's entries: name -> content ("" for a directory, "->target"
// for a link).
func entries(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			out[h.Name] = ""
		case tar.TypeSymlink:
			out[h.Name] = "->" + h.Linkname
		default:
			b, _ := io.ReadAll(tr)
			out[h.Name] = string(b)
		}
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v: %s", args, err, b)
	}
}

// With git: tracked files and untracked ones not ignored, never the ignored ones nor the
// state directory; the same files make the same snapshot, by name and bytes.
func TestMake_Git(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"main.go": "package main\n", "sub/lib.go": "package sub\n", ".gitignore": "build/\n*.log\n",
		"build/out.bin": "binary", "debug.log": "log", "untracked.txt": "new\n",
		".mcp-harness/.gitignore": "*", ".mcp-harness/state.db": "db",
	})
	os.Symlink("main.go", filepath.Join(root, "link.go"))
	git(t, root, "init", "-q")
	git(t, root, "add", "main.go", "sub/lib.go", ".gitignore", "link.go")
	git(t, root, "commit", "-q", "-m", "x")
	dir := t.TempDir()
	s, err := Make(t.Context(), Options{Root: root, Mode: Git, Dir: dir, Exclude: []string{filepath.Join(root, ".mcp-harness")}})
	if err != nil {
		t.Fatal(err)
	}
	got := entries(t, s.Path)
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range got {
			if !yield(k) {
				return
			}
		}
	})
	want := []string{".gitignore", "link.go", "main.go", "sub/", "sub/lib.go", "untracked.txt"}
	if !slices.Equal(names, want) {
		t.Errorf("entries = %q, want %q", names, want)
	}
	if got["link.go"] != "->main.go" || got["sub/lib.go"] != "package sub\n" {
		t.Errorf("link.go = %q, sub/lib.go = %q", got["link.go"], got["sub/lib.go"])
	}
	if s.Mode != Git || s.Files != 5 || filepath.Base(s.Path) != s.SHA256+".tar.gz" {
		t.Errorf("Make = %+v", s)
	}
	again, err := Make(t.Context(), Options{Root: root, Mode: Git, Dir: dir, Exclude: []string{filepath.Join(root, ".mcp-harness")}})
	if err != nil || again.SHA256 != s.SHA256 || again.Bytes != s.Bytes {
		t.Errorf("the same files made %+v, then %+v, %v", s, again, err)
	}
	writeFiles(t, root, map[string]string{"untracked.txt": "changed\n"})
	changed, _ := Make(t.Context(), Options{Root: root, Mode: Git, Dir: dir})
	if changed.SHA256 == s.SHA256 {
		t.Error("a changed file made the same snapshot")
	}
}

// With all: every file but what is excluded; a git snapshot of a directory that is not a
// repository is the same.
func TestMake_All(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"a.txt": "a", "build/out.bin": "binary", "state/db": "db", "empty/.keep": ""})
	os.Mkdir(filepath.Join(root, "emptydir"), 0o755)
	for _, mode := range []Mode{All, Git} {
		s, err := Make(t.Context(), Options{Root: root, Mode: mode, Dir: t.TempDir(), Exclude: []string{filepath.Join(root, "state"), ""}})
		if err != nil {
			t.Fatal(err)
		}
		got := entries(t, s.Path)
		for _, name := range []string{"a.txt", "build/", "build/out.bin", "empty/.keep", "emptydir/"} {
			if _, ok := got[name]; !ok {
				t.Errorf("mode %s: %s is missing from %v", mode, name, got)
			}
		}
		if _, ok := got["state/db"]; ok {
			t.Errorf("mode %s: an excluded directory went in", mode)
		}
		if s.Mode != All {
			t.Errorf("mode %s of a directory that is no repository made a %s snapshot, want all", mode, s.Mode)
		}
	}
	if _, err := Make(t.Context(), Options{Root: root, Mode: None, Dir: t.TempDir()}); err == nil {
		t.Error("Make with mode none made a snapshot")
	}
}
