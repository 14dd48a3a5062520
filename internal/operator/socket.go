package operator

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"github.com/mcp-harness/mcp-harness/internal/procid"
)

// Sockets. Each server listens on op-<number>-<pid>-<start>.sock in the state directory:
// its server number, and its process's identity (pid and start time, procid), so that
// anyone can tell from the name alone whether the server that made it is still alive,
// without connecting and without the store. A socket whose process is gone is stale: the
// operator commands pass it by (an attach to one of its sessions says the server is
// gone), and the next Reconcile removes it; every server reconciles at start and then
// every reconcileEvery.
//
// A Unix socket's path is limited to 108 bytes (104 on macOS), and state directories can
// be deeper than that. On Linux the socket is bound and connected through
// /proc/self/fd/<fd>/<name>, fd being the state directory opened O_PATH, which is short
// whatever the directory's own path (socket_linux.go); elsewhere the path must fit.

// socketPattern matches a socket's name: number, pid, start time.
var socketPattern = regexp.MustCompile(`^op-([1-9][0-9]*)-([1-9][0-9]*)-([0-9]+)\.sock$`)

// socketName is the socket of server number in the process id names. Without the
// process's start time there is none: a name without it would read as a dead server's,
// and every other server's Reconcile would remove the socket of a live one.
func socketName(number int, id procid.Identity) (string, error) {
	if id.ProcStart == 0 {
		return "", fmt.Errorf("the start time of this process (pid %d) cannot be read, and a socket is named by it: without it the socket would pass for a dead server's", id.Pid)
	}
	return fmt.Sprintf("op-%d-%d-%d.sock", number, id.Pid, id.ProcStart), nil
}

// Endpoint is a server's socket found in a state directory.
type Endpoint struct {
	Number int // the server's number on the workspace
	Pid    int
	Name   string // the socket's file name in the state directory
	start  uint64
}

// Live reports whether the process that made the socket still runs (the same process:
// same pid and start time). A socket of a process that is gone is stale.
func (e Endpoint) Live() bool {
	return procid.Identity{Pid: e.Pid, ProcStart: e.start, BootID: procid.BootID()}.Alive()
}

// Endpoints lists the server sockets in stateDir, live or not, by server number.
func Endpoints(stateDir string) ([]Endpoint, error) {
	entries, err := os.ReadDir(stateDir)
	if err != nil {
		return nil, fmt.Errorf("list server sockets: %w", err)
	}
	var out []Endpoint
	for _, e := range entries {
		m := socketPattern.FindStringSubmatch(e.Name())
		if m == nil || e.Type()&fs.ModeSocket == 0 {
			continue
		}
		n, err1 := strconv.Atoi(m[1])
		pid, err2 := strconv.Atoi(m[2])
		start, err3 := strconv.ParseUint(m[3], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			continue // numbers too large for any real server
		}
		out = append(out, Endpoint{Number: n, Pid: pid, Name: e.Name(), start: start})
	}
	slices.SortFunc(out, func(a, b Endpoint) int { return a.Number - b.Number })
	return out, nil
}

// Reconcile removes the sockets in stateDir whose server process is gone, and returns
// their names. A socket of a live process is never touched, whoever calls.
func Reconcile(stateDir string) ([]string, error) {
	eps, err := Endpoints(stateDir)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range eps {
		if e.Live() {
			continue
		}
		if err := os.Remove(filepath.Join(stateDir, e.Name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Name)
	}
	return removed, errors.Join(errs...)
}
