// Package vt is the terminal side of a session as pure code: a Scanner that reads every
// byte of the output fast, answers the queries programs wait on and finds where the
// screen starts afresh, and the Emulator that keeps the screen, slowly, on
// github.com/charmbracelet/x/vt with the fixes it needs laid over it. It knows nothing
// of sessions: the pty package feeds both from its ring buffer, on its own goroutine,
// and decides when the emulator may skip ahead. The other direction is here too: Key
// gives the bytes a terminal sends for a key name.
package vt

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
	"unsafe"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	charmvt "github.com/charmbracelet/x/vt"
)

// Emulator is the VT emulator a session's screen is kept in: the few things the pty
// package asks of one, so the implementation can be replaced. It is not safe for
// concurrent use.
type Emulator interface {
	// Write parses output the program printed.
	Write(p []byte)
	// Resize changes the screen size; the content is kept as far as it fits.
	Resize(cols, rows int)
	// Size is the screen size.
	Size() (cols, rows int)
	// Cursor is the cursor position, 0-based.
	Cursor() (row, col int)
	// AltScreen reports whether the alternate screen is shown.
	AltScreen() bool
	// Title is the window title last set (OSC 0 or 2).
	Title() string
	// Lines appends the screen shown, one string per row with trailing spaces removed.
	Lines(dst []string) []string
	// Styles appends each row's runs of styled cells (styles.go), one slice per row.
	Styles(dst [][]Run) [][]Run
	// Forget drops the rows kept above the main screen (what a grow brings back): the
	// output they came from is being skipped.
	Forget()
	// CursorHidden reports whether the program hid the cursor (DECTCEM off).
	CursorHidden() bool
	// Render appends rows top..top+rows-1 of the screen shown, columns left..left+cols-1,
	// each with the SGR sequences of its styles and ending with the styles reset: a view
	// of the screen for a terminal cols x rows (a person's, attached). Rows and columns
	// beyond the screen are blank; a wide character cut by the view's edge is a space.
	// Blank cells at the end of a row are left out: the row is to be painted over a
	// cleared one.
	Render(dst []string, top, left, cols, rows int) []string
}

// emulatorParserData bounds the payload of one OSC, DCS or APC sequence the emulator keeps
// (titles, colours, hyperlinks). vt allocates 4 MiB per emulator for it, which would be
// most of a session's memory; longer payloads (OSC 52 clipboard copies, images) only
// matter to a real terminal.
const emulatorParserData = 16 << 10

// charmVT is the emulator on github.com/charmbracelet/x/vt v0.1.0, with the fixes the pty
// package needs laid over it:
//   - replies to queries: vt writes them into an unbuffered pipe, so a Write that meets a
//     query blocks until someone reads the pipe (charmbracelet/x#939). The scanner
//     answers every query itself, in order and without waiting for the emulator, so the
//     emulator's own replies would be duplicates: the pipe is closed at the start, and
//     vt's writes to it fail at once instead of blocking (it ignores the error);
//   - scrollback: vt keeps 10,000 lines behind each of its two screens, copying the line
//     and shifting the whole history for every line scrolled out once it is full. Only
//     the visible screen is reported here, so both screens go without, except for the
//     few rows a grow brings back after a shrink (resize.go);
//   - resizing cuts the bottom of the screen off, the cursor row with it (resize.go);
//   - a wide character printed at the last column vanishes; xterm and tmux print it at
//     the start of the next row when autowrap is on: the filter below wraps first.
//   - ED 3 (CSI 3 J) erases the saved lines only in xterm; vt also blanks the screen;
//   - titles containing ';' are dropped by vt (it splits the whole payload on ';');
//   - insert mode (IRM, CSI 4 h) is recorded but ignored by vt: text overwrites instead of
//     pushing the rest of the line right. While it is on, each printed character is
//     preceded by an insert of blanks as wide as it (ICH, CSI n @), which is what insert
//     mode does.
type charmVT struct {
	e     *charmvt.Emulator
	in    *internals // nil if vt's layout is not the one reach knows
	title string
	irm   irmFilter
	shift shiftFilter // SO and SI, which vt ignores (see shiftFilter)
}

