package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// server.log stays under its bound: past it the file is moved to server.log.1 and a new
// one starts, created 0600 whatever the umask.
func TestLogFile_Rotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), LogFileName)
	const max = 1000
	l, err := openLogFile(path, max)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	line := []byte(strings.Repeat("x", 99) + "\n")
	for i := 0; i < 25; i++ { // 2500 bytes: two rotations
		if _, err := l.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{path, path + ".1"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > max || fi.Size() == 0 {
			t.Errorf("%s is %d bytes, want 1..%d", filepath.Base(p), fi.Size(), max)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, want 0600", filepath.Base(p), fi.Mode().Perm())
		}
	}
	if _, err := os.Stat(path + ".2"); !os.IsNotExist(err) {
		t.Errorf("server.log.2 exists: only one old file is kept")
	}
	if cur, _ := os.ReadFile(path); !bytes.HasSuffix(cur, line) {
		t.Errorf("the newest line is not at the end of server.log")
	}
}

// Two servers append to one file; when one rotates, the other follows it to the new file
// instead of rotating again (which would throw away the file the first just moved aside).
func TestLogFile_SharedRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), LogFileName)
	const max = 1000
	a, err := openLogFile(path, max)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := openLogFile(path, max)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	line := []byte(strings.Repeat("a", 99) + "\n")
	for i := 0; i < 10; i++ {
		a.Write(line)
	}
	a.Write([]byte("A rotated\n")) // a moves the full file aside
	b.Write([]byte("B after\n"))   // b's file is the old one, full: it must go to the new one
	old, _ := os.ReadFile(path + ".1")
	cur, _ := os.ReadFile(path)
	if !bytes.Equal(old, bytes.Repeat(line, 10)) {
		t.Errorf("server.log.1 = %d bytes, want the ten lines before the rotation", len(old))
	}
	if string(cur) != "A rotated\nB after\n" {
		t.Errorf("server.log = %q, want both servers' lines after the rotation", cur)
	}
}

// An existing log file with wider permissions is narrowed to 0600.
func TestLogFile_Mode(t *testing.T) {
	path := filepath.Join(t.TempDir(), LogFileName)
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := openLogFile(path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	l.Write([]byte("new\n"))
	l.Close()
	fi, _ := os.Stat(path)
	if b, _ := os.ReadFile(path); fi.Mode().Perm() != 0o600 || string(b) != "old\nnew\n" {
		t.Errorf("log file = %q, mode %v; want appended, 0600", b, fi.Mode().Perm())
	}
}
