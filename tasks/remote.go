package tasks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
)

// cancelPoll is how often a runner looks for cancel requests that other processes left in
// the store for its graphs: a fraction of a second, so an operator's cancel feels
// immediate, on an indexed query that finds nothing most of the time.
const cancelPoll = 200 * time.Millisecond

// ErrOwnerGone reports a graph whose runner is gone: its tasks are put right by the next
// reconciliation, not by a cancel request.
var ErrOwnerGone = errors.New("the server process that ran this graph is gone")

// RequestCancel cancels tasks of a graph from any process: it records cancel requests in
// the store for the runner that owns the graph, waits (within ctx) until that runner has
// acted on the pending ones, and reports each task concerned as Cancel does. Running
// tasks are reported cancelling: their runner signals them and records them when they
// exit.
func RequestCancel(ctx context.Context, db *store.DB, graphID string, taskIDs []string, grace time.Duration) ([]CancelResult, error) {
	before, err := LoadSnapshot(ctx, db, graphID)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, id := range taskIDs {
		if !slices.ContainsFunc(before.Tasks, func(t store.TaskRow) bool { return t.ID == id }) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("graph %s has no task %s: %w", graphID, strings.Join(missing, ", "), ErrNotFound)
	}
	if before.Graph.FinishedAt == nil {
		owner, err := db.GetRunner(ctx, before.Graph.RunnerID)
		if err != nil {
			return nil, err
		}
		if !owner.Live(time.Now()) {
			return nil, fmt.Errorf("graph %s: %w (runner %s); its unfinished tasks are recorded when a server next starts on this workspace", graphID, ErrOwnerGone, owner.ID)
		}
	}
	marked, err := db.RequestCancel(ctx, graphID, taskIDs, grace)
	if err != nil {
		return nil, err
	}
	after := before
	if len(marked) > 0 {
		// The owner acts within cancelPoll; wait until no marked task is still pending.
		wait, cancel := context.WithTimeout(ctx, 10*cancelPoll)
		defer cancel()
		for wait.Err() == nil {
			if after, err = LoadSnapshot(ctx, db, graphID); err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(after.Tasks, func(t store.TaskRow) bool {
				return slices.Contains(marked, t.ID) && State(t.Status) == Pending
			}) {
				break
			}
			select {
			case <-wait.Done():
			case <-time.After(cancelPoll / 4):
			}
		}
	}
	return cancelOutcomes(before, after, taskIDs, marked), nil
}

// cancelOutcomes compares a graph before and after a cancel request.
func cancelOutcomes(before, after Snapshot, requested, marked []string) []CancelResult {
	prev := map[string]State{}
	for _, t := range before.Tasks {
		prev[t.ID] = State(t.Status)
	}
	var out []CancelResult
	for _, t := range after.Tasks {
		was, now := prev[t.ID], State(t.Status)
		var outcome string
		switch {
		case slices.Contains(marked, t.ID) && now == Cancelled:
			outcome = OutcomeCancelled
		case slices.Contains(marked, t.ID) && now == Skipped:
			outcome = OutcomeSkipped // a dependency was cancelled first
		case slices.Contains(marked, t.ID) && !now.Terminal():
			outcome = OutcomeCancelling
		case slices.Contains(marked, t.ID):
			outcome = OutcomeAlreadyTerminal // it finished on its own meanwhile
		case was == Pending && now == Skipped:
			outcome = OutcomeSkipped
		case slices.Contains(requested, t.ID):
			outcome = OutcomeAlreadyTerminal
		default:
			continue
		}
		out = append(out, CancelResult{ID: t.ID, PreviousStatus: was, Status: now, Outcome: outcome})
	}
	return out
}

