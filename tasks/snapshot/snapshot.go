// Package snapshot makes the copy of a workspace that a remote task's pod gets: a gzipped
// tar of the workspace's files, made once per graph and named by the sha256 of its bytes,
// so a graph of 200 remote tasks tars its workspace once and streams the same file into
// every pod, and two graphs of an unchanged workspace share one file.
//
// What goes in (Mode): with Git, the files git lists as tracked or untracked and not
// ignored (git ls-files --cached --others --exclude-standard), as `git status` sees the
// working tree: build outputs and dependencies a .gitignore names stay out; with All,
// every file under the root; with None, nothing. The workspace's state directory (its
// database, logs and archives) and anything else Exclude names never go in. A workspace
// that is not a git repository is taken whole under Git, as with All.
//
// The archive is reproducible: entries in byte order of their paths, each with its
// permission bits and a fixed time, no owner, and gzip without a name or time; the same
// files give the same bytes and so the same name. Regular files, directories and symbolic
// links go in (a link as a link, whatever it points at); other kinds (sockets, devices)
// are left out.
package snapshot

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
)

// Mode says what of the workspace a snapshot holds.
type Mode string

// The modes.
const (
	Git  Mode = "git"  // tracked and untracked files that are not ignored (the default)
	All  Mode = "all"  // every file under the root
	None Mode = "none" // nothing: remote tasks start in an empty directory
)

// Modes lists the modes, the default first.
func Modes() []Mode { return []Mode{Git, All, None} }

// Valid reports whether m is one of the modes.
func (m Mode) Valid() bool { return slices.Contains(Modes(), m) }

// Options says what Make snapshots and where the file goes.
type Options struct {
	Root    string   // the workspace's root: absolute, symlinks resolved
	Mode    Mode     // Git, All (None makes nothing: Make refuses it)
	Exclude []string // absolute paths left out with everything below them (the state directory)
	Dir     string   // the directory the snapshot file is written to
}

// Snapshot is a snapshot file: Path is <Dir>/<SHA256>.tar.gz.
type Snapshot struct {
	Path   string
	SHA256 string
	Bytes  int64 // the file's size
	Files  int   // regular files and links in it
	Size   int64 // their content, uncompressed
	// Mode is what it holds: Git, or All when a Git snapshot was asked of a workspace
	// that is not a git repository.
	Mode Mode
}

// mtime is every entry's time: fixed, so the same files make the same archive. A build
// in the pod sees its sources as old, and builds what it has no output for.
var mtime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Make writes the snapshot o asks for, or finds the identical one already in o.Dir.
func Make(ctx context.Context, o Options) (Snapshot, error) {
	if o.Mode != Git && o.Mode != All {
		return Snapshot{}, fmt.Errorf("snapshot: mode %q makes no snapshot", o.Mode)
	}
	paths, mode, err := list(ctx, o)
	if err != nil {
		return Snapshot{}, err
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot: %w", err)
	}
	tmp, err := os.CreateTemp(o.Dir, ".snapshot-*")
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	sum := sha256.New()
	count := &counter{w: io.MultiWriter(tmp, sum)}
	s, err := write(ctx, count, o.Root, paths)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot of %s: %w", o.Root, err)
	}
	s.SHA256, s.Bytes, s.Mode = hex.EncodeToString(sum.Sum(nil)), count.n, mode
	s.Path = filepath.Join(o.Dir, s.SHA256+".tar.gz")
	if err := os.Rename(tmp.Name(), s.Path); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot: %w", err)
	}
	return s, nil
}

// list returns the paths (relative, slash-separated) to put in, sorted, and the mode that
// chose them.
func list(ctx context.Context, o Options) ([]string, Mode, error) {
	skip := func(rel string) bool {
		abs := filepath.Join(o.Root, filepath.FromSlash(rel))
		for _, x := range o.Exclude {
			if x == "" {
				continue
			}
			if abs == x || strings.HasPrefix(abs, x+string(filepath.Separator)) {
				return true
			}
		}
		return false
	}
	if o.Mode == Git {
		if paths, err := gitFiles(ctx, o.Root); err == nil {
			return withDirs(paths, skip), Git, nil
		} else if !errors.Is(err, errNotRepo) {
			return nil, "", err
		}
	}
	var paths []string
	err := filepath.WalkDir(o.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == o.Root {
			return nil
		}
		rel, _ := filepath.Rel(o.Root, p)
		rel = filepath.ToSlash(rel)
		if skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		paths = append(paths, rel)
		return ctx.Err()
	})
	if err != nil {
		return nil, "", fmt.Errorf("snapshot: list %s: %w", o.Root, err)
	}
	slices.Sort(paths)
	return paths, All, nil
}

// errNotRepo reports a root git does not know as a work tree.
var errNotRepo = errors.New("not a git repository")

// gitFiles lists what git sees in root's work tree: tracked files, and untracked ones
// that are not ignored.
func gitFiles(ctx context.Context, root string) ([]string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errNotRepo
	}
	cmd := exec.CommandContext(ctx, "git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if strings.Contains(stderr.String(), "not a git repository") {
			return nil, errNotRepo
		}
		return nil, fmt.Errorf("snapshot: git ls-files in %s: %v: %s", root, err, strings.TrimSpace(stderr.String()))
	}
	var paths []string
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// withDirs adds the directories above every path, drops what skip says and sorts.
func withDirs(paths []string, skip func(string) bool) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		if skip(p) || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
		for d := pathDir(p); d != "" && !seen[d]; d = pathDir(d) {
			seen[d] = true
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

func pathDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return ""
}

// write writes the gzipped tar of paths under root to w.
func write(ctx context.Context, w io.Writer, root string, paths []string) (Snapshot, error) {
	var s Snapshot
	gz, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return s, err
	}
	tw := tar.NewWriter(gz)
	for _, rel := range paths {
		if err := ctx.Err(); err != nil {
			return s, err
		}
		abs := filepath.Join(root, filepath.FromSlash(rel))
		fi, err := os.Lstat(abs)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree but still tracked, or gone meanwhile
		}
		if err != nil {
			return s, err
		}
		h := &tar.Header{Name: rel, ModTime: mtime, Format: tar.FormatPAX, Mode: int64(fi.Mode().Perm())}
		switch {
		case fi.Mode().IsRegular():
			h.Typeflag, h.Size = tar.TypeReg, fi.Size()
		case fi.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, rel+"/"
		case fi.Mode()&fs.ModeSymlink != 0:
			if h.Linkname, err = os.Readlink(abs); err != nil {
				return s, err
			}
			h.Typeflag = tar.TypeSymlink
		default:
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			return s, err
		}
		if h.Typeflag == tar.TypeDir {
			continue
		}
		s.Files++
		if h.Typeflag == tar.TypeReg {
			n, err := copyFile(tw, abs, h.Size)
			if err != nil {
				return s, err
			}
			s.Size += n
		}
	}
	if err := tw.Close(); err != nil {
		return s, err
	}
	return s, gz.Close()
}

// copyFile copies exactly size bytes of the file at path (the size its header gave: a
// file that changed meanwhile is cut, or padded with zeros, to it).
func copyFile(w io.Writer, path string, size int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := io.Copy(w, io.LimitReader(f, size))
	if err != nil {
		return n, err
	}
	if n < size {
		if _, err := io.Copy(w, io.LimitReader(zeros{}, size-n)); err != nil {
			return n, err
		}
	}
	return size, nil
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
