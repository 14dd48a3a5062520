//go:build linux

package e2e

// The remote helper (internal/remote), mcp-harness-remote, seen from outside: a server
// starts it only when a Kubernetes task or an s3:// bucket needs it, it never outlives
// the server (closed, or killed), and a server without it says how to install it. No
// cluster needed: the helper answers that none is configured. The cluster's cases, a
// helper killed under a running pod among them, are in kube_e2e_test.go.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/procstat"
)

// helperChildren lists the server's children that run the remote helper.
func helperChildren(t testing.TB, serverPid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, ok := procstat.Read(pid)
		if !ok || st.PPid != serverPid || st.State == 'Z' {
			continue // gone meanwhile, another's, or over
		}
		// comm is the executable's name cut to 15 bytes.
		if comm, err := os.ReadFile("/proc/" + e.Name() + "/comm"); err == nil && strings.TrimSpace(string(comm)) == "mcp-harness-remote"[:15] {
			pids = append(pids, pid)
		}
	}
	return pids
}

// gone waits until process pid has exited (it no longer exists, or is a zombie its new
// parent has not reaped yet).
func gone(t *testing.T, pid int, what string) {
	t.Helper()
	waitFor(t, what+" (pid "+strconv.Itoa(pid)+") to exit after the server", func() bool {
		st, ok := procstat.Read(pid)
		return !ok || st.State == 'Z'
	})
}

// shortTempDir is a temporary directory short enough to hold the helper's socket
// directory (a long one sends it to /tmp: TestRemoteHelper_StartedAgainAfterItDied), so
// that the test sees what is left in it.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "mh-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// noKubeEnv is the test's environment without a kubeconfig: the helper finds no cluster.
func noKubeEnv(t *testing.T, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "TMPDIR=") {
			env = append(env, kv)
		}
	}
	return append(append(env, "HOME="+t.TempDir()), extra...)
}

// refusedKube submits a graph with a Kubernetes task and returns the refusal's text.
func refusedKube(t *testing.T, s *server) string {
	t.Helper()
	res := s.toolCall("tasks_run", map[string]any{"executor": "kubernetes", "tasks": []any{map[string]any{"id": "a", "command": "true"}}})
	text := resultText(res)
	if res["isError"] != true || !strings.HasPrefix(text, "EXECUTOR_UNAVAILABLE: ") {
		t.Fatalf("tasks_run of a kubernetes task = %q, want EXECUTOR_UNAVAILABLE", text)
	}
	return text
}

// A server runs no helper until a Kubernetes task needs one; the helper it then starts
// exits with the server, whether the server is told to stop (its input closed) or killed,
// and leaves nothing in the temporary directory.
func TestRemoteHelper_StartsWhenNeededAndEndsWithTheServer(t *testing.T) {
	for _, stop := range []string{"stdin closed", "SIGKILL"} {
		t.Run(stop, func(t *testing.T) {
			tmp := shortTempDir(t)
			cmd := exec.Command(binPath, "stdio", "--workspace", t.TempDir(), "--log-level", "info")
			cmd.Env = noKubeEnv(t, "TMPDIR="+tmp)
			s := startCmd(t, cmd)
			s.initialize()
			res := s.toolCall("tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "a", "command": "true"}}})
			if res["isError"] == true {
				t.Fatalf("a local graph: %s", resultText(res))
			}
			s.waitGraph(structuredOf(t, res)["graphId"].(string))
			if pids := helperChildren(t, s.cmd.Process.Pid); len(pids) != 0 {
				t.Fatalf("a server that ran local tasks alone runs the remote helper: pids %v", pids)
			}
			if text := refusedKube(t, s); !strings.Contains(text, "no Kubernetes cluster is configured") {
				t.Errorf("the refusal = %q, want the helper's reason: no Kubernetes cluster is configured", text)
			}
			pids := helperChildren(t, s.cmd.Process.Pid)
			if len(pids) != 1 {
				t.Fatalf("after a Kubernetes task was refused by the helper, the server's helpers are %v, want one", pids)
			}
			if entries, _ := os.ReadDir(tmp); len(entries) != 1 {
				t.Errorf("the temporary directory holds %d entries while the helper runs, want its socket's directory", len(entries))
			}
			switch stop {
			case "SIGKILL":
				s.signal(syscall.SIGKILL)
			default:
				s.stdin.Close()
			}
			code := s.waitExit()
			gone(t, pids[0], "the remote helper")
			if stop != "SIGKILL" && code != 0 {
				t.Errorf("the server exited %d, want 0; stderr:\n%s", code, s.stderr)
			}
			if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
				t.Errorf("the temporary directory holds %v after the server and its helper ended, want nothing", entries)
			}
		})
	}
}

