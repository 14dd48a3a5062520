package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcp-harness/mcp-harness/internal/operator"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
)

// Benchmarks of watching: how soon a viewer sees what a program printed, and what five
// viewers cost the agent's round trip. The viewers are the operator protocol's clients in
// this process (what `attach` is, without painting a terminal), against the built server.

// startViewer attaches a viewer to session id of the server on ws and returns its
// connection, the first frame read.
func startViewer(b *testing.B, ws, id string) *operator.Client {
	b.Helper()
	dir := filepath.Join(ws, workspace.StateDirName)
	eps, err := operator.Endpoints(dir)
	if err != nil || len(eps) == 0 {
		b.Fatalf("no server socket in %s: %v", dir, err)
	}
	c, err := operator.Dial(dir, eps[0])
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if _, err := c.Call(operator.Request{Op: operator.OpAttach, Session: id, Cols: 120, Rows: 40}); err != nil {
		b.Fatal(err)
	}
	if r, err := c.Recv(); err != nil || r.Frame == nil {
		b.Fatalf("first frame: %+v, %v", r, err)
	}
	return c
}

// startRawIn is startRaw on workspace ws.
func startRawIn(b *testing.B, ws string) *rawClient {
	b.Helper()
	cmd := exec.Command(binPath, "stdio", "--workspace", ws, "--log-level", "warn")
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

// procCPU is the CPU time (user and system) process pid has used so far.
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

func monotonicNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

var stampLine = regexp.MustCompile(`T(\d{6,})`)

// BenchmarkAttach_OutputToViewer is the latency from a program's output to an attached
// viewer: the program prints the monotonic clock every 20 ms, the viewer notes the clock
// when a frame shows a new line; one frame an op. Reported as the median and the 95th
// percentile (target: under 20 ms).
//
//	go test -run '^$' -bench Attach_OutputToViewer -benchtime 200x -count 5 ./e2e/
func BenchmarkAttach_OutputToViewer(b *testing.B) {
	if _, err := exec.LookPath("python3"); err != nil {
		b.Skip("python3 is not installed")
	}
	ws := b.TempDir()
	c := startRawIn(b, ws)
	program := `python3 -u -c 'import time
while True:
    print("T%d" % time.monotonic_ns(), flush=True)
    time.sleep(0.02)'`
	id := c.tool(b, "shell_open", map[string]any{"command": program, "waitFor": `T\d+`, "timeoutMs": 20000})["sessionId"].(string)
	v := startViewer(b, ws, id)
	var lags []time.Duration
	var newest int64
	var screen []string
	for b.Loop() {
		for {
			r, err := v.Recv()
			now := monotonicNow()
			if err != nil {
				b.Fatal(err)
			}
			if r.Frame == nil {
				continue
			}
			screen = r.Frame.Apply(screen)
			var stamp int64
			for _, m := range stampLine.FindAllStringSubmatch(strings.Join(screen, "\n"), -1) {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				stamp = max(stamp, n)
			}
			if stamp > newest {
				newest = stamp
				lags = append(lags, time.Duration(now-stamp))
				break
			}
		}
	}
	slices.Sort(lags)
	b.ReportMetric(float64(lags[len(lags)/2])/1e6, "ms-median")
	b.ReportMetric(float64(lags[len(lags)*95/100])/1e6, "ms-p95")
}

// BenchmarkAttach_RoundTripWithViewers is the agent's round trip (shell_io typing echo and
// waiting for its output, as BenchmarkShellRoundTrip) on a session nobody watches and on
// one that five viewers watch, each reading every frame (target: five cost at most 1.1x).
// The two servers run side by side and take turns, one round trip each an op, so a load
// that comes and goes on the machine weighs on both alike. Reported: the median of each,
// their ratio, and each server's CPU time an op.
//
//	go test -run '^$' -bench Attach_RoundTripWithViewers -benchtime 1000x -count 5 ./e2e/
func BenchmarkAttach_RoundTripWithViewers(b *testing.B) {
	type side struct {
		c     *rawClient
		id    string
		n     int
		times []time.Duration
		cpu0  time.Duration
	}
	var sides [2]*side
	done := make(chan struct{})
	const viewers = 5
	for i := range sides {
		ws := b.TempDir()
		c := startRawIn(b, ws)
		id := c.tool(b, "shell_open", map[string]any{"command": "exec bash --norc --noprofile -i", "env": map[string]any{"PS1": "$ "},
			"waitFor": `\$ $`, "timeoutMs": 20000})["sessionId"].(string)
		sides[i] = &side{c: c, id: id}
		if i == 1 {
			for range viewers {
				v := startViewer(b, ws, id)
				go func() {
					defer func() { done <- struct{}{} }()
					for {
						if _, err := v.Recv(); err != nil {
							return
						}
					}
				}()
			}
		}
	}
	for _, sd := range sides {
		sd.cpu0 = procCPU(b, sd.c.cmd.Process.Pid)
	}
	for b.Loop() {
		for i, sd := range sides {
			sd.n++
			t0 := time.Now()
			r := sd.c.tool(b, "shell_io", map[string]any{"sessionId": sd.id, "input": fmt.Sprintf("echo R$((%d+1))\n", sd.n), "waitFor": fmt.Sprintf(`(?m)^R%d\r?$`, sd.n+1), "timeoutMs": 20000})
			sd.times = append(sd.times, time.Since(t0))
			if want := float64(i * viewers); r["reason"] != "matched" || r["viewers"] != want {
				b.Fatalf("round trip %d: reason %v, viewers %v; want matched, %v", sd.n, r["reason"], r["viewers"], want)
			}
		}
	}
	m0, m5 := median(sides[0].times), median(sides[1].times)
	b.ReportMetric(m0, "ms-median-0")
	b.ReportMetric(m5, "ms-median-5")
	b.ReportMetric(m5/m0, "ratio-5/0")
	for i, sd := range sides {
		cpu := procCPU(b, sd.c.cmd.Process.Pid) - sd.cpu0
		b.ReportMetric(float64(cpu)/float64(time.Microsecond)/float64(sd.n), fmt.Sprintf("server-cpu-us/op-%d", i*viewers))
	}
	b.StopTimer()
	sides[1].c.in.Close()
	for range viewers {
		<-done
	}
}
