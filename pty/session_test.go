package pty

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestManager_IO_bashRoundTrip(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})

	res := mustOpen(t, m, bash(t), ReadOptions{WaitFor: prompt})
	if res.SessionID != "s1" || res.Pid <= 0 || res.Reason != ReasonMatched {
		t.Fatalf("Open() = id %q pid %d reason %q, want s1, a pid, %q; output %q", res.SessionID, res.Pid, res.Reason, ReasonMatched, res.Output)
	}
	input := "echo OUT_$((40+2))\n"
	got := mustIO(t, m, res.SessionID, input, ReadOptions{WaitFor: regexp.MustCompile(`(?m)^OUT_42$`)})
	if got.Reason != ReasonMatched || got.Written != len(input) {
		t.Fatalf("IO() reason %q written %d, want %q, %d; output %q", got.Reason, got.Written, ReasonMatched, len(input), got.Output)
	}
	if !strings.Contains(got.Output, "echo OUT_$((40+2))") || strings.Contains(got.Output, "\x1b") || strings.Contains(got.Output, "\r") {
		t.Errorf("IO() output %q, want the echoed command, cleaned", got.Output)
	}
	if got.Since != res.Cursor || got.Cursor <= got.Since || got.DroppedBytes != 0 || got.Exited {
		t.Errorf("IO() since %d cursor %d dropped %d exited %v, want since %d (the previous cursor), cursor after it, 0, false",
			got.Since, got.Cursor, got.DroppedBytes, got.Exited, res.Cursor)
	}
}

func TestManager_Open_defaultShell(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	// HOME without dotfiles keeps the user's bashrc out of the test; the system's may
	// still set its own prompt.
	o := OpenOptions{Env: map[string]string{"SHELL": "/bin/bash", "HOME": t.TempDir()}, Name: "main"}
	res := mustOpen(t, m, o, ReadOptions{WaitFor: regexp.MustCompile(`[$#>] $`)})
	if res.Reason != ReasonMatched {
		t.Fatalf("Open() reason %q, want a prompt; output %q", res.Reason, res.Output)
	}
	got := mustIO(t, m, res.SessionID, "echo OUT_$((40+2)) $-\n", ReadOptions{WaitFor: regexp.MustCompile(`(?m)^OUT_42 \S*i`)})
	if got.Reason != ReasonMatched {
		t.Fatalf("IO() reason %q, want an interactive shell to answer; output %q", got.Reason, got.Output)
	}
	infos := m.List()
	if len(infos) != 1 || infos[0].Command != "/bin/bash" || infos[0].Name != "main" {
		t.Errorf("List() = %+v, want one session running /bin/bash named main", infos)
	}
}

func TestCommandLine(t *testing.T) {
	for _, tt := range []struct {
		command string
		env     []string
		want    []string
	}{
		{"ls -l", nil, []string{"/bin/sh", "-c", "exec ls -l"}},
		{"ls -l | wc", nil, []string{"/bin/sh", "-c", "ls -l | wc"}},
		{"", []string{"SHELL=/bin/sh"}, []string{"/bin/sh", "-i"}},
		{"", []string{"SHELL=/no/such/shell"}, []string{"/bin/bash", "-i"}},
		{"", []string{"SHELL=bash"}, []string{"/bin/bash", "-i"}},
		{"", nil, []string{"/bin/bash", "-i"}},
	} {
		if got, _ := commandLine(tt.command, tt.env); !cmp.Equal(got, tt.want) {
			t.Errorf("commandLine(%q, %q) = %q, want %q", tt.command, tt.env, got, tt.want)
		}
	}
}

