package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"runtime"
	"strconv"
	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// On Linux a policy is enforced by a thread of the server's that has confined itself
// (spawner): it entered a mount namespace of its own with the read-only view of the file
// system (mounts_linux.go), dropped the capabilities a command never needs (caps_linux.go),
// set no_new_privs, loaded the seccomp filter of the policy (seccomp_linux.go) and
// restricted itself with the policy's Landlock ruleset. Every command of the policy is
// forked from that thread, so it starts with all of it, before its first instruction, and
// so does everything it starts in turn: setsid and daemons included, since the kernel
// carries all of it across fork and exec and nothing undoes it.
//
// Each of those is per thread in the kernel, which is what lets the rest of the server
// stay unconfined. The Go runtime runs only the spawner's goroutine on its locked thread,
// and never clones a new thread from a locked one (it asks its template thread instead),
// so nothing else inherits the confinement. The main thread must never be a spawner: /proc
// checks a process's access against its main thread (init locks the main goroutine to it).

func init() {
	// A spawner must not be the main thread (see above): with main.main locked to it, no
	// other goroutine, the spawners included, is ever scheduled there.
	runtime.LockOSThread()
}

type platform struct {
	spawners map[Policy]*spawner
}

// spawner is the threads confined to one policy, and the queue of starts they take from.
// It starts with one thread and adds one (up to maxThreads) whenever a start finds none
// free: a thread is busy from fork until the child has executed its program, so starts of
// parallel tasks would otherwise queue behind each other. Each thread confines itself
// alike; Landlock makes each a domain of its own, so two commands forked by different
// threads of a policy cannot ptrace each other (a command and what it starts share one).
type spawner struct {
	p      Policy
	reqs   chan spawnReq
	quit   chan struct{} // closed by close: no start is taken any more
	mounts bool          // the threads have the mount layer (their own view of the file system)
	view   *mountPlan
	rules  *ruleset // kept open to confine the threads added later

	mu      sync.Mutex
	threads int // confined and taking starts
	adding  int // being started
	wg      sync.WaitGroup
}

// maxThreads bounds a policy's threads: more parallel starts than CPUs gain nothing.
var maxThreads = min(runtime.GOMAXPROCS(0), 4)

type spawnReq struct {
	run   func() error
	reply chan error
}

func probe() Support {
	var s Support
	if v, err := ll.LandlockGetABIVersion(); err == nil {
		s.Landlock = v
	}
	s.Seccomp = seccomp.Supported()
	s.Mounts, s.MountsWhy = mountsPossible()
	return s
}

// warm makes the spawner of p now.
func (l *Launcher) warm(p Policy) error {
	_, err := l.spawner(p)
	return err
}

// spawner returns p's spawner, making it the first time.
func (l *Launcher) spawner(p Policy) (*spawner, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if sp := l.plat.spawners[p]; sp != nil {
		return sp, nil
	}
	if len(l.plat.spawners) >= maxPolicies {
		return nil, fmt.Errorf("more than %d sandbox policies in use at once", maxPolicies)
	}
	sp, err := l.newSpawner(p)
	if err != nil && l.support.Mounts {
		// The mount layer is an addition to Landlock and seccomp, not a condition of them:
		// a system that refuses it (a container without mount rights) still gets those.
		l.log.Warn("sandbox: commands get no read-only view of the file system; Landlock and seccomp still confine them", "policy", p.String(), "err", err)
		l.support.Mounts, l.support.MountsWhy = false, err.Error()
		sp, err = l.newSpawner(p)
	}
	if err != nil {
		return nil, err
	}
	if l.plat.spawners == nil {
		l.plat.spawners = map[Policy]*spawner{}
	}
	l.plat.spawners[p] = sp
	return sp, nil
}

// hideServer makes this process not dumpable, once, before its first confined command
// starts. A spawner thread and the commands it forks share a Landlock domain, and for a
// root server the same capabilities, so neither Landlock's scoping nor the capability
// check of ptrace would keep a root command out of /proc/<server>/task/<spawner>/environ,
// mem or fd, which are the server's whole environment, memory and files. Not dumpable,
// every such access needs CAP_SYS_PTRACE, which no confined command has. It also keeps
// the server's core out of a dump and its /proc entries from other processes of the user
// (cmdline and stat stay readable); it costs nothing else, and a command's own exec makes
// it dumpable again.
var hideServer = sync.OnceValue(func() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the server not dumpable: %w", err)
	}
	return nil
})

