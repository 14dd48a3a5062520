package pty

import "golang.org/x/sys/unix"

// IsTerminal reports whether fd is a terminal: whether its termios can be read.
func IsTerminal(fd uintptr) bool {
	_, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
	return err == nil
}
