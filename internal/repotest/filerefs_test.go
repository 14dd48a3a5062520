package repotest

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// notInRepo are names that comments give on purpose although no such file is kept in the
// repository, each with why.
var notInRepo = map[string]string{
	"manifest.json":            "the first entry of a graph's archive, written at run time",
	"bench/.results/soak.json": "the soak benchmark's report, written at run time and ignored by git",
	"DESIGN.md":                "the design contract, kept with the project's shared documents outside this repository",
}

// fileToken is a run of the characters a path, or a pattern of paths, is made of; named
// keeps the tokens that end like a file of the repository.
var (
	fileToken = regexp.MustCompile(`[\w./<>*{}$%-]+`)
	fileName  = regexp.MustCompile(`^[\w.-]+(/[\w.-]+)*\.(go|sql|md|txtar|json|yaml|yml|sh|tsv|toml)$`)
)

// namedFiles returns the file names a line of comment text gives, in order. It leaves out
// what is not a path of this repository: patterns (`<tool>.output.json`, `*.sql`),
// absolute paths, and paths in other modules (`github.com/x/y/z.go`).
func namedFiles(text string) []string {
	var names []string
	for _, tok := range fileToken.FindAllString(text, -1) {
		tok = strings.TrimRight(tok, ".") // the end of a sentence
		if strings.ContainsAny(tok, "<>*{}$%") || strings.HasPrefix(tok, "/") || !fileName.MatchString(tok) {
			continue
		}
		if first, _, nested := strings.Cut(tok, "/"); nested && strings.Contains(first, ".") && !strings.HasPrefix(first, ".") {
			continue // a host name: a file of another repository
		}
		names = append(names, tok)
	}
	return names
}

// fileSet is the files of a tree, by slash-separated path from its root.
type fileSet struct {
	paths []string
	bases map[string]bool
}

func newFileSet(paths []string) *fileSet {
	s := &fileSet{paths: paths, bases: map[string]bool{}}
	for _, p := range paths {
		s.bases[path.Base(p)] = true
	}
	return s
}

// has reports whether name is a file of the set: a bare name anywhere in the tree, a name
// with a directory as the end of some file's path (comments name files relative to the
// package or to the root).
func (s *fileSet) has(name string) bool {
	if !strings.Contains(name, "/") {
		return s.bases[name]
	}
	for _, p := range s.paths {
		if p == name || strings.HasSuffix(p, "/"+name) {
			return true
		}
	}
	return false
}

// moduleRoot is the directory of the go.mod above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// treeFiles lists the files of the tree at root that exist now: those git tracks or
// would add (ignored ones left out), or, outside a git checkout, every file under root.
func treeFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	var files []string
	if out, err := cmd.Output(); err == nil {
		for _, p := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
			// Tracked but deleted in the work tree (a move not yet committed) is gone.
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err == nil {
				files = append(files, p)
			}
		}
		return files
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// missingRef is a comment that names a file the tree does not have.
type missingRef struct {
	Pos  string // file:line
	Name string
}

// missingRefs parses each Go file of files outside testdata/ and returns the comments
// that name a file set does not have, other than those of notInRepo.
func missingRefs(root string, files []string, set *fileSet) ([]missingRef, error) {
	var missing []missingRef
	fset := token.NewFileSet()
	for _, p := range files {
		if !strings.HasSuffix(p, ".go") || strings.HasPrefix(p, "testdata/") || strings.Contains(p, "/testdata/") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(p)), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, c := range commentsOf(f) {
			line := fset.Position(c.Pos()).Line
			for i, text := range strings.Split(c.Text, "\n") {
				for _, name := range namedFiles(text) {
					if _, ok := notInRepo[name]; !ok && !set.has(name) {
						missing = append(missing, missingRef{Pos: p + ":" + strconv.Itoa(line+i), Name: name})
					}
				}
			}
		}
	}
	return missing, nil
}

func commentsOf(f *ast.File) []*ast.Comment {
	var cs []*ast.Comment
	for _, g := range f.Comments {
		cs = append(cs, g.List...)
	}
	return cs
}

// A comment that points to a file since renamed, or folded into another, sends the reader
// looking for nothing. Every file a comment names is in the repository.
func TestComments_NamedFilesExist(t *testing.T) {
	root := moduleRoot(t)
	files := treeFiles(t, root)
	missing, err := missingRefs(root, files, newFileSet(files))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		t.Errorf("%s: the comment names %s, but no file of that name is in the repository", m.Pos, m.Name)
	}
}

func TestNamedFiles(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"after every command is added: see usage.go", []string{"usage.go"}},
		{"as in internal/procid/procid_darwin.go.", []string{"internal/procid/procid_darwin.go"}},
		{"(tasks/detach.go, store/migrations/0001_init.sql and README.md)", []string{"tasks/detach.go", "store/migrations/0001_init.sql", "README.md"}},
		{"golden files testdata/<tool>.output.json and migrations/*.sql", nil},
		{"github-mcp-server's pkg/github/tools.go, not github.com/x/y/z.go", []string{"pkg/github/tools.go"}},
		{"reads /proc/self/stat and /etc/x.conf, not a.b.c or os.Getwd", nil},
		{"written to bench/.results/soak.json", []string{"bench/.results/soak.json"}},
	}
	for _, tt := range tests {
		if got := namedFiles(tt.text); !cmp.Equal(got, tt.want) {
			t.Errorf("namedFiles(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

// The check fails on a comment naming a file that is not there, with the place and the
// name, and passes the names that are.
func TestMissingRefs(t *testing.T) {
	root := t.TempDir()
	src := "package p\n\n// See p.go and q/r.go.\n/* and\n   gone.go */\nfunc F() {} // and sub/gone.sql, manifest.json\n"
	for p, body := range map[string]string{"p.go": src, "q/r.go": "package q\n"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{"p.go", "q/r.go"}
	got, err := missingRefs(root, files, newFileSet(files))
	if err != nil {
		t.Fatal(err)
	}
	want := []missingRef{{Pos: "p.go:5", Name: "gone.go"}, {Pos: "p.go:6", Name: "sub/gone.sql"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("missingRefs() mismatch (-want +got):\n%s", diff)
	}
	if _, err := missingRefs(root, []string{"nosuch.go"}, newFileSet(nil)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missingRefs(a missing file) = %v, want ErrNotExist", err)
	}
}
