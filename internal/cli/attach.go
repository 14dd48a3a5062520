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
// as it was on every way out: a detach (confirmed by the server, or not within
// detachWait), the program's exit, the server gone or shutting down, a server that takes
// no more of what the person sends (sendWait), SIGTERM, SIGHUP or SIGINT, the terminal
// hanging up (its reader ends, whether a SIGHUP comes or not), an error. The keys of one read are acted on in order (keyReader.feed).

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
	end         *operator.End // the server's word, if it said one
	lost        error         // the connection ended without it
	signal      os.Signal     // the person's process was signalled
	terminal    error         // the person's terminal went away (hung up)
	unconfirmed bool          // the person detached and the server did not confirm it
	stalled     error         // the server did not take what the person sent (hung, stopped)
}

// detachWait is how long a detach waits for the server's End: a server that does not
// confirm it (hung, stopped) does not keep the person's terminal.
const detachWait = time.Second

// sendWait bounds each write of the person's keys, size or mode to the server. The
// server reads them as they come, so only one that is hung or stopped leaves its socket
// full; without a bound the view would wait in that write, deaf to C-] d and to SIGTERM,
// with the person's terminal in raw mode.
const sendWait = 2 * time.Second

// runAttach is `attach`: find the session, connect to its server, take the terminal and
// follow the session until the view ends; then give the terminal back and say why.
func runAttach(ctx context.Context, stateDir, id string, write, resize bool, stderr io.Writer) error {
	t, err := pickSession(ctx, stateDir, id, "attach to", func(operator.Session) bool { return true })
	if err != nil {
		return err
	}
	id = printable(t.session.SessionID) // the server's word: shown, and sent back as it is shown
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
	var keysErr error // set before keysDone is closed
	go func() {
		defer close(keysDone)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			if n > 0 {
				keys <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				keysErr = err
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
	var detaching <-chan time.Time // once the person detached: the End is waited for this long
	send := func(r operator.Request, within time.Duration) error {
		if err := c.SetWriteDeadline(time.Now().Add(within)); err != nil {
			return err
		}
		return c.Send(r)
	}
	// sent ends the view when a write failed: the server did not take it in time, or the
	// connection has gone (the reply reader says so too; this need not wait for it).
	sent := func(err error) (attachOutcome, bool) {
		switch {
		case err == nil:
			return attachOutcome{}, false
		case errors.Is(err, os.ErrDeadlineExceeded):
			return attachOutcome{stalled: err}, true
		}
		return attachOutcome{lost: err}, true
	}
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
		case <-keysDone:
			// The terminal hung up (a read that ends is nothing else in raw mode): no
			// SIGHUP need come for the view to end.
			keysDone = nil
			err := keysErr
			if err == nil || errors.Is(err, io.EOF) {
				err = errors.New("it hung up")
			}
			return attachOutcome{terminal: err}
		case b := <-keys:
			if detaching != nil {
				continue // typed after leaving
			}
			actions := kr.feed(b)
			clear(b) // feed copied what goes to the session
			for _, a := range actions {
				switch a.event {
				case keyInput:
					err := send(operator.Request{Op: operator.OpInput, Data: a.input}, sendWait)
					clear(a.input)
					if out, end := sent(err); end {
						return out
					}
				case keyDetach:
					if err := send(operator.Request{Op: operator.OpDetach}, detachWait); err != nil {
						return attachOutcome{unconfirmed: true} // the person has left all the same
					}
					detaching = time.After(detachWait)
				case keyToggleWrite:
					if out, end := sent(send(operator.Request{Op: operator.OpWrite, On: a.write}, sendWait)); end {
						return out
					}
					note = ""
				case keyReadOnly:
					note = "keys not sent: read-only"
				case keyUnknown:
					note = "C-] then w (type), d (detach) or C-] (send C-])"
				}
			}
			if len(actions) > 0 && detaching == nil {
				paint([]byte(p.statusLine(statusText(id, kr.write, last, note))))
			}
		case <-detaching:
			return attachOutcome{unconfirmed: true}
		case s := <-sigs:
			if s == syscall.SIGWINCH {
				if cols, rows, err := tty.size(); err == nil {
					p.resize(cols, rows)
					if out, end := sent(send(operator.Request{Op: operator.OpSize, Cols: cols, Rows: p.viewRows()}, sendWait)); end {
						return out
					}
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
	case out.terminal != nil:
		return fmt.Errorf("detached from %s: the terminal has gone: %v", id, out.terminal)
	case out.stalled != nil:
		return fmt.Errorf("detached from %s: %s did not take what you sent within %v (is it hung?)", id, server, sendWait)
	case out.unconfirmed:
		fmt.Fprintf(stderr, "mcp-harness: detached from %s; %s did not confirm it within %v (is it hung?)\n", id, server, detachWait)
		return nil
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
			how = "was killed by " + printable(*out.end.Signal)
		}
		fmt.Fprintf(stderr, "mcp-harness: %s's program %s\n", id, how)
		return nil
	}
	return fmt.Errorf("the view of %s ended: %s", id, printable(out.end.Reason))
}
