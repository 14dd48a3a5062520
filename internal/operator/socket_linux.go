package operator

import (
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
func listenSocket(stateDir, name string) (*net.UnixListener, func() error, error) {
	fd, err := stateDirFD(stateDir)
	if err != nil {
		return nil, nil, err
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: viaFD(fd, name), Net: "unix"})
	if err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("listen on %s in %s: %w", name, stateDir, err)
	}
	l.SetUnlinkOnClose(false) // its path names a descriptor: removed by name below
	if err := unix.Fchmodat(fd, name, 0o600, 0); err != nil {
		l.Close()
		_ = unix.Unlinkat(fd, name, 0)
		unix.Close(fd)
		return nil, nil, fmt.Errorf("chmod %s in %s: %w", name, stateDir, err)
	}
	remove := func() error {
		defer unix.Close(fd)
		if err := unix.Unlinkat(fd, name, 0); err != nil && err != unix.ENOENT {
			return fmt.Errorf("remove %s in %s: %w", name, stateDir, err)
		}
		return nil
	}
	return l, remove, nil
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
