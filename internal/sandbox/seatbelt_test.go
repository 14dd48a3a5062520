package sandbox

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sbplExpr is one parsed SBPL expression: an atom (a symbol or number), a string literal
// (its value, unescaped) or a list.
type sbplExpr struct {
	atom  string
	str   *string
	list  []sbplExpr
	isLst bool
}

// String prints e back in a canonical form, for comparisons and messages.
func (e sbplExpr) String() string {
	switch {
	case e.str != nil:
		return fmt.Sprintf("%q", *e.str)
	case e.isLst:
		parts := make([]string, len(e.list))
		for i, x := range e.list {
			parts[i] = x.String()
		}
		return "(" + strings.Join(parts, " ") + ")"
	}
	return e.atom
}

// parseSBPL reads a whole profile as the forms of a Scheme program, failing on anything
// that is not one: an unbalanced parenthesis, an unterminated string, an escape other
// than \\ and \" (the only ones a profile of ours may hold), a raw newline in a string.
func parseSBPL(src string) ([]sbplExpr, error) {
	p := &sbplParser{src: src}
	var forms []sbplExpr
	for {
		p.space()
		if p.i == len(p.src) {
			return forms, nil
		}
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		forms = append(forms, e)
	}
}

type sbplParser struct {
	src string
	i   int
}

// space skips white space and ; comments.
func (p *sbplParser) space() {
	for p.i < len(p.src) {
		switch c := p.src[p.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.i++
		case c == ';':
			for p.i < len(p.src) && p.src[p.i] != '\n' {
				p.i++
			}
		default:
			return
		}
	}
}

func (p *sbplParser) expr() (sbplExpr, error) {
	p.space()
	if p.i == len(p.src) {
		return sbplExpr{}, errors.New("unexpected end of profile")
	}
	switch p.src[p.i] {
	case '(':
		p.i++
		e := sbplExpr{isLst: true}
		for {
			p.space()
			if p.i == len(p.src) {
				return sbplExpr{}, errors.New("unbalanced: a list is not closed")
			}
			if p.src[p.i] == ')' {
				p.i++
				return e, nil
			}
			x, err := p.expr()
			if err != nil {
				return sbplExpr{}, err
			}
			e.list = append(e.list, x)
		}
	case ')':
		return sbplExpr{}, fmt.Errorf("unbalanced: ) at byte %d closes nothing", p.i)
	case '#':
		// A regular expression literal, #"...": a string with its own escapes.
		if p.i+1 < len(p.src) && p.src[p.i+1] == '"' {
			start := p.i
			p.i++
			str, err := p.expr()
			if err != nil || str.str == nil {
				return sbplExpr{}, fmt.Errorf("regex at byte %d: %v", start, err)
			}
			return sbplExpr{atom: "#" + sbplExpr{str: str.str}.String()}, nil
		}
	case '"':
		start := p.i
		p.i++
		var b strings.Builder
		for {
			if p.i == len(p.src) {
				return sbplExpr{}, fmt.Errorf("string at byte %d is not terminated", start)
			}
			c := p.src[p.i]
			p.i++
			switch c {
			case '"':
				s := b.String()
				return sbplExpr{str: &s}, nil
			case '\n', 0:
				return sbplExpr{}, fmt.Errorf("string at byte %d holds a newline or NUL", start)
			case '\\':
				if p.i == len(p.src) || (p.src[p.i] != '\\' && p.src[p.i] != '"') {
					return sbplExpr{}, fmt.Errorf("string at byte %d: bad escape", start)
				}
				b.WriteByte(p.src[p.i])
				p.i++
			default:
				b.WriteByte(c)
			}
		}
	}
	start := p.i
	for p.i < len(p.src) && !strings.ContainsRune(" \t\r\n()\";", rune(p.src[p.i])) {
		p.i++
	}
	return sbplExpr{atom: p.src[start:p.i]}, nil
}

// rules returns the forms of profile whose head is action and second element op, e.g.
// every (allow file-write* ...), failing the test if the profile does not parse.
func sbplRules(t *testing.T, forms []sbplExpr, action, op string) [][]string {
	t.Helper()
	var out [][]string
	for _, f := range forms {
		if f.isLst && len(f.list) >= 2 && f.list[0].atom == action && f.list[1].atom == op {
			var filters []string
			for _, x := range f.list[2:] {
				filters = append(filters, x.String())
			}
			out = append(out, filters)
		}
	}
	return out
}

