package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mcp-harness/mcp-harness/internal/operator"
	"github.com/mcp-harness/mcp-harness/internal/procid"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/pty"
)

// A process that poses as a server on the workspace's state directory, as a command
// that can write it could (a server without its mount layer leaves it writable): it
// listens under a server's socket name and says it has a session that asks for a
// password, the newest on the workspace. The operator commands must send it nothing that
// matters: not the request to answer, never the person's line.

// The other variables (beside fakeOperatorEnv, e2e_helpers_test.go) say how it poses.
const (
	fakeNumberEnv = "E2E_FAKE_NUMBER" // the server number it claims
	fakeAsPidEnv  = "E2E_FAKE_AS_PID" // a pid whose socket it takes over (removes, and listens under its name)
	fakeNNPEnv    = "E2E_FAKE_NNP"    // "1": it runs with no_new_privs, as a confined command does
)

// fakeOperator is the fake server's main: it says "listening" on stdout once it
// listens, then, for every connection, "request <op>" for its first request (and
// "line <n bytes>" for an answer's line, which a real person's answer would be).
func fakeOperator(dir string) int {
	if os.Getenv(fakeNNPEnv) == "1" {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			fmt.Println("prctl:", err)
			return 1
		}
	}
	number, _ := strconv.Atoi(os.Getenv(fakeNumberEnv))
	id := procid.Identify(os.Getpid())
	if p := os.Getenv(fakeAsPidEnv); p != "" {
		pid, _ := strconv.Atoi(p)
		id = procid.Identify(pid)
	}
	name := fmt.Sprintf("op-%d-%d-%d.sock", number, id.Pid, id.ProcStart)
	path := filepath.Join(dir, name)
	os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	fmt.Println("listening")
	info := operator.ServerInfo{Number: number, Pid: id.Pid, RunnerID: "r-fake", Version: "fake", Workspace: "/"}
	sid := fmt.Sprintf("s%d-1", number)
	session := operator.Session{Server: info, SessionID: sid, Command: "sudo apt upgrade", Pid: os.Getpid(), Cols: 80, Rows: 24,
		State: pty.StateInput, Waiting: &operator.Waiting{Kind: pty.InputPassword, Prompt: "[sudo] password for you:"},
		StartedAt: "2030-01-01T00:00:00.000Z", LastActivityAt: "2030-01-01T00:00:00.000Z"}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return 1
		}
		go func() {
			defer c.Close()
			sc := bufio.NewScanner(c)
			enc := json.NewEncoder(c)
			if !sc.Scan() {
				return
			}
			var r operator.Request
			_ = json.Unmarshal(sc.Bytes(), &r)
			say("request %s", r.Op)
			switch r.Op {
			case operator.OpHello, operator.OpSessions:
				_ = enc.Encode(operator.Reply{Server: &info, Sessions: []operator.Session{session}})
			case operator.OpAnswer:
				_ = enc.Encode(operator.Reply{Asking: &operator.Waiting{Kind: pty.InputPassword, Prompt: "[sudo] password for you:"}})
				if sc.Scan() {
					_ = json.Unmarshal(sc.Bytes(), &r)
					say("line %d bytes", len(r.Data))
					_ = enc.Encode(operator.Reply{Answered: true})
				}
			}
		}()
	}
}

// fakeServer starts the test binary as a fake server in ws's state directory, with env
// saying how it poses, and returns what it says (read once it has been stopped).
func startFakeServer(t *testing.T, ws string, env ...string) func() string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, fakeOperatorEnv+"="+filepath.Join(ws, workspace.StateDirName))...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); line != "listening\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the fake server said %q (%v), want listening", line, err)
	}
	var said strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 4096)
		for {
			n, err := out.Read(b)
			said.Write(b[:n])
			if err != nil {
				return
			}
		}
	}()
	stop := sync.OnceValue(func() string {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		<-done
		return said.String()
	})
	t.Cleanup(func() { stop() })
	return stop
}