// A helper that dies (a crash, the OOM killer) is started again at the next call. The
// temporary directory's path is too long for a socket's: the socket goes to /tmp.
func TestRemoteHelper_StartedAgainAfterItDied(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("x", 60), strings.Repeat("y", 60))
	if err := os.MkdirAll(long, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "stdio", "--workspace", t.TempDir(), "--log-level", "info")
	cmd.Env = noKubeEnv(t, "TMPDIR="+long)
	s := startCmd(t, cmd)
	s.initialize()
	refusedKube(t, s)
	first := helperChildren(t, s.cmd.Process.Pid)
	if len(first) != 1 {
		t.Fatalf("helpers %v, want one", first)
	}
	if err := syscall.Kill(first[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The server reaps it; until it notices, a call may find its socket dead and say so.
	waitFor(t, "the helper's own refusal after it was killed", func() bool {
		return strings.Contains(refusedKube(t, s), "no Kubernetes cluster is configured")
	})
	helperReplaced(t, s, first[0])
}

// helperReplaced checks that the server runs one helper, not the one it ran before (which
// was killed), and that its log says it started another.
func helperReplaced(t *testing.T, s *server, before int) {
	t.Helper()
	now := helperChildren(t, s.cmd.Process.Pid)
	if len(now) != 1 || now[0] == before {
		t.Errorf("helpers after the one before (%d) was killed: %v, want one new one", before, now)
	}
	if !strings.Contains(s.stderr.String(), "the remote helper exited; starting it again") {
		t.Errorf("the server's log does not say the helper was started again:\n%s", s.stderr)
	}
}

// A server installed without its helper runs local tasks, refuses Kubernetes tasks saying
// how to install the helper, and refuses to start with an s3:// bucket for the same reason.
func TestRemoteHelper_Missing(t *testing.T) {
	dir := t.TempDir()
	alone := filepath.Join(dir, "mcp-harness")
	data, err := os.ReadFile(binPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	env := noKubeEnv(t)
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=/usr/bin:/bin" // where no helper is
		}
	}
	cmd := exec.Command(alone, "stdio", "--workspace", t.TempDir())
	cmd.Env = env
	s := startCmd(t, cmd)
	s.initialize()
	if text := refusedKube(t, s); !strings.Contains(text, "mcp-harness-remote was not found beside mcp-harness or on PATH") || !strings.Contains(text, "install it") {
		t.Errorf("the refusal = %q, want it to say the helper was not found and how to install it", text)
	}
	res := s.toolCall("tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "a", "command": "true"}}})
	if res["isError"] == true {
		t.Errorf("a local graph on a server without its helper: %s", resultText(res))
	}

	out, err := exec.Command(alone, "stdio", "--workspace", t.TempDir(), "--artifacts-url", "s3://bucket/p?region=r").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "mcp-harness-remote was not found") {
		t.Errorf("a server with an s3 bucket and no helper: %v, %s; want a refusal naming the missing helper", err, out)
	}
}

// A helper of another release refuses to serve, and the server's refusal says why.
func TestRemoteHelper_OtherRelease(t *testing.T) {
	out, err := exec.Command(filepath.Join(filepath.Dir(binPath), "mcp-harness-remote"), "serve", "0").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "install both from the same one") {
		t.Fatalf("the helper asked for protocol 0: %v, %q; want exit 2 saying the releases differ", err, out)
	}
	old := filepath.Join(t.TempDir(), "old-helper")
	if err := os.WriteFile(old, []byte("#!/bin/sh\necho 'this mcp-harness-remote speaks protocol 0 and the server 1' >&2\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "stdio", "--workspace", t.TempDir())
	cmd.Env = noKubeEnv(t, "MCP_HARNESS_REMOTE="+old)
	s := startCmd(t, cmd)
	s.initialize()
	if text := refusedKube(t, s); !strings.Contains(text, "speaks protocol 0 and the server 1") {
		t.Errorf("the refusal = %q, want the old helper's own reason", text)
	}
}

// The helper serves its server alone: another process of the same user (here the test;
// in earnest, a confined command, which may still reach Unix sockets) that connects to its
// socket gets no answer, and the server's log says so.
func TestRemoteHelper_RefusesOtherProcesses(t *testing.T) {
	tmp := shortTempDir(t)
	cmd := exec.Command(binPath, "stdio", "--workspace", t.TempDir(), "--log-level", "info")
	cmd.Env = noKubeEnv(t, "TMPDIR="+tmp)
	s := startCmd(t, cmd)
	s.initialize()
	refusedKube(t, s)
	socks, _ := filepath.Glob(filepath.Join(tmp, "mcp-harness-remote-*", "sock"))
	if len(socks) != 1 {
		t.Fatalf("helper sockets %v, want one", socks)
	}
	c, err := net.Dial("unix", socks[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(e2eWait))
	body := `{"executor":1}`
	fmt.Fprintf(c, "POST /kube/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	got, err := io.ReadAll(c)
	if len(got) != 0 {
		t.Errorf("the helper answered another process: %q", got)
	}
	if err != nil && !errors.Is(err, syscall.ECONNRESET) { // closed unread: a reset
		t.Errorf("reading the helper's answer: %v, want the connection closed", err)
	}
	waitFor(t, "the helper's refusal in the server's log", func() bool {
		return strings.Contains(s.stderr.String(), "refused a connection that did not come from the server")
	})
	// The server's own calls still go through.
	refusedKube(t, s)
}
