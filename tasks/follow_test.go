package tasks

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestTailOffset(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		content string
		n       int
		want    string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc\n", 3, "a\nb\nc\n"},
		{"a\nb\nc\n", 9, "a\nb\nc\n"},
		{"a\nb\nc\n", 0, ""},
		{"a\nb\nc", 1, "c"}, // no final newline: the partial line counts
		{"a\nb\nc", 2, "b\nc"},
		{"\n\n", 1, "\n"},
		{"", 5, ""},
		{strings.Repeat("x", 200000) + "\nlast\n", 1, "last\n"}, // across read blocks
		{"one\n" + strings.Repeat("y", 100000) + "\n", 1, strings.Repeat("y", 100000) + "\n"},
	}
	for i, tt := range tests {
		path := filepath.Join(dir, strconv.Itoa(i)+".log")
		if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
			t.Fatal(err)
		}
		off, err := tailOffset(path, tt.n)
		if err != nil {
			t.Fatal(err)
		}
		if got := tt.content[off:]; got != tt.want {
			t.Errorf("tailOffset(%.20q, %d) gives %.20q, want %.20q", tt.content, tt.n, got, tt.want)
		}
	}
	if off, err := tailOffset(filepath.Join(dir, "missing.log"), 3); off != 0 || err != nil {
		t.Errorf("tailOffset(missing) = %d, %v; want 0, nil (a task not started yet)", off, err)
	}
}
