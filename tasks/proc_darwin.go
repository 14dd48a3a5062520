package tasks

import (
	"bytes"
	"encoding/binary"
	"os"

	"golang.org/x/sys/unix"
)

// macOS has no /proc; sysctl stands in for it, as in internal/procid/procid_darwin.go.

// killSession kills, with SIGKILL, every process of session sid that started no earlier
// than its leader did (leaderStart, wall-clock microseconds since the Unix epoch, as
// procid.Identify records it on macOS). Tasks and PTY programs each lead their own
// session, so this finds what they left even after the leader died and its children were
// re-parented.
//
// macOS has no by-session process query: KERN_PROC_SESSION is defined, but the kernel
// registers no kern.proc node for it. So this lists every process (kern.proc.all) and asks
// getsid about each one that started late enough. A pid is never handed out while a
// session with that number exists, so if a process with pid sid is alive and is not the
// recorded leader, the session is a stranger's that came to use the number after ours was
// gone, and nothing is killed.
func killSession(sid int, leaderStart uint64) {
	if sid <= 1 || leaderStart == 0 {
		return // without the start time nothing proves the session is still ours
	}
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return
	}
	for i := range procs {
		p := &procs[i].Proc
		if int(p.P_pid) == sid && startMicros(p.P_starttime) != leaderStart {
			return
		}
	}
	for i := range procs {
		p := &procs[i].Proc
		pid := int(p.P_pid)
		if pid <= 1 || startMicros(p.P_starttime) < leaderStart {
			continue
		}
		if s, err := unix.Getsid(pid); err == nil && s == sid {
			unix.Kill(pid, unix.SIGKILL)
		}
	}
}

// startMicros is a kinfo_proc start time in the unit that internal/procid/procid_darwin.go
// records.
func startMicros(tv unix.Timeval) uint64 {
	return uint64(tv.Sec)*1e6 + uint64(tv.Usec)
}

// killMarked kills, with SIGKILL, every process whose environment carries marker: what a
// task left running, found even when its runner died before recording the task's pid.
// The environment is read with kern.procargs2, which the kernel answers only for this
// user's processes (any process for root) and, while System Integrity Protection is on,
// without the environment for a process code-signed as restricted. Such a process, and one
// that rewrote its environment, escapes this and is left to the session check.
func killMarked(marker string) {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return
	}
	want, self := []byte(marker), os.Getpid()
	for i := range procs {
		pid := int(procs[i].Proc.P_pid)
		if pid <= 1 || pid == self {
			continue
		}
		args, err := unix.SysctlRaw("kern.procargs2", pid)
		if err != nil {
			continue // gone, a zombie, or another user's
		}
		if procargsEnvHas(args, want) {
			unix.Kill(pid, unix.SIGKILL)
		}
	}
}

// procargsEnvHas reports whether want is one of the environment strings in a
// kern.procargs2 image: argc (a native-endian int32), the executable path and the NULs
// that pad it, argc argument strings, then the environment strings and after them the
// strings the kernel adds for dyld ("key=value" too, never a task marker), each ending in a
// NUL. A string in the argument list that equals want does not count.
func procargsEnvHas(image, want []byte) bool {
	if len(image) < 4 {
		return false
	}
	argc := int32(binary.NativeEndian.Uint32(image))
	if argc < 0 {
		return false
	}
	path, rest, ok := bytes.Cut(image[4:], []byte{0})
	if !ok || len(path) == 0 {
		return false
	}
	// The padding is skipped as the kernel skips it. An empty argv[0] goes with it, which
	// shifts the count by one toward the environment: a marker might be missed, but an
	// argument is never taken for one.
	rest = bytes.TrimLeft(rest, "\x00")
	for ; argc > 0; argc-- {
		if _, rest, ok = bytes.Cut(rest, []byte{0}); !ok {
			return false
		}
	}
	for len(rest) > 0 {
		var s []byte
		s, rest, _ = bytes.Cut(rest, []byte{0})
		if bytes.Equal(s, want) {
			return true
		}
	}
	return false
}
