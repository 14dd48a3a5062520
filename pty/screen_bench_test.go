package pty

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/pty/ring"
	"github.com/mcp-harness/mcp-harness/pty/vt"
)

// BenchmarkScreenBulk drains 20 MB of scrolling text (80-column lines) through a
// session with the emulator on and off, alternately in one loop (the order flips every
// round), and reports the median of each and their ratio: the read path must not slow
// down. "snapshot-ms" is the first screen after the bulk, which the vt.Emulator, far behind,
// reaches by skipping.
func BenchmarkScreenBulk(b *testing.B) {
	const size = 20_000_000
	line := strings.Repeat("x", 79) + "\n"
	file := filepath.Join(b.TempDir(), "bulk.txt")
	if err := os.WriteFile(file, bytes.Repeat([]byte(line), size/len(line)), 0o644); err != nil {
		b.Fatal(err)
	}
	ctx := context.WithoutCancel(b.Context())
	log := slog.New(slog.DiscardHandler)
	managers := map[bool]*Manager{true: NewManager(Config{Logger: log}), false: NewManager(Config{Logger: log, NoEmulator: true})}
	defer managers[true].Shutdown(ctx)
	defer managers[false].Shutdown(ctx)
	anything := regexp.MustCompile(``) // Open returns at once
	run := func(on bool) (through, snapshot, cpu time.Duration) {
		m := managers[on]
		cpu0 := cpuTime()
		t0 := time.Now()
		res, err := m.Open(ctx, OpenOptions{Command: "cat " + file}, ReadOptions{WaitFor: anything})
		if err != nil {
			b.Fatal(err)
		}
		s, err := m.get("bench", res.SessionID)
		if err != nil {
			b.Fatal(err)
		}
		<-s.exitDone
		through = time.Since(t0)
		cpu = cpuTime() - cpu0
		if on {
			t1 := time.Now()
			scr, _ := s.term.snapshot(s.ring.End())
			snapshot = time.Since(t1)
			if scr == nil || scr.Lines[DefaultRows-2] != strings.TrimSpace(line) {
				b.Fatalf("screen after the bulk: %v", scr)
			}
		}
		if _, err := m.Close(ctx, res.SessionID, syscall.SIGKILL, 0); err != nil {
			b.Fatal(err)
		}
		return through, snapshot, cpu
	}
	var on, off, snap, onCPU, offCPU []time.Duration
	round := 0
	for b.Loop() {
		for _, side := range [][]bool{{true, false}, {false, true}}[round%2] {
			d, sn, cpu := run(side)
			if side {
				on, snap, onCPU = append(on, d), append(snap, sn), append(onCPU, cpu)
			} else {
				off, offCPU = append(off, d), append(offCPU, cpu)
			}
		}
		round++
	}
	b.ReportMetric(ms(median(on)), "on-ms")
	b.ReportMetric(ms(median(off)), "off-ms")
	b.ReportMetric(float64(median(on))/float64(median(off)), "on/off")
	b.ReportMetric(ms(median(onCPU)), "on-cpu-ms")
	b.ReportMetric(ms(median(offCPU)), "off-cpu-ms")
	b.ReportMetric(ms(median(snap)), "snapshot-ms")
}

