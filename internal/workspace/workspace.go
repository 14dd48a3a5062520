// Package workspace is the directory a server works on and the layout of its state inside
// it (the state directory, its database file, logs and artifacts), and it confines the
// directories callers name to that workspace: a cwd given to a shell session or a task
// resolves inside the project and outside the state (Confine), and a process starts in
// exactly the directory that was checked (OpenDir, Dir.ExecPath).
//
// It stands apart from the store because it is about paths, not records: confining a shell
// session's cwd needs no database.
package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcp-harness/mcp-harness/internal/quote"
)

// StateDirName is the state directory's name inside the workspace unless overridden.
const StateDirName = ".mcp-harness"

// DBFileName is the database's file name inside the state directory.
const DBFileName = "harness.db"

// ErrOutside is returned by Confine for a path that resolves outside the workspace.
var ErrOutside = errors.New("outside the workspace")

// ErrBadDir is returned by Confine for a path inside the workspace that is not an existing
// directory.
var ErrBadDir = errors.New("not an existing directory")

// ErrStateDir is returned by Confine for the state directory (or the artifacts directory)
// or a directory inside it: that is where the database and the logs live, and a command
// run there with a relative path could clobber them.
var ErrStateDir = errors.New("is in the server's state directory")

// MaxPathBytes is the longest cwd accepted, in bytes: PATH_MAX, beyond which no path can be
// opened anyway.
const MaxPathBytes = 4096

// Workspace is the directory a server works on and where its state lives.
type Workspace struct {
	Root         string // absolute and free of symlinks
	StateDir     string // holds the database and logs/; 0700
	ArtifactsDir string // retained artifacts; 0700
}

// Config says where a workspace and its state are. Relative paths are taken
// relative to the current directory, like any path given on a command line.
type Config struct {
	Dir          string // the workspace; "" = the current directory
	StateDir     string // "" = <workspace>/.mcp-harness
	ArtifactsDir string // "" = <state>/artifacts
}

// Open resolves the workspace to an absolute, symlink-free directory and creates the
// state layout: the state dir (0700) with a .gitignore of "*" (so it never shows up in
// the user's git status), logs/ and the artifacts dir. Nothing is created when the
// workspace itself is missing or not a directory.
func Open(cfg Config) (*Workspace, error) {
	ws, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{ws.StateDir, ws.LogsDir(), ws.ArtifactsDir} {
		if err := mkdirPrivate(d); err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
	}
	// Written once: every server start opens the workspace (twice: for its log file, then
	// for its store), and rewriting an unchanged file costs a create and a rename each time.
	ignore, want := filepath.Join(ws.StateDir, ".gitignore"), []byte("*\n")
	if have, err := os.ReadFile(ignore); err != nil || !bytes.Equal(have, want) {
		if err := WritePrivateFile(ignore, want); err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
	}
	return ws, nil
}

// ErrNoState reports a workspace on which no server has kept state: there is no database
// to read.
var ErrNoState = errors.New("no mcp-harness state")

// Find resolves a workspace and its state layout as Open does, but creates nothing: it is for readers (the operator CLI) that must not leave a state
// directory behind in a project no server ran on. A workspace without a database is
// ErrNoState.
func Find(cfg Config) (*Workspace, error) {
	ws, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(ws.DBPath()); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w in %s", ErrNoState, ws.Where(cfg))
		}
		return nil, fmt.Errorf("state: %w", err)
	}
	return ws, nil
}

// Where names a workspace's state in messages: the state dir when one was given, else the
// workspace.
func (ws *Workspace) Where(cfg Config) string {
	if cfg.StateDir != "" {
		return ws.StateDir
	}
	return ws.Root
}

