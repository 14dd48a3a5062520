package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// toolCaller calls a tool through mcp-go's client against the built binary and returns
// its structuredContent with the text under "__text"; an isError result fails the test
// unless the caller asked for errors.
type toolCaller func(name string, args map[string]any) map[string]any

func newClient(t *testing.T) (call, callErr toolCaller) {
	t.Helper()
	c, err := mcpclient.NewStdioMCPClient(binPath, nil, "stdio", "--workspace", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*e2eWait)
	t.Cleanup(cancel)
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	do := func(name string, args map[string]any, wantErr bool) map[string]any {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var text string
		for _, content := range res.Content {
			if tc, ok := content.(mcp.TextContent); ok {
				text += tc.Text
			}
		}
		if res.IsError != wantErr {
			t.Fatalf("%s(%v): isError %v: %s", name, args, res.IsError, text)
		}
		sc, _ := res.StructuredContent.(map[string]any)
		if sc == nil {
			sc = map[string]any{}
		}
		sc["__text"] = text
		if strings.Contains(text, "133;") || strings.Contains(text, "\x1b]7;") {
			t.Errorf("%s: a shell integration mark reached the result: %q", name, text)
		}
		return sc
	}
	return func(name string, args map[string]any) map[string]any { return do(name, args, false) },
		func(name string, args map[string]any) map[string]any { return do(name, args, true) }
}

// shellCase says how to do each step in one shell.
type shellCase struct {
	name      string
	echo42    string // prints OUT_42 without the command line containing it
	readLine  string // reads a line into x
	printX    string
	readKind  string // what the terminal's modes say while read waits
	secret    string // a sudo-like password prompt; exits 0 for "secret"
	secretAsk string
	pwKind    string
	yesNo     string // asks Continue? [y/N]; exits 0 for y
	yesNoKind string
	pasted    string // a multi-line command for paste, and what it prints
	pastedOut string
}

// posix is how bash, zsh and dash do the steps.
func posix(name string) shellCase {
	return shellCase{
		name:     name,
		echo42:   "echo OUT_$((40+2))",
		readLine: "read x", printX: "echo got:$x", readKind: "line",
		secret:    `printf '[sudo] password for agent: '; stty -echo; read pw; stty echo; echo; [ "$pw" = secret ]`,
		secretAsk: "[sudo] password for agent:", pwKind: "password",
		yesNo: `printf 'Continue? [y/N] '; read a; [ "$a" = y ]`, yesNoKind: "line",
		pasted: "cat <<'EOF'\nline one\n  line $two\nEOF\n", pastedOut: "line one\n  line $two\n",
	}
}

// fish reads with its own line editor (raw mode: keys) and has no heredocs.
var fishCase = shellCase{
	name:     "fish",
	echo42:   "echo OUT_(math 40+2)",
	readLine: "read x", printX: "echo got:$x", readKind: "keys",
	secret:    `read -s -P '[sudo] password for agent: ' pw; test "$pw" = secret`,
	secretAsk: "[sudo] password for agent:", pwKind: "keys",
	yesNo: `read -P 'Continue? [y/N] ' a; test "$a" = y`, yesNoKind: "keys",
	pasted: "echo one\necho two\n", pastedOut: "one\ntwo\n",
}

func intOf(v any) int {
	f, ok := v.(float64)
	if !ok {
		return -1
	}
	return int(f)
}

