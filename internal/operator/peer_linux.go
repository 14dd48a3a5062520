package operator

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// checkPeer refuses a peer that runs as another user than this server, or that is
// confined as the agent's commands are. The kernel says who connected (SO_PEERCRED: the
// pid and uid at connect time, the uid as seen from this process's user namespace, which
// an ordinary user's server has of its own). A confined command always runs with
// no_new_privs (internal/sandbox sets it for Landlock and seccomp, and nothing can clear
// it), so a peer whose /proc/<pid>/status says NoNewPrivs: 1 is refused: a confined
// command could otherwise type into another session, or answer a question, that is less
// confined than itself. Where the kernel hands out a pidfd of the peer (SO_PEERPIDFD,
// Linux 6.5), the peer must still be alive once its status has been read, so a pid
// reused meanwhile is not judged in its place.
func checkPeer(c *net.UnixConn) (Peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *unix.Ucred
	var cerr, perr error
	pidfd := -1
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		pidfd, perr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD)
	}); err != nil {
		return Peer{}, err
	}
	if cerr != nil {
		return Peer{}, fmt.Errorf("read the peer's credentials: %w", cerr)
	}
	if perr == nil {
		defer unix.Close(pidfd)
	}
	p := Peer{Pid: int(cred.Pid), Uid: int(cred.Uid)}
	if uid := os.Geteuid(); p.Uid != uid {
		return p, refusedf("this server runs as uid %d and takes operator commands only from its own user; the connection came from uid %d (pid %d)", uid, p.Uid, p.Pid)
	}
	nnp, err := noNewPrivs(p.Pid)
	if err != nil {
		return p, refusedf("cannot tell whether the connecting process (pid %d) is confined: %v", p.Pid, err)
	}
	if perr == nil {
		if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
			return p, refusedf("the connecting process (pid %d) is gone", p.Pid)
		}
	}
	if nnp {
		return p, refusedf("the connecting process (pid %d) runs with no_new_privs, as the agent's confined commands do; run mcp-harness's operator commands from your own terminal, outside any sandbox", p.Pid)
	}
	return p, nil
}

// noNewPrivs reads the NoNewPrivs line of /proc/<pid>/status. A kernel older than 4.10
// has none: it cannot confine commands either (Landlock needs 5.13), so none means 0.
func noNewPrivs(pid int) (bool, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false, err
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("NoNewPrivs:")); ok {
			switch string(bytes.TrimSpace(v)) {
			case "0":
				return false, nil
			case "1":
				return true, nil
			}
			return false, errors.New("NoNewPrivs: " + string(bytes.TrimSpace(v)))
		}
	}
	return false, nil
}

// checkServer is checkPeer the other way, for an operator command: the process that
// listens on the socket it reached must be the server the socket's name says (that pid,
// with that start time), run by this user, and not confined (no no_new_privs). A socket
// in the state directory is only a file, and where a confined command can write that
// directory (a server without its mount layer) it can make one under a server's name,
// or remove a server's and listen in its place, and then claim a session that asks for
// a password: the person's answer would go to it. The kernel says who listens
// (SO_PEERCRED on our side of the connection: whoever called listen), and a pidfd of it
// (SO_PEERPIDFD, Linux 6.5) proves it still runs once its /proc entries have been read,
// so that a pid reused meanwhile is not judged in its place; older kernels give no pidfd
// and that moment goes unchecked.
func checkServer(c *net.UnixConn, e Endpoint) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr, perr error
	pidfd := -1
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		pidfd, perr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("read who listens on %s: %w", e.Name, cerr)
	}
	if perr == nil {
		defer unix.Close(pidfd)
	}
	pid, uid := int(cred.Pid), int(cred.Uid)
	switch {
	case pid != e.Pid:
		return notServerf(e, "pid %d listens on it", pid)
	case uid != os.Geteuid():
		return notServerf(e, "its process runs as uid %d, not as you (uid %d)", uid, os.Geteuid())
	case !e.Live():
		return notServerf(e, "pid %d is not the process that started at the time its name says", pid)
	}
	nnp, err := noNewPrivs(pid)
	if err != nil {
		return notServerf(e, "cannot tell whether pid %d is confined: %v", pid, err)
	}
	if perr == nil {
		if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
			return notServerf(e, "pid %d went away while it was checked", pid)
		}
	}
	if nnp {
		return notServerf(e, "pid %d runs with no_new_privs, as the agent's confined commands do (a server started with no_new_privs cannot be reached either)", pid)
	}
	return nil
}