// New returns an Emulator of cols x rows on charmbracelet/x/vt (see charmVT).
func New(cols, rows int) Emulator {
	e := charmvt.NewEmulator(cols, rows)
	if c, ok := e.InputPipe().(io.Closer); ok {
		_ = c.Close()
	}
	t := &charmVT{e: e}
	if tame(e) {
		t.in = reach(e)
	}
	t.irm.in = t.in
	e.RegisterCsiHandler('J', func(params ansi.Params) bool {
		n, _, _ := params.Param(0, 0)
		if n != 3 {
			return false // vt's
		}
		if t.in != nil {
			t.in.forget() // the history only; the screen stays
		}
		return true
	})
	for _, cmd := range []int{0, 2} { // 1 names the icon only
		e.RegisterOscHandler(cmd, func(data []byte) bool {
			_, t.title, _ = strings.Cut(string(data), ";")
			return true
		})
	}
	return t
}

// tame removes what vt allocates and keeps that this package has no use for (see charmVT)
// by reaching into its unexported fields: vt offers no way to turn off the alternate
// screen's scrollback or to size the parser. The field types are checked first, so a vt
// that changes its layout gets the defaults, not memory corruption (TestEmulatorTamed
// says so).
func tame(e *charmvt.Emulator) bool {
	v := reflect.ValueOf(e).Elem()
	scrs := v.FieldByName("scrs")
	parser := v.FieldByName("parser")
	if !scrs.IsValid() || !parser.IsValid() || // a field renamed or gone
		scrs.Kind() != reflect.Array || scrs.Type().Elem() != reflect.TypeFor[charmvt.Screen]() ||
		parser.Type() != reflect.TypeFor[*ansi.Parser]() || parser.IsNil() {
		e.SetScrollbackSize(1)
		return false
	}
	for i := range scrs.Len() {
		(*charmvt.Screen)(unsafe.Pointer(scrs.Index(i).UnsafeAddr())).SetScrollback(nil)
	}
	(*(**ansi.Parser)(unsafe.Pointer(parser.UnsafeAddr()))).SetDataSize(emulatorParserData)
	return true
}

func (t *charmVT) Write(p []byte) { t.irm.write(t.e, t.shift.filter(p)) }

// irmFilter follows the output closely enough to know where insert mode goes on and off
// and, while it is on, which bytes are printed characters; and where a wide character
// is printed, to wrap it when it does not fit the row (wrapWide).
type irmFilter struct {
	in    *internals // for wrapWide; nil leaves wide characters to vt
	pend  []byte     // the start of a character the last write ended in
	prev  rune       // the character before, if not ASCII (0 after ASCII or a control)
	wide  bool       // a wide character's cluster is being printed: endWide once it ends
	on    bool
	state uint8 // irmGround and the rest below
	mode  int   // the CSI parameter being read
	priv  bool  // the CSI has a private marker or intermediates: not SM/RM of ANSI modes
	has4  bool  // the CSI lists mode 4
	rune  []byte
	out   []byte
}

const (
	irmGround uint8 = iota
	irmEsc
	irmEscInter
	irmCSI
	irmString
	irmStringEsc
)

