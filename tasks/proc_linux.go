package tasks

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// waitExitNoReap blocks until process pid has exited, leaving it a zombie: while it is
// unreaped its pid, which is also its process group id, cannot be reused, so signalling
// the group afterwards cannot hit a stranger.
//
// It waits through the poller, on a pidfd that becomes readable when the process exits,
// not in a waitid that blocks for the whole life of the task. A goroutine blocked in a
// system call keeps its P until the runtime's monitor takes it back for others: with two
// tasks running on two CPUs, both Ps were held by waits, and the monitor polled every 20
// µs to hand them on, an eighth of the server's CPU with short tasks (issue 29). A kernel
// without pidfds (before 5.3) gets the blocking wait.
func waitExitNoReap(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		waitExitBlocking(pid)
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		waitExitBlocking(pid)
		return
	}
	rc.Read(func(fd uintptr) bool {
		for {
			var info unix.Siginfo
			err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
				return false // running: wait until the pidfd is readable
			case err != nil:
				return true // nothing to wait for (collected already), as the blocking wait
			}
			return info.Signo != 0 // WNOHANG on a running process fills in nothing
		}
	})
}

// waitExitBlocking is waitExitNoReap with a waitid that blocks.
func waitExitBlocking(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != syscall.EINTR {
			return
		}
	}
}

// taskProcAttr puts a task's command in a session (and process group) of its own, so the
// whole group can be signalled, and has the kernel SIGKILL it when this runner dies: a
// runner's task children die with it, so nothing runs on that no runner observes, records
// or can stop (what the command itself started in the group is killed by the next
// runner's reconciliation).
func taskProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// killSession kills, with SIGKILL, every process of session sid that started no earlier
// than its leader did (leaderStart, clock ticks after boot). Tasks and PTY programs each
// lead their own session, so this finds what they left even after the leader died and its
// children were re-parented; the start time keeps it from touching a stranger that came
// to use the same number after the whole session was gone.
func killSession(sid int, leaderStart uint64) {
	if sid <= 1 || leaderStart == 0 {
		return // without the start time nothing proves the session is still ours
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		procSid, start, ok := parseSessionAndStart(stat)
		if ok && procSid == sid && start >= leaderStart {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// parseSessionAndStart reads fields 6 (session) and 22 (starttime) of /proc/<pid>/stat.
func parseSessionAndStart(stat []byte) (sid int, start uint64, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return 0, 0, false
	}
	sid, err1 := strconv.Atoi(f[6-3])
	start, err2 := strconv.ParseUint(f[22-3], 10, 64)
	return sid, start, err1 == nil && err2 == nil
}

// killMarked kills, with SIGKILL, every process whose environment carries marker: what a
// task left running, found even when its runner died before recording the task's pid. A
// process that rewrote its environment escapes this, and is left to the session check.
func killMarked(marker string) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	want := []byte(marker)
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				syscall.Kill(pid, syscall.SIGKILL)
				break
			}
		}
	}
}
