package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	creackpty "github.com/creack/pty"
)

// BenchmarkColdStart measures what a user waits for when a client launches the server:
// from spawning the binary to the tools/list answer (initialize first, as a client does),
// and then from closing stdin to the process's exit. Each is reported as a median over the
// run (ms-to-tools-list, ms-to-exit), on an existing workspace and on a fresh one.
//
//	go test -run '^$' -bench ColdStart -benchtime 50x ./e2e/
func BenchmarkColdStart(b *testing.B) {
	for _, fresh := range []bool{false, true} {
		name := "existing-workspace"
		if fresh {
			name = "fresh-workspace"
		}
		b.Run(name, func(b *testing.B) {
			ws := b.TempDir()
			if _, _, err := coldStart(ws); err != nil { // creates the state once
				b.Fatal(err)
			}
			var starts, exits []time.Duration
			for b.Loop() {
				if fresh {
					b.StopTimer()
					ws = b.TempDir()
					b.StartTimer()
				}
				start, exit, err := coldStart(ws)
				if err != nil {
					b.Fatal(err)
				}
				starts, exits = append(starts, start), append(exits, exit)
			}
			b.ReportMetric(median(starts), "ms-to-tools-list")
			b.ReportMetric(median(exits), "ms-to-exit")
		})
	}
}

