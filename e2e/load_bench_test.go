package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkQuickCallUnderWaits measures what a quick call costs while many waiting calls
// are in flight: n shell_io calls wait for output that never comes (timeoutMs 30000, the
// default --max-wait), then a shell_list is sent and timed to its answer (ms-shell-list).
// Then stdin is closed with the waits still in flight and the time to the process's exit
// is measured (ms-to-exit). Waits beyond the server's cap (256) are answered BUSY at once;
// the count of those that came before the shell_list's answer is reported (busy).
//
//	go test -run '^$' -bench QuickCallUnderWaits -benchtime 3x ./e2e/
func BenchmarkQuickCallUnderWaits(b *testing.B) {
	for _, n := range []int{0, 150, 200, 1500} {
		b.Run(fmt.Sprintf("waits=%d", n), func(b *testing.B) {
			var lists, exits []time.Duration
			busy := 0
			for b.Loop() {
				c := startBenchClient(b)
				c.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
				fmt.Fprintln(c.stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
				open := c.call("tools/call", `{"name":"shell_open","arguments":{"command":"exec bash --norc --noprofile -i","env":{"PS1":"$ "},"waitFor":"\\$ $"}}`)
				if !strings.Contains(open, `"sessionId":"s1-1"`) {
					b.Fatalf("shell_open: %s", open)
				}
				// Written while the answers are read, as a client does: BUSY answers could
				// otherwise fill the pipe back while the requests fill the other one.
				var t0 time.Time
				sent := make(chan struct{})
				go func() {
					defer close(sent)
					for i := range n {
						fmt.Fprintf(c.stdin, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"shell_io","arguments":{"sessionId":"s1-1","waitFor":"NEVER_PRINTED","timeoutMs":30000}}}`+"\n", 10000+i)
					}
					t0 = time.Now()
					fmt.Fprintln(c.stdin, `{"jsonrpc":"2.0","id":9999,"method":"tools/call","params":{"name":"shell_list","arguments":{}}}`)
				}()
				for {
					line, err := c.out.ReadString('\n')
					if err != nil {
						b.Fatal(err)
					}
					if strings.Contains(line, `"id":9999,`) {
						if !strings.Contains(line, `"sessions"`) {
							b.Fatalf("shell_list: %s", line)
						}
						break
					}
					if strings.Contains(line, "BUSY") {
						busy++
					}
				}
				<-sent
				lists = append(lists, time.Since(t0))
				t1 := time.Now()
				c.close()
				exits = append(exits, time.Since(t1))
			}
			b.ReportMetric(median(lists), "ms-shell-list")
			b.ReportMetric(median(exits), "ms-to-exit")
			b.ReportMetric(float64(busy)/float64(b.N), "busy")
		})
	}
}
