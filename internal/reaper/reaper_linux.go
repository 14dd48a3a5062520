package reaper

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/mcp-harness/mcp-harness/internal/procstat"
	"golang.org/x/sys/unix"
)

// retryAfter is how soon a zombie child left alone because a pidfd referred to it is
// looked at again: its holder normally collects it at once, but one that only looked (an
// os.FindProcess never waited for) closes the pidfd without a SIGCHLD to say so.
const retryAfter = time.Second

// minRoundGap spaces the rounds. A round reads every thread's children in /proc and, when
// a zombie is among them, every open descriptor; a runner of short tasks gets a SIGCHLD
// for each of them, hundreds a second, nearly all for children their own Cmd.Wait
// collects, and a round for each cost a fifth of a millisecond of a task's start (issue
// 29). The signals of a gap are answered by one round at its end: an orphan waits that
// much longer, and Collect is there for a caller that cannot wait.
const minRoundGap = 100 * time.Millisecond

// The one reaper of the process, shared by every Start: the last stop ends it.
var (
	mu    sync.Mutex
	users int
	quit  chan struct{}
	done  chan struct{}
)

// Start makes this process a child subreaper and collects the orphans it adopts, from now
// until every caller of Start has called its stop. It refuses, changing nothing, where
// the pidfd rule (see the package doc) cannot be relied on.
func Start() (stop func(), err error) {
	mu.Lock()
	defer mu.Unlock()
	if users == 0 {
		if err := probe(); err != nil {
			return func() {}, err
		}
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return func() {}, fmt.Errorf("reaper: become a child subreaper: %w", err)
		}
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGCHLD)
		quit, done = make(chan struct{}), make(chan struct{})
		go loop(sig, quit, done)
	}
	users++
	var once sync.Once
	return func() { once.Do(release) }, nil
}

// Active reports whether this process is a child subreaper now.
func Active() bool {
	var on int32
	err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&on)), 0, 0, 0)
	return err == nil && on != 0
}

func release() {
	mu.Lock()
	defer mu.Unlock()
	if users--; users > 0 {
		return
	}
	// Off first, so nothing more is adopted, then what was adopted meanwhile is collected.
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	close(quit)
	<-done
	reap()
}

func loop(sig chan os.Signal, quit, done chan struct{}) {
	defer close(done)
	defer signal.Stop(sig)
	retry := time.NewTimer(retryAfter)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-sig:
		case <-retry.C:
		case <-quit:
			return
		}
		if reap() {
			retry.Reset(retryAfter)
		}
		gap := time.NewTimer(minRoundGap)
		select {
		case <-gap.C:
		case <-quit:
			gap.Stop()
			return // release reaps once more
		}
	}
}

// proc is what reap reads of a process in /proc/<pid>/stat.
type proc struct {
	pid, ppid int
	state     byte
	start     uint64 // clock ticks after boot: with the pid, names one process
}

// reap collects every zombie child of this process that no pidfd here refers to, and
// reports whether it left one to look at again: one a pidfd refers to, or any, when the
// pidfds could not all be read (too many open files): a zombie whose pidfd was missed
// may be a child some Cmd.Wait is about to collect, so that round collects nothing.
func reap() (left bool) {
	self := os.Getpid()
	pids, ok := children(self)
	if !ok {
		return true // out of descriptors, say: the next round looks again
	}
	var zombies []proc
	for _, pid := range pids {
		if p, ok := readStat(pid); ok && p.state == 'Z' && p.ppid == self {
			zombies = append(zombies, p)
		}
	}
	if len(zombies) == 0 {
		return false
	}
	held, err := pidfdTargets()
	if err != nil {
		return true
	}
	for _, z := range zombies {
		if held[z.pid] {
			left = true // some os.Process will collect it
			continue
		}
		if !collect(z, self) {
			left = true
		}
	}
	return left
}

// Collect collects process pid if it is a zombie child of this process that no pidfd
// here refers to (see the package doc), and reports whether pid is gone now: for a
// caller that killed an orphan it adopted and wants it gone before it goes on, without
// waiting for the reaper's next round. Where the pidfds cannot be read it leaves pid to
// the reaper, which tries again.
func Collect(pid int) bool {
	self := os.Getpid()
	p, ok := readStat(pid)
	switch {
	case !ok:
		return true
	case p.state != 'Z' || p.ppid != self:
		return false
	}
	if held, err := pidfdTargets(); err != nil || held[pid] {
		return false
	}
	collect(p, self)
	_, ok = readStat(pid)
	return !ok
}

