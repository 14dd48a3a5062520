package tasks

// This file owns Submit: a graph validated, stored in full, then adopted into memory
// (adoptLocked) and started. e.mu guards the in-memory state it builds; e.inflight keeps
// Close from stopping the writer under a Submit (see Engine).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
)

// Submitted is what Submit returns: the graph as stored.
type Submitted struct {
	Snapshot
	Created  bool // false when the idempotency key matched an existing graph
	Detached bool // a detached runner claimed the graph (SubmitDetached)
}

// Submit validates a graph, stores it in full and starts its ready tasks. It never waits
// for a command. A refused graph leaves nothing behind: no row, no file, no process.
func (e *Engine) Submit(ctx context.Context, spec Spec) (Submitted, error) {
	return e.submit(ctx, spec, false)
}

func (e *Engine) submit(ctx context.Context, spec Spec, detach bool) (Submitted, error) {
	lim := e.cfg.Limits
	v, err := Validate(spec, lim, e.cfg.Workspace.Confine)
	if err != nil {
		return Submitted{}, err
	}
	maxParallel := spec.MaxParallel
	if maxParallel == 0 {
		maxParallel = runtime.NumCPU()
	}
	row := store.GraphRow{
		ID: store.NewID("g-"), Name: spec.Name, IdempotencyKey: spec.IdempotencyKey,
		MaxParallel: maxParallel, FailFast: spec.FailFast, CreatedAt: time.Now().UTC(),
	}
	rows := make([]store.TaskRow, len(spec.Tasks))
	for i, ts := range spec.Tasks {
		rows[i] = store.TaskRow{
			GraphID: row.ID, ID: ts.ID, Seq: i, Command: ts.Command, Cwd: v.Dirs[i], Env: ts.Env,
			DependsOn: ts.DependsOn, TimeoutSec: ts.TimeoutSec, Retries: ts.Retries,
			Sandbox: ts.Sandbox, Network: ts.Network,
			TaskState: store.TaskState{Status: string(Pending)},
		}
	}

	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return Submitted{}, ErrClosed
	}
	e.inflight.Add(1) // Close waits for this Submit before it stops recording states
	e.mu.Unlock()
	defer e.inflight.Done()
	if e.cfg.SubmitWait > 0 {
		// Another process may hold the database's lock: wait for it no longer than a call
		// may wait, then answer store.ErrBusy, which the caller can retry.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.cfg.SubmitWait)
		defer cancel()
	}
	logDir := filepath.Join(e.cfg.Workspace.LogsDir(), row.ID)
	if err := os.Mkdir(logDir, 0o700); err != nil {
		return Submitted{}, fmt.Errorf("submit: log dir: %w", err)
	}
	// The graph is stored in the name of the runner's current epoch, and is in memory
	// before the epoch can change (see lease.go). A runner whose lease ran out or was lost
	// (it stalled, and a peer judged it gone) renews it or registers again first: the
	// store refuses a graph for a runner without a lease.
	var stored store.GraphRow
	var created bool
	for attempt := 0; ; attempt++ {
		e.epochMu.RLock()
		row.RunnerID = e.epoch
		stored, created, err = e.cfg.DB.InsertGraph(ctx, row, rows)
		if !errors.Is(err, store.ErrLeaseLost) || attempt == 2 {
			break
		}
		e.epochMu.RUnlock()
		if lerr := e.keepLease(ctx); lerr != nil {
			os.Remove(logDir)
			return Submitted{}, fmt.Errorf("submit: %w", lerr)
		}
	}
	if err != nil || !created {
		e.epochMu.RUnlock()
		os.Remove(logDir)
		if err != nil {
			return Submitted{}, err
		}
		snap, err := e.Snapshot(ctx, stored.ID)
		return Submitted{Snapshot: snap}, err
	}

	if detach {
		e.epochMu.RUnlock()
		if e.handOver(ctx, stored.ID, stored.RunnerID) {
			return Submitted{Snapshot: Snapshot{Graph: graphOf(stored), Tasks: tasksOf(rows)}, Created: true, Detached: true}, nil
		}
		// No runner claimed it, and none can now: it runs here, as if not detached.
		e.epochMu.RLock()
		stored.RunnerID = e.epoch
	}
	e.mu.Lock()
	e.adoptLocked(stored, rows)
	if e.closed {
		// Shutdown began while the graph was being stored: record it as never started,
		// truthfully, rather than leave pending rows no one runs.
		e.shutdownGraphLocked(e.graphs[stored.ID])
	}
	next := e.scheduleLocked()
	e.mu.Unlock()
	e.epochMu.RUnlock()
	// Started apart from the call: a task starts once its running state is written, and
	// the call must not wait on a database another process may lock meanwhile.
	go e.launchAll(next)
	return Submitted{Snapshot: Snapshot{Graph: graphOf(stored), Tasks: tasksOf(rows)}, Created: true}, nil
}

// adoptLocked builds the in-memory state of a stored graph whose tasks are all pending
// (or terminal), queues the ready ones and skips those whose dependencies can no longer
// succeed.
func (e *Engine) adoptLocked(row store.GraphRow, rows []store.TaskRow) {
	g := &graph{row: row, byID: make(map[string]*task, len(rows))}
	for _, r := range rows {
		t := &task{row: r}
		g.tasks = append(g.tasks, t)
		g.byID[r.ID] = t
	}
	for _, t := range g.tasks {
		for _, id := range t.row.DependsOn {
			d := g.byID[id]
			t.deps = append(t.deps, d)
			d.dependents = append(d.dependents, t)
			if State(d.row.Status) != Succeeded {
				t.remaining++
			}
		}
		if !State(t.row.Status).Terminal() {
			g.unfinished++
		}
	}
	if g.unfinished == 0 {
		e.writer.queue.push(writeItem{finished: row.ID}) // nothing left to run: archive it
		return
	}
	e.graphs[row.ID] = g
	e.order = append(e.order, g)
	for _, t := range g.tasks {
		if State(t.row.Status) != Pending {
			continue
		}
		if blocker := firstBlocker(t); blocker != nil {
			e.skipLocked(g, t, blocker)
		} else if t.remaining == 0 {
			g.ready = append(g.ready, t)
		}
	}
}
