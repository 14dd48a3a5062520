package pty

import (
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"strings"

	"github.com/mcp-harness/mcp-harness/internal/procstat"
	"golang.org/x/sys/unix"
)

// On Linux a session can tell when its program waits for the person: the terminal names
// its foreground process group (TIOCGPGRP on the master), /proc says what each process
// of that group is blocked in (/proc/<pid>/syscall: the call and its arguments; the
// file descriptor it reads says whether that is the terminal), and the terminal's modes
// (TCGETS on the master, which Linux answers with the slave's termios, as pexpect's
// waitnoecho relies on) say what kind of answer it expects.
//
// Relays. A program that runs another on a terminal of its own (sudo with use_pty,
// script, su, docker's shim) reads our terminal only to pass keys on: the question is
// whether what runs on the inner terminal waits. The relay holds the inner terminal's
// master (/dev/ptmx among its descriptors; its fdinfo names the slave as tty-index), and
// the processes on the inner terminal say so in /proc/<pid>/stat (tty_nr, their
// controlling terminal, and tpgid, that terminal's foreground group), so the inner
// foreground group is judged as ours is. Its modes are read from the inner slave, opened
// read-only with O_NOCTTY|O_NONBLOCK just for TCGETS and TIOCINQ (a pty pair shares one
// termios). Opening /proc/<relay>/fd/N of the master is no way in: it opens /dev/ptmx
// afresh, a new terminal. Where the relay's descriptors cannot be read (a setuid relay
// seen by an ordinary user) the inner terminal is found from its descendants' tty_nr;
// where the inner slave cannot be opened, our own terminal's modes stand in.
//
// A relay whose inner side is out of sight (ssh to another machine, docker exec over
// the daemon's socket, a tmux client) waits for our terminal and a socket or another
// terminal's master at once: such a wait is reported opaque, and the caller gives it
// longer quiet before it counts as a question (see relayQuiet). A Unix socket whose peer
// the waiting process holds too is its own wake-up, not a far side (see ownSocketPair).
//
// Readers outside the foreground group. A program can open the terminal by name, from
// another session: gpg-agent's pinentry-curses reads /dev/pts/N while gpg, the
// foreground, waits on the agent's socket. When no process of the foreground group
// reads, any process that has the terminal open without it being its controlling
// terminal and is blocked reading it is the one that waits, judged as a reader of the
// group is: the tmux server (a daemon started in the session, holding the terminal its
// client passed it, and a master for each pane) is a relay to the pane's terminal.

// foregroundKnown is true where foreground can answer.
const foregroundKnown = true

// maxRelayDepth bounds how many relays deep foreground looks (sudo under script under
// sudo...).
const maxRelayDepth = 4

// ptsPath returns the path of the terminal's slave side, /dev/pts/N, or "" if the
// system will not say.
func ptsPath(master *os.File) string {
	rc, err := master.SyscallConn()
	if err != nil {
		return ""
	}
	n, ierr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCGPTN) }); err != nil || ierr != nil {
		return ""
	}
	return "/dev/pts/" + strconv.Itoa(n)
}

// inputKindOf tells the kind of answer a terminal's modes ask for.
func inputKindOf(tio *unix.Termios) InputKind {
	switch {
	case tio.Lflag&unix.ICANON == 0:
		return InputKeys
	case tio.Lflag&unix.ECHO == 0:
		return InputPassword
	}
	return InputLine
}

