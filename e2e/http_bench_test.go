package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkHTTPvsStdio measures what Streamable HTTP costs against stdio, in one run with
// the transports interleaved (each iteration takes one sample of each, so both see the
// same machine): over HTTP in revision 2026-07-28 (a stateless request, with its headers
// and _meta) and in a 2025-11-25 session (Mcp-Session-Id), both on a kept-alive
// connection with the token of token mode.
//
//   - round-trip: `echo` typed into a bash session and waited for (shell_io with
//     waitFor), an agent's every interactive step;
//   - quick-call: tasks_list, a call that waits for nothing: the transport's own cost;
//   - cold-call: a fresh server process to the first tools/call answered (over stdio
//     initialize and tools/call; over HTTP the start line, then the call, or initialize
//     and the call).
//
// Each reports the median per transport (stdio-ms, http-ms, http-session-ms) and the
// ratios to stdio (http-x, http-session-x).
//
//	go test -run '^$' -bench 'HTTPvsStdio/(round-trip|quick-call)' -benchtime 300x ./e2e/
//	go test -run '^$' -bench 'HTTPvsStdio/cold-call' -benchtime 30x ./e2e/
func BenchmarkHTTPvsStdio(b *testing.B) {
	for _, name := range []string{"round-trip", "quick-call"} {
		roundTrip := name == "round-trip"
		b.Run(name, func(b *testing.B) {
			stdio := startBenchClient(b)
			defer stdio.close()
			stdio.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
			fmt.Fprintln(stdio.stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			h := startBenchHTTP(b, b.TempDir())
			defer h.stop()
			modern, session := h.client(false), h.client(true)

			open := `{"command":"exec bash --norc --noprofile -i","env":{"PS1":"$ "},"waitFor":"\\$ $"}`
			ids := []string{
				sessionIDIn(b, stdio.call("tools/call", `{"name":"shell_open","arguments":`+open+`}`)),
				sessionIDIn(b, modern.callTool("shell_open", open)),
				sessionIDIn(b, session.callTool("shell_open", open)),
			}
			calls := []func(name, args string) string{
				func(name, args string) string {
					return stdio.call("tools/call", `{"name":"`+name+`","arguments":`+args+`}`)
				},
				modern.callTool, session.callTool,
			}
			times := make([][]time.Duration, 3)
			n := 0
			for b.Loop() {
				n++
				for i, call := range calls {
					name, args, want := "tasks_list", `{}`, `"graphs"`
					if roundTrip {
						name, want = "shell_io", `"reason":"matched"`
						args = fmt.Sprintf(`{"sessionId":%q,"input":"echo R$((%d+1))\n","waitFor":"(?m)^R%d\\r?$"}`, ids[i], n, n+1)
					}
					t0 := time.Now()
					line := call(name, args)
					times[i] = append(times[i], time.Since(t0))
					if !strings.Contains(line, want) {
						b.Fatalf("%s over transport %d: %s", name, i, shortText(line, 300))
					}
				}
			}
			reportTransports(b, times)
		})
	}

	b.Run("cold-call", func(b *testing.B) {
		wsStdio, wsHTTP := b.TempDir(), b.TempDir()
		tokenFile := tokenFile(b, b.TempDir(), strings.Repeat("ab", 32))
		times := make([][]time.Duration, 3)
		for b.Loop() {
			d, err := coldCallStdio(wsStdio)
			if err != nil {
				b.Fatal(err)
			}
			times[0] = append(times[0], d)
			for i, legacy := range []bool{false, true} {
				t0 := time.Now()
				h := startBenchHTTPWith(b, wsHTTP, tokenFile)
				c := h.client(legacy)
				if line := c.callTool("shell_list", `{}`); !strings.Contains(line, `"sessions"`) {
					b.Fatalf("the first call: %s", line)
				}
				times[i+1] = append(times[i+1], time.Since(t0))
				h.stop()
			}
		}
		reportTransports(b, times)
	})
}

// reportTransports reports the medians of stdio, HTTP (2026-07-28) and an HTTP session
// (2025-11-25), and the ratios of HTTP's to stdio's.
func reportTransports(b *testing.B, times [][]time.Duration) {
	stdio, modern, session := median(times[0]), median(times[1]), median(times[2])
	b.ReportMetric(stdio, "stdio-ms")
	b.ReportMetric(modern, "http-ms")
	b.ReportMetric(session, "http-session-ms")
	b.ReportMetric(modern/stdio, "http-x")
	b.ReportMetric(session/stdio, "http-session-x")
}

// sessionIDIn is the sessionId in a shell_open answer.
func sessionIDIn(b *testing.B, line string) string {
	_, rest, ok := strings.Cut(line, `"sessionId":"`)
	id, _, ok2 := strings.Cut(rest, `"`)
	if !ok || !ok2 {
		b.Fatalf("shell_open: %s", shortText(line, 300))
	}
	return id
}

// coldCallStdio is the time from spawning `mcp-harness stdio` on ws to the answer of its
// first tools/call (initialize and notifications/initialized first, as a client does).
func coldCallStdio(ws string) (time.Duration, error) {
	cmd := exec.Command(binPath, "stdio", "--workspace", ws, "--log-level", "warn")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	out := bufio.NewReader(stdout)
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`+"\n")
	if line, err := out.ReadString('\n'); err != nil || !strings.Contains(line, `"id":1`) {
		return 0, fmt.Errorf("initialize: %q, %v", line, err)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell_list","arguments":{}}}`+"\n")
	if line, err := out.ReadString('\n'); err != nil || !strings.Contains(line, `"sessions"`) {
		return 0, fmt.Errorf("tools/call: %q, %v", line, err)
	}
	return time.Since(t0), nil
}

