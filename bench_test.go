package main

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"
)

// BenchmarkColdStart measures what a user waits for when a client launches the server:
// from spawning the binary to the tools/list answer (initialize first, as a client does),
// and then from closing stdin to the process's exit. Each is reported as a median over the
// run (ms-to-tools-list, ms-to-exit), on an existing workspace and on a fresh one.
//
//	go test -run '^$' -bench ColdStart -benchtime 50x .
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