// foreground reports whether a process waits for input from the session's terminal (see
// the comment at the top), which one, and what the terminal's modes ask for.
func (s *session) foreground() (foregroundRead, bool) {
	if s.pts == "" || s.isClosed() {
		return foregroundRead{}, false
	}
	rc, err := s.master.SyscallConn()
	if err != nil {
		return foregroundRead{}, false
	}
	var pgrp int
	var tio, tio2 *unix.Termios
	var perr, terr error
	if err := rc.Control(func(fd uintptr) {
		pgrp, perr = unix.IoctlGetInt(int(fd), unix.TIOCGPGRP)
		tio, terr = unix.IoctlGetTermios(int(fd), unix.TCGETS)
	}); err != nil || perr != nil || terr != nil || pgrp <= 0 {
		return foregroundRead{}, false
	}
	t := terminal{path: s.pts, byCtty: true}
	var procs processTable
	fg, ok := t.waiting(&procs, pgrp, s.pid, inputKindOf(tio), 0)
	if !ok {
		return foregroundRead{}, false
	}
	// Asked after the reader was seen blocked, so that whatever it wrote before it
	// blocked has left the terminal by now (syncReader then finds it in the ring).
	var pending bool
	var uerr error
	if err := rc.Control(func(fd uintptr) {
		pending, uerr = unread(int(fd))
		if uerr == nil {
			tio2, terr = unix.IoctlGetTermios(int(fd), unix.TCGETS)
		}
	}); err != nil || uerr != nil || pending {
		// Output the program wrote before it blocked is still on its way to the reader:
		// what it asks is not on record yet.
		return foregroundRead{}, false
	}
	if terr != nil || inputKindOf(tio2) != inputKindOf(tio) {
		// The modes changed while the reader was looked at (python switches to raw
		// keys just before its prompt): the kind read first may not be what it waits
		// with, and the program was moving. Look again later.
		return foregroundRead{}, false
	}
	if pendingInput(s.pts) {
		// Input we wrote has not been read yet: the program is runnable, only not yet
		// scheduled, and /proc still shows the read it is about to return from.
		return foregroundRead{}, false
	}
	fg.pgrp = pgrp
	return fg, true
}

// terminal is a terminal's slave side, as the processes that use it name it: by its
// path, and, for the processes it is the controlling terminal of (byCtty), as /dev/tty.
type terminal struct {
	path     string
	byCtty   bool
	password bool // its modes ask for a password (see readingTTY)
}

// waiting reports which process of foreground group pgrp (of session sid, 0 for any)
// waits for input from t, or else which process outside it does; kind is what t's modes
// ask for. A reader that relays to a terminal of its own is looked through (depth says
// how many relays deep this already is). procs is walked once, when first needed.
func (t terminal) waiting(procs *processTable, pgrp, sid int, kind InputKind, depth int) (foregroundRead, bool) {
	raw := kind == InputKeys
	t.password = kind == InputPassword
	reader, w := 0, waitSet{}
	// The group's leader is usually the reader (a lone program, the head of a
	// pipeline); the rest of the group is looked for only when it is not.
	if w = t.readingTTY(pgrp, raw); w.tty {
		reader = pgrp
	} else {
		for _, p := range procs.load() {
			if p.pgrp == pgrp && (sid == 0 || p.sid == sid) && p.pid != pgrp {
				if w = t.readingTTY(p.pid, raw); w.tty {
					reader = p.pid
					break
				}
			}
		}
	}
	if reader == 0 {
		// A reader outside the group is looked through as one inside is: a tmux server
		// (a daemon started in the session, holding our terminal its client passed it)
		// relays to its panes' terminals. Its sockets alone do not make it opaque: a
		// program that opened our terminal by name asks the question itself (pinentry's
		// socket is its line to gpg-agent, which waits for its answer).
		if reader, w = t.strayReader(procs, sid, raw); reader == 0 {
			return foregroundRead{}, false
		}
		w.other = false
		t.byCtty = false // our terminal is not the stray reader's controlling one
	}
	if depth < maxRelayDepth {
		if inner, ok := t.relayInner(reader, procs); ok {
			fg, ok := inner.through(procs, reader, kind, depth+1)
			// Still blocked after the inner side was: it has passed on all the inner
			// side wrote (its wait would have ended on the master otherwise).
			if !ok || fg.pid != reader && !t.readingTTY(reader, raw).tty {
				return foregroundRead{}, false
			}
			return fg, true
		}
	}
	return foregroundRead{pid: reader, kind: kind, opaque: w.other}, true
}

// through judges the inner terminal t of relay: the answer is its foreground group's,
// or, with nothing on it to be seen, the relay's own wait, opaque.
func (t terminal) through(procs *processTable, relay int, outer InputKind, depth int) (foregroundRead, bool) {
	tpgid := 0
	for _, p := range procs.load() {
		if p.tty == t.path && p.tpgid > 0 {
			tpgid = p.tpgid
			break
		}
	}
	if tpgid == 0 {
		return foregroundRead{pid: relay, kind: outer, opaque: true}, true
	}
	kind, pending, ok := t.modes()
	if !ok {
		kind = outer
	}
	if pending {
		return foregroundRead{}, false // keys passed on and not yet read: it is about to wake
	}
	fg, waits := t.waiting(procs, tpgid, 0, kind, depth)
	if again, _, known := t.modes(); waits && ok && known && again != kind {
		return foregroundRead{}, false // the modes changed across the look: see foreground
	}
	return fg, waits
}

