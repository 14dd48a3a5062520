//go:build !linux

package operator

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// maxSocketPath is the longest socket path the BSDs and macOS take (sun_path less its
// terminating NUL).
const maxSocketPath = 103

// socketPath is name in stateDir, when the path fits a socket address.
func socketPath(stateDir, name string) (string, error) {
	p := filepath.Join(stateDir, name)
	if len(p) > maxSocketPath {
		return "", fmt.Errorf("the state directory's path is too long for a Unix socket (%d bytes, at most %d): give a shorter --state-dir", len(p), maxSocketPath)
	}
	return p, nil
}

// listenSocket binds and listens on name in stateDir, mode 0600, and returns the listener
// and a function that removes the socket file. A file already under our own name is a
// leftover or something planted (no other live process has this pid and start time): it
// is removed first, without following a symlink. The BSDs make a socket's file with the
// umask's mode whatever the socket's, so the mode is set after bind, without following a
// symlink that may have been swapped in meanwhile.
func listenSocket(stateDir, name string) (*net.UnixListener, func() error, error) {
	p, err := socketPath(stateDir, name)
	if err != nil {
		return nil, nil, err
	}
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		return nil, nil, err
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
	if err != nil {
		return nil, nil, err
	}
	l.SetUnlinkOnClose(false)
	if err := unix.Fchmodat(unix.AT_FDCWD, p, 0o600, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		l.Close()
		os.Remove(p)
		return nil, nil, err
	}
	return l, func() error {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}, nil
}

// dialSocket connects to name in stateDir.
func dialSocket(stateDir, name string) (*net.UnixConn, error) {
	p, err := socketPath(stateDir, name)
	if err != nil {
		return nil, err
	}
	return net.DialUnix("unix", nil, &net.UnixAddr{Name: p, Net: "unix"})
}
