package reaper

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func start(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
	stop, err := Start()
	if err != nil {
		t.Skipf("no reaper here: %v", err)
	}
	t.Cleanup(stop)
	if !Active() {
		t.Fatal("Start() = nil, but this process is no child subreaper")
	}
}

// eventually waits for cond, checking it every few milliseconds, for up to 30s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// An orphan is adopted by this process and, once it dies, collected: no zombie stays.
func TestStart_collectsOrphans(t *testing.T) {
	start(t)
	out, err := exec.Command("/bin/sh", "-c", "sleep 1000 >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("no pid in %q", out)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if p, ok := readStat(pid); !ok || p.ppid != os.Getpid() {
		t.Fatalf("orphan %d: parent %d, want this process %d (a subreaper)", pid, p.ppid, os.Getpid())
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the killed orphan to be collected", func() bool {
		_, ok := readStat(pid)
		return !ok
	})
}

// Children that os/exec waits for keep their exit statuses while the reaper runs.
func TestStart_leavesCmdWaitItsChildren(t *testing.T) {
	start(t)
	var wg sync.WaitGroup
	errs := make(chan string, 40)
	for i := range 40 {
		wg.Go(func() {
			cmd := exec.Command("/bin/sh", "-c", "exit "+strconv.Itoa(i%5+1))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != i%5+1 {
				errs <- fmt.Sprintf("exit %d: %v", i%5+1, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// failReads makes pidfdTargets' reads of what is named fail with EMFILE, as they do when
// this process has run out of descriptors, until the returned restore is called (at the
// latest when the test ends).
func failReads(t *testing.T, which string) (restore func()) {
	t.Helper()
	emfile := func(name string) error { return &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE} }
	savedProc, savedDir, savedInfo := readProcDir, readFdDir, readFdInfo
	switch which {
	case "proc dirs":
		readProcDir = func(name string) ([]os.DirEntry, error) { return nil, emfile(name) }
	case "fd dir":
		readFdDir = func(name string) ([]os.DirEntry, error) { return nil, emfile(name) }
	case "fdinfo":
		readFdInfo = func(name string) ([]byte, error) { return nil, emfile(name) }
	default:
		t.Fatalf("failReads(%q)", which)
	}
	var once sync.Once
	restore = func() { once.Do(func() { readProcDir, readFdDir, readFdInfo = savedProc, savedDir, savedInfo }) }
	t.Cleanup(restore)
	return restore
}

// zombie waits until pid has exited and is left for its parent, this process, to collect.
func zombie(t *testing.T, pid int) {
	t.Helper()
	eventually(t, fmt.Sprintf("child %d to exit", pid), func() bool {
		p, ok := readStat(pid)
		return ok && p.state == 'Z'
	})
}

// When the children or the pidfds cannot be read (too many open files), a round collects
// nothing and asks to be run again: the zombie of a child os/exec still waits for keeps
// its exit status for Cmd.Wait, and an orphan's zombie is left to a later round, which
// collects it.
func TestReap_collectsNothingWhenProcCannotBeRead(t *testing.T) {
	for _, which := range []string{"proc dirs", "fd dir", "fdinfo"} {
		t.Run(which, func(t *testing.T) {
			held := exec.Command("/bin/sh", "-c", "exit 7")
			if err := held.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = held.Wait() })
			// Started without the os package, as an adopted orphan is: no pidfd holds it.
			orphan, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", "exit 0"}, &syscall.ProcAttr{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(orphan, &ws, syscall.WNOHANG, nil)
			})
			zombie(t, held.Process.Pid)
			zombie(t, orphan)

			restore := failReads(t, which)
			if left := reap(); !left {
				t.Errorf("reap() with the %s unreadable = false, want true (look again later)", which)
			}
			if Collect(held.Process.Pid) {
				t.Errorf("Collect(%d) with the %s unreadable = true, want false", held.Process.Pid, which)
			}
			for _, pid := range []int{held.Process.Pid, orphan} {
				if p, ok := readStat(pid); !ok || p.state != 'Z' {
					t.Errorf("child %d was collected in a round that could not read the %s", pid, which)
				}
			}

			restore()
			reap()
			if _, ok := readStat(orphan); ok {
				t.Errorf("the orphan %d is still there after a round that could read /proc", orphan)
			}
			err = held.Wait()
			if held.ProcessState == nil || held.ProcessState.ExitCode() != 7 {
				t.Errorf("Cmd.Wait() = %v, state %v, want exit status 7: its status was taken", err, held.ProcessState)
			}
		})
	}
}
