package procid

import (
	"fmt"
	"os"
	"strings"

	"github.com/mcp-harness/mcp-harness/internal/procstat"
)

// processStartTime reads field 22 (starttime, clock ticks after boot) of /proc/<pid>/stat.
func processStartTime(pid int) (uint64, error) {
	st, ok := procstat.Read(pid)
	if !ok {
		return 0, fmt.Errorf("read /proc/%d/stat: the process is gone or its line does not parse", pid)
	}
	return st.Start, nil
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
