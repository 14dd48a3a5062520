package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/mcp-harness/mcp-harness/internal/operator"
	"github.com/mcp-harness/mcp-harness/pty"
)

// `answer` is how a person answers a question a program in the agent's session asks
// (sudo's password, ssh's passphrase, a prompt) without the answer passing through the
// model: the server shows the question, the person types one line on their terminal
// (without echo when the program reads a password), and the server writes it and Enter
// into the session if the process that asked (shown to the person: askingText) still
// asks the same question. The line goes over the operator socket and nowhere else: not to
// the model, not to a log; it is read into one buffer, sent without encoding/json's
// pooled buffers (operator.Client.SendLine), and cleared.

func newAnswerCmd() *cobra.Command {
	o := &workspaceFlags{}
	cmd := &cobra.Command{
		Use:   "answer [SESSION]",
		Short: "Answer a question a program in the agent's terminal asks (a password, a prompt)",
		Long: "Answer the question a program in one of the agent's terminal sessions waits on, such as\n" +
			"sudo's password or a y/n prompt: the question and the process that asks are shown, you\n" +
			"type one line (a password is not echoed), and it is written to the session with Enter,\n" +
			"if that process still asks that question. The agent sees what the program prints after\n" +
			"it, never the password (the terminal does not echo it either), and cannot type into the\n" +
			"session meanwhile. Check who asks before you type: bash asking for a sudo password is\n" +
			"not sudo.\n\n" +
			"SESSION (default: the most recently active session that waits for input) is an id from\n" +
			"`mcp-harness sessions`. A session that does not wait for input is refused, and so is a\n" +
			"second answer while one is pending.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := o.findStateDir()
			if err != nil {
				return err
			}
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			return runAnswer(cmd.Context(), dir, id, cmd.ErrOrStderr())
		},
	}
	addWorkspaceFlags(cmd, o)
	return cmd
}

