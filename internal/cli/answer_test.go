package cli

import (
	"os"
	"strings"
	"testing"

	creackpty "github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// An answer is read into one buffer made for it, whole, however long: no earlier,
// smaller copy of a part of it is left behind in memory.
func TestReadAnswer_oneBuffer(t *testing.T) {
	master, slave, err := creackpty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	f, err := os.OpenFile(slave.Name(), os.O_RDWR|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	tty := ttyFile{f}
	defer tty.Close()
	secret := strings.Repeat("0123456789abcdef", 100) // longer than one read of 1024
	go master.Write([]byte(secret + "\n"))
	line, err := readAnswer(tty, true)
	if err != nil {
		t.Fatal(err)
	}
	defer clear(line)
	if string(line) != secret {
		t.Fatalf("readAnswer() = %d bytes, want the %d typed", len(line), len(secret))
	}
	if cap(line) != maxAnswer {
		t.Errorf("readAnswer()'s line has capacity %d, want the buffer of %d made for it: it was grown, and its earlier arrays left uncleared", cap(line), maxAnswer)
	}
	if rest := line[len(line):cap(line)]; strings.Trim(string(rest), "\x00") != "" {
		t.Errorf("the buffer past the line holds %q, want it cleared", rest)
	}
}
