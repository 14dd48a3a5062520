// Package procid names a process so that it can be recognised later, by this process or
// another one: a pid alone is reused by the kernel, but a pid, its start time and the boot
// it started in are not. The start time and the boot id come from /proc on Linux and from
// sysctl on macOS. The store records these identities (runners, sessions, task processes),
// and the engines compare them before they trust or signal a recorded pid.
package procid

import "sync"

// Identity names one process across time: a pid alone is reused by the kernel, but a
// pid, its start time and the boot it started in are not.
type Identity struct {
	Pid int
	// ProcStart is when the process started, in the unit of the system that recorded it
	// (Linux: clock ticks after boot; macOS: microseconds since the Unix epoch). It is only
	// ever compared with a value read on the same boot (BootID), so the unit never mixes.
	// 0 = unknown.
	ProcStart uint64
	BootID    string
}

// Identify reads the identity of a live process (from /proc on Linux, sysctl on
// macOS). A process that is gone, or a system where the start time cannot be read, yields
// ProcStart 0, which later checks treat as "cannot prove it is the same process", so
// nothing is ever killed on a guess.
func Identify(pid int) Identity {
	start, _ := processStartTime(pid)
	return Identity{Pid: pid, ProcStart: start, BootID: BootID()}
}

// Alive reports whether the process this identity names is still running: same boot, same
// pid, same start time. An identity with an unknown start time is never reported alive,
// except on systems where no start time can be read at all (see aliveWithoutStart).
func (p Identity) Alive() bool {
	if p.Pid <= 0 || p.BootID != BootID() {
		return false
	}
	if p.ProcStart == 0 {
		return aliveWithoutStart(p.Pid)
	}
	start, err := processStartTime(p.Pid)
	return err == nil && start == p.ProcStart
}

var bootID = sync.OnceValue(readBootID)

// BootID identifies the current boot of the machine ("unknown" where the system does not
// say).
func BootID() string { return bootID() }
