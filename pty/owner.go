package pty

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Owners. A server that many clients reach (over HTTP) opens each session for a
// principal, who alone may read, drive, list or close it: Manager.As gives the Manager as
// one principal sees it. To another principal a session it does not own is not there: the
// error is the one for an id that does not exist (ErrNoSession), and names only its own
// sessions, so it learns nothing of the others, not even their ids. The Manager's own
// methods see every session (a person's commands, which go through the operator socket,
// see them all), and Open opens sessions of the owner "", which is what a stdio server,
// with its one client, gives every session.

// scope is whose sessions a call sees: one owner's, or everyone's.
type scope struct {
	owner string
	all   bool
}

// anyOwner sees every session.
var anyOwner = scope{all: true}

func (sc scope) sees(s *session) bool { return sc.all || s.owner == sc.owner }

// Owned is the Manager as one principal sees it: only the sessions it opened. Its
// methods are the Manager's of the same names.
type Owned struct {
	m     *Manager
	owner string
}

// As returns the Manager as owner sees it. Under stdio the owner is "".
func (m *Manager) As(owner string) Owned { return Owned{m: m, owner: owner} }

func (o Owned) scope() scope { return scope{owner: o.owner} }

// Open opens a session that o's owner owns (Manager.Open). When the Manager is full, the
// oldest exited session is evicted, the owner's own first; a *LimitError names only the
// owner's sessions.
func (o Owned) Open(ctx context.Context, opts OpenOptions, r ReadOptions) (ReadResult, error) {
	return o.m.open(ctx, o.owner, opts, r)
}

// IO is Manager.IO on a session the owner owns.
func (o Owned) IO(ctx context.Context, id string, in Input, r ReadOptions) (ReadResult, error) {
	return o.m.io(ctx, o.scope(), id, in, r)
}

// Close is Manager.Close of a session the owner owns.
func (o Owned) Close(ctx context.Context, id string, sig syscall.Signal, grace time.Duration) (CloseResult, error) {
	return o.m.close(ctx, o.scope(), id, sig, grace)
}

// Get is Manager.Get of a session the owner owns.
func (o Owned) Get(id string) (Info, error) { return o.m.info(o.scope(), id) }

// List is Manager.List of the owner's sessions.
func (o Owned) List() []Info { return o.m.list(o.scope()) }

// RandomSessionIDs returns the Config.SessionID of server number server for a server whose
// clients must not guess each other's session ids (a server reached over HTTP):
// "s<server>-" and 128 random bits in lower-case base32, such as
// s4-gq3tmnbvgaytcmzrgqzdknrrgm. The server number keeps a person's `attach` able to say
// which server an id was on; 128 random bits make two equal ids as likely as guessing one.
func RandomSessionIDs(server int) func(seq int) string {
	prefix := "s" + strconv.Itoa(server) + "-"
	return func(int) string {
		var b [16]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24 and later)
		return prefix + strings.ToLower(randomIDEncoding.EncodeToString(b[:]))
	}
}

var randomIDEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)
