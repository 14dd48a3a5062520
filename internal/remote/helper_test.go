package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// TestMain builds the helper for the tests that run it, and names it with HelperEnv.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "remote-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin := filepath.Join(dir, HelperName)
	build := exec.Command("go", "build", "-o", bin, "github.com/mcp-harness/mcp-harness/cmd/"+HelperName)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the helper:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	os.Setenv(HelperEnv, bin)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// noCluster is a Kubernetes configuration that names no cluster: the helper's executor
// answers every call that the cluster is not configured, as unavailable.
func noCluster(t *testing.T) KubeConfig {
	return KubeConfig{Kubeconfig: filepath.Join(t.TempDir(), "none")}
}

// startedHelper returns a helper that runs, and its executor, closed with the test.
func startedHelper(t *testing.T) (*Helper, *KubeExecutor) {
	t.Helper()
	h := &Helper{}
	x := NewKube(h, noCluster(t))
	t.Cleanup(func() {
		x.Close()
		if err := h.Close(); err != nil {
			t.Errorf("closing the helper: %v", err)
		}
	})
	if err := x.Check(t.Context()); !errors.Is(err, tasks.ErrExecutorUnavailable) {
		t.Fatalf("Check without a cluster = %v, want unavailable", err)
	}
	if h.pid() == 0 {
		t.Fatal("no helper runs after a call")
	}
	return h, x
}

// waitExited waits until h has seen its helper exit.
func waitExited(t *testing.T, h *Helper) {
	t.Helper()
	h.mu.Lock()
	exited := h.exited
	h.mu.Unlock()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the helper did not exit")
	}
}

// Once the helper died, closing the executor or releasing an attempt starts no helper
// just for that (what the dead one held went with it); the next real call starts one.
func TestKubeExecutor_CloseAfterTheHelperDiedStartsNone(t *testing.T) {
	h, x := startedHelper(t)
	syscall.Kill(h.pid(), syscall.SIGKILL)
	waitExited(t, h)
	x.Release(tasks.AttemptID{GraphID: "g", TaskID: "t", Attempt: 1})
	if _, ok := h.running(); ok {
		t.Fatal("Release started a helper")
	}
	y := NewKube(h, noCluster(t))
	if err := y.Check(t.Context()); !errors.Is(err, tasks.ErrExecutorUnavailable) || !strings.Contains(err.Error(), "no Kubernetes cluster is configured") {
		t.Fatalf("Check through a new helper = %v", err)
	}
	pid := h.pid()
	x.Close() // x's executor lived in the dead helper: nothing to close in this one
	if err := y.Check(t.Context()); !strings.Contains(fmt.Sprint(err), "no Kubernetes cluster is configured") {
		t.Errorf("after x closed, y's Check = %v, want its executor still there", err)
	}
	if h.pid() != pid {
		t.Errorf("the helper changed from %d to %d", pid, h.pid())
	}
}

// A call for an executor the helper does not have (one of a helper that died) is refused
// as unavailable, so that the caller opens its executor again and calls again.
func TestHelper_UnknownExecutorIsUnavailable(t *testing.T) {
	h, _ := startedHelper(t)
	err := h.call(t.Context(), PathKubeCheck, KubeCall{Executor: 12345}, nil)
	if !errors.Is(err, tasks.ErrExecutorUnavailable) || !strings.Contains(err.Error(), "no Kubernetes executor 12345") {
		t.Errorf("a call for executor 12345 = %v, want unavailable, naming it", err)
	}
}

// A Ctrl-C at the server's terminal reaches the helper too (one process group): the
// helper serves on, for the server's shutdown.
func TestHelper_OutlivesSIGINTAndSIGTERM(t *testing.T) {
	h, x := startedHelper(t)
	pid := h.pid()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		syscall.Kill(pid, sig)
	}
	// The signals are handled before the next call is served: a helper they killed would
	// be seen exited, and another started.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for range 3 {
		if err := x.Check(ctx); !strings.Contains(fmt.Sprint(err), "no Kubernetes cluster is configured") {
			t.Fatalf("Check after the signals = %v", err)
		}
	}
	if h.pid() != pid {
		t.Fatalf("the helper was started again (%d, then %d): the signals killed it", pid, h.pid())
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the helper is gone after the signals: %v", err)
	}
}

// The helper's log is read line by line; a line too long is cut, and the lines after it
// are read as ever.
func TestLogLines_CutsALongLineAndGoesOn(t *testing.T) {
	long := strings.Repeat("x", maxLogLine+100)
	var got []string
	logLines(strings.NewReader("one\n"+long+"\ntwo\n\nthree"), func(l string) { got = append(got, l) })
	if len(got) != 5 || got[0] != "one" || len(got[1]) != maxLogLine || got[2] != "two" || got[3] != "" || got[4] != "three" {
		t.Errorf("lines %q (the long one %d bytes)", trim(got), len(got[1]))
	}
}

func trim(ls []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		if len(l) > 20 {
			l = l[:20] + "..."
		}
		out[i] = l
	}
	return out
}
