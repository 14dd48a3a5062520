package tasks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks/archive"
)

// watchLoop carries out the cancel requests other processes leave for this runner's
// graphs, reconciles runners that are gone (at once, then every reconcileEvery) and
// expires graphs past the retention, until ctx ends.
func (e *Engine) watchLoop(ctx context.Context) {
	t := time.NewTicker(cancelPoll)
	defer t.Stop()
	var lastReconcile, lastExpire, lastSweep time.Time
	var unfollowed map[AttemptID]bool // remote attempts the last sweep found nothing follows
	for {
		if time.Since(lastReconcile) >= e.reconcileEvery() {
			lastReconcile = time.Now()
			// A detached runner runs its own graph only: the servers reconcile.
			if err := e.reconcileUnlessOnly(ctx); err != nil && ctx.Err() == nil {
				e.log.Warn("reconciling gone runners", "err", err)
			}
			e.startedOnce.Do(func() { close(e.started) })
		}
		if e.cfg.ArtifactsDir != "" && e.cfg.Only == "" && time.Since(lastExpire) >= e.expireEvery() {
			lastExpire = time.Now()
			if err := e.Expire(ctx); err != nil && ctx.Err() == nil {
				e.log.Warn("expiring graphs", "err", err)
			}
			if err := e.removeStaleSnapshots(ctx); err != nil && ctx.Err() == nil {
				e.log.Warn("removing workspace snapshots no graph uses", "err", err)
			}
		}
		if time.Since(lastSweep) >= e.reconcileEvery() {
			lastSweep = time.Now()
			var err error
			if unfollowed, err = e.sweepRemote(ctx, unfollowed); err != nil && ctx.Err() == nil {
				e.log.Warn("looking for remote attempts nothing follows", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		reqs, err := e.cfg.DB.CancelRequests(ctx, e.RunnerID())
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

// spooler archives graphs as they finish: the writer offers it each finished graph once
// its last state is written, and its loop (spoolLoop) archives them one at a time. Its
// loop is nil when the engine has no artifacts directory.
type spooler struct {
	*loop
	queue chan string // finished graphs to archive
}

func newSpooler() *spooler { return &spooler{queue: make(chan string, 1024)} }

// offer queues a finished graph for archiving, without waiting: when the queue is full
// the next sweep (spoolUnspooled) finds the graph unarchived.
func (s *spooler) offer(graphID string) {
	select {
	case s.queue <- graphID:
	default:
	}
}

// spoolLoop archives graphs as they finish, and at start whatever finished unarchived
// (a spool cut short by a crash is redone here).
func (e *Engine) spoolLoop(ctx context.Context) {
	archive.RemoveStale(e.cfg.ArtifactsDir, func(runnerID string) bool {
		if runnerID == e.RunnerID() {
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
		case id := <-e.spooler.queue:
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
			if g, err := e.cfg.DB.GetGraph(ctx, id); err != nil || g.RunnerID != e.RunnerID() {
				continue
			}
		}
		if _, err := e.spool(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// Expire removes the live logs of graphs that finished longer ago than the retention,
// after making sure their artifact exists; their logs are then read from it. It also
// removes what an earlier pass recorded expired but did not get to remove.
func (e *Engine) Expire(ctx context.Context) error {
	ids, err := e.cfg.DB.ExpirableGraphs(ctx, time.Now().Add(-e.cfg.Retention))
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := e.expireGraph(ctx, id); err != nil {
			return fmt.Errorf("expire %s: %w", id, err)
		}
	}
	return e.removeExpiredLogs(ctx)
}

// expireGraph expires one graph, in the order readers rely on: its artifact exists before
// the graph is recorded expired, and the graph is recorded expired before its live logs
// go. So a graph read as not expired has its live logs, and one read as expired has its
// archive. Stopped in between (a crash, a failed removal), the graph is expired with its
// live logs still there: harmless, and removeExpiredLogs removes them on a later pass.
func (e *Engine) expireGraph(ctx context.Context, id string) error {
	a, err := e.cfg.DB.GetArtifact(ctx, id)
	if err == nil {
		err = e.artifactThere(ctx, a)
	}
	if err != nil {
		if _, err := e.spool(ctx, id); err != nil {
			return err
		}
	}
	if err := e.cfg.DB.MarkExpired(ctx, id); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(e.cfg.Workspace.LogsDir(), id))
}

// removeExpiredLogs removes the live log directories of graphs already recorded expired,
// which a pass stopped between recording and removing left behind. ExpirableGraphs no
// longer lists those graphs, so they are found from the logs directory: one lookup per
// graph that still has live logs (running, or finished within the retention).
func (e *Engine) removeExpiredLogs(ctx context.Context) error {
	entries, err := os.ReadDir(e.cfg.Workspace.LogsDir())
	if err != nil {
		return fmt.Errorf("expire: %w", err)
	}
	for _, ent := range entries {
		if !ent.IsDir() {
			continue
		}
		g, err := e.cfg.DB.GetGraph(ctx, ent.Name())
		if errors.Is(err, store.ErrNotFound) {
			continue // a Submit makes the directory before it stores the graph
		}
		if err != nil {
			return fmt.Errorf("expire: %w", err)
		}
		if g.ExpiredAt == nil {
			continue
		}
		if err := os.RemoveAll(filepath.Join(e.cfg.Workspace.LogsDir(), g.ID)); err != nil {
			return fmt.Errorf("expire %s: %w", g.ID, err)
		}
	}
	return nil
}
