package sandbox

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Error kinds, for errors.Is: a call's sandbox arguments that are not valid values,
// that would loosen the server's policy, or that ask for what this system cannot enforce.
var (
	ErrInvalid     = errors.New("invalid sandbox argument")
	ErrLoosen      = errors.New("would loosen the sandbox")
	ErrUnavailable = errors.New("the sandbox cannot be enforced here")
)

// Mode is how much of the file system a confined command may write.
type Mode string

// The modes, loosest last. A call may ask for a mode at least as tight as the server's.
const (
	// ReadOnly: writes only to the temp directories and the terminal and null devices.
	ReadOnly Mode = "read-only"
	// WorkspaceWrite: ReadOnly, plus the workspace, the user's build caches and every
	// --writable path.
	WorkspaceWrite Mode = "workspace-write"
	// Off: no confinement at all.
	Off Mode = "off"
)

// Modes lists the modes, tightest first.
func Modes() []Mode { return []Mode{ReadOnly, WorkspaceWrite, Off} }

// rank orders the modes by how much they allow; unknown modes rank as Off so that a
// comparison with one never tightens by accident (Valid refuses them first).
func (m Mode) rank() int {
	switch m {
	case ReadOnly:
		return 0
	case WorkspaceWrite:
		return 1
	}
	return 2
}

// Valid reports whether m is one of the modes.
func (m Mode) Valid() bool { return slices.Contains(Modes(), m) }

// Network is whether a confined command may use IP sockets.
type Network string

// The network settings.
const (
	NetworkOff Network = "off" // no IPv4 or IPv6 sockets: connect, bind and listen all fail; Unix sockets stay
	NetworkOn  Network = "on"
)

// Networks lists the network settings.
func Networks() []Network { return []Network{NetworkOn, NetworkOff} }

// invalidArg is an argument that is not a valid value: an ErrInvalid whose message is
// only what to change.
type invalidArg string

func (e invalidArg) Error() string        { return string(e) }
func (e invalidArg) Is(target error) bool { return target == ErrInvalid }

// Valid reports whether n is one of the network settings.
func (n Network) Valid() bool { return n == NetworkOn || n == NetworkOff }

// Policy is what one command runs under: a file system mode and a network setting.
type Policy struct {
	Mode    Mode    `json:"mode"`
	Network Network `json:"network"`
}

// Unconfined is the policy of a command nothing confines.
var Unconfined = Policy{Mode: Off, Network: NetworkOn}

// String reads as the flags that ask for p: "workspace-write, network off".
func (p Policy) String() string { return fmt.Sprintf("%s, network %s", p.Mode, p.Network) }

// Confined reports whether anything of p has to be enforced.
func (p Policy) Confined() bool { return p.Mode != Off || p.Network == NetworkOff }

// Tighter returns the tighter of p and q in each part: what a runner applies to a task
// recorded under q when its own server allows p.
func (p Policy) Tighter(q Policy) Policy {
	out := p
	if q.Mode.rank() < p.Mode.rank() {
		out.Mode = q.Mode
	}
	if q.Network == NetworkOff {
		out.Network = NetworkOff
	}
	return out
}

// LoosenError is a call's request for more than the server allows: it is refused, and
// nothing is started.
type LoosenError struct {
	Asked   string // what the call asked for: "sandbox workspace-write", "network on"
	Allowed string // what the server allows: "read-only", "off"
	Flag    string // the server flag that would allow it: "--sandbox workspace-write"
}

// Is makes a LoosenError an ErrLoosen.
func (e *LoosenError) Is(target error) bool { return target == ErrLoosen }

func (e *LoosenError) Error() string {
	return fmt.Sprintf("%s would loosen what this server allows (%s): a call may only tighten it; the person running the server can start it with %s",
		e.Asked, e.Allowed, e.Flag)
}

// Narrow applies a call's own sandbox and network arguments ("" for not given) to the
// server's policy p: a tighter or equal value is taken, a looser one is a *LoosenError,
// and an unknown one an error naming the valid ones.
func (p Policy) Narrow(mode, network string) (Policy, error) {
	out := p
	if mode != "" {
		m := Mode(mode)
		if !m.Valid() {
			return p, invalidArg(fmt.Sprintf("sandbox %q: want one of %s", mode, joinModes()))
		}
		if m.rank() > p.Mode.rank() {
			return p, &LoosenError{Asked: "sandbox " + mode, Allowed: string(p.Mode), Flag: "--sandbox " + mode}
		}
		out.Mode = m
	}
	if network != "" {
		n := Network(network)
		if !n.Valid() {
			return p, invalidArg(fmt.Sprintf("network %q: want on or off", network))
		}
		if n == NetworkOn && p.Network == NetworkOff {
			return p, &LoosenError{Asked: "network on", Allowed: "network off", Flag: "--network on"}
		}
		out.Network = n
	}
	return out, nil
}

func joinModes() string {
	var s []string
	for _, m := range Modes() {
		s = append(s, string(m))
	}
	return strings.Join(s, ", ")
}

// RootKind says why a path is writable, for messages that name the flag behind it.
type RootKind string

// The kinds of writable root.
const (
	RootWorkspace RootKind = "workspace"  // the workspace itself (workspace-write)
	RootTemp      RootKind = "temp"       // $TMPDIR, /tmp, /var/tmp, /dev/shm (every confined mode)
	RootCache     RootKind = "cache"      // a build cache of the user's (workspace-write)
	RootWritable  RootKind = "--writable" // named by --writable (workspace-write)
	RootDevice    RootKind = "device"     // a terminal or null device (every confined mode)
)

// Root is one path a confined command may write under, and why.
type Root struct {
	Path string   `json:"path"`
	Kind RootKind `json:"kind"`
}

// Contains reports whether path is r.Path or lies below it. Both are absolute and clean.
func (r Root) Contains(path string) bool {
	return path == r.Path || strings.HasPrefix(path, strings.TrimSuffix(r.Path, "/")+"/")
}
