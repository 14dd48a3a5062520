package pty

import (
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// queryScript asks the terminal a question the way programs do: terminal in raw mode,
// query written, answer read with a deadline of its own (a program that gets no answer
// gives up eventually; the test then sees TIMEOUT, never hangs). Arguments: lines of
// filler text to print first, bytes to print before the query, the query, a regular
// expression that matches a complete answer, how many times to ask (for the benchmark).
// It prints the answer of the last round in hex, and the median time from query to
// answer in microseconds.
const queryScript = `
import codecs, os, re, select, sys, termios, time, tty
fd = 0
filler = int(sys.argv[1])
pre, query, end = (codecs.decode(a, 'unicode_escape').encode('latin-1') for a in sys.argv[2:5])
rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 1
old = termios.tcgetattr(fd)
tty.setraw(fd)
chunk = []
for i in range(filler):
    chunk.append(b'filler line %d with some text to scroll by\r\n' % i)
    if len(chunk) == 1000:
        os.write(1, b''.join(chunk)); chunk = []
os.write(1, b''.join(chunk) + pre)
times = []
timeout = False
for r in range(rounds):
    t0 = time.perf_counter()
    os.write(1, query)
    got = b''
    deadline = time.time() + 30
    while not re.search(end, got):
        left = deadline - time.time()
        if left <= 0:
            timeout = True
            break
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            got += os.read(fd, 1024)
    times.append(time.perf_counter() - t0)
    if timeout:
        break
termios.tcsetattr(fd, termios.TCSAFLUSH, old)
times.sort()
os.write(1, b'\r\n%s=%s MEDIAN_US=%d\r\n' % (b'TIMEOUT' if timeout else b'REPLY', got.hex().encode(), int(times[len(times)//2]*1e6)))
`

var replyLine = regexp.MustCompile(`(?m)^(REPLY|TIMEOUT)=([0-9a-f]*) MEDIAN_US=(\d+)\s*$`)

// needPython skips a test when python3 is missing; .ci/run installs it.
func needPython(t testing.TB) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	return py
}

