package e2e

// The MCP Apps views in a real browser: Debian's chromium, headless, driven over the
// DevTools protocol, loads each view (the page resources/read returns) in a test host
// page that implements the host side of the bridge (ui/initialize, the tool-input and
// tool-result notifications, tools/call) against the built binary, a stdio child.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcp-harness/mcp-harness/internal/ui"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// rpcClient speaks JSON-RPC to the binary over its stdio, with any number of requests in
// flight: the host page forwards the view's calls while the test makes its own.
type rpcClient struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	mu     sync.Mutex
	nextID int
	wait   map[int]chan map[string]any
	done   chan struct{}
}

func startRPC(t testing.TB, ws string, args ...string) *rpcClient {
	t.Helper()
	cmd := exec.Command(binPath, append([]string{"stdio", "--workspace", ws, "--log-level", "warn"}, args...)...)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &rpcClient{t: t, cmd: cmd, stdin: stdin, wait: map[int]chan map[string]any{}, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			id, ok := m["id"].(float64)
			if !ok || m["method"] != nil {
				continue // notifications: progress, logging
			}
			c.mu.Lock()
			ch := c.wait[int(id)]
			delete(c.wait, int(id))
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}()
	t.Cleanup(func() {
		stdin.Close() // the end of input shuts the server down
		select {
		case <-c.done:
		case <-time.After(e2eWait):
			cmd.Process.Kill()
			<-c.done
		}
		cmd.Wait()
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})
	return c
}

// call sends a request and waits for its response message.
func (c *rpcClient) call(method string, params any) (map[string]any, error) {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan map[string]any, 1)
	c.wait[id] = ch
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err == nil {
		_, err = c.stdin.Write(append(b, '\n'))
	}
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	select {
	case m := <-ch:
		return m, nil
	case <-c.done:
		return nil, fmt.Errorf("%s: the server closed its output", method)
	case <-time.After(e2eWait):
		return nil, fmt.Errorf("%s: no answer within %v", method, e2eWait)
	}
}

// tool calls a tool and returns its result, held to the contract (checkToolResult).
func (c *rpcClient) tool(name string, args map[string]any) (map[string]any, error) {
	m, err := c.call("tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return nil, err
	}
	if m["error"] != nil {
		return nil, fmt.Errorf("%s: %v", name, m["error"])
	}
	result, _ := m["result"].(map[string]any)
	checkToolResult(c.t, name, result, tasks.DefaultMaxResult)
	return result, nil
}

func (c *rpcClient) mustTool(t testing.TB, name string, args map[string]any) map[string]any {
	t.Helper()
	r, err := c.tool(name, args)
	if err != nil {
		t.Fatal(err)
	}
	if r["isError"] == true {
		t.Fatalf("%s: %v", name, r["content"])
	}
	return r
}

// hostPage is the test's host: it loads a view in an iframe and plays the host's part
// of the bridge, handing the view's tools/call to the server through /call.
const hostPage = `<!doctype html><html><body style="margin:0">
<iframe id="view" src="/view" style="width:1000px;height:680px;border:0"></iframe>
<script>
const f = document.getElementById("view");
window.hostSeen = [];
function post(m) { f.contentWindow.postMessage(Object.assign({jsonrpc: "2.0"}, m), "*"); }
window.addEventListener("message", async (ev) => {
  if (ev.source !== f.contentWindow) return;
  const m = ev.data;
  window.hostSeen.push(m.method || "response");
  const reply = (result, error) => post(error ? {id: m.id, error} : {id: m.id, result});
  switch (m.method) {
  case "ui/initialize":
    reply({protocolVersion: "2026-01-26", hostInfo: {name: "test-host", version: "1"}, hostCapabilities: {serverTools: {}}, hostContext: {theme: "light"}});
    break;
  case "ui/notifications/initialized": {
    const boot = await (await fetch("/boot")).json();
    post({method: "ui/notifications/tool-input", params: {arguments: boot.input}});
    post({method: "ui/notifications/tool-result", params: boot.result});
    break;
  }
  case "tools/call": {
    const r = await (await fetch("/call", {method: "POST", body: JSON.stringify(m.params)})).json();
    r.error ? reply(null, r.error) : reply(r.result);
    break;
  }
  default:
    if (m.id !== undefined) reply(null, {code: -32601, message: "not handled"});
  }
});
</script></body></html>`

