package e2e

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-harness/mcp-harness/internal/workspace"
)

// The sandbox's end-to-end tests attack files that lie outside every writable root. The
// temp directories (/tmp, /var/tmp, /dev/shm, $TMPDIR) and the user's caches are
// writable by design, so t.TempDir() cannot hold them: a sandboxFixture lives under
// /var/lib instead, which only root can create in, so these tests need root. For the
// ordinary user the whole tree is handed to that user, so that plain file permissions
// would allow every write: the sandbox, not the uid, is what must refuse it.

// sandboxActor is who runs the server.
type sandboxActor struct {
	name string
	cred *syscall.Credential // nil: the test's own user (root)
}

// ordinaryUID is the ordinary user the servers run as: nobody, which every system has.
const ordinaryUID = 65534

// sandboxActors are root and an ordinary user (nobody). Both need the test to run as
// root (newSandboxFixture skips otherwise, saying why): only root can make the fixture
// and start a server as another user.
func sandboxActors() []sandboxActor {
	return []sandboxActor{
		{name: "root"},
		{name: "user", cred: &syscall.Credential{Uid: ordinaryUID, Gid: ordinaryUID, NoSetGroups: true}},
	}
}

// needRoot skips t, saying why, when the test does not run as root.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the fixtures live under /var/lib, outside every directory the sandbox leaves writable (the temp directories are writable by design), and the ordinary-user variant starts servers as uid 65534")
	}
}

// The fixture's contents, known so that any change shows.
const (
	targetText = "the target: no command may change this\n"
	bashrcText = "# mcp-harness e2e: no command may change this\nE2E_BASHRC=read\n"
)

// targetTime is the target's fixed modification time.
var targetTime = time.Date(2020, 2, 2, 2, 2, 2, 0, time.UTC)

// sandboxFixture is a tree outside every writable root:
//
//	base/bin/mcp-harness  the binary, where the actor can execute it
//	base/home/            the server's HOME, with .bashrc
//	base/ws/              the workspace
//	base/outside/target   a file, and outside/dir/ a directory, to attack
type sandboxFixture struct {
	actor                sandboxActor
	base, bin, home, ws  string
	outside, target, dir string
	state, db            string // the workspace's state directory and database
	// deny, when set, is the deny wrapper and what it makes unavailable (buildDeny): the
	// fixture's servers run under it.
	deny []string
	// serverPid is the pid of the server launched last.
	serverPid int
}

