package sandbox

import (
	"fmt"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// mountPlan is the view of the file system a spawner thread gives its commands (the
// mount layer): everything read-only but the writable roots, and the protected
// directories read-only again inside them. Landlock alone does not cover chmod, chown or
// file times, and cannot take a directory back out of a writable one; read-only mounts
// do both, as bubblewrap's binds do for Claude Code. They are made in a mount namespace
// of the thread's own, so the rest of the server keeps the ordinary view.
type mountPlan struct {
	writable  []string // directory roots, none inside another
	protected []string // existing protected directories inside a writable root
	whole     bool     // a writable root is "/": nothing to make read-only but the protected
}

// mountPlan is m's view on this server.
func (l *Launcher) mountPlan(m Mode) *mountPlan {
	v := &mountPlan{}
	roots := l.cfg.Roots(m)
	for _, r := range roots {
		if r.Kind == RootDevice {
			continue // device files are exempt from read-only mounts: nothing to do
		}
		if st, err := os.Stat(r.Path); err != nil || !st.IsDir() {
			continue
		}
		if r.Path == "/" {
			v.whole = true
			continue
		}
		v.writable = append(v.writable, r.Path)
	}
	for _, p := range l.cfg.Protected {
		inside := slices.ContainsFunc(roots, func(r Root) bool { return r.Kind != RootDevice && r.Contains(p) })
		if st, err := os.Stat(p); err == nil && st.IsDir() && inside {
			v.protected = append(v.protected, p)
		}
	}
	return v
}

// enter gives the calling (locked) thread a mount namespace of its own with the view.
// The writable roots and the protected directories are cloned from the ordinary view
// first (open_tree), the whole tree is then made read-only (mount_setattr, recursive), and
// the clones are attached back on top: the roots as they were, the protected directories
// made read-only. A command's rename or removal of a protected directory then fails too
// (EBUSY): it is a mount point in the command's own namespace.
func (v *mountPlan) enter() error {
	if err := unix.Unshare(unix.CLONE_FS | unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare: %w", err)
	}
	// Slave: mounts made later in the ordinary view still show here, and nothing made here
	// shows there.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("make / a slave mount: %w", err)
	}
	clone := func(path string) (int, error) {
		fd, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.AT_RECURSIVE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			return -1, fmt.Errorf("clone %s: %w", path, err)
		}
		return fd, nil
	}
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, p := range append(slices.Clone(v.writable), v.protected...) {
		fd, err := clone(p)
		if err != nil {
			return err
		}
		fds = append(fds, fd)
	}
	readOnly := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if !v.whole {
		if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, readOnly); err != nil {
			return fmt.Errorf("make / read-only: %w", err)
		}
	}
	for i, p := range v.writable {
		if err := unix.MoveMount(fds[i], "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("attach %s: %w", p, err)
		}
	}
	for i, p := range v.protected {
		fd := fds[len(v.writable)+i]
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, readOnly); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
		if err := unix.MoveMount(fd, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("attach %s: %w", p, err)
		}
	}
	return nil
}

// mountsPossible says whether spawner threads can make mount namespaces: as root, or as
// an ordinary user whose server entered a user namespace of its own at start
// (userns_linux.go). Whether the system then allows it is found by trying (spawner).
func mountsPossible() (bool, string) {
	if os.Geteuid() == 0 {
		return true, ""
	}
	return usernsEntered()
}
