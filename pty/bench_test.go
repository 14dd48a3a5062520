package pty

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"regexp"
	"syscall"
	"testing"

	creackpty "github.com/creack/pty"
)

// BenchmarkThroughput drains 200 MB through a terminal nobody reads: "session" through a
// Manager (ring buffer, notifications, locking), "plain" with a bare read loop on a
// creack/pty master, the floor the session's overhead is measured against.
func BenchmarkThroughput(b *testing.B) {
	const n = 200_000_000
	command := fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x", n)

	b.Run("session", func(b *testing.B) {
		ctx := context.WithoutCancel(b.Context())
		m := NewManager(Config{Logger: slog.New(slog.DiscardHandler)})
		defer m.Shutdown(ctx)
		b.SetBytes(n)
		anything := regexp.MustCompile(``) // matches at once: Open returns without reading
		for b.Loop() {
			res, err := m.Open(ctx, OpenOptions{Command: command}, ReadOptions{WaitFor: anything})
			if err != nil {
				b.Fatal(err)
			}
			s, err := m.get("bench", res.SessionID)
			if err != nil {
				b.Fatal(err)
			}
			<-s.exitDone
			s.mu.Lock()
			got := s.ring.End()
			s.mu.Unlock()
			if got != n {
				b.Fatalf("session saw %d bytes, want %d", got, n)
			}
			if _, err := m.Close(ctx, res.SessionID, syscall.SIGHUP, DefaultGrace); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("plain", func(b *testing.B) {
		b.SetBytes(n)
		buf := make([]byte, 64<<10)
		for b.Loop() {
			cmd := exec.Command("/bin/sh", "-c", command)
			master, err := creackpty.Start(cmd)
			if err != nil {
				b.Fatal(err)
			}
			var got int64
			for {
				k, err := master.Read(buf)
				got += int64(k)
				if err != nil {
					if !errors.Is(err, syscall.EIO) && !errors.Is(err, io.EOF) {
						b.Fatal(err)
					}
					break
				}
			}
			master.Close()
			_ = cmd.Wait()
			if got != n {
				b.Fatalf("read %d bytes, want %d", got, n)
			}
		}
	})
}
