package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/mcp-harness/mcp-harness/internal/operator"
	"github.com/mcp-harness/mcp-harness/pty"
)

// `attach` shows a session's screen on the person's terminal and follows it: read-only
// until they press C-] w (or gave --write), C-] d detaches. The terminal is /dev/tty,
// opened apart from the standard streams (non-blocking, so that the key reader ends
// when the view does), put into raw mode and onto the alternate screen, and given back
// as it was on every way out: a detach, the program's exit, the server gone or shutting
// down, SIGTERM, SIGHUP or SIGINT, an error.

func newAttachCmd() *cobra.Command {
	o := &workspaceFlags{}
	var write, resize bool
	cmd := &cobra.Command{
		Use:   "attach [SESSION]",
		Short: "Watch a terminal session of the agent's live, and type into it if you choose",
		Long: "Show a terminal session of the agent's on your terminal, as it is now and as it changes:\n" +
			"SESSION (default: the session most recently active) is an id from `mcp-harness sessions`,\n" +
			"of any server on the workspace.\n\n" +
			"The view is read-only: press Ctrl-] w to type into the session (and again to stop),\n" +
			"Ctrl-] d to detach, Ctrl-] Ctrl-] to send Ctrl-] itself. --write starts typing at once.\n" +
			"Your terminal's size does not change the session's unless --resize: a smaller terminal\n" +
			"shows the part of the screen around the cursor. Several people can watch at once; the\n" +
			"agent's results say how many do, and when a person typed.",
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
			return runAttach(cmd.Context(), dir, id, write, resize, cmd.ErrOrStderr())
		},
	}
	addWorkspaceFlags(cmd, o)
	cmd.Flags().BoolVar(&write, "write", false, "type into the session from the start")
	cmd.Flags().BoolVar(&resize, "resize", false, "make the session's terminal your terminal's size")
	return cmd
}

// ttyFile is the person's terminal, opened non-blocking so that reads go through Go's
// poller and a deadline ends them. Its ioctls go through SyscallConn: Fd would put it
// back into blocking mode.
type ttyFile struct{ *os.File }

func openTTY() (ttyFile, error) {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ttyFile{}, err
	}
	return ttyFile{f}, nil
}

