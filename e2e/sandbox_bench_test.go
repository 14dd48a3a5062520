package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sandboxVariant is a server configuration: its label and its extra arguments.
type sandboxVariant struct {
	name string
	args []string
}

// sandboxVariants are the server configurations the sandbox benchmarks compare, each a
// fresh server with the default arguments but these: on (the default, workspace-write),
// off, and the default with the network off (the seccomp filter too).
var sandboxVariants = []sandboxVariant{
	{"on", nil},
	{"off", []string{"--sandbox", "off"}},
	{"network-off", []string{"--network", "off"}},
}

// sandboxRounds runs one step against each variant's server per iteration, in an order
// that rotates from one iteration to the next, so that the machine's load falls on all
// alike (-count repeats a sub-benchmark in place, it does not alternate them). It
// reports each variant's median and mean step in ms (on-ms, on-mean-ms, ...) and each
// confined variant's median over rounds of its time over off's in the same round (on/off,
// network-off/off: the target is at most 1.1). ns/op is a whole round.
func sandboxRounds(b *testing.B, per float64, step func(b *testing.B, c *rawClient)) {
	clients := make([]*rawClient, len(sandboxVariants))
	for i, v := range sandboxVariants {
		clients[i] = startRawArgs(b, v.name, v.args...)
		wantSandbox(b, clients[i], v.name)
		step(b, clients[i]) // warm: the first step pays for loading programs and pages
	}
	off := slices.IndexFunc(sandboxVariants, func(v sandboxVariant) bool { return v.name == "off" })
	times := make([][]time.Duration, len(sandboxVariants))
	ratios := make([][]float64, len(sandboxVariants))
	round := 0
	for b.Loop() {
		took := make([]time.Duration, len(sandboxVariants))
		for k := range sandboxVariants {
			i := (round + k) % len(sandboxVariants)
			t0 := time.Now()
			step(b, clients[i])
			took[i] = time.Since(t0)
			times[i] = append(times[i], took[i])
		}
		for i := range sandboxVariants {
			ratios[i] = append(ratios[i], float64(took[i])/float64(took[off]))
		}
		round++
	}
	for i, v := range sandboxVariants {
		b.ReportMetric(median(times[i])/per, v.name+"-ms")
		b.ReportMetric(mean(times[i])/per, v.name+"-mean-ms")
		if i != off {
			b.ReportMetric(medianOf(ratios[i]), v.name+"/off")
		}
	}
}

// mean in milliseconds.
func mean(ds []time.Duration) float64 {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return float64(sum.Microseconds()) / 1000 / float64(max(len(ds), 1))
}

// BenchmarkSandbox_TaskStart is what the sandbox adds to a task's start, the way a client
// sees it: a tasks_run of one `true` task, then tasks_status waiting until it ends, on a
// server with the sandbox on (the default), off, and with the network off.
//
//	go test -run '^$' -bench 'Sandbox_TaskStart' -benchtime 300x -count 3 ./e2e/
func BenchmarkSandbox_TaskStart(b *testing.B) {
	sandboxRounds(b, 1, func(b *testing.B, c *rawClient) {
		taskStartOnce(b, c, []any{map[string]any{"id": "t", "command": "true"}})
	})
}

// BenchmarkSandbox_TaskGraph is the same for a graph of 20 independent `true` tasks,
// started as the server's --max-parallel (default 2) lets them: the *-ms figures are per
// task, the sandbox's cost on a task among many.
//
//	go test -run '^$' -bench 'Sandbox_TaskGraph' -benchtime 30x -count 3 ./e2e/
func BenchmarkSandbox_TaskGraph(b *testing.B) {
	const n = 20
	graph := make([]any, n)
	for i := range graph {
		graph[i] = map[string]any{"id": fmt.Sprintf("t%d", i), "command": "true"}
	}
	sandboxRounds(b, n, func(b *testing.B, c *rawClient) { taskStartOnce(b, c, graph) })
}

// taskStartOnce runs a graph of tasks and waits until it has succeeded.
func taskStartOnce(b *testing.B, c *rawClient, tasks []any) {
	run := c.tool(b, "tasks_run", map[string]any{"tasks": tasks})
	graphID := run["graphId"].(string)
	for {
		st := c.tool(b, "tasks_status", map[string]any{"graphId": graphID, "waitMs": 20000, "logTail": 1})
		switch st["status"] {
		case "running":
			continue
		case "succeeded":
			return
		}
		b.Fatalf("graph %s = %v", graphID, st["status"])
	}
}

