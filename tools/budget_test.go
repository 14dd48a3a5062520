package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/internal/toolschema"
	"github.com/mcp-harness/mcp-harness/pty"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// tools/list is read at the start of every conversation: it stays within 24 KiB in all
// (the output schemas are wire bytes, not model context), and 8 KiB for what a model reads
// (names, descriptions, input schemas). The figures are logged (go test -v) for
// BENCHMARKS.md.
func TestToolsList_Budget(t *testing.T) {
	const maxAll, maxRead = 24 << 10, 8 << 10
	s := newTestServer(t)
	resp := s.MCPServer().HandleMessage(t.Context(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	all, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	size, err := toolschema.Measure(all)
	if err != nil {
		t.Fatalf("tools/list: %v %s", err, all)
	}
	t.Logf("tools/list: %d bytes in all (at most %d); names, descriptions and input schemas %d (at most %d)",
		size.Total, maxAll, size.Model, maxRead)
	if size.Total > maxAll {
		t.Errorf("tools/list is %d bytes, over %d", size.Total, maxAll)
	}
	if size.Model > maxRead {
		t.Errorf("names, descriptions and input schemas take %d bytes, over %d", size.Model, maxRead)
	}
}

// Every argument of every tool, nested ones too, has a description a model can act on:
// what to give, its default or where the value comes from.
func TestTools_ArgumentsDescribed(t *testing.T) {
	s := newTestServer(t)
	var walk func(tool, at string, sch map[string]any)
	walk = func(tool, at string, sch map[string]any) {
		props, _ := sch["properties"].(map[string]any)
		for name, p := range props {
			p := p.(map[string]any)
			if d, _ := p["description"].(string); len(strings.Fields(d)) < 2 {
				t.Errorf("%s: argument %s%s has no description a model can act on: %q", tool, at, name, d)
			}
			if items, ok := p["items"].(map[string]any); ok {
				walk(tool, at+name+"[].", items)
			}
		}
	}
	for _, st := range s.registry() {
		var in map[string]any
		if err := json.Unmarshal(st.Tool.RawInputSchema, &in); err != nil {
			t.Fatal(err)
		}
		walk(st.Tool.Name, "", in)
	}
}

// The bounds the schemas give are the engines' own (a struct tag cannot name a constant).
func TestSchemas_Bounds(t *testing.T) {
	s := newTestServer(t)
	for _, c := range []struct {
		tool string
		path []string
		key  string
		want int
	}{
		{"shell_open", []string{"cols"}, "maximum", pty.MaxSize},
		{"shell_io", []string{"rows"}, "maximum", pty.MaxSize},
		{"tasks_run", []string{"tasks", "[]", "retries"}, "maximum", tasks.MaxRetries},
		{"tasks_list", []string{"limit"}, "maximum", tasks.MaxListLimit},
	} {
		var in map[string]any
		if err := json.Unmarshal(s.MCPServer().GetTool(c.tool).Tool.RawInputSchema, &in); err != nil {
			t.Fatal(err)
		}
		setAt(in, c.path, func(p map[string]any) {
			if got, _ := p[c.key].(float64); int(got) != c.want {
				t.Errorf("%s %v: %s = %v, want %d", c.tool, c.path, c.key, p[c.key], c.want)
			}
		})
	}
}

// Every description still says when to use its tool rather than another, in the words a
// model looks for.
func TestTools_DescriptionsSayWhen(t *testing.T) {
	s := newTestServer(t)
	says := map[string][]string{
		"shell_open":   {"REPL", "tasks_run"},
		"shell_io":     {"waitFor", "do not poll"},
		"shell_close":  {"SIGKILL"},
		"shell_list":   {"sessions"},
		"tasks_run":    {"builds", "tasks_status", "shell_open", "--yes"},
		"tasks_status": {"waitMs", "log tail", "do not poll"},
		"tasks_list":   {"graph"},
		"tasks_cancel": {"graceMs", "skipped"},
		"tasks_graph":  {"ready", "waiting", "blocked"},
	}
	for _, st := range s.registry() {
		for _, w := range says[st.Tool.Name] {
			if !strings.Contains(st.Tool.Description, w) {
				t.Errorf("%s description %q does not mention %q", st.Tool.Name, st.Tool.Description, w)
			}
		}
	}
}

// A graph bigger than one result, read through the tools with a small --max-result: every
// result fits (callTool checks each one), tasks_status and tasks_graph page through every
// task once with the cursors they hand out, tasks_list and tasks_cancel bound their
// lists, and each result says in words what it left out and how to get it.
func TestTasks_BoundedResults(t *testing.T) {
	s := newTestServer(t, func(c *testConfig) { c.MaxResult = 8 << 10 })
	var ts []any
	for i := range 120 {
		cmd := fmt.Sprintf("printf '%%.0s<log line %d>\\n' $(seq 40)", i)
		if i%30 == 11 {
			cmd += "; exit 3"
		}
		ts = append(ts, map[string]any{"id": fmt.Sprintf("t%03d", i), "command": cmd})
	}
	run := callTool(t, s, "tasks_run", map[string]any{"tasks": ts})
	if sc := structured(t, run); sc["taskCount"] != float64(120) {
		t.Fatalf("tasks_run = %v", sc)
	}
	id := structured(t, run)["graphId"].(string)
	waitGraph(t, s, id, map[string]any{"logTail": 0})

	for _, tool := range []string{"tasks_status", "tasks_graph"} {
		seen := map[string]int{}
		cursor := ""
		for page := 0; ; page++ {
			if page > 120 {
				t.Fatalf("%s: more pages than tasks", tool)
			}
			args := map[string]any{"graphId": id}
			if cursor != "" {
				args["cursor"] = cursor
			}
			res := callTool(t, s, tool, args)
			if res.IsError {
				t.Fatalf("%s page %d: %s", tool, page, text(res))
			}
			sc := structured(t, res)
			list := "tasks"
			if tool == "tasks_graph" {
				list = "nodes"
			}
			for i, x := range sc[list].([]any) {
				tid := x.(map[string]any)["id"].(string)
				seen[tid]++
				if page == 0 && i < 4 && x.(map[string]any)["status"] != "failed" {
					t.Errorf("%s first page: %s is %v, want the 4 failed tasks first", tool, tid, x.(map[string]any)["status"])
				}
			}
			next, _ := sc["nextCursor"].(string)
			if next == "" {
				break
			}
			if !strings.Contains(text(res), "cursor \""+next+"\"") {
				t.Errorf("%s page %d text does not say how to get the next page (cursor %q):\n%s", tool, page, next, text(res))
			}
			cursor = next
		}
		if len(seen) != 120 {
			t.Errorf("%s pages showed %d tasks, want 120", tool, len(seen))
		}
	}

	// One failed task asked for by id gets its log.
	st := structured(t, callTool(t, s, "tasks_status", map[string]any{"graphId": id, "taskIds": []string{"t011"}}))
	if log := taskByID(t, st, "t011")["log"].(map[string]any); !strings.Contains(log["text"].(string), "<log line 11>") {
		t.Errorf("t011 log = %v", log)
	}
	list := callTool(t, s, "tasks_list", map[string]any{"limit": 1000})
	if sc := structured(t, list); sc["nextCursor"] == nil || !strings.Contains(text(list), "The page holds") {
		t.Errorf("tasks_list of 120 tasks in 8 KiB: nextCursor %v, text:\n%s", sc["nextCursor"], text(list))
	}

	// Cancelling 120 pending tasks lists those that fit and counts the rest.
	ts = ts[:0]
	for i := range 120 {
		ts = append(ts, map[string]any{"id": fmt.Sprintf("w%03d", i), "command": "sleep 60", "dependsOn": []string{"gate"}})
	}
	ts = append(ts, map[string]any{"id": "gate", "command": "sleep 60"})
	id2 := runGraph(t, s, map[string]any{"tasks": ts})
	res := callTool(t, s, "tasks_cancel", map[string]any{"graphId": id2, "graceMs": 0})
	sc := structured(t, res)
	if n := len(sc["tasks"].([]any)); n == 0 || n+int(sc["omittedTasks"].(float64)) != 121 {
		t.Errorf("tasks_cancel: %d listed, %v omitted, want 121 in all", n, sc["omittedTasks"])
	}
	if !strings.Contains(text(res), "121 task(s) concerned") || !strings.Contains(text(res), "more not listed") {
		t.Errorf("tasks_cancel text:\n%s", text(res))
	}
	waitGraph(t, s, id2, map[string]any{"logTail": 0})
}

// Millisecond and byte arguments take any integer: beyond their maximum they are clamped,
// and the result says so; 2^53, 2^63-1 and 1e300 included. A fraction is refused.
func TestArgs_Clamped(t *testing.T) {
	s := newTestServer(t, func(c *testConfig) { c.MaxWait = 300 * time.Millisecond })
	id := runGraph(t, s, map[string]any{"tasks": []any{map[string]any{"id": "a", "command": "seq 1 20000"}}})
	waitGraph(t, s, id, nil)
	huge := []any{int64(1) << 53, int64(1<<63 - 1), 1e300}
	for _, v := range huge {
		res := callTool(t, s, "tasks_status", map[string]any{"graphId": id, "logTail": v, "waitMs": v})
		got := text(res)
		if res.IsError || !strings.Contains(got, "logTail") || !strings.Contains(got, "was cut to 65536") {
			t.Errorf("tasks_status logTail/waitMs %v = %s", v, firstLines(got, 3))
		}
		log := taskByID(t, structured(t, res), "a")["log"].(map[string]any)
		if !strings.HasSuffix(log["text"].(string), "20000\n") {
			t.Errorf("tasks_status logTail %v: log %v", v, log["offset"])
		}
		res = callTool(t, s, "tasks_status", map[string]any{"graphId": id, "taskIds": []string{"a"}, "logOffset": v, "logLimit": v})
		if res.IsError || !strings.Contains(text(res), "logLimit") {
			t.Errorf("tasks_status logOffset/logLimit %v = %s", v, firstLines(text(res), 3))
		}
		res = callTool(t, s, "tasks_cancel", map[string]any{"graphId": id, "graceMs": v})
		if res.IsError || !strings.Contains(text(res), "graceMs") || !strings.Contains(text(res), "cut to 60000") {
			t.Errorf("tasks_cancel graceMs %v = %s", v, text(res))
		}
		res = callTool(t, s, "shell_open", map[string]any{"command": "echo hi; sleep 60", "waitFor": "hi", "timeoutMs": v, "idleMs": v, "maxBytes": v})
		r := structured(t, res)
		if res.IsError || r["reason"] != "matched" {
			t.Errorf("shell_open with %v: %s", v, text(res))
			continue
		}
		sid := r["sessionId"].(string)
		res = callTool(t, s, "shell_io", map[string]any{"sessionId": sid, "timeoutMs": v, "waitFor": "NEVER"})
		if res.IsError || !strings.Contains(text(res), "--max-wait") {
			t.Errorf("shell_io timeoutMs %v = %s", v, text(res))
		}
		// The close's grace is waited out in the call, so --max-wait (300 ms here) bounds it.
		res = callTool(t, s, "shell_close", map[string]any{"sessionId": sid, "graceMs": v})
		if res.IsError || !strings.Contains(text(res), "cut to 300 (the server's --max-wait)") {
			t.Errorf("shell_close graceMs %v = %s", v, text(res))
		}
	}
	// A wait on a running graph is cut to --max-wait, and says so.
	slow := runGraph(t, s, map[string]any{"tasks": []any{map[string]any{"id": "s", "command": "sleep 60"}}})
	res := callTool(t, s, "tasks_status", map[string]any{"graphId": slow, "waitMs": int64(1) << 53})
	if got := text(res); res.IsError || !strings.Contains(got, "--max-wait") {
		t.Errorf("a long wait on a running graph = %s", firstLines(got, 3))
	}
	callTool(t, s, "tasks_cancel", map[string]any{"graphId": slow, "graceMs": 0})
	for _, v := range []any{1.5, -1, "10"} {
		if res := callTool(t, s, "tasks_status", map[string]any{"graphId": id, "waitMs": v}); !res.IsError || !strings.Contains(text(res), "waitMs") {
			t.Errorf("waitMs %v = %s", v, text(res))
		}
	}
}

// With a graph running and the store busy, a short wait answers with the graph's state,
// never with the deadline it ran into (INTERNAL: context deadline exceeded).
func TestTasks_ShortWaitUnderLoad(t *testing.T) {
	s := newTestServer(t)
	var ts []any
	for i := range 400 {
		ts = append(ts, map[string]any{"id": fmt.Sprintf("t%d", i), "command": "true"})
	}
	id := runGraph(t, s, map[string]any{"tasks": ts})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 25 {
				res := callTool(t, s, "tasks_status", map[string]any{"graphId": id, "waitMs": 1 + (w*25+i)%10, "logTail": 0, "taskIds": []string{"t0", "t399"}})
				if res.IsError {
					t.Errorf("tasks_status waitMs %d under load: %s", 1+(w*25+i)%10, text(res))
					return
				}
			}
		})
	}
	wg.Wait()
	waitGraph(t, s, id, map[string]any{"logTail": 0})
}

