package operator

import (
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// checkPeer refuses a peer that runs as another user than this server (LOCAL_PEERCRED,
// what getpeereid reads). macOS has no no_new_privs to tell a confined command by, and
// the Seatbelt profile leaves Unix sockets open: there a confined command can reach the
// socket (the README says so).
func checkPeer(c *net.UnixConn) (Peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *unix.Xucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	}); err != nil {
		return Peer{}, err
	}
	if cerr != nil {
		return Peer{}, fmt.Errorf("read the peer's credentials: %w", cerr)
	}
	p := Peer{Uid: int(cred.Uid)}
	if uid := os.Geteuid(); p.Uid != uid {
		return p, refusedf("this server runs as uid %d and takes operator commands only from its own user; the connection came from uid %d", uid, p.Uid)
	}
	return p, nil
}

// checkServer is checkPeer the other way, for an operator command: the process that
// listens on the socket it reached must be the server the socket's name says (that pid
// and start time, LOCAL_PEERPID) and run by this user. macOS has no no_new_privs: a
// confined command that can listen there is not told from a server (see checkPeer).
func checkServer(c *net.UnixConn, e Endpoint) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Xucred
	var pid int
	var cerr, perr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		pid, perr = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	}); err != nil {
		return err
	}
	if err := errors.Join(cerr, perr); err != nil {
		return fmt.Errorf("read who listens on %s: %w", e.Name, err)
	}
	switch {
	case pid != e.Pid:
		return notServerf(e, "pid %d listens on it", pid)
	case int(cred.Uid) != os.Geteuid():
		return notServerf(e, "its process runs as uid %d, not as you (uid %d)", cred.Uid, os.Geteuid())
	case !e.Live():
		return notServerf(e, "pid %d is not the process that started at the time its name says", pid)
	}
	return nil
}