func (t ttyFile) control(fn func(fd int) error) error {
	rc, err := t.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

func (t ttyFile) size() (cols, rows int, err error) {
	err = t.control(func(fd int) error {
		ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
		if err == nil {
			cols, rows = int(ws.Col), int(ws.Row)
		}
		return err
	})
	if err == nil && (cols == 0 || rows == 0) {
		cols, rows = 80, 24 // a terminal that does not say
	}
	// A view is at most as large as a session's terminal can be.
	return min(cols, pty.MaxSize), min(rows, pty.MaxSize), err
}

func (t ttyFile) termios() (*unix.Termios, error) {
	var tio *unix.Termios
	err := t.control(func(fd int) error {
		var err error
		tio, err = unix.IoctlGetTermios(fd, ioctlGetTermios)
		return err
	})
	return tio, err
}

func (t ttyFile) setTermios(tio *unix.Termios) error {
	return t.control(func(fd int) error { return unix.IoctlSetTermios(fd, ioctlSetTermios, tio) })
}

// makeRaw puts the terminal into raw mode (as cfmakeraw) and returns its modes before.
func (t ttyFile) makeRaw() (*unix.Termios, error) {
	old, err := t.termios()
	if err != nil {
		return nil, err
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	return old, t.setTermios(&raw)
}

// attachOutcome is how a view ended.
type attachOutcome struct {
	end    *operator.End // the server's word, if it said one
	lost   error         // the connection ended without it
	signal os.Signal     // the person's process was signalled
}

// runAttach is `attach`: find the session, connect to its server, take the terminal and
// follow the session until the view ends; then give the terminal back and say why.
func runAttach(ctx context.Context, stateDir, id string, write, resize bool, stderr io.Writer) error {
	t, err := pickSession(ctx, stateDir, id, "attach to", func(operator.Session) bool { return true })
	if err != nil {
		return err
	}
	id = t.session.SessionID
	tty, err := openTTY()
	if err != nil {
		return fmt.Errorf("attach needs a terminal: %w", err)
	}
	defer tty.Close()
	c, err := operator.Dial(stateDir, t.endpoint)
	if err != nil {
		return fmt.Errorf("attach to %s: %w", id, err)
	}
	defer c.Close()
	cols, rows, err := tty.size()
	if err != nil {
		return fmt.Errorf("attach needs a terminal: %w", err)
	}
	p := newScreenPainter(cols, rows)
	if err := c.SetDeadline(time.Now().Add(opTimeout)); err != nil {
		return err
	}
	if _, err := c.Call(operator.Request{Op: operator.OpAttach, Session: id, Cols: cols, Rows: p.viewRows(), Write: write, Resize: resize}); err != nil {
		return fmt.Errorf("attach to %s: %w", id, err)
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		return err
	}

	// From here the terminal is ours until restore has run, whatever happens.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGWINCH)
	defer signal.Stop(sigs)
	old, err := tty.makeRaw()
	if err != nil {
		return fmt.Errorf("attach: raw mode: %w", err)
	}
	var restoreOnce sync.Once
	restore := func() {
		restoreOnce.Do(func() {
			_, _ = tty.WriteString(leaveScreen)
			_ = tty.setTermios(old)
		})
	}
	defer restore()
	if _, err := tty.WriteString(enterScreen); err != nil {
		return err
	}
	out := followView(c, tty, p, id, write, resize, sigs)
	restore()
	return describeOutcome(stderr, id, c.Endpoint, out)
}

// followView paints frames and passes the person's keys on until the view ends.
func followView(c *operator.Client, tty ttyFile, p *screenPainter, id string, write, resize bool, sigs <-chan os.Signal) attachOutcome {
	replies := make(chan operator.Reply)
	recvDone := make(chan error, 1)
	go func() {
		for {
			r, err := c.Recv()
			if err != nil {
				recvDone <- err
				return
			}
			replies <- r
		}
	}()
	keys := make(chan []byte)
	keysDone := make(chan struct{})
	go func() {
		defer close(keysDone)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			if n > 0 {
				keys <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		// The readers end: the terminal's read by its deadline, the connection's when
		// it is closed. A reply or keys they still hold are dropped.
		_ = tty.SetReadDeadline(time.Unix(1, 0))
		_ = c.Close()
		for {
			select {
			case <-replies:
			case <-keys:
			case <-keysDone:
				keysDone = nil
			case <-recvDone:
				recvDone = nil
			}
			if keysDone == nil && recvDone == nil {
				return
			}
		}
	}()

	kr := keyReader{write: write}
	var last *operator.Frame
	var screen []string // the view's rows, as the frames so far make them
	note := ""
	paint := func(b []byte) { _, _ = tty.Write(b) }
	for {
		select {
		case r := <-replies:
			switch {
			case r.Frame != nil:
				screen = r.Frame.Apply(screen)
				r.Frame.Lines, r.Frame.Update = screen, nil
				last = r.Frame
				paint(p.frame(r.Frame, statusText(id, kr.write, last, note)))
			case r.End != nil:
				return attachOutcome{end: r.End}
			}
		case err := <-recvDone:
			recvDone = nil
			return attachOutcome{lost: err}
		case b := <-keys:
			input, events := kr.feed(b)
			if len(input) > 0 {
				_ = c.Send(operator.Request{Op: operator.OpInput, Data: input})
			}
			for _, ev := range events {
				switch ev {
				case keyDetach:
					_ = c.Send(operator.Request{Op: operator.OpDetach})
				case keyToggleWrite:
					_ = c.Send(operator.Request{Op: operator.OpWrite, On: kr.write})
					note = ""
				case keyReadOnly:
					note = "keys not sent: read-only"
				case keyUnknown:
					note = "C-] then w (type), d (detach) or C-] (send C-])"
				}
			}
			if len(events) > 0 {
				paint([]byte(p.statusLine(statusText(id, kr.write, last, note))))
			}
		case s := <-sigs:
			if s == syscall.SIGWINCH {
				if cols, rows, err := tty.size(); err == nil {
					p.resize(cols, rows)
					_ = c.Send(operator.Request{Op: operator.OpSize, Cols: cols, Rows: p.viewRows()})
					if last != nil {
						paint(p.frame(last, statusText(id, kr.write, last, note)))
					}
				}
				continue
			}
			return attachOutcome{signal: s}
		}
	}
}

// describeOutcome says on stderr how the view ended, and returns the command's error: none
// for a detach or the program's exit.
func describeOutcome(stderr io.Writer, id string, e operator.Endpoint, out attachOutcome) error {
	server := fmt.Sprintf("the server (server %d, pid %d)", e.Number, e.Pid)
	switch {
	case out.signal != nil:
		return fmt.Errorf("detached from %s: %v", id, out.signal)
	case out.end == nil:
		if out.lost != nil && !errors.Is(out.lost, io.EOF) {
			return fmt.Errorf("%s has gone: %v", server, out.lost)
		}
		return fmt.Errorf("%s has gone", server)
	case out.end.Reason == operator.EndDetached:
		fmt.Fprintf(stderr, "mcp-harness: detached from %s\n", id)
		return nil
	case out.end.Reason == operator.EndShutdown:
		return fmt.Errorf("%s has gone: it is shutting down", server)
	case out.end.Reason == operator.EndExited:
		how := "exited"
		if out.end.ExitCode != nil {
			how = fmt.Sprintf("exited with status %d", *out.end.ExitCode)
		} else if out.end.Signal != nil {
			how = "was killed by " + *out.end.Signal
		}
		fmt.Fprintf(stderr, "mcp-harness: %s's program %s\n", id, how)
		return nil
	}
	return fmt.Errorf("the view of %s ended: %s", id, out.end.Reason)
}
