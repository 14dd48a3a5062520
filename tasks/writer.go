package tasks

// This file owns the write queue: every change of a task's state is queued with e.mu held
// (sendLocked), so the queue keeps the order of changes, and one goroutine, the writer's,
// commits whatever has queued up in one transaction. The writer owns that goroutine;
// Engine.Close closes it once nothing can queue any more (see Engine).
//
// A write the database refuses (another process holds its lock past the busy timeout, a
// full disk) is never dropped: the writer keeps the batch and everything queued after it,
// in order, and retries with backoff, saying once that it waits and once that it is
// through. The queue has no bound, so queuing never blocks the engine while the writer
// waits. A task that is to start waits until its running state is written (see
// scheduleLocked), so nothing starts that the database could not record. At shutdown,
// once the deadline has passed with states still unwritten, the writer saves them beside
// the database (store.SaveUnrecorded) and the runner that reconciles this one applies them
// (see reap), so the record ends as this runner saw it.

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
)

// writeItem is one entry of the write queue: a task's new state, a graph that finished
// (to archive once its last state is committed), or a barrier (closed once everything
// queued before it is committed, or saved for the next runner).
type writeItem struct {
	update   *store.TaskUpdate
	finished string
	barrier  chan struct{}
}

// writeQueue is the unbounded queue between the engine and the writer.
type writeQueue struct {
	batchQueue[writeItem]
	// disowned (under the queue's mu) holds the graphs whose state writes the store
	// ignored because another runner owns them now (store.UpdateOwnedTasks). A task is
	// recorded running before it starts (scheduleLocked), so spawn learns from here,
	// without asking the store again, whether the write that let it start was accepted.
	// Only adopted graphs enter it; it is not pruned.
	disowned map[string]bool
}

func (q *writeQueue) disown(ids []string) {
	if len(ids) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.disowned == nil {
		q.disowned = map[string]bool{}
	}
	for _, id := range ids {
		q.disowned[id] = true
	}
}

// isDisowned reports whether the store refused a state of graph id for this runner.
func (q *writeQueue) isDisowned(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.disowned[id]
}

func newWriteQueue() *writeQueue { return &writeQueue{batchQueue: newBatchQueue[writeItem]()} }

// Bounds of the wait between two attempts at a write the database refused. Each attempt
// itself waits up to the store's busy timeout for the lock.
const (
	writeBackoffMin = 50 * time.Millisecond
	writeBackoffMax = 2 * time.Second
)

// maxBatch caps the states committed in one transaction.
const maxBatch = 4096

// sendLocked queues t's current state for the store. Called with e.mu held, so the queue
// holds every task's changes in the order they happened.
func (e *Engine) sendLocked(t *task) {
	e.writer.queue.push(writeItem{update: &store.TaskUpdate{GraphID: t.row.GraphID, TaskID: t.row.ID, TaskState: t.row.state()}})
}

// barrierLocked returns a channel that is closed once everything queued so far is in the
// store (or, past the shutdown deadline, saved for the next runner).
func (e *Engine) barrierLocked() <-chan struct{} {
	ch := make(chan struct{})
	e.writer.queue.push(writeItem{barrier: ch})
	return ch
}

// writer is the goroutine that commits the write queue to the store, with what it runs
// under: ctx, which its transactions run under and which ends when it gives up (so an
// attempt waiting for the lock ends at once), and giveUp, closed when it has had its time
// (or an immediate exit was asked for), which makes it save what it could not write for
// the next runner. What a batch means to the engine (in whose name it is written, who is
// woken once it is) is the engine's: commit, settle and save are its methods.
type writer struct {
	queue  *writeQueue
	log    *slog.Logger
	commit func(ctx context.Context, batch []writeItem) (disowned []string, err error)
	settle func(batch []writeItem, written bool)
	save   func(batch []writeItem, first bool) int

	ctx        context.Context
	cancel     context.CancelFunc
	giveUp     chan struct{}
	giveUpOnce sync.Once
	done       chan struct{} // closed when the goroutine ends: every state is in the store, or saved
}

// startWriter starts the writer of e.
func startWriter(e *Engine) *writer {
	w := &writer{queue: newWriteQueue(), log: e.log, commit: e.commit, settle: e.settle, save: e.saveUnrecorded,
		giveUp: make(chan struct{}), done: make(chan struct{})}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	go w.loop()
	return w
}

// Close closes the queue, so the writer ends once it has written what is queued, and
// waits for it. When ctx ends first the writer still gets finalWriteGrace, which a
// database that is not locked needs to take thousands of states, before it is told to
// give up and save them instead. Nothing may queue states from the call on.
func (w *writer) Close(ctx context.Context) {
	w.queue.close()
	select {
	case <-w.done:
	case <-ctx.Done():
		select {
		case <-w.done:
		case <-time.After(finalWriteGrace):
			w.giveUpNow()
			<-w.done
		}
	}
	w.cancel()
}

