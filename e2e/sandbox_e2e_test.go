package e2e

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/workspace"
)

// escapeAttempt is one way a command might write outside what its sandbox allows.
type escapeAttempt struct {
	name string
	line string // a bash command line with the fixture's placeholders (sandboxFixture.expand)
	// done is a file in the workspace that the attempt's last process makes once it has
	// tried: the test waits for it (a daemon outlives the command that started it).
	done string
	// state: the attempt aims at the server's state directory. Its control under
	// --sandbox off wrecks the server it runs on, so it gets a server of its own.
	state bool
	// rootOnly is why an ordinary user cannot make the attempt at all (its control
	// would fail for want of permission, not of the sandbox), or "".
	rootOnly string
}

// escapeAttempts are the escape attempts, and a few more of the same kind; each
// must leave the fixture as it was (sandboxFixture.snapshot). Paths are absolute, so a
// typed command works wherever an earlier one left the shell.
var escapeAttempts = []escapeAttempt{
	{name: "plain write", line: "echo x > {T}"},
	{name: "append", line: "echo x >> {T}"},
	{name: "new file outside", line: "echo x > {O}/new"},
	{name: "new file in a directory outside", line: "echo x > {D}/new"},
	{name: "mkdir outside", line: "mkdir {O}/new"},
	{name: "symlink", line: "ln -s {T} {W}/l; echo x > {W}/l"},
	{name: "hard link", line: "ln {T} {W}/h; echo x >> {W}/h"},
	{name: "rename out", line: "mv {T} {W}/m"},
	{name: "rename in", line: "echo x > {W}/file; mv {W}/file {O}/new"},
	{name: "remove", line: "rm -f {T}"},
	{name: "rmdir", line: "rmdir {D}"},
	{name: "proc self root", line: "echo x > /proc/self/root{T}"},
	{name: "server root", line: "echo x > /proc/{SP}/root{T}"},
	{name: "unshare remount", line: "unshare -Urm sh -c 'mount -o remount,rw /; mount -o remount,bind,rw {O}; echo x > {T}'"},
	{name: "setsid child", line: "setsid -w sh -c 'echo x > {T}'"},
	{
		name: "daemonized grandchild",
		// The subshell's child leaves the command's session and process group, and its
		// parent is gone before it writes. The command polls for its mark (with a
		// deadline), so that the daemon has tried while the command still ran.
		line: "(setsid sh -c 'echo x > {T}; touch {W}/daemon-done' &); i=0; until [ -e {W}/daemon-done ] || [ $i -ge 300 ]; do sleep 0.1; i=$((i+1)); done",
		done: "daemon-done",
	},
	{name: "python open", line: `/usr/bin/python3 -c "open('{T}','w').write('x')"`},
	{name: "truncate", line: "truncate -s0 {T}"},
	{name: "chmod", line: "chmod 777 {T}"},
	{name: "chmod directory", line: "chmod 777 {D}"},
	{name: "touch -d", line: "touch -d 2001-01-01 {T}"},
	{name: "chown", line: "chown 1:1 {T}", rootOnly: "only root may give a file away"},
	{name: "state rm -rf", line: "rm -rf {S}", state: true},
	{name: "state mv", line: "mv {S} {W}/gone", state: true},
	{name: "state write database", line: "echo x > {DB}", state: true},
	{name: "state chmod", line: "chmod 777 {S}", state: true},
	{name: "state chmod database", line: "chmod 777 {DB}", state: true},
	{name: "state through the server's cwd", line: "echo x > /proc/{SP}/cwd/" + workspace.StateDirName + "/" + workspace.DBFileName, state: true},
	{name: "state through the server's fd", line: `for fd in /proc/{SP}/fd/*; do [ "$(readlink $fd)" = {DB} ] && echo x > $fd; done`, state: true},
	{name: "state unshare umount", line: "unshare -Urm sh -c 'umount -l {S}; echo x > {DB}'", state: true},
	{name: "home", line: "cd ~; echo x >> .bashrc; touch pwned"},
}

// The escape attempts, each as a task and as a command typed into a shell, as
// root and as an ordinary user, on a workspace-write server (the default): none changes
// the fixture outside the writable roots, the state directory, or the home directory, and
// the server keeps working. Then the control: under --sandbox off every attempt does
// change it, so each check above can fail.
func TestSandbox_Escape(t *testing.T) {
	for _, actor := range sandboxActors() {
		t.Run(actor.name, func(t *testing.T) {
			f := newSandboxFixture(t, actor)
			t.Run("confined", func(t *testing.T) {
				s := f.start(t, nil)
				shell, _ := openShell(t, s, nil)
				for _, a := range escapeAttempts {
					t.Run(a.name, func(t *testing.T) {
						if a.rootOnly != "" && actor.cred != nil {
							t.Skip(a.rootOnly)
						}
						f.attempt(t, s, "task", a, false, func(line string) attemptResult { return runTask(t, s, line, nil) })
						f.attempt(t, s, "typed", a, false, func(line string) attemptResult { return typeLine(t, s, shell, line) })
					})
				}
				t.Run("detached", func(t *testing.T) { f.detachedAttempts(t, s) })
			})
			t.Run("control", func(t *testing.T) {
				s := f.start(t, nil, "--sandbox", "off")
				shell, _ := openShell(t, s, nil)
				for _, a := range escapeAttempts {
					if a.state {
						continue // below, once this server is gone
					}
					t.Run(a.name, func(t *testing.T) {
						if a.rootOnly != "" && actor.cred != nil {
							t.Skip(a.rootOnly)
						}
						f.attempt(t, s, "task", a, true, func(line string) attemptResult { return runTask(t, s, line, nil) })
						f.attempt(t, s, "typed", a, true, func(line string) attemptResult { return typeLine(t, s, shell, line) })
					})
				}
			})
			t.Run("control state", func(t *testing.T) {
				for _, a := range escapeAttempts {
					if a.state {
						t.Run(a.name, func(t *testing.T) { f.stateControl(t, a) })
					}
				}
			})
		})
	}
}

