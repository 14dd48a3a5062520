package sandbox

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// On macOS the kernel's Seatbelt enforces a policy written in SBPL, the sandbox profile
// language (a small Scheme) that /usr/bin/sandbox-exec takes with -p. The profile is pure
// text, built here for every platform so that its tests run on Linux; only the launcher
// that runs a command under it is macOS's own (launch_darwin.go).
//
// The rules are those of the Linux sandbox: everything is allowed (reads above all) but
// what is denied after; writes are denied but under the writable roots; the protected
// paths are denied again even inside a root; with the network off every network
// operation is denied but on Unix-domain sockets. In SBPL the last rule that matches an
// operation decides, so each rule comes after the one it makes an exception to.

// privateAliases are the top-level directories that macOS keeps under /private and
// reaches through a symbolic link (/tmp -> private/tmp). Seatbelt matches the path the
// kernel resolved, so a rule on /tmp alone would never match a write to /tmp/x: each
// path under one of them is given in both forms. On Linux the second form names nothing.
var privateAliases = []string{"/tmp", "/var", "/etc"}

// SeatbeltProfile returns the Seatbelt (sandbox-exec) profile for p: reads allowed
// everywhere; for a mode other than Off, writes only under roots (as subpaths; device
// roots as the literal paths they are), and never under protected (the server's state
// and artifacts directories), even inside a root; for network off, no network operation
// (outbound, inbound, bind) but on Unix-domain sockets. Paths must be absolute; they are
// cleaned, and those under /tmp, /var and /etc are also given under /private, where
// macOS keeps them. A path holding a newline or a NUL byte, which a profile cannot
// carry, is an error, as is a policy of unknown words.
func SeatbeltProfile(p Policy, roots []Root, protected []string) (string, error) {
	if !p.Mode.Valid() {
		return "", fmt.Errorf("seatbelt profile: sandbox %q: want one of %s", p.Mode, joinModes())
	}
	if !p.Network.Valid() {
		return "", fmt.Errorf("seatbelt profile: network %q: want on or off", p.Network)
	}
	var b strings.Builder
	b.WriteString("(version 1)\n")
	b.WriteString("; reads, processes and IPC as without a sandbox; what follows takes away\n")
	b.WriteString("(allow default)\n")
	if p.Mode != Off {
		var allow, deny []string
		for _, r := range roots {
			kind := "subpath"
			if r.Kind == RootDevice {
				kind = "literal"
			}
			f, err := sbplFilters(kind, r.Path)
			if err != nil {
				return "", fmt.Errorf("seatbelt profile: writable root: %w", err)
			}
			allow = appendNew(allow, f...)
		}
		for _, pp := range protected {
			f, err := sbplFilters("subpath", pp)
			if err != nil {
				return "", fmt.Errorf("seatbelt profile: protected path: %w", err)
			}
			deny = appendNew(deny, f...)
		}
		b.WriteString("; writes only under the writable roots (" + string(p.Mode) + ")\n")
		b.WriteString("(deny file-write*)\n")
		if len(allow) > 0 {
			// A command's own output reopened (> /dev/stdout is /dev/fd/1), and the
			// terminals macOS names /dev/ttysNNN: no root of Linux's names them.
			allow = appendNew(allow, `(subpath "/dev/fd")`, `(regex #"^/dev/ttys[0-9]+$")`)
		}
		// An allow with no filter would allow every write: no roots, no rule.
		writeRule(&b, "allow", "file-write*", allow)
		if len(deny) > 0 {
			b.WriteString("; the server's state, not even inside a root (the last rule that matches wins)\n")
			writeRule(&b, "deny", "file-write*", deny)
		}
	}
	if p.Network == NetworkOff {
		b.WriteString("; network off: no IP sockets; Unix-domain sockets stay\n")
		b.WriteString("(deny network*)\n")
		b.WriteString("(allow network* (remote unix-socket))\n")
		b.WriteString("(allow network* (local unix-socket))\n")
	}
	return b.String(), nil
}

// writeRule writes (action op filter...) with a filter a line, or nothing when there are
// no filters.
func writeRule(b *strings.Builder, action, op string, filters []string) {
	if len(filters) == 0 {
		return
	}
	b.WriteString("(" + action + " " + op)
	for _, f := range filters {
		b.WriteString("\n  " + f)
	}
	b.WriteString(")\n")
}

// sbplFilters returns the filters (kind "path") for p, and for a path under /tmp, /var or
// /etc also for its /private form.
func sbplFilters(kind, p string) ([]string, error) {
	if !path.IsAbs(p) {
		return nil, fmt.Errorf("%q: want an absolute path", p)
	}
	p = path.Clean(p)
	lit, err := sbplString(p)
	if err != nil {
		return nil, err
	}
	out := []string{"(" + kind + " " + lit + ")"}
	for _, a := range privateAliases {
		if p == a || strings.HasPrefix(p, a+"/") {
			alias, _ := sbplString("/private" + p) // checked above
			out = append(out, "("+kind+" "+alias+")")
		}
	}
	return out, nil
}

// sbplString quotes s as an SBPL string literal: in double quotes, with each backslash
// and double quote escaped by a backslash. A newline or a NUL byte is refused: a path
// that holds one is not worth the risk of a parser that reads it otherwise.
func sbplString(s string) (string, error) {
	if strings.ContainsAny(s, "\n\x00") {
		return "", fmt.Errorf("%q: a path with a newline or a NUL byte cannot be written in a profile", s)
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`, nil
}

// appendNew appends to list each of items it does not hold yet.
func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		if !slices.Contains(list, it) {
			list = append(list, it)
		}
	}
	return list
}