// The agent's shell steps, through the built binary, in bash, dash, zsh and fish.
func TestE2E_ShellIntegration(t *testing.T) {
	py := pythonPath(t)
	for _, sc := range []shellCase{posix("bash"), posix("dash"), posix("zsh"), fishCase} {
		t.Run(sc.name, func(t *testing.T) {
			if _, err := exec.LookPath(sc.name); err != nil {
				t.Skipf("%s is not installed (.ci/run installs it from Debian packages)", sc.name)
			}
			call, callErr := newClient(t)
			home := t.TempDir()
			open := call("shell_open", map[string]any{"command": sc.name, "env": map[string]any{"HOME": home}, "timeoutMs": 20000})
			if open["reason"] != "prompt" || open["integration"] != true {
				t.Fatalf("shell_open(%s) = reason %v integration %v, want prompt, true; %s", sc.name, open["reason"], open["integration"], open["__text"])
			}
			id := open["sessionId"].(string)
			run := func(line string, extra ...any) map[string]any {
				t.Helper()
				args := map[string]any{"sessionId": id, "run": line, "timeoutMs": 20000}
				for i := 0; i+1 < len(extra); i += 2 {
					args[extra[i].(string)] = extra[i+1]
				}
				return call("shell_io", args)
			}
			command := func(r map[string]any) map[string]any {
				t.Helper()
				c, ok := r["command"].(map[string]any)
				if !ok {
					t.Fatalf("no command in %s", r["__text"])
				}
				return c
			}
			done := func(r map[string]any, line string, code int, out string) {
				t.Helper()
				c := command(r)
				if r["reason"] != "prompt" || c["done"] != true || c["text"] != line || intOf(c["exitCode"]) != code || out != "*" && r["output"] != out {
					t.Errorf("run %q = reason %v, command %v, output %q; want prompt, done, exit %d, output %q", line, r["reason"], c, r["output"], code, out)
				}
			}

			// Exit codes, and the output alone: no echo of the command, no prompt.
			done(run("true"), "true", 0, "")
			done(run("false"), "false", 1, "")
			done(run("no_such_command_mh"), "no_such_command_mh", 127, "*")
			done(run(sc.echo42), sc.echo42, 0, "OUT_42\n")

			// cd is tracked: the command's cwd, and the session's in shell_list.
			dir := t.TempDir()
			r := run("cd " + dir)
			done(r, "cd "+dir, 0, "")
			if command(r)["cwd"] != dir {
				t.Errorf("cwd after cd = %v, want %s", command(r)["cwd"], dir)
			}

			// A question ends the wait at once, says what it wants, and takes an answer.
			r = run(sc.readLine)
			if w, _ := r["waitingForInput"].(map[string]any); r["reason"] != "input" || w["kind"] != sc.readKind || command(r)["done"] != false {
				t.Errorf("run %q = reason %v, waiting %v, command %v; want input, %s, not done", sc.readLine, r["reason"], r["waitingForInput"], r["command"], sc.readKind)
			}
			r = call("shell_io", map[string]any{"sessionId": id, "input": "hello\n", "timeoutMs": 20000})
			if c := command(r); r["reason"] != "prompt" || c["done"] != true || intOf(c["exitCode"]) != 0 {
				t.Errorf("answer to read = reason %v command %v, want prompt, done, 0", r["reason"], c)
			}
			done(run(sc.printX), sc.printX, 0, "got:hello\n")

			r = run(py + ` -c 'print("got", input("Name? "))'`)
			if w, _ := r["waitingForInput"].(map[string]any); r["reason"] != "input" || w["kind"] != "line" || w["prompt"] != "Name?" {
				t.Errorf("python input() = reason %v waiting %v, want input, line, Name?", r["reason"], r["waitingForInput"])
			}
			r = call("shell_io", map[string]any{"sessionId": id, "input": "Ann\n", "timeoutMs": 20000})
			if c := command(r); r["reason"] != "prompt" || intOf(c["exitCode"]) != 0 || !strings.Contains(r["output"].(string), "got Ann") {
				t.Errorf("answer to input() = reason %v command %v output %q", r["reason"], c, r["output"])
			}

			// A password prompt: echo off in line mode; what is typed never shows.
			r = run(sc.secret)
			if w, _ := r["waitingForInput"].(map[string]any); r["reason"] != "input" || w["kind"] != sc.pwKind || w["prompt"] != sc.secretAsk {
				t.Errorf("password prompt = reason %v waiting %v, want input, %s, %q", r["reason"], r["waitingForInput"], sc.pwKind, sc.secretAsk)
			}
			r = call("shell_io", map[string]any{"sessionId": id, "input": "secret\n", "timeoutMs": 20000})
			if c := command(r); r["reason"] != "prompt" || intOf(c["exitCode"]) != 0 || strings.Contains(r["output"].(string), "secret") {
				t.Errorf("answer to the password prompt = reason %v command %v output %q; want prompt, 0, the password not shown", r["reason"], c, r["output"])
			}

			r = run(sc.yesNo)
			if w, _ := r["waitingForInput"].(map[string]any); r["reason"] != "input" || w["kind"] != sc.yesNoKind || w["prompt"] != "Continue? [y/N]" {
				t.Errorf("y/n prompt = reason %v waiting %v", r["reason"], r["waitingForInput"])
			}
			r = call("shell_io", map[string]any{"sessionId": id, "input": "y\n", "timeoutMs": 20000})
			if c := command(r); intOf(c["exitCode"]) != 0 {
				t.Errorf("answer y = command %v, want exit 0", c)
			}

			// Ctrl-C: the run returns at its timeout, not done; C-c ends it with 130.
			r = run("sleep 30", "timeoutMs", 500)
			if c := command(r); r["reason"] != "timeout" || c["done"] != false {
				t.Errorf("run sleep 30 (500ms) = reason %v command %v, want timeout, not done", r["reason"], c)
			}
			busy := callErr("shell_io", map[string]any{"sessionId": id, "run": "echo TYPED"})
			if !strings.HasPrefix(busy["__text"].(string), "BUSY: ") {
				t.Errorf("run while sleep runs = %q, want BUSY", busy["__text"])
			}
			r = call("shell_io", map[string]any{"sessionId": id, "keys": []string{"C-c"}, "timeoutMs": 20000})
			if c := command(r); r["reason"] != "prompt" || c["text"] != "sleep 30" || intOf(c["exitCode"]) != 130 {
				t.Errorf("C-c = reason %v command %v, want prompt, sleep 30 exit 130", r["reason"], c)
			}

			// A multi-line paste is one edit, run as one command.
			r = call("shell_io", map[string]any{"sessionId": id, "input": sc.pasted, "paste": true, "timeoutMs": 20000})
			if c := command(r); r["reason"] != "prompt" || intOf(c["exitCode"]) != 0 {
				t.Errorf("paste = reason %v command %v, want prompt, exit 0", r["reason"], c)
			}
			list := call("shell_list", map[string]any{"sessionId": id})
			sess := list["sessions"].([]any)[0].(map[string]any)
			cmds := sess["commands"].([]any)
			last := cmds[len(cmds)-1].(map[string]any)
			reread := call("shell_io", map[string]any{"sessionId": id, "since": last["since"], "end": last["cursor"]})
			if reread["output"] != sc.pastedOut {
				t.Errorf("pasted command's output re-read from shell_list's range = %q, want %q", reread["output"], sc.pastedOut)
			}
			if sess["cwd"] != dir || intOf(cmds[0].(map[string]any)["id"]) != 1 {
				t.Errorf("shell_list = cwd %v, first command %v; want %s, id 1", sess["cwd"], cmds[0], dir)
			}
			if strings.Contains(fmt.Sprint(cmds), "TYPED") {
				t.Errorf("the refused run was recorded: %v", cmds)
			}
		})
	}
}

