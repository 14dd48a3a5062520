package pty

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Viewers: a person watching a session from a terminal of their own (the operator's
// attach). A Viewer gets frames, the screen as the session's emulator keeps it, rendered
// with its styles for the person's terminal size; it never reads the output stream, so
// the agent's read cursor stays where the agent left it. What a person types goes in
// through the Viewer once they have asked to write (personWrite), and the agent's next
// result says so (ReadResult.PersonTyped).
//
// Frames come on change, coalesced: Next returns frameSettle after the screen may have
// changed since the last frame (the writes of one burst make one frame), but no sooner
// than minFrameGap after it, and no sooner
// than bulkFrameGap when more than a feedSlice of output came in the minFrameGap after
// it (output in bulk), so a flood costs the emulator about ten catch-ups a second (each skips ahead to the last screenfuls, see catchup.go), not a
// parse of everything. The emulator otherwise runs as it does without viewers: a frame
// brings it up to the end of the output first, as a snapshot does, and that is the only
// extra parsing a viewer causes.

const (
	// frameSettle is how long a change waits for more before its frame is taken: a
	// command's echo, its output and the next prompt come in a few writes a moment
	// apart, and one frame shows them all.
	frameSettle = 2 * time.Millisecond
	// minFrameGap is the least time between two frames of a viewer: a program that
	// repaints in many small writes costs at most this many frames a second.
	minFrameGap = 8 * time.Millisecond
	// bulkFrameGap is the least time between two frames when more than feedSlice bytes
	// of output came since the last one: about ten frames a second of a flood.
	bulkFrameGap = 100 * time.Millisecond
	// personWriteTimeout bounds a person's write to a program that does not read its
	// input.
	personWriteTimeout = 5 * time.Second
)

// Frame is a session's screen as a viewer shows it: Rows rows of at most Cols columns,
// the part of the session's screen (ScreenCols x ScreenRows) that starts at row Top and
// column Left. When the viewer's terminal is smaller than the session's, the part shown
// follows the cursor (the rows up to the cursor's row, the columns up to its column);
// when it is larger, the rows and columns beyond the session's screen are blank.
type Frame struct {
	Cols, Rows int
	// Lines holds Rows strings, each a row with SGR sequences for its styles, ending
	// with the styles reset and without its trailing blank cells: paint each on a
	// cleared row. nil when the session keeps no screen (NoScreen). Viewers of one size
	// may share it: it is read-only.
	Lines                  []string
	Top, Left              int
	ScreenCols, ScreenRows int
	// CursorRow and CursorCol are 0-based, in the view; -1 when the cursor is outside it.
	CursorRow, CursorCol int
	CursorHidden         bool
	AltScreen            bool
	Title                string
	// NoScreen says that the session's terminal is larger than MaxScreenCells, so no
	// screen is kept to show.
	NoScreen bool
	// Viewers counts the session's viewers, this one included.
	Viewers int
	// Exited says the program has exited and its output is drawn: the last frame.
	Exited   bool
	ExitCode *int
	Signal   *string
}

// AttachOptions says how a viewer watches a session.
type AttachOptions struct {
	// Cols and Rows are the person's terminal (both, each 1..MaxSize); zero is the
	// session's own size.
	Cols, Rows int
	// Resize makes the person's size the session's: the session's terminal is resized
	// to it at once and whenever SetSize changes it. Without it the program's terminal
	// keeps the size the agent gave it.
	Resize bool
	// Write lets the person type from the start (SetWrite changes it).
	Write bool
}

// Viewer is a person's view of one session. Its methods are safe for concurrent use:
// one goroutine may wait in Next while another writes or changes the size.
type Viewer struct {
	s       *session
	changed chan struct{} // a change since the last frame; one pending signal covers any number

	mu         sync.Mutex
	cols, rows int
	resize     bool
	write      bool
	closed     bool
	started    bool      // a frame has been returned
	final      bool      // the frame with Exited has been returned
	lastAt     time.Time // when the last frame was taken
	lastEnd    int64     // the output's end then
}

// Attach makes a viewer of a live session. The session must keep a screen (a server
// with terminal emulation); an exited one is refused with ErrExited.
func (m *Manager) Attach(id string, o AttachOptions) (*Viewer, error) {
	const op = "pty.Attach"
	if o.Cols != 0 || o.Rows != 0 {
		if err := checkSize(op, o.Cols, o.Rows); err != nil {
			return nil, err
		}
	}
	s, err := m.get(op, id)
	if err != nil {
		return nil, err
	}
	if s.term == nil {
		return nil, invalidf(op, "session %s has no screen to show: this server runs sessions without terminal emulation", id)
	}
	v := &Viewer{s: s, changed: make(chan struct{}, 1), cols: o.Cols, rows: o.Rows, resize: o.Resize, write: o.Write}
	if o.Resize && o.Cols != 0 {
		if err := resize(op, s, o.Cols, o.Rows); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status.exited || s.closed {
		return nil, fmt.Errorf("%s: session %q: %w (%s)", op, id, ErrExited, s.status)
	}
	s.viewers = append(s.viewers, v)
	return v, nil
}

// SessionID is the id of the session the viewer watches.
func (v *Viewer) SessionID() string { return v.s.id }

// Close ends the view; Next returns ErrViewerClosed. It is safe to call more than once.
func (v *Viewer) Close() {
	v.mu.Lock()
	was := v.closed
	v.closed = true
	v.mu.Unlock()
	if was {
		return
	}
	s := v.s
	s.mu.Lock()
	for i, w := range s.viewers {
		if w == v {
			s.viewers = append(s.viewers[:i], s.viewers[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	v.signal()
}

// signal wakes a Next waiting for a change.
func (v *Viewer) signal() {
	select {
	case v.changed <- struct{}{}:
	default:
	}
}

// wakeViewersLocked tells the session's viewers that the screen may have changed: new
// output, a resize, the exit. The caller holds s.mu.
func (s *session) wakeViewersLocked() {
	for _, v := range s.viewers {
		v.signal()
	}
}

// SetSize changes the person's terminal size (both, each 1..MaxSize). With
// AttachOptions.Resize the session's terminal is resized too.
func (v *Viewer) SetSize(cols, rows int) error {
	const op = "pty.Viewer.SetSize"
	if err := checkSize(op, cols, rows); err != nil {
		return err
	}
	v.mu.Lock()
	v.cols, v.rows = cols, rows
	resizing := v.resize
	v.mu.Unlock()
	if resizing {
		if err := resize(op, v.s, cols, rows); err != nil {
			return err
		}
	}
	v.signal()
	return nil
}

// SetWrite lets the person type (on) or makes the view read-only again.
func (v *Viewer) SetWrite(on bool) {
	v.mu.Lock()
	v.write = on
	v.mu.Unlock()
}

// Write sends what the person typed to the session's program, when the viewer may write;
// a read-only viewer's keys are refused with ErrReadOnly and nothing is written. It
// counts as the person's input (ReadResult.PersonTyped).
func (v *Viewer) Write(ctx context.Context, p []byte) (int, error) {
	const op = "pty.Viewer.Write"
	v.mu.Lock()
	write, closed := v.write, v.closed
	v.mu.Unlock()
	switch {
	case closed:
		return 0, fmt.Errorf("%s: %w", op, ErrViewerClosed)
	case !write:
		return 0, fmt.Errorf("%s: session %q: %w", op, v.s.id, ErrReadOnly)
	case len(p) > MaxInputBytes:
		return 0, invalidf(op, "input is %d bytes; send at most %d at once", len(p), MaxInputBytes)
	}
	return v.s.personWrite(ctx, op, p)
}

// Next waits until the screen may have changed since the last frame it returned (the
// first call returns at once) and returns the frame, coalescing changes as the comment
// at the top says. Once the program has exited it returns the last frame, with Exited
// set, and then ErrExited. ctx bounds the wait; ErrViewerClosed after Close.
func (v *Viewer) Next(ctx context.Context) (Frame, error) {
	const op = "pty.Viewer.Next"
	s := v.s
	v.mu.Lock()
	closed, final, started, lastAt, lastEnd := v.closed, v.final, v.started, v.lastAt, v.lastEnd
	v.mu.Unlock()
	switch {
	case closed:
		return Frame{}, fmt.Errorf("%s: %w", op, ErrViewerClosed)
	case final:
		return Frame{}, fmt.Errorf("%s: session %q: %w (%s)", op, s.id, ErrExited, s.exitStatus())
	}
	if started {
		select {
		case <-v.changed:
		case <-s.exitDone:
		case <-ctx.Done():
			return Frame{}, ctx.Err()
		}
		// frameSettle after the change, at least minFrameGap after the last frame; and
		// bulkFrameGap after it when more than a feedSlice of output has come since it
		// by then: a flood.
		if err := v.sleepUntil(ctx, latest(time.Now().Add(frameSettle), lastAt.Add(minFrameGap))); err != nil {
			return Frame{}, err
		}
		if s.outputEnd()-lastEnd > feedSlice {
			if err := v.sleepUntil(ctx, lastAt.Add(bulkFrameGap)); err != nil {
				return Frame{}, err
			}
		}
	}
	// Every change signalled so far is in the frame taken next.
	select {
	case <-v.changed:
	default:
	}
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return Frame{}, fmt.Errorf("%s: %w", op, ErrViewerClosed)
	}
	cols, rows := v.cols, v.rows
	v.mu.Unlock()

	s.mu.Lock()
	end, st, viewers := s.ring.End(), s.status, len(s.viewers)
	if cols == 0 || rows == 0 {
		cols, rows = s.cols, s.rows
	}
	s.mu.Unlock()
	f := s.term.view(end, cols, rows)
	f.Viewers = viewers
	f.Exited, f.ExitCode, f.Signal = st.exited, st.code, st.signal

	v.mu.Lock()
	v.started, v.final = true, st.exited
	v.lastAt, v.lastEnd = time.Now(), end
	v.mu.Unlock()
	return f, nil
}

// sleepUntil waits until t, or less if the program exits meanwhile (its last frame is
// due at once); it returns ctx's error if ctx ends first.
func (v *Viewer) sleepUntil(ctx context.Context, t time.Time) error {
	wait := time.Until(t)
	if wait <= 0 {
		return nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-v.s.exitDone:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// exitStatus is the session's published exit status.
func (s *session) exitStatus() exitStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// view brings the emulator up to target (as snapshot does) and renders the part of the
// screen a viewer of cols x rows shows (see Frame).
func (t *term) view(target int64, cols, rows int) Frame {
	t.mu.Lock()
	t.scanTo(target, true)
	t.advance(target, 0)
	f := Frame{Cols: cols, Rows: rows, CursorRow: -1, CursorCol: -1}
	if t.emu == nil {
		f.ScreenCols, f.ScreenRows = t.sc.Size()
		f.NoScreen = true
		t.flush()
		return f
	}
	if lv := t.lastView; lv.gen == t.gen && lv.f.Cols == cols && lv.f.Rows == rows && lv.f.Lines != nil {
		t.flush()
		return lv.f // the same screen as another viewer's of this size: rendered once
	}
	f.ScreenCols, f.ScreenRows = t.emu.Size()
	row, col := t.emu.Cursor()
	f.Top, f.Left = max(0, row-rows+1), max(0, col-cols+1)
	f.Lines = t.emu.Render(make([]string, 0, rows), f.Top, f.Left, cols, rows)
	f.CursorRow, f.CursorCol = row-f.Top, col-f.Left
	f.CursorHidden, f.AltScreen, f.Title = t.emu.CursorHidden(), t.emu.AltScreen(), t.emu.Title()
	t.lastView = renderedView{gen: t.gen, f: f}
	t.flush()
	return f
}

// renderedView is a view as view rendered it, with the emulator's gen then. Its Lines are
// shared by every viewer that gets it, and changed by none.
type renderedView struct {
	gen uint64
	f   Frame
}

// personWrite writes what a person typed (a viewer's keys, an answer) to the program. It
// is noted as input in flight, as an agent's is (noteInputLocked), so that a wait in an
// agent's call does not take the program's read of it for a question; once some of it
// went in, the agent's next result says a person typed.
func (s *session) personWrite(ctx context.Context, op string, p []byte) (int, error) {
	return s.personWriteIf(ctx, op, p, nil)
}

// personWriteIf is personWrite on a condition: check, when not nil, is called with s.mu
// held just before the input is noted, and an error from it refuses the write. What is
// checked there cannot change before the write is noted (an answer's: no input came
// since the question was looked at).
func (s *session) personWriteIf(ctx context.Context, op string, p []byte, check func() error) (int, error) {
	s.mu.Lock()
	if s.status.exited || s.closed {
		st := s.status
		s.mu.Unlock()
		return 0, fmt.Errorf("%s: session %q: %w (%s)", op, s.id, ErrExited, st)
	}
	if check != nil {
		if err := check(); err != nil {
			s.mu.Unlock()
			return 0, err
		}
	}
	s.noteInputLocked()
	s.mu.Unlock()
	n, err := s.write(ctx, p, time.Now().Add(personWriteTimeout))
	s.mu.Lock()
	s.writing--
	if n > 0 {
		s.personInputs++
	}
	s.mu.Unlock()
	if err != nil {
		return n, fmt.Errorf("%s: session %q: write: %w", op, s.id, err)
	}
	return n, nil
}

// personSeenLocked puts the viewers and whether a person typed since the last call into
// an IO's result, and marks the person's input seen. The caller holds s.mu.
func (s *session) personSeenLocked(res *ReadResult) {
	res.Viewers = len(s.viewers)
	res.PersonTyped = s.personInputs != s.personSeen
	s.personSeen = s.personInputs
}