// resolve works out the paths of a workspace's layout without touching the disk
// beyond resolving the workspace directory itself.
func resolve(cfg Config) (*Workspace, error) {
	dir := cfg.Dir
	if dir == "" {
		dir = "."
	}
	root, err := ResolveDir(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	ws := &Workspace{Root: root, StateDir: filepath.Join(root, StateDirName)}
	if cfg.StateDir != "" {
		if ws.StateDir, err = filepath.Abs(cfg.StateDir); err != nil {
			return nil, fmt.Errorf("state dir %s: %w", cfg.StateDir, err)
		}
	}
	ws.ArtifactsDir = filepath.Join(ws.StateDir, "artifacts")
	if cfg.ArtifactsDir != "" {
		if ws.ArtifactsDir, err = filepath.Abs(cfg.ArtifactsDir); err != nil {
			return nil, fmt.Errorf("artifacts dir %s: %w", cfg.ArtifactsDir, err)
		}
	}
	return ws, nil
}

// DBPath is the path of the workspace database.
func (ws *Workspace) DBPath() string { return filepath.Join(ws.StateDir, DBFileName) }

// LogsDir holds one directory of task logs per graph.
func (ws *Workspace) LogsDir() string { return filepath.Join(ws.StateDir, "logs") }

// Confine resolves a directory a caller gave (relative to the workspace root, or absolute)
// and returns its absolute, symlink-free path, refusing with ErrOutside anything
// that leaves the workspace, by ".." or through a symlink, with ErrStateDir the state
// directory and what is inside it, and with ErrBadDir a path inside the workspace that is
// not an existing directory. An empty dir is the root.
//
// The answer holds for the moment of the check: a directory on the path can be swapped for
// a symlink afterwards. To start a process in a directory, use OpenDir, which pins the
// directory that was checked.
func (ws *Workspace) Confine(dir string) (string, error) {
	if len(dir) > MaxPathBytes {
		return "", fmt.Errorf("cwd %s: %w (it is %d bytes; a path is at most %d)", quote.Short(dir), ErrBadDir, len(dir), MaxPathBytes)
	}
	p := dir
	if !filepath.IsAbs(p) {
		p = filepath.Join(ws.Root, p)
	}
	p = filepath.Clean(p)
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		// "../elsewhere" is outside whether or not it exists, and saying "does not exist"
		// would invite the wrong fix.
		if !within(ws.Root, p) {
			return "", fmt.Errorf("cwd %s: %w %s", quote.Short(dir), ErrOutside, ws.Root)
		}
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("cwd %s: %w (it does not exist)", quote.Short(dir), ErrBadDir)
		}
		return "", fmt.Errorf("cwd %s: %w: %v", quote.Short(dir), ErrBadDir, errCause(err))
	}
	if err := ws.check(dir, resolved); err != nil {
		return "", err
	}
	switch fi, err := os.Stat(resolved); {
	case err != nil:
		return "", fmt.Errorf("cwd %s: %w: %v", quote.Short(dir), ErrBadDir, errCause(err))
	case !fi.IsDir():
		return "", fmt.Errorf("cwd %s: %w (it is a file)", quote.Short(dir), ErrBadDir)
	}
	return resolved, nil
}

// check refuses a resolved path that is outside the workspace or in its state. dir is what
// the caller gave, for the message.
func (ws *Workspace) check(dir, resolved string) error {
	if !within(ws.Root, resolved) {
		return fmt.Errorf("cwd %s: %w %s (it resolves to %s)", quote.Short(dir), ErrOutside, ws.Root, resolved)
	}
	if resolved == ws.Root {
		// The refusal below needs a state directory that holds resolved and not the root:
		// for the root itself, the cwd of nearly every task, that cannot be, and resolving
		// the state directories again was seven lstat calls a task start (issue 29).
		return nil
	}
	for _, state := range []string{ws.StateDir, ws.ArtifactsDir} {
		if real, err := filepath.EvalSymlinks(state); err == nil {
			state = real
		}
		// A state directory that holds the whole workspace (an odd --state-dir) would
		// refuse every cwd: there the rule cannot apply.
		if within(state, resolved) && !within(state, ws.Root) {
			return fmt.Errorf("cwd %s: %w %s, which holds the database and logs; give a directory of the project outside it",
				quote.Short(dir), ErrStateDir, state)
		}
	}
	return nil
}

// errCause is the reason of a failed path operation without the path, which the message
// already quotes (shortened).
func errCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// within reports whether path p is root or below it. Both must be clean and absolute.
func within(root, p string) bool {
	if p == root {
		return true
	}
	prefix := root
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	return strings.HasPrefix(p, prefix)
}

// ResolveDir returns dir as an absolute, symlink-free path of an existing directory.
func ResolveDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", errors.New("not a directory")
	}
	return resolved, nil
}

// mkdirPrivate creates dir (and its parents) and makes it 0700 whatever the umask.
func mkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// WritePrivateFile writes data to path with mode 0600 whatever the umask, through a
// temporary file and a rename so a reader never sees half of it.
func WritePrivateFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o600) // CreateTemp already uses 0600; this survives a changed default
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
