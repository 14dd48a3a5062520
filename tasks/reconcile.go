package tasks

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
)

// reconcileEvery is how often a live runner looks for runners that are gone. A runner is
// gone once its lease (renewed every few seconds) has expired or its process has died, so
// looking much more often would find nothing new.
const reconcileEvery = 5 * time.Second

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
// different runner alone is not gone, since another client's server may be alive.
func (e *Engine) Reconcile(ctx context.Context) error {
	runners, err := e.cfg.DB.UnreapedRunners(ctx, e.cfg.RunnerID)
	if err != nil {
		return err
	}
	self, err := e.cfg.DB.GetRunner(ctx, e.cfg.RunnerID)
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

// staleAfter is how long past its lease a runner whose process still exists must stay
// silent before it counts as gone. A process that exists but does not renew its lease has
// stalled (stopped, or the machine slept); when the machine wakes, every lease on it has
// expired at once, and a runner that wakes a moment before another must not take over
// graphs whose runner is about to renew.
const staleAfter = 30 * time.Second

// gone judges whether runner r is gone, as seen by this runner (self): stopped, or its
// process dead, or silent for staleAfter past its lease while this runner's own lease is
// current (a runner that has itself just woken up judges nobody by silence).
func (e *Engine) gone(r, self store.Runner, now time.Time) bool {
	switch {
	case r.StoppedAt != nil, !r.Alive():
		return true
	case now.Before(r.LeaseExpiresAt):
		return false
	}
	selfCurrent := self.StoppedAt == nil && now.Before(self.LeaseExpiresAt)
	return selfCurrent && now.Sub(r.LeaseExpiresAt) > staleAfter
}

func (e *Engine) reap(ctx context.Context, r store.Runner) error {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil // a runner shutting down adopts nothing: the next one will
	}
	msg := fmt.Sprintf("the server process that ran it (runner %s, pid %d) is gone; the task was not seen to finish", r.ID, r.Pid)
	takeovers, err := e.cfg.DB.AdoptGraphs(ctx, r.ID, e.cfg.RunnerID, CodeRunnerRestarted, msg)
	if err != nil {
		return err
	}
	// A start time is comparable only with one read on the same boot, as for the session
	// rows below: macOS records wall-clock time, so after a reboot every process of a
	// session whose number was reused would pass killSession's start-time check.
	sameBoot := r.BootID == store.BootID()
	for _, to := range takeovers {
		for _, t := range to.Restarted {
			if sameBoot && t.Pgid != nil && t.ProcStart != nil {
				killSession(*t.Pgid, *t.ProcStart)
			}
			killMarked(taskMarker(to.Graph.ID, t.ID))
		}
		rows, err := e.cfg.DB.GraphTasks(ctx, to.Graph.ID)
		if err != nil {
			return err
		}
		e.log.Info("adopted a graph of a gone runner", "graph", to.Graph.ID, "gone", r.ID, "restarted", len(to.Restarted))
		e.mu.Lock()
		e.adoptLocked(to.Graph, rows)
		if e.closed {
			e.cancelGraphLocked(e.graphs[to.Graph.ID], CodeRunnerShutdown, "the server shut down before the task started")
		}
		next := e.scheduleLocked()
		e.mu.Unlock()
		e.launchAll(next)
		e.changes.fire(to.Graph.ID)
	}
	sessions, err := e.cfg.DB.OpenSessions(ctx, r.ID)
	if err != nil {
		return err
	}
	for _, s := range sessions {
		if s.BootID == store.BootID() {
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