// An error on the server's side says what failed in words; the detail (a path, an errno)
// goes to the log, not to the model.
func TestTools_InternalError(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	s := newTestServer(t, func(c *testConfig) {
		c.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	})
	id := runGraph(t, s, map[string]any{"tasks": []any{map[string]any{"id": "a", "command": "echo hi"}}})
	waitGraph(t, s, id, nil)
	// A log that is a directory cannot be read, root or not.
	path := s.tasks.LogPath(id, "a")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	res := callTool(t, s, "tasks_status", map[string]any{"graphId": id})
	got := text(res)
	if !res.IsError || !strings.HasPrefix(got, "INTERNAL: tasks_status failed: a file in the workspace's state directory could not be read or written") ||
		strings.Contains(got, path) || !strings.Contains(got, "server's log") {
		t.Errorf("tasks_status with an unreadable log = %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "tool failed") || !strings.Contains(logs.String(), "a.log") {
		t.Errorf("the log does not hold the detail:\n%s", logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// bound cuts what a handler left too large: a text in the middle, a shell output by its
// JSON size (escapes count six bytes), and refuses what it cannot cut rather than send it.
func TestBound(t *testing.T) {
	s := newTestServer(t, func(c *testConfig) { c.MaxResult = 4 << 10 })
	out := strings.Repeat("\x1b[1m<b>\x1b[0m\n", 1000) // 12 KB of text, ~40 KB of JSON
	res := s.bound("shell_io", mcp.NewToolResultStructured(readResult{SessionID: "s1", Output: out, Reason: "idle"}, "header\n"+out))
	checkResult(t, s, "shell_io", res)
	r := res.StructuredContent.(readResult)
	if r.OmittedBytes == 0 || !strings.Contains(r.Output, "bytes omitted to fit the result") || !strings.HasPrefix(text(res), "header\n") {
		t.Errorf("bound(shell_io) = omitted %d, output %q", r.OmittedBytes, firstLines(r.Output, 2))
	}
	// shell_open's result is the same read with more beside it, and is cut the same way.
	res = s.bound("shell_open", mcp.NewToolResultStructured(openResult{readResult: readResult{SessionID: "s1", Output: out, Reason: "idle", Integration: true},
		Sandbox: sandbox.Policy{Mode: sandbox.WorkspaceWrite, Network: sandbox.NetworkOn}, WithheldEnv: []string{"API_TOKEN"}}, "header\n"+out))
	checkResult(t, s, "shell_open", res)
	o, _ := res.StructuredContent.(openResult) // none when the result was refused
	if res.IsError || o.OmittedBytes == 0 || !strings.Contains(o.Output, "bytes omitted to fit the result") || !o.Integration {
		t.Errorf("bound(shell_open) = error %v, omitted %d, output %q, integration %v", res.IsError, o.OmittedBytes, firstLines(o.Output, 2), o.Integration)
	}
	res = s.bound("tasks_status", mcp.NewToolResultStructured(map[string]any{"x": strings.Repeat("x", 5000)}, "small"))
	if !res.IsError || !strings.HasPrefix(text(res), "INTERNAL: tasks_status failed: its result") {
		t.Errorf("an oversized result that cannot be cut = %q", text(res))
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