func mustParseSBPL(t *testing.T, profile string) []sbplExpr {
	t.Helper()
	forms, err := parseSBPL(profile)
	if err != nil {
		t.Fatalf("profile does not parse: %v\n%s", err, profile)
	}
	return forms
}

var (
	sbRoots = []Root{
		{Path: "/Users/u/ws", Kind: RootWorkspace},
		{Path: "/tmp", Kind: RootTemp},
		{Path: "/var/folders/xy/T/", Kind: RootTemp},
		{Path: "/Users/u/Library/Caches", Kind: RootCache},
		{Path: "/Users/u/extra", Kind: RootWritable},
		{Path: "/dev/null", Kind: RootDevice},
		{Path: "/dev/tty", Kind: RootDevice},
	}
	sbProtected = []string{"/Users/u/ws/.mcp-harness", "/Users/u/ws/.mcp-harness/artifacts"}
	// sbAllow are the filters the allow rule for sbRoots holds, in order.
	sbAllow = []string{
		`(subpath "/Users/u/ws")`,
		`(subpath "/tmp")`, `(subpath "/private/tmp")`,
		`(subpath "/var/folders/xy/T")`, `(subpath "/private/var/folders/xy/T")`,
		`(subpath "/Users/u/Library/Caches")`,
		`(subpath "/Users/u/extra")`,
		`(literal "/dev/null")`,
		`(literal "/dev/tty")`,
		`(subpath "/dev/fd")`,
		`(regex #"^/dev/ttys[0-9]+$")`,
	}
	sbDeny = []string{`(subpath "/Users/u/ws/.mcp-harness")`, `(subpath "/Users/u/ws/.mcp-harness/artifacts")`}
)

func TestSeatbeltProfile(t *testing.T) {
	for _, mode := range Modes() {
		for _, network := range []Network{NetworkOn, NetworkOff} {
			p := Policy{Mode: mode, Network: network}
			t.Run(string(mode)+"/network-"+string(network), func(t *testing.T) {
				profile, err := SeatbeltProfile(p, sbRoots, sbProtected)
				if err != nil {
					t.Fatalf("SeatbeltProfile(%s) = %v", p, err)
				}
				forms := mustParseSBPL(t, profile)
				var heads []string
				for _, f := range forms {
					heads = append(heads, f.list[0].atom+" "+f.list[1].String())
				}
				want := []string{"version 1", "allow default"}
				if mode != Off {
					want = append(want, "deny file-write*", "allow file-write*", "deny file-write*")
					if got := sbplRules(t, forms, "allow", "file-write*"); !cmp.Equal(got, [][]string{sbAllow}) {
						t.Errorf("allow file-write* rules: %q, want %q", got, sbAllow)
					}
					if got := sbplRules(t, forms, "deny", "file-write*"); !cmp.Equal(got, [][]string{nil, sbDeny}) {
						t.Errorf("deny file-write* rules: %q, want a bare one, then %q", got, sbDeny)
					}
				}
				if network == NetworkOff {
					want = append(want, "deny network*", "allow network*", "allow network*")
					if got, want := sbplRules(t, forms, "allow", "network*"), [][]string{{"(remote unix-socket)"}, {"(local unix-socket)"}}; !cmp.Equal(got, want) {
						t.Errorf("allow network* rules: %q, want %q", got, want)
					}
				}
				// The order is the policy: in SBPL the last rule that matches wins.
				if diff := cmp.Diff(want, heads); diff != "" {
					t.Errorf("SeatbeltProfile(%s) rules (-want +got):\n%s\n%s", p, diff, profile)
				}
				if network == NetworkOn && strings.Contains(profile, "network") {
					t.Errorf("SeatbeltProfile(%s) names the network:\n%s", p, profile)
				}
			})
		}
	}
}

