package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawClient speaks JSON-RPC lines to the built binary and counts what comes back: the
// bytes a client receives are what a model's context pays for.
type rawClient struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	id    int
	calls int
	bytes int
}

func startRaw(b *testing.B) *rawClient {
	b.Helper()
	cmd := exec.Command(binPath, "stdio", "--workspace", b.TempDir(), "--log-level", "warn")
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := newRawClient(cmd, in, out)
	b.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	c.request(b, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "bench", "version": "1"}})
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return c
}

func newRawClient(cmd *exec.Cmd, in io.WriteCloser, out io.Reader) *rawClient {
	return &rawClient{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
}

func (c *rawClient) request(b *testing.B, method string, params any) map[string]any {
	b.Helper()
	c.id++
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if _, err := c.in.Write(append(msg, '\n')); err != nil {
		b.Fatal(err)
	}
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			b.Fatalf("%s: %v", method, err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			b.Fatalf("%s: %q", method, line)
		}
		if id, _ := m["id"].(float64); int(id) == c.id {
			return m
		}
	}
}

// tool calls a tool, counting the call and the bytes of its response, and returns the
// structured result.
func (c *rawClient) tool(b *testing.B, name string, args map[string]any) map[string]any {
	b.Helper()
	c.calls++
	before := c.id
	m := c.request(b, "tools/call", map[string]any{"name": name, "arguments": args})
	line, _ := json.Marshal(m)
	c.bytes += len(line) + 1
	res, _ := m["result"].(map[string]any)
	if res == nil || res["isError"] == true || c.id != before+1 {
		b.Fatalf("%s(%v) = %v", name, args, m)
	}
	sc, _ := res["structuredContent"].(map[string]any)
	return sc
}

// BenchmarkShellStep is the agent's commonest step in a terminal: run a command, get its
// output and its exit code. It counts tool calls and response bytes per step, the way an
// agent does it today (input + waitFor on the prompt, then echo $? for the status, or one
// call with a status sentinel it must think of and parse) against run.
//
//	go test -run '^$' -bench ShellStep -benchtime 20x ./e2e/
func BenchmarkShellStep(b *testing.B) {
	const prompt = `(?m)^PROMPT> $`
	steps := []string{"ls -la /usr/bin | head -40", "git status", "false"}
	ways := []struct {
		name string
		step func(b *testing.B, c *rawClient, id, line string) (out string, code int)
	}{
		{"input+waitFor+echo$?", func(b *testing.B, c *rawClient, id, line string) (string, int) {
			r := c.tool(b, "shell_io", map[string]any{"sessionId": id, "input": line + "\n", "waitFor": prompt, "timeoutMs": 20000})
			s := c.tool(b, "shell_io", map[string]any{"sessionId": id, "input": "echo $?\n", "waitFor": `(?m)^\d+\s*\n` + prompt[4:], "timeoutMs": 20000})
			code, _ := strconv.Atoi(strings.TrimSpace(strings.Split(s["output"].(string), "\n")[1]))
			return r["output"].(string), code
		}},
		{"input+waitFor-sentinel", func(b *testing.B, c *rawClient, id, line string) (string, int) {
			r := c.tool(b, "shell_io", map[string]any{"sessionId": id, "input": line + "; echo \"EXIT=$?\"\n", "waitFor": `(?m)^EXIT=\d+`, "timeoutMs": 20000})
			m := regexp.MustCompile(`(?m)^EXIT=(\d+)`).FindStringSubmatch(r["output"].(string))
			code, _ := strconv.Atoi(m[1])
			return r["output"].(string), code
		}},
		{"run", func(b *testing.B, c *rawClient, id, line string) (string, int) {
			r := c.tool(b, "shell_io", map[string]any{"sessionId": id, "run": line, "timeoutMs": 20000})
			cmd := r["command"].(map[string]any)
			return r["output"].(string), int(cmd["exitCode"].(float64))
		}},
	}
	for _, way := range ways {
		b.Run(way.name, func(b *testing.B) {
			c := startRaw(b)
			home := b.TempDir()
			// The same shell for every way: bash whose prompt is PROMPT> (the rc sets it, so
			// integration, on by default, does not change it).
			os.WriteFile(filepath.Join(home, ".bashrc"), []byte("PS1='PROMPT> '\n"), 0o600)
			id := c.tool(b, "shell_open", map[string]any{"command": "bash", "env": map[string]any{"HOME": home}, "waitFor": prompt, "timeoutMs": 20000})["sessionId"].(string)
			c.calls, c.bytes = 0, 0
			n := 0
			for b.Loop() {
				for _, line := range steps {
					_, code := way.step(b, c, id, line)
					if want := map[string]int{"false": 1, "git status": 128}[line]; code != want {
						b.Fatalf("%s: exit code %d, want %d", line, code, want)
					}
					n++
				}
			}
			b.ReportMetric(float64(c.calls)/float64(n), "calls/step")
			b.ReportMetric(float64(c.bytes)/float64(n), "bytes/step")
		})
	}
}

// BenchmarkNoticeQuestion measures how soon a call returns once a program blocks reading
// its terminal: the program writes the time just before it reads, the client notes when
// the answer arrives. Reported as the median and the worst of the run.
//
//	go test -run '^$' -bench NoticeQuestion -benchtime 20x ./e2e/
func BenchmarkNoticeQuestion(b *testing.B) {
	py, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		b.Skip("python3:", err)
	}
	c := startRaw(b)
	id := c.tool(b, "shell_open", map[string]any{"command": "bash", "env": map[string]any{"HOME": b.TempDir()}, "timeoutMs": 20000})["sessionId"].(string)
	stamp := filepath.Join(b.TempDir(), "blocked-at")
	// The time is taken after the question is flushed, right before the read.
	program := fmt.Sprintf(`%s -c 'import sys,time; sys.stdout.write("Continue? [y/N] "); sys.stdout.flush(); open(%q,"w").write(str(time.time_ns())); input()'`,
		strings.TrimSpace(string(py)), stamp)
	var lags []time.Duration
	for b.Loop() {
		r := c.tool(b, "shell_io", map[string]any{"sessionId": id, "run": program, "timeoutMs": 20000})
		got := time.Now()
		if r["reason"] != "input" {
			b.Fatalf("reason %v, want input", r["reason"])
		}
		raw, err := os.ReadFile(stamp)
		ns, _ := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || ns == 0 {
			b.Fatalf("no time stamp: %v", err)
		}
		lags = append(lags, got.Sub(time.Unix(0, ns)))
		c.tool(b, "shell_io", map[string]any{"sessionId": id, "input": "n\n", "timeoutMs": 20000})
	}
	b.ReportMetric(median(lags), "ms-median")
	worst := time.Duration(0)
	for _, l := range lags {
		worst = max(worst, l)
	}
	b.ReportMetric(float64(worst)/float64(time.Millisecond), "ms-max")
}