// modes reads t's modes and whether its input queue holds anything, from the slave side
// (see pendingInput).
func (t terminal) modes() (kind InputKind, pending, ok bool) {
	fd, err := unix.Open(t.path, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", false, false
	}
	defer unix.Close(fd)
	tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return "", false, false
	}
	pending, err = unread(fd)
	return inputKindOf(tio), err == nil && pending, true
}

// unread reports whether terminal descriptor fd has anything to read, counting what the
// other side wrote that is still on its way through the kernel. TIOCINQ counts only what
// the line discipline has taken: a write stays a while in the terminal's flip buffer
// until a kernel worker moves it on, and on a loaded machine TIOCINQ says 0 for a write
// the program made well before it blocked. poll runs that work first (n_tty_poll) and
// counts it. In line mode, as TIOCINQ, it counts only whole lines.
func unread(fd int) (bool, error) {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(p, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, err
		}
		return p[0].Revents&unix.POLLIN != 0, nil
	}
}

// relayInner returns the terminal process pid relays to: the slave of a pty master it
// holds, or, where its descriptors cannot be read, the controlling terminal of a
// descendant that is not t.
func (t terminal) relayInner(pid int, procs *processTable) (terminal, bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	names, err := readDirNames(dir)
	if err == nil {
		holds := false
		for _, n := range names {
			if link, err := os.Readlink(dir + n); err != nil || link != "/dev/ptmx" {
				continue
			}
			holds = true
			if idx, ok := ttyIndex("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + n); ok {
				return terminal{path: "/dev/pts/" + strconv.Itoa(idx), byCtty: true}, true
			}
		}
		if !holds {
			return terminal{}, false
		}
	}
	// A master without tty-index (kernels before 5.1?), or descriptors out of reach.
	below := map[int]bool{pid: true}
	for changed := true; changed; {
		changed = false
		for _, p := range procs.load() {
			if !below[p.pid] && below[p.ppid] {
				below[p.pid], changed = true, true
			}
		}
	}
	for _, p := range procs.load() {
		if p.pid != pid && below[p.pid] && p.tty != "" && p.tty != t.path {
			return terminal{path: p.tty, byCtty: true}, true
		}
	}
	if err == nil {
		return terminal{path: "/dev/ptmx"}, true // a master, and nothing on it in sight: opaque
	}
	return terminal{}, false
}

// ttyIndex reads the "tty-index:" line of a pty master's fdinfo.
func ttyIndex(fdinfo string) (int, bool) {
	b, err := os.ReadFile(fdinfo)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "tty-index:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return n, err == nil
		}
	}
	return 0, false
}

// strayReader returns a process that reads t without t being its controlling terminal
// (it opened it by name: pinentry; or was passed it: the tmux server), and what it
// waits for, or 0. Only processes started since the session's
// program (the one the terminal was made for, sid) and asleep in a call that can wait
// for input are looked at closer: the daemons that were there before cannot know the
// terminal, and reading each one's syscall would cost milliseconds a check.
func (t terminal) strayReader(procs *processTable, sid int, raw bool) (int, waitSet) {
	t.byCtty = false // their /dev/tty is another terminal, or none
	var since uint64
	for _, p := range procs.load() {
		if p.pid == sid {
			since = p.start
		}
	}
	for _, p := range procs.load() {
		if p.state != 'S' || p.tty == t.path || p.start < since || since == 0 {
			continue
		}
		sc, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/syscall")
		if err != nil {
			continue
		}
		f := strings.Fields(string(sc))
		if len(f) < 3 {
			continue
		}
		nr, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || waitSyscall(nr) == waitOther {
			continue
		}
		if w := t.readingTTY(p.pid, raw); w.tty {
			return p.pid, w
		}
	}
	return 0, waitSet{}
}