func coldStart(ws string) (toToolsList, toExit time.Duration, err error) {
	cmd := exec.Command(binPath, "stdio", "--workspace", ws, "--log-level", "warn")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer cmd.Process.Kill()
	out := bufio.NewReader(stdout)
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`+"\n")
	if line, err := out.ReadString('\n'); err != nil || !strings.Contains(line, `"id":1`) {
		return 0, 0, fmt.Errorf("initialize: %q, %v", line, err)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
	if line, err := out.ReadString('\n'); err != nil || !strings.Contains(line, `"tools"`) {
		return 0, 0, fmt.Errorf("tools/list: %q, %v", line, err)
	}
	toToolsList = time.Since(t0)
	t1 := time.Now()
	stdin.Close()
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		return 0, 0, fmt.Errorf("exit: %v", err)
	}
	return toToolsList, time.Since(t1), nil
}

// median in milliseconds.
func median(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[len(s)/2].Microseconds()) / 1000
}

// BenchmarkShellRoundTrip types `echo` into a bash session through the built binary over
// stdio and waits for the echoed value (shell_io with waitFor): what an agent's every
// interactive step costs, shell included. Reported as the median (ms-median) besides ns/op.
//
//	go test -run '^$' -bench ShellRoundTrip -benchtime 200x ./e2e/
func BenchmarkShellRoundTrip(b *testing.B) {
	c := startBenchClient(b)
	defer c.close()
	call := c.call
	call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
	fmt.Fprintln(c.stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	open := call("tools/call", `{"name":"shell_open","arguments":{"command":"exec bash --norc --noprofile -i","env":{"PS1":"$ "},"waitFor":"\\$ $"}}`)
	if !strings.Contains(open, `"sessionId":"s1-1"`) {
		b.Fatalf("shell_open: %s", open)
	}
	var times []time.Duration
	n := 0
	for b.Loop() {
		n++
		t0 := time.Now()
		line := call("tools/call", fmt.Sprintf(`{"name":"shell_io","arguments":{"sessionId":"s1-1","input":"echo R$((%d+1))\n","waitFor":"(?m)^R%d\\r?$"}}`, n, n+1))
		times = append(times, time.Since(t0))
		if !strings.Contains(line, `"reason":"matched"`) {
			b.Fatalf("round trip %d: %s", n, line)
		}
	}
	b.ReportMetric(median(times), "ms-median")
}

// BenchmarkShellBulkOutput runs `head -c 200M | tr` in a session of the built server while
// nobody reads, until the program exits, and reports the server's peak RSS (VmHWM) before
// and after: the ring buffer (4 MiB) bounds what the output costs.
//
//	go test -run '^$' -bench ShellBulkOutput -benchtime 1x ./e2e/
func BenchmarkShellBulkOutput(b *testing.B) {
	const n = 200_000_000
	for b.Loop() {
		c := startBenchClient(b)
		call := c.call
		call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
		before := peakRSS(b, c.cmd.Process.Pid)
		t0 := time.Now()
		call("tools/call", fmt.Sprintf(`{"name":"shell_open","arguments":{"command":"head -c %d /dev/zero | tr '\\\\0' x","timeoutMs":0}}`, n))
		for !strings.Contains(call("tools/call", `{"name":"shell_list","arguments":{}}`), `"exited":true`) {
			time.Sleep(20 * time.Millisecond) // a benchmark's poll: no tool call reads the output
		}
		elapsed := time.Since(t0)
		after := peakRSS(b, c.cmd.Process.Pid)
		c.close()
		b.ReportMetric(float64(n)/elapsed.Seconds()/1e6, "MB/s")
		b.ReportMetric(float64(before)/1024, "peak-MiB-before")
		b.ReportMetric(float64(after)/1024, "peak-MiB-after")
	}
}

// peakRSS reads a process's peak resident set size in KiB.
func peakRSS(b *testing.B, pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.Atoi(f[1])
			return kb
		}
	}
	b.Fatal("no VmHWM")
	return 0
}

// benchClient speaks raw JSON-RPC to the built binary, with as little client-side work as
// possible, so the benchmarks measure the server.
type benchClient struct {
	b     *testing.B
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	id    int
}

func startBenchClient(b *testing.B) *benchClient { return startBenchClientAt(b, binPath) }

func startBenchClientAt(b *testing.B, bin string) *benchClient {
	c := &benchClient{b: b, cmd: exec.Command(bin, "stdio", "--workspace", b.TempDir(), "--log-level", "warn")}
	c.stdin, _ = c.cmd.StdinPipe()
	stdout, _ := c.cmd.StdoutPipe()
	if err := c.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c.out = bufio.NewReaderSize(stdout, 1<<20)
	return c
}

// call sends a request and returns its response line, skipping notifications.
func (c *benchClient) call(method, params string) string {
	c.id++
	fmt.Fprintf(c.stdin, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", c.id, method, params)
	want := fmt.Sprintf(`"id":%d,`, c.id)
	for {
		line, err := c.out.ReadString('\n')
		if err != nil {
			c.b.Fatal(err)
		}
		if strings.Contains(line, want) {
			return line
		}
	}
}

func (c *benchClient) close() {
	c.stdin.Close()
	c.cmd.Wait()
}

// BenchmarkShutdownBusy closes the server's stdin while it runs two tasks and a shell
// session, and measures the time to its exit: the window a client waits before SIGKILL.
// "polite" tasks exit on SIGTERM; a "stubborn" one ignores it and is killed after the 2 s
// grace.
//
//	go test -run '^$' -bench ShutdownBusy -benchtime 5x ./e2e/
func BenchmarkShutdownBusy(b *testing.B) {
	for _, tc := range []struct{ name, command string }{
		{"polite", "sleep 1000"},
		{"stubborn", "trap '' TERM; sleep 1000 & wait; sleep 1000"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var exits []time.Duration
			for b.Loop() {
				c := startBenchClient(b)
				c.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
				c.call("tools/call", fmt.Sprintf(`{"name":"tasks_run","arguments":{"tasks":[{"id":"a","command":%q},{"id":"b","command":"sleep 1000"}]}}`, tc.command))
				c.call("tools/call", `{"name":"shell_open","arguments":{"command":"exec bash --norc -i","timeoutMs":300}}`)
				c.call("tools/call", `{"name":"tasks_list","arguments":{"status":"running"}}`)
				t0 := time.Now()
				c.close()
				exits = append(exits, time.Since(t0))
				if code := c.cmd.ProcessState.ExitCode(); code != 0 {
					b.Fatalf("exit code %d", code)
				}
			}
			b.ReportMetric(median(exits), "ms-to-exit")
		})
	}
}

// BenchmarkShellBulkRead is bench/'s bulk shape: a session's program prints 20 MB of
// 80-byte lines and a marker while the client reads until it exits, as a model would:
// "read" opens the session and reads (shell_io) until the program has exited, "waitFor"
// opens it waiting for the marker line (the whole output goes through the pattern
// matcher). Each round runs, interleaved so that the machine's load falls on all alike:
//
//   - floor: the same program under a bare PTY (creack/pty) read to io.Discard, with no
//     server, emulator or MCP: what the terminal itself costs;
//   - this: the server built from this tree;
//   - old: with MCP_HARNESS_BENCH_OLD naming another build of the server, that build.
//
// It reports the medians in ms (floor-ms, this-ms, old-ms), this-ms over floor-ms from the
// same round (x-floor, median over rounds; old-x-floor likewise) and each server's peak RSS
// over the run (peak-MiB, old-peak-MiB). ns/op is the whole round.
//
//	MCP_HARNESS_BENCH_OLD=/tmp/old go test -run '^$' -bench ShellBulkRead -benchtime 5x ./e2e/
func BenchmarkShellBulkRead(b *testing.B) {
	const n = 20_000_000
	cmd := fmt.Sprintf("yes %s | head -c %d; echo; echo BULK-DONE", strings.Repeat("x", 79), n)
	for _, shape := range []struct{ name, waitFor string }{{"read", ""}, {"waitFor", `(?m)^BULK-DONE\r?$`}} {
		b.Run(shape.name, func(b *testing.B) {
			old := os.Getenv("MCP_HARNESS_BENCH_OLD")
			var floor, this, prev []time.Duration
			var thisX, oldX []float64
			var peak, oldPeak int
			for b.Loop() {
				f := bulkFloor(b, cmd, n)
				floor = append(floor, f)
				d, p := bulkRead(b, binPath, cmd, shape.waitFor)
				this, thisX = append(this, d), append(thisX, float64(d)/float64(f))
				peak = max(peak, p)
				if old != "" {
					d, p := bulkRead(b, old, cmd, shape.waitFor)
					prev, oldX = append(prev, d), append(oldX, float64(d)/float64(f))
					oldPeak = max(oldPeak, p)
				}
			}
			b.ReportMetric(median(floor), "floor-ms")
			b.ReportMetric(median(this), "this-ms")
			b.ReportMetric(medianOf(thisX), "x-floor")
			b.ReportMetric(float64(peak)/1024, "peak-MiB")
			if old != "" {
				b.ReportMetric(median(prev), "old-ms")
				b.ReportMetric(medianOf(oldX), "old-x-floor")
				b.ReportMetric(float64(oldPeak)/1024, "old-peak-MiB")
			}
		})
	}
}

func medianOf(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

// bulkFloor runs command under a bare PTY and reads it to the end, checking that all n
// bytes and the marker came through.
func bulkFloor(b *testing.B, command string, n int) time.Duration {
	t0 := time.Now()
	c := exec.Command("/bin/sh", "-c", command)
	master, err := creackpty.Start(c)
	if err != nil {
		b.Fatal(err)
	}
	var tail [64]byte
	got := 0
	buf := make([]byte, 64<<10)
	for {
		k, err := master.Read(buf)
		got += k
		if k >= len(tail) {
			copy(tail[:], buf[k-len(tail):k])
		} else {
			copy(tail[:], append(tail[k:], buf[:k]...))
		}
		if err != nil { // EIO: the program and everything it started are gone
			break
		}
	}
	master.Close()
	_ = c.Wait()
	if d := time.Since(t0); got < n || !strings.Contains(string(tail[:]), "BULK-DONE") {
		b.Fatalf("floor read %d bytes ending %q, want more than %d and the marker", got, tail, n)
	} else {
		return d
	}
	return 0
}

// bulkRead opens a session of the server at bin running command and reads until it
// exits, or with waitFor until that matches; it returns the time taken and the server's
// peak RSS in KiB.
func bulkRead(b *testing.B, bin, command, waitFor string) (time.Duration, int) {
	c := startBenchClientAt(b, bin)
	defer c.close()
	c.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
	t0 := time.Now()
	if waitFor != "" {
		line := c.call("tools/call", fmt.Sprintf(`{"name":"shell_open","arguments":{"command":%q,"waitFor":%q,"timeoutMs":60000}}`, command, waitFor))
		if !strings.Contains(line, `"reason":"matched"`) {
			b.Fatalf("waitFor did not match: %.300s", line)
		}
		return time.Since(t0), peakRSS(b, c.cmd.Process.Pid)
	}
	line := c.call("tools/call", fmt.Sprintf(`{"name":"shell_open","arguments":{"command":%q,"timeoutMs":30000}}`, command))
	var resp struct {
		Result struct {
			StructuredContent struct {
				SessionID string `json:"sessionId"`
				Exited    bool   `json:"exited"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &resp); err != nil {
		b.Fatal(err)
	}
	id := resp.Result.StructuredContent.SessionID
	for !resp.Result.StructuredContent.Exited {
		line = c.call("tools/call", fmt.Sprintf(`{"name":"shell_io","arguments":{"sessionId":%q,"timeoutMs":30000}}`, id))
		if err := json.Unmarshal([]byte(line), &resp); err != nil {
			b.Fatal(err)
		}
	}
	d := time.Since(t0)
	return d, peakRSS(b, c.cmd.Process.Pid)
}