// viewHost serves the host page, the view (as resources/read gave it), the tool call
// that boots it, and the view's calls.
type viewHost struct {
	*httptest.Server
	mu         sync.Mutex
	page       string
	input      map[string]any
	result     map[string]any
	calls      []string
	callTimeNs int64
}

func newViewHost(t testing.TB, c *rpcClient) *viewHost {
	h := &viewHost{}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, hostPage) })
	mux.HandleFunc("/view", func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		defer h.mu.Unlock()
		io.WriteString(w, h.page)
	})
	mux.HandleFunc("/boot", func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		defer h.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"input": h.input, "result": h.result})
	})
	mux.HandleFunc("/call", func(w http.ResponseWriter, r *http.Request) {
		var p struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		}
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		h.mu.Lock()
		h.calls = append(h.calls, p.Name)
		h.mu.Unlock()
		start := time.Now()
		res, err := c.tool(p.Name, p.Arguments)
		h.mu.Lock()
		h.callTimeNs += int64(time.Since(start))
		h.mu.Unlock()
		if err != nil {
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": -32603, "message": err.Error()}})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"result": res})
	})
	h.Server = httptest.NewServer(mux)
	t.Cleanup(h.Close)
	return h
}

// boot sets what the host page shows: the view's page and the tool call it was made for.
func (h *viewHost) boot(page string, input, result map[string]any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.page, h.input, h.result = page, input, result
}

// chromiumPath finds Debian's chromium; the test is skipped, saying so, without one.
func chromiumPath(t testing.TB) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on this machine (apt-get install -y chromium): the MCP Apps views are not tested in a browser")
	return ""
}

// newBrowser starts a headless chromium for the test; it ends with the test.
func newBrowser(t testing.TB) context.Context {
	path := chromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.Headless,
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1000, 700), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // waits for the browser's processes to end
	})
	if _, err := chromedp.Run(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// inView is a JavaScript expression evaluated in the view's document.
func inView(expr string) string {
	return `(() => { const d = document.getElementById("view").contentDocument; if (!d || !d.body) return false; return (` + expr + `); })()`
}

// waitView waits until expr, evaluated in the view, is true.
func waitView(t testing.TB, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](inView("!!("+expr+")"), chromedp.WithPollingTimeout(e2eWait))); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](inView(`d.body.innerText`)))
		t.Fatalf("the view never showed %s: %v\nthe view reads:\n%s", what, err, text)
	}
}

