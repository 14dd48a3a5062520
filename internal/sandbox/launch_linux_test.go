package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// These tests confine real commands with the real kernel: Landlock, seccomp and, as root,
// the mount layer (an ordinary user's server gets that from the user namespace it enters
// at start, which the end-to-end tests drive through the built binary).

// fixture is a workspace with a state directory, and a target file outside every
// writable root that a confined command must leave alone.
type fixture struct {
	ws, state, db, target string
	stat                  os.FileInfo
	content               []byte
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base := outsideTemp(t)
	f := &fixture{ws: filepath.Join(base, "ws"), target: filepath.Join(base, "outside", "target")}
	f.state = filepath.Join(f.ws, ".mcp-harness")
	f.db = filepath.Join(f.state, "db")
	f.content = []byte("untouched\n")
	for _, d := range []string{f.state, filepath.Dir(f.target)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, file := range []string{f.db, f.target} {
		if err := os.WriteFile(file, f.content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(f.target, old, old); err != nil {
		t.Fatal(err)
	}
	var err error
	if f.stat, err = os.Stat(f.target); err != nil {
		t.Fatal(err)
	}
	return f
}

// untouched fails the test if the target or the state directory changed.
func (f *fixture) untouched(t *testing.T, what string) {
	t.Helper()
	st, err := os.Stat(f.target)
	if err != nil {
		t.Fatalf("%s: the target is gone: %v", what, err)
	}
	b, _ := os.ReadFile(f.target)
	if !bytes.Equal(b, f.content) || st.Mode() != f.stat.Mode() || !st.ModTime().Equal(f.stat.ModTime()) {
		t.Errorf("%s: the target changed: %q %v %v, want %q %v %v", what, b, st.Mode(), st.ModTime(), f.content, f.stat.Mode(), f.stat.ModTime())
	}
	if entries, _ := os.ReadDir(filepath.Dir(f.target)); len(entries) != 1 {
		t.Errorf("%s: the outside directory holds %d entries, want only the target", what, len(entries))
	}
	if b, err := os.ReadFile(f.db); err != nil || !bytes.Equal(b, f.content) {
		t.Errorf("%s: the state directory's file = %q, %v; want it untouched", what, b, err)
	}
}

// run starts script under p with l in the workspace and returns its output and error.
func (f *fixture) run(t *testing.T, l *Launcher, p Policy, script string) (string, error) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	dir, err := os.Open(f.ws)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	if err := l.Start(p, cmd, &Where{Path: f.ws, Exec: f.ws, File: dir}); err != nil {
		t.Fatalf("Start(%q) = %v", script, err)
	}
	err = cmd.Wait()
	b, _ := os.ReadFile(out.Name())
	return string(b), err
}

func newLauncher(t *testing.T, cfg Config) *Launcher {
	t.Helper()
	l, err := New(cfg, nil)
	if err != nil {
		t.Fatalf("New(%+v) = %v", cfg, err)
	}
	if l.Degraded() != "" {
		t.Skipf("this system cannot confine commands: %s", l.Degraded())
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// escapeAttempts are the ways out a confined command tries, each to change the fixture's
// target or its state directory.
func escapeAttempts(T string) []struct {
	name, script string
	mounts       bool // only the mount layer refuses it (Landlock does not cover it)
} {
	return []struct {
		name, script string
		mounts       bool // only the mount layer refuses it (Landlock does not cover it)
	}{
		{"write", "echo x > " + T, false},
		{"append", "echo x >> " + T, false},
		{"symlink", "ln -s " + T + " link && echo x > link", false},
		{"hardLink", "ln " + T + " hard && echo x >> hard", false},
		{"renameOut", "mv " + T + " moved", false},
		{"renameIn", "touch new && mv new " + filepath.Dir(T) + "/new", false},
		{"procSelfRoot", "echo x > /proc/self/root" + T, false},
		{"setsid", "setsid -w sh -c 'echo x > " + T + "'", false},
		{"python", "python3 -c \"open('" + T + "', 'w').write('x')\"", false},
		{"truncate", "truncate -s 0 " + T, false},
		{"chmod", "chmod 777 " + T, true},
		{"touch", "touch -d 2001-01-01 " + T, true},
		{"stateRemove", "rm -rf .mcp-harness", true},
		{"stateRename", "mv .mcp-harness gone", true},
		{"stateWrite", "echo x > .mcp-harness/db", true},
	}
}

func TestLauncher_escapes(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := newFixture(t)
	l := newLauncher(t, Config{Mode: WorkspaceWrite, Network: NetworkOn, Workspace: f.ws, Protected: []string{f.state}})
	mounts := l.Support().Mounts
	T := f.target
	for _, tc := range escapeAttempts(T) {
		t.Run(tc.name, func(t *testing.T) {
			if tc.mounts && !mounts {
				t.Skipf("needs the mount layer: %s", l.Support().MountsWhy)
			}
			out, err := f.run(t, l, l.Policy(), tc.script)
			if err == nil {
				t.Errorf("%q succeeded under %s:\n%s", tc.script, l.Policy(), out)
			}
			f.untouched(t, tc.name)
		})
	}
	// The same write unconfined succeeds: the refusals above are the sandbox's.
	if out, err := f.run(t, l, Unconfined, "echo x > "+T); err != nil {
		t.Fatalf("the write unconfined failed: %v %s", err, out)
	}
	if b, _ := os.ReadFile(T); string(b) != "x\n" {
		t.Errorf("the target after an unconfined write = %q", b)
	}
}

// Where the mount layer cannot be had (an ordinary user without user namespaces),
// Landlock alone still refuses every write outside the roots; what only the mount layer
// covers (chmod, file times, the state directory in the workspace) is the README's list
// of what then does not hold.
func TestLauncher_landlockAlone(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := newFixture(t)
	cfg := Config{Mode: WorkspaceWrite, Network: NetworkOn, Workspace: f.ws, Protected: []string{f.state}}
	l := &Launcher{cfg: cfg, policy: cfg.Policy(), support: probe(), log: slog.New(slog.DiscardHandler)}
	if l.support.Landlock == 0 {
		t.Skip("no Landlock on this kernel")
	}
	l.support.Mounts = false
	t.Cleanup(func() { l.Close() })
	for _, tc := range escapeAttempts(f.target) {
		if tc.mounts {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			if out, err := f.run(t, l, l.Policy(), tc.script); err == nil {
				t.Errorf("%q succeeded under Landlock alone:\n%s", tc.script, out)
			}
			f.untouched(t, tc.name)
		})
	}
}

// Landlock's own TCP rules (ABI 4 and later) refuse bind and connect with network off
// even where the seccomp filter would not come first: checked on a thread confined by
// the ruleset alone.
func TestRuleset_tcpWithoutSeccomp(t *testing.T) {
	l := &Launcher{support: probe()}
	if l.support.Landlock < 4 {
		t.Skipf("Landlock ABI %d has no TCP rules", l.support.Landlock)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	rules, err := l.ruleset(Policy{Mode: Off, Network: NetworkOff})
	if err != nil {
		t.Fatal(err)
	}
	defer rules.close()
	errc := make(chan error, 1)
	go func() {
		// Locked and never unlocked: the confined thread ends with this goroutine.
		runtime.LockOSThread()
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			errc <- err
			return
		}
		if err := rules.restrictThread(); err != nil {
			errc <- err
			return
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			errc <- fmt.Errorf("socket: %w", err)
			return
		}
		defer unix.Close(fd)
		addr := ln.Addr().(*net.TCPAddr)
		errc <- unix.Connect(fd, &unix.SockaddrInet4{Port: addr.Port, Addr: [4]byte{127, 0, 0, 1}})
	}()
	if err := <-errc; !errors.Is(err, unix.EACCES) {
		t.Errorf("connect under the network-off ruleset = %v, want EACCES", err)
	}
}

// What a command may write: its workspace (not in read-only), the temp directories, the
// null device, and its own output reopened.
func TestLauncher_allows(t *testing.T) {
	f := newFixture(t)
	l := newLauncher(t, Config{Mode: WorkspaceWrite, Network: NetworkOn, Workspace: f.ws, Protected: []string{f.state}})
	tmp := t.TempDir()
	script := "echo a > file && mkdir -p d/e && mv file d/e/ && ln -s d l && echo b > " + tmp + "/t && echo c > /dev/null && echo d >> /dev/stdout"
	if out, err := f.run(t, l, l.Policy(), script); err != nil || out != "d\n" {
		t.Fatalf("%q = %q, %v", script, out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "d/e/file")); string(b) != "a\n" {
		t.Errorf("d/e/file = %q", b)
	}
	ro := Policy{Mode: ReadOnly, Network: NetworkOn}
	if out, err := f.run(t, l, ro, "echo x > ro"); err == nil {
		t.Errorf("a write to the workspace under read-only succeeded: %s", out)
	}
	if out, err := f.run(t, l, ro, "echo y > "+tmp+"/ro2"); err != nil {
		t.Errorf("a write to a temp directory under read-only failed: %v %s", err, out)
	}
}

// A confined command cannot read the server's environment or memory through /proc, as
// root either (its capabilities are dropped, and Landlock scopes /proc access).
func TestLauncher_procOfServer(t *testing.T) {
	f := newFixture(t)
	l := newLauncher(t, Config{Mode: WorkspaceWrite, Network: NetworkOn, Workspace: f.ws})
	self := strconv.Itoa(os.Getpid())
	// Every thread too: the spawner thread shares the command's Landlock domain (and, as
	// root, its capabilities), so only the server not being dumpable keeps it out there.
	// (The secret set above is not in /proc's environ, which shows the environment this
	// process started with: what a read finds matters less than that it can read at all.)
	for _, file := range []string{"environ", "mem", "root/etc/hostname", "fd/0", "task/*/environ", "task/*/mem", "task/*/root/etc/hostname"} {
		script := "for f in /proc/" + self + "/" + file + "; do head -c 1 $f >/dev/null 2>&1 && echo READ $f; done; true"
		if out, _ := f.run(t, l, l.Policy(), script); strings.Contains(out, "READ") {
			t.Errorf("a confined command read the server's /proc/<pid>/%s:\n%s", file, out)
		}
	}
	if out, _ := f.run(t, l, l.Policy(), "head -c 1 /proc/"+self+"/cmdline >/dev/null && echo READ"); out != "READ\n" {
		t.Errorf("the server's cmdline, which anyone may read, was not read (%q): the check above proves nothing", out)
	}
	if os.Geteuid() == 0 {
		var keep uint64
		for _, c := range keptCapabilities {
			keep |= 1 << c
		}
		out, _ := f.run(t, l, l.Policy(), "grep -E '^Cap(Eff|Bnd)' /proc/self/status")
		want := fmt.Sprintf("CapEff:\t%016x\nCapBnd:\t%016x\n", keep, keep)
		if out != want {
			t.Errorf("a root command's capabilities:\n%s\nwant only the kept ones:\n%s", out, want)
		}
	}
}

func TestLauncher_networkOff(t *testing.T) {
	f := newFixture(t)
	l := newLauncher(t, Config{Mode: WorkspaceWrite, Network: NetworkOn, Workspace: f.ws})
	off := Policy{Mode: WorkspaceWrite, Network: NetworkOff}
	v4, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer v4.Close()
	port := strconv.Itoa(v4.Addr().(*net.TCPAddr).Port)
	py := func(code string) string { return "python3 -c '" + code + "'" }
	for _, tc := range []struct{ name, script string }{
		{"tcp4", py("import socket; socket.create_connection((\"127.0.0.1\", " + port + "))")},
		{"tcp6", py("import socket; socket.socket(socket.AF_INET6)")},
		{"bind", py("import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen()")},
		{"udp", py("import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b\"x\", (\"127.0.0.1\", " + port + "))")},
		{"raw", py("import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)")},
		{"devTCP", "exec 3<>/dev/tcp/127.0.0.1/" + port},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if out, err := f.run(t, l, off, tc.script); err == nil {
				t.Errorf("%q succeeded with the network off:\n%s", tc.script, out)
			}
		})
	}
	t.Run("unix", func(t *testing.T) {
		sock := filepath.Join(f.ws, "s.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		if out, err := f.run(t, l, off, py("import socket; s = socket.socket(socket.AF_UNIX); s.connect(\""+sock+"\")")); err != nil {
			t.Errorf("a Unix socket failed with the network off: %v %s", err, out)
		}
	})
	t.Run("on", func(t *testing.T) {
		if out, err := f.run(t, l, l.Policy(), py("import socket; socket.create_connection((\"127.0.0.1\", "+port+"))")); err != nil {
			t.Errorf("a TCP connect failed with the network on: %v %s", err, out)
		}
	})
}

// The 32-bit ABI cannot make a socket either: the native filter of go-seccomp-bpf lets
// every call of another ABI through, so a program using int 0x80 would otherwise reach the
// network (loadCompatFilter).
func TestLauncher_compatABI(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler to build the 32-bit call")
	}
	src := filepath.Join(t.TempDir(), "sock32.c")
	bin := strings.TrimSuffix(src, ".c")
	// socket(AF_INET, SOCK_STREAM, 0) through the i386 ABI: call 359 by int 0x80.
	code := `#include <stdio.h>
int main(void) {
	long ret;
	__asm__ volatile ("int $0x80" : "=a"(ret) : "a"(359), "b"(2), "c"(1), "d"(0) : "memory");
	printf("%ld\n", ret);
	return ret < 0;
}
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cc", "-o", bin, src).CombinedOutput(); err != nil {
		t.Skipf("cannot build the 32-bit call here (%v): %s", err, out)
	}
	if out, err := exec.Command(bin).CombinedOutput(); err != nil {
		t.Skipf("this kernel runs no 32-bit calls (IA32 emulation off?): %s", out)
	}
	f := newFixture(t)
	l := newLauncher(t, Config{Mode: WorkspaceWrite, Network: NetworkOff, Workspace: f.ws})
	out, err := f.run(t, l, l.Policy(), bin)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || strings.TrimSpace(out) != "-13" { // -EACCES
		t.Errorf("a 32-bit socket with the network off = %q, %v; want -13 (EACCES)", out, err)
	}
}

// A working directory swapped for another after it was checked is refused, in the view of
// the file system the command gets.
func TestLauncher_dirChanged(t *testing.T) {
	f := newFixture(t)
	l := newLauncher(t, Config{Mode: WorkspaceWrite, Network: NetworkOn, Workspace: f.ws})
	sub := filepath.Join(f.ws, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(sub)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := os.Rename(sub, sub+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	err = l.Start(l.Policy(), exec.Command("true"), &Where{Path: sub, Exec: sub, File: held})
	if l.Support().Mounts && !errors.Is(err, ErrDirChanged) {
		t.Errorf("Start in a swapped directory = %v, want ErrDirChanged", err)
	}
}

// A policy the system cannot enforce is refused when asked for explicitly, and degraded
// (said so) when it is only the default; a confined call is never run unconfined.
func TestNew_cannotEnforce(t *testing.T) {
	l := &Launcher{support: Support{}, policy: Policy{Mode: WorkspaceWrite, Network: NetworkOn}}
	if why := l.cannotEnforce(l.policy); !strings.Contains(why, "Landlock") {
		t.Errorf("cannotEnforce without Landlock = %q, want it to name Landlock", why)
	}
	if why := l.cannotEnforce(Policy{Mode: Off, Network: NetworkOff}); !strings.Contains(why, "seccomp") {
		t.Errorf("cannotEnforce network off without seccomp = %q", why)
	}
	var nilLauncher *Launcher
	if _, err := nilLauncher.Narrow("read-only", ""); !errors.Is(err, ErrUnavailable) {
		t.Errorf("a nil launcher's Narrow(read-only) = %v, want ErrUnavailable", err)
	}
	if err := nilLauncher.Start(Policy{Mode: ReadOnly, Network: NetworkOn}, exec.Command("true"), nil); !errors.Is(err, ErrUnavailable) {
		t.Errorf("a nil launcher's Start(read-only) = %v, want ErrUnavailable", err)
	}
}

// Starts in parallel take more threads of the policy (up to maxThreads), each confined
// alike: every command is refused the write outside, and closing ends every thread.
func TestLauncher_parallelStarts(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := newFixture(t)
	l := newLauncher(t, Config{Mode: WorkspaceWrite, Network: NetworkOn, Workspace: f.ws, Protected: []string{f.state}})
	const n = 16
	errs := make(chan error, n)
	for range n {
		go func() {
			cmd := exec.Command("/bin/sh", "-c", "echo x > "+f.target)
			if err := l.Start(l.Policy(), cmd, nil); err != nil {
				errs <- err
				return
			}
			errs <- cmd.Wait()
		}()
	}
	for range n {
		if err := <-errs; err == nil {
			t.Errorf("a command started in parallel wrote outside its roots")
		}
	}
	f.untouched(t, "parallel starts")
	l.mu.Lock()
	sp := l.plat.spawners[l.Policy()]
	l.mu.Unlock()
	sp.mu.Lock()
	threads := sp.threads
	sp.mu.Unlock()
	if threads < 1 || threads > maxThreads {
		t.Errorf("the policy has %d threads, want 1..%d", threads, maxThreads)
	}
	t.Logf("%d starts in parallel took %d threads", n, threads)
}
