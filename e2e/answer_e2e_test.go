package e2e

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/workspace"
)

// `mcp-harness answer` as a person runs it: the agent's result asks for the person, the
// person pastes the command it names into their terminal, types the password there, and
// the program gets it; the secret shows up in no tool result, no log and no state file.

// answerCommand is the command a result waiting for a password tells the model to ask
// the person to run.
var answerCommand = regexp.MustCompile("ask the person to run `([^`]+)` in a terminal")

// askedCommand returns the command a shell_io result names for the person, and checks
// that the result says a password is wanted.
func askedCommand(t *testing.T, res map[string]any) string {
	t.Helper()
	sc := structuredOf(t, res)
	w, _ := sc["waitingForInput"].(map[string]any)
	if sc["reason"] != "input" || w == nil || w["kind"] != "password" {
		t.Fatalf("shell_io = reason %v, waitingForInput %v; want input, password", sc["reason"], sc["waitingForInput"])
	}
	m := answerCommand.FindStringSubmatch(resultText(res))
	if m == nil {
		t.Fatalf("shell_io's text does not name a command for the person: %q", strings.SplitN(resultText(res), "\n", 2)[0])
	}
	return m[1]
}

// checkNoSecret greps everything the secret must not reach: every message the server
// wrote to its client (the tool results), its stderr log, every file of the state
// directory (server.log, the database and its WAL, task logs), and the person's screen.
func checkNoSecret(t *testing.T, secret string, s *server, ws string, terms ...*personTerm) {
	t.Helper()
	if strings.Contains(s.stdout.String(), secret) {
		t.Errorf("a tool result holds the secret")
	}
	if strings.Contains(s.stderr.String(), secret) {
		t.Errorf("the server's stderr log holds the secret")
	}
	state := filepath.Join(ws, workspace.StateDirName)
	files := 0
	err := filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the secret", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, "server.log")); err != nil || files < 2 {
		t.Errorf("grepped %d files of the state directory (server.log: %v), want server.log and the database among them", files, err)
	}
	for _, term := range terms {
		if strings.Contains(strings.Join(term.screen(), "\n"), secret) {
			t.Errorf("the person's screen shows the secret")
		}
	}
}

// The agent's read -s asks for a password: the person answers it with the command the
// result names; a second answer while one is pending is refused; the program gets the
// secret and nothing else does.
func TestAnswer_E2E_readSecret(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws, "--log-level", "debug")
	s.initialize()
	id := openBash(t, s)
	res := s.toolCall("shell_io", map[string]any{"sessionId": id, "timeoutMs": 20000,
		"run": `read -rs -p 'Password: ' pw; echo; echo "got ${#pw} ${pw//?/*}"`})
	cmd := askedCommand(t, res)
	if want := binPath + " answer " + id + " --workspace " + ws; cmd != want {
		t.Errorf("the command for the person = %q, want %q", cmd, want)
	}

	term := startPersonTerm(t, 200, 30)
	term.typeLine(cmd)
	// The process that asks: the session's shell, its read builtin.
	lines := term.waitScreen("the question", screenHas(id+": ", "bash --norc --noprofile -i (pid ", "bash) asks for a password (it will not be shown):", "\nPassword:"))
	t.Logf("answer, asking (capture-pane):\n%s", strings.Join(lines, "\n"))

	// The agent cannot type into the session while the person answers: its keys could
	// end the question and ask another in its place.
	res = s.toolCall("shell_io", map[string]any{"sessionId": id, "keys": []string{"C-c"}, "timeoutMs": 1000})
	if text := resultText(res); res["isError"] != true || !strings.HasPrefix(text, "BUSY: ") || !strings.Contains(text, "mcp-harness answer") {
		t.Errorf("the agent's C-c while a person answers: %s; want BUSY naming mcp-harness answer", text)
	}

	// Someone else tries to answer meanwhile.
	other := startPersonTerm(t, 100, 10)
	other.typeLine(cmd)
	other.waitScreen("the refusal", screenHas("another answer to session "+id+" is pending"))
	if rc := other.exitStatusOf(); rc != "1" {
		t.Errorf("a second answer exited %s, want 1", rc)
	}

	const secret = "Tr0ub4dor&3-horse"
	term.tmux("send-keys", "-l", secret)
	term.keys("Enter")
	lines = term.waitScreen("the answer sent", func(lines []string) bool { return backAtShell(lines) && screenHas("answered "+id)(lines) })
	t.Logf("answer, answered (capture-pane):\n%s", strings.Join(lines, "\n"))
	if rc := term.exitStatusOf(); rc != "0" {
		t.Errorf("answer exited %s, want 0", rc)
	}
	got := agentIO(t, s, id, "", fmt.Sprintf(`got %d \*+`, len(secret)))
	if got["personTyped"] != true {
		t.Errorf("the agent's result after the answer: personTyped %v, want true", got["personTyped"])
	}
	// Nothing asks any more: an answer now is refused, nothing is written.
	term.typeLine(cmd)
	term.waitScreen("the refusal", screenHas("session "+id+" is not waiting for input: its shell is at its prompt"))
	if rc := term.exitStatusOf(); rc != "1" {
		t.Errorf("answer with nothing asking exited %s, want 1", rc)
	}
	checkNoSecret(t, secret, s, ws, term, other)
}