// askTerminal runs queryScript in a session and returns the answer it read.
func askTerminal(t *testing.T, m *Manager, o OpenOptions, filler int, pre, query, end string) []byte {
	t.Helper()
	py := needPython(t)
	script := filepath.Join(t.TempDir(), "query.py")
	if err := os.WriteFile(script, []byte(queryScript), 0o644); err != nil {
		t.Fatal(err)
	}
	o.Command = fmt.Sprintf("exec %s %s %d %s %s %s", py, script, filler, shQuote(pre), shQuote(query), shQuote(end))
	res := mustOpen(t, m, o, ReadOptions{WaitFor: never})
	res = readToExit(t, m, res.SessionID, ReadOptions{MaxBytes: 4096})
	g := replyLine.FindStringSubmatch(res.Output)
	if g == nil {
		t.Fatalf("query %q: no REPLY line in %q", query, res.Output)
	}
	got, _ := hex.DecodeString(g[2])
	if g[1] == "TIMEOUT" {
		t.Fatalf("query %q: the program got no complete answer; it read %q", query, got)
	}
	return got
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestTerminal_answers asks each question a real program asks (Python in raw mode, as
// crossterm and prompt_toolkit do) and checks the answer.
func TestTerminal_answers(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	for _, tc := range []struct {
		name         string
		pre, query   string
		end, want    string
		filler       int
		cols, rows   int
		wantTemplate bool
	}{
		{name: "cursor position", pre: `\x1b[5;10H`, query: `\x1b[6n`, end: `R`, want: "\x1b[5;10R"},
		{name: "cursor after text", pre: `\x1b[2J\x1b[Habc\r\nde`, query: `\x1b[6n`, end: `R`, want: "\x1b[2;3R"},
		{name: "cursor after wide text", pre: `\x1b[H\xe6\x97\xa5\xe6\x9c\xac`, query: `\x1b[6n`, end: `R`, want: "\x1b[1;5R"},
		{name: "cursor DEC form", pre: `\x1b[3;4H`, query: `\x1b[?6n`, end: `R`, want: "\x1b[?3;4;1R"},
		// 200,000 lines (8 MB) put the emulator far behind: the answer waits for it to
		// catch up (skipping ahead), and is still right.
		{name: "cursor after bulk output", filler: 200000, pre: `end\x1b[7G`, query: `\x1b[6n`, end: `R`, want: "\x1b[40;7R"},
		{name: "status", query: `\x1b[5n`, end: `n`, want: "\x1b[0n"},
		{name: "DA1", query: `\x1b[c`, end: `c`, want: "\x1b[?62;22c"},
		{name: "DA1 with 0", query: `\x1b[0c`, end: `c`, want: "\x1b[?62;22c"},
		{name: "DA2", query: `\x1b[>c`, end: `c`, want: "\x1b[>1;10;0c"},
		{name: "DECRQM bracketed paste default", query: `\x1b[?2004$p`, end: `y`, want: "\x1b[?2004;2$y"},
		{name: "DECRQM bracketed paste set", pre: `\x1b[?2004h`, query: `\x1b[?2004$p`, end: `y`, want: "\x1b[?2004;1$y"},
		{name: "DECRQM cursor visible", query: `\x1b[?25$p`, end: `y`, want: "\x1b[?25;1$y"},
		{name: "DECRQM cursor hidden", pre: `\x1b[?25l`, query: `\x1b[?25$p`, end: `y`, want: "\x1b[?25;2$y"},
		{name: "DECRQM alternate screen", pre: `\x1b[?1049h`, query: `\x1b[?1049$p`, end: `y`, want: "\x1b[?1049;1$y"},
		{name: "DECRQM unknown mode", query: `\x1b[?9999$p`, end: `y`, want: "\x1b[?9999;0$y"},
		{name: "DECRQM insert mode", pre: `\x1b[4h`, query: `\x1b[4$p`, end: `y`, want: "\x1b[4;1$y"},
		{name: "foreground BEL", query: `\x1b]10;?\x07`, end: `\x07`, want: "\x1b]10;rgb:ffff/ffff/ffff\x07"},
		{name: "background BEL", query: `\x1b]11;?\x07`, end: `\x07`, want: "\x1b]11;rgb:0000/0000/0000\x07"},
		{name: "background ST", query: `\x1b]11;?\x1b\\`, end: `\x1b\\\\`, want: "\x1b]11;rgb:0000/0000/0000\x1b\\"},
		{name: "cursor colour ST", query: `\x1b]12;?\x1b\\`, end: `\x1b\\\\`, want: "\x1b]12;rgb:ffff/ffff/ffff\x1b\\"},
		{name: "background as set", pre: `\x1b]11;#fdf6e3\x07`, query: `\x1b]11;?\x07`, end: `\x07`, want: "\x1b]11;rgb:fdfd/f6f6/e3e3\x07"},
		{name: "text area size", query: `\x1b[18t`, end: `t`, want: "\x1b[8;40;120t"},
		{name: "text area size 80x24", query: `\x1b[18t`, end: `t`, want: "\x1b[8;24;80t", cols: 80, rows: 24},
		// Answers go out in the order of the questions: DA1 is how programs learn that
		// the questions before it got no answer.
		{name: "in order", pre: `\x1b[2;2H`, query: `\x1b[6n\x1b[c`, end: `c`, want: "\x1b[2;2R\x1b[?62;22c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := OpenOptions{Cols: tc.cols, Rows: tc.rows}
			got := askTerminal(t, m, o, tc.filler, tc.pre, tc.query, tc.end)
			if string(got) != tc.want {
				t.Errorf("answer to %q = %q, want %q", tc.query, got, tc.want)
			}
		})
	}
}

// TestTerminal_answersBash asks with bash's read, the way shell scripts find the cursor.
func TestTerminal_answersBash(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	o := bash(t)
	res := mustOpen(t, m, o, ReadOptions{WaitFor: prompt})
	cmd := `printf '\033[2J\033[12;34H'; IFS='[;' read -rs -d R -p $'\033[6n' _ row col; echo; echo "ROW=$row COL=$col"` + "\n"
	got := mustIO(t, m, res.SessionID, cmd, ReadOptions{WaitFor: regexp.MustCompile(`(?m)^ROW=\d+ COL=\d+`)})
	if !strings.Contains(got.Output, "ROW=12 COL=34") {
		t.Errorf("bash read of the cursor position: output %q, want ROW=12 COL=34", got.Output)
	}
}

// TestTerminal_answersTput asks the questions terminfo names (u7: cursor position, u9:
// device attributes) with tput, and reads the answers with bash.
func TestTerminal_answersTput(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	if _, err := exec.LookPath("tput"); err != nil {
		t.Skip("tput is not installed")
	}
	m := newManager(t, Config{})
	res := mustOpen(t, m, bash(t), ReadOptions{WaitFor: prompt})
	cmd := `tput clear; tput cup 6 8; stty -echo -icanon; tput u7; IFS='[;' read -rs -d R _ row col; tput u9; read -rs -d c da; stty sane; echo; echo "CPR=$row,$col DA=${da#*[}"` + "\n"
	got := mustIO(t, m, res.SessionID, cmd, ReadOptions{WaitFor: regexp.MustCompile(`(?m)^CPR=\S+ DA=\S+`)})
	if !strings.Contains(got.Output, "CPR=7,9 DA=?62;22") {
		t.Errorf("tput u7, u9: output %q, want CPR=7,9 DA=?62;22", got.Output)
	}
}

// TestTerminal_answersAfterResize answers the text area size as it is now.
func TestTerminal_answersAfterResize(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, bash(t), ReadOptions{WaitFor: prompt})
	if err := m.Resize(res.SessionID, 100, 30); err != nil {
		t.Fatal(err)
	}
	cmd := `IFS=';' read -rs -d t -p $'\033[18t' _ rows cols; echo; echo "SIZE=${cols}x$rows"` + "\n"
	got := mustIO(t, m, res.SessionID, cmd, ReadOptions{WaitFor: regexp.MustCompile(`(?m)^SIZE=\S+`)})
	if !strings.Contains(got.Output, "SIZE=100x30") {
		t.Errorf("text area size after a resize to 100x30: output %q", got.Output)
	}
}

// TestTerminal_fish starts fish: fish 4 asks for the device attributes at start and
// complains when no answer comes (fish 3 asks nothing, and must simply work).
func TestTerminal_fish(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("fish is not installed")
	}
	m := newManager(t, Config{})
	o := OpenOptions{Command: "exec " + fish + " --no-config -i", Env: map[string]string{"HOME": t.TempDir()}}
	res := mustOpen(t, m, o, ReadOptions{WaitFor: regexp.MustCompile(`[>#$] $`)})
	if res.Reason != ReasonMatched {
		t.Fatalf("fish: no prompt (reason %q); output %q", res.Reason, res.Output)
	}
	got := mustIO(t, m, res.SessionID, "echo OUT_(math 40 + 2)\n", ReadOptions{WaitFor: regexp.MustCompile(`(?m)^OUT_42`)})
	all := res.Output + got.Output
	if strings.Contains(all, "could not read response") || strings.Contains(all, "Primary Device Attribute") {
		t.Errorf("fish waited for an answer: output %q", all)
	}
}
