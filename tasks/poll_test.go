package tasks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Version moves with every change of a graph's tasks and only then: a poller that saw
// it unchanged has missed nothing.
func TestReader_Version(t *testing.T) {
	te := newTestEngine(t)
	r := te.e.Reader
	gate := filepath.Join(te.dir, "gate")
	sub := te.submit(t, Spec{Tasks: []TaskSpec{tsk("a", "while [ ! -e gate ]; do sleep 0.01; done"), tsk("b", "true", "a")}})
	id := sub.Graph.ID
	te.waitStatus(t, id, "a", Running)
	// A start is recorded twice: the running state before the process exists, then its
	// pid once it does. Both are in before the version is read twice with nothing changing
	// in between (read between the two writes, the second read saw the pid's write).
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	if _, ok, err := te.e.WaitFor(ctx, id, func(Snapshot) (bool, error) {
		rows, err := te.db.GraphTasks(ctx, id)
		if err != nil {
			return false, err
		}
		for _, row := range rows {
			if row.ID == "a" {
				return row.Pid != nil, nil
			}
		}
		return false, nil
	}); !ok || err != nil {
		t.Fatalf("task a's pid was never recorded: %v", err)
	}
	v1, err := r.Version(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := r.Version(t.Context(), id); v != v1 || err != nil {
		t.Errorf("Version(%s) read again with nothing changed = %d, %v; want %d", id, v, err, v1)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	te.waitDone(t, id)
	if v, err := r.Version(t.Context(), id); v <= v1 || err != nil {
		t.Errorf("Version(%s) after its tasks ended = %d, %v; want more than %d", id, v, err, v1)
	}
	if _, err := r.Version(t.Context(), "g-NONE"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Version(g-NONE) = %v, want ErrNotFound", err)
	}
}

// LogTail reads the last lines of a live log, and of an expired graph's from its archive.
func TestReader_LogTail(t *testing.T) {
	te := newExpiringEngine(t)
	r := te.e.Reader
	sub := te.submit(t, Spec{Tasks: []TaskSpec{tsk("a", "for i in 1 2 3 4 5; do echo line$i; done"), tsk("quiet", "true")}})
	id := sub.Graph.ID
	te.waitDone(t, id)
	for _, tt := range []struct {
		task  string
		lines int
		max   int64
		want  string
	}{
		{"a", 2, 1 << 10, "line4\nline5\n"},
		{"a", 9, 1 << 10, "line1\nline2\nline3\nline4\nline5\n"},
		{"a", 9, 13, "line4\nline5\n"}, // the bytes bound it, from a line start
		{"quiet", 5, 1 << 10, ""},
	} {
		if got, err := r.LogTail(t.Context(), id, tt.task, tt.lines, tt.max); got != tt.want || err != nil {
			t.Errorf("LogTail(%s, %d, %d) of a live log = %q, %v; want %q", tt.task, tt.lines, tt.max, got, err, tt.want)
		}
	}
	makeExpirable(t, te, id)
	if err := te.e.Expire(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.LogPath(id, "a")); !os.IsNotExist(err) {
		t.Fatalf("the live log is still there after Expire: %v", err)
	}
	for _, tt := range []struct {
		lines int
		max   int64
		want  string
	}{
		{2, 1 << 10, "line4\nline5\n"},
		{9, 13, "line4\nline5\n"},
	} {
		if got, err := r.LogTail(t.Context(), id, "a", tt.lines, tt.max); got != tt.want || err != nil {
			t.Errorf("LogTail(a, %d, %d) of an expired graph = %q, %v; want %q from the archive", tt.lines, tt.max, got, err, tt.want)
		}
	}
}

func TestLastBytes(t *testing.T) {
	for _, tt := range []struct {
		writes []string
		max    int
		want   string
	}{
		{[]string{"ab\n", "cd\n"}, 10, "ab\ncd\n"},
		{[]string{"ab\n", "cd\n", "ef\n"}, 7, "cd\nef\n"},
		{[]string{strings.Repeat("x", 20)}, 5, "xxxxx"}, // no line start: cut at a byte
		{[]string{"abc\ndefgh"}, 6, "defgh"},
	} {
		w := &lastBytes{max: tt.max}
		for _, s := range tt.writes {
			w.Write([]byte(s))
		}
		if got := string(w.b); got != tt.want {
			t.Errorf("lastBytes(%d) after %q = %q, want %q", tt.max, tt.writes, got, tt.want)
		}
	}
}
