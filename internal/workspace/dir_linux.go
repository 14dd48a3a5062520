package workspace

import (
	"os"
	"strconv"
)

// pin checks the directory that was opened, as the kernel names it, and has the child
// enter it through /proc/self/fd (see Dir.ExecPath). Without /proc it falls back to the
// path.
func (ws *Workspace) pin(d *Dir, dir string) error {
	link := "/proc/self/fd/" + strconv.Itoa(int(d.f.Fd()))
	real, err := os.Readlink(link)
	if err != nil {
		return ws.pinByPath(d, dir)
	}
	if err := ws.check(dir, real); err != nil {
		return err
	}
	d.Path, d.exec = real, link
	return nil
}

// recheck is the last step of Recheck: where the held directory is now, as the kernel
// names it, checked as pin checks it.
func (ws *Workspace) recheck(d *Dir, dir string) (string, error) {
	if d.exec == d.Path { // pinned by path: no name for the open directory to read
		return "", ErrDirChanged
	}
	real, err := os.Readlink(d.exec)
	if err != nil {
		return "", ErrDirChanged
	}
	if err := ws.check(dir, real); err != nil {
		return "", err
	}
	return real, nil
}
