package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/mcp-harness/mcp-harness/internal/quote"
)

// Dir is a directory of the workspace held open so that a process can be started in
// exactly the directory that was checked. Confine's answer holds only for the moment of the
// check: a directory on the path swapped for a symlink between the check and the child's
// chdir would send the child outside the workspace. A Dir closes that window where the
// system allows it (see ExecPath).
type Dir struct {
	// Path is the directory's absolute, symlink-free path as checked, for records and
	// listings.
	Path string
	f    *os.File
	exec string
}

// OpenDir confines dir as Confine does, opens the directory it resolves to without
// following a symlink in its last component, and checks again that the directory opened is
// inside the workspace and outside its state: a path changed since Confine is refused
// (ErrOutside, ErrStateDir or ErrBadDir) rather than followed. The caller passes
// ExecPath to exec.Cmd.Dir and closes the Dir once the process has started.
func (ws *Workspace) OpenDir(dir string) (*Dir, error) {
	resolved, err := ws.Confine(dir)
	if err != nil {
		return nil, err
	}
	// O_NOFOLLOW: a last component swapped for a symlink since Confine fails to open
	// (ELOOP) instead of being followed; one swapped higher up is caught by pin.
	f, err := os.OpenFile(resolved, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("cwd %s: %w: it changed as it was opened (%v)", quote.Short(dir), ErrBadDir, errCause(err))
	}
	d := &Dir{Path: resolved, f: f}
	if err := ws.pin(d, dir); err != nil {
		f.Close()
		return nil, err
	}
	return d, nil
}

// ExecPath is the path to give exec.Cmd.Dir. On Linux it is /proc/self/fd/N of the open
// directory: the child inherits the parent's descriptors and changes directory before it
// closes or rearranges any (syscall.forkAndExecInChild), and the magic link names the open
// directory itself, not a path looked up again, so the child enters exactly the directory
// that was checked. Elsewhere, or without /proc, it is Path, checked once more just before
// (see pin): a swap in the instant between that check and the child's chdir is not caught.
func (d *Dir) ExecPath() string { return d.exec }

// File is the directory held open, for a check that a path opened again elsewhere (in
// a sandbox's own view of the file system) is this very directory.
func (d *Dir) File() *os.File { return d.f }

// Close releases the directory. Call it once the process has started.
func (d *Dir) Close() error { return d.f.Close() }

// ErrDirChanged is returned by Recheck when the Dir can no longer stand for the directory:
// open it again (OpenDir), which checks it from scratch and says what is wrong, if anything.
var ErrDirChanged = errors.New("the directory changed since it was opened")

// Recheck checks again a Dir that OpenDir(dir) returned earlier, for a process to start in
// it now, as OpenDir(dir) would check it: dir must still name the directory held open, and
// that directory must still be inside the workspace and outside its state. It returns the
// directory's path as checked (for PWD and records; Dir.Path is what it was when opened).
// A directory renamed or replaced since, or anything Recheck cannot tell cheaply, is
// ErrDirChanged or a confinement error. It costs a few system calls where OpenDir costs a
// few dozen, and is safe to call from several goroutines at once, so a caller starting
// many processes in one directory can hold it open between them. ExecPath stays valid:
// the child enters the directory held open, whose place was checked here.
func (ws *Workspace) Recheck(d *Dir, dir string) (string, error) {
	p := dir
	if !filepath.IsAbs(p) {
		p = filepath.Join(ws.Root, p)
	}
	// Clean removes every "..", so the kernel's walk below (which follows symlinks, as
	// Confine's EvalSymlinks does) resolves p as Confine would.
	now, err := os.Stat(filepath.Clean(p))
	if err != nil {
		return "", ErrDirChanged
	}
	held, err := d.f.Stat()
	if err != nil || !os.SameFile(held, now) {
		return "", ErrDirChanged
	}
	return ws.recheck(d, dir)
}

// pinByPath is pin where the open directory cannot be named: it checks that the path
// still resolves inside the workspace, to the directory that was opened, and has the child
// change into it by path.
func (ws *Workspace) pinByPath(d *Dir, dir string) error {
	real, err := ws.Confine(d.Path)
	if err != nil {
		return fmt.Errorf("cwd %s changed as it was opened: %w", quote.Short(dir), err)
	}
	opened, err := d.f.Stat()
	if err != nil {
		return fmt.Errorf("cwd %s: %w: %v", quote.Short(dir), ErrBadDir, err)
	}
	now, err := os.Stat(real)
	if err != nil || !os.SameFile(opened, now) {
		return fmt.Errorf("cwd %s: %w: it changed as it was opened", quote.Short(dir), ErrBadDir)
	}
	d.Path, d.exec = real, real
	return nil
}
