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
