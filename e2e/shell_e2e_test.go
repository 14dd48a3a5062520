package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// toolCall sends tools/call over the raw server and returns the result object.
func (s *server) toolCall(name string, args map[string]any) map[string]any {
	s.t.Helper()
	resp := s.call("tools/call", map[string]any{"name": name, "arguments": args}, nil)
	res, ok := resp["result"].(map[string]any)
	if !ok {
		s.t.Fatalf("%s: %v", name, resp)
	}
	return res
}

func resultText(res map[string]any) string {
	var parts []string
	content, _ := res["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok && m["type"] == "text" {
			parts = append(parts, m["text"].(string))
		}
	}
	return strings.Join(parts, "\n")
}

func structuredOf(t *testing.T, res map[string]any) map[string]any {
	t.Helper()
	sc, ok := res["structuredContent"].(map[string]any)
	if !ok {
		t.Fatalf("no structuredContent in %v", res)
	}
	return sc
}

var bashOpen = map[string]any{
	"command": "exec bash --norc --noprofile -i", "env": map[string]any{"PS1": "PROMPT> "},
	"waitFor": "PROMPT> $", "timeoutMs": 20000,
}

// A shell session driven through mcp-go's client against the built binary: a round trip,
// a Python REPL, Ctrl-C, and close.
func TestE2E_ShellSession(t *testing.T) {
	c, err := mcpclient.NewStdioMCPClient(binPath, nil, "stdio", "--workspace", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*e2eWait)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	call := func(name string, args map[string]any) map[string]any {
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
		if res.IsError {
			t.Fatalf("%s(%v): %s", name, args, text)
		}
		var decoded map[string]any // the result as a client reads it, held to the contract
		b, _ := json.Marshal(res)
		json.Unmarshal(b, &decoded)
		checkToolResult(t, name, decoded, tasks.DefaultMaxResult)
		sc, _ := res.StructuredContent.(map[string]any)
		sc["__text"] = text
		return sc
	}

	open := call("shell_open", bashOpen)
	id := open["sessionId"].(string)
	r := call("shell_io", map[string]any{"sessionId": id, "input": "echo OUT_$((40+2))\n", "waitFor": "(?m)^OUT_42", "timeoutMs": 20000})
	if r["reason"] != "matched" {
		t.Errorf("echo round trip = %v", r)
	}

	// Ctrl-C ends a running command and the prompt comes back. It is sent once sleep holds
	// the terminal's foreground: a C-c that reaches bash first is lost, and sleep runs on.
	call("shell_io", map[string]any{"sessionId": id, "input": "sleep 99.25\n", "timeoutMs": 500})
	waitFor(t, "sleep to hold the terminal's foreground", func() bool { return foregroundCommand("sleep\x0099.25\x00") })
	r = call("shell_io", map[string]any{"sessionId": id, "keys": []string{"C-c"}, "waitFor": "PROMPT> $", "timeoutMs": 20000})
	if r["reason"] != "matched" {
		t.Errorf("C-c did not bring the prompt back: %v", r)
	}

	py := call("shell_open", map[string]any{"command": "python3 -i -q", "waitFor": ">>> $", "timeoutMs": 20000})
	r = call("shell_io", map[string]any{"sessionId": py["sessionId"], "input": "6*7\n", "waitFor": "(?m)^42\\s*$", "timeoutMs": 20000})
	if r["reason"] != "matched" {
		t.Errorf("python 6*7 = %v", r)
	}
	call("shell_close", map[string]any{"sessionId": py["sessionId"]})
	closed := call("shell_close", map[string]any{"sessionId": id})
	if closed["sessionId"] != id {
		t.Errorf("shell_close = %v", closed)
	}
	if list := call("shell_list", map[string]any{}); len(list["sessions"].([]any)) != 0 {
		t.Errorf("sessions after close = %v", list["sessions"])
	}
}

// Several calls waiting at once never delay a quick call behind them.
func TestE2E_WaitingCallsDoNotBlockQuickOnes(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.initialize()
	const waiters = 4
	var ids []string
	var cursors []any
	for i := 0; i < waiters; i++ {
		open := structuredOf(t, s.toolCall("shell_open", bashOpen))
		ids, cursors = append(ids, open["sessionId"].(string)), append(cursors, open["cursor"])
	}
	// Each waiter waits for a line only a later call will produce. It reads from a fixed
	// offset, so it sees that line whether its wait begins before or after the line comes.
	for i, id := range ids {
		s.send(map[string]any{"id": 1000 + i, "method": "tools/call", "params": map[string]any{
			"name": "shell_io", "arguments": map[string]any{"sessionId": id, "since": cursors[i], "waitFor": "(?m)^RELEASED$", "timeoutMs": 25000},
		}})
	}
	s.send(map[string]any{"id": 2000, "method": "tools/call", "params": map[string]any{"name": "shell_list", "arguments": map[string]any{}}})
	first := s.next()
	if first["id"] != float64(2000) {
		t.Fatalf("first response = %v, want the quick shell_list (id 2000) before any waiting call", first)
	}
	// Release the waiters through a second session each would not see: type into each.
	for i, id := range ids {
		s.send(map[string]any{"id": 3000 + i, "method": "tools/call", "params": map[string]any{
			"name": "shell_io", "arguments": map[string]any{"sessionId": id, "input": "echo RELEASED\n", "timeoutMs": 0},
		}})
	}
	released := 0
	for seen := 0; seen < 2*waiters; seen++ {
		m := s.next()
		id, _ := m["id"].(float64)
		if id >= 1000 && id < 2000 {
			sc := structuredOf(t, m["result"].(map[string]any))
			if sc["reason"] != "matched" {
				t.Errorf("waiter %v = %v, want matched", id, sc)
			}
			released++
		}
	}
	if released != waiters {
		t.Errorf("released waiters = %d, want %d", released, waiters)
	}
}