// watchLoop carries out the cancel requests other processes leave for this runner's
// graphs, reconciles runners that are gone (at once, then every reconcileEvery) and
// expires graphs past the retention, until ctx ends.
func (e *Engine) watchLoop(ctx context.Context) {
	t := time.NewTicker(cancelPoll)
	defer t.Stop()
	var lastReconcile, lastExpire time.Time
	for {
		if time.Since(lastReconcile) >= reconcileEvery {
			lastReconcile = time.Now()
			if err := e.Reconcile(ctx); err != nil && ctx.Err() == nil {
				e.log.Warn("reconciling gone runners", "err", err)
			}
		}
		if e.cfg.ArtifactsDir != "" && time.Since(lastExpire) >= e.expireEvery() {
			lastExpire = time.Now()
			if err := e.Expire(ctx); err != nil && ctx.Err() == nil {
				e.log.Warn("expiring graphs", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		reqs, err := e.cfg.DB.CancelRequests(ctx, e.cfg.RunnerID)
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("reading cancel requests", "err", err)
			}
			continue
		}
		for _, r := range reqs {
			if _, err := e.cancelLocal(ctx, r.GraphID, []string{r.TaskID}, r.Grace, "cancelled by request from another process"); err != nil && ctx.Err() == nil {
				e.log.Warn("carrying out a cancel request", "graph", r.GraphID, "task", r.TaskID, "err", err)
			}
		}
	}
}

// expireEvery is how often retention is checked: every minute, or every half retention
// when that is shorter.
func (e *Engine) expireEvery() time.Duration {
	return min(time.Minute, e.cfg.Retention/2)
}

// spoolLoop archives graphs as they finish, and at start whatever finished unarchived
// (a spool cut short by a crash is redone here).
func (e *Engine) spoolLoop(ctx context.Context) {
	removeStaleSpools(e.cfg.ArtifactsDir, func(runnerID string) bool {
		if runnerID == e.cfg.RunnerID {
			return true
		}
		r, err := e.cfg.DB.GetRunner(ctx, runnerID)
		return err == nil && r.Live(time.Now())
	})
	if err := e.spoolUnspooled(ctx, false); err != nil && ctx.Err() == nil {
		e.log.Warn("archiving finished graphs", "err", err)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-e.spoolq:
			if _, err := e.spool(ctx, id); err != nil && ctx.Err() == nil {
				e.log.Warn("archiving a graph", "graph", id, "err", err)
			}
		}
	}
}

// spoolUnspooled archives finished graphs that have no artifact: this runner's only, or
// every runner's.
func (e *Engine) spoolUnspooled(ctx context.Context, ownOnly bool) error {
	if e.cfg.ArtifactsDir == "" {
		return nil
	}
	ids, err := e.cfg.DB.UnspooledGraphs(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if ownOnly {
			if g, err := e.cfg.DB.GetGraph(ctx, id); err != nil || g.RunnerID != e.cfg.RunnerID {
				continue
			}
		}
		if _, err := e.spool(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

func (e *Engine) spool(ctx context.Context, graphID string) (store.Artifact, error) {
	return Spool(ctx, e.cfg.DB, e.cfg.LogsDir, e.cfg.ArtifactsDir, e.cfg.RunnerID, graphID)
}

// Expire removes the live logs of graphs that finished longer ago than the retention,
// after making sure their artifact exists; their logs are then read from it.
func (e *Engine) Expire(ctx context.Context) error {
	ids, err := e.cfg.DB.ExpirableGraphs(ctx, time.Now().Add(-e.cfg.Retention))
	if err != nil {
		return err
	}
	for _, id := range ids {
		a, err := e.cfg.DB.GetArtifact(ctx, id)
		if err == nil {
			if _, statErr := os.Stat(a.Path); statErr != nil {
				err = statErr
			}
		}
		if err != nil {
			if _, err := e.spool(ctx, id); err != nil {
				return err
			}
		}
		if err := os.RemoveAll(filepath.Join(e.cfg.LogsDir, id)); err != nil {
			return err
		}
		if err := e.cfg.DB.MarkExpired(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// Artifact returns a graph's recorded artifact, if it has one.
func (e *Engine) Artifact(ctx context.Context, graphID string) (store.Artifact, bool) {
	a, err := e.cfg.DB.GetArtifact(ctx, graphID)
	return a, err == nil
}