// Three impostors, none of which gets a person's answer, nor a request to take one:
// one that runs confined (no_new_privs) under a number of its own; one that has removed
// the real server's socket and listens under its name; and an unconfined process of the
// person's (a command could have tmux or systemd-run start one) that claims the real
// server's number. The operator commands say what is wrong, and exit 1.
func TestOperator_E2E_impostors(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	id := openBash(t, s)

	t.Run("Confined", func(t *testing.T) {
		said := startFakeServer(t, ws, fakeNumberEnv+"=7", fakeNNPEnv+"=1")
		out := runBinary(t, nil, "answer", "s7-1", "--workspace", ws)
		t.Logf("answer s7-1: %s", out.stderr)
		if out.code != 1 || !strings.Contains(out.stderr, "not the server's socket") || !strings.Contains(out.stderr, "no_new_privs") {
			t.Errorf("answer s7-1 at a confined impostor: exit %d, stderr %q; want 1 and a refusal saying it runs with no_new_privs", out.code, out.stderr)
		}
		out = runBinary(t, nil, "sessions", "--workspace", ws)
		if out.code != 1 || strings.Contains(out.stdout, "s7-1") || !strings.Contains(out.stdout, id) {
			t.Errorf("sessions with a confined impostor: exit %d\n%s%s\nwant 1, the real session alone", out.code, out.stdout, out.stderr)
		}
		if got := said(); got != "" {
			t.Errorf("the confined impostor was sent %q, want nothing", got)
		}
	})
	t.Run("InTheServersPlace", func(t *testing.T) {
		said := startFakeServer(t, ws, fakeNumberEnv+"=1", fakeAsPidEnv+"="+strconv.Itoa(s.cmd.Process.Pid))
		out := runBinary(t, nil, "answer", id, "--workspace", ws)
		t.Logf("answer %s: %s", id, out.stderr)
		if want := "listens on it"; out.code != 1 || !strings.Contains(out.stderr, "not the server's socket") || !strings.Contains(out.stderr, want) {
			t.Errorf("answer %s at an impostor in its server's place: exit %d, stderr %q; want 1 and a refusal", id, out.code, out.stderr)
		}
		if got := said(); got != "" {
			t.Errorf("the impostor in the server's place was sent %q, want nothing", got)
		}
	})
	t.Run("ClaimsTheServersNumber", func(t *testing.T) {
		// The real server's socket was taken over just above: start another to have one.
		s2 := startServer(t, ws)
		s2.initialize()
		id2 := openBash(t, s2)
		number := strings.TrimSuffix(strings.TrimPrefix(id2, "s"), "-1")
		said := startFakeServer(t, ws, fakeNumberEnv+"="+number)
		out := runBinary(t, nil, "answer", id2, "--workspace", ws)
		t.Logf("answer %s: %s", id2, out.stderr)
		if out.code != 1 || !strings.Contains(out.stderr, "is claimed by two sockets") {
			t.Errorf("answer %s with two sockets claiming server %s: exit %d, stderr %q; want 1 and a refusal naming both", id2, number, out.code, out.stderr)
		}
		// A person runs answer, which picks the newest question: the impostor's says
		// it is newer than anything. Were it asked, the person would type their password.
		term := startPersonTerm(t, 200, 20)
		term.typeLine(binPath + " answer --workspace " + ws)
		lines := term.waitScreen("the refusal, or a question", func(lines []string) bool {
			return screenHas("is claimed by two sockets")(lines) && backAtShell(lines) || screenHas("asks for a password")(lines)
		})
		if screenHas("asks for a password")(lines) {
			term.typeLine("Imp0stor-Bait")
			term.waitScreen("the person's shell again", backAtShell)
			t.Errorf("answer asked the person for a password on behalf of an impostor:\n%s", strings.Join(lines, "\n"))
		}
		if rc := term.exitStatusOf(); rc != "1" {
			t.Errorf("answer with two sockets claiming server %s exited %s, want 1", number, rc)
		}
		out = runBinary(t, nil, "sessions", "--workspace", ws)
		if out.code != 1 || strings.Contains(out.stdout, "sudo apt upgrade") || !strings.Contains(out.stderr, "is claimed by two sockets") {
			t.Errorf("sessions with two sockets claiming server %s: exit %d\n%s%s\nwant 1, neither's sessions", number, out.code, out.stdout, out.stderr)
		}
		got := said()
		if strings.Contains(got, "request answer") || strings.Contains(got, "line ") {
			t.Errorf("the impostor was sent %q, want no answer and no line", got)
		}
	})
}