var pidLine = regexp.MustCompile(`(?m)^GRANDCHILD=(\d+)\s*$`)

// startGrandchild has the session start a background process and returns its pid.
func startGrandchild(t *testing.T, s *server, sessionID string) int {
	t.Helper()
	sc := structuredOf(t, s.toolCall("shell_io", map[string]any{
		"sessionId": sessionID, "input": "sleep 1000 & echo GRANDCHILD=$!\n", "waitFor": `(?m)^GRANDCHILD=\d+\s*$`, "timeoutMs": 20000,
	}))
	m := pidLine.FindStringSubmatch(sc["output"].(string))
	if m == nil {
		t.Fatalf("no grandchild pid in %q", sc["output"])
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// processGone reports whether pid no longer runs (gone, or a zombie awaiting its reaper).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && len(b) > i+2 && (b[i+2] == 'Z' || b[i+2] == 'X')
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(e2eWait)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

func TestE2E_ShellCloseKillsGrandchild(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.initialize()
	id := structuredOf(t, s.toolCall("shell_open", bashOpen))["sessionId"].(string)
	pid := startGrandchild(t, s, id)
	res := s.toolCall("shell_close", map[string]any{"sessionId": id})
	if res["isError"] == true {
		t.Fatalf("shell_close: %s", resultText(res))
	}
	waitGone(t, pid)
}

// Shutting the server down, by closing stdin or by SIGTERM, leaves no process behind.
func TestE2E_ShutdownLeavesNoProcess(t *testing.T) {
	for _, how := range []string{"stdin-eof", "SIGTERM"} {
		t.Run(how, func(t *testing.T) {
			s := startServer(t, t.TempDir())
			s.initialize()
			var pids []int
			for i := 0; i < 2; i++ {
				open := structuredOf(t, s.toolCall("shell_open", bashOpen))
				pids = append(pids, int(open["pid"].(float64)), startGrandchild(t, s, open["sessionId"].(string)))
			}
			if how == "SIGTERM" {
				s.signal(syscall.SIGTERM)
			} else {
				s.stdin.Close()
			}
			if code := s.waitExit(); code != 0 {
				t.Errorf("exit code = %d, want 0", code)
			}
			for _, pid := range pids {
				waitGone(t, pid)
			}
		})
	}
}

func TestE2E_ResizeSeenByStty(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.initialize()
	id := structuredOf(t, s.toolCall("shell_open", bashOpen))["sessionId"].(string)
	sc := structuredOf(t, s.toolCall("shell_io", map[string]any{
		"sessionId": id, "cols": 91, "rows": 17, "input": "stty size\n", "waitFor": `(?m)^\d+ \d+\s*$`, "timeoutMs": 20000,
	}))
	if !regexp.MustCompile(`(?m)^17 91\s*$`).MatchString(sc["output"].(string)) {
		t.Errorf("stty size after resize = %q, want 17 91", sc["output"])
	}
}

// A waiting call that carries a progressToken gets progress notifications while it waits.
func TestE2E_ProgressWhileWaiting(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.initialize()
	id := structuredOf(t, s.toolCall("shell_open", bashOpen))["sessionId"].(string)
	var notes []map[string]any
	resp := s.call("tools/call", map[string]any{
		"name":      "shell_io",
		"_meta":     map[string]any{"progressToken": "tok-1"},
		"arguments": map[string]any{"sessionId": id, "input": "sleep 2.5; echo FINISHED\n", "waitFor": "(?m)^FINISHED", "timeoutMs": 20000},
	}, func(m map[string]any) { notes = append(notes, m) })
	if sc := structuredOf(t, resp["result"].(map[string]any)); sc["reason"] != "matched" {
		t.Fatalf("shell_io = %v", sc)
	}
	if len(notes) == 0 {
		t.Fatalf("no progress notification during a 2.5 s wait")
	}
	last := -1.0
	for _, n := range notes {
		p, _ := n["params"].(map[string]any)
		if n["method"] != "notifications/progress" || p["progressToken"] != "tok-1" || !strings.Contains(p["message"].(string), id) {
			t.Errorf("notification = %v", n)
		}
		if v := p["progress"].(float64); v <= last {
			t.Errorf("progress %v after %v: must increase", v, last)
		} else {
			last = v
		}
	}
}

// foregroundCommand reports whether a process whose command line is cmdline (NUL
// separated, as /proc has it) leads its terminal's foreground process group.
func foregroundCommand(cmdline string) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, ent := range entries {
		if _, err := strconv.Atoi(ent.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + ent.Name() + "/cmdline")
		if err != nil || string(b) != cmdline {
			continue
		}
		stat, err := os.ReadFile("/proc/" + ent.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command name: state, ppid, pgrp, session, tty_nr, tpgid.
		i := strings.LastIndexByte(string(stat), ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 5 && f[2] == f[5] {
			return true
		}
	}
	return false
}
