package pty

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// promptWithoutMarks reports why the session's shell, which reads its terminal, shows a
// prompt without marks, or "" if it reads the way a command asks a question (see
// health.go).
func (s *session) promptWithoutMarks() string {
	dir := "/proc/" + strconv.Itoa(s.pid)
	cmdline := cmdlineOf(s.pid)
	if cmdline == "" {
		return ""
	}
	comm, _ := os.ReadFile(dir + "/comm")
	name := strings.TrimSpace(string(comm))
	s.mu.Lock()
	image := s.image
	s.mu.Unlock()
	if cmdline != image {
		return fmt.Sprintf("the shell was replaced by %s (exec), which reports no prompts", name)
	}
	lflag, ok := s.localModes()
	if !ok {
		return ""
	}
	switch kindOf(name) {
	case kindBash, kindZsh:
		if lflag&(unix.ICANON|unix.ECHO) == 0 {
			return lostByKernel // its line editor reads a command line
		}
	case kindSh:
		if lflag&unix.ICANON != 0 && readCount(dir) > 1 {
			return lostByKernel // the command line, in one read; its read builtin takes a byte at a time
		}
	}
	return ""
}

// localModes returns the terminal's local modes (ICANON, ECHO...).
func (s *session) localModes() (uint32, bool) {
	rc, err := s.master.SyscallConn()
	if err != nil {
		return 0, false
	}
	var tio *unix.Termios
	var terr error
	if err := rc.Control(func(fd uintptr) { tio, terr = unix.IoctlGetTermios(int(fd), unix.TCGETS) }); err != nil || terr != nil {
		return 0, false
	}
	return tio.Lflag, true
}

// readCount returns how many bytes the process whose /proc directory is dir asks for in
// the read it is blocked in, or 0 if it is not blocked in a read.
func readCount(dir string) int64 {
	sc, err := os.ReadFile(dir + "/syscall")
	if err != nil {
		return 0
	}
	f := bytes.Fields(sc)
	if len(f) < 4 {
		return 0
	}
	nr, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil || waitSyscall(nr) != waitRead {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimPrefix(string(f[3]), "0x"), 16, 64)
	return int64(n)
}

// cmdlineOf returns process pid's command line as /proc holds it (NUL after each word),
// or "" if it is gone.
func cmdlineOf(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return string(b)
}
