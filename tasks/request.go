package tasks

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/quote"
	"github.com/mcp-harness/mcp-harness/tasks/dag"
)

// This file is cancelling from any process: a cancel is recorded in the store for the
// runner that owns the graph, which carries it out within cancelPoll (see watchLoop). The
// operator CLI cancels this way, and so does a server for a graph another server runs.

// cancelPoll is how often a runner looks for cancel requests that other processes left in
// the store for its graphs: a fraction of a second, so an operator's cancel feels
// immediate, on an indexed query that finds nothing most of the time.
const cancelPoll = 200 * time.Millisecond

// RequestCancel cancels tasks of a graph (every unfinished one when taskIDs is empty)
// from any process: it records cancel requests in the store for the runner that owns the
// graph, waits (within ctx) until that runner has acted on the pending ones, and reports
// each task concerned as Engine.Cancel does. Running tasks are reported cancelling: their
// runner signals them (SIGTERM, SIGKILL after grace) and records them when they exit. A
// graph whose runner is gone is ErrOwnerGone: the next reconciliation puts it right.
func (r *Reader) RequestCancel(ctx context.Context, graphID string, taskIDs []string, grace time.Duration) ([]CancelOutcome, error) {
	before, err := r.Snapshot(ctx, graphID)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, id := range taskIDs {
		if _, ok := before.Task(id); !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		// Quoted short, and only the first few: what was sent may be long or many.
		const shown = 5
		names := make([]string, 0, shown+1)
		for _, id := range missing[:min(len(missing), shown)] {
			names = append(names, quote.Short(id))
		}
		if len(missing) > shown {
			names = append(names, fmt.Sprintf("and %d more", len(missing)-shown))
		}
		return nil, fmt.Errorf("graph %s has no task %s: %w", graphID, strings.Join(names, ", "), ErrNotFound)
	}
	if before.Graph.FinishedAt == nil {
		owner, err := r.Runner(ctx, before.Graph.RunnerID, time.Now())
		if err != nil {
			return nil, err
		}
		if !owner.Live {
			return nil, fmt.Errorf("graph %s: %w (runner %s); its unfinished tasks are recorded when a server next starts on this workspace", graphID, ErrOwnerGone, owner.ID)
		}
	}
	marked, err := r.db.RequestCancel(ctx, graphID, taskIDs, grace)
	if err != nil {
		return nil, err
	}
	after := before
	if len(marked) > 0 {
		// The owner acts within cancelPoll; wait until no marked task is still pending.
		wait, cancel := context.WithTimeout(ctx, 10*cancelPoll)
		defer cancel()
		for wait.Err() == nil {
			if after, err = r.Snapshot(ctx, graphID); err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(after.Tasks, func(t Task) bool {
				return slices.Contains(marked, t.ID) && t.Status == Pending
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

// cancelOutcomes compares a graph before and after a cancel request: requested are the
// ids asked for, marked those the request reached (unfinished then).
func cancelOutcomes(before, after Snapshot, requested, marked []string) []CancelOutcome {
	prev := make(map[string]State, len(before.Tasks))
	for _, t := range before.Tasks {
		prev[t.ID] = t.Status
	}
	var out []CancelOutcome
	for _, t := range after.Tasks {
		was, now := prev[t.ID], t.Status
		var outcome Outcome
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
		out = append(out, CancelOutcome{ID: t.ID, PreviousStatus: was, Status: now, Outcome: outcome})
	}
	return out
}

// settlePoll is how often CancelAndWait re-reads the tasks it waits on.
const settlePoll = 50 * time.Millisecond

// CancelAndWait is RequestCancel followed by a wait of up to settle until the cancel has
// played out: every running task it signalled has stopped, and every pending task left
// behind a dependency that will not succeed has been skipped. The report then gives each
// task as it is: a signalled task that stopped reads cancelled (or already_terminal if it
// ended otherwise first); tasks skipped meanwhile are added. stopping lists the tasks
// still stopping when the wait ended.
func (r *Reader) CancelAndWait(ctx context.Context, graphID string, taskIDs []string, grace, settle time.Duration) (report CancelReport, stopping []string, err error) {
	before, err := r.Snapshot(ctx, graphID)
	if err != nil {
		return CancelReport{}, nil, err
	}
	res, err := r.RequestCancel(ctx, graphID, taskIDs, grace)
	if err != nil {
		return CancelReport{}, nil, err
	}
	if len(res) > 0 && settle > 0 {
		if res, err = r.awaitCancel(ctx, before, res, settle); err != nil {
			return CancelReport{}, nil, err
		}
	}
	for _, o := range res {
		if o.Outcome == OutcomeCancelling {
			stopping = append(stopping, o.ID)
		}
	}
	return CancelReport{GraphID: graphID, Tasks: orEmpty(res)}, stopping, nil
}

// awaitCancel waits up to d for the cancel res describes to settle (see CancelAndWait),
// then reports the tasks as they are.
func (r *Reader) awaitCancel(ctx context.Context, before Snapshot, res []CancelOutcome, d time.Duration) ([]CancelOutcome, error) {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tick := time.NewTicker(settlePoll)
	defer tick.Stop()
wait:
	for {
		briefs, err := r.db.TaskBriefs(wctx, before.Graph.ID)
		if err != nil {
			if wctx.Err() != nil {
				break // the wait ran out during the read
			}
			return nil, err
		}
		state := make(map[string]State, len(briefs))
		for _, b := range briefs {
			state[b.ID] = State(b.Status)
		}
		if cancelSettled(before, state, res) {
			break
		}
		select {
		case <-wctx.Done():
			break wait
		case <-tick.C:
		}
	}
	after, err := r.Snapshot(ctx, before.Graph.ID)
	if err != nil {
		return nil, err
	}
	now := make(map[string]Task, len(after.Tasks))
	for _, t := range after.Tasks {
		now[t.ID] = t
	}
	listed := map[string]bool{}
	for i, o := range res {
		listed[o.ID] = true
		st := now[o.ID].Status
		if o.Outcome != OutcomeCancelling || !st.Terminal() {
			continue
		}
		res[i].Status = st
		if st == Cancelled {
			res[i].Outcome = OutcomeCancelled
		} else {
			res[i].Outcome = OutcomeAlreadyTerminal
		}
	}
	for _, t := range before.Tasks {
		if !listed[t.ID] && t.Status == Pending && now[t.ID].Status == Skipped {
			res = append(res, CancelOutcome{ID: t.ID, PreviousStatus: Pending, Status: Skipped, Outcome: OutcomeSkipped})
		}
	}
	slices.SortStableFunc(res, func(a, b CancelOutcome) int { return cmp.Compare(now[a.ID].Seq, now[b.ID].Seq) })
	return res, nil
}

// cancelSettled reports whether a cancel has played out: every task it signalled has
// ended, and no pending task is left blocked behind one that did not succeed (the owner
// skips those as soon as it records the blocker, but possibly in a later write).
func cancelSettled(before Snapshot, state map[string]State, res []CancelOutcome) bool {
	if slices.ContainsFunc(res, func(o CancelOutcome) bool {
		return o.Outcome == OutcomeCancelling && !state[o.ID].Terminal()
	}) {
		return false
	}
	nodes := make([]dag.Node, len(before.Tasks))
	for i, t := range before.Tasks {
		nodes[i] = dag.Node{ID: t.ID, Status: state[t.ID], DependsOn: t.DependsOn}
	}
	return !slices.ContainsFunc(dag.Analyze(nodes).Nodes, func(n NodeView) bool { return n.Reason == ReasonBlocked })
}
