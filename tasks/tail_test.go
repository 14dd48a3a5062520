package tasks

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// refTail is tail.go's rule written the slow, obvious way, for the tests to check the
// engine's readers against: the line starts of log are 0 and every byte after a newline
// that is not the last byte; a tail is its last lines line starts (lines < 0: all) among
// those within the last maxBytes bytes, or, when none is, the window cut at a character.
func refTail(log string, lines, maxBytes int) string {
	if lines == 0 || maxBytes <= 0 || log == "" {
		return ""
	}
	floor := max(len(log)-maxBytes, 0)
	var in []int
	for s := range len(log) {
		if s >= floor && (s == 0 || log[s-1] == '\n') {
			in = append(in, s)
		}
	}
	switch {
	case len(in) == 0:
		s := floor
		for s < len(log) && s < floor+3 && !utf8.RuneStart(log[s]) {
			s++
		}
		return log[s:]
	case lines < 0 || lines >= len(in):
		return log[in[0]:]
	}
	return log[in[len(in)-lines]:]
}

func writeTemp(t testing.TB, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "task.log")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkTail checks a tail slice of log against refTail: its text, where it says it starts
// and what it says it skipped.
func checkTail(t *testing.T, what string, s LogSlice, log string, lines, maxBytes int) {
	t.Helper()
	want := refTail(log, lines, maxBytes)
	skipped := int64(len(log) - len(want))
	if s.Text != want || s.Offset != skipped || s.SkippedBytes == nil || *s.SkippedBytes != skipped ||
		s.Size != int64(len(log)) || s.NextOffset != s.Size || !s.EOF {
		got := "nil"
		if s.SkippedBytes != nil {
			got = strconv.FormatInt(*s.SkippedBytes, 10)
		}
		t.Errorf("%s of %.30q = %.30q at %d (skippedBytes %s), want %.30q at %d", what, log, s.Text, s.Offset, got, want, skipped)
	}
}

// A byte tail starts at the first line that starts within it and says what it skipped;
// a window with no line start in it is cut mid-line at a character. Before, a tail began
// wherever its byte count fell, mid-line, and said nothing of what came before.
func TestTailLog_StartsAtALine(t *testing.T) {
	long := strings.Repeat("x", 5000)
	tests := []struct {
		name, log string
		n         int
		want      string
	}{
		{"MidLine", "alpha\nbeta\ngamma\n", 8, "gamma\n"},
		{"AtALine", "alpha\nbeta\ngamma\n", 11, "beta\ngamma\n"},
		{"Whole", "alpha\nbeta\n", 100, "alpha\nbeta\n"},
		{"NoFinalNewline", "alpha\nbeta\ngam", 6, "gam"},
		{"NoLineStart", "head\n" + long, 10, "xxxxxxxxxx"},
		{"OnlyTheFinalNewline", "head\n" + long + "\n", 10, "xxxxxxxxx\n"},
		{"NoLineStartNoHalfCharacter", "wörld", 4, "rld"},
		{"EmptyLines", "a\n\n\n", 2, "\n\n"},
		{"Zero", "alpha\n", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := refTail(tt.log, -1, tt.n); got != tt.want {
				t.Fatalf("refTail(%q, %d) = %q, want %q: the reference is wrong", tt.log, tt.n, got, tt.want)
			}
			s, err := TailLog(writeTemp(t, tt.log), int64(tt.n))
			if err != nil {
				t.Fatal(err)
			}
			checkTail(t, fmt.Sprintf("TailLog(%d)", tt.n), s, tt.log, -1, tt.n)
		})
	}
	s, err := TailLog(filepath.Join(t.TempDir(), "none.log"), 100)
	if err != nil || s.Text != "" || !s.EOF || s.SkippedBytes == nil || *s.SkippedBytes != 0 {
		t.Errorf("TailLog of a log not written yet = %+v, %v; want empty, eof, 0 skipped", s, err)
	}
}