// cpuTime is the CPU time this process (the server side of the session: read loop,
// scanner, emulator) has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkQueryAnswer measures, from inside a program (queryScript), the time from
// writing a query to having its answer: the median of 20 for the device attributes
// (answered by the scanner) and the cursor position (answered from the vt.Emulator), and
// one cursor position query right after 8 MB of output, with the emulator far behind.
func BenchmarkQueryAnswer(b *testing.B) {
	py := needPython(b)
	script := filepath.Join(b.TempDir(), "query.py")
	if err := os.WriteFile(script, []byte(queryScript), 0o644); err != nil {
		b.Fatal(err)
	}
	ctx := context.WithoutCancel(b.Context())
	m := NewManager(Config{Logger: slog.New(slog.DiscardHandler)})
	defer m.Shutdown(ctx)
	ask := func(filler, rounds int, query, end string) time.Duration {
		cmd := fmt.Sprintf("exec %s %s %d '' %s %s %d", py, script, filler, shQuote(query), shQuote(end), rounds)
		res, err := m.Open(ctx, OpenOptions{Command: cmd}, ReadOptions{WaitFor: replyLine, Timeout: time.Minute, MaxBytes: 4096})
		if err != nil {
			b.Fatal(err)
		}
		g := replyLine.FindStringSubmatch(res.Output)
		if g == nil || g[1] != "REPLY" {
			b.Fatalf("query %q: %q", query, res.Output)
		}
		if _, err := m.Close(ctx, res.SessionID, syscall.SIGKILL, 0); err != nil {
			b.Fatal(err)
		}
		us, _ := strconv.Atoi(g[3])
		return time.Duration(us) * time.Microsecond
	}
	var da1, cpr, behind []time.Duration
	for b.Loop() {
		da1 = append(da1, ask(0, 20, `\x1b[c`, `c`))
		cpr = append(cpr, ask(0, 20, `\x1b[6n`, `R`))
		behind = append(behind, ask(200000, 1, `\x1b[6n`, `R`))
	}
	b.ReportMetric(float64(median(da1).Microseconds()), "da1-us")
	b.ReportMetric(float64(median(cpr).Microseconds()), "cpr-us")
	b.ReportMetric(ms(median(behind)), "cpr-after-8MB-ms")
}

// BenchmarkScreenSnapshot is the cost of a screen when the emulator is up to date: a full
// screen of text turned into lines.
func BenchmarkScreenSnapshot(b *testing.B) {
	for _, size := range [][2]int{{120, 40}, {300, 100}} {
		cols, rows := size[0], size[1]
		b.Run(fmt.Sprintf("%dx%d", cols, rows), func(b *testing.B) {
			s := &session{ring: ring.New(DefaultBufferSize), cols: cols, rows: rows}
			tm := newTerm(s, cols, rows)
			for i := range rows {
				fmt.Fprintf(&ringWriter{&s.ring}, "\x1b[3%dmrow %d %s\x1b[m 日本語\r\n", i%8, i, strings.Repeat("x", cols-20))
			}
			tm.snapshot(s.ring.End())
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := tm.snapshot(s.ring.End()); !ok {
					b.Fatal("no screen")
				}
			}
		})
	}
}

type ringWriter struct{ r *ring.Buffer }

func (w *ringWriter) Write(p []byte) (int, error) { w.r.Write(p); return len(p), nil }

// BenchmarkTermMemory reports the memory a session's terminal side keeps (scanner and
// emulator, after both screens were used), as retained-B: the heap growth per terminal
// with 16 of them alive, after a collection.
func BenchmarkTermMemory(b *testing.B) {
	for _, size := range [][2]int{{120, 40}, {300, 100}} {
		b.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(b *testing.B) {
			const n = 16
			var per uint64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				terms := make([]*term, n)
				for i := range terms {
					terms[i] = newTerm(&session{}, size[0], size[1])
					terms[i].emu.Write([]byte("\x1b[?1049hx\x1b[?1049l"))
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(terms)
				per = (after.HeapAlloc - before.HeapAlloc) / n
			}
			b.ReportMetric(float64(per), "retained-B")
		})
	}
}

// BenchmarkParse compares, on scrolling text, the scanner (which reads every byte of
// output) with the emulator (which may skip).
func BenchmarkParse(b *testing.B) {
	var buf bytes.Buffer
	for i := 0; buf.Len() < 4<<20; i++ {
		fmt.Fprintf(&buf, "line %d \x1b[32mok\x1b[m %s\r\n", i, strings.Repeat("x", 60))
	}
	data := buf.Bytes()
	b.Run("scanner", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			sc := vt.NewScanner(120, 40)
			for p := data; len(p) > 0; p = p[min(len(p), 64<<10):] {
				sc.Scan(p[:min(len(p), 64<<10)])
			}
		}
	})
	b.Run("emulator", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			e := vt.New(120, 40)
			for p := data; len(p) > 0; p = p[min(len(p), feedSlice):] {
				e.Write(p[:min(len(p), feedSlice)])
			}
		}
	})
}
