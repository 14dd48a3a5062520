package operator

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/mcp-harness/mcp-harness/internal/procid"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("OPERATOR_TEST_NNP_DIAL"); dir != "" {
		os.Exit(nnpDial(dir))
	}
	if dir := os.Getenv("OPERATOR_TEST_NNP_LISTEN"); dir != "" {
		os.Exit(nnpListen(dir))
	}
	os.Exit(m.Run())
}

// nnpDial is a confined command's attempt: with no_new_privs set, as the sandbox sets it,
// it connects to the server in dir and prints the code of the refusal, or OK.
func nnpDial(dir string) int {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Println("prctl:", err)
		return 1
	}
	eps, err := Endpoints(dir)
	if err != nil || len(eps) != 1 {
		fmt.Println("endpoints:", eps, err)
		return 1
	}
	c, err := Dial(dir, eps[0])
	if err != nil {
		fmt.Println("dial:", err)
		return 1
	}
	defer c.Close()
	_, err = c.Call(Request{Op: OpHello})
	var e *Error
	switch {
	case errors.As(err, &e):
		fmt.Println(e.Code)
	case err != nil:
		fmt.Println("call:", err)
	default:
		fmt.Println("OK")
	}
	return 0
}

// nnpListen is a confined command posing as a server: with no_new_privs set, it listens
// in dir under a server's name of its own (its pid and start time), says "listening",
// takes one connection and says how many bytes came on it.
func nnpListen(dir string) int {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Println("prctl:", err)
		return 1
	}
	name, err := socketName(9, procid.Identify(os.Getpid()))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	l, remove, err := listenSocket(dir, name)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer remove()
	defer l.Close()
	fmt.Println("listening")
	if err := l.SetDeadline(time.Now().Add(waitLong)); err != nil {
		fmt.Println(err)
		return 1
	}
	c, err := l.Accept()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer c.Close()
	b, _ := io.ReadAll(c)
	fmt.Printf("received %d bytes\n", len(b))
	return 0
}

// A process with no_new_privs (every confined command has it) is refused.
func TestServer_refusesConfined(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := start(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "OPERATOR_TEST_NNP_DIAL="+f.dir)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != CodeRefused {
		t.Errorf("a no_new_privs process's hello = %q (%v), want %s", out, err, CodeRefused)
	}
}

// A process of another user is refused, even where the socket's mode would let it in.
func TestServer_refusesOtherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as another user")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := start(t)
	// The directory searchable and the socket writable by anyone: only the peer check
	// stands between another user and the sessions.
	if err := os.Chmod(filepath.Join(f.dir, f.srv.Name()), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.dir, 0o711); err != nil {
		t.Fatal(err)
	}
	dirfd, err := stateDirFD(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dirfd)
	reply := make(chan string, 1)
	go func() {
		// This thread alone takes another effective uid (raw setresuid is per thread),
		// connects, and is then left to end with the goroutine.
		runtime.LockOSThread()
		if _, _, errno := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), 65534, ^uintptr(0)); errno != 0 {
			reply <- "setresuid: " + errno.Error()
			return
		}
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			reply <- err.Error()
			return
		}
		defer unix.Close(fd)
		if err := unix.Connect(fd, &unix.SockaddrUnix{Name: viaFD(dirfd, f.srv.Name())}); err != nil {
			reply <- "connect: " + err.Error()
			return
		}
		buf := make([]byte, 4096)
		n, _ := unix.Read(fd, buf)
		reply <- string(buf[:max(n, 0)])
	}()
	got := <-reply
	if !strings.Contains(got, `"code":"REFUSED"`) || !strings.Contains(got, "uid 65534") {
		t.Errorf("another user's connection got %q, want a refusal naming its uid", got)
	}
}