func evalView[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](inView(expr)))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// screenshot writes the page as a PNG into $MCPH_SCREENSHOT_DIR, or the test's temporary
// directory, and logs where.
func screenshot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("MCPH_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}

// readView returns a view's page as resources/read gives it.
func readView(t testing.TB, c *rpcClient, uri string) string {
	t.Helper()
	m, err := c.call("resources/read", map[string]any{"uri": uri})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := m["result"].(map[string]any)
	contents, _ := res["contents"].([]any)
	if len(contents) != 1 {
		t.Fatalf("resources/read %s = %v", uri, m)
	}
	first := contents[0].(map[string]any)
	if first["mimeType"] != ui.MIMEType {
		t.Fatalf("resources/read %s: mimeType %v", uri, first["mimeType"])
	}
	return first["text"].(string)
}

func initializeApps(t testing.TB, c *rpcClient) {
	t.Helper()
	m, err := c.call("initialize", map[string]any{"protocolVersion": "2025-06-18",
		"capabilities": map[string]any{"extensions": map[string]any{ui.Extension: map[string]any{"mimeTypes": []string{ui.MIMEType}}}},
		"clientInfo":   map[string]any{"name": "e2e-apps-host", "version": "1"}})
	if err != nil || m["error"] != nil {
		t.Fatalf("initialize: %v %v", err, m)
	}
	exts, _ := m["result"].(map[string]any)["capabilities"].(map[string]any)["extensions"].(map[string]any)
	if exts[ui.Extension] == nil {
		t.Fatalf("initialize does not declare %s: %v", ui.Extension, m["result"])
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	c.mu.Lock()
	c.stdin.Write(append(b, '\n'))
	c.mu.Unlock()
}

// The graph view shows the tasks' ids and states as the graph runs and when it ends, a
// task's log on click, and a cancel that asks first and then cancels the task.
func TestUI_GraphViewInBrowser(t *testing.T) {
	ctx := newBrowser(t)
	c := startRPC(t, t.TempDir())
	initializeApps(t, c)
	h := newViewHost(t, c)
	args := map[string]any{"name": "ui-demo", "tasks": []any{
		map[string]any{"id": "build", "command": "echo building-it"},
		map[string]any{"id": "test", "command": "echo testing-it", "dependsOn": []string{"build"}},
		map[string]any{"id": "serve", "command": "echo serving-forever; exec sleep 600", "dependsOn": []string{"build"}},
	}}
	run := c.mustTool(t, "tasks_run", args)
	graphID := run["structuredContent"].(map[string]any)["graphId"].(string)
	h.boot(readView(t, c, ui.GraphURI), args, run)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(h.URL+"/")); err != nil {
		t.Fatal(err)
	}
	waitView(t, ctx, "build and test succeeded, serve running",
		`d.querySelector('[data-id="build"][data-state="succeeded"]') && d.querySelector('[data-id="test"][data-state="succeeded"]') && d.querySelector('[data-id="serve"][data-state="running"]')`)
	status := evalView[string](t, ctx, `d.getElementById("status").textContent`)
	if !strings.Contains(status, graphID) || !strings.Contains(status, "running") {
		t.Errorf("status line = %q, want the graph id and running", status)
	}
	// A click shows the task's log tail.
	evalView[bool](t, ctx, `(d.querySelector('[data-id="serve"]').click(), true)`)
	waitView(t, ctx, "serve's log", `(d.getElementById("log")||{}).textContent && d.getElementById("log").textContent.includes("serving-forever")`)
	screenshot(t, ctx, "graph-running")

	// Cancel asks first: the first click only asks.
	evalView[bool](t, ctx, `(d.getElementById("cancel").click(), true)`)
	waitView(t, ctx, "the confirmation", `!!d.getElementById("confirm")`)
	st := c.mustTool(t, "tasks_status", map[string]any{"graphId": graphID, "taskIds": []string{"serve"}, "logTail": 0})
	if s := st["structuredContent"].(map[string]any)["tasks"].([]any)[0].(map[string]any)["status"]; s != "running" {
		t.Fatalf("serve is %v after the first click, want still running: a cancel must be confirmed", s)
	}
	evalView[bool](t, ctx, `(d.getElementById("confirm").click(), true)`)
	waitView(t, ctx, "serve cancelled and the graph ended",
		`d.querySelector('[data-id="serve"][data-state="cancelled"]') && d.getElementById("status").dataset.status === "cancelled"`)
	st = c.mustTool(t, "tasks_status", map[string]any{"graphId": graphID, "logTail": 0})
	sc := st["structuredContent"].(map[string]any)
	if sc["status"] != "cancelled" {
		t.Errorf("graph status after the view's cancel = %v, want cancelled", sc["status"])
	}
	for _, task := range sc["tasks"].([]any) {
		task := task.(map[string]any)
		want := map[string]string{"build": "succeeded", "test": "succeeded", "serve": "cancelled"}[task["id"].(string)]
		if task["status"] != want {
			t.Errorf("task %v is %v, want %s", task["id"], task["status"], want)
		}
	}
	screenshot(t, ctx, "graph-cancelled")
	h.mu.Lock()
	calls := strings.Join(h.calls, ",")
	h.mu.Unlock()
	if !strings.Contains(calls, "tasks_status") || !strings.Contains(calls, "tasks_cancel") {
		t.Errorf("the view's calls through the host = %s, want tasks_status and tasks_cancel", calls)
	}
}

// The terminal view shows what the session printed, in its colours, and its refreshes
// steal nothing: the agent's next read still returns that output.
func TestUI_TerminalViewInBrowser(t *testing.T) {
	ctx := newBrowser(t)
	ws := t.TempDir()
	c := startRPC(t, ws)
	initializeApps(t, c)
	h := newViewHost(t, c)
	goFile := filepath.Join(t.TempDir(), "go")
	args := map[string]any{"command": `echo ready; while [ ! -e ` + goFile + ` ]; do sleep 0.02; done; ` +
		`printf '\033[1;31mRED-ALERT\033[0m hello from the session\n\033[42m ok \033[0m\n'; exec cat`,
		"cols": 60, "rows": 8, "waitFor": "ready", "screen": true}
	open := c.mustTool(t, "shell_open", args)
	sc := open["structuredContent"].(map[string]any)
	id, cursor := sc["sessionId"].(string), sc["cursor"].(float64)
	h.boot(readView(t, c, ui.TerminalURI), args, open)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(h.URL+"/")); err != nil {
		t.Fatal(err)
	}
	waitView(t, ctx, "the first screen", `d.getElementById("screen").textContent.includes("ready")`)
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitView(t, ctx, "the session's coloured line",
		`[...d.querySelectorAll("#screen span")].some((s) => s.textContent === "RED-ALERT" && s.style.color === "rgb(205, 49, 49)" && s.classList.contains("b"))`)
	text := evalView[string](t, ctx, `d.getElementById("screen").textContent`)
	if !strings.Contains(text, "hello from the session") {
		t.Errorf("the view shows %q, want the session's line", text)
	}
	green := evalView[bool](t, ctx, `[...d.querySelectorAll("#screen span")].some((s) => s.textContent === " ok " && s.style.background.includes("13, 188, 121"))`)
	if !green {
		t.Errorf("the green-background cell is not drawn green")
	}
	screenshot(t, ctx, "terminal")
	// The view read with since = end: the agent's cursor is where shell_open left it.
	next := c.mustTool(t, "shell_io", map[string]any{"sessionId": id, "timeoutMs": 5000})
	r := next["structuredContent"].(map[string]any)
	if !strings.Contains(r["output"].(string), "RED-ALERT hello from the session") || r["since"] != cursor {
		t.Errorf("the agent's next read = %q from %v, want the session's line from %v", r["output"], r["since"], cursor)
	}
	h.mu.Lock()
	calls := len(h.calls)
	h.mu.Unlock()
	if calls == 0 {
		t.Errorf("the view made no shell_io call through the host")
	}
}

