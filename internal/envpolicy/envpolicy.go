// Package envpolicy decides what of the server's own environment the commands it starts
// (tasks and terminal sessions) inherit. The server often runs with credentials in its
// environment (an API key for the client that launched it, a token for a registry), and a
// command an agent runs has no business reading them: a test that prints its environment,
// or a dependency's install script, would hand them to the model's context or to the
// network. So secret-looking variables are withheld unless the person running the server
// lets them through by name (--env-allow), or the call sets them itself (its own env).
//
// The rules, fixed here so that every engine applies the same ones:
//
//   - A name looks secret (LooksSecret) when it contains KEY, SECRET, TOKEN, PASSWORD,
//     PASSWD, CREDENTIAL or AUTH, in any ASCII case. It is a plain substring rule, as the
//     design states it: KEYBOARD_LAYOUT and AUTHOR_NAME look secret too. A rule that
//     guessed at word boundaries would leak MYAPIKEY; one that errs the other way costs a
//     variable the person can let through with --env-allow.
//   - Inherit passes everything on and withholds nothing. Scrub passes on everything but
//     the names that look secret. Minimal passes on only PATH, HOME, USER, LOGNAME,
//     SHELL, LANG, every LC_* (LC_ALL included), TERM, TMPDIR and TZ, and of those too
//     withholds a name that looks secret: minimal keeps no more than scrub does.
//   - A name matching an Allow pattern is passed on in every mode, secret or not. A
//     pattern is a whole, case-sensitive name in which '*' stands for any run of
//     characters (none included); no other character is special, so "A?B" and "[x]"
//     name themselves.
//   - Entries of the environment that are not NAME=value (no '=', or an empty name) and
//     entries holding a NUL byte are dropped and not reported: a program cannot be given
//     them (os/exec refuses a NUL), and they have no name to report. A name given twice
//     is decided once, by its last value, kept where its last entry stands, as os/exec
//     does with a Cmd's Env.
//   - A call's own env always wins (Withheld): a name it sets is not withheld from it,
//     whatever the policy says.
//   - The server's own variables (MCP_HARNESS_*) get no special treatment: they are
//     filtered like any other, and the engines add the markers they set for their
//     commands after filtering.
//
// Results list what was withheld by name, never by value.
package envpolicy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcp-harness/mcp-harness/internal/quote"
)

// Mode is how much of the server's environment a command inherits.
type Mode string

// The modes, loosest first.
const (
	// Inherit passes on the whole environment.
	Inherit Mode = "inherit"
	// Scrub passes on all but the names that look secret (the default).
	Scrub Mode = "scrub"
	// Minimal passes on only the names a shell and a build need to run
	// (MinimalNames) and the allowed ones.
	Minimal Mode = "minimal"
)

// Modes lists the modes, loosest first.
func Modes() []Mode { return []Mode{Inherit, Scrub, Minimal} }

// Valid reports whether m is one of the modes.
func (m Mode) Valid() bool { return slices.Contains(Modes(), m) }

// secretWords are the substrings that make a name look secret, in upper case.
var secretWords = []string{"KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"}

// SecretWords returns the words that make a name look secret, in upper case, for
// messages and documentation that list them.
func SecretWords() []string { return slices.Clone(secretWords) }

// minimalNames are the names Minimal passes on besides LC_* and the allowed ones: what a
// shell, a compiler and a locale-aware tool need to find their programs, home, terminal,
// scratch space and time zone.
var minimalNames = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR", "TZ"}

// MinimalNames returns the names Minimal passes on besides every LC_* name and the
// allowed ones.
func MinimalNames() []string { return slices.Clone(minimalNames) }

// LooksSecret reports whether name contains one of the secret words (SecretWords) in any
// ASCII case: GITHUB_TOKEN, Api_Key, npm_config__auth, KEYBOARD_LAYOUT.
func LooksSecret(name string) bool {
	upper := asciiUpper(name)
	for _, w := range secretWords {
		if strings.Contains(upper, w) {
			return true
		}
	}
	return false
}