func runAnswer(ctx context.Context, stateDir, id string, stderr io.Writer) error {
	t, err := pickSession(ctx, stateDir, id, "answer", func(s operator.Session) bool { return s.State == pty.StateInput })
	if err != nil {
		return err
	}
	id = printable(t.session.SessionID) // the server's word: shown, and sent back as it is shown
	tty, err := openTTY()
	if err != nil {
		return fmt.Errorf("answer needs a terminal to read the answer from: %w", err)
	}
	defer tty.Close()
	c, err := operator.Dial(stateDir, t.endpoint)
	if err != nil {
		return fmt.Errorf("answer %s: %w", id, err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(opTimeout)); err != nil {
		return err
	}
	r, err := c.Call(operator.Request{Op: operator.OpAnswer, Session: id})
	if err != nil {
		return fmt.Errorf("answer %s: %w", id, err)
	}
	if r.Asking == nil {
		return fmt.Errorf("answer %s: the server did not say what the program asks", id)
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		return err
	}
	if _, err := tty.WriteString(askingText(id, r.Asking, t.session.Command)); err != nil {
		return err
	}
	line, err := readAnswer(tty, hidden(r.Asking))
	defer clear(line)
	if err != nil {
		return fmt.Errorf("answer %s: nothing was written: %w", id, err)
	}
	if err := c.SetDeadline(time.Now().Add(opTimeout)); err != nil {
		return err
	}
	if err := c.SendLine(line); err != nil {
		return fmt.Errorf("answer %s: %w", id, err)
	}
	if _, err := c.Recv(); err != nil {
		return fmt.Errorf("answer %s: %w", id, err)
	}
	fmt.Fprintf(stderr, "mcp-harness: answered %s\n", id)
	return nil
}

// askingText is what the person reads before they type: which session asks, which
// process asks (pid, command line, executable; whether it is setuid, and whether it is a
// relay that passes the answer on), what for, and the program's own prompt. Every string
// in it is the server's, and in part the agent's: printable. A server that does not say
// which process asks (an older one) leaves the session's command in its place.
func askingText(id string, w *operator.Waiting, command string) string {
	what := map[pty.InputKind]string{pty.InputPassword: "a password (it will not be shown)", pty.InputLine: "a line", pty.InputKeys: "keys (type a line)"}[w.Kind]
	if w.Kind == pty.InputKeys && hidden(w) {
		what = "keys for the far side of a relay (type a line; it will not be shown, since whether the far side echoes cannot be seen from here)"
	}
	if what == "" {
		what = printable(string(w.Kind))
	}
	who := shorten(printable(command), 60)
	if a := w.Asker; a != nil {
		who = shorten(printable(strings.Join(a.Args, " ")), 80)
		if who == "" {
			who = "?"
		}
		notes := []string{fmt.Sprintf("pid %d", a.Pid)}
		if a.Exe != "" {
			notes = append(notes, shorten(printable(a.Exe), 60))
		}
		if a.Setuid {
			notes = append(notes, "setuid")
		}
		if a.Relay {
			notes = append(notes, "a relay: the answer goes on to another program or machine")
		}
		who += " (" + strings.Join(notes, ", ") + ")"
	}
	prompt := printable(w.Prompt)
	if prompt == "" {
		prompt = ">"
	}
	return fmt.Sprintf("%s: %s asks for %s:\r\n%s ", id, who, what, prompt)
}

// hidden reports whether the answer to w is read without echo: a password, and keys
// that a relay reads (ssh -t, docker exec -it, kubectl exec -it). Such a relay puts the
// terminal into raw mode and passes keys on to a program out of sight, which may be a
// remote sudo reading a password with echo off: from here that looks like any program
// that reads keys, so the person's line is not shown, whatever the far side asks.
func hidden(w *operator.Waiting) bool {
	return w.Kind == pty.InputPassword || w.Kind == pty.InputKeys && w.Asker != nil && w.Asker.Relay
}

// maxAnswer is the longest answer: a terminal's line in canonical mode holds 4095
// characters and its newline.
const maxAnswer = 4096

// readAnswer reads one line from the terminal, without echo when secret, and gives the
// terminal's modes back however it ends: the line, EOF (C-d), or a signal (C-c), which
// cancels the answer. The line is read into one buffer made for it, so that no copy of
// a part of it is left behind in another (the caller clears the line).
func readAnswer(tty ttyFile, secret bool) ([]byte, error) {
	old, err := tty.termios()
	if err != nil {
		return nil, err
	}
	mode := *old
	mode.Lflag |= unix.ICANON | unix.ISIG
	if secret {
		mode.Lflag &^= unix.ECHO
		mode.Lflag |= unix.ECHONL // the Enter still shows, as sudo's prompt does
	} else {
		mode.Lflag |= unix.ECHO
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := tty.setTermios(&mode); err != nil {
		return nil, err
	}
	defer func() { _ = tty.setTermios(old) }()

	type result struct {
		line []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		buf := make([]byte, maxAnswer)
		n := 0
		for {
			k, err := tty.Read(buf[n:])
			n += k
			if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
				clear(buf[i:]) // the newline and whatever came after it
				done <- result{line: bytes.TrimSuffix(buf[:i], []byte("\r"))}
				return
			}
			if err == nil && k == 0 {
				err = errors.New("no answer typed (end of input)")
			}
			if err == nil && n == len(buf) {
				err = fmt.Errorf("the answer is longer than %d bytes", maxAnswer)
			}
			if err != nil {
				clear(buf)
				done <- result{err: err}
				return
			}
		}
	}()
	select {
	case r := <-done:
		return r.line, r.err
	case s := <-sigs:
		_ = tty.SetReadDeadline(time.Unix(1, 0))
		if r := <-done; r.err == nil {
			clear(r.line)
		}
		_, _ = tty.WriteString("\r\n")
		return nil, fmt.Errorf("cancelled (%v)", s)
	}
}
