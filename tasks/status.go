package tasks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/quote"
	"github.com/mcp-harness/mcp-harness/store"
)

// Until says what a Wait waits for.
type Until string

// What a Wait can wait for.
const (
	UntilDone   Until = "done"   // every selected task is terminal
	UntilChange Until = "change" // any selected task changes state (or starts a new attempt)
)

// Untils lists everything a Wait can wait for, the default (UntilDone) first.
func Untils() []Until { return []Until{UntilDone, UntilChange} }

// foreignPoll is how often a wait re-reads a graph that another runner runs: that
// runner's changes reach this process only through the store.
const foreignPoll = 200 * time.Millisecond

// Wait blocks until the selected tasks of a graph (every task when taskIDs is empty) are
// all terminal, or, with UntilChange, until any of them changes state from what it was
// when Wait was called, or until ctx ends. It returns the graph as it then is and whether
// the condition was met. Unknown task ids are an error.
//
// While it waits it reads only what the condition needs (the graph's head, or the task
// states), never the whole graph: a waiter on a wide graph must not cost more than the
// graph's own scheduling.
func (e *Engine) Wait(ctx context.Context, graphID string, taskIDs []string, until Until) (Snapshot, bool, error) {
	met, err := e.WaitMet(ctx, graphID, taskIDs, until)
	if err != nil {
		return Snapshot{}, false, err
	}
	// The answer reads the graph even when the wait ran out: the caller reports it.
	snap, err := e.Snapshot(context.WithoutCancel(ctx), graphID)
	return snap, met, err
}

// WaitMet is Wait without the answer: it reports whether the condition was met, for a
// caller that reads what it shows of the graph itself (StatusPage). Waiting for a whole
// graph to be done, it reads nothing but the graph's head.
func (e *Engine) WaitMet(ctx context.Context, graphID string, taskIDs []string, until Until) (bool, error) {
	if len(taskIDs) == 0 && until != UntilChange {
		// Only the graph's finish matters (see below): no task needs reading.
		return e.waitProbe(ctx, graphID, true, func(h store.GraphHead) (bool, error) { return h.Finished, nil })
	}
	// The first read ignores ctx's deadline: a wait of a millisecond ends before a busy
	// store answers, and must still answer with the graph's state (once the deadline has
	// passed, the wait ends and the answer is read without it).
	briefs, err := e.cfg.DB.TaskBriefs(context.WithoutCancel(ctx), graphID)
	if err != nil {
		return false, fmt.Errorf("read the tasks of graph %s: %w", graphID, err)
	}
	if len(briefs) == 0 {
		return false, notFound("no graph %s in this workspace", quote.Short(graphID))
	}
	for _, id := range taskIDs {
		if !slices.ContainsFunc(briefs, func(b store.TaskBrief) bool { return b.ID == id }) {
			return false, notFound("graph %s has no task %s", graphID, quote.Short(id))
		}
	}
	baseline := fingerprint(briefs, taskIDs)
	probe := func(h store.GraphHead) (bool, error) {
		if until != UntilChange && len(taskIDs) == 0 {
			return h.Finished, nil
		}
		briefs, err := e.cfg.DB.TaskBriefs(ctx, graphID)
		if err != nil {
			return false, err
		}
		if until == UntilChange {
			return fingerprint(briefs, taskIDs) != baseline, nil
		}
		return allTerminal(briefs, taskIDs), nil
	}
	// Waiting for the whole graph, only its finish matters: a graph of this runner wakes
	// the wait once, when it finished, not at every batch of states written.
	return e.waitProbe(ctx, graphID, until != UntilChange && len(taskIDs) == 0, probe)
}

// WaitFor blocks until cond holds for the graph as stored, checking it on the state at the
// call and after every change, or until ctx ends. It returns the last snapshot it read and
// whether cond held; an error from cond ends the wait with that error. Each check reads
// the whole graph: Wait is the cheap way to wait on states.
func (e *Engine) WaitFor(ctx context.Context, graphID string, cond func(Snapshot) (bool, error)) (Snapshot, bool, error) {
	var snap Snapshot
	met, err := e.waitProbe(ctx, graphID, false, func(store.GraphHead) (bool, error) {
		var err error
		if snap, err = e.Snapshot(ctx, graphID); err != nil {
			return false, err
		}
		return cond(snap)
	})
	return snap, met, err
}

// waitProbe calls probe with the graph's head at the start and after every change of the
// graph, until it reports true or ctx ends (false, nil). Changes made by this runner wake
// it at once; a graph that another runner runs is re-read every foreignPoll, since that
// runner's changes reach this process only through the store; once the engine is
// closed, a graph of this runner ends the wait unmet at once. With finishOnly (probe
// looks at nothing but h.Finished) a graph of this runner wakes it only once it finished,
// or once this runner let it go to another (forgetLocked).
func (e *Engine) waitProbe(ctx context.Context, graphID string, finishOnly bool, probe func(store.GraphHead) (bool, error)) (bool, error) {
	var ticker *time.Ticker // re-reads a graph another runner runs
	var poll <-chan time.Time
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	version := int64(-1)
	// step checks once and waits for the next change; done ends the wait with ok, err.
	step := func() (done, ok bool, err error) {
		n := e.changes
		if finishOnly {
			n = e.finishes
		}
		changed, release := n.watch(graphID)
		defer release()
		// Read after taking the channel: a change committed from here on closes it.
		h, err := e.cfg.DB.GetGraphHead(ctx, graphID)
		if err != nil {
			if ctx.Err() != nil {
				return true, false, nil
			}
			if errors.Is(err, store.ErrNotFound) {
				return true, false, notFound("no graph %s in this workspace", quote.Short(graphID))
			}
			return true, false, err
		}
		if h.Version != version {
			version = h.Version
			ok, err := probe(h)
			if ctx.Err() != nil {
				return true, false, nil
			}
			if err != nil || ok {
				return true, ok, err
			}
		}
		if ticker == nil && h.RunnerID != e.RunnerID() {
			ticker = time.NewTicker(foreignPoll)
			poll = ticker.C
		}
		// Once the engine is closed every watch is closed at once: nothing of this runner
		// changes any more, so a graph it still owns (its last states saved for the next
		// runner, say) ends the wait, and another runner's graph is only polled.
		if n.isClosed() {
			if h.RunnerID == e.RunnerID() {
				return true, false, nil
			}
			changed = nil
		}
		select {
		case <-changed:
		case <-poll:
		case <-ctx.Done():
			return true, false, nil
		}
		return false, false, nil
	}
	for {
		if done, ok, err := step(); done {
			return ok, err
		}
	}
}

func allTerminal(briefs []store.TaskBrief, ids []string) bool {
	for _, t := range briefs {
		if selected(ids, t.ID) && !State(t.Status).Terminal() {
			return false
		}
	}
	return true
}

// fingerprint sums up the selected tasks' states, attempts included.
func fingerprint(briefs []store.TaskBrief, ids []string) string {
	b := make([]byte, 0, 16*len(briefs))
	for _, t := range briefs {
		if selected(ids, t.ID) {
			b = append(b, t.ID...)
			b = append(b, ':')
			b = append(b, t.Status...)
			b = strconv.AppendInt(b, int64(t.Attempt), 10)
			b = append(b, ';')
		}
	}
	return string(b)
}
