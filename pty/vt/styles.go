package vt

import (
	"image/color"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
)

// Color is a cell's colour as a view draws it: none (the terminal's default, the zero
// value), one of the 256 palette entries, or a 24-bit colour. It is a number so that a
// row's runs compare and copy cheaply.
type Color uint32

const (
	paletteBase Color = 1       // palette entry n is paletteBase+n
	rgbFlag     Color = 1 << 24 // a 24-bit colour is rgbFlag|0xrrggbb
)

// Palette returns the palette entry (0..255) of a palette colour.
func (c Color) Palette() (int, bool) {
	if c == 0 || c&rgbFlag != 0 {
		return 0, false
	}
	return int(c - paletteBase), true
}

// RGB returns the 0xrrggbb of a 24-bit colour.
func (c Color) RGB() (uint32, bool) {
	if c&rgbFlag == 0 {
		return 0, false
	}
	return uint32(c &^ rgbFlag), true
}

// colorOf is a cell colour as a Color: the basic and indexed colours keep their palette
// number (a view maps them to its own palette, as a terminal does), anything else is
// taken at its 24-bit value.
func colorOf(c color.Color) Color {
	switch c := c.(type) {
	case nil:
		return 0
	case ansi.BasicColor:
		return paletteBase + Color(c)
	case ansi.IndexedColor:
		return paletteBase + Color(c)
	}
	r, g, b, _ := c.RGBA()
	return rgbFlag | Color(r>>8)<<16 | Color(g>>8)<<8 | Color(b>>8)
}

// Run is a stretch of one row whose cells share a style other than the default: Len
// columns from column Col (0-based). Rows are given as their text (Lines) beside their
// runs, so that a reader without colours loses nothing.
type Run struct {
	Col, Len  int
	Fg, Bg    Color
	Bold      bool
	Italic    bool
	Underline bool
	Inverse   bool
}

func (r *Run) sameStyle(o *Run) bool {
	return r.Fg == o.Fg && r.Bg == o.Bg && r.Bold == o.Bold && r.Italic == o.Italic && r.Underline == o.Underline && r.Inverse == o.Inverse
}

func (r *Run) plain() bool {
	return r.Fg == 0 && r.Bg == 0 && !r.Bold && !r.Italic && !r.Underline && !r.Inverse
}

func runOf(s *uv.Style) Run {
	return Run{Fg: colorOf(s.Fg), Bg: colorOf(s.Bg), Bold: s.Attrs&uv.AttrBold != 0, Italic: s.Attrs&uv.AttrItalic != 0,
		Underline: s.Underline != uv.UnderlineNone, Inverse: s.Attrs&uv.AttrReverse != 0}
}

// Styles appends, for each row of the screen shown, the runs of its styled cells, left
// to right; a row with none has an empty slice. The right half of a wide character
// belongs to the run of its left half.
func (t *charmVT) Styles(dst [][]Run) [][]Run {
	cols, rows := t.Size()
	for y := range rows {
		var runs []Run
		var cur Run
		open := false
		for x := range cols {
			c := t.e.CellAt(x, y)
			if c != nil && c.IsZero() && open {
				cur.Len++ // the right half of a wide character
				continue
			}
			var r Run
			if c != nil {
				r = runOf(&c.Style)
			}
			switch {
			case open && r.sameStyle(&cur):
				cur.Len++
				continue
			case open:
				runs = append(runs, cur)
				open = false
			}
			if !r.plain() {
				r.Col, r.Len = x, 1
				cur, open = r, true
			}
		}
		if open {
			runs = append(runs, cur)
		}
		if runs == nil {
			runs = []Run{}
		}
		dst = append(dst, runs)
	}
	return dst
}