func TestManager_IO_python(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, OpenOptions{Command: "exec python3 -q -i"}, ReadOptions{WaitFor: regexp.MustCompile(`>>> $`)})
	if res.Reason != ReasonMatched {
		t.Fatalf("Open(python3) reason %q, want the prompt; output %q", res.Reason, res.Output)
	}
	got := mustIO(t, m, res.SessionID, "6*7\n", ReadOptions{WaitFor: regexp.MustCompile(`(?m)^42\n>>> $`)})
	if got.Reason != ReasonMatched {
		t.Fatalf("IO(6*7) reason %q, want 42 and a prompt; output %q", got.Reason, got.Output)
	}
	if !strings.HasPrefix(got.Output, "6*7\n") || !strings.HasSuffix(got.Output, "\n42\n>>> ") {
		t.Errorf("IO(6*7) output %q, want the echo, 42 and the prompt", got.Output)
	}
}

func TestManager_IO_interrupt(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, bash(t), ReadOptions{WaitFor: prompt})
	id := res.SessionID

	mustIO(t, m, id, "sleep 100\n", ReadOptions{})
	eventually(t, "sleep to run", func() bool { return len(processesIn(res.Pid, "sleep")) == 1 })
	sleeper := processesIn(res.Pid, "sleep")[0]

	keys, err := ParseKeys([]string{"C-c"})
	if err != nil {
		t.Fatal(err)
	}
	got := mustIO(t, m, id, string(keys), ReadOptions{WaitFor: prompt})
	if got.Reason != ReasonMatched {
		t.Fatalf("IO(C-c) reason %q, want the prompt back; output %q", got.Reason, got.Output)
	}
	eventually(t, "sleep to die", func() bool { return processGone(sleeper) })
	got = mustIO(t, m, id, "echo OUT_$((40+2))\n", ReadOptions{WaitFor: regexp.MustCompile(`(?m)^OUT_42$`)})
	if got.Reason != ReasonMatched {
		t.Errorf("IO() after C-c reason %q, want the shell to answer; output %q", got.Reason, got.Output)
	}
}

func TestManager_IO_cleanAndRaw(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	cmd := `printf 'a\033[31mred\033[0m\r\nprog 10%%\rprog 100%%\n\033]0;title\007\033[?2004hdone\n'`
	res := mustOpen(t, m, OpenOptions{Command: cmd}, ReadOptions{})

	clean := readToExit(t, m, res.SessionID, ReadOptions{})
	if want := "ared\nprog 100%\ndone\n"; clean.Output != want {
		t.Errorf("cleaned output %q, want %q", clean.Output, want)
	}
	raw := readToExit(t, m, res.SessionID, ReadOptions{Raw: true})
	want := "a\x1b[31mred\x1b[0m\r\r\nprog 10%\rprog 100%\r\n\x1b]0;title\x07\x1b[?2004hdone\r\n"
	if raw.Output != want {
		t.Errorf("raw output %q, want %q", raw.Output, want)
	}
	if raw.Cursor != int64(len(want)) || clean.Cursor != raw.Cursor {
		t.Errorf("cursors %d (clean), %d (raw), want both %d: offsets count raw bytes", clean.Cursor, raw.Cursor, len(want))
	}
}

func TestManager_IO_cursorAndSince(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, OpenOptions{Command: "stty -echo; echo ready; exec cat"}, ReadOptions{WaitFor: regexp.MustCompile(`ready\n`)})
	id := res.SessionID
	one := mustIO(t, m, id, "one\n", ReadOptions{WaitFor: regexp.MustCompile(`one\n`)})
	two := mustIO(t, m, id, "two\n", ReadOptions{WaitFor: regexp.MustCompile(`two\n`)})
	if one.Output != "one\n" || two.Output != "two\n" || two.Since != one.Cursor {
		t.Fatalf("reads %q (to %d), %q (from %d), want one\\n, then two\\n from where the first ended", one.Output, one.Cursor, two.Output, two.Since)
	}
	again := mustIO(t, m, id, "", ReadOptions{Since: &one.Since})
	if again.Output != "one\ntwo\n" || again.Reason != ReasonIdle || again.Cursor != two.Cursor {
		t.Errorf("re-read from %d = %q reason %q cursor %d, want both lines at once, %q, %d", one.Since, again.Output, again.Reason, again.Cursor, ReasonIdle, two.Cursor)
	}
	// A re-read never moves the cursor back.
	var zero int64
	mustIO(t, m, id, "", ReadOptions{Since: &zero, MaxBytes: 1})
	three := mustIO(t, m, id, "three\n", ReadOptions{WaitFor: regexp.MustCompile(`three\n`)})
	if three.Output != "three\n" {
		t.Errorf("read after a re-read = %q, want only the new line", three.Output)
	}
	past := three.Cursor + 1
	if _, err := m.IO(t.Context(), id, Input{}, ReadOptions{Since: &past}); !errors.Is(err, ErrInvalid) {
		t.Errorf("IO(since past the end) = %v, want ErrInvalid", err)
	}
}

