package pty

import (
	"regexp"
	"strings"
)

// execLast returns command with `exec` in front of its last simple command, so that the
// shell running it (sh -c) replaces itself with that program: the session's pid is then
// the program's, signals sent to it reach the program, and its exit code or signal is
// the program's own, not the shell's reading of it (dash dies of SIGINT after a child
// that handled C-c). `python3 app.py` becomes `exec python3 app.py`, `cd web && npm run
// dev` becomes `cd web && exec npm run dev`.
//
// The command is returned unchanged where exec would change what it means or cannot be
// proved harmless by reading it: a pipeline, a subshell or group, a compound command
// (if, for, while, case...), a line break (a script; a comment ends its line, not the
// command), a backquote, an earlier command that may set a trap (exec would skip an EXIT
// trap): trap itself, a sourced file (. or source), eval, any of those behind `command`,
// or a command whose name is an expansion ($T), a last command that runs in the
// background or is a shell builtin (cd, exit, wait, echo...: the shell runs those itself,
// so nothing else has a pid), and one that already starts with exec. Those run under sh
// as written.
func execLast(command string) string {
	toks, ok := shellTokens(command)
	if !ok || len(toks) == 0 {
		return command
	}
	// Split at the list separators; a trailing ";" ends the last command, a trailing "&"
	// puts it in the background, where exec would make no difference but to $!.
	if last := toks[len(toks)-1]; last.op == ";" {
		toks = toks[:len(toks)-1]
	} else if last.op == "&" {
		return command
	}
	var segs [][]shellToken
	start := 0
	for i, t := range toks {
		switch t.op {
		case ";", "&", "&&", "||":
			segs = append(segs, toks[start:i])
			start = i + 1
		}
	}
	segs = append(segs, toks[start:])
	at := -1 // where the last command's name starts
	for i, seg := range segs {
		name, pos := commandName(seg)
		switch {
		case name == "" && i < len(segs)-1:
			continue // a line of assignments or redirections only
		case reservedWords[name]:
			return command
		case i < len(segs)-1 && maySetTrap(seg):
			return command
		case i == len(segs)-1:
			if name == "" || name == "exec" || shBuiltins[name] {
				return command
			}
			at = pos
		}
	}
	if at < 0 {
		return command
	}
	return command[:at] + "exec " + command[at:]
}

// shellToken is a word (op "") or an operator of a command line, at byte offset pos.
type shellToken struct {
	op   string
	word string
	pos  int
}

// assignment is a word that sets a variable for the command after it.
var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// commandName returns the name of the command a list member runs, unquoted, and where it
// starts: the first word that is neither an assignment nor a redirection's target.
func commandName(seg []shellToken) (string, int) {
	words := commandWords(seg)
	if len(words) == 0 {
		return "", -1
	}
	return unquote(words[0].word), words[0].pos
}

// commandWords returns the words of a list member from its command's name on, without
// the assignments before it and the redirections anywhere in it.
func commandWords(seg []shellToken) []shellToken {
	var words []shellToken
	for i := 0; i < len(seg); i++ {
		t := seg[i]
		switch {
		case t.op != "":
			i++ // a redirection: the next word is its target
		case len(words) == 0 && assignment.MatchString(t.word):
		default:
			words = append(words, t)
		}
	}
	return words
}

// unquote is a word with its quotes and backslashes taken out, as a command name reads.
func unquote(w string) string {
	return strings.NewReplacer(`'`, "", `"`, "", `\`, "").Replace(w)
}

// maySetTrap reports whether a command before the last may leave the shell with a trap
// that exec would skip: trap, a sourced file, eval, any of them run through `command`,
// or a command whose name is only known once expanded.
func maySetTrap(seg []shellToken) bool {
	words := commandWords(seg)
	for len(words) > 0 && unquote(words[0].word) == "command" {
		words = words[1:]
		for len(words) > 0 && strings.HasPrefix(words[0].word, "-") {
			words = words[1:] // command -p, -v, -V: -v and -V only look, which is harmless to refuse
		}
	}
	if len(words) == 0 {
		return false
	}
	name := words[0].word
	return strings.Contains(name, "$") || trapSetters[unquote(name)]
}

// trapSetters are the builtins that may set a trap: directly, or by running shell text.
var trapSetters = map[string]bool{"trap": true, ".": true, "source": true, "eval": true}

// shellTokens splits a command line into words and operators the way sh reads them, as
// far as execLast needs: ok is false for anything it does not follow (a pipe, a
// parenthesis, a line break, a backquote, a here-document, an unterminated quote or
// substitution), which execLast then leaves alone. A comment runs to the end of its
// line: the end of the command, or a line break, which execLast does not follow either.
func shellTokens(s string) (toks []shellToken, ok bool) {
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case strings.HasPrefix(s[i:], "||"):
			toks = append(toks, shellToken{op: "||", pos: i})
			i += 2
		case c == '\n' || c == '|' || c == '(' || c == ')' || c == '`':
			return nil, false
		case c == '#':
			if strings.IndexByte(s[i:], '\n') >= 0 {
				return nil, false // more lines follow the comment
			}
			return toks, true
		case c == ';':
			if strings.HasPrefix(s[i:], ";;") {
				return nil, false
			}
			toks = append(toks, shellToken{op: ";", pos: i})
			i++
		case c == '&':
			op := "&"
			if strings.HasPrefix(s[i:], "&&") {
				op = "&&"
			}
			toks = append(toks, shellToken{op: op, pos: i})
			i += len(op)
		case c == '<' || c == '>':
			n := redirLen(s[i:])
			if n == 0 {
				return nil, false
			}
			toks = append(toks, shellToken{op: s[i : i+n], pos: i})
			i += n
		default:
			end, ok := wordEnd(s, i)
			if !ok {
				return nil, false
			}
			w := s[i:end]
			if isDigits(w) && end < len(s) && (s[end] == '<' || s[end] == '>') {
				// An io number: "2>&1" redirects descriptor 2. The operator follows.
				n := redirLen(s[end:])
				if n == 0 {
					return nil, false
				}
				toks = append(toks, shellToken{op: s[i : end+n], pos: i})
				i = end + n
				continue
			}
			toks = append(toks, shellToken{word: w, pos: i})
			i = end
		}
	}
	return toks, true
}

