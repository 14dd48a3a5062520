package store

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ProcessIdentity names one process across time: a pid alone is reused by the kernel, but a
// pid, its start time and the boot it started in are not.
type ProcessIdentity struct {
	Pid       int
	ProcStart uint64 // clock ticks after boot at which the process started; 0 = unknown
	BootID    string
}

// IdentifyProcess reads the identity of a live process from /proc. A process that is gone
// (or a system without /proc) yields ProcStart 0, which later checks treat as "cannot
// prove it is the same process", so nothing is ever killed on a guess.
func IdentifyProcess(pid int) ProcessIdentity {
	start, _ := processStartTime(pid)
	return ProcessIdentity{Pid: pid, ProcStart: start, BootID: BootID()}
}

// Alive reports whether the process this identity names is still running: same boot, same
// pid, same start time. An identity with an unknown start time is never reported alive.
func (p ProcessIdentity) Alive() bool {
	if p.Pid <= 0 || p.ProcStart == 0 || p.BootID != BootID() {
		return false
	}
	start, err := processStartTime(p.Pid)
	return err == nil && start == p.ProcStart
}

// processStartTime parses field 22 (starttime) of /proc/<pid>/stat.
func processStartTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may itself contain spaces or ')';
	// the fields after the last ')' are plain numbers and letters.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat: no command field", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	const startTimeIndex = 22 - 3 // fields after ')' start at field 3
	if len(fields) <= startTimeIndex {
		return 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(fields))
	}
	return strconv.ParseUint(fields[startTimeIndex], 10, 64)
}

var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
})

// BootID identifies the current boot of the machine ("unknown" without /proc).
func BootID() string { return bootID() }