// write parses p into e, rewriting printed characters while insert mode is on.
func (f *irmFilter) write(e *charmvt.Emulator, p []byte) {
	if len(f.pend) > 0 {
		p = append(f.pend, p...)
		f.pend = nil
	}
	from := 0 // p[from:] is not written yet
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch f.state {
		case irmGround:
			if b < 0xc0 {
				if b < 0x80 {
					if f.wide {
						from = f.endWide(e, p, from, i)
					}
					f.prev = 0
				}
			} else if !f.on && f.in != nil {
				if !utf8.FullRune(p[i:]) {
					// Held until its last bytes come: whether it fits depends on its width.
					f.flush(e, p[from:i])
					f.pend = append([]byte(nil), p[i:]...)
					return
				}
				r, size := utf8.DecodeRune(p[i:])
				if !joins(f.prev, r) {
					if f.wide {
						from = f.endWide(e, p, from, i)
					}
					if r >= 0x1100 && ansi.StringWidth(string(r)) == 2 {
						f.flush(e, p[from:i]) // which also ends vt's cluster before r
						from = i
						f.in.wrapWide(e)
						f.wide = true
					}
				}
				f.prev = r
				i += size - 1
				break
			}
			if b == 0x1b {
				f.state = irmEsc
			} else if f.on && b >= 0x20 && b != 0x7f {
				if from < i {
					_, _ = e.Write(p[from:i])
				}
				from = i + 1
				f.printed(e, b)
			}
		case irmEsc:
			switch {
			case b == '[':
				f.state, f.mode, f.priv, f.has4 = irmCSI, 0, false, false
			case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
				f.state = irmString
			case b == 0x1b:
			case b >= 0x20 && b <= 0x2f:
				f.state = irmEscInter // a charset designation, say: to its final byte
			default:
				f.state = irmGround
			}
		case irmEscInter:
			if b < 0x20 || b > 0x2f {
				f.state = irmGround
			}
		case irmCSI:
			switch {
			case b >= '0' && b <= '9':
				f.mode = min(f.mode*10+int(b-'0'), 99999)
			case b == ';' || b == ':':
				f.has4 = f.has4 || f.mode == 4
				f.mode = 0
			case b >= 0x3c && b <= 0x3f || b >= 0x20 && b <= 0x2f:
				f.priv = true
			case b >= 0x40 && b <= 0x7e:
				f.state = irmGround
				if !f.priv && (f.has4 || f.mode == 4) && (b == 'h' || b == 'l') {
					// The emulator must see everything up to here in the old mode.
					_, _ = e.Write(p[from : i+1])
					from = i + 1
					f.on = b == 'h'
					f.rune = f.rune[:0]
				}
			case b == 0x1b:
				f.state = irmEsc
			case b == 0x18 || b == 0x1a:
				f.state = irmGround
			}
		case irmString:
			if b == 0x1b {
				f.state = irmStringEsc
			} else if b == 0x07 || b == 0x18 || b == 0x1a {
				f.state = irmGround
			}
		case irmStringEsc:
			f.state = irmString
			if b == '\\' {
				f.state = irmGround
			}
		}
	}
	f.flush(e, p[from:])
}

// flush writes p, the output up to a place the filter acts at. vt prints the character it
// holds back at the end of each write, so a wide one that was being printed is done.
func (f *irmFilter) flush(e *charmvt.Emulator, p []byte) {
	if len(p) > 0 {
		_, _ = e.Write(p)
	}
	if f.wide {
		f.wide = false
		f.in.endWide(e)
	}
}

// endWide writes p[from:i], which ends with the cluster of a wide character, at i where
// the next character begins, and returns i: the new from.
func (f *irmFilter) endWide(e *charmvt.Emulator, p []byte, from, i int) int {
	f.flush(e, p[from:i])
	return i
}

// printed takes one byte of a printed character in insert mode and, once the character
// is whole, writes the insert and the character.
func (f *irmFilter) printed(e *charmvt.Emulator, b byte) {
	f.rune = append(f.rune, b)
	if !utf8.FullRune(f.rune) && len(f.rune) < utf8.UTFMax {
		return
	}
	if w := ansi.StringWidth(string(f.rune)); w > 0 {
		f.out = fmt.Appendf(f.out[:0], "\x1b[%d@", w)
		_, _ = e.Write(f.out)
	}
	_, _ = e.Write(f.rune)
	f.rune = f.rune[:0]
}

func (t *charmVT) Resize(cols, rows int) {
	if t.in == nil {
		t.e.Resize(cols, rows)
		return
	}
	t.in.resize(t.e, cols, rows)
}

func (t *charmVT) Forget() {
	if t.in != nil {
		t.in.forget()
	}
}

func (t *charmVT) Size() (int, int) { return t.e.Width(), t.e.Height() }

func (t *charmVT) Cursor() (int, int) {
	p := t.e.CursorPosition()
	return p.Y, p.X
}

func (t *charmVT) AltScreen() bool { return t.e.IsAltScreen() }

func (t *charmVT) Title() string { return t.title }

func (t *charmVT) CursorHidden() bool { return t.e.CursorHidden() }