// The whole text of one profile, pinned: what a reviewer of the macOS rules reads.
func TestSeatbeltProfile_Text(t *testing.T) {
	got, err := SeatbeltProfile(Policy{Mode: WorkspaceWrite, Network: NetworkOff},
		[]Root{{Path: "/Users/u/ws", Kind: RootWorkspace}, {Path: "/tmp", Kind: RootTemp}, {Path: "/dev/null", Kind: RootDevice}},
		[]string{"/Users/u/ws/.mcp-harness"})
	if err != nil {
		t.Fatal(err)
	}
	want := `(version 1)
; reads, processes and IPC as without a sandbox; what follows takes away
(allow default)
; writes only under the writable roots (workspace-write)
(deny file-write*)
(allow file-write*
  (subpath "/Users/u/ws")
  (subpath "/tmp")
  (subpath "/private/tmp")
  (literal "/dev/null")
  (subpath "/dev/fd")
  (regex #"^/dev/ttys[0-9]+$"))
; the server's state, not even inside a root (the last rule that matches wins)
(deny file-write*
  (subpath "/Users/u/ws/.mcp-harness"))
; network off: no IP sockets; Unix-domain sockets stay
(deny network*)
(allow network* (remote unix-socket))
(allow network* (local unix-socket))
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SeatbeltProfile (-want +got):\n%s", diff)
	}
}

func TestSeatbeltProfile_Paths(t *testing.T) {
	for _, tc := range []struct {
		name      string
		roots     []Root
		protected []string
		allow     [][]string // the allow file-write* rules
		deny      [][]string // the deny file-write* rules after the bare one
	}{
		{
			// An (allow file-write*) with no filter would allow every write.
			name: "NoRoots",
		},
		{
			name:  "Escapes",
			roots: []Root{{Path: `/Users/u/a "quoted" \dir`, Kind: RootWritable}},
			allow: [][]string{{`(subpath "/Users/u/a \"quoted\" \\dir")`}},
		},
		{
			name:      "Cleaned",
			roots:     []Root{{Path: "/Users/u/ws/", Kind: RootWorkspace}, {Path: "/Users/u//x/../y", Kind: RootWritable}},
			protected: []string{"/Users/u/ws/.mcp-harness/"},
			allow:     [][]string{{`(subpath "/Users/u/ws")`, `(subpath "/Users/u/y")`}},
			deny:      [][]string{{`(subpath "/Users/u/ws/.mcp-harness")`}},
		},
		{
			name:  "Duplicates",
			roots: []Root{{Path: "/tmp", Kind: RootTemp}, {Path: "/private/tmp", Kind: RootTemp}, {Path: "/tmp/", Kind: RootTemp}},
			allow: [][]string{{`(subpath "/tmp")`, `(subpath "/private/tmp")`}},
		},
		{
			name:      "PrivateAliases",
			roots:     []Root{{Path: "/var/folders/T", Kind: RootTemp}, {Path: "/etc", Kind: RootWritable}, {Path: "/tmpfoo", Kind: RootWritable}},
			protected: []string{"/tmp/state"},
			allow:     [][]string{{`(subpath "/var/folders/T")`, `(subpath "/private/var/folders/T")`, `(subpath "/etc")`, `(subpath "/private/etc")`, `(subpath "/tmpfoo")`}},
			deny:      [][]string{{`(subpath "/tmp/state")`, `(subpath "/private/tmp/state")`}},
		},
		{
			name:  "UnicodeAndParens",
			roots: []Root{{Path: "/Users/u/é (copy); x", Kind: RootWritable}},
			allow: [][]string{{`(subpath "/Users/u/é (copy); x")`}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			profile, err := SeatbeltProfile(Policy{Mode: WorkspaceWrite, Network: NetworkOn}, tc.roots, tc.protected)
			if err != nil {
				t.Fatalf("SeatbeltProfile = %v", err)
			}
			forms := mustParseSBPL(t, profile)
			// Any allow rule ends with the entries for the command's own output and macOS's
			// terminals.
			for i := range tc.allow {
				tc.allow[i] = append(tc.allow[i], `(subpath "/dev/fd")`, `(regex #"^/dev/ttys[0-9]+$")`)
			}
			if got := sbplRules(t, forms, "allow", "file-write*"); !cmp.Equal(got, tc.allow) {
				t.Errorf("allow file-write* rules: %q, want %q\n%s", got, tc.allow, profile)
			}
			if got := sbplRules(t, forms, "deny", "file-write*"); !cmp.Equal(got, append([][]string{nil}, tc.deny...)) {
				t.Errorf("deny file-write* rules: %q, want a bare one, then %q\n%s", got, tc.deny, profile)
			}
		})
	}
}