// pendingInput reports whether the terminal's input queue (what was typed and not yet
// read by the program) holds anything, asking the slave side: the master's TIOCINQ counts
// the other direction. The slave is opened only for the question (O_NOCTTY, so it never
// becomes this process's controlling terminal) and closed at once: held open, it would
// keep the master from seeing the hangup when the program exits. Unknown counts as empty.
func pendingInput(pts string) bool {
	fd, err := unix.Open(pts, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	pending, err := unread(fd)
	return err == nil && pending
}

// waitSet is what a process is blocked waiting for: the terminal (tty), and, in a
// select, poll or epoll with it, something that is neither the terminal nor an
// ordinary local wake-up: a socket or a pty master (other), as a relay waits.
type waitSet struct{ tty, other bool }

// readingTTY reports what process pid is blocked waiting for, as far as t is concerned.
func (t terminal) readingTTY(pid int, raw bool) waitSet {
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return waitSet{}
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) || stat[i+2] != 'S' {
		return waitSet{} // running, stopped or gone: not waiting
	}
	sc, err := os.ReadFile(dir + "/syscall")
	if err != nil {
		// Unreadable for a program with other privileges (sudo): the kernel function it
		// sleeps in still says whether that is a terminal read, where it may be read.
		// Where not (sudo seen by an ordinary user), a program asleep while the terminal
		// is in password mode (lines, no echo) is taken at the terminal's word: it
		// reads the password.
		w, err := os.ReadFile(dir + "/wchan")
		if err != nil || string(w) == "0" || string(w) == "" {
			return waitSet{tty: t.password}
		}
		return waitSet{tty: string(w) == "n_tty_read" || string(w) == "wait_woken"}
	}
	f := strings.Fields(string(sc))
	if len(f) < 3 {
		return waitSet{} // "running", or blocked outside a system call
	}
	nr, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return waitSet{}
	}
	arg := func(k int) int64 {
		v, _ := strconv.ParseUint(strings.TrimPrefix(f[1+k], "0x"), 16, 64)
		return int64(v)
	}
	switch waitSyscall(nr) {
	case waitRead:
		return waitSet{tty: t.isTTY(pid, arg(0))}
	case waitSelect:
		return t.selectsTTY(pid, arg(0), arg(1))
	case waitPoll:
		return t.pollsTTY(pid, arg(0), arg(1))
	case waitEpoll:
		return t.epollsTTY(pid, arg(0), raw)
	}
	return waitSet{}
}

// add notes descriptor fd of pid, which the wait watches for input.
func (w *waitSet) add(t terminal, pid int, fd int64) {
	link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.FormatInt(fd, 10))
	switch {
	case err != nil:
	case t.names(link):
		w.tty = true
	case link == "/dev/ptmx":
		w.other = true
	case strings.HasPrefix(link, "socket:"):
		w.other = w.other || !ownSocketPair(pid, link)
	}
}

// ownSocketPair reports whether socket link ("socket:[inode]", a descriptor of pid) is
// one end of a Unix socket pair whose other end pid holds too: a wake-up of its own
// (asyncio's self-pipe, glib's wakeup), no far side. The peer's inode comes from the
// kernel's socket diagnostics (sock_diag over netlink, one exact lookup, what `ss -xp`
// uses; no privileges needed), and is looked for among pid's descriptors. Unknown (not
// a Unix socket, a kernel without unix_diag) counts as a far side.
func ownSocketPair(pid int, link string) bool {
	ino, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]"), 10, 32)
	if err != nil {
		return false
	}
	peer, ok := unixPeer(uint32(ino))
	if !ok || peer == 0 {
		return false
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	names, err := readDirNames(dir)
	if err != nil {
		return false
	}
	want := "socket:[" + strconv.FormatUint(uint64(peer), 10) + "]"
	for _, n := range names {
		if l, err := os.Readlink(dir + n); err == nil && l == want {
			return true
		}
	}
	return false
}

// Unix socket diagnostics (linux/unix_diag.h), which golang.org/x/sys does not define.
const (
	udiagShowPeer = 0x4 // UDIAG_SHOW_PEER
	unixDiagPeer  = 2   // UNIX_DIAG_PEER
)

