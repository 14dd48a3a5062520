package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
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
// into the session if the program still asks. The line goes over the operator socket
// and nowhere else: not to the model, not to a log.

func newAnswerCmd() *cobra.Command {
	o := &workspaceFlags{}
	cmd := &cobra.Command{
		Use:   "answer [SESSION]",
		Short: "Answer a question a program in the agent's terminal asks (a password, a prompt)",
		Long: "Answer the question a program in one of the agent's terminal sessions waits on, such as\n" +
			"sudo's password or a y/n prompt: the question is shown, you type one line (a password\n" +
			"is not echoed), and it is written to the session with Enter. The agent sees what the\n" +
			"program prints after it, never the password (the terminal does not echo it either).\n\n" +
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
	id = t.session.SessionID
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
	what := map[pty.InputKind]string{pty.InputPassword: "a password (it will not be shown)", pty.InputLine: "a line", pty.InputKeys: "keys (type a line)"}[r.Asking.Kind]
	fmt.Fprintf(tty, "%s (%s) asks for %s:\r\n", id, shorten(t.session.Command, 60), what)
	prompt := r.Asking.Prompt
	if prompt == "" {
		prompt = ">"
	}
	if _, err := tty.WriteString(prompt + " "); err != nil {
		return err
	}
	line, err := readAnswer(tty, r.Asking.Kind == pty.InputPassword)
	defer clear(line)
	if err != nil {
		return fmt.Errorf("answer %s: nothing was written: %w", id, err)
	}
	if err := c.SetDeadline(time.Now().Add(opTimeout)); err != nil {
		return err
	}
	if _, err := c.Call(operator.Request{Op: operator.OpLine, Data: line}); err != nil {
		return fmt.Errorf("answer %s: %w", id, err)
	}
	fmt.Fprintf(stderr, "mcp-harness: answered %s\n", id)
	return nil
}

// readAnswer reads one line from the terminal, without echo when secret, and gives the
// terminal's modes back however it ends: the line, EOF (C-d), or a signal (C-c), which
// cancels the answer.
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
		var line []byte
		buf := make([]byte, 1024)
		for {
			n, err := tty.Read(buf)
			line = append(line, buf[:n]...)
			clear(buf[:n])
			if i := bytes.IndexByte(line, '\n'); i >= 0 {
				rest := line[i:]
				line = bytes.TrimSuffix(line[:i], []byte("\r"))
				clear(rest)
				done <- result{line: line}
				return
			}
			if err != nil || n == 0 {
				clear(line)
				if err == nil {
					err = errors.New("no answer typed (end of input)")
				}
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
