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
	"slices"
	"strings"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks/dag"
)

// Submitted is what Submit returns: the graph as stored, and what its tasks are. It holds
// counts, not the tasks: a caller of a submit already has them, and for a graph of
// 100,000 tasks a copy of each was 28 MiB more held at the call's peak (issue 29).
type Submitted struct {
	Graph    Graph
	Progress Progress // its tasks' states when the call returned
	Remote   int      // how many of its tasks run on a remote executor
	Created  bool     // false when the idempotency key matched an existing graph
	Detached bool     // a detached runner claimed the graph (SubmitDetached)
}

// submittedOf is a graph just stored: n tasks, all pending, remote of them remote.
func submittedOf(g store.GraphRow, n, remote int) Submitted {
	out := Submitted{Graph: graphOf(g), Remote: remote, Created: true}
	out.Progress.add(Pending, n)
	out.Progress = out.Progress.withPercent()
	return out
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
	remote := 0
	for i, ts := range spec.Tasks {
		rows[i] = store.TaskRow{
			GraphID: row.ID, ID: ts.ID, Seq: i, Command: ts.Command, Cwd: v.Dirs[i], Env: ts.Env,
			DependsOn: ts.DependsOn, TimeoutSec: ts.TimeoutSec, Retries: ts.Retries,
			Sandbox: ts.Sandbox, Network: ts.Network, CPU: ts.CPU, Memory: ts.Memory,
			TaskState: store.TaskState{Status: string(Pending)},
		}
		if dag.ExecutorOf(ts, spec.Executor) == ExecutorKubernetes {
			rows[i].Executor = string(ExecutorKubernetes)
			remote++
		}
	}
	if remote > 0 {
		if err := e.checkRemote(ctx); err != nil {
			return Submitted{}, err
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
		out := Submitted{Graph: snap.Graph, Progress: snap.Progress()}
		for _, t := range snap.Tasks {
			if t.Executor == ExecutorKubernetes {
				out.Remote++
			}
		}
		return out, err
	}

	if detach {
		e.epochMu.RUnlock()
		if e.handOver(ctx, stored.ID, stored.RunnerID) {
			out := submittedOf(stored, len(rows), remote)
			out.Detached = true
			return out, nil
		}
		// No runner claimed it, and none can now: it runs here, as if not detached.
		e.epochMu.RLock()
		stored.RunnerID = e.epoch
	}
	out := submittedOf(stored, len(rows), remote)
	e.mu.Lock()
	e.adoptLocked(stored, rows) // all pending: nothing to follow
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
	return out, nil
}

// remoteCheckTimeout bounds how long a submit waits to learn whether the cluster answers.
const remoteCheckTimeout = 10 * time.Second

// checkRemote refuses a graph with remote tasks when no cluster is configured or it does
// not answer now (ErrExecutorUnavailable, saying why): nothing is stored then.
func (e *Engine) checkRemote(ctx context.Context) error {
	if e.cfg.Kubernetes == nil {
		return fmt.Errorf("%w: no Kubernetes cluster is configured on this server; start it with --kube-config (or --kube-context), or run the tasks with executor \"local\"", ErrExecutorUnavailable)
	}
	ctx, cancel := context.WithTimeout(ctx, remoteCheckTimeout)
	defer cancel()
	if err := e.cfg.Kubernetes.Check(ctx); err != nil {
		if !errors.Is(err, ErrExecutorUnavailable) {
			err = fmt.Errorf("%w: %w", ErrExecutorUnavailable, err)
		}
		return err
	}
	return nil
}

// adoptLocked builds the in-memory state of a stored graph whose tasks are pending,
// terminal, or remote and running (a graph taken over from a runner that is gone), queues
// the ready ones and skips those whose dependencies can no longer succeed. It returns the
// running remote tasks, each with its slot taken, for launchAll to follow again.
func (e *Engine) adoptLocked(row store.GraphRow, rows []store.TaskRow) []launch {
	g := &graph{row: row, tasks: make([]*task, len(rows))}
	// One allocation for all the graph's tasks: they live and go with the graph, and a
	// graph of 100,000 tasks is then one object for the collector, not 100,000.
	slab := make([]task, len(rows))
	var shape *taskShape
	for i, r := range rows {
		t := &slab[i]
		t.row, t.remote = rowOf(r, shape), r.Executor == string(ExecutorKubernetes)
		shape = t.row.taskShape
		g.tasks[i] = t
	}
	g.byID = slices.Clone(g.tasks)
	slices.SortFunc(g.byID, func(a, b *task) int { return strings.Compare(a.row.ID, b.row.ID) })
	g.linkEdges(rows)
	for _, t := range g.tasks {
		for _, d := range g.depsOf(t) {
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
		return nil
	}
	e.graphs[row.ID] = g
	e.order = append(e.order, g)
	var follow []launch
	for _, t := range g.tasks {
		if State(t.row.Status) == Running && t.remote {
			// Its pod runs on: it holds a slot as a started attempt does, until it is
			// followed again and ends (reattach).
			t.starting = true
			g.running++
			e.pods++
			e.waiters.Add(1)
			follow = append(follow, launch{g: g, t: t, reattach: true})
			continue
		}
		if State(t.row.Status) != Pending {
			continue
		}
		if blocker := g.firstBlocker(t); blocker != nil {
			e.skipLocked(g, t, blocker)
		} else if t.remaining == 0 {
			q := g.queueOf(t)
			*q = append(*q, t)
		}
	}
	return follow
}
