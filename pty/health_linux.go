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
// health.go). started says whether the command believed running has had its C mark.
func (s *session) promptWithoutMarks(started bool) string {
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
	tio, ok := s.termios()
	if !ok {
		return ""
	}
	raw := tio.Lflag&(unix.ICANON|unix.ECHO) == 0
	switch kindOf(name) {
	case kindBash:
		// readline turns CR-to-NL off; read -s -n keeps it on.
		if raw && tio.Iflag&unix.ICRNL == 0 {
			return lostByKernel // its line editor reads a command line
		}
	case kindZsh:
		// zle turns NL-to-CR on (zsetterm sets INLCR with ICRNL); the questions zsh asks
		// itself with one key (RM_STAR, read -k, read -q) leave it off. Before the C mark
		// zle can only be asking (correct, correctall): preexec has not run.
		if raw && started && tio.Iflag&unix.INLCR != 0 {
			return lostByKernel
		}
	case kindSh:
		if tio.Lflag&unix.ICANON != 0 && readCount(dir) > 1 {
			return lostByKernel // the command line, in one read; its read builtin takes a byte at a time
		}
	}
	return ""
}

// termios returns the terminal's modes.
func (s *session) termios() (*unix.Termios, bool) {
	rc, err := s.master.SyscallConn()
	if err != nil {
		return nil, false
	}
	var tio *unix.Termios
	var terr error
	if err := rc.Control(func(fd uintptr) { tio, terr = unix.IoctlGetTermios(int(fd), unix.TCGETS) }); err != nil || terr != nil {
		return nil, false
	}
	return tio, true
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