// unixPeer asks the kernel for the inode of the peer of the Unix socket with inode ino.
func unixPeer(ino uint32) (uint32, bool) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	// struct nlmsghdr, then struct unix_diag_req { u8 family, protocol; u16 pad;
	// u32 states, ino, show; u32 cookie[2] }; no cookie (all ones) for a lookup by inode.
	req := make([]byte, unix.NLMSG_HDRLEN+24)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1) // sequence
	b := req[unix.NLMSG_HDRLEN:]
	b[0] = unix.AF_UNIX
	ne.PutUint32(b[4:], ^uint32(0))
	ne.PutUint32(b[8:], ino)
	ne.PutUint32(b[12:], udiagShowPeer)
	ne.PutUint32(b[16:], ^uint32(0))
	ne.PutUint32(b[20:], ^uint32(0))
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, false
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil || n < unix.NLMSG_HDRLEN {
		return 0, false
	}
	// One answer: struct nlmsghdr (an error, or SOCK_DIAG_BY_FAMILY), then struct
	// unix_diag_msg { u8 family, type, state, pad; u32 ino; u32 cookie[2] }, then
	// attributes.
	l := int(ne.Uint32(buf))
	if ne.Uint16(buf[4:]) == unix.SOCK_DIAG_BY_FAMILY && l <= n && l >= unix.NLMSG_HDRLEN+16 {
		data := buf[unix.NLMSG_HDRLEN:l]
		if ne.Uint32(data[4:]) != ino {
			return 0, false
		}
		for a := data[16:]; len(a) >= unix.SizeofRtAttr; {
			al, typ := int(ne.Uint16(a)), ne.Uint16(a[2:])
			if al < unix.SizeofRtAttr || al > len(a) {
				break
			}
			if typ == unixDiagPeer && al >= unix.SizeofRtAttr+4 {
				return ne.Uint32(a[unix.SizeofRtAttr:]), true
			}
			a = a[min(len(a), (al+unix.RTA_ALIGNTO-1)&^(unix.RTA_ALIGNTO-1)):]
		}
	}
	return 0, false
}

// selectsTTY reads a select's read set (nfds, at address set in the process's memory).
func (t terminal) selectsTTY(pid int, nfds, set int64) waitSet {
	nfds = min(nfds, 1024)
	if set == 0 || nfds <= 0 {
		return waitSet{}
	}
	bits, err := readMem(pid, set, int((nfds+7)/8))
	if err != nil {
		return waitSet{tty: nfds <= 3 && t.isTTY(pid, 0)} // memory unreadable: stdin alone, most likely
	}
	var w waitSet
	for fd := int64(0); fd < nfds; fd++ {
		if bits[fd/8]&(1<<(fd%8)) != 0 {
			w.add(t, pid, fd)
		}
	}
	return w
}

// pollsTTY reads a poll's array (nfds entries of struct pollfd at address fds).
func (t terminal) pollsTTY(pid int, fds, nfds int64) waitSet {
	nfds = min(nfds, 256)
	if fds == 0 || nfds <= 0 {
		return waitSet{}
	}
	b, err := readMem(pid, fds, int(nfds)*8) // struct pollfd { int fd; short events, revents; }
	if err != nil {
		return waitSet{tty: nfds == 1 && t.isTTY(pid, 0)}
	}
	var w waitSet
	for i := 0; i+8 <= len(b); i += 8 {
		fd := int32(binary.NativeEndian.Uint32(b[i:]))
		events := binary.NativeEndian.Uint16(b[i+4:])
		if fd >= 0 && events&unix.POLLIN != 0 {
			w.add(t, pid, int64(fd))
		}
	}
	return w
}

// epollsTTY reads what epoll instance epfd watches for input, from the descriptors /proc
// lists for it ("tfd: 0 events: 19 ...").
func (t terminal) epollsTTY(pid int, epfd int64, raw bool) waitSet {
	info, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + strconv.FormatInt(epfd, 10))
	if err != nil {
		return waitSet{tty: raw && t.isTTY(pid, 0)}
	}
	var w waitSet
	for _, line := range strings.Split(string(info), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[0] != "tfd:" || f[2] != "events:" {
			continue
		}
		fd, err1 := strconv.ParseInt(f[1], 10, 64)
		ev, err2 := strconv.ParseUint(f[3], 16, 32)
		if err1 == nil && err2 == nil && ev&unix.EPOLLIN != 0 {
			w.add(t, pid, fd)
		}
	}
	return w
}

// readMem reads n bytes at address addr of process pid.
func readMem(pid int, addr int64, n int) ([]byte, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, addr); err != nil {
		return nil, err
	}
	return b, nil
}

// isTTY reports whether descriptor fd of pid is t.
func (t terminal) isTTY(pid int, fd int64) bool {
	link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.FormatInt(fd, 10))
	return err == nil && t.names(link)
}

