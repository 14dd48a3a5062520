package procid

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// processStartTime parses field 22 (starttime, clock ticks after boot) of /proc/<pid>/stat.
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

// readBootID reads the kernel's random id for this boot.
func readBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// aliveWithoutStart is false: this system records every live process's start time, so
// an identity without one was taken after the process had gone.
func aliveWithoutStart(int) bool { return false }