func (t *charmVT) Render(dst []string, top, left, cols, rows int) []string {
	w, h := t.Size()
	var b strings.Builder
	for y := top; y < top+rows; y++ {
		if y < 0 || y >= h {
			dst = append(dst, "")
			continue
		}
		b.Reset()
		b.Grow(cols + 16)
		var r rowRenderer
		row := t.row(y)
		for x := left; x < left+cols && x < w; x++ {
			var c *uv.Cell
			if row != nil {
				c = row.At(x)
			} else {
				c = t.e.CellAt(x, y)
			}
			switch {
			case c == nil:
				r.blank(&b)
			case c.Width == 0 && c.Content == "":
				if x == left {
					r.blank(&b) // the right half of a wide character cut off on the left
				}
				// else the right half of a wide character, written with its left half
			case c.Width > 1 && x+c.Width > left+cols:
				r.blank(&b) // its right half would be cut off
			default:
				r.cell(&b, c)
			}
		}
		r.end(&b)
		dst = append(dst, b.String())
	}
	return dst
}

// row is row y of the screen shown, read straight from vt's buffer (a cell at a time
// through vt's CellAt costs more than the rendering); nil where vt's layout is not the one
// reach knows.
func (t *charmVT) row(y int) uv.Line {
	if t.in == nil {
		return nil
	}
	i := 0
	if t.e.IsAltScreen() {
		i = 1
	}
	if lines := t.in.bufs[i].Lines; y < len(lines) {
		return lines[y]
	}
	return nil
}

// zeroStyle is uv.Style.IsZero without comparing interfaces: no colour, no attribute.
func zeroStyle(s *uv.Style) bool {
	return s.Fg == nil && s.Bg == nil && s.UnderlineColor == nil && s.Underline == 0 && s.Attrs == 0
}

// rowRenderer writes one row's cells with the SGR sequences (and OSC 8 hyperlinks) of
// their styles, as ultraviolet's Line.Render does, but fast for the common cell, plain
// text: a style is compared with the pen only when it is not the zero style. Blank cells
// are held back and written only before something else, so a row ends with its last
// visible cell.
type rowRenderer struct {
	pen    uv.Style
	link   uv.Link
	spaces int
}

func (r *rowRenderer) blank(b *strings.Builder) {
	if !zeroStyle(&r.pen) {
		b.WriteString(ansi.ResetStyle)
		r.pen = uv.Style{}
	}
	if r.link.URL != "" {
		b.WriteString(ansi.ResetHyperlink())
		r.link = uv.Link{}
	}
	r.spaces++
}

func (r *rowRenderer) cell(b *strings.Builder, c *uv.Cell) {
	plain := zeroStyle(&c.Style)
	if plain && c.Link.URL == "" && (c.Content == " " || c.Content == "") {
		r.blank(b)
		return
	}
	for ; r.spaces > 0; r.spaces-- {
		b.WriteByte(' ')
	}
	switch {
	case plain:
		if !zeroStyle(&r.pen) {
			b.WriteString(ansi.ResetStyle)
			r.pen = uv.Style{}
		}
	case !c.Style.Equal(&r.pen):
		b.WriteString(c.Style.Diff(&r.pen))
		r.pen = c.Style
	}
	if c.Link != r.link {
		if r.link.URL != "" {
			b.WriteString(ansi.ResetHyperlink())
		}
		if c.Link.URL != "" {
			b.WriteString(ansi.SetHyperlink(c.Link.URL, c.Link.Params))
		}
		r.link = c.Link
	}
	if c.Content == "" {
		b.WriteByte(' ')
	} else {
		b.WriteString(c.Content)
	}
}

// end closes what the row left open: a hyperlink, a style.
func (r *rowRenderer) end(b *strings.Builder) {
	if r.link.URL != "" {
		b.WriteString(ansi.ResetHyperlink())
	}
	if !zeroStyle(&r.pen) {
		b.WriteString(ansi.ResetStyle)
	}
}

func (t *charmVT) Lines(dst []string) []string {
	cols, rows := t.Size()
	var b strings.Builder
	for y := range rows {
		b.Reset()
		for x := range cols {
			c := t.e.CellAt(x, y)
			switch {
			case c == nil:
				b.WriteByte(' ')
			case c.IsZero():
				// the right half of a wide character, already written with its left half
			case c.Content == "":
				b.WriteByte(' ')
			default:
				b.WriteString(c.Content)
			}
		}
		dst = append(dst, strings.TrimRight(b.String(), " "))
	}
	return dst
}
