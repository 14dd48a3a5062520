package store

import (
	"errors"
	"testing"
	"time"
)

// A claim moves an unfinished graph from the runner that stored it to the claiming one,
// once: a second claim, a claim from the wrong runner and a claim by a stopped runner are
// refused.
func TestDB_ClaimGraph(t *testing.T) {
	db := openTestDB(t)
	server, _ := db.RegisterRunner(t.Context(), "test", time.Minute)
	runner, _ := db.RegisterRunner(t.Context(), "test", time.Minute)
	other, _ := db.RegisterRunner(t.Context(), "test", time.Minute)
	g, err := insertTestGraph(t, db, server.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("OK", func(t *testing.T) {
		got, err := db.ClaimGraph(t.Context(), g.ID, server.ID, runner.ID)
		if err != nil || got.RunnerID != runner.ID {
			t.Fatalf("ClaimGraph = %v, %v, want owned by %s", got.RunnerID, err, runner.ID)
		}
	})
	t.Run("ErrNotClaimable", func(t *testing.T) {
		if _, err := db.ClaimGraph(t.Context(), g.ID, server.ID, other.ID); !errors.Is(err, ErrNotClaimable) {
			t.Errorf("second ClaimGraph = %v, want ErrNotClaimable", err)
		}
		if _, err := db.ClaimGraph(t.Context(), "g-none", server.ID, other.ID); !errors.Is(err, ErrNotClaimable) {
			t.Errorf("ClaimGraph of an unknown graph = %v, want ErrNotClaimable", err)
		}
	})
	t.Run("ErrLeaseLost", func(t *testing.T) {
		g2, err := insertTestGraph(t, db, server.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.StopRunner(t.Context(), other.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ClaimGraph(t.Context(), g2.ID, server.ID, other.ID); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("ClaimGraph by a stopped runner = %v, want ErrLeaseLost", err)
		}
		if got, _ := db.GetGraph(t.Context(), g2.ID); got.RunnerID != server.ID {
			t.Errorf("after a refused claim the graph is owned by %s, want %s", got.RunnerID, server.ID)
		}
	})
}