// names reports whether a descriptor's link names t: its path, or /dev/tty, the
// controlling terminal of the process that opened it, when the process asked is one of
// t's own.
func (t terminal) names(link string) bool {
	return link == t.path || t.byCtty && link == "/dev/tty"
}

type waitKind int

const (
	waitOther waitKind = iota
	waitRead
	waitSelect
	waitPoll
	waitEpoll
)

// waitSyscall classifies a system call number by how it could be waiting for input.
func waitSyscall(nr int64) waitKind {
	switch nr {
	case unix.SYS_READ, unix.SYS_READV, unix.SYS_PREAD64:
		return waitRead
	case unix.SYS_PSELECT6:
		return waitSelect
	case unix.SYS_PPOLL:
		return waitPoll
	case unix.SYS_EPOLL_PWAIT, unix.SYS_EPOLL_PWAIT2:
		return waitEpoll
	}
	return legacyWaitSyscall(nr)
}

// process is what /proc/<pid>/stat says about a process that foreground needs.
type process struct {
	pid, ppid, pgrp, sid, tpgid int
	start                       uint64 // when it started, in clock ticks since boot
	state                       byte
	tty                         string // its controlling terminal when that is a pty slave, /dev/pts/N
}

// processTable is every process, read from /proc when first asked for.
type processTable struct {
	loaded bool
	procs  []process
}

func (pt *processTable) load() []process {
	if !pt.loaded {
		pt.loaded = true
		walkProc(func(pid int, stat []byte) {
			if p, ok := parseStat(pid, stat); ok {
				pt.procs = append(pt.procs, p)
			}
		})
	}
	return pt.procs
}

// parseStat reads the fields process has from a /proc/<pid>/stat line (procstat.Parse),
// the controlling terminal as a pts path.
func parseStat(pid int, stat []byte) (process, bool) {
	st, ok := procstat.Parse(stat)
	if !ok {
		return process{}, false
	}
	return process{pid: pid, state: st.State, ppid: st.PPid, pgrp: st.Pgrp, sid: st.Session, tty: ptsOfDev(st.TTY), tpgid: st.TPGID, start: st.Start}, true
}

// ptsOfDev returns the path of the pty slave with device number dev (as tty_nr encodes
// it), or "" for any other device: Unix98 slaves have majors 136 to 143.
func ptsOfDev(dev int) string {
	major, minor := unix.Major(uint64(dev)), unix.Minor(uint64(dev))
	if dev <= 0 || major < 136 || major > 143 {
		return ""
	}
	return "/dev/pts/" + strconv.FormatUint(uint64((major-136)*256+minor), 10)
}

// backgroundJobs reports whether a process of session sid outside the shell's own group
// (sid) runs with its output or errors going to terminal pts: a background job whose
// output a read can wait for. Stopped jobs and zombies print nothing until the person
// resumes or reaps them; a job whose output goes elsewhere (a daemon an rc started, such
// as powerlevel10k's gitstatusd, or `make > log &`) never reaches the terminal.
func backgroundJobs(sid int, pts string) bool {
	found := false
	walkProc(func(pid int, stat []byte) {
		p, ok := parseStat(pid, stat)
		if found || !ok || p.sid != sid || p.pgrp == sid || p.state == 'T' || p.state == 't' || p.state == 'Z' || p.state == 'X' {
			return
		}
		t := terminal{path: pts, byCtty: true}
		found = t.isTTY(pid, 1) || t.isTTY(pid, 2)
	})
	return found
}

// readDirNames lists a directory's entries.
func readDirNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// walkProc calls fn with each process's pid and /proc/<pid>/stat.
func walkProc(fn func(pid int, stat []byte)) {
	names, err := readDirNames("/proc")
	if err != nil {
		return
	}
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		fn(pid, stat)
	}
}

// masterUnread is how much output waits in the terminal for the reader, -1 if unknown.
func (s *session) masterUnread() int {
	rc, err := s.master.SyscallConn()
	if err != nil {
		return -1
	}
	n, ierr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) {
		// unread first: it moves what is still in the flip buffer to where TIOCINQ counts.
		var pending bool
		if pending, ierr = unread(int(fd)); ierr == nil && pending {
			n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ)
			n = max(n, 1)
		} else if ierr == nil {
			n = 0
		}
	}); err != nil || ierr != nil {
		return -1
	}
	return n
}
