package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpServer is the built binary run as `mcp-harness http` on a free loopback port,
// spoken to with net/http (raw messages, to see statuses and headers) or the official
// Go SDK's client.
type httpServer struct {
	t      *testing.T
	cmd    *exec.Cmd
	ws     string
	url    string // the endpoint, from the start line
	token  string // token mode's, read from the file the start line names
	stderr *lockedBuffer
	exited chan struct{}
	state  *os.ProcessState
}

// startLine is what `mcp-harness http` prints once it listens.
var startLine = regexp.MustCompile(`(?m)^mcp-harness: serving MCP at (\S+) \(auth: (.*)\)$`)

// startHTTP runs `mcp-harness http --workspace ws --listen 127.0.0.1:0 --log-level info
// args...` and waits for its start line; in token mode it reads the token from the file
// the line names.
func startHTTP(t *testing.T, ws string, args ...string) *httpServer {
	t.Helper()
	if ws == "" {
		ws = t.TempDir()
	}
	args = append([]string{"http", "--workspace", ws, "--listen", "127.0.0.1:0", "--log-level", "info"}, args...)
	s := &httpServer{t: t, ws: ws, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(binPath, args...)
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.cmd.Wait()
		s.state = s.cmd.ProcessState
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			s.cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("http server stderr:\n%s", s.stderr)
		}
	})
	deadline := time.After(e2eWait)
	for {
		if m := startLine.FindStringSubmatch(s.stderr.String()); m != nil {
			s.url = m[1]
			if file, ok := strings.CutPrefix(m[2], "the bearer token in "); ok {
				b, err := os.ReadFile(file)
				if err != nil {
					t.Fatalf("the start line names %s: %v", file, err)
				}
				s.token = strings.TrimSpace(string(b))
			}
			return s
		}
		select {
		case <-s.exited:
			t.Fatalf("mcp-harness http exited (%v) before it listened:\n%s", s.state, s.stderr)
		case <-deadline:
			t.Fatalf("no start line within %v:\n%s", e2eWait, s.stderr)
		case <-time.After(10 * time.Millisecond): // polling the child's stderr for its start line
		}
	}
}

// stop sends SIGTERM and returns the exit code once the server is gone.
func (s *httpServer) stop() int {
	s.t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	return s.waitExit()
}

func (s *httpServer) waitExit() int {
	s.t.Helper()
	select {
	case <-s.exited:
	case <-time.After(e2eWait):
		s.t.Fatalf("http server still running %v after it was asked to stop", e2eWait)
	}
	return s.state.ExitCode()
}

// modernMeta is the _meta of a request of revision 2026-07-28.
func modernMeta() map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "e2e-http", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
}

// reply is an HTTP answer: its status and headers, and the JSON-RPC messages it carried
// (one for a JSON answer, each event's for a stream).
type reply struct {
	status int
	header http.Header
	body   []byte
	msgs   []map[string]any
}

// last is the reply's last message, which answers the request; nil for none.
func (r reply) last() map[string]any {
	if len(r.msgs) == 0 {
		return nil
	}
	return r.msgs[len(r.msgs)-1]
}

// errorCode is the JSON-RPC error code of the reply's answer, 0 for none.
func (r reply) errorCode() int {
	e, _ := r.last()["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return int(code)
}

// post sends body (a message, marshalled unless it is []byte or string) with the
// server's token and the headers given (name, value pairs; a value of "" removes the
// header), and reads the whole answer.
func (s *httpServer) post(ctx context.Context, body any, headers ...string) reply {
	s.t.Helper()
	var b []byte
	switch v := body.(type) {
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			s.t.Fatal(err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(b))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	setHeaders(req, headers)
	return s.do(req)
}

// setHeaders sets name, value pairs on req; "" removes the header.
func setHeaders(req *http.Request, headers []string) {
	for i := 0; i+1 < len(headers); i += 2 {
		if strings.EqualFold(headers[i], "Host") {
			req.Host = headers[i+1]
			continue
		}
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
}

// do sends req and reads the answer whole, decoding a JSON body or an event stream.
func (s *httpServer) do(req *http.Request) reply {
	s.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode, header: resp.Header}
	if r.body, err = io.ReadAll(resp.Body); err != nil {
		s.t.Fatalf("reading the answer: %v", err)
	}
	switch ct := resp.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "text/event-stream"):
		sc := bufio.NewScanner(bytes.NewReader(r.body))
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					s.t.Fatalf("an event that is not JSON: %q", data)
				}
				r.msgs = append(r.msgs, m)
			}
		}
	case len(bytes.TrimSpace(r.body)) > 0 && strings.HasPrefix(ct, "application/json"):
		var m map[string]any
		if err := json.Unmarshal(r.body, &m); err != nil {
			s.t.Fatalf("a JSON answer that does not decode: %q", r.body)
		}
		r.msgs = []map[string]any{m}
	}
	return r
}

// call sends a tools/call of revision 2026-07-28 (no session) with the headers it needs
// and returns its result, checked against the tool's output schema as over stdio.
func (s *httpServer) call(name string, args map[string]any) map[string]any {
	s.t.Helper()
	r := s.post(s.t.Context(), map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args, "_meta": modernMeta()}},
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", name)
	res, ok := r.last()["result"].(map[string]any)
	if r.status != http.StatusOK || !ok {
		s.t.Fatalf("%s: %d %s", name, r.status, r.body)
	}
	checkToolResult(s.t, name, res, defaultMaxResult)
	return res
}

// defaultMaxResult is --max-result's default, which these servers run with.
const defaultMaxResult = 32 << 10

// goSDK connects the official Go SDK's client over Streamable HTTP with the server's
// token (or header, when set: the Authorization value), speaking version (the SDK's
// newest, 2026-07-28, when "").
func (s *httpServer) goSDK(ctx context.Context, version, authorization string, opts *sdk.ClientOptions) (*sdk.ClientSession, error) {
	if authorization == "" && s.token != "" {
		authorization = "Bearer " + s.token
	}
	transport := &sdk.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: withHeader{"Authorization", authorization}}}
	client := sdk.NewClient(&sdk.Implementation{Name: "e2e-go-sdk", Version: "1"}, opts)
	return client.Connect(ctx, transport, &sdk.ClientSessionOptions{ProtocolVersion: version})
}

// withHeader sets a header on every request it sends.
type withHeader struct{ name, value string }

func (h withHeader) RoundTrip(req *http.Request) (*http.Response, error) {
	if h.value != "" {
		req = req.Clone(req.Context())
		req.Header.Set(h.name, h.value)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// sdkCall calls a tool through the Go SDK and checks the result against its output
// schema, as every result a test receives is.
func sdkCall(t *testing.T, ctx context.Context, cs *sdk.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	checkToolResult(t, name, m, defaultMaxResult)
	return m
}

// progressLog collects the progress notifications a client receives.
type progressLog struct {
	mu    sync.Mutex
	notes []string
}

func (p *progressLog) add(msg string) {
	p.mu.Lock()
	p.notes = append(p.notes, msg)
	p.mu.Unlock()
}

func (p *progressLog) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.notes)
}

// tokenFile writes token to a 0600 file in dir and returns its path.
func tokenFile(t testing.TB, dir, token string) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("token-%d", time.Now().UnixNano()))
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
