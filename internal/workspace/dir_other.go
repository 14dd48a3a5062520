//go:build !linux

package workspace

// pin checks the path once more and has the child change into it by path: macOS and the
// BSDs have no /proc/self/fd whose entries a chdir follows to the open directory, and
// os/exec offers no fchdir, so a swap in the instant between this check and the child's
// chdir is not caught (README, Platforms).
func (ws *Workspace) pin(d *Dir, dir string) error { return ws.pinByPath(d, dir) }

// recheck is the last step of Recheck. Without a name for the open directory, the child
// enters it by path: only a fresh OpenDir checks that path right before the start.
func (ws *Workspace) recheck(d *Dir, dir string) (string, error) { return "", ErrDirChanged }
