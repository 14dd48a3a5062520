package tools

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// BenchmarkTasksStatusTail answers tasks_status with a 1 KiB log tail for a task whose log
// is 1 KiB and for one whose log is 1 GiB (sparse but for its last KiB, so both answers
// carry the same text): the tail is read by seeking, so both should cost the same.
//
//	go test -run '^$' -bench TasksStatusTail ./tools/
func BenchmarkTasksStatusTail(b *testing.B) {
	for _, size := range []int64{1 << 10, 1 << 30} {
		b.Run(fmt.Sprintf("log-%dB", size), func(b *testing.B) {
			s := newBenchServer(b)
			id := structuredB(b, s, "tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "t", "command": "true"}}})["graphId"].(string)
			structuredB(b, s, "tasks_status", map[string]any{"graphId": id, "waitMs": 30000})
			f, err := os.OpenFile(s.tasks.LogPath(id, "t"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600) // true printed nothing: no file yet
			if err != nil {
				b.Fatal(err)
			}
			f.Truncate(size - 1024)
			f.WriteAt([]byte(strings.Repeat("x", 1023)+"\n"), size-1024)
			f.Close()
			for b.Loop() {
				st := structuredB(b, s, "tasks_status", map[string]any{"graphId": id, "logTail": 1024})
				if got := st["tasks"].([]any)[0].(map[string]any)["log"].(map[string]any)["size"]; got != float64(size) {
					b.Fatalf("log size %v", got)
				}
			}
		})
	}
}

// BenchmarkTasksRun10k submits a 10,000-task graph (layers of 100, each task depending on
// two of the layer before) through the tasks_run handler and measures the answer; the
// graph is cancelled between iterations.
//
//	go test -run '^$' -bench TasksRun10k -benchtime 5x ./tools/
func BenchmarkTasksRun10k(b *testing.B) {
	s := newBenchServer(b)
	var ts []any
	for i := 0; i < 10000; i++ {
		t := map[string]any{"id": fmt.Sprintf("t%d", i), "command": "true"}
		if i >= 100 {
			layer := (i/100 - 1) * 100
			t["dependsOn"] = []string{fmt.Sprintf("t%d", layer+i%100), fmt.Sprintf("t%d", layer+(i*7)%100)}
			if i%100 == (i*7)%100 {
				t["dependsOn"] = []string{fmt.Sprintf("t%d", layer+i%100)}
			}
		}
		ts = append(ts, t)
	}
	args := map[string]any{"tasks": ts}
	for b.Loop() {
		id := structuredB(b, s, "tasks_run", args)["graphId"].(string)
		b.StopTimer()
		structuredB(b, s, "tasks_cancel", map[string]any{"graphId": id, "graceMs": 0})
		structuredB(b, s, "tasks_status", map[string]any{"graphId": id, "waitMs": 30000, "logTail": 0})
		b.StartTimer()
	}
}

func newBenchServer(b *testing.B) *testServer {
	b.Helper()
	s, err := openTestServer(b.Context(), testConfig{Config: Config{MaxWait: 30 * time.Second, Logger: discardLogger()}, Workspace: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { closeServer(s) })
	return s
}

func structuredB(b *testing.B, s *testServer, tool string, args map[string]any) map[string]any {
	b.Helper()
	res := callTool(b, s, tool, args)
	if res.IsError {
		b.Fatalf("%s: %s", tool, text(res))
	}
	return structured(b, res)
}

// BenchmarkTasksStatusPage answers a default tasks_status (the graphId alone: the first
// page, log tails included) on a graph of N pending tasks held behind a running gate
// task (N counts the gate): the page shows a few dozen tasks, so its cost should not grow
// with N (issue 29).
//
//	go test -run '^$' -bench TasksStatusPage ./tools/
func BenchmarkTasksStatusPage(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("tasks-%d", n), func(b *testing.B) {
			s, err := openTestServer(b.Context(), testConfig{Config: Config{MaxWait: 30 * time.Second, Logger: discardLogger()}, Workspace: b.TempDir(), MaxTasks: 100000})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { closeServer(s) })
			ts := []any{map[string]any{"id": "gate", "command": "sleep 3600"}}
			for i := range n - 1 {
				ts = append(ts, map[string]any{"id": fmt.Sprintf("t%d", i), "command": "true", "dependsOn": []string{"gate"}})
			}
			id := structuredB(b, s, "tasks_run", map[string]any{"tasks": ts})["graphId"].(string)
			for b.Loop() {
				st := structuredB(b, s, "tasks_status", map[string]any{"graphId": id})
				if got := st["progress"].(map[string]any)["total"]; got != float64(n) {
					b.Fatalf("total %v, want %d", got, n)
				}
			}
			structuredB(b, s, "tasks_cancel", map[string]any{"graphId": id, "graceMs": 0})
		})
	}
}