// attempt runs a through run (as a task or a typed command) and checks the fixture:
// unchanged when confined, changed under --sandbox off (control). The fixture is reset
// after.
func (f *sandboxFixture) attempt(t *testing.T, s *server, how string, a escapeAttempt, control bool, run func(string) attemptResult) {
	t.Helper()
	defer f.reset(t)
	before := f.snapshot(t)
	line := f.expand(a.line)
	r := run(line)
	if a.done != "" {
		waitFor(t, a.name+" mark "+a.done, func() bool {
			_, err := os.Stat(filepath.Join(f.ws, a.done))
			return err == nil
		})
	}
	after := f.snapshot(t)
	diff := sandboxDiff(before, after)
	switch {
	case control && diff == "":
		t.Errorf("%s %q under --sandbox off changed nothing, so its confined check proves nothing (exit %d):\n%s", how, line, r.exitCode, r.output)
	case !control && diff != "":
		t.Errorf("SANDBOX ESCAPE: %s %q changed the fixture (exit %d, sandbox %v):\n%s\noutput:\n%s", how, line, r.exitCode, r.sandbox, diff, r.output)
	}
	if control {
		return
	}
	if strings.HasSuffix(how, "task") && (r.sandbox["mode"] != "workspace-write" || r.sandbox["network"] != "on") {
		t.Errorf("task %q: sandbox = %v, want workspace-write, network on", line, r.sandbox)
	}
	// The state directory is the server's still: the next call works.
	if res := s.toolCall("tasks_list", map[string]any{}); res["isError"] == true {
		t.Errorf("tasks_list after %s %q = %s", how, line, resultText(res))
	}
}

// detachedAttempts makes every attempt as a task of one detached graph, whose runner is a
// process of its own with a sandbox of its own, one task after the other: none may change
// the fixture.
func (f *sandboxFixture) detachedAttempts(t *testing.T, s *server) {
	t.Helper()
	defer f.reset(t)
	before := f.snapshot(t)
	var specs []any
	for _, a := range escapeAttempts {
		if a.rootOnly != "" && f.actor.cred != nil {
			continue
		}
		id := strings.Map(func(r rune) rune {
			if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
				return r
			}
			return '-'
		}, a.name)
		specs = append(specs, map[string]any{"id": id, "command": f.expand(a.line)})
	}
	run := s.toolCall("tasks_run", map[string]any{"detach": true, "maxParallel": 1, "tasks": specs})
	if run["isError"] == true {
		t.Fatalf("tasks_run = %s", resultText(run))
	}
	sc := structuredOf(t, run)
	if sc["detached"] != true {
		t.Errorf("tasks_run detach = %v, want a detached graph", sc["detached"])
	}
	st := s.waitGraph(sc["graphId"].(string))
	if diff := sandboxDiff(before, f.snapshot(t)); diff != "" {
		t.Errorf("SANDBOX ESCAPE: a task of the detached graph changed the fixture:\n%s", diff)
		for id, task := range tasksOf(st) {
			log, _ := task["log"].(map[string]any)
			t.Logf("%s: exit %v, sandbox %v:\n%v", id, task["exitCode"], task["sandbox"], log["text"])
		}
	}
	for id, task := range tasksOf(st) {
		if task["exitCode"] == nil {
			t.Errorf("detached task %s did not run: %v %v %v", id, task["status"], task["errorCode"], task["message"])
		}
		if sb, _ := task["sandbox"].(map[string]any); sb["mode"] != "workspace-write" || sb["network"] != "on" {
			t.Errorf("detached task %s: sandbox = %v, want workspace-write, network on", id, task["sandbox"])
		}
	}
}