// A lines tail is the last n lines, counted as tail(1) counts them, within the bytes a
// tail may read; lines longer than that are cut as a byte tail is.
func TestTailLines(t *testing.T) {
	tests := []struct {
		name, log string
		n, max    int
		want      string
	}{
		{"Two", "a\nb\nc\n", 2, 100, "b\nc\n"},
		{"MoreThanThere", "a\nb\nc\n", 9, 100, "a\nb\nc\n"},
		{"NoFinalNewline", "a\nb\nc", 2, 100, "b\nc"},
		{"Zero", "a\nb\n", 0, 100, ""},
		{"CutToTheBytes", "a\nbb\nccc\n", 3, 5, "ccc\n"},
		{"OneLongLine", "a\n" + strings.Repeat("y", 100), 1, 10, strings.Repeat("y", 10)},
		{"AcrossBlocks", strings.Repeat("z", 3*tailBlock) + "\nlast\n", 1, 4 * tailBlock, "last\n"},
		{"LongLinesAcrossBlocks", "one\n" + strings.Repeat("w", 2*tailBlock) + "\n", 1, 4 * tailBlock, strings.Repeat("w", 2*tailBlock) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := refTail(tt.log, tt.n, tt.max); got != tt.want {
				t.Fatalf("refTail = %.30q, want %.30q: the reference is wrong", got, tt.want)
			}
			s, err := TailLines(writeTemp(t, tt.log), tt.n, int64(tt.max))
			if err != nil {
				t.Fatal(err)
			}
			checkTail(t, fmt.Sprintf("TailLines(%d, %d)", tt.n, tt.max), s, tt.log, tt.n, tt.max)
		})
	}
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	f    *os.File
	read int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.f.ReadAt(p, off)
	c.read += int64(n)
	return n, err
}

// The last lines of a 1 GiB log (sparse but for its end) are found reading backwards
// from the end: what is read is the tail and at most a block more, never the log.
func TestTailStart_ReadsOnlyTheTail(t *testing.T) {
	const size = 1 << 30
	end := strings.Repeat("a log line\n", 100)
	path := filepath.Join(t.TempDir(), "big.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size - int64(len(end))); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(end), size-int64(len(end))); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lines    int
		maxBytes int64
	}{{20, MaxLogTail}, {-1, DefaultLogTail}, {MaxLogLines, MaxLogTail}, {5, size}} {
		r := &countingReaderAt{f: f}
		start, atLine, err := tailStart(r, size, tc.lines, tc.maxBytes)
		if err != nil {
			t.Fatal(err)
		}
		if r.read > tailBlock+min(tc.maxBytes, tailBlock)+1 {
			t.Errorf("tailStart(%d lines, %d bytes) of a 1 GiB log read %d bytes, want the tail and at most a block more", tc.lines, tc.maxBytes, r.read)
		}
		if tc.lines == 20 && (start != size-int64(20*len("a log line\n")) || !atLine) {
			t.Errorf("the last 20 lines start at %d (at a line: %v), want %d", start, atLine, size-20*11)
		}
	}
}

// FuzzTail checks every reader of tails against refTail: the live log's (TailLog,
// TailLines), the archived log's (a window held in memory, as readArtifactLogs reads it)
// and the CLI's for an archived log (counted in one pass, written in a second).
func FuzzTail(f *testing.F) {
	for _, seed := range []string{"", "a\nb\nc\n", "a\nb\nc", "\n\n\n", "héllo\nwörld", strings.Repeat("x\n", 50), "no newline at all"} {
		for _, n := range []int{-1, 0, 1, 2, 7} {
			f.Add(seed, n, uint16(5))
			f.Add(seed, n, uint16(300))
		}
	}
	f.Fuzz(func(t *testing.T, log string, lines int, maxBytes uint16) {
		lines = max(min(lines, MaxLogLines), -1)
		path := writeTemp(t, log)
		var s LogSlice
		var err error
		if lines < 0 {
			s, err = TailLog(path, int64(maxBytes))
		} else {
			s, err = TailLines(path, lines, int64(maxBytes))
		}
		if err != nil {
			t.Fatal(err)
		}
		checkTail(t, "live tail", s, log, lines, int(maxBytes))

		low := max(len(log)-int(maxBytes)-1, 0)
		w := window{base: int64(low), buf: []byte(log[low:])}
		start, atLine, err := tailStart(w, int64(len(log)), lines, int64(maxBytes))
		if err != nil {
			t.Fatal(err)
		}
		got := tailSlice(LogSlice{Size: int64(len(log))}, start, atLine, log[start:])
		checkTail(t, "archived tail", got, log, lines, int(maxBytes))

		if lines >= 0 {
			var c lineCounter
			c.Write([]byte(log))
			var out bytes.Buffer
			if err := afterNewlines(strings.NewReader(log), c.skipNewlines(lines), &out); err != nil {
				t.Fatal(err)
			}
			if want := refTail(log, lines, len(log)); out.String() != want {
				t.Errorf("CLI tail of an archived log, %d lines of %.30q = %.30q, want %.30q", lines, log, out.String(), want)
			}
			if off, err := tailOffset(path, lines); err != nil || log[off:] != out.String() {
				t.Errorf("CLI tail of a live log, %d lines of %.30q = %.30q (%v), want %.30q as of an archived one", lines, log, log[off:], err, out.String())
			}
		}
	})
}

