package tools

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/mcp-harness/mcp-harness/internal/toolschema"
	"github.com/mcp-harness/mcp-harness/pty/vt"
)

// screenMode is shell_io's screen argument: left out or false, no screen; true, the
// screen's text; "styled", its text and each row's colours (styleRun), which an MCP App's
// terminal view draws. One argument rather than a second flag: "styled" without the
// screen would mean nothing.
type screenMode int

const (
	screenNone screenMode = iota
	screenPlain
	screenStyled
)

// screenStyledWord is the word that asks for colours.
const screenStyledWord = "styled"

// screenSchema is screenMode's input schema: true or "styled" (false, which means the
// same as leaving it out, is taken but not offered: a model has no use for it).
var screenSchema = map[string]any{"enum": []any{true, screenStyledWord}}

func (m screenMode) MarshalJSON() ([]byte, error) {
	switch m {
	case screenPlain:
		return []byte("true"), nil
	case screenStyled:
		return json.Marshal(screenStyledWord)
	}
	return []byte("false"), nil
}

func (m *screenMode) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	got, err := screenModeOf(v, "screen")
	if err != nil {
		return err
	}
	*m = got
	return nil
}

// checkArg is checkValue's check of a screen argument: true, false or "styled", else a
// refusal that says so.
func (screenMode) checkArg(v any, path string) (any, error) {
	if _, err := screenModeOf(v, path); err != nil {
		return nil, err
	}
	return v, nil
}

func screenModeOf(v any, path string) (screenMode, error) {
	switch v {
	case nil, false:
		return screenNone, nil
	case true:
		return screenPlain, nil
	case screenStyledWord:
		return screenStyled, nil
	}
	return screenNone, invalidf("%s must be true, false or %q (the screen with its colours), not %s", path, screenStyledWord, describe(v))
}

// argChecker is a type of argument that checks its own JSON value (checkValue).
type argChecker interface {
	checkArg(v any, path string) (any, error)
}

var argCheckerType = reflect.TypeFor[argChecker]()

// styleRun is a stretch of a screen row in one style other than the default (vt.Run):
// len columns from col, 0-based. Colours are palette numbers (0-255, as the program
// chose them: the view maps them to its palette) or "#rrggbb"; null, the default. Every
// field is always there, as in every result.
type styleRun struct {
	Col       int       `json:"col"`
	Len       int       `json:"len"`
	Fg        *runColor `json:"fg"`
	Bg        *runColor `json:"bg"`
	Bold      bool      `json:"bold"`
	Italic    bool      `json:"italic"`
	Underline bool      `json:"underline"`
	Inverse   bool      `json:"inverse"`
}

// runColor is a colour of a styleRun as its JSON says it: a palette number, or "#rrggbb".
type runColor vt.Color

func (c runColor) MarshalJSON() ([]byte, error) {
	if rgb, ok := vt.Color(c).RGB(); ok {
		return fmt.Appendf(nil, `"#%06x"`, rgb), nil
	}
	p, _ := vt.Color(c).Palette()
	return fmt.Appendf(nil, "%d", p), nil
}

// screenRules are the deriver's rules for the types of this file.
var screenRules = []toolschema.Rule{
	toolschema.Type[screenMode](screenSchema),
	toolschema.Type[runColor](map[string]any{"type": []any{"integer", "string"}}),
}

// stylesOf is a screen's style runs as results give them; nil when none were asked for.
func stylesOf(rows [][]vt.Run) [][]styleRun {
	if rows == nil {
		return nil
	}
	out := make([][]styleRun, len(rows))
	for i, row := range rows {
		out[i] = make([]styleRun, len(row))
		for j, r := range row {
			out[i][j] = styleRun{Col: r.Col, Len: r.Len, Fg: colorOrNil(r.Fg), Bg: colorOrNil(r.Bg),
				Bold: r.Bold, Italic: r.Italic, Underline: r.Underline, Inverse: r.Inverse}
		}
	}
	return out
}

// colorOrNil is c as a result gives it: null for the terminal's default.
func colorOrNil(c vt.Color) *runColor {
	if c == 0 {
		return nil
	}
	rc := runColor(c)
	return &rc
}
