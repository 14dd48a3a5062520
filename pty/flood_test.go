package pty

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A screen read from a program that floods its output with terminal queries and reads
// none of the answers returns with the screen while the program still runs, and the
// queue of answers stays bounded meanwhile.
func TestScreen_QueryFloodUnread(t *testing.T) {
	for _, c := range []struct{ name, cmd string }{
		// 1.3 million queries, 3.9 MB: far more than maxPending, within the ring. The
		// clear at the end lets the emulator skip the flood, as it would a real one.
		{"ended", `stty raw -echo; awk 'BEGIN{for(i=0;i<1300000;i++) printf "\033[c"; printf "\033[H\033[2JFLOODED\r\n"}'; exec sleep 120`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newManager(t, Config{})
			want := regexp.MustCompile(`FLOODED`)
			res := mustOpen(t, m, OpenOptions{Command: c.cmd}, ReadOptions{WaitFor: want})
			if res.Reason != ReasonMatched {
				t.Fatalf("Open: reason %q, want %q; output %q", res.Reason, ReasonMatched, res.Output)
			}
			s, err := m.get("test", res.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				res ReadResult
				err error
			}
			done := make(chan result, 1)
			start := time.Now()
			go func() {
				r, err := m.IO(t.Context(), res.SessionID, Input{}, ReadOptions{Screen: true})
				done <- result{r, err}
			}()
			// Before the fix each maxPending queries cost an answerTimeout: minutes for
			// the ended flood, forever for the endless one. The program is in its sleep
			// (or still flooding) long after this deadline.
			var got result
			select {
			case got = <-done:
			case <-time.After(2 * waitLong):
				t.Errorf("the screen read had not returned after %v", 2*waitLong)
				// Kill the program so that the read (and the test's goroutine) ends.
				if _, err := m.Close(t.Context(), res.SessionID, syscall.SIGKILL, 0); err != nil {
					t.Errorf("Close = %v", err)
				}
				<-done
				return
			}
			t.Logf("screen read: %v", time.Since(start).Round(time.Millisecond))
			if got.err != nil {
				t.Fatalf("IO = %v", got.err)
			}
			if got.res.Exited {
				t.Errorf("the program exited before the screen read returned")
			}
			if got.res.Screen == nil {
				t.Fatalf("no screen")
			}
			if !want.MatchString(strings.Join(got.res.Screen.Lines, "\n")) {
				t.Errorf("screen does not show the flood's marker:\n%s", strings.Join(got.res.Screen.Lines, "\n"))
			}
			// The incremental path may pass the bound by one chunk's worth of queries.
			s.term.mu.Lock()
			n := len(s.term.pending)
			s.term.mu.Unlock()
			if bound := maxPending + (64<<10)/3 + 1; n > bound {
				t.Errorf("%d answers queued, want at most %d", n, bound)
			}
		})
	}
}

// A wait whose pattern never matches, on a program that writes without end, ends at its
// timeout: the matcher takes the output as it was when each pass began, so a program
// that writes faster than the text is cleaned (a loaded machine, or the race detector)
// cannot keep the wait from looking at its deadline.
func TestWaitFor_EndlessOutputEndsAtTimeout(t *testing.T) {
	for _, cmd := range []string{"exec yes", `exec awk 'BEGIN{for(;;) printf "abcdefghij"}'`} {
		m := newManager(t, Config{})
		done := make(chan ReadResult, 1)
		go func() {
			res, err := m.Open(t.Context(), OpenOptions{Command: cmd}, ReadOptions{WaitFor: regexp.MustCompile(`NEVER`), Timeout: 2 * time.Second})
			if err != nil {
				t.Errorf("Open(%s) = %v", cmd, err)
			}
			done <- res
		}()
		select {
		case res := <-done:
			if res.Reason != ReasonTimeout || res.Exited {
				t.Errorf("Open(%s): reason %q, exited %v; want the timeout while it still runs", cmd, res.Reason, res.Exited)
			}
		case <-time.After(2 * waitLong):
			// The manager's cleanup closes the session, which ends the wait.
			t.Fatalf("Open(%s) with a 2 s timeout had not returned after %v", cmd, 2*waitLong)
		}
	}
}
