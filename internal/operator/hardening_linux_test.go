package operator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
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

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/mcp-harness/mcp-harness/internal/procid"
	"github.com/mcp-harness/mcp-harness/pty"
)

// A process's socket is never named without its start time: such a name would read as
// a dead server's, and the others would remove the socket of a live one.
func TestSocketName(t *testing.T) {
	if _, err := socketName(3, procid.Identity{Pid: 42}); err == nil {
		t.Errorf("socketName() without a start time = nil error, want a refusal")
	}
	name, err := socketName(3, procid.Identity{Pid: 42, ProcStart: 77})
	if err != nil || name != "op-3-42-77.sock" {
		t.Errorf("socketName(3, 42 started at 77) = %q, %v; want op-3-42-77.sock", name, err)
	}
}

// A symlink planted under the server's own socket name (a command that can write the
// state directory could plant one) is removed, not followed: the file it points at
// keeps its mode, and the socket is made, 0600, even under a umask that would not leave
// the owner's bits.
func TestListen_plantedSymlink(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	dir := deepDir(t)
	target := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(target, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	name, err := socketName(7, procid.Identify(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	old := unix.Umask(0o377)
	f := startWith(t, func(c *Config) { c.StateDir = dir })
	unix.Umask(old)
	if f.srv.Name() != name {
		t.Fatalf("Name() = %q, want %q", f.srv.Name(), name)
	}
	fi, err := os.Lstat(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode = %v, want a socket, 0600", fi.Mode())
	}
	if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the symlink's target after Listen: %v, %v; want it untouched, 0644", fi.Mode(), err)
	}
	if _, err := f.dial(t).Call(Request{Op: OpHello}); err != nil {
		t.Errorf("hello = %v", err)
	}
}

// Dial sends nothing to a socket that is not its server's: one named for another process
// (a confined command that can write the state directory makes one, or removes the
// server's and listens in its place), and one whose process runs with no_new_privs, as
// the agent's confined commands do, under its own name.
func TestDial_notTheServer(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	t.Run("AnotherProcess", func(t *testing.T) {
		dir := t.TempDir()
		// A live process that is not the one that listens: the test's own child.
		child := startSleep(t)
		name, err := socketName(5, procid.Identify(child))
		if err != nil {
			t.Fatal(err)
		}
		l, remove, err := listenSocket(dir, name)
		if err != nil {
			t.Fatal(err)
		}
		defer remove()
		defer l.Close()
		got := make(chan string, 1)
		go func() {
			c, err := l.Accept()
			if err != nil {
				got <- err.Error()
				return
			}
			defer c.Close()
			b, _ := io.ReadAll(c)
			got <- string(b)
		}()
		eps, err := Endpoints(dir)
		if err != nil || len(eps) != 1 || !eps[0].Live() {
			t.Fatalf("Endpoints() = %+v, %v; want one live", eps, err)
		}
		c, err := Dial(dir, eps[0])
		if err == nil {
			c.Send(Request{Op: OpSessions})
			c.Close()
		}
		if !errors.Is(err, ErrNotServer) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())+" listens on it") {
			t.Errorf("Dial(a socket named for pid %d, held by this process) = %v, want ErrNotServer naming this pid", child, err)
		}
		if b := <-got; b != "" {
			t.Errorf("the impostor received %q, want nothing", b)
		}
	})
	t.Run("NoNewPrivs", func(t *testing.T) {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "OPERATOR_TEST_NNP_LISTEN="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = t.Output()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		out := bufio.NewReader(stdout)
		if line, err := out.ReadString('\n'); line != "listening\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the confined listener said %q (%v), want listening", line, err)
		}
		eps, err := Endpoints(dir)
		if err != nil || len(eps) != 1 || eps[0].Pid != cmd.Process.Pid {
			t.Fatalf("Endpoints() = %+v, %v; want the child's", eps, err)
		}
		c, err := Dial(dir, eps[0])
		if err == nil {
			c.Send(Request{Op: OpSessions})
			c.Close()
		}
		if !errors.Is(err, ErrNotServer) || !strings.Contains(err.Error(), "no_new_privs") {
			t.Errorf("Dial(a no_new_privs process's socket) = %v, want ErrNotServer saying no_new_privs", err)
		}
		rest, _ := io.ReadAll(out)
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(rest)); got != "received 0 bytes" {
			t.Errorf("the confined listener said %q, want that it received nothing", got)
		}
	})
}

