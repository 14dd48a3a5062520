//go:build e2e && linux

package e2e

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// BenchmarkKube_Tasks measures a graph of 40 independent `true` tasks through the server
// on each executor: tasks a second (submit to the graph's end), and the server's CPU time
// per task, its remote helper's included (the Kubernetes client runs there: internal/remote). The pods' own processes run on this machine too, under the test cluster's
// nodes, and are not the server's; remote tasks are bounded by --kube-max-pods 16, local
// ones by the CPU count. Needs the test cluster (see kube_e2e_test.go):
//
//	go test -tags e2e -run '^$' -bench Kube_Tasks -benchtime 3x ./e2e/
func BenchmarkKube_Tasks(b *testing.B) {
	kubeconfig, ns := os.Getenv("KUBECONFIG"), os.Getenv("TESTCLUSTER_NAMESPACE")
	if kubeconfig == "" || ns == "" {
		b.Skip("no test cluster: start one with e2e/cluster/build.sh && e2e/cluster/up.sh, then set -a; . $TESTCLUSTER_RUN/env; set +a")
	}
	const n = 40
	var list []any
	for i := range n {
		list = append(list, map[string]any{"id": "t" + strconv.Itoa(i), "command": "true"})
	}
	for _, executor := range []string{"local", "kubernetes"} {
		b.Run(executor, func(b *testing.B) {
			cmd := exec.Command(binPath, "stdio", "--workspace", b.TempDir(), "--log-level", "warn",
				"--kube-config", kubeconfig, "--kube-namespace", ns, "--kube-max-pods", "16")
			in, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			stderr := &lockedBuffer{} // the server's warnings, shown when a graph fails
			cmd.Stderr = stderr
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			c := newRawClient(cmd, in, out)
			b.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
			c.request(b, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
				"clientInfo": map[string]any{"name": "bench", "version": "1"}})
			io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
			var wall, cpu time.Duration
			for b.Loop() {
				cpu0 := serverCPU(b, cmd.Process.Pid)
				t0 := time.Now()
				graphID := c.tool(b, "tasks_run", map[string]any{"executor": executor, "maxParallel": n, "tasks": list})["graphId"].(string)
				for {
					st := c.tool(b, "tasks_status", map[string]any{"graphId": graphID, "waitMs": 20000, "logTail": 0})
					if st["status"] == "running" {
						continue
					}
					if st["status"] != "succeeded" {
						// Failed tasks come first, with how they ended and their log.
						st = c.tool(b, "tasks_status", map[string]any{"graphId": graphID, "logTail": 2000})
						for _, x := range st["tasks"].([]any) {
							if tk := x.(map[string]any); tk["status"] != "succeeded" {
								b.Errorf("task %v %v: %v %v on pod %v node %v, log %v", tk["id"], tk["status"], tk["errorCode"], tk["message"], tk["pod"], tk["node"], tk["log"])
							}
						}
						b.Fatalf("graph %v: %v; server stderr:\n%s", st["status"], st["progress"], stderr)
					}
					break
				}
				wall += time.Since(t0)
				cpu += serverCPU(b, cmd.Process.Pid) - cpu0
			}
			runs := float64(b.N)
			b.ReportMetric(float64(n)*runs/wall.Seconds(), "tasks/s")
			b.ReportMetric(float64(cpu.Microseconds())/1000/(float64(n)*runs), "server-cpu-ms/task")
			b.Logf("%s: %d tasks in %s a graph, server CPU %s a graph", executor, n,
				(wall / time.Duration(b.N)).Round(time.Millisecond), (cpu / time.Duration(b.N)).Round(time.Millisecond))
		})
	}
}

// serverCPU is the CPU time of the server and of the remote helper it runs.
func serverCPU(b *testing.B, pid int) time.Duration {
	cpu := procCPU(b, pid)
	for _, h := range helperChildren(b, pid) {
		cpu += procCPU(b, h)
	}
	return cpu
}
