package tasks

// This file owns cancelling: Engine.Cancel, which cancels this runner's graphs directly
// (cancelLocal, with e.mu held) and asks the owner of another runner's graph through the
// store (Reader.RequestCancel, request.go). cancelGraphLocked and cancelTaskLocked are also how
// failFast and Close stop tasks (see Engine for the locks).

import (
	"context"
	"errors"
	"time"
)

// Outcome says what a cancel request did to one task (CancelOutcome.Outcome).
type Outcome string

// Outcomes of a cancel request for one task.
const (
	OutcomeCancelled       Outcome = "cancelled"        // it was pending and is cancelled now
	OutcomeCancelling      Outcome = "cancelling"       // it runs and was signalled: it is cancelled once it stops
	OutcomeSkipped         Outcome = "skipped"          // it waited on a task the cancel reached, and will never run
	OutcomeAlreadyTerminal Outcome = "already_terminal" // it had finished: nothing changed
)

// Outcomes lists every cancel outcome, in the order a cancel's summary counts them.
func Outcomes() []Outcome {
	return []Outcome{OutcomeCancelled, OutcomeCancelling, OutcomeSkipped, OutcomeAlreadyTerminal}
}

// Cancel cancels the named tasks of a graph (all unfinished ones when taskIDs is empty):
// pending ones at once, running ones by SIGTERM to their process group and SIGKILL after
// grace. Dependents that can no longer run are skipped and listed too. Cancelling a
// finished task is not an error: its outcome is already_terminal.
func (e *Engine) Cancel(ctx context.Context, graphID string, taskIDs []string, grace time.Duration) ([]CancelOutcome, error) {
	snap, err := e.Snapshot(ctx, graphID)
	if err != nil {
		return nil, err
	}
	if err := checkTaskIDs(snap, taskIDs); err != nil {
		return nil, err
	}
	e.mu.Lock()
	_, local := e.graphs[graphID]
	e.mu.Unlock()
	// A graph still in memory that the store says another runner owns was adopted while
	// this runner stalled: its owner carries out the cancel.
	if local && snap.Graph.RunnerID == e.RunnerID() {
		return e.cancelLocal(ctx, graphID, taskIDs, grace, "cancelled by request")
	}
	if snap.Graph.FinishedAt == nil {
		// Another runner's graph: it alone changes its tasks, so ask it through the store.
		out, err := e.RequestCancel(ctx, graphID, taskIDs, grace)
		if !errors.Is(err, ErrOwnerGone) {
			return out, err
		}
		// Its runner is gone (it crashed a moment ago): reconcile it now rather than
		// wait for the next round, and cancel here if that made the graph this runner's.
		if rerr := e.Reconcile(ctx); rerr != nil {
			return nil, errors.Join(err, rerr)
		}
		if now, serr := e.Snapshot(ctx, graphID); serr != nil || now.Graph.RunnerID != e.RunnerID() {
			return nil, err // not judged gone yet: it stalled, but not for long enough
		}
		return e.cancelLocal(ctx, graphID, taskIDs, grace, "cancelled by request")
	}
	return cancelOutcomes(snap, snap, taskIDs, nil), nil
}

// cancelLocal cancels tasks of a graph this runner runs.
func (e *Engine) cancelLocal(ctx context.Context, graphID string, taskIDs []string, grace time.Duration, reason string) ([]CancelOutcome, error) {
	var next []launch
	// After the unlock below, and apart from the call: a task starts once its running
	// state is written, and a cancel must not wait on a locked database.
	defer func() {
		if len(next) > 0 {
			go e.launchAll(next)
		}
	}()
	e.mu.Lock()
	defer e.mu.Unlock()
	g := e.graphs[graphID]
	if g == nil { // finished meanwhile
		snap, err := e.Snapshot(ctx, graphID)
		if err != nil {
			return nil, err
		}
		return cancelOutcomes(snap, snap, taskIDs, nil), nil
	}
	before := map[*task]State{}
	for _, t := range g.tasks {
		before[t] = State(t.row.Status)
	}
	selected := map[*task]bool{}
	if len(taskIDs) == 0 {
		for _, t := range g.tasks {
			if !State(t.row.Status).Terminal() {
				selected[t] = true
			}
		}
	} else {
		for _, id := range taskIDs {
			if t := g.task(id); t != nil {
				selected[t] = true
			}
		}
	}
	outcomes := map[*task]Outcome{}
	for _, t := range g.tasks { // submitted order: deterministic results
		if selected[t] {
			outcomes[t] = e.cancelTaskLocked(g, t, CodeCancelled, reason, grace)
		}
	}
	var out []CancelOutcome
	for _, t := range g.tasks {
		o, ok := outcomes[t]
		if !ok {
			if before[t] == Pending && State(t.row.Status) == Skipped {
				o = OutcomeSkipped
			} else {
				continue
			}
		}
		out = append(out, CancelOutcome{ID: t.row.ID, PreviousStatus: before[t], Status: State(t.row.Status), Outcome: o})
	}
	next = e.scheduleLocked()
	return out, nil
}

// cancelGraphLocked cancels every unfinished task of g: pending ones at once, running ones
// by signal (they are recorded when they exit).
func (e *Engine) cancelGraphLocked(g *graph, code, reason string) {
	if g == nil {
		return
	}
	for _, t := range g.tasks {
		e.cancelTaskLocked(g, t, code, reason, e.cfg.KillGrace)
	}
}

// cancelTaskLocked cancels one task and reports what happened to it.
func (e *Engine) cancelTaskLocked(g *graph, t *task, code, reason string, grace time.Duration) Outcome {
	switch State(t.row.Status) {
	case Pending:
		now := time.Now().UTC()
		state := Cancelled
		t.row.Status = string(state)
		det := t.row.d()
		det.ErrorCode, det.Message, det.FinishedAt = &code, &reason, &now
		det.ExitCode, det.Signal = nil, nil
		g.unfinished--
		q := g.queueOf(t)
		*q = removeTask(*q, t)
		e.sendLocked(t)
		for _, d := range g.dependentsOf(t) {
			if State(d.row.Status) == Pending {
				e.skipLocked(g, d, t)
			}
		}
		if g.unfinished == 0 {
			e.dropLocked(g)
		}
		return OutcomeCancelled
	case Running:
		e.stopLocked(t, code, reason, grace)
		return OutcomeCancelling
	}
	return OutcomeAlreadyTerminal
}
