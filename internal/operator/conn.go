package operator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/mcp-harness/mcp-harness/pty"
)

// wire is one connection's messages: Requests read a line at a time, Replies written a
// line at a time. Only the connection's handler writes; reads are made by the handler, or
// by an attach's reader goroutine once the handler only writes.
type wire struct {
	ctx context.Context // the server's: once it ends, every read fails at once
	c   *net.UnixConn
	sc  *bufio.Scanner
	enc *json.Encoder
}

func newWire(ctx context.Context, c *net.UnixConn) *wire {
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 4096), maxRequest)
	return &wire{ctx: ctx, c: c, sc: sc, enc: json.NewEncoder(c)}
}

// read reads the next request, waiting until deadline (zero: no deadline). Whoever ends
// the read early (the server's shutdown, a view that ends) first ends ctx, then pulls the
// read's deadline in: a read that sets its own deadline afterwards finds ctx ended and
// returns, rather than undo the pull and block.
func (w *wire) read(ctx context.Context, deadline time.Time) (Request, error) {
	if err := w.c.SetReadDeadline(deadline); err != nil {
		return Request{}, err
	}
	if err := ctx.Err(); err != nil {
		return Request{}, err
	}
	if !w.sc.Scan() {
		if err := w.sc.Err(); err != nil {
			return Request{}, err
		}
		return Request{}, errors.New("the client closed the connection")
	}
	var r Request
	if err := json.Unmarshal(w.sc.Bytes(), &r); err != nil {
		return Request{}, &Error{Code: CodeInvalid, Message: "a request is one JSON object a line: " + err.Error()}
	}
	return r, nil
}

// forget clears the line read last from the scanner's buffer: an answer's, which holds
// the secret in base64.
func (w *wire) forget() { clear(w.sc.Bytes()) }

// send writes a reply, giving up after within on a client that does not read. Once the
// server shuts down, no write waits longer than endTimeout: Close pulls the deadline of
// a write under way in, and one set here afterwards is pulled in here.
func (w *wire) send(r Reply, within time.Duration) error {
	if err := w.c.SetWriteDeadline(time.Now().Add(within)); err != nil {
		return err
	}
	if w.ctx.Err() != nil && within > endTimeout {
		if err := w.c.SetWriteDeadline(time.Now().Add(endTimeout)); err != nil {
			return err
		}
	}
	return w.enc.Encode(r)
}