// asciiUpper upper-cases the ASCII letters of s only: which names look secret must not
// depend on Unicode case tables (the Kelvin sign is no K here).
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b)
}

// minimal reports whether Minimal passes name on (before the secret rule and Allow).
func minimal(name string) bool {
	return strings.HasPrefix(name, "LC_") || slices.Contains(minimalNames, name)
}

// Policy is what of its environment a server passes on to the commands it starts.
type Policy struct {
	Mode Mode
	// Allow are names, or patterns with '*', that are passed on in every mode.
	Allow []string
}

// Validate reports a mode that is not one of Modes and an Allow pattern that cannot name
// a variable: an empty one, or one holding '=' or a NUL byte.
func (p Policy) Validate() error {
	if !p.Mode.Valid() {
		return fmt.Errorf("env policy %s: want inherit, scrub or minimal", quote.Short(string(p.Mode)))
	}
	for _, pat := range p.Allow {
		if err := checkPattern(pat); err != nil {
			return err
		}
	}
	return nil
}

func checkPattern(pat string) error {
	switch {
	case pat == "":
		return fmt.Errorf("env allow pattern %s: want a variable name, or a pattern with *", quote.Short(pat))
	case strings.Contains(pat, "="):
		return fmt.Errorf("env allow pattern %s: a variable name cannot contain '=' (give the name only, not NAME=value)", quote.Short(pat))
	case strings.Contains(pat, "\x00"):
		return fmt.Errorf("env allow pattern %s: a variable name cannot contain a NUL byte", quote.Short(pat))
	}
	return nil
}

// allowed reports whether an Allow pattern of p matches name. Malformed patterns match
// nothing, so an unvalidated policy lets no more through than a valid one would.
func (p Policy) allowed(name string) bool {
	for _, pat := range p.Allow {
		if checkPattern(pat) == nil && match(pat, name) {
			return true
		}
	}
	return false
}

// passes reports whether p passes the variable name on to commands.
func (p Policy) passes(name string) bool {
	switch p.Mode {
	case Inherit:
		return true
	case Scrub:
		return !LooksSecret(name) || p.allowed(name)
	}
	// Minimal, and a mode Validate would refuse: failing closed, a mistake withholds
	// more, never less.
	return (minimal(name) && !LooksSecret(name)) || p.allowed(name)
}

// Apply filters environ, as os.Environ gives it, through p: kept is what a command
// inherits, in the order of environ, and withheld the names p keeps from it, sorted and
// unique (nil when none). Entries with no name or a NUL byte are in neither (see the
// package doc); a name given twice counts once, with its last entry.
func (p Policy) Apply(environ []string) (kept []string, withheld []string) {
	// Walk backwards so that the last entry of a name decides, then restore the order.
	seen := make(map[string]bool, len(environ))
	for i := len(environ) - 1; i >= 0; i-- {
		kv := environ[i]
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || strings.Contains(kv, "\x00") || seen[name] {
			continue
		}
		seen[name] = true
		if p.passes(name) {
			kept = append(kept, kv)
		} else {
			withheld = append(withheld, name)
		}
	}
	slices.Reverse(kept)
	slices.Sort(withheld)
	return kept, withheld
}

// Withheld returns the names of withheld (as Apply gives them) that a command started
// with callEnv still does not get: a name the call sets itself is its own, not the
// server's. The order of withheld is kept; nil when none is left.
func Withheld(withheld []string, callEnv map[string]string) []string {
	var out []string
	for _, name := range withheld {
		if _, set := callEnv[name]; !set {
			out = append(out, name)
		}
	}
	return out
}

// match reports whether name matches pattern as a whole: '*' in pattern stands for any
// run of characters, none included, and every other byte stands for itself, case
// included.
func match(pattern, name string) bool {
	// Greedy matching with backtracking to the last star: each star only ever extends
	// the run it has taken, so the walk is linear in practice and never exponential.
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case p < len(pattern) && pattern[p] == name[n]:
			p++
			n++
		case star >= 0:
			mark++
			p, n = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
