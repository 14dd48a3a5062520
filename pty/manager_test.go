package pty

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Every usage error says in one sentence what was wrong and what to change: the MCP
// adapter hands these messages to a model as they are. A refused call changes nothing.
func TestManager_ErrInvalid_messages(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, OpenOptions{Command: "echo hi; exec sleep 1000", Cols: 80, Rows: 24}, ReadOptions{WaitFor: regexp.MustCompile(`hi\n`)})
	id := res.SessionID
	open := func(o OpenOptions, r ReadOptions) error {
		if o.Command == "" {
			o.Command = "true"
		}
		_, err := m.Open(t.Context(), o, r)
		return err
	}
	io := func(in Input, r ReadOptions) error {
		_, err := m.IO(t.Context(), id, in, r)
		return err
	}
	neg := int64(-5)
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"cols without rows", open(OpenOptions{Cols: 80}, ReadOptions{}), "pty.Open: give cols and rows together, each 1..1000, got 80x0"},
		{"cols 0 with rows", open(OpenOptions{Cols: 0, Rows: 5}, ReadOptions{}), "give cols and rows together, each 1..1000, got 0x5"},
		{"cols too wide", open(OpenOptions{Cols: 1001, Rows: 24}, ReadOptions{}), "cols and rows must be 1..1000, got 1001x24"},
		{"name too long", open(OpenOptions{Name: strings.Repeat("n", MaxNameLen+1)}, ReadOptions{}), "name is 201 bytes long; give one of at most 200"},
		{"NUL in command", open(OpenOptions{Command: "echo a\x00b"}, ReadOptions{}), "command contains a NUL byte"},
		{"env name", open(OpenOptions{Env: map[string]string{"A=B": "c"}}, ReadOptions{}), `env name "A=B" is not a valid variable name; use a non-empty name without '=' or NUL`},
		{"empty env name", open(OpenOptions{Env: map[string]string{"": "c"}}, ReadOptions{}), `env name "" is not a valid variable name`},
		{"NUL in env value", open(OpenOptions{Env: map[string]string{"A": "x\x00"}}, ReadOptions{}), `env "A" contains a NUL byte`},
		{"command too long", open(OpenOptions{Command: strings.Repeat("c", MaxCommandBytes+1)}, ReadOptions{}), "command is 131072 bytes, at most 131071 are accepted"},
		{"too many env", open(OpenOptions{Env: manyEnv(MaxEnvVars + 1)}, ReadOptions{}), "env has 101 variables, at most 100 are accepted"},
		{"env value too long", open(OpenOptions{Env: map[string]string{"BIG": strings.Repeat("v", MaxEnvValueBytes+1)}}, ReadOptions{}), `env "BIG" is 32769 bytes long, at most 32768 are accepted per value`},
		{"env too big", open(OpenOptions{Env: bigEnv(5, MaxEnvValueBytes)}, ReadOptions{}), "env is 163850 bytes (names and values), at most 131072 are accepted"},
		{"long bad env name", open(OpenOptions{Env: map[string]string{strings.Repeat("=", 1000): "v"}}, ReadOptions{}), `env name "` + strings.Repeat("=", 64) + `"... (1000 bytes) is not a valid variable name`},
		{"enterDir without dir", open(OpenOptions{EnterDir: "/proc/self/fd/0"}, ReadOptions{}), "enterDir is given without the dir it enters"},
		{"relative dir", open(OpenOptions{Dir: "sub"}, ReadOptions{}), `dir must be an absolute path, got "sub"`},
		{"negative timeout", open(OpenOptions{}, ReadOptions{Timeout: -time.Millisecond}), "timeout must be 0 or more, got -1ms"},
		{"negative idle", io(Input{}, ReadOptions{Idle: -time.Second}), "idle must be 0 or more, got -1s"},
		{"negative since", io(Input{}, ReadOptions{Since: &neg}), "pty.IO: since must be 0 or more, got -5"},
		{"since on open", open(OpenOptions{}, ReadOptions{Since: new(int64(7))}), "since must be 0 or omitted for a new session, got 7"},
		{"maxBytes too big", io(Input{}, ReadOptions{MaxBytes: MaxReadBytes + 1}), "maxBytes must be 1..1048576, got 1048577"},
		{"negative maxBytes", io(Input{}, ReadOptions{MaxBytes: -1}), "maxBytes must be 1..1048576, got -1"},
		{"input too big", io(Input{Data: make([]byte, MaxInputBytes+1)}, ReadOptions{}), "input is 1048577 bytes; send at most 1048576 per call"},
		{"resize rows only", io(Input{Data: []byte("x"), Rows: 30}, ReadOptions{}), "pty.IO: give cols and rows together, each 1..1000, got 0x30"},
		{"resize too tall", io(Input{Data: []byte("x"), Cols: 80, Rows: 1001}, ReadOptions{}), "cols and rows must be 1..1000, got 80x1001"},
		{"Resize 0x0", m.Resize(id, 0, 0), "pty.Resize: cols and rows must be 1..1000, got 0x0"},
	} {
		if !errors.Is(tt.err, ErrInvalid) || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want ErrInvalid saying %q", tt.name, tt.err, tt.want)
		}
	}
	for _, tt := range []struct {
		name  string
		sig   syscall.Signal
		grace time.Duration
		want  string
	}{
		{"no signal", 0, DefaultGrace, "signal 0 is not a signal number 1..64; SIGHUP (1) is the usual one to close with"},
		{"negative grace", syscall.SIGHUP, -time.Second, "grace must be 0s..1m0s, got -1s"},
		{"grace too long", syscall.SIGHUP, MaxGrace + time.Second, "grace must be 0s..1m0s, got 1m1s"},
	} {
		if _, err := m.Close(t.Context(), id, tt.sig, tt.grace); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Close(%s) = %v, want ErrInvalid saying %q", tt.name, err, tt.want)
		}
	}
	infos := m.List()
	if len(infos) != 1 || infos[0].Cols != 80 || infos[0].Rows != 24 {
		t.Fatalf("List() = %+v, want only the first session, still 80x24", infos)
	}
	// Nothing refused was written: the program's input is empty.
	got := mustIO(t, m, id, "", ReadOptions{Since: new(int64(0))})
	if got.Output != "hi\n" {
		t.Errorf("output after refused calls = %q, want only %q", got.Output, "hi\n")
	}
}