func TestManager_IO_waitForSpansChunks(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	// The pieces arrive in separate reads, with pauses longer than the default idle: with
	// WaitFor and no Idle, the pauses must not end the wait.
	cmd := `printf OUT_; sleep 0.4; printf 4; sleep 0.4; printf '2\n'; exec sleep 100`
	res := mustOpen(t, m, OpenOptions{Command: cmd}, ReadOptions{WaitFor: regexp.MustCompile(`OUT_42`)})
	if res.Reason != ReasonMatched || res.Output != "OUT_42\n" {
		t.Errorf("Open() reason %q output %q, want %q, OUT_42", res.Reason, res.Output, ReasonMatched)
	}
}

func TestManager_IO_idle(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	// No echo: the answer is the first output after the input, so a slow machine cannot
	// make the wait settle between the echo and the answer.
	res := mustOpen(t, m, OpenOptions{Command: "stty -echo; echo ready; read x; echo got $x; exec sleep 100"}, ReadOptions{})
	// Where the kernel says the program waits reading its terminal, that ends the wait
	// before the output has been quiet for Idle; elsewhere the output settles.
	want := ReasonIdle
	if foregroundKnown {
		want = ReasonInput
	}
	if res.Reason != want || res.Output != "ready\n" {
		t.Fatalf("Open() reason %q output %q, want %q once the output settled", res.Reason, res.Output, want)
	}
	got := mustIO(t, m, res.SessionID, "it\n", ReadOptions{Idle: 200 * time.Millisecond})
	if got.Reason != ReasonIdle || got.Output != "got it\n" {
		t.Errorf("IO() reason %q output %q, want %q with the answer", got.Reason, got.Output, ReasonIdle)
	}
	// Nothing more will come: a plain read waits for the timeout.
	got = mustIO(t, m, res.SessionID, "", ReadOptions{Timeout: 200 * time.Millisecond})
	if got.Reason != ReasonTimeout || got.Output != "" {
		t.Errorf("IO() with nothing to read: reason %q output %q, want %q, empty", got.Reason, got.Output, ReasonTimeout)
	}
}