// sudo asks a user's password: the person answers it, sudo runs the command. sudo refuses
// to raise privileges under no_new_privs, which the sandbox sets, so the server runs with
// --sandbox off; as root sudo asks no password, so the session is a test user's, made for
// the test (useradd, chpasswd, a random password) with a sudoers.d rule for one command,
// both removed after, and at the start of the next run if a killed run left them.
func TestAnswer_E2E_sudo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a test user and a sudoers rule")
	}
	for _, tool := range []string{"sudo", "useradd", "userdel", "chpasswd", "visudo", "su"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	removeTestUsers(t)
	secret := "c0rrect-" + rand.Text()
	user := fmt.Sprintf("%s%d", testUserPrefix, os.Getpid()) // at most 12 characters: a pid has at most 7 digits
	if out, err := exec.Command("useradd", "-M", "-d", "/nonexistent", "-s", "/bin/bash", user).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v: %s", user, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("userdel", "-f", user).Run() })
	chpasswd := exec.Command("chpasswd")
	chpasswd.Stdin = strings.NewReader(user + ":" + secret + "\n")
	if out, err := chpasswd.CombinedOutput(); err != nil {
		t.Fatalf("chpasswd: %v: %s", err, out)
	}
	// The rule is written and checked under a name sudo skips (it holds a '.'), then
	// renamed into place: sudo never reads a rule that visudo has not passed.
	rule := filepath.Join(sudoersDir, testRulePrefix+user)
	tmp, err := os.CreateTemp(sudoersDir, "."+testRulePrefix+user+"-*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(tmp.Name()); os.Remove(rule) })
	if _, err := tmp.WriteString(user + " ALL=(root) /usr/bin/id\n"); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(tmp.Chmod(0o440), tmp.Close()); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("visudo", "-cf", tmp.Name()).CombinedOutput(); err != nil {
		t.Fatalf("visudo -cf %s: %v: %s", tmp.Name(), err, out)
	}
	if err := os.Rename(tmp.Name(), rule); err != nil {
		t.Fatal(err)
	}

	ws := t.TempDir()
	s := startServer(t, ws, "--sandbox", "off", "--log-level", "debug")
	s.initialize()
	res := s.toolCall("shell_open", map[string]any{"command": "su -s /bin/bash " + user, "cwd": ".",
		"env": map[string]any{"PS1": "USER> "}, "waitFor": `USER> $`, "timeoutMs": 20000})
	if res["isError"] == true {
		t.Fatalf("shell_open: %s", resultText(res))
	}
	id := structuredOf(t, res)["sessionId"].(string)
	res = s.toolCall("shell_io", map[string]any{"sessionId": id, "input": "PS1='USER> '; sudo -k; sudo /usr/bin/id -un; echo SUDO_RC=$?\n",
		"waitFor": `password for ` + user, "timeoutMs": 20000})
	if sc := structuredOf(t, res); sc["reason"] == "matched" {
		// The prompt is printed; the question is seen once sudo reads: a read on.
		res = s.toolCall("shell_io", map[string]any{"sessionId": id, "timeoutMs": 20000})
	}
	cmd := askedCommand(t, res)

	term := startPersonTerm(t, 250, 30)
	term.typeLine(cmd)
	// sudo asks, and the person is told it is setuid and passes the answer on.
	lines := term.waitScreen("sudo's question", screenHas(id+": sudo /usr/bin/id -un (pid ", "sudo, setuid, a relay: the answer goes on to another program or machine) asks for a password (it will not be shown):", "password for "+user+":"))
	t.Logf("answer to sudo, asking (capture-pane):\n%s", strings.Join(lines, "\n"))
	term.tmux("send-keys", "-l", secret)
	term.keys("Enter")
	term.waitScreen("the answer sent", func(lines []string) bool { return backAtShell(lines) && screenHas("answered "+id)(lines) })
	got := agentIO(t, s, id, "", `(?m)^SUDO_RC=\d+`)
	if out := got["output"].(string); !strings.Contains(out, "root") || !strings.Contains(out, "SUDO_RC=0") {
		t.Errorf("after the answer sudo printed %q, want root and SUDO_RC=0", out)
	}
	checkNoSecret(t, secret, s, ws, term)
	s.toolCall("shell_close", map[string]any{"sessionId": id, "graceMs": 0})
}

// What TestAnswer_E2E_sudo makes, by name: a run that was killed leaves them behind.
const (
	testUserPrefix = "mcpht"
	testRulePrefix = "mcp-harness-e2e-"
	sudoersDir     = "/etc/sudoers.d"
)

// removeTestUsers removes what earlier runs of TestAnswer_E2E_sudo left: their sudoers
// rules (the temporary ones too) and their users. A leftover is no reason to skip. Each
// run names its user after its own pid (mcpht<pid>), and what belongs to a run that is
// still going (another `go test` on this machine) is left alone: removing its user would
// fail it.
func removeTestUsers(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(sudoersDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(strings.TrimPrefix(e.Name(), "."), testRulePrefix)
		if ok && !runGoing(rest) {
			if err := os.Remove(filepath.Join(sudoersDir, e.Name())); err != nil {
				t.Fatalf("remove a leftover sudoers rule: %v", err)
			}
			t.Logf("removed a leftover sudoers rule, %s", e.Name())
		}
	}
	passwd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(passwd)) {
		name, _, _ := strings.Cut(line, ":")
		if strings.HasPrefix(name, testUserPrefix) && !runGoing(name) {
			if out, err := exec.Command("userdel", "-f", name).CombinedOutput(); err != nil {
				t.Fatalf("remove the leftover test user %s: %v: %s", name, err, out)
			}
			t.Logf("removed a leftover test user, %s", name)
		}
	}
}

// runGoing reports whether what is named name (a test user, mcpht<pid>, or a rule named
// after one, with a suffix after '-') belongs to a run whose process still runs. A name
// without a pid (an older run's) belongs to none.
func runGoing(name string) bool {
	user, _, _ := strings.Cut(name, "-")
	pid, err := strconv.Atoi(strings.TrimPrefix(user, testUserPrefix))
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}
