package protocol

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// readAll reads every line, or the error in its place, as text.
func readAll(t *testing.T, in string, max int) []string {
	t.Helper()
	lr := newLineReader(strings.NewReader(in), max)
	var got []string
	for range 100 {
		line, err := lr.next()
		var long *lineTooLongError
		switch {
		case errors.As(err, &long):
			got = append(got, "TOO LONG "+string(rune('0'+long.size%10))+" "+string(long.prefix))
			continue
		case len(line) > 0:
			got = append(got, string(line))
		}
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatalf("next() = %v", err)
		}
	}
	t.Fatal("no end of input")
	return nil
}

func TestLineReader(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		max      int
		want     []string
	}{
		{"Lines", "a\nbc\n", 10, []string{"a\n", "bc\n"}},
		{"LastLineWithoutNewline", "a\nbc", 10, []string{"a\n", "bc"}},
		{"OnlyALineWithoutNewline", "ping", 10, []string{"ping"}},
		{"Empty", "", 10, nil},
		{"AtTheLimit", "12345\n", 5, []string{"12345\n"}},
		// Over the limit: dropped, its length (mod 10 here) and prefix kept; the next line
		// is read as usual.
		{"OverTheLimit", "123456\nok\n", 5, []string{"TOO LONG 6 123456", "ok\n"}},
		{"OverTheLimitAtTheEnd", "ok\n1234567", 5, []string{"ok\n", "TOO LONG 7 1234567"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readAll(t, tc.in, tc.max); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("lines of %q = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// A line far over the limit, longer than the reader's buffer, is counted to its end and
// only its prefix is kept.
func TestLineReader_Huge(t *testing.T) {
	huge := `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"x":"` + strings.Repeat("x", 3<<20) + `"}}`
	lr := newLineReader(strings.NewReader(huge+"\n"+`{"id":1}`), 1<<20)
	_, err := lr.next()
	var long *lineTooLongError
	if !errors.As(err, &long) || long.size != len(huge) || len(long.prefix) != prefixBytes || !strings.HasPrefix(huge, string(long.prefix)) {
		t.Fatalf("next() = %v, want a lineTooLongError of %d bytes with a %d-byte prefix", err, len(huge), prefixBytes)
	}
	if id, method := peekRequest(long.prefix); string(id) != "42" || method != "tools/call" {
		t.Errorf("peekRequest = %s, %q, want 42, tools/call", id, method)
	}
	if line, err := lr.next(); string(line) != `{"id":1}` || !errors.Is(err, io.EOF) {
		t.Errorf("next() after it = %q, %v, want the last line and EOF", line, err)
	}
}

func TestPeekRequest(t *testing.T) {
	for _, tc := range []struct {
		prefix, id, method string
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":"trunc`, `7`, "tools/call"},
		{`{"method":"ping","id":"x"}`, `"x"`, "ping"},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"a":"trunc`, ``, "tools/call"}, // the id would come later
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"m"`, ``, "m"},                           // not an id
		{`[1,2`, ``, ""},
		{`garbage`, ``, ""},
	} {
		id, method := peekRequest([]byte(tc.prefix))
		if string(id) != tc.id || method != tc.method {
			t.Errorf("peekRequest(%s) = %s, %q, want %s, %q", tc.prefix, id, method, tc.id, tc.method)
		}
		if id != nil && !json.Valid(id) {
			t.Errorf("peekRequest(%s) id %s is not JSON", tc.prefix, id)
		}
	}
}