// newSandboxFixture makes the tree for actor; t.Cleanup removes it.
func newSandboxFixture(t *testing.T, actor sandboxActor) *sandboxFixture {
	t.Helper()
	needRoot(t)
	base, err := os.MkdirTemp("/var/lib", "mcp-harness-e2e-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	f := &sandboxFixture{
		actor: actor, base: base,
		bin: filepath.Join(base, "bin", "mcp-harness"), home: filepath.Join(base, "home"), ws: filepath.Join(base, "ws"),
		outside: filepath.Join(base, "outside"),
	}
	f.target, f.dir = filepath.Join(f.outside, "target"), filepath.Join(f.outside, "dir")
	f.state = filepath.Join(f.ws, workspace.StateDirName)
	f.db = filepath.Join(f.state, workspace.DBFileName)
	for _, d := range []string{filepath.Dir(f.bin), f.home, f.ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// TestMain's binary lies in a 0700 directory: a copy the ordinary user can run.
	copyFile(t, binPath, f.bin, 0o755)
	f.reset(t)
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

func copyFile(t *testing.T, from, to string, mode fs.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// wsLeftovers are what attempts may leave in the workspace (a writable root).
var wsLeftovers = []string{"l", "h", "m", "file", "gone", "daemon-done"}

// reset puts the attacked files back as they were made: after a control under --sandbox
// off has changed them, and between attempts, for what they may leave in the workspace.
func (f *sandboxFixture) reset(t *testing.T) {
	t.Helper()
	for _, p := range []string{f.outside, filepath.Join(f.home, ".bashrc"), filepath.Join(f.home, "pwned")} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range wsLeftovers {
		if err := os.RemoveAll(filepath.Join(f.ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for path, text := range map[string]string{f.target: targetText, filepath.Join(f.home, ".bashrc"): bashrcText} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o644); err != nil { // whatever the umask
			t.Fatal(err)
		}
	}
	for _, p := range []string{f.target, f.dir, f.outside} {
		if err := os.Chtimes(p, targetTime, targetTime); err != nil {
			t.Fatal(err)
		}
	}
	if f.actor.cred != nil {
		f.chownAll(t)
	}
}

// chownAll hands the whole tree but the binary to the ordinary user: its file
// permissions then allow every write the tests attempt.
func (f *sandboxFixture) chownAll(t *testing.T) {
	t.Helper()
	uid, gid := int(f.actor.cred.Uid), int(f.actor.cred.Gid)
	err := filepath.WalkDir(f.base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == filepath.Dir(f.bin) || p == f.state {
			return fs.SkipDir // the binary stays root's; the server made its state itself
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// serverEnv is the whole environment of the fixture's servers: nothing of the test's own
// (whose variables would show up in withheldEnv), plus extra.
func (f *sandboxFixture) serverEnv(extra ...string) []string {
	user := "root"
	if f.actor.cred != nil {
		user = "nobody"
	}
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + f.home, "SHELL=/bin/bash", "USER=" + user, "LOGNAME=" + user, "LANG=C.UTF-8",
		"GORACE=" + os.Getenv("GORACE"),
	}
	return append(env, extra...)
}

// start runs the fixture's binary as `stdio --workspace ws args...` as its actor, with
// serverEnv(env...), and initializes it.
func (f *sandboxFixture) start(t *testing.T, env []string, args ...string) *server {
	t.Helper()
	s := f.launch(t, env, args...)
	s.initialize()
	return s
}

// launch is start without the initialization.
func (f *sandboxFixture) launch(t *testing.T, env []string, args ...string) *server {
	t.Helper()
	s := startCmd(t, f.command(env, f.stdioArgs(args...)...))
	f.serverPid = s.cmd.Process.Pid
	return s
}

func (f *sandboxFixture) stdioArgs(args ...string) []string {
	return append([]string{"stdio", "--workspace", f.ws, "--log-level", "info"}, args...)
}

// command is the fixture's binary with args (under the deny wrapper when set), run as its
// actor with serverEnv(env...).
func (f *sandboxFixture) command(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(f.bin, args...)
	if f.deny != nil {
		cmd = exec.Command(f.deny[0], slices.Concat(f.deny[1:], []string{"--", f.bin}, args)...)
	}
	cmd.Env = f.serverEnv(env...)
	cmd.Dir = f.ws
	if f.actor.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: f.actor.cred}
	}
	return cmd
}

// expand replaces the fixture's placeholders in a command line: {T} the target file, {D}
// the target directory, {O} the outside directory, {W} the workspace, {S} the state
// directory, {DB} the database, {H} the home directory, {SP} the pid of the server
// launched last.
func (f *sandboxFixture) expand(line string) string {
	return strings.NewReplacer("{T}", f.target, "{D}", f.dir, "{O}", f.outside, "{W}", f.ws,
		"{S}", f.state, "{DB}", f.db, "{H}", f.home, "{SP}", strconv.Itoa(f.serverPid)).Replace(line)
}

// fileState is what an attack could change of one file or directory.
type fileState struct {
	Exists  bool
	Mode    fs.FileMode
	UID     uint32
	Inode   uint64
	ModTime time.Time
	Content string   // a file's bytes (the database: its header)
	Entries []string // a directory's entries
}

func statOf(t *testing.T, path string, headOnly bool) fileState {
	t.Helper()
	fi, err := os.Lstat(path)
	if os.IsNotExist(err) {
		return fileState{}
	}
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	s := fileState{Exists: true, Mode: fi.Mode(), UID: st.Uid, Inode: st.Ino, ModTime: fi.ModTime()}
	switch {
	case fi.IsDir():
		entries, err := os.ReadDir(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			s.Entries = append(s.Entries, e.Name())
		}
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if headOnly {
			b = b[:min(len(b), 16)]
		}
		s.Content = string(b)
	}
	return s
}

// fixtureState is everything the attacks aim at.
type fixtureState struct {
	Target, Dir, Outside fileState
	Bashrc               fileState
	HomeEntries          []string
	StateDir             fileState // mode, owner and inode; its entries change as the server works
	DB                   fileState // inode, mode, owner and header; the server writes the rest
}

func (f *sandboxFixture) snapshot(t *testing.T) fixtureState {
	t.Helper()
	s := fixtureState{
		Target: statOf(t, f.target, false), Dir: statOf(t, f.dir, false), Outside: statOf(t, f.outside, false),
		Bashrc:   statOf(t, filepath.Join(f.home, ".bashrc"), false),
		StateDir: statOf(t, f.state, false), DB: statOf(t, f.db, true),
	}
	s.HomeEntries = statOf(t, f.home, false).Entries
	s.StateDir.Entries, s.StateDir.ModTime = nil, time.Time{}
	s.DB.ModTime = time.Time{}
	return s
}

// sandboxDiff is "" when after is before, else what changed.
func sandboxDiff(before, after fixtureState) string {
	return cmp.Diff(before, after)
}

// attemptResult is how a command ended and what it printed.
type attemptResult struct {
	exitCode int    // -1: no exit code (signalled, never started)
	output   string // the task's log, or the typed command's output
	text     string // the tool result's text
	sandbox  map[string]any
}

// runTask runs line as the one task of a graph on s, with the task's extra fields, and
// waits for it to end.
func runTask(t *testing.T, s *server, line string, extra map[string]any) attemptResult {
	t.Helper()
	return runTaskIn(t, s, nil, line, extra)
}

// runTaskIn is runTask with the graph's own fields (detach).
func runTaskIn(t *testing.T, s *server, graph map[string]any, line string, extra map[string]any) attemptResult {
	t.Helper()
	task := map[string]any{"id": "attempt", "command": line}
	maps.Copy(task, extra)
	args := map[string]any{"tasks": []any{task}}
	maps.Copy(args, graph)
	run := s.toolCall("tasks_run", args)
	if run["isError"] == true {
		t.Fatalf("tasks_run %q = %s", line, resultText(run))
	}
	graphID := structuredOf(t, run)["graphId"].(string)
	deadline := time.Now().Add(2 * e2eWait)
	for time.Now().Before(deadline) {
		res := s.toolCall("tasks_status", map[string]any{"graphId": graphID, "waitMs": 20000, "logTail": 65536})
		st := structuredOf(t, res)
		if st["status"] == "running" {
			continue
		}
		tk := tasksOf(st)["attempt"]
		r := attemptResult{exitCode: -1, text: resultText(res)}
		if c, ok := tk["exitCode"].(float64); ok {
			r.exitCode = int(c)
		}
		if log, ok := tk["log"].(map[string]any); ok {
			r.output, _ = log["text"].(string)
		}
		r.sandbox, _ = tk["sandbox"].(map[string]any)
		return r
	}
	t.Fatalf("task %q still running after %v", line, 2*e2eWait)
	return attemptResult{}
}

// openShell opens an interactive shell ($SHELL: bash) on s with the extra arguments and
// returns its session id and the shell_open result.
func openShell(t *testing.T, s *server, extra map[string]any) (string, map[string]any) {
	t.Helper()
	args := map[string]any{"timeoutMs": 20000}
	for k, v := range extra {
		args[k] = v
	}
	res := s.toolCall("shell_open", args)
	if res["isError"] == true {
		t.Fatalf("shell_open = %s", resultText(res))
	}
	sc := structuredOf(t, res)
	if sc["reason"] != "prompt" || sc["integration"] != true {
		t.Fatalf("shell_open = reason %v, integration %v, want prompt and true: %s", sc["reason"], sc["integration"], resultText(res))
	}
	id := sc["sessionId"].(string)
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			s.toolCall("shell_close", map[string]any{"sessionId": id})
		}
	})
	return id, res
}

// typeLine runs line at the prompt of session id, as a person's typed command, and waits
// for the prompt to come back.
func typeLine(t *testing.T, s *server, id, line string) attemptResult {
	t.Helper()
	res := s.toolCall("shell_io", map[string]any{"sessionId": id, "run": line, "timeoutMs": 20000, "maxBytes": 65536})
	if res["isError"] == true {
		t.Fatalf("shell_io run %q = %s", line, resultText(res))
	}
	sc := structuredOf(t, res)
	c, _ := sc["command"].(map[string]any)
	if sc["reason"] != "prompt" || c == nil || c["done"] != true {
		t.Fatalf("run %q = reason %v, command %v, want it done at the prompt: %s", line, sc["reason"], c, resultText(res))
	}
	r := attemptResult{exitCode: -1, text: resultText(res)}
	if code, ok := c["exitCode"].(float64); ok {
		r.exitCode = int(code)
	}
	r.output, _ = sc["output"].(string)
	return r
}

// writeScript writes a file the actor can read and returns its path.
func (f *sandboxFixture) writeScript(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(f.base, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// lineResults reads the "name: RESULT ..." lines a probe script prints.
func lineResults(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(strings.ReplaceAll(out, "\r", ""), "\n") {
		name, rest, ok := strings.Cut(line, ": ")
		if ok && !strings.ContainsAny(name, " \t") {
			m[name] = rest
		}
	}
	return m
}

// sortedKeys is the sorted names of m.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// markListener accepts connections (TCP or Unix) or datagrams (UDP) and records the
// first line of each: the mark its prober sent.
type markListener struct {
	t      *testing.T
	name   string
	ln     net.Listener   // stream listeners
	pc     net.PacketConn // UDP
	marks  chan string
	nextID int
}

// listenMarks listens on network/addr ("tcp", "127.0.0.1:0"; "udp", ...; "unix", path)
// until the test ends.
func listenMarks(t *testing.T, network, addr string) *markListener {
	t.Helper()
	m := &markListener{t: t, name: network + " " + addr, marks: make(chan string, 100)}
	done := make(chan struct{})
	if network == "udp" {
		pc, err := net.ListenPacket(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		m.pc = pc
		go func() {
			defer close(done)
			buf := make([]byte, 1024)
			for {
				n, _, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				m.marks <- strings.TrimSpace(string(buf[:n]))
			}
		}()
		t.Cleanup(func() { pc.Close(); <-done })
		return m
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	m.ln = ln
	go func() {
		defer close(done)
		for { // one connection at a time, so marks keep the order of the connections
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.SetReadDeadline(time.Now().Add(e2eWait))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			m.marks <- strings.TrimSpace(line)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return m
}

// port is the listener's port.
func (m *markListener) port() int {
	if m.pc != nil {
		return m.pc.LocalAddr().(*net.UDPAddr).Port
	}
	return m.ln.Addr().(*net.TCPAddr).Port
}

// drain returns the marks received since the last drain. It sends a sentinel of its own
// and reads up to it: whatever a prober sent before is in front of it (a connection is
// established, a datagram queued, before the prober's call returns), so an empty result
// means nothing came, not that it has yet to come.
func (m *markListener) drain() []string {
	m.t.Helper()
	m.nextID++
	sentinel := fmt.Sprintf("sentinel-%d", m.nextID)
	var c net.Conn
	var err error
	switch {
	case m.pc != nil:
		c, err = net.Dial("udp", m.pc.LocalAddr().String())
	default:
		c, err = net.Dial(m.ln.Addr().Network(), m.ln.Addr().String())
	}
	if err != nil {
		m.t.Fatalf("sentinel to %s: %v", m.name, err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, sentinel+"\n"); err != nil {
		m.t.Fatalf("sentinel to %s: %v", m.name, err)
	}
	var got []string
	for {
		select {
		case mark := <-m.marks:
			if mark == sentinel {
				return got
			}
			got = append(got, mark)
		case <-time.After(e2eWait):
			m.t.Fatalf("%s: the sentinel did not arrive within %v (got %q)", m.name, e2eWait, got)
		}
	}
}
