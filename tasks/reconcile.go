package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/procid"
	"github.com/mcp-harness/mcp-harness/store"
)

// reconcileEvery is how often a live runner looks for runners that are gone: every third
// of the lease (5 s by default). A runner is gone once its lease (renewed as often) has
// expired or its process has died, so looking much more often would find nothing new.
func (e *Engine) reconcileEvery() time.Duration { return e.cfg.Lease / 3 }

// Reconcile puts right what runners that are gone left behind, so that nothing is silently
// lost and nothing runs on unobserved:
//   - their running tasks become failed with RUNNER_RESTARTED (a message names the gone
//     runner), after whatever is left of their processes is killed;
//   - their graphs are adopted by this runner, which schedules their pending tasks as
//     usual (a dependent of a restarted task is then skipped); exactly one runner adopts
//     a graph even when several reconcile at once;
//   - their PTY sessions' processes are killed and the session rows closed.
//
// A runner counts as gone only when its lease expired or its process is provably dead: a
// different runner alone is not gone, since another client's server may be alive. Before
// a runner files states of a gone one, it applies the states that one saved because it
// could not write them before it exited (store.ApplyUnrecorded).
//
// A runner that finds itself judged gone (it stalled) registers again as a new runner
// before it reconciles anyone (see lease.go).
func (e *Engine) Reconcile(ctx context.Context) error {
	// One pass at a time: a caller that reconciles (Cancel does, for a graph whose owner
	// it finds gone) then finds what any pass adopted in memory.
	e.reconcileMu.Lock()
	defer e.reconcileMu.Unlock()
	self, err := e.cfg.DB.GetRunner(ctx, e.RunnerID())
	if err != nil {
		return err
	}
	if self.StoppedAt != nil {
		if err := e.keepLease(ctx); err != nil {
			return err
		}
		if self, err = e.cfg.DB.GetRunner(ctx, e.RunnerID()); err != nil {
			return err
		}
	}
	runners, err := e.cfg.DB.UnreapedRunners(ctx, self.ID)
	if err != nil {
		return err
	}
	now := time.Now()
	for _, r := range runners {
		if !e.gone(r, self, now) {
			continue
		}
		if err := e.reap(ctx, r); err != nil {
			return fmt.Errorf("reconcile runner %s: %w", r.ID, err)
		}
	}
	return nil
}

// gone judges whether runner r is gone, as seen by this runner (self): stopped, or its
// process dead, or silent for StaleAfter (see DefaultStaleAfter) past its lease while this
// runner's own lease is current and has been for a whole lease (a runner that has itself
// just woken up, or waited out a lock on the database that kept every runner from
// renewing, judges nobody by silence until the others have had time to renew).
func (e *Engine) gone(r, self store.Runner, now time.Time) bool {
	switch {
	case r.StoppedAt != nil, !r.Alive():
		return true
	case now.Before(r.LeaseExpiresAt):
		return false
	}
	selfCurrent := self.StoppedAt == nil && now.Before(self.LeaseExpiresAt) && e.judgesBySilence(now)
	return selfCurrent && now.Sub(r.LeaseExpiresAt) > e.cfg.StaleAfter
}

func (e *Engine) reap(ctx context.Context, r store.Runner) error {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil // a runner shutting down adopts nothing: the next one will
	}
	if n, err := e.cfg.DB.ApplyUnrecorded(ctx, r.ID); err != nil {
		return err
	} else if n > 0 {
		e.log.Info("recorded the task states a gone runner saved because it could not write them", "gone", r.ID, "states", n)
	}
	msg := fmt.Sprintf("the server process that ran it (runner %s, pid %d) is gone; the task was not seen to finish", r.ID, r.Pid)
	// The epoch is held from the adoption until the graphs are in memory, so that a change
	// of epoch (lease.go) finds them there.
	e.epochMu.RLock()
	takeovers, err := e.cfg.DB.AdoptGraphs(ctx, r, e.epoch, CodeRunnerRestarted, msg)
	if errors.Is(err, store.ErrRenewed) {
		e.epochMu.RUnlock()
		return nil // it woke up in time: it keeps its graphs, and is judged again later
	}
	if err != nil {
		e.epochMu.RUnlock()
		return err
	}
	// What is picked to start is started whatever happens next: a picked task holds a
	// count of e.waiters, which Close waits for. After the unlock (deferred first, so run
	// last), and apart, since a start waits for its state to be written.
	var next []launch
	defer func() {
		if len(next) > 0 {
			go e.launchAll(next)
		}
	}()
	for _, to := range takeovers {
		// Not cut short by a shutdown that began meanwhile: an adopted graph must get into
		// memory, to run or to be recorded as never started.
		rows, err := e.cfg.DB.GraphTasks(context.WithoutCancel(ctx), to.Graph.ID)
		if err != nil {
			e.epochMu.RUnlock()
			return err
		}
		e.mu.Lock()
		next = append(next, e.adoptLocked(to.Graph, rows)...) // its remote tasks, followed again
		if e.closed {
			e.shutdownGraphLocked(e.graphs[to.Graph.ID])
		}
		next = append(next, e.scheduleLocked()...)
		e.mu.Unlock()
	}
	e.epochMu.RUnlock()
	// A start time is comparable only with one read on the same boot, as for the session
	// rows below: macOS records wall-clock time, so after a reboot every process of a
	// session whose number was reused would pass killSession's start-time check.
	sameBoot := r.BootID == procid.BootID()
	for _, to := range takeovers {
		for _, t := range to.Restarted {
			if sameBoot && t.Pgid != nil && t.ProcStart != nil {
				killSession(*t.Pgid, *t.ProcStart)
			}
			killMarked(taskMarker(to.Graph.ID, t.ID))
		}
		e.log.Info("adopted a graph of a gone runner", "graph", to.Graph.ID, "gone", r.ID, "restarted", len(to.Restarted), "remote", len(to.Remote))
		e.changes.fire(to.Graph.ID)
		e.finishes.fire(to.Graph.ID)
	}
	sessions, err := e.cfg.DB.OpenSessions(ctx, r.ID)
	if err != nil {
		return err
	}
	for _, s := range sessions {
		if s.BootID == procid.BootID() {
			killSession(s.Pgid, s.ProcStart)
		}
		if err := e.cfg.DB.CloseSession(ctx, r.ID, s.ID); err != nil {
			return err
		}
	}
	return e.cfg.DB.MarkReaped(ctx, r.ID)
}

// markerVar names the environment variable every task process carries.
const markerVar = "MCP_HARNESS_TASK"

// taskMarker is the environment entry that marks a task's processes.
func taskMarker(graphID, taskID string) string {
	return markerVar + "=" + graphID + "/" + taskID
}
