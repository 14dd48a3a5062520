package operator

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// stateDirFD opens the state directory O_PATH, for binding and connecting through
// /proc/self/fd (see socket.go).
func stateDirFD(stateDir string) (int, error) {
	fd, err := unix.Open(stateDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: stateDir, Err: err}
	}
	return fd, nil
}

func viaFD(fd int, name string) string { return "/proc/self/fd/" + strconv.Itoa(fd) + "/" + name }

// listenSocket binds and listens on name in stateDir, mode 0600, and returns the listener
// and a function that removes the socket file.
//
// No path is followed once it is made. A file already under our own name (the pid and
// start time of this process) is no other live server's: a leftover of an earlier boot, or
// something planted, a symlink say. It is removed first (unlinkat never follows a
// symlink), so that bind makes the socket itself. Its mode is given before bind: Linux
// makes a socket's file with the mode of the socket's inode less the umask (unix_bind),
// which fchmod on the socket sets, so there is no chmod of a path that a command able to
// write the state directory could swap for a symlink meanwhile. The file is then checked
// through an O_PATH|O_NOFOLLOW descriptor: a socket, 0600 (a umask that took the owner's
// bits is undone through that descriptor, never through the name).
func listenSocket(stateDir, name string) (*net.UnixListener, func() error, error) {
	dirfd, err := stateDirFD(stateDir)
	if err != nil {
		return nil, nil, err
	}
	fail := func(what string, err error) (*net.UnixListener, func() error, error) {
		unix.Close(dirfd)
		return nil, nil, fmt.Errorf("%s %s in %s: %w", what, name, stateDir, err)
	}
	if err := unix.Unlinkat(dirfd, name, 0); err != nil && err != unix.ENOENT {
		return fail("remove what is already at", err)
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return fail("make a socket for", err)
	}
	if err := unix.Fchmod(fd, 0o600); err != nil {
		unix.Close(fd)
		return fail("set the mode of", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: viaFD(dirfd, name)}); err != nil {
		unix.Close(fd)
		return fail("bind", err)
	}
	unlink := func() { _ = unix.Unlinkat(dirfd, name, 0) }
	if err := checkSocketFile(dirfd, name); err != nil {
		unix.Close(fd)
		unlink()
		return fail("check", err)
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		unix.Close(fd)
		unlink()
		return fail("listen on", err)
	}
	f := os.NewFile(uintptr(fd), name)
	ln, err := net.FileListener(f) // a dup of fd: f is closed either way
	f.Close()
	if err != nil {
		unlink()
		return fail("listen on", err)
	}
	l := ln.(*net.UnixListener)
	l.SetUnlinkOnClose(false) // its path names a descriptor: removed by name below
	remove := func() error {
		defer unix.Close(dirfd)
		if err := unix.Unlinkat(dirfd, name, 0); err != nil && err != unix.ENOENT {
			return fmt.Errorf("remove %s in %s: %w", name, stateDir, err)
		}
		return nil
	}
	return l, remove, nil
}

// checkSocketFile checks that name in directory dirfd is a socket of mode 0600, through
// a descriptor of the file itself (O_PATH|O_NOFOLLOW: a symlink is opened as one, not
// followed), and makes it 0600 through that descriptor when the umask took some of it.
func checkSocketFile(dirfd int, name string) error {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return errors.New("it is not the socket just bound: something replaced it")
	}
	if st.Mode&0o7777 == 0o600 {
		return nil
	}
	// fchmod does not take an O_PATH descriptor; its /proc/self/fd link names the file
	// itself, whatever its name now says.
	return unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), 0o600)
}

// dialSocket connects to name in stateDir.
func dialSocket(stateDir, name string) (*net.UnixConn, error) {
	fd, err := stateDirFD(stateDir)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return net.DialUnix("unix", nil, &net.UnixAddr{Name: viaFD(fd, name), Net: "unix"})
}