func TestManager_IO_maxBytes(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, OpenOptions{Command: "seq 1 20000"}, ReadOptions{})
	var full strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&full, "%d\n", i)
	}

	got := readToExit(t, m, res.SessionID, ReadOptions{MaxBytes: 1000})
	head, rest, ok := strings.Cut(got.Output, "[... ")
	if !ok {
		t.Fatalf("capped output has no marker: %q", got.Output)
	}
	marker, tail, _ := strings.Cut(rest, "...]\n")
	if !strings.HasPrefix(head, "1\n2\n3\n") || !strings.HasSuffix(tail, "19999\n20000\n") {
		t.Errorf("capped output does not keep head and tail: %q", got.Output)
	}
	if len(head)+len(tail) > 1000 || len(marker) > 80 {
		t.Errorf("capped output keeps %d bytes with a %d-byte marker, want at most 1000 and a short marker", len(head)+len(tail), len(marker))
	}
	if want := int64(full.Len() - len(head) - len(tail)); got.OmittedBytes != want {
		t.Errorf("OmittedBytes = %d, want %d", got.OmittedBytes, want)
	}
	if !strings.Contains(marker, strconv.FormatInt(got.OmittedBytes, 10)+" bytes omitted") {
		t.Errorf("marker %q does not say how many bytes were left out", marker)
	}

	// The marker says where to re-read from: the omitted text begins there.
	sm := regexp.MustCompile(`since=(\d+)`).FindStringSubmatch(marker)
	if sm == nil {
		t.Fatalf("marker %q has no since", marker)
	}
	since, _ := strconv.ParseInt(sm[1], 10, 64)
	lines := strings.Split(strings.TrimSuffix(head, "\n"), "\n")
	last, _ := strconv.Atoi(lines[len(lines)-1])
	again := mustIO(t, m, res.SessionID, "", ReadOptions{Since: &since, MaxBytes: 1 << 20})
	if want := fmt.Sprintf("%d\n%d\n", last+1, last+2); !strings.HasPrefix(again.Output, want) || again.OmittedBytes != 0 {
		t.Errorf("re-read from since=%d starts %q (omitted %d), want it to start %q", since, again.Output[:min(len(again.Output), 20)], again.OmittedBytes, want)
	}
	if !strings.HasSuffix(again.Output, "20000\n") {
		t.Errorf("re-read does not run to the end")
	}

	raw := readToExit(t, m, res.SessionID, ReadOptions{MaxBytes: 1000, Raw: true})
	if !strings.HasPrefix(raw.Output, "1\r\n2\r\n") || !strings.HasSuffix(raw.Output, "20000\r\n") || raw.OmittedBytes <= 0 {
		t.Errorf("raw capped output %q (omitted %d), want the raw head and tail", raw.Output, raw.OmittedBytes)
	}
}

func TestManager_IO_droppedBytes(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const size = 4096
	m := newManager(t, Config{BufferSize: size})
	res := mustOpen(t, m, OpenOptions{Command: "seq 1 10000"}, ReadOptions{})
	total := int64(0)
	for i := 1; i <= 10000; i++ {
		total += int64(len(strconv.Itoa(i))) + 2 // the tty turns \n into \r\n
	}
	got := readToExit(t, m, res.SessionID, ReadOptions{Raw: true, MaxBytes: 1 << 20})
	if got.Cursor != total || got.DroppedBytes != total-size || got.Since != total-size || len(got.Output) != size {
		t.Errorf("read from 0 after overflow: cursor %d dropped %d since %d len %d, want %d, %d, %d, %d",
			got.Cursor, got.DroppedBytes, got.Since, len(got.Output), total, total-size, total-size, size)
	}
	if !strings.HasSuffix(got.Output, "9999\r\n10000\r\n") {
		t.Errorf("output does not end with the last lines: %q", got.Output[len(got.Output)-20:])
	}
	s, _ := m.get("test", res.SessionID)
	s.mu.Lock()
	held := s.ring.Held()
	s.mu.Unlock()
	if held != size {
		t.Errorf("ring holds %d bytes, want %d", held, size)
	}
}

func TestManager_ErrNoSession(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, OpenOptions{Command: "echo hi; exec sleep 100"}, ReadOptions{})
	_, err := m.IO(t.Context(), "s99", Input{}, ReadOptions{})
	if !errors.Is(err, ErrNoSession) || !strings.Contains(err.Error(), `"s99"`) || !strings.Contains(err.Error(), res.SessionID) {
		t.Errorf("IO(s99) = %v, want ErrNoSession naming s99 and the open sessions", err)
	}
	if err := m.Resize("s99", 80, 24); !errors.Is(err, ErrNoSession) {
		t.Errorf("Resize(s99) = %v, want ErrNoSession", err)
	}
	if _, err := m.Close(t.Context(), "s99", syscall.SIGHUP, DefaultGrace); !errors.Is(err, ErrNoSession) {
		t.Errorf("Close(s99) = %v, want ErrNoSession", err)
	}
}

