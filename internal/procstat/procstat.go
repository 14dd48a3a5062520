// Package procstat reads the fields of /proc/<pid>/stat that the project uses (Linux): one
// parser for the terminal engine's look at a session's processes, the reaper and process
// identity. The command name (field 2) is in parentheses and may hold spaces and ')', so
// fields are counted from the last ')'.
package procstat

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// Stat is what a process's stat line says of it.
type Stat struct {
	State   byte   // R, S, D, Z, T...
	PPid    int    // parent
	Pgrp    int    // process group
	Session int    // session id
	TTY     int    // controlling terminal's device number (tty_nr), 0 for none
	TPGID   int    // that terminal's foreground process group
	Start   uint64 // clock ticks after boot: with the pid, names one process
}

// Parse reads a /proc/<pid>/stat line; false when it is not one.
func Parse(b []byte) (Stat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, false
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3, state
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, false
	}
	var n [5]int // ppid, pgrp, session, tty_nr, tpgid: fields 4 to 8
	for k := range n {
		v, err := strconv.Atoi(string(f[1+k]))
		if err != nil {
			return Stat{}, false
		}
		n[k] = v
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64) // field 22, starttime
	if err != nil {
		return Stat{}, false
	}
	return Stat{State: f[0][0], PPid: n[0], Pgrp: n[1], Session: n[2], TTY: n[3], TPGID: n[4], Start: start}, true
}

// Read reads and parses /proc/<pid>/stat; false when the process is gone or the line is
// not one (and off Linux, where there is no such file).
//
// It reads with plain system calls into a buffer of its own: through os.ReadFile the
// file's set-up (flags changed twice, an attempt to register it with the poller, a
// finalizer) and a size check cost more than the read, and the task engine reads the stat
// of every process it starts (issue 29).
func Read(pid int) (Stat, bool) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return Stat{}, false
	}
	defer syscall.Close(fd)
	var buf [2048]byte
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return Stat{}, false
		case m == 0:
			return Parse(buf[:n])
		}
		n += m
	}
	// A line longer than any stat line the kernel writes today: read it whole all the same.
	b, err := os.ReadFile(path)
	if err != nil {
		return Stat{}, false
	}
	return Parse(b)
}