// stateControl shows that a state-directory attempt would change the state directory
// without the sandbox: on a server of its own (it may wreck it), as a task and as a
// typed command, each marking the workspace when it has run, since the server may no
// longer be able to say.
func (f *sandboxFixture) stateControl(t *testing.T, a escapeAttempt) {
	t.Helper()
	for _, how := range []string{"task", "typed"} {
		t.Run(how, func(t *testing.T) {
			defer func() {
				if err := os.RemoveAll(f.state); err != nil {
					t.Fatal(err)
				}
				f.reset(t)
			}()
			s := f.start(t, nil, "--sandbox", "off")
			var shell string
			if how == "typed" {
				shell, _ = openShell(t, s, nil)
			}
			before := f.snapshot(t)
			line := f.expand(a.line) + "; touch " + filepath.Join(f.ws, "daemon-done")
			switch how {
			case "task":
				s.toolCall("tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "attempt", "command": line}}})
			default:
				s.toolCall("shell_io", map[string]any{"sessionId": shell, "run": line, "timeoutMs": 20000})
			}
			waitFor(t, "the mark of "+a.name, func() bool {
				_, err := os.Stat(filepath.Join(f.ws, "daemon-done"))
				return err == nil
			})
			if diff := sandboxDiff(before, f.snapshot(t)); diff == "" {
				t.Errorf("%s %q under --sandbox off changed nothing, so its confined check proves nothing", how, line)
			}
			s.cmd.Process.Kill()
			s.waitExit()
		})
	}
}

// procProbe tries to reach the server (its pid is argv[1]; with "parent" as argv[2], the
// command's parent is the server too) every way /proc and the kernel offer, for the
// process and each of its threads, and prints a line per try: "probe NAME: DENIED why"
// or "probe NAME: GOT what" (what it read, secrets included, so that a leak shows in the
// log): its environment, its memory (a write into it writes back the bytes just read: it
// proves the access and changes nothing), ptrace, its open files (the database opened
// for writing, never written) and its view of the file system.
const procProbe = `
import ctypes, os, sys
server = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)

class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

def probe(name, f):
    try:
        got = f()
    except OSError as e:
        print(f"probe {name}: DENIED {e.strerror}", flush=True)
        return
    # Short, but with any variable that looks secret in full.
    shown = repr(got)[:160]
    if isinstance(got, bytes):
        for i in range(len(got)):
            if got.startswith(b"TOKEN=", i):
                shown += " ... " + repr(got[max(0, i - 40):i + 60])
                break
    print(f"probe {name}: GOT {shown}", flush=True)

def read(path):
    with open(path, "rb") as f:
        return f.read()

def stack(proc):
    for line in read(proc + "/maps").decode().splitlines():
        if "[stack]" in line:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            return lo, hi
    raise OSError(0, "no stack in maps")

def mem(proc):
    lo, hi = stack(proc)
    fd = os.open(proc + "/mem", os.O_RDONLY)
    try:
        return os.pread(fd, hi - lo, lo)
    finally:
        os.close(fd)

def check(n):
    if n < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return n

def vm(tid, proc):
    lo, hi = stack(proc)
    buf = ctypes.create_string_buffer(hi - lo)
    local, remote = iovec(ctypes.cast(buf, ctypes.c_void_p), hi - lo), iovec(lo, hi - lo)
    check(libc.process_vm_readv(tid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0))
    # The top of the stack holds the environment strings, which nothing changes.
    top = ctypes.create_string_buffer(buf.raw[-8:], 8)
    local, remote = iovec(ctypes.cast(top, ctypes.c_void_p), 8), iovec(hi - 8, 8)
    check(libc.process_vm_writev(tid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0))
    return buf.raw

def seize(tid):
    check(libc.ptrace(0x4206, tid, 0, 0))  # PTRACE_SEIZE
    libc.ptrace(17, tid, 0, 0)  # PTRACE_DETACH
    return "attached"

def fds(proc):
    return {n: os.readlink(f"{proc}/fd/{n}") for n in os.listdir(proc + "/fd")}

def db_for_writing(proc):
    for n, target in fds(proc).items():
        if target.endswith("/harness.db"):
            os.close(os.open(f"{proc}/fd/{n}", os.O_WRONLY))
            return f"opened {target} for writing through fd {n}"
    raise OSError(0, "no database among the fds")

def all_of(name, proc, tid):
    probe(name + "-environ", lambda: read(proc + "/environ"))
    probe(name + "-mem", lambda: mem(proc))
    probe(name + "-vm-read-write", lambda: vm(tid, proc))
    probe(name + "-ptrace", lambda: seize(tid))
    probe(name + "-fd", lambda: fds(proc))
    probe(name + "-database", lambda: db_for_writing(proc))
    probe(name + "-root", lambda: os.listdir(proc + "/root/"))

if sys.argv[2:] == ["parent"]:
    all_of("parent", f"/proc/{os.getppid()}", os.getppid())
all_of("server", f"/proc/{server}", server)
tids = sorted(int(t) for t in os.listdir(f"/proc/{server}/task"))
print(f"threads: {len(tids)}", flush=True)
for tid in tids:
    all_of("thread", f"/proc/{server}/task/{tid}", tid)
`

// A confined command cannot read the server's environment or memory through /proc or
// the system calls that reach another process's memory, as root too: not through the
// process, not through any of its threads (one of which, the spawner, is confined like
// the command and forks it). The server holds a secret-looking variable, withheld from
// commands, whose value must appear nowhere in what they print.
//
// Also where the mount layer is missing (its read-only /proc is then missing too).
func TestSandbox_ProcIsolation(t *testing.T) {
	for _, variant := range []struct {
		name string
		deny []string
	}{{name: "root"}, {name: "user"}, {name: "root without mounts", deny: []string{"mounts"}}, {name: "user without mounts", deny: []string{"mounts"}}} {
		actor := sandboxActors()[0]
		if strings.HasPrefix(variant.name, "user") {
			actor = sandboxActors()[1]
		}
		t.Run(variant.name, func(t *testing.T) {
			f := newSandboxFixture(t, actor)
			if variant.deny != nil {
				f.withDeny(t, variant.deny...)
			}
			script := f.writeScript(t, "proc_probe.py", procProbe)
			const secret = "e2e-server-secret-5b1d0c"
			s := f.start(t, []string{"E2E_SERVER_TOKEN=" + secret})
			line := "/usr/bin/python3 " + script + " " + strconv.Itoa(s.cmd.Process.Pid)
			shell, _ := openShell(t, s, nil)
			for how, run := range map[string]func() attemptResult{
				// A task's parent is the server: cat /proc/$PPID/environ and the like.
				"task":  func() attemptResult { return runTask(t, s, line+" parent", nil) },
				"typed": func() attemptResult { return typeLine(t, s, shell, line) },
				// A detached task's parent is its runner, a process of its own.
				"detached task": func() attemptResult { return runTaskIn(t, s, map[string]any{"detach": true}, line+" parent", nil) },
			} {
				r := run()
				if strings.Contains(r.output, secret) || strings.Contains(r.text, secret) {
					t.Errorf("SANDBOX LEAK: %s %q read the server's secret:\n%s", how, line, r.output)
				}
				probes := 0
				for _, l := range strings.Split(strings.ReplaceAll(r.output, "\r", ""), "\n") {
					rest, ok := strings.CutPrefix(l, "probe ")
					if !ok {
						continue
					}
					probes++
					if name, result, _ := strings.Cut(rest, ": "); !strings.HasPrefix(result, "DENIED") {
						t.Errorf("SANDBOX LEAK: %s: %s reached the server: %s", how, name, result)
					}
				}
				if n := lineResults(r.output)["threads"]; probes < 7*3 || n == "" {
					t.Errorf("%s: %d probes over %s threads, want 7 for the server and for each thread: the probe did not run (exit %d):\n%s", how, probes, n, r.exitCode, r.output)
				}
			}
		})
	}
}

// netProbe tries each kind of socket against the test's listeners (argv: TCP port on
// 127.0.0.1, TCP port on ::1, UDP port on 127.0.0.1, Unix socket path) and prints
// "NAME: OK" or "NAME: DENIED why" for each; it exits 1 when any was denied.
const netProbe = `
import socket, sys
p4, p6, pu, upath = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
denied = False

def probe(name, f):
    global denied
    try:
        f()
        print(f"{name}: OK", flush=True)
    except OSError as e:
        denied = True
        print(f"{name}: DENIED {e.strerror}", flush=True)

def tcp(host, port, mark):
    with socket.create_connection((host, port), timeout=20) as s:
        s.sendall(mark + b"\n")

def bind(family, host):
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        s.listen(1)

def udp():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(b"probe-udp4\n", ("127.0.0.1", pu))

def unix():
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(upath)
        s.sendall(b"probe-unix\n")

probe("tcp4", lambda: tcp("127.0.0.1", p4, b"probe-tcp4"))
probe("tcp6", lambda: tcp("::1", p6, b"probe-tcp6"))
probe("bind4", lambda: bind(socket.AF_INET, "127.0.0.1"))
probe("bind6", lambda: bind(socket.AF_INET6, "::1"))
probe("udp4", udp)
probe("unix", unix)
sys.exit(1 if denied else 0)
`

// The network setting, through the built binary, as root and as an ordinary user, for a
// task and a typed command: with --network off (the server's, or a call's network: "off"
// on a server with the network on) no TCP connection to a loopback listener (IPv4 or
// IPv6, from Python or bash's /dev/tcp) reaches it, no TCP socket binds, no UDP datagram
// is sent, and a Unix socket works; with the network on, the same all work, and the
// listeners see them.
func TestSandbox_Network(t *testing.T) {
	for _, actor := range sandboxActors() {
		t.Run(actor.name, func(t *testing.T) {
			f := newSandboxFixture(t, actor)
			tcp4 := listenMarks(t, "tcp", "127.0.0.1:0")
			tcp6 := listenMarks(t, "tcp", "[::1]:0")
			udp4 := listenMarks(t, "udp", "127.0.0.1:0")
			sock := filepath.Join(f.ws, "e2e.sock")
			unix := listenMarks(t, "unix", sock)
			if err := os.Chmod(sock, 0o777); err != nil { // the ordinary user connects too
				t.Fatal(err)
			}
			script := f.writeScript(t, "net_probe.py", netProbe)
			line := fmt.Sprintf("(echo probe-bash4 > /dev/tcp/127.0.0.1/%d) && echo bash-tcp4: OK || echo bash-tcp4: DENIED; /usr/bin/python3 %s %d %d %d %s",
				tcp4.port(), script, tcp4.port(), tcp6.port(), udp4.port(), sock)

			check := func(t *testing.T, how string, r attemptResult, off bool) {
				t.Helper()
				got := lineResults(r.output)
				wantMarks := map[*markListener][]string{tcp4: {"probe-bash4", "probe-tcp4"}, tcp6: {"probe-tcp6"}, udp4: {"probe-udp4"}, unix: {"probe-unix"}}
				want := "OK"
				if off {
					want = "DENIED"
					wantMarks[tcp4], wantMarks[tcp6], wantMarks[udp4] = nil, nil, nil
				}
				for _, name := range []string{"bash-tcp4", "tcp4", "tcp6", "bind4", "bind6", "udp4"} {
					if !strings.HasPrefix(got[name], want) {
						t.Errorf("%s: %s = %q, want %s", how, name, got[name], want)
					}
				}
				if !strings.HasPrefix(got["unix"], "OK") {
					t.Errorf("%s: unix = %q, want OK: Unix sockets stay", how, got["unix"])
				}
				for l, want := range wantMarks {
					if got := l.drain(); !slices.Equal(got, want) {
						t.Errorf("%s: %s received %q, want %q", how, l.name, got, want)
					}
				}
				if hint := "sandbox: network access is off (network off)"; off && !strings.Contains(r.text, hint) {
					t.Errorf("%s: the failed command's result has no hint %q:\n%s", how, hint, r.text)
				}
				if t.Failed() {
					t.Logf("%s %q (exit %d):\n%s", how, line, r.exitCode, r.output)
				}
			}
			wantPolicy := func(t *testing.T, what string, sb any, network string) {
				t.Helper()
				m, _ := sb.(map[string]any)
				if m["mode"] != "workspace-write" || m["network"] != network {
					t.Errorf("%s: sandbox = %v, want workspace-write, network %s", what, sb, network)
				}
			}

			t.Run("server off", func(t *testing.T) {
				s := f.start(t, nil, "--network", "off")
				r := runTask(t, s, line, nil)
				check(t, "task", r, true)
				wantPolicy(t, "task", r.sandbox, "off")
				shell, open := openShell(t, s, nil)
				wantPolicy(t, "shell_open", structuredOf(t, open)["sandbox"], "off")
				check(t, "typed", typeLine(t, s, shell, line), true)
			})
			t.Run("call off", func(t *testing.T) {
				s := f.start(t, nil)
				r := runTask(t, s, line, map[string]any{"network": "off"})
				check(t, "task", r, true)
				wantPolicy(t, "task", r.sandbox, "off")
				shell, open := openShell(t, s, map[string]any{"network": "off"})
				wantPolicy(t, "shell_open", structuredOf(t, open)["sandbox"], "off")
				check(t, "typed", typeLine(t, s, shell, line), true)

				// The control: the same, with the network on.
				r = runTask(t, s, line, nil)
				check(t, "task, network on", r, false)
				wantPolicy(t, "task, network on", r.sandbox, "on")
				shell, open = openShell(t, s, nil)
				wantPolicy(t, "shell_open, network on", structuredOf(t, open)["sandbox"], "on")
				check(t, "typed, network on", typeLine(t, s, shell, line), false)
			})
		})
	}
}

// secretEnv are secret-looking variables of a server's environment, with their values.
var secretEnv = map[string]string{
	"API_KEY":               "e2e-api-key-8d1f",
	"GITHUB_TOKEN":          "e2e-github-token-2c7a",
	"DB_PASSWORD":           "e2e-db-password-93be",
	"AWS_SECRET_ACCESS_KEY": "e2e-aws-secret-4e06",
	"MY_CREDENTIALS":        "e2e-credentials-a51c",
	"SESSION_AUTH":          "e2e-session-auth-77d2",
}

// What of a server's environment a task and a typed command see, under each env policy:
// the values of secret-looking variables never, unless --env-allow names them (a glob
// too) or the call's env sets them; withheldEnv on tasks_run and shell_open names exactly
// what was withheld, sorted; minimal leaves ordinary variables out, inherit passes all.
func TestSandbox_Secrets(t *testing.T) {
	secretNames := sortedKeys(secretEnv)
	without := func(names []string, drop ...string) []string {
		return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(drop, n) })
	}
	for _, tc := range []struct {
		name     string
		args     []string
		callEnv  map[string]any
		passed   []string // the secret names whose server values the command sees
		plain    bool     // PLAIN=1 reaches the command
		withheld []string
	}{
		{name: "scrub", plain: true, withheld: secretNames},
		{name: "env-allow", args: []string{"--env-allow", "GITHUB_TOKEN", "--env-allow", "AWS_*"}, plain: true,
			passed: []string{"AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"}, withheld: without(secretNames, "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN")},
		{name: "call env", callEnv: map[string]any{"API_KEY": "call"}, plain: true, withheld: without(secretNames, "API_KEY")},
		{name: "minimal", args: []string{"--env-policy", "minimal"}, withheld: append([]string{"GORACE", "PLAIN"}, secretNames...)},
		{name: "inherit", args: []string{"--env-policy", "inherit"}, plain: true, passed: secretNames, withheld: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, home := t.TempDir(), t.TempDir()
			cmd := exec.Command(binPath, append([]string{"stdio", "--workspace", ws, "--log-level", "info"}, tc.args...)...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "SHELL=/bin/bash", "LANG=C.UTF-8", "GORACE=" + os.Getenv("GORACE"), "PLAIN=1"}
			for name, value := range secretEnv {
				cmd.Env = append(cmd.Env, name+"="+value)
			}
			slices.Sort(tc.withheld)
			s := startCmd(t, cmd)
			s.initialize()

			task := map[string]any{"id": "env", "command": "env"}
			if tc.callEnv != nil {
				task["env"] = tc.callEnv
			}
			run := s.toolCall("tasks_run", map[string]any{"tasks": []any{task}})
			if got := structuredOf(t, run)["withheldEnv"]; !slices.Equal(strs(got), tc.withheld) {
				t.Errorf("tasks_run withheldEnv = %v, want %v", got, tc.withheld)
			}
			st := structuredOf(t, s.toolCall("tasks_status", map[string]any{"graphId": structuredOf(t, run)["graphId"], "waitMs": 20000, "logTail": 65536}))
			log, _ := tasksOf(st)["env"]["log"].(map[string]any)
			taskEnv, _ := log["text"].(string)

			args := map[string]any{"timeoutMs": 20000}
			if tc.callEnv != nil {
				args["env"] = tc.callEnv
			}
			shell, open := openShell(t, s, args)
			if got := structuredOf(t, open)["withheldEnv"]; !slices.Equal(strs(got), tc.withheld) {
				t.Errorf("shell_open withheldEnv = %v, want %v", got, tc.withheld)
			}
			shellEnv := typeLine(t, s, shell, "env").output

			for how, env := range map[string]string{"task": taskEnv, "shell": shellEnv} {
				for _, name := range secretNames {
					want := slices.Contains(tc.passed, name)
					if got := strings.Contains(env, secretEnv[name]); got != want {
						t.Errorf("%s env has %s's value: %v, want %v", how, name, got, want)
					}
				}
				if got := strings.Contains(env, "PLAIN=1"); got != tc.plain {
					t.Errorf("%s env has PLAIN=1: %v, want %v", how, got, tc.plain)
				}
				if tc.callEnv != nil && !strings.Contains(env, "API_KEY=call") {
					t.Errorf("%s env has no API_KEY=call: the call's own env must win", how)
				}
				if t.Failed() {
					t.Logf("%s env:\n%s", how, env)
				}
			}
		})
	}
}

