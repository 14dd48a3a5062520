package pty

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A watcher (an MCP App's terminal view) re-reads with Since and End and asks for the
// styled screen: it sees the colours of what the program printed, and the agent's next
// read still returns that output.
func TestScreen_StyledPeekStealsNothing(t *testing.T) {
	m := newManager(t, Config{})
	// The program prints once the file go exists, which the test makes after the agent's
	// read: its output comes after the agent's cursor whatever the machine's load.
	goFile := filepath.Join(t.TempDir(), "go")
	open := mustOpen(t, m, OpenOptions{
		Command: `echo ready; while [ ! -e ` + goFile + ` ]; do sleep 0.01; done; ` +
			`printf '\033[1;31mRED\033[0m plain \033[4;44;38;2;1;2;3mU\033[0m\n'; read wait`,
	}, ReadOptions{WaitFor: regexp.MustCompile(`ready`)})
	id := open.SessionID
	cursor := open.Cursor // the agent's cursor
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	peek := func() ReadResult {
		at := cursor
		r, err := m.IO(t.Context(), id, Input{}, ReadOptions{Since: &at, End: &at, Screen: true, Styled: true})
		if err != nil {
			t.Fatalf("peek: %v", err)
		}
		return r
	}
	var seen ReadResult
	eventually(t, "the styled line on the watcher's screen", func() bool {
		seen = peek()
		return seen.Screen != nil && strings.Contains(strings.Join(seen.Screen.Lines, "\n"), "RED plain U")
	})
	if seen.Output != "" || seen.Cursor != cursor {
		t.Errorf("peek returned output %q, cursor %d; want none, %d", seen.Output, seen.Cursor, cursor)
	}
	row := -1
	for i, l := range seen.Screen.Lines {
		if strings.HasPrefix(l, "RED plain U") {
			row = i
		}
	}
	if row < 0 || len(seen.Screen.Styles) != seen.Screen.Rows {
		t.Fatalf("styles: %d rows for %d; lines %q", len(seen.Screen.Styles), seen.Screen.Rows, seen.Screen.Lines)
	}
	runs := seen.Screen.Styles[row]
	if len(runs) != 2 {
		t.Fatalf("row %d runs = %+v, want 2 (RED, U)", row, runs)
	}
	if p, ok := runs[0].Fg.Palette(); !ok || p != 1 || !runs[0].Bold || runs[0].Col != 0 || runs[0].Len != 3 {
		t.Errorf("RED run = %+v, want col 0 len 3 bold fg palette 1", runs[0])
	}
	if rgb, ok := runs[1].Fg.RGB(); !ok || rgb != 0x010203 || !runs[1].Underline || runs[1].Col != 10 || runs[1].Len != 1 {
		t.Errorf("U run = %+v, want col 10 len 1 underlined fg #010203", runs[1])
	}
	if p, ok := runs[1].Bg.Palette(); !ok || p != 4 {
		t.Errorf("U run bg = %v, want palette 4", runs[1].Bg)
	}
	for i, r := range seen.Screen.Styles {
		if i != row && len(r) != 0 {
			t.Errorf("row %d (%q) has runs %+v, want none", i, seen.Screen.Lines[i], r)
		}
	}
	// A plain screen carries no styles.
	at := cursor
	plain, err := m.IO(t.Context(), id, Input{}, ReadOptions{Since: &at, End: &at, Screen: true})
	if err != nil || plain.Screen == nil || plain.Screen.Styles != nil {
		t.Fatalf("plain screen: %v, styles %v", err, plain.Screen)
	}

	// The agent's next read returns what the watcher saw.
	next := mustIO(t, m, id, "", ReadOptions{})
	if !strings.Contains(next.Output, "RED plain U") || next.Since != cursor {
		t.Errorf("agent's next read = %q from %d, want RED plain U from %d", next.Output, next.Since, cursor)
	}
}
