package pty

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

// A principal reaches only the sessions it opened: to another, each is not there
// (ErrNoSession, naming none of the owner's sessions), is not listed, cannot be read,
// driven or closed; the Manager's own methods (a person's) see them all.
func TestOwned_OthersSessionsAreNotThere(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	alice, bob := m.As("alice"), m.As("bob")
	ctx := t.Context()
	a1, err := alice.Open(ctx, OpenOptions{Command: "exec sleep 1000"}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a2, err := alice.Open(ctx, OpenOptions{Command: "exec sleep 1000"}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b1, err := bob.Open(ctx, OpenOptions{Command: "exec sleep 1000"}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}

	_, ioErr := bob.IO(ctx, a1.SessionID, Input{Data: []byte("x")}, ReadOptions{})
	_, getErr := bob.Get(a1.SessionID)
	_, closeErr := bob.Close(ctx, a1.SessionID, syscall.SIGKILL, 0)
	for op, err := range map[string]error{"IO": ioErr, "Get": getErr, "Close": closeErr} {
		if !errors.Is(err, ErrNoSession) {
			t.Errorf("bob's %s on alice's session = %v, want ErrNoSession", op, err)
			continue
		}
		if strings.Contains(err.Error(), a2.SessionID) || !strings.Contains(err.Error(), b1.SessionID) {
			t.Errorf("bob's %s error %q names alice's sessions, or not bob's own", op, err)
		}
	}
	if got := ids(bob.List()); !slices.Equal(got, []string{b1.SessionID}) {
		t.Errorf("bob lists %v, want only his %s", got, b1.SessionID)
	}
	if got := ids(alice.List()); !slices.Equal(got, []string{a1.SessionID, a2.SessionID}) {
		t.Errorf("alice lists %v", got)
	}
	if got := ids(m.List()); len(got) != 3 {
		t.Errorf("the Manager lists %v, want all 3", got)
	}
	if _, err := alice.IO(ctx, a1.SessionID, Input{}, ReadOptions{}); err != nil {
		t.Errorf("alice's IO on her own session after bob's tries = %v", err)
	}
	if _, err := alice.Close(ctx, a1.SessionID, syscall.SIGKILL, 0); err != nil {
		t.Errorf("alice's Close of her own session = %v", err)
	}
}

// When the Manager is full, a principal's LimitError names its own sessions only.
func TestOwned_LimitNamesOwnSessions(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{MaxSessions: 2})
	ctx := t.Context()
	a, err := m.As("alice").Open(ctx, OpenOptions{Command: "exec sleep 1000"}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.As("bob").Open(ctx, OpenOptions{Command: "exec sleep 1000"}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.As("bob").Open(ctx, OpenOptions{Command: "exec sleep 1000"}, ReadOptions{})
	var le *LimitError
	if !errors.As(err, &le) || !slices.Equal(le.Closable, []string{b.SessionID}) {
		t.Errorf("bob's Open over the limit = %v, want a LimitError naming only %s (not %s)", err, b.SessionID, a.SessionID)
	}
}

func ids(infos []Info) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = in.ID
	}
	return out
}

// RandomSessionIDs names sessions with the server number and 128 random bits, a valid
// file name part without '.', never twice.
func TestRandomSessionIDs(t *testing.T) {
	ids := RandomSessionIDs(4)
	re := regexp.MustCompile(`^s4-[a-z2-7]{26}$`)
	seen := map[string]bool{}
	for i := range 1000 {
		id := ids(i + 1)
		if !re.MatchString(id) || seen[id] {
			t.Fatalf("id %d = %q (seen before: %v)", i, id, seen[id])
		}
		seen[id] = true
	}
}