// strs is a JSON array of strings as a slice.
func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// A call may tighten the server's sandbox, never loosen it. On a workspace-write server a
// task or a shell asking for read-only cannot write the workspace (but still the temp
// directories) and its result says read-only; without the argument the same write
// succeeds. On a read-only server a call
// asking for workspace-write, and on a network-off server one asking for the network, is
// refused (INVALID_ARGUMENT) with nothing stored or started.
func TestSandbox_Tighten(t *testing.T) {
	f := newSandboxFixture(t, sandboxActors()[0])
	probe := filepath.Join(f.ws, "ro-probe")
	write := "echo x > " + probe
	temp := `t=$(mktemp) && echo x > "$t" && rm "$t"`
	gone := func(t *testing.T, how string) {
		t.Helper()
		if _, err := os.Stat(probe); err == nil {
			t.Errorf("%s: %s was written under read-only", how, probe)
		}
	}
	readOnly := map[string]any{"mode": "read-only", "network": "on"}

	t.Run("read-only call", func(t *testing.T) {
		s := f.start(t, nil)
		r := runTask(t, s, write, map[string]any{"sandbox": "read-only"})
		gone(t, "task")
		if r.exitCode == 0 || !maps.Equal(r.sandbox, readOnly) {
			t.Errorf("task = exit %d, sandbox %v; want a failure under %v", r.exitCode, r.sandbox, readOnly)
		}
		if r := runTask(t, s, temp, map[string]any{"sandbox": "read-only"}); r.exitCode != 0 {
			t.Errorf("task writing a temp file under read-only = exit %d, want 0:\n%s", r.exitCode, r.output)
		}

		shell, open := openShell(t, s, map[string]any{"sandbox": "read-only"})
		if got := structuredOf(t, open)["sandbox"]; !reflect.DeepEqual(got, any(readOnly)) {
			t.Errorf("shell_open sandbox = %v, want %v", got, readOnly)
		}
		list := structuredOf(t, s.toolCall("shell_list", map[string]any{}))["sessions"].([]any)
		if len(list) != 1 || !reflect.DeepEqual(list[0].(map[string]any)["sandbox"], any(readOnly)) {
			t.Errorf("shell_list = %v, want one session with sandbox %v", list, readOnly)
		}
		r = typeLine(t, s, shell, write)
		gone(t, "typed")
		if r.exitCode == 0 {
			t.Errorf("typed under read-only = exit 0, want a failure:\n%s", r.output)
		}
		if r := typeLine(t, s, shell, temp); r.exitCode != 0 {
			t.Errorf("typed temp file under read-only = exit %d, want 0:\n%s", r.exitCode, r.output)
		}

		// The control: the server's own workspace-write allows it.
		if r := runTask(t, s, write, nil); r.exitCode != 0 {
			t.Errorf("task without sandbox = exit %d, want 0 (workspace-write):\n%s", r.exitCode, r.output)
		}
		if _, err := os.Stat(probe); err != nil {
			t.Errorf("task without sandbox: %v", err)
		}
		os.Remove(probe)
	})

	for _, tc := range []struct {
		name, flag, value string
		call              map[string]any
	}{
		{name: "loosen sandbox", flag: "--sandbox", value: "read-only", call: map[string]any{"sandbox": "workspace-write"}},
		{name: "loosen network", flag: "--network", value: "off", call: map[string]any{"network": "on"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := f.start(t, nil, tc.flag, tc.value)
			ran := filepath.Join(f.ws, "ran")
			graphs := func() []any { return structuredOf(t, s.toolCall("tasks_list", map[string]any{}))["graphs"].([]any) }
			before := graphs() // the workspace keeps the graphs of the servers before
			task := map[string]any{"id": "loosen", "command": "touch " + ran}
			maps.Copy(task, tc.call)
			res := s.toolCall("tasks_run", map[string]any{"tasks": []any{task}})
			if text := resultText(res); res["isError"] != true || !strings.HasPrefix(text, "INVALID_ARGUMENT: ") {
				t.Errorf("tasks_run %v on a %s %s server = %q, want INVALID_ARGUMENT", tc.call, tc.flag, tc.value, text)
			}
			args := map[string]any{"command": "touch " + ran}
			maps.Copy(args, tc.call)
			res = s.toolCall("shell_open", args)
			if text := resultText(res); res["isError"] != true || !strings.HasPrefix(text, "INVALID_ARGUMENT: ") {
				t.Errorf("shell_open %v on a %s %s server = %q, want INVALID_ARGUMENT", tc.call, tc.flag, tc.value, text)
			}
			if after := graphs(); len(after) != len(before) {
				t.Errorf("tasks_list after the refusals = %d graphs, want the %d before: none stored", len(after), len(before))
			}
			if sessions := structuredOf(t, s.toolCall("shell_list", map[string]any{}))["sessions"].([]any); len(sessions) != 0 {
				t.Errorf("shell_list after the refusals = %v, want none started", sessions)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Errorf("a refused command ran: %s exists", ran)
			}
		})
	}
}