// tasks_status's tails of real tasks' logs, live and once the graph expired (from its
// archive): the last lines asked for, and a byte tail that starts at a line, each saying
// what it skipped; the CLI's lines tail (`tasks logs --tail`) reads the same lines.
func TestStatus_TailsOfRealLogs(t *testing.T) {
	te := newExpiringEngine(t)
	sub := te.submit(t, Spec{Tasks: []TaskSpec{
		tsk("seq", "seq 1 100000"),
		tsk("bar", "echo start; head -c 200000 /dev/zero | tr '\\0' '#'"), // one long line, no final newline
	}})
	te.waitDone(t, sub.Graph.ID)
	logs := map[string]string{}
	for _, id := range []string{"seq", "bar"} {
		b, err := os.ReadFile(te.e.LogPath(sub.Graph.ID, id))
		if err != nil {
			t.Fatal(err)
		}
		logs[id] = string(b)
	}
	twenty := 20
	var last20 strings.Builder
	for i := 99981; i <= 100000; i++ {
		fmt.Fprintln(&last20, i)
	}
	check := func(where string) {
		t.Helper()
		snap, err := te.e.Snapshot(t.Context(), sub.Graph.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []LogQuery{{Tail: 10}, {Tail: DefaultLogTail}, {Tail: MaxLogTail, Lines: &twenty}} {
			out, err := te.e.Status(t.Context(), snap, StatusQuery{TaskIDs: []string{"seq", "bar"}, Log: q})
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range out.Tasks {
				if task.Log == nil {
					t.Fatalf("%s: %s has no log (notes %q)", where, task.ID, out.Notes)
				}
				what := fmt.Sprintf("%s: %s's tail (%d lines, %d bytes)", where, task.ID, q.tailLines(), q.Tail)
				if task.ID == "bar" && q.Tail == MaxLogTail {
					// More than the result holds: cut to fit it (fit.go), still the log's end.
					l, full := task.Log, logs["bar"]
					if l.Text == "" || !strings.HasSuffix(full, l.Text) || l.Offset != int64(len(full)-len(l.Text)) || l.SkippedBytes == nil || *l.SkippedBytes != l.Offset {
						t.Errorf("%s = %d bytes at %d, want the end of the log, its skippedBytes its offset", what, len(l.Text), l.Offset)
					}
					continue
				}
				checkTail(t, what, *task.Log, logs[task.ID], q.tailLines(), int(q.Tail))
			}
			if task := out.Tasks[slices.IndexFunc(out.Tasks, func(x TaskStatus) bool { return x.ID == "seq" })]; q.Lines != nil && task.Log.Text != last20.String() {
				t.Errorf("%s: the last 20 lines of seq 1 100000 = %.40q, want 99981..100000", where, task.Log.Text)
			}
			// bar's last lines are longer than a tail reads: a note says so, and how to read on.
			said := slices.ContainsFunc(out.Notes, func(n string) bool {
				return strings.Contains(n, `The last 20 lines of ["bar"] take more than`) && strings.Contains(n, "logOffset")
			})
			if said != (q.Lines != nil) {
				t.Errorf("%s: notes %q for %d lines: want a note on bar's lines only for a lines tail", where, out.Notes, q.tailLines())
			}
		}
		var cli strings.Builder
		if err := te.e.CopyLog(t.Context(), snap, "seq", 20, &cli); err != nil || cli.String() != last20.String() {
			t.Errorf("%s: tasks logs --tail 20 = %.40q, %v; want 99981..100000", where, cli.String(), err)
		}
	}
	check("live")
	makeExpirable(t, te, sub.Graph.ID)
	if err := te.e.Expire(t.Context()); err != nil {
		t.Fatal(err)
	}
	check("archived")
}

// The CLI's lines tail of an archived log holds no line in memory: a line longer than
// the 16 MiB a line scanner would take is written whole (before, it failed with "token
// too long").
func TestCopyLog_ArchivedTailOfAHugeLine(t *testing.T) {
	te := newExpiringEngine(t)
	sub := te.submit(t, Spec{Tasks: []TaskSpec{tsk("huge", "echo first; head -c 17000000 /dev/zero | tr '\\0' x; echo; echo end")}})
	te.waitDone(t, sub.Graph.ID)
	makeExpirable(t, te, sub.Graph.ID)
	if err := te.e.Expire(t.Context()); err != nil {
		t.Fatal(err)
	}
	snap, err := te.e.Snapshot(t.Context(), sub.Graph.ID)
	if err != nil || snap.Graph.ExpiredAt == nil {
		t.Fatalf("graph not expired: %v", err)
	}
	var out bytes.Buffer
	if err := te.e.CopyLog(t.Context(), snap, "huge", 2, &out); err != nil {
		t.Fatalf("tasks logs --tail 2 of an archived log with a 17 MB line: %v", err)
	}
	if want := strings.Repeat("x", 17000000) + "\nend\n"; out.String() != want {
		t.Errorf("tasks logs --tail 2 = %d bytes (%.20q...), want the 17 MB line and end", out.Len(), out.String())
	}
}