// A dev server started with run, reached through waitPort, listed with its port.
func TestE2E_ShellDevServer(t *testing.T) {
	py := pythonPath(t)
	call, _ := newClient(t)
	open := call("shell_open", map[string]any{"command": "bash", "env": map[string]any{"HOME": t.TempDir()}, "timeoutMs": 20000})
	id := open["sessionId"].(string)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	r := call("shell_io", map[string]any{"sessionId": id, "run": fmt.Sprintf("%s -m http.server --bind 127.0.0.1 %d", py, port),
		"waitPort": port, "timeoutMs": 20000})
	if c, _ := r["command"].(map[string]any); r["reason"] != "port" || c["done"] != false {
		t.Fatalf("run http.server with waitPort = reason %v command %v; want port, running", r["reason"], r["command"])
	}
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("the server does not answer once waitPort returned: %v", err)
	}
	conn.Close()
	sess := call("shell_list", map[string]any{})["sessions"].([]any)[0].(map[string]any)
	ports, _ := sess["ports"].([]any)
	if !slices.Contains(ports, any(float64(port))) || sess["commands"] != nil {
		t.Errorf("shell_list = ports %v commands %v, want %d and no commands (not asked)", ports, sess["commands"], port)
	}
	r = call("shell_io", map[string]any{"sessionId": id, "keys": []string{"C-c"}, "timeoutMs": 20000})
	if c, _ := r["command"].(map[string]any); r["reason"] != "prompt" || c["done"] != true {
		t.Errorf("C-c to the server = reason %v command %v, want prompt, done", r["reason"], c)
	}
}

// A hostile ~/.bashrc through the binary: its own prompt, a PROMPT_COMMAND that replaces
// everything and clobbers $?, vi mode.
func TestE2E_ShellHostileBashrc(t *testing.T) {
	call, _ := newClient(t)
	home := t.TempDir()
	rc := "PS1='\\u@\\h:\\w\\$ '\nPROMPT_COMMAND='false; PS1=\"[\\$?] mine> \"'\nset -o vi\n"
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	open := call("shell_open", map[string]any{"command": "bash", "env": map[string]any{"HOME": home}, "timeoutMs": 20000})
	if open["integration"] != true || !strings.Contains(open["output"].(string), "mine> ") {
		t.Fatalf("shell_open = integration %v output %q, want true and the rc's prompt", open["integration"], open["output"])
	}
	id := open["sessionId"].(string)
	for line, code := range map[string]int{"true": 0, "false": 1, "exit_not_found_mh": 127, "(exit 3)": 3} {
		r := call("shell_io", map[string]any{"sessionId": id, "run": line, "timeoutMs": 20000})
		if c, _ := r["command"].(map[string]any); intOf(c["exitCode"]) != code {
			t.Errorf("run %q = command %v, want exit %d", line, c, code)
		}
	}
	r := call("shell_io", map[string]any{"sessionId": id, "run": "echo OUT_$((40+2))", "timeoutMs": 20000})
	if r["output"] != "OUT_42\n" {
		t.Errorf("run echo = %q, want OUT_42 alone", r["output"])
	}
}

// pythonPath is python3's real path: a version manager's shim (a shell script) would sit
// between the terminal and the program.
func pythonPath(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skipf("python3: %v", err)
	}
	return strings.TrimSpace(string(out))
}
