package pty

import (
	"os"
	"runtime"
	"testing"

	creackpty "github.com/creack/pty"
	"go.uber.org/goleak"
)

// What a program wrote just before it blocked counts as unread until it is read, even
// while it is still in the kernel's flip buffer: a check that misses it reports the
// program waiting with a prompt that is not on record yet (python -i seen "waiting for a
// line" with no prompt on a loaded machine). The writer runs on a thread of its own, as
// the program does, so the kernel's worker that moves its writes on is often still
// behind when the check looks.
func TestUnread_seesWritesInFlight(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	master, slave, err := creackpty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	for _, dir := range []struct {
		name     string
		to, from *os.File // written to, checked on
	}{
		{"output", slave, master},
		{"input", master, slave},
	} {
		t.Run(dir.name, func(t *testing.T) {
			const rounds = 10000
			wrote, next := make(chan error), make(chan struct{})
			defer func() {
				close(next) // the writer stops, on a failure too
				for range wrote {
				}
			}()
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				defer close(wrote)
				for range rounds {
					_, err := dir.to.Write([]byte("ok\n"))
					wrote <- err
					if _, ok := <-next; !ok {
						return
					}
				}
			}()
			missed, buf := 0, make([]byte, 16)
			for err := range wrote {
				if err != nil {
					t.Fatal(err)
				}
				if pending, err := unread(int(dir.from.Fd())); err != nil || !pending {
					missed++
				}
				if _, err := dir.from.Read(buf); err != nil {
					t.Fatal(err)
				}
				next <- struct{}{}
			}
			if missed > 0 {
				t.Errorf("unread missed a write that had returned %d times in %d", missed, rounds)
			}
		})
	}
}