// redirLen is the length of the redirection operator s starts with; 0 for a
// here-document, which needs lines execLast does not read.
func redirLen(s string) int {
	for _, op := range []string{">>", ">&", ">|", "<&", "<>", ">", "<"} {
		if strings.HasPrefix(s, op) {
			if strings.HasPrefix(s, "<<") {
				return 0
			}
			return len(op)
		}
	}
	return 0
}

func isDigits(w string) bool {
	return w != "" && strings.Trim(w, "0123456789") == ""
}

// wordEnd returns where the word starting at s[i] ends: at an unquoted blank or operator.
// Quotes, backslashes, $(...) and ${...} are part of the word.
func wordEnd(s string, i int) (int, bool) {
	for i < len(s) {
		switch c := s[i]; c {
		case ' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>':
			return i, true
		case '`':
			return 0, false
		case '\\':
			i += 2
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return 0, false
			}
			i += j + 2
		case '"':
			j, ok := doubleQuoteEnd(s, i+1)
			if !ok {
				return 0, false
			}
			i = j
		case '$':
			j, ok := dollarEnd(s, i)
			if !ok {
				return 0, false
			}
			i = j
		default:
			i++
		}
	}
	return len(s), true
}

// doubleQuoteEnd returns the offset after the '"' that closes a quote opened before s[i].
func doubleQuoteEnd(s string, i int) (int, bool) {
	for i < len(s) {
		switch s[i] {
		case '"':
			return i + 1, true
		case '\\':
			i += 2
		case '`':
			return 0, false
		case '$':
			j, ok := dollarEnd(s, i)
			if !ok {
				return 0, false
			}
			i = j
		default:
			i++
		}
	}
	return 0, false
}

// dollarEnd returns the offset after the expansion starting with the '$' at s[i]: for
// $(...) and ${...} the matching close, whatever the substitution holds (its own
// operators are its own); otherwise just past the '$'.
func dollarEnd(s string, i int) (int, bool) {
	if i+1 >= len(s) || (s[i+1] != '(' && s[i+1] != '{') {
		return i + 1, true
	}
	open, closer := s[i+1], byte(')')
	if open == '{' {
		closer = '}'
	}
	depth := 0
	for j := i + 1; j < len(s); {
		switch c := s[j]; {
		case c == open:
			depth++
			j++
		case c == closer:
			depth--
			j++
			if depth == 0 {
				return j, true
			}
		case c == '\\':
			j += 2
		case c == '\'':
			k := strings.IndexByte(s[j+1:], '\'')
			if k < 0 {
				return 0, false
			}
			j += k + 2
		case c == '"':
			k, ok := doubleQuoteEnd(s, j+1)
			if !ok {
				return 0, false
			}
			j = k
		case c == '`' || c == '\n' || c == '#':
			return 0, false
		default:
			j++
		}
	}
	return 0, false
}

// reservedWords start compound commands, which exec cannot precede.
var reservedWords = map[string]bool{
	"!": true, "{": true, "}": true, "case": true, "do": true, "done": true, "elif": true,
	"else": true, "esac": true, "fi": true, "for": true, "if": true, "in": true,
	"then": true, "until": true, "while": true,
	"[[": true, "]]": true, "function": true, "select": true, "coproc": true,
}

// shBuiltins are the commands dash runs itself: exec would look for a program of the
// name (there is none for cd or wait, and /bin/echo reads its arguments differently).
var shBuiltins = map[string]bool{
	".": true, ":": true, "[": true, "alias": true, "bg": true, "break": true, "cd": true,
	"chdir": true, "command": true, "continue": true, "echo": true, "eval": true,
	"exec": true, "exit": true, "export": true, "false": true, "fc": true, "fg": true,
	"getopts": true, "hash": true, "jobs": true, "kill": true, "local": true,
	"printf": true, "pwd": true, "read": true, "readonly": true, "return": true,
	"set": true, "shift": true, "source": true, "test": true, "times": true, "trap": true,
	"true": true, "type": true, "ulimit": true, "umask": true, "unalias": true,
	"unset": true, "wait": true,
}
