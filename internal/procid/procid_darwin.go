package procid

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// macOS has no /proc; sysctl stands in for it.

// processStartTime reads the process's start time (p_starttime, wall-clock microseconds
// since the Unix epoch) from kern.proc.pid. The kernel records it once at fork, so unlike
// "now minus uptime" it does not move when the clock is set.
func processStartTime(pid int) (uint64, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return 0, fmt.Errorf("sysctl kern.proc.pid.%d: %w", pid, err) // EIO: no such process
	}
	tv := kp.Proc.P_starttime
	us := uint64(tv.Sec)*1e6 + uint64(tv.Usec)
	if us == 0 {
		return 0, fmt.Errorf("sysctl kern.proc.pid.%d: no start time", pid)
	}
	return us, nil
}

// readBootID prefers kern.bootsessionuuid, a random id per boot like Linux's boot_id.
// kern.boottime is the fallback: it names the boot too, but macOS shifts it when the clock
// is stepped, and a boot id that changes under a live process would make Alive call it
// dead, so it is used only where the uuid is missing.
func readBootID() string {
	if id, err := unix.Sysctl("kern.bootsessionuuid"); err == nil && strings.TrimSpace(id) != "" {
		return strings.TrimSpace(id)
	}
	if tv, err := unix.SysctlTimeval("kern.boottime"); err == nil {
		return fmt.Sprintf("boottime-%d.%06d", tv.Sec, tv.Usec)
	}
	return "unknown"
}

// aliveWithoutStart is false: this system records every live process's start time, so
// an identity without one was taken after the process had gone.
func aliveWithoutStart(int) bool { return false }