// giveUpNow tells the writer to stop waiting for the database and save what it could
// not write (see loop).
func (w *writer) giveUpNow() {
	w.giveUpOnce.Do(func() {
		close(w.giveUp)
		w.cancel() // an attempt waiting on the lock ends now
	})
}

func (w *writer) givenUp() bool {
	select {
	case <-w.giveUp:
		return true
	default:
		return false
	}
}

// loop commits queued state changes, everything queued so far in one transaction, then
// wakes whoever waits on the graphs concerned. It ends once the queue is closed and
// everything in it is written (or saved, see giveUpNow).
func (w *writer) loop() {
	defer close(w.done)
	var (
		pending      []writeItem
		failingSince time.Time
		backoff      = writeBackoffMin
		saved        int
	)
	for {
		items, closed := w.queue.take()
		pending = append(pending, items...)
		if len(pending) == 0 {
			if closed {
				return
			}
			w.queue.wait()
			continue
		}
		if w.givenUp() {
			saved += w.save(pending, saved == 0)
			pending = nil
			continue
		}
		n := min(len(pending), maxBatch)
		disowned, err := w.commit(w.ctx, pending[:n])
		w.queue.disown(disowned) // before settle closes the barriers that wait for this batch
		if err != nil {
			if failingSince.IsZero() {
				failingSince = time.Now()
				w.log.Warn("waiting for the database to record task states: they stay queued, in order, and are retried until it takes them",
					"queued", countUpdates(pending), "err", err)
			}
			timer := time.NewTimer(backoff)
			select {
			case <-timer.C:
			case <-w.giveUp:
				timer.Stop()
			}
			backoff = min(2*backoff, writeBackoffMax)
			continue
		}
		if !failingSince.IsZero() {
			w.log.Info("the database records task states again", "waited", time.Since(failingSince).Round(time.Millisecond))
			failingSince, backoff = time.Time{}, writeBackoffMin
		}
		w.settle(pending[:n], true)
		pending = pending[n:]
		if len(pending) == 0 {
			pending = nil
		}
	}
}

// finalWriteGrace is how long the writer may go on past the shutdown deadline.
const finalWriteGrace = 300 * time.Millisecond

// commit writes the task states of batch in one transaction under ctx, in the name of the
// runner's current epoch (held for the time of the write: see lease.go), and returns the
// graphs whose states the store ignored because another runner owns them now.
func (e *Engine) commit(ctx context.Context, batch []writeItem) ([]string, error) {
	var updates []store.TaskUpdate
	for _, it := range batch {
		if it.update != nil {
			updates = append(updates, *it.update)
		}
	}
	if len(updates) == 0 {
		return nil, nil
	}
	e.epochMu.RLock()
	defer e.epochMu.RUnlock()
	return e.cfg.DB.UpdateOwnedTasks(ctx, e.epoch, updates)
}

// settle does what follows a batch's commit: whoever waits on its graphs is woken, its
// barriers are closed and its finished graphs are handed to the archiver (only once they
// are written: a graph whose states were saved for the next runner is archived by it).
func (e *Engine) settle(batch []writeItem, written bool) {
	seen := map[string]bool{}
	for _, it := range batch {
		if u := it.update; u != nil && !seen[u.GraphID] {
			seen[u.GraphID] = true
			e.changes.fire(u.GraphID)
		}
	}
	for _, it := range batch {
		switch {
		case it.barrier != nil:
			close(it.barrier)
		case it.finished != "" && written:
			e.finishes.fire(it.finished)
			e.spooler.offer(it.finished)
		}
	}
}

// saveUnrecorded saves the states of batch that the database did not take by the
// shutdown deadline, for the next runner (see store.SaveUnrecorded), and returns how many
// it saved.
func (e *Engine) saveUnrecorded(batch []writeItem, first bool) int {
	var updates []store.TaskUpdate
	for _, it := range batch {
		if it.update != nil {
			updates = append(updates, *it.update)
		}
	}
	defer e.settle(batch, false)
	if len(updates) == 0 {
		return 0
	}
	path, err := e.cfg.DB.SaveUnrecorded(e.RunnerID(), updates)
	if err != nil {
		e.log.Error("the database could not be written before the shutdown deadline, nor could the task states be saved for the next runner: they are lost",
			"states", len(updates), "err", err)
		return 0
	}
	if first {
		e.log.Warn("the database could not be written before the shutdown deadline: the task states not yet recorded are saved for the next runner on this workspace to record",
			"states", len(updates), "file", path)
	}
	return len(updates)
}

func countUpdates(items []writeItem) int {
	n := 0
	for _, it := range items {
		if it.update != nil {
			n++
		}
	}
	return n
}
