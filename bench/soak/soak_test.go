// Package soak is the soak benchmark of mcp-harness (issue 12): the built server, driven
// over stdio by a raw JSON-RPC client, through a bounded number of terminal session cycles
// and task graphs, with its resident memory, open file descriptors, threads and database
// size measured before and after. It takes minutes, so it runs only when asked:
//
//	MCP_HARNESS_SOAK=1 go test -run TestSoak -v -timeout 20m ./bench/soak
//
// A cycle is one terminal session (open a shell, run a command in it, close it) and one
// task graph (four tasks) run to its end. The soak runs at least MCP_HARNESS_SOAK_CYCLES
// cycles (default 300) and goes on until MCP_HARNESS_SOAK_DURATION has passed (default
// 5m; 0 stops after the cycles). The figures are printed, every 30 s and at the end, and
// written to bench/.results/soak.json. The test fails on what is a leak whatever the
// machine: descriptors or sessions left behind.
package soak

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sample is what the soak measures of the server process and its workspace.
type sample struct {
	RSSKiB   int64 `json:"rssKiB"`
	FDs      int   `json:"fds"`
	Threads  int   `json:"threads"`
	DBBytes  int64 `json:"dbBytes"`  // harness.db
	WALBytes int64 `json:"walBytes"` // its write-ahead log, checkpointed into it now and then
}

func measure(t *testing.T, pid int, ws string) sample {
	t.Helper()
	var s sample
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			s.RSSKiB, _ = strconv.ParseInt(f[1], 10, 64)
		case "Threads:":
			s.Threads, _ = strconv.Atoi(f[1])
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	s.FDs = len(fds)
	db := filepath.Join(ws, ".mcp-harness", "harness.db")
	if fi, err := os.Stat(db); err == nil {
		s.DBBytes = fi.Size()
	}
	if fi, err := os.Stat(db + "-wal"); err == nil {
		s.WALBytes = fi.Size()
	}
	return s
}

// client speaks JSON-RPC to the server over its stdin and stdout.
type client struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	next int
}

func (c *client) call(method string, params any) map[string]any {
	c.t.Helper()
	c.next++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.next, "method": method, "params": params})
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			c.t.Fatalf("%s: %v", method, err)
		}
		var m map[string]any
		if json.Unmarshal(line, &m) != nil {
			c.t.Fatalf("not JSON on stdout: %q", line)
		}
		if id, ok := m["id"].(float64); ok && int(id) == c.next {
			return m
		}
	}
}

// tool calls a tool and returns its structuredContent; a failed call fails the soak.
func (c *client) tool(name string, args map[string]any) map[string]any {
	c.t.Helper()
	resp := c.call("tools/call", map[string]any{"name": name, "arguments": args})
	res, _ := resp["result"].(map[string]any)
	if res == nil || res["isError"] == true {
		c.t.Fatalf("%s: %v", name, resp)
	}
	sc, _ := res["structuredContent"].(map[string]any)
	return sc
}

// sessionCycle opens a shell, runs a command in it and closes it.
func (c *client) sessionCycle(i int) {
	c.t.Helper()
	open := c.tool("shell_open", map[string]any{"command": "exec bash --norc --noprofile -i", "env": map[string]any{"PS1": "P> "}, "waitFor": "P> $", "timeoutMs": 20000})
	id := open["sessionId"].(string)
	r := c.tool("shell_io", map[string]any{"sessionId": id, "input": fmt.Sprintf("echo OUT_$((%d+1))\n", i), "waitFor": fmt.Sprintf("(?m)^OUT_%d", i+1), "timeoutMs": 20000})
	if r["reason"] != "matched" {
		c.t.Fatalf("shell round trip %d: %v", i, r)
	}
	c.tool("shell_close", map[string]any{"sessionId": id})
}

// graph runs a small diamond with some output to its end.
func (c *client) graph(i int) {
	c.t.Helper()
	id := c.tool("tasks_run", map[string]any{"tasks": []any{
		map[string]any{"id": "a", "command": "seq 1 2000"},
		map[string]any{"id": "b", "command": "echo b " + strconv.Itoa(i), "dependsOn": []string{"a"}},
		map[string]any{"id": "c", "command": "true", "dependsOn": []string{"a"}},
		map[string]any{"id": "d", "command": "echo d", "dependsOn": []string{"b", "c"}},
	}})["graphId"].(string)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		st := c.tool("tasks_status", map[string]any{"graphId": id, "waitMs": 20000, "logTail": 0})
		switch st["status"] {
		case "running":
			continue
		case "succeeded":
			return
		default:
			c.t.Fatalf("graph %d: %v", i, st["status"])
		}
	}
	c.t.Fatalf("graph %d did not finish", i)
}

func TestSoak(t *testing.T) {
	if os.Getenv("MCP_HARNESS_SOAK") == "" {
		t.Skip("the soak takes minutes: set MCP_HARNESS_SOAK=1 to run it")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the soak reads /proc")
	}
	cycles, duration := 300, 5*time.Minute
	if v := os.Getenv("MCP_HARNESS_SOAK_CYCLES"); v != "" {
		cycles, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("MCP_HARNESS_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("MCP_HARNESS_SOAK_DURATION=%q: %v", v, err)
		}
		duration = d
	}
	bin := filepath.Join(t.TempDir(), "mcp-harness")
	build := exec.Command("go", "build", "-o", bin, "github.com/mcp-harness/mcp-harness")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	cmd := exec.Command(bin, "stdio", "--workspace", ws)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	c := &client{t: t, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	c.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "soak", "version": "1"}})
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")

	// A few of each first, so that the baseline has what any use allocates once.
	for i := 0; i < 5; i++ {
		c.sessionCycle(i)
		c.graph(i)
	}
	pid := cmd.Process.Pid
	before := measure(t, pid, ws)
	start, lastLog := time.Now(), time.Now()
	done := 0
	for ; done < cycles || time.Since(start) < duration; done++ {
		c.sessionCycle(done)
		c.graph(done)
		if done+1 == cycles || time.Since(lastLog) >= 30*time.Second {
			lastLog = time.Now()
			s := measure(t, pid, ws)
			t.Logf("%d cycles, %s: rss %d KiB, fds %d, threads %d, db %d B, wal %d B", done+1, time.Since(start).Round(time.Second), s.RSSKiB, s.FDs, s.Threads, s.DBBytes, s.WALBytes)
		}
	}
	elapsed := time.Since(start)
	after := measure(t, pid, ws)
	list := c.tool("shell_list", map[string]any{})
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("server exit: %v\n%s", err, stderr)
	}

	report := map[string]any{
		"cycles": done, "seconds": elapsed.Seconds(), "cpus": runtime.NumCPU(),
		"before": before, "after": after,
		"delta": sample{after.RSSKiB - before.RSSKiB, after.FDs - before.FDs, after.Threads - before.Threads, after.DBBytes - before.DBBytes, after.WALBytes - before.WALBytes},
	}
	b, _ := json.MarshalIndent(report, "", "  ")
	t.Logf("soak: %s", b)
	if dir := filepath.Join("..", ".results"); os.MkdirAll(dir, 0o755) == nil {
		os.WriteFile(filepath.Join(dir, "soak.json"), b, 0o644)
	}
	// Leaks whatever the machine: a descriptor per session or graph would show as
	// hundreds here, a session left open in the list.
	if d := after.FDs - before.FDs; d > 4 {
		t.Errorf("the server holds %d more file descriptors after %d cycles", d, done)
	}
	if sessions, _ := list["sessions"].([]any); len(sessions) != 0 {
		t.Errorf("%d sessions left open", len(sessions))
	}
}