func TestManager_ErrInvalid(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	neg := int64(-1)
	for _, tt := range []struct {
		name string
		o    OpenOptions
		r    ReadOptions
	}{
		{"cols", OpenOptions{Command: "true", Cols: 1001}, ReadOptions{}},
		{"rows", OpenOptions{Command: "true", Rows: -1}, ReadOptions{}},
		{"relative dir", OpenOptions{Command: "true", Dir: "sub"}, ReadOptions{}},
		{"blank command", OpenOptions{Command: "  "}, ReadOptions{}},
		{"env name", OpenOptions{Command: "true", Env: map[string]string{"A=B": "c"}}, ReadOptions{}},
		{"negative timeout", OpenOptions{Command: "true"}, ReadOptions{Timeout: -1}},
		{"negative since", OpenOptions{Command: "true"}, ReadOptions{Since: &neg}},
		{"negative maxBytes", OpenOptions{Command: "true"}, ReadOptions{MaxBytes: -1}},
	} {
		if _, err := m.Open(t.Context(), tt.o, tt.r); !errors.Is(err, ErrInvalid) {
			t.Errorf("Open(%s) = %v, want ErrInvalid", tt.name, err)
		}
	}
	res := mustOpen(t, m, OpenOptions{Command: "echo hi; exec sleep 100"}, ReadOptions{})
	for _, size := range [][2]int{{0, 24}, {80, 0}, {1001, 24}, {80, 1001}} {
		if err := m.Resize(res.SessionID, size[0], size[1]); !errors.Is(err, ErrInvalid) {
			t.Errorf("Resize(%v) = %v, want ErrInvalid", size, err)
		}
	}
	if _, err := m.Close(t.Context(), res.SessionID, syscall.SIGHUP, -time.Second); !errors.Is(err, ErrInvalid) {
		t.Errorf("Close(grace -1s) = %v, want ErrInvalid", err)
	}
	if infos := m.List(); len(infos) != 1 {
		t.Errorf("List() = %+v, want only the one valid session", infos)
	}
}

func TestManager_IO_ctxCancel(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, OpenOptions{Command: "echo hi; exec sleep 100"}, ReadOptions{WaitFor: regexp.MustCompile(`hi\n`)})
	s, _ := m.get("test", res.SessionID)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := m.IO(ctx, res.SessionID, Input{}, ReadOptions{WaitFor: never, Timeout: waitLong})
		done <- err
	}()
	eventually(t, "IO to wait", func() bool { return s.waiting() == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("IO() with ctx cancelled = %v, want context.Canceled", err)
	}
}

// TestManager_IO_concurrent checks that calls waiting on some sessions do not hold up a
// quick call on another: the quick one returns while they are all still waiting.
func TestManager_IO_concurrent(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	quick := mustOpen(t, m, OpenOptions{Command: "stty -echo; echo ready; exec cat"}, ReadOptions{WaitFor: regexp.MustCompile(`ready`)})

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const waiters = 4
	results := make(chan error, waiters)
	var sessions []*session
	for range waiters {
		res := mustOpen(t, m, OpenOptions{Command: "echo ready; exec sleep 1000"}, ReadOptions{WaitFor: regexp.MustCompile(`ready`)})
		s, _ := m.get("test", res.SessionID)
		sessions = append(sessions, s)
		go func() {
			_, err := m.IO(ctx, res.SessionID, Input{}, ReadOptions{WaitFor: never, Timeout: time.Hour})
			results <- err
		}()
	}
	// A second waiter on one of the same sessions, too.
	go func() {
		_, err := m.IO(ctx, sessions[0].id, Input{Data: []byte("x")}, ReadOptions{WaitFor: never, Timeout: time.Hour})
		results <- err
	}()
	eventually(t, "every call to wait", func() bool {
		n := 0
		for _, s := range sessions {
			n += s.waiting()
		}
		return n == waiters+1
	})

	got := mustIO(t, m, quick.SessionID, "ping\n", ReadOptions{WaitFor: regexp.MustCompile(`ping\n`)})
	if got.Reason != ReasonMatched {
		t.Errorf("quick IO reason %q, want %q", got.Reason, ReasonMatched)
	}
	select {
	case err := <-results:
		t.Fatalf("a waiting call returned (%v) before it was cancelled", err)
	default:
	}
	cancel()
	for range waiters + 1 {
		if err := <-results; !errors.Is(err, context.Canceled) {
			t.Errorf("waiting IO = %v, want context.Canceled", err)
		}
	}
}