func TestSeatbeltProfile_Errors(t *testing.T) {
	ok := Policy{Mode: WorkspaceWrite, Network: NetworkOn}
	for _, tc := range []struct {
		name      string
		policy    Policy
		roots     []Root
		protected []string
		want      string
	}{
		{"ErrNewlineRoot", ok, []Root{{Path: "/Users/u/a\nb", Kind: RootWritable}}, nil,
			`seatbelt profile: writable root: "/Users/u/a\nb": a path with a newline or a NUL byte cannot be written in a profile`},
		{"ErrNULProtected", ok, nil, []string{"/Users/u/ws/\x00"},
			`seatbelt profile: protected path: "/Users/u/ws/\x00": a path with a newline or a NUL byte cannot be written in a profile`},
		{"ErrRelativeRoot", ok, []Root{{Path: "ws", Kind: RootWorkspace}}, nil,
			`seatbelt profile: writable root: "ws": want an absolute path`},
		{"ErrEmptyRoot", ok, []Root{{Path: "", Kind: RootWorkspace}}, nil,
			`seatbelt profile: writable root: "": want an absolute path`},
		{"ErrMode", Policy{Mode: "strict", Network: NetworkOn}, nil, nil,
			`seatbelt profile: sandbox "strict": want one of read-only, workspace-write, off`},
		{"ErrNetwork", Policy{Mode: Off, Network: "lan"}, nil, nil,
			`seatbelt profile: network "lan": want on or off`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SeatbeltProfile(tc.policy, tc.roots, tc.protected)
			if err == nil {
				t.Fatalf("SeatbeltProfile = %q, want error %q", got, tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("SeatbeltProfile error = %q, want %q", err, tc.want)
			}
		})
	}
	// With the mode off nothing of the file system is written, so no path is refused.
	if _, err := SeatbeltProfile(Policy{Mode: Off, Network: NetworkOff}, []Root{{Path: "a\nb"}}, []string{"x"}); err != nil {
		t.Errorf("SeatbeltProfile(off, network off) = %v, want nil: the roots do not matter", err)
	}
}

// The tokenizer itself refuses what is not a profile: the checks above are only as good
// as it is.
func TestParseSBPL(t *testing.T) {
	for _, src := range []string{
		`(allow`, `)`, `(allow "x)`, `(allow "a\nb")`, `(allow "a\tb")`, "(allow \"a\nb\")", `"\`,
	} {
		if forms, err := parseSBPL(src); err == nil {
			t.Errorf("parseSBPL(%q) = %v, want an error", src, forms)
		}
	}
	forms, err := parseSBPL("; c\n(a (b \"c\\\"d\\\\\") e) ; end\n(f)")
	if err != nil || len(forms) != 2 || forms[0].String() != `(a (b "c\"d\\") e)` {
		t.Errorf("parseSBPL = %v, %v, want two forms", forms, err)
	}
}

// Any path without a newline or NUL round-trips: it is one string literal whose value is
// the path, and a profile with it as a root parses and names it first.
func FuzzSeatbeltQuote(f *testing.F) {
	f.Add(`/Users/u/a "b" \c`)
	f.Add(`\"`)
	f.Add(`")) (allow default) ("`)
	f.Add("; comment\r(")
	f.Add("/tmp/x")
	f.Fuzz(func(t *testing.T, s string) {
		lit, err := sbplString(s)
		if strings.ContainsAny(s, "\n\x00") {
			if err == nil {
				t.Fatalf("sbplString(%q) = %q, want an error", s, lit)
			}
			return
		}
		if err != nil {
			t.Fatalf("sbplString(%q) = %v", s, err)
		}
		forms, err := parseSBPL(lit)
		if err != nil || len(forms) != 1 || forms[0].str == nil || *forms[0].str != s {
			t.Fatalf("sbplString(%q) = %s, which parses as %v, %v", s, lit, forms, err)
		}

		root := path.Clean("/" + s)
		profile, err := SeatbeltProfile(Policy{Mode: WorkspaceWrite, Network: NetworkOff},
			[]Root{{Path: root, Kind: RootWritable}, {Path: root, Kind: RootDevice}}, []string{root})
		if err != nil {
			t.Fatalf("SeatbeltProfile(root %q) = %v", root, err)
		}
		allow := sbplRules(t, mustParseSBPL(t, profile), "allow", "file-write*")
		if len(allow) != 1 || len(allow[0]) < 2 || allow[0][0] != fmt.Sprintf("(subpath %q)", root) {
			t.Fatalf("SeatbeltProfile(root %q) allows %q", root, allow)
		}
	})
}
