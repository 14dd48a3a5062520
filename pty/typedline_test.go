package pty

import (
	"os"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// A wait for a pattern while another call types a line into the shell (the e2e test
// TestE2E_WaitingCallsDoNotBlockQuickOnes, one session). The typing call notes the line
// in the shell state before its write reaches the terminal; until it does, the kernel
// shows bash at its prompt, reading with readline, which is not a command asking a
// question: the wait goes on until the line's output matches. The write is held back
// (the session's write slot taken, as by another call's write, or by a loaded machine
// that runs the writer late) with the line noted before the waiter looks at the kernel,
// and with it noted while the waiter looks (its reader held up with a chunk of output
// that changes nothing, so the look cannot end before the line is noted).
func TestIO_waitAcrossTypedLine(t *testing.T) {
	if !foregroundKnown {
		t.Skip("needs the kernel's view of the terminal")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var hold atomic.Pointer[readerHold]
	readHook = func([]byte) {
		if h := hold.Swap(nil); h != nil {
			close(h.held)
			<-h.release
		}
	}
	t.Cleanup(func() { readHook = nil })
	m := newManager(t, Config{})
	// Longer than the waiter needs to answer wrongly: it looks at the kernel at least
	// every maxInputCheck while nothing changes.
	const writeHeld = 4 * maxInputCheck
	released := regexp.MustCompile(`(?m)^RELEASED$`)

	for _, tt := range []struct {
		name       string
		duringLook bool
	}{
		{"noted before the look", false},
		{"noted during the look", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			open := openShell(t, m, "bash", nil)
			id := open.SessionID
			s, err := m.get("test", id)
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				res ReadResult
				err error
			}
			waiter := make(chan result, 1)
			go func() {
				since := open.Cursor
				res, err := m.IO(t.Context(), id, Input{}, ReadOptions{Since: &since, WaitFor: released, Timeout: waitLong})
				waiter <- result{res, err}
			}()
			eventually(t, "the waiter to wait", func() bool { return s.waiting() == 1 })

			release := func() {}
			if tt.duringLook {
				h := &readerHold{held: make(chan struct{}), release: make(chan struct{})}
				release = sync.OnceFunc(func() { close(h.release) })
				t.Cleanup(release) // a reader left held would hang Close
				hold.Store(h)
				// An OSC 7 mark of the directory the shell is in: taken out of the
				// output, it leaves the output and the shell state as they were.
				s.mu.Lock()
				mark := "\x1b]7;mh=" + s.filter.Nonce + ";raw;file://" + s.sh.cwd + "\a"
				s.mu.Unlock()
				writeTerminal(t, s.pts, mark)
				select {
				case <-h.held:
				case <-time.After(waitLong):
					t.Fatal("the reader never read the mark")
				}
				eventually(t, "the waiter to look at the kernel and wait for the reader", s.syncPending)
			}

			s.wsem <- struct{}{} // the write slot taken: the line is noted, not written
			wsemHeld := true
			defer func() {
				if wsemHeld {
					<-s.wsem
				}
			}()
			typed := make(chan error, 1)
			go func() {
				_, err := m.IO(t.Context(), id, Input{Data: []byte("echo RELEASED\n")}, ReadOptions{Timeout: waitLong})
				typed <- err
			}()
			eventually(t, "the line to be noted", func() bool {
				s.mu.Lock()
				defer s.mu.Unlock()
				return s.sh.cur != nil
			})
			// The reader goes on (the waiter's look ends now, after the line was noted),
			// and the waiter is given time to answer while the line is still not written.
			release()
			select {
			case r := <-waiter:
				t.Fatalf("IO(waitFor RELEASED) while the typed line was not yet written = %v, reason %q, waiting %+v, integration %v, command %+v; want it to wait for the line's output",
					r.err, r.res.Reason, r.res.WaitingForInput, r.res.Integration, r.res.Command)
			case <-time.After(writeHeld):
			}
			<-s.wsem // the write goes in
			wsemHeld = false
			r := <-waiter
			if r.err != nil || r.res.Reason != ReasonMatched || !r.res.Integration {
				t.Errorf("IO(waitFor RELEASED) = %v, reason %q, waiting %+v, integration %v, output %q; want %q, integration true",
					r.err, r.res.Reason, r.res.WaitingForInput, r.res.Integration, r.res.Output, ReasonMatched)
			}
			if err := <-typed; err != nil {
				t.Errorf("IO(echo RELEASED) = %v", err)
			}
		})
	}
}

// readerHold holds the session reader in readHook on the next chunk it reads: held is
// closed when it is held, release lets it go on.
type readerHold struct{ held, release chan struct{} }

// writeTerminal writes text to the terminal pts as a program on it would: it comes out
// of the master as output.
func writeTerminal(t *testing.T, pts, text string) {
	t.Helper()
	f, err := os.OpenFile(pts, os.O_WRONLY|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// syncPending reports whether a syncReader call waits for the reader's answer.
func (s *session) syncPending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.syncAsked > s.syncDone
}