// collect waits for zombie child z through a pidfd of its own, after checking that the
// pidfd names the very process that was seen: between the reading and the pidfd, its pid
// may have been collected by its owner and taken by a new child. It reports false when
// z may still be there for want of a pidfd (out of descriptors): a later round tries again.
func collect(z proc, self int) bool {
	fd, err := unix.PidfdOpen(z.pid, 0)
	if err != nil {
		return errors.Is(err, unix.ESRCH) // gone meanwhile, or to be tried again
	}
	defer unix.Close(fd)
	if p, ok := readStat(z.pid); !ok || p.start != z.start || p.state != 'Z' || p.ppid != self {
		return true
	}
	var info unix.Siginfo
	_ = unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG, nil)
	return true
}

// children lists this process's children: each thread's /proc children file (the kernel
// hands an orphan to one of the threads), or, where the kernel has none, every process
// whose parent this is. ok is false when neither could be read.
func children(self int) (pids []int, ok bool) {
	tids, err := readProcDir("/proc/self/task")
	for _, t := range tids {
		b, rerr := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if rerr != nil {
			err = rerr
			break
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	if err == nil {
		return pids, true
	}
	pids = pids[:0]
	entries, err := readProcDir("/proc")
	if err != nil {
		return nil, false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readStat(pid); ok && p.ppid == self {
			pids = append(pids, pid)
		}
	}
	return pids, true
}

// readStat reads state, parent and start time from /proc/<pid>/stat.
func readStat(pid int) (proc, bool) {
	st, ok := procstat.Read(pid)
	return proc{pid: pid, ppid: st.PPid, state: st.State, start: st.Start}, ok
}

// The reads children and pidfdTargets make, variables so that a test can make them fail.
var (
	readProcDir = os.ReadDir
	readFdDir   = os.ReadDir
	readFdLink  = os.Readlink
	readFdInfo  = os.ReadFile
)

// pidfdTargets returns the pids the pidfds open in this process refer to, or an error
// when it could not read them all: a pidfd missed would let its child be taken for an
// orphan. A descriptor closed while it is read is no pidfd it missed.
func pidfdTargets() (map[int]bool, error) {
	entries, err := readFdDir("/proc/self/fd")
	if err != nil {
		return nil, fmt.Errorf("reaper: list the open descriptors: %w", err)
	}
	out := map[int]bool{}
	for _, e := range entries {
		link, err := readFdLink("/proc/self/fd/" + e.Name())
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reaper: read descriptor %s: %w", e.Name(), err)
		}
		// anon_inode:[pidfd] until Linux 6.9; pidfd:[<inode>] since pidfs.
		if link != "anon_inode:[pidfd]" && !strings.HasPrefix(link, "pidfd:") {
			continue
		}
		info, err := readFdInfo("/proc/self/fdinfo/" + e.Name())
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reaper: read the pidfd %s: %w", e.Name(), err)
		}
		pid, found := 0, false
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "Pid:"); ok {
				pid, err = strconv.Atoi(strings.TrimSpace(v))
				found = err == nil
			}
		}
		if !found {
			return nil, fmt.Errorf("reaper: no pid in the fdinfo of pidfd %s", e.Name())
		}
		if pid > 0 { // -1 or 0: its process is gone, or in another pid namespace
			out[pid] = true
		}
	}
	return out, nil
}

// errNoPidfd refuses to reap where os/exec children carry no pidfd to tell them apart.
var errNoPidfd = errors.New("reaper: os/exec holds no pidfd for its children here (needs Go 1.23 and Linux 5.4), " +
	"so an adopted orphan could not be told from a child some Cmd.Wait collects; not becoming a subreaper")

// probe checks what reap relies on, on this system: that a child os/exec started and has
// not yet waited for is found by pidfdTargets.
func probe() error {
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("reaper: start a probe child: %w", err)
	}
	held, err := pidfdTargets()
	_ = cmd.Wait()
	switch {
	case err != nil:
		return err
	case !held[cmd.Process.Pid]:
		return errNoPidfd
	}
	return nil
}