// Close does not wait on a person whose terminal stopped reading: the frame the view is
// writing when Close comes is cut short at once (endTimeout), not after the write's own
// bound, which this server has at an hour.
func TestServer_closeStalledViewer(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	blocking := make(chan struct{}, 1)
	f := startWith(t, func(c *Config) {
		c.requestTimeout = time.Hour
		c.hooks.frameSending = func(c *net.UnixConn) {
			_ = c.SetWriteBuffer(16 << 10) // a few frames fill it
			// Once the server's side of the connection holds all it may, this frame's
			// write blocks.
			if sendQueueFull(c) {
				select {
				case blocking <- struct{}{}:
				default:
				}
			}
		}
	})
	id := f.shell(t)
	c := f.dial(t)
	if _, err := c.Call(Request{Op: OpAttach, Session: id, Cols: 200, Rows: 60, Resize: true}); err != nil {
		t.Fatal(err)
	}
	// The person reads nothing from here; the session floods its screen.
	if _, err := f.m.IO(t.Context(), id, pty.Input{Data: []byte("while :; do head -c 30000 /dev/urandom | base64 -w 190; done\n")}, pty.ReadOptions{Timeout: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-blocking:
	case <-time.After(waitLong):
		t.Fatal("the server's side of the view's connection never filled up")
	}
	closed := make(chan error, 1)
	go func() { closed <- f.srv.Close(context.WithoutCancel(t.Context())) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLong):
		c.Close() // lets Close return, and the test end
		<-closed
		t.Fatal("Close still waited for a view whose person reads nothing")
	}
}

// A view's reader that is between two requests when the view ends does not undo the end
// by waiting for the next request with no deadline: the viewer is let go.
func TestServer_viewEndsWhileReaderBetweenRequests(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	ended := make(chan struct{})
	held := make(chan struct{}, 1)
	f := startWith(t, func(c *Config) {
		c.hooks.betweenReads = func() {
			held <- struct{}{}
			<-ended // the handler has pulled the deadline in by now
		}
		c.hooks.viewEnding = func() { close(ended) }
	})
	res, err := f.m.Open(t.Context(), pty.OpenOptions{Command: "exec cat"}, pty.ReadOptions{Timeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	id := res.SessionID
	c := f.dial(t)
	if _, err := c.Call(Request{Op: OpAttach, Session: id, Cols: 40, Rows: 5}); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(Request{Op: OpSize, Cols: 41, Rows: 5}); err != nil {
		t.Fatal(err)
	}
	<-held // the reader applied it and waits here
	if _, err := f.m.Close(t.Context(), id, syscall.SIGKILL, 0); err != nil {
		t.Fatal(err)
	}
	for {
		r, err := c.Recv()
		if err != nil {
			t.Fatalf("waiting for the end of the view: %v", err)
		}
		if r.End != nil {
			break
		}
	}
	// The view's handler returns once its reader has: then the server says EOF. The
	// person's side stays open meanwhile, so only the server can end it.
	if _, err := c.Recv(); err != io.EOF {
		t.Errorf("Recv() after the end = %v, want EOF: the server let the connection go", err)
	}
}

// The line of an answer leaves no copy in the buffers the wire read it with, and the
// client's encoding of it is what the server decodes.
func TestWire_answerLineForgotten(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	a, b := connPair(t)
	w := newWire(t.Context(), a)
	buf := make([]byte, 0, 4096)
	w.sc.Buffer(buf, maxRequest) // the scanner's buffer, where the test can see it
	const secret = "hunter2-Wire-Secret"
	cl := &Client{c: b, enc: json.NewEncoder(b)}
	if err := cl.SendLine([]byte(secret)); err != nil {
		t.Fatal(err)
	}
	r, err := w.read(t.Context(), time.Now().Add(waitLong))
	w.forget()
	if err != nil || r.Op != OpLine || string(r.Data) != secret {
		t.Fatalf("read() = %+v, %v; want the line", r, err)
	}
	enc := base64.StdEncoding.EncodeToString([]byte(secret))
	if bytes.Contains(buf[:cap(buf)], []byte(enc)) {
		t.Errorf("the scanner's buffer still holds the line's base64")
	}
}

// sendQueueFull reports whether c's queue of what the peer has not read is as large as
// its send buffer: the next write blocks.
func sendQueueFull(c *net.UnixConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var outq, sndbuf int
	var qerr, berr error
	if err := raw.Control(func(fd uintptr) {
		outq, qerr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ)
		sndbuf, berr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
	}); err != nil {
		return false
	}
	return qerr == nil && berr == nil && outq >= sndbuf
}

// startSleep starts a process that lives as long as the test, and returns its pid.
func startSleep(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

func connPair(t *testing.T) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "pair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}