// benchHTTP is `mcp-harness http` for the benchmarks, spoken to with as little client
// work as the stdio benchmarks do.
type benchHTTP struct {
	b     *testing.B
	cmd   *exec.Cmd
	url   string
	token string
	http  *http.Client
}

// startBenchHTTP starts a server on ws with a token of its own.
func startBenchHTTP(b *testing.B, ws string) *benchHTTP {
	return startBenchHTTPWith(b, ws, tokenFile(b, b.TempDir(), strings.Repeat("cd", 32)))
}

// startBenchHTTPWith starts a server on ws with the token in tokenFile and returns once
// its start line is out.
func startBenchHTTPWith(b *testing.B, ws, tokenFile string) *benchHTTP {
	cmd := exec.Command(binPath, "http", "--workspace", ws, "--listen", "127.0.0.1:0", "--token-file", tokenFile, "--log-level", "warn")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	h := &benchHTTP{b: b, cmd: cmd, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := startLine.FindStringSubmatch(sc.Text()); m != nil {
			h.url = m[1]
			break
		}
	}
	if h.url == "" {
		cmd.Process.Kill()
		cmd.Wait()
		b.Fatal("mcp-harness http gave no start line")
	}
	go io.Copy(io.Discard, stderr)
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		b.Fatal(err)
	}
	h.token = strings.TrimSpace(string(token))
	return h
}

func (h *benchHTTP) stop() {
	h.http.CloseIdleConnections()
	h.cmd.Process.Signal(syscall.SIGTERM)
	h.cmd.Wait()
}

// benchHTTPClient calls tools on a benchHTTP: statelessly (revision 2026-07-28), or in a
// 2025-11-25 session it opened.
type benchHTTPClient struct {
	h       *benchHTTP
	session string
	id      int
}

func (h *benchHTTP) client(session bool) *benchHTTPClient {
	c := &benchHTTPClient{h: h}
	if session {
		resp := h.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`, nil)
		c.session = resp.Header.Get("Mcp-Session-Id")
		readAnswer(h.b, resp)
		if c.session == "" {
			h.b.Fatal("initialize gave no Mcp-Session-Id")
		}
		readAnswer(h.b, h.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, []string{"Mcp-Session-Id", c.session, "MCP-Protocol-Version", "2025-11-25"}))
	}
	return c
}

const benchMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// callTool calls tool name with args (JSON) and returns the answer's JSON.
func (c *benchHTTPClient) callTool(name, args string) string {
	c.id++
	if c.session != "" {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, c.id, name, args)
		return readAnswer(c.h.b, c.h.post(body, []string{"Mcp-Session-Id", c.session, "MCP-Protocol-Version", "2025-11-25"}))
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":%s}}`, c.id, name, args, benchMeta)
	return readAnswer(c.h.b, c.h.post(body, []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", name}))
}

func (h *benchHTTP) post(body string, headers []string) *http.Response {
	req, err := http.NewRequest(http.MethodPost, h.url, strings.NewReader(body))
	if err != nil {
		h.b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+h.token)
	setHeaders(req, headers)
	resp, err := h.http.Do(req)
	if err != nil {
		h.b.Fatal(err)
	}
	return resp
}

// readAnswer reads an answer whole and returns its last message: a JSON body, or the
// last event of a stream.
func readAnswer(b *testing.B, resp *http.Response) string {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		b.Fatal(err)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return string(body)
	}
	i := bytes.LastIndex(body, []byte("data: "))
	if i < 0 {
		return ""
	}
	line, _, _ := bytes.Cut(body[i+len("data: "):], []byte("\n"))
	return string(line)
}
