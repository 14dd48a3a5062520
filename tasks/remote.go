package tasks

import (
	"context"
	"errors"
	"fmt"
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
// graphs, until ctx ends.
func (e *Engine) watchLoop(ctx context.Context) {
	t := time.NewTicker(cancelPoll)
	defer t.Stop()
	for {
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