// A zero Timeout means what it says: return what is there now. Input is still written.
func TestManager_timeoutZero(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res, err := m.Open(t.Context(), OpenOptions{Command: "exec sleep 1000"}, ReadOptions{})
	if err != nil || res.Reason != ReasonTimeout || res.Exited {
		t.Fatalf("Open(Timeout 0) = %+v, %v, want %q at once, running", res, err, ReasonTimeout)
	}
	cat := mustOpen(t, m, OpenOptions{Command: "stty -echo; echo ready; exec cat"}, ReadOptions{WaitFor: regexp.MustCompile(`ready\n`)})
	got, err := m.IO(t.Context(), cat.SessionID, Input{Data: []byte("ping\n")}, ReadOptions{WaitFor: never})
	if err != nil || got.Reason != ReasonTimeout || got.Written != len("ping\n") {
		t.Fatalf("IO(ping, Timeout 0) = %+v, %v, want %q with all 5 bytes written", got, err, ReasonTimeout)
	}
	// Re-read from before the input: the zero-timeout call may already have returned
	// cat's answer, if it came that fast.
	if got := mustIO(t, m, cat.SessionID, "", ReadOptions{Since: new(cat.Cursor), WaitFor: regexp.MustCompile(`ping\n`)}); got.Reason != ReasonMatched {
		t.Errorf("read after IO(Timeout 0) = %+v, want cat's answer to the input", got)
	}
}

// A zero grace sends the signal and SIGKILL right after it, whatever the Manager's own
// (Shutdown) grace: a program that ignores the signal does not get to wait it out.
func TestManager_Close_graceZero(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{Grace: time.Hour})
	res := mustOpen(t, m, OpenOptions{Command: "trap '' HUP; echo ready; exec sleep 1000"}, ReadOptions{WaitFor: regexp.MustCompile(`ready\n`)})
	// Were zero read as the Manager's hour, only the end of ctx would cut the grace.
	ctx, cancel := context.WithTimeout(t.Context(), waitLong)
	defer cancel()
	cr, err := m.Close(ctx, res.SessionID, syscall.SIGHUP, 0)
	if err != nil || cr.Signal == nil || *cr.Signal != "SIGKILL" {
		t.Fatalf("Close(SIGHUP, 0) = %+v, %v, want killed by SIGKILL", cr, err)
	}
	if ctx.Err() != nil {
		t.Errorf("Close(SIGHUP, 0) returned only when ctx ended: the grace was not zero")
	}
}

// IO resizes before it writes, so the program answers at the new size.
func TestManager_IO_resize(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, bash(t), ReadOptions{WaitFor: prompt})
	got, err := m.IO(t.Context(), res.SessionID, Input{Data: []byte("stty size\n"), Cols: 100, Rows: 30},
		ReadOptions{WaitFor: regexp.MustCompile(`(?m)^\d+ \d+$`), Timeout: waitLong})
	if err != nil || !strings.Contains(got.Output, "\n30 100\n") {
		t.Errorf("IO(stty size, 100x30) = %q, %v, want 30 100", got.Output, err)
	}
}

// manyEnv is n variables V0..V(n-1).
func manyEnv(n int) map[string]string {
	env := map[string]string{}
	for i := range n {
		env["V"+strconv.Itoa(i)] = "x"
	}
	return env
}

// bigEnv is n variables of size bytes each.
func bigEnv(n, size int) map[string]string {
	env := map[string]string{}
	for i := range n {
		env["V"+strconv.Itoa(i)] = strings.Repeat("v", size)
	}
	return env
}