// serve is one connection: the peer is checked, then its first request says what it
// wants.
func (s *Server) serve(c *net.UnixConn) {
	w := newWire(s.ctx, c)
	peer, err := checkPeer(c)
	if err != nil {
		var refused *Error
		if errors.As(err, &refused) {
			s.log.Warn("operator: refused a connection", "pid", peer.Pid, "uid", peer.Uid, "why", refused.Message)
			_ = w.send(Reply{Error: refused}, s.requestTimeout)
		} else {
			s.log.Warn("operator: could not check who connected; refused", "err", err)
		}
		return
	}
	stop := context.AfterFunc(s.ctx, func() { _ = c.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	req, err := w.read(s.ctx, time.Now().Add(s.requestTimeout))
	if err != nil {
		var bad *Error
		if errors.As(err, &bad) {
			_ = w.send(Reply{Error: bad}, s.requestTimeout)
		}
		return
	}
	switch req.Op {
	case OpHello:
		in := s.info()
		_ = w.send(Reply{Server: &in}, s.requestTimeout)
	case OpSessions:
		in := s.info()
		_ = w.send(Reply{Server: &in, Sessions: s.sessions(s.ctx)}, s.requestTimeout)
	case OpAttach:
		s.attach(w, req, peer)
	case OpAnswer:
		s.answer(w, req, peer)
	default:
		_ = w.send(Reply{Error: &Error{Code: CodeInvalid, Message: fmt.Sprintf("unknown op %q: a connection starts with hello, sessions, attach or answer", req.Op)}}, s.requestTimeout)
	}
}

// sessions describes the server's sessions for a person (pty's Overview).
func (s *Server) sessions(ctx context.Context) []Session {
	infos := s.cfg.Sessions.Overview(ctx)
	out := make([]Session, 0, len(infos))
	for _, in := range infos {
		out = append(out, s.sessionOf(in))
	}
	return out
}

func (s *Server) sessionOf(in pty.Info) Session {
	out := Session{
		Server: s.info(), SessionID: in.ID, Name: in.Name, Command: in.Command, Cwd: in.Dir, Pid: in.Pid,
		Cols: in.Cols, Rows: in.Rows, State: in.State, Viewers: in.Viewers,
		StartedAt: timestamp(in.StartedAt), LastActivityAt: timestamp(in.LastActivityAt),
		ExitCode: in.ExitCode, Signal: in.Signal,
	}
	if w := in.Waiting; w != nil {
		out.Waiting = &Waiting{Kind: w.Kind, Prompt: w.Prompt}
	}
	return out
}

// attach is a view: frames go out as the screen changes while the person's keys, size
// and write mode come in on a reader goroutine, until the program exits, the person
// detaches or goes away, or the server shuts down.
func (s *Server) attach(w *wire, req Request, peer Peer) {
	v, err := s.cfg.Sessions.Attach(req.Session, pty.AttachOptions{Cols: req.Cols, Rows: req.Rows, Resize: req.Resize, Write: req.Write})
	if err != nil {
		_ = w.send(Reply{Error: s.errorOf("attach to", req.Session, err)}, s.requestTimeout)
		return
	}
	defer v.Close()
	s.log.Info("operator: a person attached", "session", req.Session, "pid", peer.Pid, "write", req.Write, "resize", req.Resize)
	defer s.log.Info("operator: a person detached", "session", req.Session, "pid", peer.Pid)
	attached := Session{Server: s.info(), SessionID: req.Session}
	for _, in := range s.cfg.Sessions.Overview(s.ctx) {
		if in.ID == req.Session {
			attached = s.sessionOf(in)
		}
	}
	if err := w.send(Reply{Attached: &attached}, s.requestTimeout); err != nil {
		return
	}
	// The view's context ends before the reader's deadline is pulled in, so that a
	// reader between two requests, about to wait for the next with no deadline, finds it
	// ended rather than undo the pull (wire.read).
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	var detached atomic.Bool
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer cancel()
		s.readControls(ctx, w, v, req.Session, &detached)
	}()
	end := End{}
	var sent []string // the rows of the last frame sent: the next sends what changed
	cut := false      // a write failed: the client does not read, or has gone
	for {
		f, err := v.Next(ctx)
		if err != nil {
			break
		}
		if h := s.hooks.frameSending; h != nil {
			h(w.c)
		}
		if err := w.send(Reply{Frame: frameOf(f, sent)}, s.requestTimeout); err != nil {
			cut = true
			break
		}
		sent = f.Lines
		if f.Exited {
			end = End{Reason: EndExited, ExitCode: f.ExitCode, Signal: f.Signal}
			break
		}
	}
	switch {
	case cut:
		// A line may have been cut short: nothing more makes sense on the connection, and
		// a client that stopped reading would only hold the shutdown up again.
	case end.Reason != "":
	case s.ctx.Err() != nil:
		end.Reason = EndShutdown
	case detached.Load():
		end.Reason = EndDetached
	}
	if end.Reason != "" && !cut {
		_ = w.send(Reply{End: &end}, endTimeout)
	}
	cancel()
	_ = w.c.SetReadDeadline(time.Unix(1, 0)) // the reader returns
	if h := s.hooks.viewEnding; h != nil {
		h()
	}
	<-readerDone
}

// readControls applies what the person sends during a view, until they detach, the
// connection ends or ctx does.
func (s *Server) readControls(ctx context.Context, w *wire, v *pty.Viewer, id string, detached *atomic.Bool) {
	for {
		r, err := w.read(ctx, time.Time{})
		if err != nil {
			return
		}
		switch r.Op {
		case OpInput:
			// A read-only view's keys are refused by the engine; the client does not send
			// them in the first place.
			if _, err := v.Write(ctx, r.Data); err != nil && !errors.Is(err, pty.ErrReadOnly) && ctx.Err() == nil {
				s.log.Debug("operator: a person's keys were not written", "session", id, "err", err)
			}
			clear(r.Data)
			w.forget()
		case OpSize:
			if err := v.SetSize(r.Cols, r.Rows); err != nil {
				s.log.Debug("operator: a person's terminal size was not taken", "session", id, "err", err)
			}
		case OpWrite:
			v.SetWrite(r.On)
			s.log.Info("operator: a person's view changed", "session", id, "write", r.On)
		case OpDetach:
			detached.Store(true)
			return
		}
		if h := s.hooks.betweenReads; h != nil {
			h()
		}
	}
}

// frameOf is the frame to send for f, when sent are the rows the client has: the rows
// that changed, or all of them when the size did (or nothing was sent yet).
func frameOf(f pty.Frame, sent []string) *Frame {
	out := &Frame{
		Cols: f.Cols, Rows: f.Rows, Top: f.Top, Left: f.Left,
		ScreenCols: f.ScreenCols, ScreenRows: f.ScreenRows, CursorRow: f.CursorRow, CursorCol: f.CursorCol,
		CursorHidden: f.CursorHidden, AltScreen: f.AltScreen, Title: f.Title, NoScreen: f.NoScreen, Viewers: f.Viewers,
	}
	if sent == nil || len(sent) != len(f.Lines) || f.Lines == nil {
		out.Lines = f.Lines
		return out
	}
	for i, l := range f.Lines {
		if l != sent[i] {
			out.Update = append(out.Update, RowUpdate{Row: i, Text: l})
		}
	}
	return out
}

// answer is a person's answer: the question is shown to them, with the process that
// asks, and the line they send is written with Enter if that process still asks (pty's
// Answer.Send). The line is never logged, and the buffers that held it are cleared.
func (s *Server) answer(w *wire, req Request, peer Peer) {
	a, err := s.cfg.Sessions.Ask(s.ctx, req.Session)
	if err != nil {
		_ = w.send(Reply{Error: s.errorOf("answer", req.Session, err)}, s.requestTimeout)
		return
	}
	defer a.Close()
	s.log.Info("operator: a person answers a question", "session", req.Session, "kind", a.Want.Kind, "pid", peer.Pid,
		"asker", a.Asker.Pid, "askerArgs", a.Asker.Args)
	asking := &Waiting{Kind: a.Want.Kind, Prompt: a.Want.Prompt, Asker: &Asker{
		Pid: a.Asker.Pid, Exe: a.Asker.Exe, Args: a.Asker.Args, Setuid: a.Asker.Setuid, Relay: a.Asker.Relay,
	}}
	if err := w.send(Reply{Asking: asking}, s.requestTimeout); err != nil {
		return
	}
	r, err := w.read(s.ctx, time.Now().Add(answerTimeout))
	w.forget() // the line's base64, as it came
	if err != nil {
		return // the person gave up: nothing is written
	}
	defer clear(r.Data)
	if r.Op != OpLine {
		_ = w.send(Reply{Error: &Error{Code: CodeInvalid, Message: fmt.Sprintf("an answer goes on with op %q, not %q", OpLine, r.Op)}}, s.requestTimeout)
		return
	}
	if err := a.Send(s.ctx, r.Data); err != nil {
		_ = w.send(Reply{Error: s.errorOf("answer", req.Session, err)}, s.requestTimeout)
		return
	}
	s.log.Info("operator: a person's answer was written", "session", req.Session, "kind", a.Want.Kind)
	_ = w.send(Reply{Answered: true}, s.requestTimeout)
}

// errorOf is the refusal a person reads for err, which the engine returned when asked to
// do what (attach to, answer) with session id.
func (s *Server) errorOf(what, id string, err error) *Error {
	var sentence interface{ Sentence() string }
	switch {
	case errors.Is(err, pty.ErrClosed), s.ctx.Err() != nil:
		return &Error{Code: CodeShuttingDown, Message: "the server is shutting down"}
	case errors.Is(err, pty.ErrNoSession):
		return &Error{Code: CodeNotFound, Message: fmt.Sprintf("server %d has no session %q", s.cfg.Server.Number, id)}
	case errors.Is(err, pty.ErrNotAsking) && errors.As(err, &sentence):
		return &Error{Code: CodeNotAsking, Message: sentence.Sentence()}
	case errors.Is(err, pty.ErrExited):
		return &Error{Code: CodeExited, Message: fmt.Sprintf("session %s has exited", id)}
	case errors.Is(err, pty.ErrAnswerPending):
		return &Error{Code: CodeAnswerPending, Message: fmt.Sprintf("another answer to session %s is pending (someone runs mcp-harness answer on it); answer one question at a time", id)}
	case errors.Is(err, pty.ErrInvalid) && errors.As(err, &sentence):
		return &Error{Code: CodeInvalid, Message: sentence.Sentence()}
	}
	s.log.Error("operator: failed", "what", what, "session", id, "err", err)
	return &Error{Code: CodeInternal, Message: fmt.Sprintf("the server could not %s session %s (its log says why)", what, id)}
}
