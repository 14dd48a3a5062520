package tasks

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// expirableGraph runs a graph to its end, archives it and backdates its end past the
// retention, so that the next Expire pass expires it.
func expirableGraph(t *testing.T, te *testEnv) string {
	t.Helper()
	sub := te.submit(t, Spec{Tasks: []TaskSpec{tsk("a", "echo kept")}})
	te.waitDone(t, sub.Graph.ID)
	makeExpirable(t, te, sub.Graph.ID)
	return sub.Graph.ID
}

// makeExpirable waits until a finished graph is archived and backdates its end past the
// retention, so that the next Expire pass expires it.
func makeExpirable(t *testing.T, te *testEnv, graphID string) {
	t.Helper()
	// The engine archives a graph on its own once it finishes. Wait for that rather than
	// spool here: a background spool that came after this function returned would write
	// the archive again, under a test that has just spoilt or removed it.
	deadline := time.Now().Add(testWait)
	for {
		if _, err := te.db.GetArtifact(t.Context(), graphID); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("graph %s not archived within %v", graphID, testWait)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
	if _, err := rawExec(t, te.db.Path(), `UPDATE graphs SET finished_at = finished_at - 7200000 WHERE id = ?`, graphID); err != nil {
		t.Fatal(err)
	}
}

func newExpiringEngine(t *testing.T) *testEnv {
	t.Helper()
	return newTestEngine(t, func(c *Config) {
		c.Retention = time.Hour // the background pass runs at start, then after the test
		c.ArtifactsDir = c.Workspace.ArtifactsDir
	})
}

// Expire must record a graph expired before it removes its live logs: a reader that finds
// the logs gone must find the graph expired (and read the archive). To see the state
// between the two steps without sleeps or a hook in the engine, the test makes the
// removal fail and looks at what was done before it. A permission bit cannot make it
// fail here, since the tests run as root, which ignores them; a logs directory that is
// a regular file can: the kernel answers ENOTDIR, root or not. On the old order
// (remove, then record) the failed removal left the graph not expired: this test failed.
// A later pass must then remove the logs left behind, though the graph is no longer
// expirable; that is also what a runner finds after a crash between the two steps.
func TestEngine_Expire(t *testing.T) {
	t.Run("RecordsBeforeRemoving", func(t *testing.T) {
		te := newExpiringEngine(t)
		id := expirableGraph(t, te)
		logs := te.ws.LogsDir()
		aside := logs + ".aside"
		if err := os.Rename(logs, aside); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(logs, []byte("not a directory"), 0o600); err != nil {
			t.Fatal(err)
		}
		err := te.e.Expire(t.Context())
		if err := os.Remove(logs); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(aside, logs); err != nil {
			t.Fatal(err)
		}
		if err == nil {
			t.Fatal("Expire with an unremovable logs directory = nil, want an error")
		}
		if g, err := te.db.GetGraph(t.Context(), id); err != nil || g.ExpiredAt == nil {
			t.Errorf("after a failed removal, GetGraph(%s).ExpiredAt = %v (%v), want the graph recorded expired", id, g.ExpiredAt, err)
		}
		if _, err := te.db.GetArtifact(t.Context(), id); err != nil {
			t.Errorf("after a failed removal, GetArtifact(%s) = %v, want the artifact", id, err)
		}

		if err := te.e.Expire(t.Context()); err != nil {
			t.Fatalf("Expire = %v, want nil", err)
		}
		if _, err := os.Stat(filepath.Join(logs, id)); !os.IsNotExist(err) {
			t.Errorf("live logs of expired graph %s after the next pass: %v, want them removed", id, err)
		}
	})

	t.Run("KeepsLiveLogs", func(t *testing.T) {
		te := newExpiringEngine(t)
		id := expirableGraph(t, te)
		recent := te.submit(t, Spec{Tasks: []TaskSpec{tsk("a", "true")}})
		te.waitDone(t, recent.Graph.ID)
		// A Submit makes its log directory before it stores the graph.
		unstored := filepath.Join(te.ws.LogsDir(), "g-unstored")
		if err := os.Mkdir(unstored, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := te.e.Expire(t.Context()); err != nil {
			t.Fatalf("Expire = %v, want nil", err)
		}
		if _, err := os.Stat(filepath.Join(te.ws.LogsDir(), id)); !os.IsNotExist(err) {
			t.Errorf("live logs of expired graph %s: %v, want them removed", id, err)
		}
		for _, dir := range []string{filepath.Join(te.ws.LogsDir(), recent.Graph.ID), unstored} {
			if _, err := os.Stat(dir); err != nil {
				t.Errorf("Expire removed %s, which is not expired: %v", dir, err)
			}
		}
	})
}
