package sandbox

import (
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A command that the sandbox stops fails with whatever its program makes of the error:
// "touch: cannot touch '/etc/x': Read-only file system", "PermissionError: [Errno 13]
// Permission denied: '/etc/x'", "dial tcp 1.1.1.1:80: socket: permission denied". Nothing
// in that says a sandbox did it, or which flag would allow it, and a model that reads it
// tries sudo, chmod or another directory. Hint reads the output for such a denial and
// says so in one line.
//
// The reading is a heuristic over text, kept conservative where it can be:
//
//   - A write counts as denied when a line says read-only file system, permission denied
//     or operation not permitted (or EROFS, EACCES, EPERM) and names an absolute path
//     that no writable root holds; the first such path of the first such line is named.
//     A denial inside a writable root is not the sandbox's doing, or (the state
//     directory inside the workspace) not one that a flag should allow: no hint.
//   - Paths are found quoted ('x', "x", `x`, `x', ‘x’, “x”) or bare (after a space or at
//     the start of the line, up to the next space, without trailing punctuation). A bare
//     path with a space in it is cut at the space.
//   - Permission denied also comes from reading a file the user cannot read (cat
//     /root/x): lines that say they were reading (for reading, cannot access, opendir,
//     stat ...) are skipped; a bare "cat: /root/x: Permission denied" cannot be told from
//     a denied write and gets the hint. A read-only file system is always a write.
//   - Rust's "Caused by: ... (os error 30)" and other messages that put the denial on
//     a line of its own name the path a line or three before: for those (and only those,
//     so that a Python traceback's source files are never taken for the path) the three
//     lines before are searched too.
//   - A connection counts as denied, with the network off, for the errors of the socket
//     calls and of resolvers and clients that follow from them (socket: permission
//     denied, connect EACCES, Could not resolve host, Temporary failure in name
//     resolution, bash's /dev/tcp ...) and for a bare Permission denied at most four
//     lines after a mention of a socket or a connection (Python's traceback).

// hintScan is how much of the end of an output Hint reads: the denial that failed a
// command is near its end, and a megabyte of build log must not cost a megabyte of
// scanning per result.
const hintScan = 64 << 10

// maxHint bounds a hint line, in bytes (exclusive): one line of a result, not a paragraph.
const maxHint = 200

// netHint is the hint for a denied connection. Either the server's --network off or the
// call's network: "off" made it; Hint cannot tell which, so it names both.
const netHint = `sandbox: network access is off (network off); allow it with --network on (server) or leave out network: "off" (call)`

// Hint returns "" or one line (no trailing newline) for output (a command's output tail:
// at most its last 64 KiB are read) of a command that ran under p, where roots are the
// writable roots of p (all kinds): what the output shows the sandbox denied, a write
// outside roots or, with the network off, a connection, and the flag that would allow it.
// At most one path is named: the first denial found.
//
// cwd, when not "", is the directory the command worked in: a quoted relative path in a
// denial (touch: cannot touch 'x') is taken from there.
func Hint(output string, p Policy, roots []Root, cwd string) string {
	files := p.Mode == WorkspaceWrite || p.Mode == ReadOnly
	network := p.Network == NetworkOff
	if !files && !network {
		return ""
	}
	if len(output) > hintScan {
		output = output[len(output)-hintScan:]
		if i := strings.IndexByte(output, '\n'); i >= 0 {
			output = output[i+1:] // a cut line might name a cut path
		}
	}
	clean := make([]Root, 0, len(roots))
	for _, r := range roots {
		if path.IsAbs(r.Path) {
			clean = append(clean, Root{Path: path.Clean(r.Path), Kind: r.Kind})
		}
	}
	lines := strings.FieldsFunc(output, func(r rune) bool { return r == '\n' || r == '\r' })
	for i := range lines {
		lines[i] = stripEscapes(lines[i])
	}
	for i := range lines {
		switch d := readDenial(lines, i, clean, files, network, cwd); {
		case d.net:
			return netHint
		case d.path != "":
			return fileHint(p.Mode, d.path)
		}
	}
	return ""
}

// denial is what one line of output shows the sandbox denied: a connection, or a write
// to path.
type denial struct {
	net  bool
	path string
}

// readDenial reads lines[i] for a denial: of a write outside roots when files, of a
// connection when network.
func readDenial(lines []string, i int, roots []Root, files, network bool, cwd string) denial {
	line := lines[i]
	lower := asciiLower(line)
	if network && netDenied(lower) {
		return denial{net: true}
	}
	kind := denialKind(line, lower)
	if kind == notDenied || (kind == accessDenied && reading(lower)) {
		return denial{}
	}
	if unixConnect(lower) {
		// A Unix socket's path is no write; network off leaves Unix sockets alone.
		return denial{}
	}
	paths := absPaths(line, cwd)
	if len(paths) > 1 && strings.HasPrefix(line, paths[0]+":") {
		// The program's own name, as a shell run by its path names itself
		// (/usr/bin/bash: line 1: /x: Read-only file system): the path denied comes after.
		paths = paths[1:]
	}
	for _, p := range paths {
		if strings.HasPrefix(p, "/dev/tcp/") || strings.HasPrefix(p, "/dev/udp/") {
			// bash's network redirections: a connection, not a file.
			return denial{net: network}
		}
	}
	if files {
		if p := outside(paths, roots); p != "" {
			return denial{path: p}
		}
		if len(paths) == 0 && (kind == readOnlyFS || strings.Contains(lower, "(os error ")) {
			for j := i - 1; j >= 0 && j >= i-3; j-- {
				if p := outside(absPaths(lines[j], cwd), roots); p != "" {
					return denial{path: p}
				}
			}
		}
	}
	if network && len(paths) == 0 {
		for j := i; j >= 0 && j >= i-4; j-- {
			if l := asciiLower(lines[j]); strings.Contains(l, "socket") || strings.Contains(l, "connect") {
				return denial{net: true}
			}
		}
	}
	return denial{}
}

// The kinds of denial a line can show.
const (
	notDenied    = iota
	readOnlyFS   // EROFS: always a write
	accessDenied // EACCES or EPERM: a write, or a read the user may not make
)

func denialKind(line, lower string) int {
	switch {
	case strings.Contains(lower, "read-only file system"), containsWord(line, "EROFS"):
		return readOnlyFS
	case strings.Contains(lower, "permission denied"), strings.Contains(lower, "operation not permitted"),
		containsWord(line, "EACCES"), containsWord(line, "EPERM"):
		return accessDenied
	}
	return notDenied
}

// readingWords say a line's permission error came from reading, which the sandbox
// never denies (lower case).
var readingWords = []string{
	"for reading", "cannot access", "cannot open directory", "cannot read", "could not read",
	"unable to read", "failed to read", "error reading", "opendir", "scandir", "stat /", "stat '",
}

func reading(lower string) bool {
	for _, w := range readingWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// netWords are what programs print when they cannot open an IP socket or, for want of
// one, resolve a name (lower case). Read only with the network off, where they can
// only mean the sandbox (or, for a resolver, the sandbox as well).
var netWords = []string{
	"socket: permission denied", "socket: operation not permitted", // Go, bash, ssh, ping
	"connect: permission denied", "connect: operation not permitted", // Go under Landlock's TCP rules
	"bind: permission denied", "bind: operation not permitted",
	"connect eacces", "connect eperm", "listen eacces", "listen eperm", "bind eacces", "bind eperm", // Node
	"getaddrinfo eai_again", "getaddrinfo enotfound",
	"could not resolve host", "couldn't resolve host", "couldn't connect to server", // curl, git, ssh
	"unable to resolve host address",       // wget
	"temporary failure in name resolution", // glibc
	"name or service not known",
	"network is unreachable",
	"urlopen error [errno 13]", "urlopen error [errno 1]", // Python's urllib
}

func netDenied(lower string) bool {
	if strings.Contains(lower, "unix") || strings.Contains(lower, ".sock") {
		// A Unix socket (docker's "dial unix /var/run/docker.sock: connect: permission
		// denied"): network off leaves those alone.
		return false
	}
	for _, w := range netWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	if strings.Contains(lower, "failed to connect to ") && strings.Contains(lower, " port ") {
		return true // curl and git: "Failed to connect to 1.1.1.1 port 443 after 0 ms"
	}
	// wget: "Connecting to 1.1.1.1:443... failed: Permission denied."
	return strings.Contains(lower, "connecting to ") &&
		(strings.Contains(lower, "permission denied") || strings.Contains(lower, "operation not permitted"))
}

// unixConnect reports whether lower is a failed connection to a Unix socket ("dial unix
// /var/run/docker.sock: connect: permission denied", Node's "connect EACCES
// /run/x.sock"): the file permissions of the socket refused it, not the sandbox.
func unixConnect(lower string) bool {
	for _, w := range []string{"dial unix", "unix://", "connect eacces /", "connect eperm /", "connect: permission denied", "connect: operation not permitted"} {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// outside returns the first of paths that no root holds, or "".
func outside(paths []string, roots []Root) string {
next:
	for _, p := range paths {
		for _, r := range roots {
			if r.Contains(p) {
				continue next
			}
		}
		return p
	}
	return ""
}

// quotePairs are the quotes programs put around a path: coreutils ('x', or ‘x’ in a
// UTF-8 locale), GNU's older `x', Rust's `x`, Node's 'x', Go's "x".
var quotePairs = [...]struct{ open, close string }{
	{"'", "'"}, {`"`, `"`}, {"`", "`"}, {"‘", "’"}, {"“", "”"},
}

// absPaths returns the absolute paths line names, clean, in the order they appear:
// quoted ones whole, bare ones up to the next white space; a quoted relative path is taken
// from cwd when cwd is not "" (a bare word is too often no path at all).
func absPaths(line, cwd string) []string {
	var out []string
	add := func(p string, bare bool) {
		if bare {
			p = strings.TrimRight(p, ".,;:!?)]}>'\"`’”")
		} else if cwd != "" && p != "" && !strings.HasPrefix(p, "/") && !strings.ContainsAny(p, " \t") {
			p = path.Join(cwd, p)
		}
		if strings.HasPrefix(p, "/") {
			if p = path.Clean(p); p != "/" {
				out = append(out, p)
			}
		}
	}
	// unclosed marks the quotes found without a closing one: none follows later either,
	// so a line of ten thousand opening quotes is read once, not ten thousand times.
	var unclosed [len(quotePairs)]bool
	for i := 0; i < len(line); {
		if i == 0 || !isWordByte(line[i-1]) {
			if q, end, ok := quoted(line, i, &unclosed); ok {
				add(q, false) // a quoted word that is no path is skipped whole
				i = end
				continue
			}
		}
		if line[i] == '/' && (i == 0 || strings.IndexByte(" \t([=,", line[i-1]) >= 0) {
			end := i
			for end < len(line) && line[end] != ' ' && line[end] != '\t' {
				end++
			}
			add(line[i:end], true)
			i = end
			continue
		}
		i++
	}
	return out
}

// quoted reports whether a quote opens at line[i], and if so its content and the index
// after its closing quote. It sets unclosed[k] for a quote k that no closing one follows,
// and skips such a quote after.
func quoted(line string, i int, unclosed *[len(quotePairs)]bool) (string, int, bool) {
	for k, q := range quotePairs {
		if unclosed[k] || !strings.HasPrefix(line[i:], q.open) {
			continue
		}
		start := i + len(q.open)
		end := strings.Index(line[start:], q.close)
		if q.open == "`" {
			// `x' as well as `x`: the nearer closing quote ends it.
			if e := strings.IndexByte(line[start:], '\''); e >= 0 && (end < 0 || e < end) {
				end = e
			}
		}
		if end < 0 {
			unclosed[k] = true
			return "", 0, false
		}
		closeLen := len(q.close)
		if line[start+end] == '\'' {
			closeLen = 1
		}
		return line[start : start+end], start + end + closeLen, true
	}
	return "", 0, false
}

func isWordByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// containsWord reports whether w occurs in s as a word of its own: EPERM, not
// SUPERMAN's.
func containsWord(s, w string) bool {
	for off := 0; ; {
		i := strings.Index(s[off:], w)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(w)
		if (i == 0 || !isWordByte(s[i-1])) && (end == len(s) || !isWordByte(s[end])) {
			return true
		}
		off = i + 1
	}
}

// asciiLower lower-cases the ASCII letters of s, keeping every byte where it is.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// stripEscapes removes the terminal escape sequences (colours, titles) that output from
// a terminal carries, so that "\x1b[31mError: EACCES..." reads as text.
func stripEscapes(s string) string {
	if strings.IndexByte(s, 0x1b) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != 0x1b {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			break
		}
		switch s[i+1] {
		case '[': // CSI: parameters and intermediates, then a final byte in @..~
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
		case ']': // OSC: up to BEL or ST (ESC \)
			j := i + 2
			for j < len(s) && s[j] != 0x07 && !(s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\') {
				j++
			}
			if j < len(s) && s[j] == 0x1b {
				j++
			}
			i = j
		default: // a two-byte sequence
			i++
		}
	}
	return b.String()
}

// fileHint is the hint for a denied write of target under mode m.
func fileHint(m Mode, target string) string {
	target = printable(target)
	dir := path.Dir(target)
	for limit := 160; ; limit -= 10 {
		t, d := shorten(target, limit), shellQuote(shorten(dir, limit))
		var line string
		if m == ReadOnly {
			// Read-only has no workspace root: whatever was written needs workspace-write
			// first, which the call's argument or the server's flag took away.
			line = fmt.Sprintf(`sandbox: writing %s was denied (read-only); allow it with sandbox: "workspace-write" (call) or --sandbox workspace-write (server)`, t)
		} else {
			line = fmt.Sprintf("sandbox: writing %s was denied (workspace-write); allow it with --writable %s, or run the server with --sandbox off", t, d)
		}
		if len(line) < maxHint || limit <= 10 {
			return line
		}
	}
}

// printable replaces what cannot stand in one line of text: control characters (a
// newline above all), line separators and bytes that are not UTF-8.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == utf8.RuneError {
			return '?'
		}
		return r
	}, s)
}

// shorten cuts s to at most n bytes (n >= 5) by putting "..." in its middle, keeping more
// of the end, where a path's file name is, and whole characters.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	keep := n - 3
	head := keep / 3
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	tail := len(s) - (keep - keep/3)
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + "..." + s[tail:]
}

// shellQuote quotes s for a shell where it needs it, so that the flag can be pasted.
func shellQuote(s string) string {
	safe := s != ""
	for i := 0; i < len(s) && safe; i++ {
		safe = isWordByte(s[i]) || strings.IndexByte("./@%+=:,-", s[i]) >= 0
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