func TestManager_Resize(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, bash(t), ReadOptions{WaitFor: prompt})
	got := mustIO(t, m, res.SessionID, "stty size\n", ReadOptions{WaitFor: regexp.MustCompile(`(?m)^\d+ \d+$`)})
	if !strings.Contains(got.Output, "\n40 120\n") {
		t.Errorf("stty size = %q, want the default 40 120", got.Output)
	}
	if err := m.Resize(res.SessionID, 100, 30); err != nil {
		t.Fatal(err)
	}
	got = mustIO(t, m, res.SessionID, "stty size\n", ReadOptions{WaitFor: regexp.MustCompile(`(?m)^\d+ \d+$`)})
	if !strings.Contains(got.Output, "\n30 100\n") {
		t.Errorf("stty size after Resize(100, 30) = %q, want 30 100", got.Output)
	}
	if info := m.List()[0]; info.Cols != 100 || info.Rows != 30 {
		t.Errorf("List() size %dx%d, want 100x30", info.Cols, info.Rows)
	}
	// Resizing must leave the master non-blocking: Close still wakes the reader (the
	// test's cleanup would hang otherwise).
}

func TestManager_IO_blockedWrite(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, OpenOptions{Command: "exec sleep 1000"}, ReadOptions{Timeout: 100 * time.Millisecond})
	input := strings.Repeat(strings.Repeat("x", 99)+"\n", 5000) // 500 KB nobody reads
	got, err := m.IO(t.Context(), res.SessionID, Input{Data: []byte(input)}, ReadOptions{Timeout: time.Second})
	if err != nil {
		t.Fatalf("IO(500KB) = %v, want a result", err)
	}
	if got.Written <= 0 || got.Written >= len(input) || got.Reason != ReasonTimeout {
		t.Errorf("IO(500KB) written %d of %d, reason %q, want part of it and %q", got.Written, len(input), got.Reason, ReasonTimeout)
	}
	if _, err := m.Close(t.Context(), res.SessionID, syscall.SIGHUP, DefaultGrace); err != nil {
		t.Fatal(err)
	}
}

// sessionsForTest returns the sessions, for tests that watch their state.
func (m *Manager) sessionsForTest() []*session {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sortedLocked()
}

// waiting reports how many calls are waiting on s.
func (s *session) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiters
}

// TestManager_IO_waitForAfterOverflow waits for a pattern while far more than the ring
// holds goes by: the match is still found, the memory stays bounded, and the drop is
// reported.
func TestManager_IO_waitForAfterOverflow(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const size = 4096
	m := newManager(t, Config{BufferSize: size})
	res := mustOpen(t, m, OpenOptions{Command: "seq 1 200000; echo DONE_MARK; exec sleep 1000"}, ReadOptions{WaitFor: regexp.MustCompile(`(?m)^DONE_MARK$`)})
	if res.Reason != ReasonMatched || !strings.HasSuffix(res.Output, "200000\nDONE_MARK\n") {
		t.Fatalf("Open() reason %q output ...%q, want %q ending in DONE_MARK", res.Reason, res.Output[max(0, len(res.Output)-40):], ReasonMatched)
	}
	if res.DroppedBytes <= 0 || res.Since != res.DroppedBytes || res.Cursor-res.Since != size {
		t.Errorf("Open() since %d cursor %d dropped %d, want the last %d bytes and the drop reported", res.Since, res.Cursor, res.DroppedBytes, size)
	}
}