// newSpawner makes p's spawner with its first thread, confined.
func (l *Launcher) newSpawner(p Policy) (*spawner, error) {
	if err := hideServer(); err != nil {
		return nil, err
	}
	rules, err := l.ruleset(p)
	if err != nil {
		return nil, err
	}
	sp := &spawner{p: p, reqs: make(chan spawnReq), quit: make(chan struct{}), mounts: l.support.Mounts && p.Mode != Off, rules: rules}
	if sp.mounts {
		sp.view = l.mountPlan(p.Mode)
	}
	if err := sp.addThread(); err != nil {
		rules.close()
		return nil, err
	}
	return sp, nil
}

// addThread starts one more thread and waits until it has confined itself.
func (sp *spawner) addThread() error {
	ready := make(chan error, 1)
	sp.wg.Add(1)
	go func() {
		defer sp.wg.Done()
		// Locked and never unlocked: when this goroutine returns, the runtime ends the
		// thread instead of handing its confinement on to other goroutines.
		runtime.LockOSThread()
		if err := confineThread(sp.p, sp.view, sp.rules); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for {
			select {
			case r := <-sp.reqs:
				r.reply <- r.run()
			case <-sp.quit:
				return
			}
		}
	}()
	if err := <-ready; err != nil {
		return err
	}
	sp.mu.Lock()
	sp.threads++
	sp.mu.Unlock()
	return nil
}

// do runs r on a free thread, adding one when none is free and the pool may grow.
func (sp *spawner) do(r spawnReq, log *slog.Logger) error {
	select {
	case sp.reqs <- r:
		return <-r.reply
	case <-sp.quit:
		return errClosed
	default:
	}
	sp.mu.Lock()
	grow := sp.threads+sp.adding < maxThreads
	if grow {
		sp.adding++ // so that two starts do not both grow past the bound
	}
	sp.mu.Unlock()
	if grow {
		err := sp.addThread()
		sp.mu.Lock()
		sp.adding--
		sp.mu.Unlock()
		if err != nil {
			log.Warn("sandbox: cannot add a thread; starts wait for the ones there are", "policy", sp.p.String(), "err", err)
		}
	}
	select {
	case sp.reqs <- r:
		return <-r.reply
	case <-sp.quit:
		return errClosed
	}
}

// close ends the threads (their commands get SIGKILL: see Close) and the ruleset.
func (sp *spawner) close() {
	close(sp.quit)
	sp.wg.Wait()
	sp.rules.close()
}

var errClosed = errors.New("the sandbox is closed: the server is shutting down")

// confineThread confines the calling (locked) thread to p: the mount layer first (it
// needs the capabilities dropped next), then no_new_privs, seccomp and Landlock, which
// cannot be undone.
func confineThread(p Policy, view *mountPlan, rules *ruleset) error {
	if unix.Gettid() == unix.Getpid() {
		return errors.New("sandbox: a spawner would be the main thread (see launch_linux.go)")
	}
	if view != nil {
		if err := view.enter(); err != nil {
			return fmt.Errorf("mount namespace: %w", err)
		}
	}
	if err := dropCapabilities(); err != nil {
		return fmt.Errorf("capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if p.Network == NetworkOff {
		if err := loadNetworkFilter(); err != nil {
			return err
		}
	}
	return rules.restrictThread()
}

// start runs cmd.Start on p's spawner thread.
func (l *Launcher) start(p Policy, cmd *exec.Cmd, dir *Where) error {
	sp, err := l.spawner(p)
	if err != nil {
		return err
	}
	run := func() error {
		if dir != nil {
			if !sp.mounts {
				cmd.Dir = dir.Exec
				return cmd.Start()
			}
			fd, err := reopenDir(dir)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			cmd.Dir = "/proc/self/fd/" + strconv.Itoa(fd)
		}
		return cmd.Start()
	}
	return sp.do(spawnReq{run: run, reply: make(chan error, 1)}, l.log)
}

// reopenDir opens dir.Path in the calling thread's view of the file system and checks
// that it is the directory held open: a path swapped since the check is refused.
func reopenDir(dir *Where) (int, error) {
	fd, err := unix.Open(dir.Path, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("%w: %v", ErrDirChanged, err)
	}
	var a, b unix.Stat_t
	if err := unix.Fstat(fd, &a); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if dir.File != nil {
		if err := unix.Fstat(int(dir.File.Fd()), &b); err != nil || a.Dev != b.Dev || a.Ino != b.Ino {
			unix.Close(fd)
			return -1, ErrDirChanged
		}
	}
	return fd, nil
}

func (l *Launcher) closePlatform() {
	l.mu.Lock()
	spawners := l.plat.spawners
	l.plat.spawners = nil
	l.mu.Unlock()
	for _, sp := range spawners {
		sp.close()
	}
}