// BenchmarkSandbox_ShellOpen is what the sandbox adds to a terminal session's start:
// shell_open of an interactive bash until its first prompt (bash), or of `true` until it
// exits (true), then shell_close. The shell's home is empty, so no rc file runs.
//
//	go test -run '^$' -bench 'Sandbox_ShellOpen' -benchtime 100x -count 3 ./e2e/
func BenchmarkSandbox_ShellOpen(b *testing.B) {
	if _, err := exec.LookPath("bash"); err != nil {
		b.Skip("bash is not installed")
	}
	home := b.TempDir()
	shapes := []struct {
		name   string
		args   map[string]any
		reason string
	}{
		{"bash", map[string]any{"command": "bash", "env": map[string]any{"HOME": home}, "timeoutMs": 20000}, "prompt"},
		{"true", map[string]any{"command": "true", "timeoutMs": 20000}, "exited"},
	}
	for _, shape := range shapes {
		b.Run(shape.name, func(b *testing.B) {
			sandboxRounds(b, 1, func(b *testing.B, c *rawClient) {
				open := c.tool(b, "shell_open", shape.args)
				if open["reason"] != shape.reason {
					b.Fatalf("shell_open %v = reason %v, want %s", shape.args, open["reason"], shape.reason)
				}
				c.tool(b, "shell_close", map[string]any{"sessionId": open["sessionId"]})
			})
		})
	}
}

// wantSandbox fails the benchmark unless its server confines as the variant says: a
// benchmark of a sandbox that degraded to off would compare off with off.
func wantSandbox(b *testing.B, c *rawClient, variant string) {
	b.Helper()
	run := c.tool(b, "tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "probe", "command": "true"}}})
	st := c.tool(b, "tasks_status", map[string]any{"graphId": run["graphId"], "waitMs": 20000})
	tasks, _ := st["tasks"].([]any)
	if len(tasks) != 1 {
		b.Fatalf("tasks_status = %v", st)
	}
	sb, _ := tasks[0].(map[string]any)["sandbox"].(map[string]any)
	want := map[string][2]string{"on": {"workspace-write", "on"}, "off": {"off", "on"}, "network-off": {"workspace-write", "off"}}[variant]
	if sb["mode"] != want[0] || sb["network"] != want[1] {
		b.Fatalf("%s: the task's sandbox is %v, want mode %s network %s", variant, sb, want[0], want[1])
	}
}

// startRawArgs is startRaw with the server's extra arguments. MCP_HARNESS_BENCH_WRAP
// runs each server under a command prefix instead, to see where the time goes: every
// {name} in it becomes the benchmark's name, the server's label and a unique number, e.g.
//
//	MCP_HARNESS_BENCH_WRAP='strace -c -f -o /tmp/st/{name}' go test -run '^$' -bench Sandbox_TaskStart ...
//	MCP_HARNESS_BENCH_WRAP='perf record -e cpu-clock -g -o /tmp/perf/{name}' go test ...
func startRawArgs(b *testing.B, label string, args ...string) *rawClient {
	b.Helper()
	argv := append([]string{binPath, "stdio", "--workspace", b.TempDir(), "--log-level", "warn"}, args...)
	if wrap := strings.Fields(os.Getenv("MCP_HARNESS_BENCH_WRAP")); len(wrap) > 0 {
		name := strings.ReplaceAll(b.Name(), "/", "_") + "-" + label + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		for i, w := range wrap {
			wrap[i] = strings.ReplaceAll(w, "{name}", name)
		}
		argv = append(wrap, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
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
	c := &rawClient{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	b.Cleanup(func() {
		// The server exits at the end of its input, and a wrapper then writes its report.
		in.Close()
		kill := time.AfterFunc(e2eWait, func() { cmd.Process.Kill() })
		defer kill.Stop()
		io.Copy(io.Discard, c.out)
		cmd.Wait()
	})
	c.request(b, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "bench", "version": "1"}})
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	in.Write(append(msg, '\n'))
	return c
}