// A command that fails because the sandbox denied a write gets one line in its result
// naming the path and what would allow it, as a task (bash names itself /usr/bin/bash in
// its messages there) and as a typed command: a write outside the workspace names
// --writable with the directory, one in the workspace under a call's read-only names
// the call's argument and the server's flag.
func TestSandbox_DenialHint(t *testing.T) {
	f := newSandboxFixture(t, sandboxActors()[0])
	s := f.start(t, nil)
	probe := filepath.Join(f.ws, "ro-probe")
	for _, tc := range []struct {
		name, path string
		tighten    map[string]any
		want       string
	}{
		{name: "outside", path: f.target,
			want: "sandbox: writing " + f.target + " was denied (workspace-write); allow it with --writable " + f.outside + ", or run the server with --sandbox off"},
		{name: "read-only call", path: probe, tighten: map[string]any{"sandbox": "read-only"},
			want: `sandbox: writing ` + probe + ` was denied (read-only); allow it with sandbox: "workspace-write" (call) or --sandbox workspace-write (server)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shell, _ := openShell(t, s, tc.tighten)
			line := "echo x > " + tc.path
			for how, r := range map[string]attemptResult{"task": runTask(t, s, line, tc.tighten), "typed": typeLine(t, s, shell, line)} {
				hint := ""
				for _, l := range strings.Split(r.text, "\n") {
					if strings.HasPrefix(l, "sandbox: writing ") {
						hint = l
					}
				}
				if r.exitCode == 0 || !hintMatches(hint, tc.want) {
					t.Errorf("%s %q = exit %d, hint %q; want a failure with the hint %q (long paths may be shortened with ...):\n%s", how, line, r.exitCode, hint, tc.want, r.text)
				}
			}
		})
	}
}

// hintMatches reports whether a hint line is want, where each path of want may have been
// shortened by putting "..." in its middle (sandbox.Hint keeps a line under 200 bytes).
func hintMatches(got, want string) bool {
	if got == want {
		return true
	}
	// Compare word by word: a shortened word keeps a head and a tail of the original.
	gw, ww := strings.Fields(got), strings.Fields(want)
	if len(gw) != len(ww) {
		return false
	}
	for i := range gw {
		head, tail, cut := strings.Cut(gw[i], "...")
		if gw[i] != ww[i] && (!cut || !strings.HasPrefix(ww[i], head) || !strings.HasSuffix(ww[i], tail) || len(gw[i]) >= len(ww[i])) {
			return false
		}
	}
	return true
}

// withDeny makes f's servers run where the kernel lacks what, through the deny wrapper
// (sandbox_deny_test.go), or skips t saying why it cannot.
func (f *sandboxFixture) withDeny(t *testing.T, what ...string) {
	t.Helper()
	bin := buildDeny(t, filepath.Dir(f.bin))
	f.deny = append([]string{bin}, what...)
	t.Cleanup(func() { f.deny = nil })
}

// refuses runs `stdio` with args on f and wants it to refuse to start: exit status 1, and
// stderr saying why (each of says).
func (f *sandboxFixture) refuses(t *testing.T, args []string, says ...string) {
	t.Helper()
	cmd := f.command(nil, f.stdioArgs(args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr // stdin is /dev/null: a server that did start would end at once, with 0
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if code != 1 {
		t.Errorf("stdio %v where it cannot be enforced = exit %d (%v), want 1; stderr:\n%s", args, code, err, stderr.String())
	}
	for _, s := range says {
		if !strings.Contains(stderr.String(), s) {
			t.Errorf("stdio %v: stderr does not say %q:\n%s", args, s, stderr.String())
		}
	}
}

// A kernel that cannot enforce what is asked for (Landlock, seccomp filters unavailable:
// the deny wrapper makes their system calls fail): an explicit --sandbox refuses to start
// (exit 1, saying why), and so does --network off without seccomp; the default mode
// degrades to off, and the instructions, every tool result and every sandbox field say
// so; a call that asks for confinement there is refused rather than run unconfined.
// --network off holds with seccomp alone, without Landlock, with the default mode given
// up (and said so) or with --sandbox off.
func TestSandbox_Unenforceable(t *testing.T) {
	f := newSandboxFixture(t, sandboxActors()[0])
	t.Run("no landlock", func(t *testing.T) {
		f.withDeny(t, "landlock")
		f.refuses(t, []string{"--sandbox", "workspace-write"}, "cannot enforce --sandbox workspace-write", "Landlock")
		f.refuses(t, []string{"--sandbox", "read-only"}, "cannot enforce --sandbox read-only", "Landlock")

		t.Run("default", func(t *testing.T) {
			s := f.launch(t, nil)
			init := s.initialize()
			instructions, _ := init["result"].(map[string]any)["instructions"].(string)
			const off = "the sandbox is off: this system cannot enforce the default workspace-write (the kernel has no Landlock"
			if !strings.Contains(instructions, "Sandbox: "+off) {
				t.Errorf("instructions do not say %q:\n%s", off, instructions)
			}
			unconfined := map[string]any{"mode": "off", "network": "on"}
			says := func(tool string, res map[string]any) map[string]any {
				t.Helper()
				if res["isError"] == true {
					t.Fatalf("%s = %s", tool, resultText(res))
				}
				if text := resultText(res); !strings.Contains(text, "Note: "+off) {
					t.Errorf("%s: the text does not say %q:\n%s", tool, off, text)
				}
				return structuredOf(t, res)
			}
			run := says("tasks_run", s.toolCall("tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "t", "command": "echo ran"}}}))
			g := run["graphId"]
			st := says("tasks_status", s.toolCall("tasks_status", map[string]any{"graphId": g, "waitMs": 20000}))
			if got := tasksOf(st)["t"]["sandbox"]; !reflect.DeepEqual(got, any(unconfined)) {
				t.Errorf("tasks_status task sandbox = %v, want %v", got, unconfined)
			}
			says("tasks_list", s.toolCall("tasks_list", map[string]any{}))
			says("tasks_graph", s.toolCall("tasks_graph", map[string]any{"graphId": g}))
			says("tasks_cancel", s.toolCall("tasks_cancel", map[string]any{"graphId": g}))
			open := says("shell_open", s.toolCall("shell_open", map[string]any{"command": "bash --norc --noprofile", "timeoutMs": 20000}))
			if got := open["sandbox"]; !reflect.DeepEqual(got, any(unconfined)) {
				t.Errorf("shell_open sandbox = %v, want %v", got, unconfined)
			}
			id := open["sessionId"]
			says("shell_io", s.toolCall("shell_io", map[string]any{"sessionId": id, "input": "echo hi\n", "timeoutMs": 20000}))
			list := says("shell_list", s.toolCall("shell_list", map[string]any{}))
			for _, e := range list["sessions"].([]any) {
				if got := e.(map[string]any)["sandbox"]; !reflect.DeepEqual(got, any(unconfined)) {
					t.Errorf("shell_list sandbox = %v, want %v", got, unconfined)
				}
			}
			says("shell_close", s.toolCall("shell_close", map[string]any{"sessionId": id}))

			// Asking for confinement where there is none is refused, never run unconfined.
			ran := filepath.Join(f.ws, "ran")
			res := s.toolCall("tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "t", "command": "touch " + ran, "sandbox": "read-only"}}})
			if res["isError"] != true {
				t.Errorf("tasks_run sandbox read-only without Landlock = %s, want refused", resultText(res))
			}
			res = s.toolCall("shell_open", map[string]any{"command": "touch " + ran, "sandbox": "read-only"})
			if res["isError"] != true {
				t.Errorf("shell_open sandbox read-only without Landlock = %s, want refused", resultText(res))
			}
			if _, err := os.Stat(ran); err == nil {
				t.Errorf("a command that asked for read-only ran unconfined")
			}
		})

		for _, args := range [][]string{{"--sandbox", "off", "--network", "off"}, {"--network", "off"}} {
			t.Run("network off by seccomp alone "+strings.Join(args, " "), func(t *testing.T) {
				tcp4 := listenMarks(t, "tcp", "127.0.0.1:0")
				s := f.launch(t, nil, args...)
				init := s.initialize()
				if len(args) == 2 { // the default mode, given up
					instructions, _ := init["result"].(map[string]any)["instructions"].(string)
					const want = "the file system sandbox is off: this system cannot enforce the default workspace-write"
					if !strings.Contains(instructions, want) {
						t.Errorf("instructions do not say %q:\n%s", want, instructions)
					}
				}
				line := fmt.Sprintf("/usr/bin/python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", %d), timeout=20).sendall(b\"probe\\n\")'", tcp4.port())
				r := runTask(t, s, line, nil)
				if r.exitCode == 0 || !reflect.DeepEqual(r.sandbox, map[string]any{"mode": "off", "network": "off"}) {
					t.Errorf("connect under %v without Landlock = exit %d, sandbox %v; want a failure under off, off:\n%s", args, r.exitCode, r.sandbox, r.output)
				}
				if got := tcp4.drain(); len(got) != 0 {
					t.Errorf("the listener received %q, want nothing", got)
				}
			})
		}
	})
	t.Run("no seccomp", func(t *testing.T) {
		f.withDeny(t, "landlock", "seccomp")
		f.refuses(t, []string{"--sandbox", "off", "--network", "off"}, "cannot enforce --sandbox off --network off", "seccomp")
	})
}

// without names the attempts the sandbox cannot refuse without its mount layer (the
// package doc of internal/sandbox and the README say so): chmod, chown and file times
// outside the writable roots, and the state directory inside the workspace.
var withoutMounts = []string{"chmod", "chmod directory", "touch -d", "chown",
	"state rm -rf", "state mv", "state write database", "state chmod", "state chmod database"}

// Where the mount layer cannot be made (mount namespaces refused, as in a container
// without mount rights, or user namespaces disabled for an ordinary user: the deny
// wrapper refuses unshare and the mount system calls), the server still starts, with
// Landlock and seccomp, and every escape attempt but those the documentation leaves to
// the mount layer (withoutMounts, which must then succeed, as documented) fails.
func TestSandbox_EscapeWithoutMounts(t *testing.T) {
	for _, actor := range sandboxActors() {
		t.Run(actor.name, func(t *testing.T) {
			f := newSandboxFixture(t, actor)
			f.withDeny(t, "mounts")
			s := f.start(t, nil)
			shell, _ := openShell(t, s, nil)
			t.Run("warning", func(t *testing.T) {
				// The README: "the server logs a warning and goes on with Landlock and
				// seccomp", the state directory then being writable by commands.
				if !strings.Contains(s.stderr.String(), "commands get no read-only view of the file system") {
					t.Errorf("server stderr does not warn that the mount layer is missing:\n%s", s.stderr)
				}
			})
			for _, a := range escapeAttempts {
				if a.state {
					continue // the state directory is writable then: the documented gap
				}
				t.Run(a.name, func(t *testing.T) {
					if a.rootOnly != "" && actor.cred != nil {
						t.Skip(a.rootOnly)
					}
					documented := slices.Contains(withoutMounts, a.name)
					f.attempt(t, s, "task", a, documented, func(line string) attemptResult { return runTask(t, s, line, nil) })
					f.attempt(t, s, "typed", a, documented, func(line string) attemptResult { return typeLine(t, s, shell, line) })
				})
			}
		})
	}
}
