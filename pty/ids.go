package pty

import (
	"strconv"
	"strings"
)

// Session ids. A Manager names its sessions with Config.SessionID, given the sequence
// number of each (1, 2, ... in creation order, never reused within the Manager); nil is
// "s1", "s2", .... A server on a workspace that other servers share gives ServerSessionIDs
// of its own server number (a counter the workspace's store hands out, one number per
// server start), so that every id names one session on the whole workspace and a person
// can say `mcp-harness attach s4-2`. The function is the seam for a transport where ids
// must not be guessable (a remote client's): it may return anything unique within the
// Manager that is a valid file name part (ids name history files) and holds no '.'
// (the processes' mark is <id>.<nonce>).

// defaultSessionID is the id of the seq'th session when Config.SessionID is nil.
func defaultSessionID(seq int) string { return "s" + strconv.Itoa(seq) }

// ServerSessionIDs returns the Config.SessionID of server number server on a shared
// workspace: "s<server>-<seq>", such as s4-2.
func ServerSessionIDs(server int) func(seq int) string {
	prefix := "s" + strconv.Itoa(server) + "-"
	return func(seq int) string { return prefix + strconv.Itoa(seq) }
}

// ServerOf returns the server number in an id made by ServerSessionIDs, ok false for any
// other id: a person's command that finds no such session can then say which server
// it was on.
func ServerOf(id string) (server int, ok bool) {
	rest, found := strings.CutPrefix(id, "s")
	if !found {
		return 0, false
	}
	n, k, found := strings.Cut(rest, "-")
	if !found {
		return 0, false
	}
	server, err := strconv.Atoi(n)
	if err != nil || server <= 0 || strconv.Itoa(server) != n {
		return 0, false
	}
	if seq, err := strconv.Atoi(k); err != nil || seq <= 0 || strconv.Itoa(seq) != k {
		return 0, false
	}
	return server, true
}
