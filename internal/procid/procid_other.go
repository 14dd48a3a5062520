//go:build !linux && !darwin

package procid

import (
	"errors"
	"syscall"
)

// On the BSDs other than macOS this package reads no start time and no boot id (their
// kinfo_proc layouts differ and nobody here runs them), so Identify records
// ProcStart 0 and BootID "unknown", and what stands in for the identity is the pid alone:
//   - Alive asks kill(pid, 0) whether some process has the pid. A reused pid can make a
//     dead runner look alive; its lease still expires, and reconciliation then judges it
//     gone by its silence, only later.
//   - Nothing is killed on a guess: the code that kills by pid needs a known start time.

var errNoStartTime = errors.New("process start time is not available on this system")

func processStartTime(int) (uint64, error) { return 0, errNoStartTime }

func readBootID() string { return "unknown" }

// aliveWithoutStart reports whether a process with this pid exists (EPERM: it does, but
// is not ours to signal).
func aliveWithoutStart(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
