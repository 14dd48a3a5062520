package pty

import (
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// On Linux a session can tell when its program waits for the person: the terminal names
// its foreground process group (TIOCGPGRP on the master), /proc says what each process
// of that group is blocked in (/proc/<pid>/syscall: the call and its arguments; the
// file descriptor it reads says whether that is the terminal), and the terminal's modes
// (TCGETS on the master, which Linux answers with the slave's termios, as pexpect's
// waitnoecho relies on) say what kind of answer it expects.

// foregroundKnown is true where foreground can answer.
const foregroundKnown = true

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

// foreground reports whether a process of the terminal's foreground group is blocked
// reading the terminal (in read, or in select, poll or epoll with the terminal among
// what it waits for: the set is read from the process's memory or /proc's fdinfo), and if so which one and what the terminal's modes ask for.
func (s *session) foreground() (pid int, kind InputKind, ok bool) {
	if s.pts == "" || s.isClosed() {
		return 0, "", false
	}
	rc, err := s.master.SyscallConn()
	if err != nil {
		return 0, "", false
	}
	var pgrp, unread int
	var tio *unix.Termios
	var perr, terr, uerr error
	if err := rc.Control(func(fd uintptr) {
		pgrp, perr = unix.IoctlGetInt(int(fd), unix.TIOCGPGRP)
		tio, terr = unix.IoctlGetTermios(int(fd), unix.TCGETS)
		unread, uerr = unix.IoctlGetInt(int(fd), unix.TIOCINQ)
	}); err != nil || perr != nil || terr != nil || pgrp <= 0 {
		return 0, "", false
	}
	if uerr != nil || unread > 0 {
		// Output the program wrote before it blocked is still on its way to the reader:
		// what it asks is not on record yet.
		return 0, "", false
	}
	if pendingInput(s.pts) {
		// Input we wrote has not been read yet: the program is runnable, only not yet
		// scheduled, and /proc still shows the read it is about to return from.
		return 0, "", false
	}
	switch {
	case tio.Lflag&unix.ICANON == 0:
		kind = InputKeys
	case tio.Lflag&unix.ECHO == 0:
		kind = InputPassword
	default:
		kind = InputLine
	}
	raw := kind == InputKeys
	// The group's leader is usually the reader (a lone program, the head of a
	// pipeline); the rest of the group is looked for only when it is not.
	if s.readingTTY(pgrp, raw) {
		return pgrp, kind, true
	}
	for _, p := range groupMembers(s.pid, pgrp) {
		if p != pgrp && s.readingTTY(p, raw) {
			return p, kind, true
		}
	}
	return 0, "", false
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
	n, err := unix.IoctlGetInt(fd, unix.TIOCINQ)
	return err == nil && n > 0
}

// readingTTY reports whether process pid is blocked reading the session's terminal.
func (s *session) readingTTY(pid int, raw bool) bool {
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) || stat[i+2] != 'S' {
		return false // running, stopped or gone: not waiting
	}
	sc, err := os.ReadFile(dir + "/syscall")
	if err != nil {
		// Unreadable for a program with other privileges (sudo): the kernel function it
		// sleeps in still says whether that is a terminal read.
		w, _ := os.ReadFile(dir + "/wchan")
		return string(w) == "n_tty_read" || string(w) == "wait_woken"
	}
	f := strings.Fields(string(sc))
	if len(f) < 3 {
		return false // "running", or blocked outside a system call
	}
	nr, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return false
	}
	arg := func(k int) int64 {
		v, _ := strconv.ParseUint(strings.TrimPrefix(f[1+k], "0x"), 16, 64)
		return int64(v)
	}
	switch waitSyscall(nr) {
	case waitRead:
		return s.isTTY(pid, arg(0))
	case waitSelect:
		return s.selectsTTY(pid, arg(0), arg(1))
	case waitPoll:
		return s.pollsTTY(pid, arg(0), arg(1))
	case waitEpoll:
		return s.epollsTTY(pid, arg(0), raw)
	}
	return false
}

// selectsTTY reports whether a select's read set (nfds, at address set in the process's
// memory) holds the terminal.
func (s *session) selectsTTY(pid int, nfds, set int64) bool {
	nfds = min(nfds, 1024)
	if set == 0 || nfds <= 0 {
		return false
	}
	bits, err := readMem(pid, set, int((nfds+7)/8))
	if err != nil {
		return nfds <= 3 && s.isTTY(pid, 0) // memory unreadable: stdin alone, most likely
	}
	for fd := int64(0); fd < nfds; fd++ {
		if bits[fd/8]&(1<<(fd%8)) != 0 && s.isTTY(pid, fd) {
			return true
		}
	}
	return false
}

// pollsTTY reports whether a poll's array (nfds entries of struct pollfd at address fds)
// waits for the terminal to be readable.
func (s *session) pollsTTY(pid int, fds, nfds int64) bool {
	nfds = min(nfds, 256)
	if fds == 0 || nfds <= 0 {
		return false
	}
	b, err := readMem(pid, fds, int(nfds)*8) // struct pollfd { int fd; short events, revents; }
	if err != nil {
		return nfds == 1 && s.isTTY(pid, 0)
	}
	for i := 0; i+8 <= len(b); i += 8 {
		fd := int32(binary.NativeEndian.Uint32(b[i:]))
		events := binary.NativeEndian.Uint16(b[i+4:])
		if fd >= 0 && events&unix.POLLIN != 0 && s.isTTY(pid, int64(fd)) {
			return true
		}
	}
	return false
}

// epollsTTY reports whether epoll instance epfd watches the terminal for input, from the
// descriptors /proc lists for it ("tfd: 0 events: 19 ...").
func (s *session) epollsTTY(pid int, epfd int64, raw bool) bool {
	info, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + strconv.FormatInt(epfd, 10))
	if err != nil {
		return raw && s.isTTY(pid, 0)
	}
	for _, line := range strings.Split(string(info), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[0] != "tfd:" || f[2] != "events:" {
			continue
		}
		fd, err1 := strconv.ParseInt(f[1], 10, 64)
		ev, err2 := strconv.ParseUint(f[3], 16, 32)
		if err1 == nil && err2 == nil && ev&unix.EPOLLIN != 0 && s.isTTY(pid, fd) {
			return true
		}
	}
	return false
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

// isTTY reports whether descriptor fd of pid is the session's terminal.
func (s *session) isTTY(pid int, fd int64) bool {
	link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.FormatInt(fd, 10))
	return err == nil && (link == s.pts || link == "/dev/tty")
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

// groupMembers returns the processes of session sid in process group pgrp.
func groupMembers(sid, pgrp int) []int {
	var pids []int
	walkProc(func(pid int, stat []byte) {
		if s, g, ok := statIDs(stat); ok && s == sid && g == pgrp {
			pids = append(pids, pid)
		}
	})
	return pids
}

// walkProc calls fn with each process's pid and /proc/<pid>/stat.
func walkProc(fn func(pid int, stat []byte)) {
	d, err := os.Open("/proc")
	if err != nil {
		return
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
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

// statIDs extracts the session id and process group from a /proc/<pid>/stat line (see
// statSession).
func statIDs(stat []byte) (sid, pgrp int, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 4 {
		return 0, 0, false
	}
	g, err1 := strconv.Atoi(string(f[2]))
	s, err2 := strconv.Atoi(string(f[3]))
	return s, g, err1 == nil && err2 == nil
}
