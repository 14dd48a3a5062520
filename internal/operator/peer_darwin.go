package operator

import (
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