// BenchmarkUI_Graph1000 is the time from loading the graph view to its drawing a
// finished graph of 1,000 tasks (ten levels of 100), collapsed by depth and state: the
// page, its tools/call of tasks_status through the host (every page of it) and the
// drawing. The share spent in the server's calls is reported as call-ms/op.
func BenchmarkUI_Graph1000(b *testing.B) {
	ctx := newBrowser(b)
	c := startRPC(b, b.TempDir(), "--max-tasks", "2000")
	initializeApps(b, c)
	h := newViewHost(b, c)
	var list []any
	for level := range 10 {
		for i := range 100 {
			task := map[string]any{"id": fmt.Sprintf("t%d-%d", level, i), "command": "true"}
			if level > 0 {
				task["dependsOn"] = []string{fmt.Sprintf("t%d-%d", level-1, i)}
			}
			list = append(list, task)
		}
	}
	args := map[string]any{"name": "thousand", "tasks": list}
	run := c.mustTool(b, "tasks_run", args)
	graphID := run["structuredContent"].(map[string]any)["graphId"].(string)
	// Let the graph finish before timing: the view then draws it once, from its pages.
	c.mustTool(b, "tasks_status", map[string]any{"graphId": graphID, "waitMs": 30000, "logTail": 0})
	h.boot(readView(b, c, ui.GraphURI), args, run)
	b.ResetTimer()
	for b.Loop() {
		if _, err := chromedp.Run(ctx, chromedp.Navigate(h.URL+"/")); err != nil {
			b.Fatal(err)
		}
		waitView(b, ctx, "1,000 succeeded tasks in ten collapsed columns",
			`d.getElementById("status").dataset.status === "succeeded" && d.querySelectorAll(".col").length === 10 && d.querySelectorAll('[data-group$="/succeeded"]').length === 10`)
	}
	b.StopTimer()
	h.mu.Lock()
	b.ReportMetric(float64(h.callTimeNs)/1e6/float64(b.N), "call-ms/op")
	h.mu.Unlock()
	// Readable: ten group buttons, not a thousand boxes; one group expands on click.
	if n := evalView[int](b, ctx, `d.querySelectorAll(".task").length`); n != 0 {
		b.Errorf("%d task boxes drawn at 1,000 tasks, want them collapsed", n)
	}
	evalView[bool](b, ctx, `(d.querySelector('[data-group="4/succeeded"]').click(), true)`)
	waitView(b, ctx, "the expanded group", `d.querySelectorAll(".task").length === 100`)
	screenshot(b, ctx, "graph-1000")
}
