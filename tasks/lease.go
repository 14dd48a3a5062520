package tasks

// This file owns the runner's hold on the workspace: its epoch (the runner id every store
// write of this engine is made in the name of), the lease it renews (lease, its loop), and what
// happens when the lease turns out lost: the engine registers again as a new runner, keeps
// the graphs it still owns and forgets the ones a peer adopted (recoverLocked).
//
// A runner loses its lease by stalling past it (SIGSTOP, a debugger, a frozen cgroup, heavy
// swapping): a peer then judges it gone and adopts its graphs, marking it stopped in the
// same transaction (store.AdoptGraphs). When it wakes, nothing it does in the old epoch's
// name counts any more: the store refuses a graph stored for a stopped runner
// (store.ErrLeaseLost), state writes for graphs it no longer owns are ignored, and spawn
// checks the owner before a task starts. So the first thing that notices (a renewal, a
// Submit, a reconciliation) re-registers, and nothing is accepted meanwhile.
//
// Locks: epochMu is held for reading by everything that writes to the store in the
// runner's name and must not straddle a change of epoch (a batch of the writer, Submit
// from storing a graph until it is in memory, an adoption, the owner check before a
// start), and for writing while the epoch changes. It is always taken before e.mu, never
// while e.mu is held. lease.mu serialises renewals and re-registrations and guards the
// lease's bookkeeping.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
)

// DefaultLease is how long a runner counts as alive after renewing its lease; it renews it
// every third of that. Other runners take over its graphs only after it expired (and
// StaleAfter more, while its process exists) or its process is provably dead, so it is a
// trade between how fast a crash is noticed and how long a stalled process is trusted.
const DefaultLease = 15 * time.Second

// DefaultStaleAfter is how long past its lease a runner whose process still exists must
// stay silent before it counts as gone. A process that exists but does not renew its
// lease has stalled (stopped, or the machine slept); when the machine wakes, every lease
// on it has expired at once, and a runner that wakes a moment before another must not take
// over graphs whose runner is about to renew.
const DefaultStaleAfter = 30 * time.Second

// RunnerID is the runner this engine acts as now. It changes when the runner lost its lease
// and registered again (see lease.go).
func (e *Engine) RunnerID() string {
	e.epochMu.RLock()
	defer e.epochMu.RUnlock()
	return e.epoch
}

// lease is the runner's lease as this engine keeps it: the goroutine that renews it, and
// what the renewals found. mu serialises renewals and re-registrations (keepLease) and
// guards the rest.
type lease struct {
	*loop
	mu           sync.Mutex
	renewedAt    time.Time // the last renewal of the lease that succeeded
	backSince    time.Time // when the lease was last renewed after a lapse
	renewFailing bool      // renewals fail for a reason other than a lost lease (logged once)
}

// leaseLoop renews the lease every third of it until ctx ends.
func (e *Engine) leaseLoop(ctx context.Context) {
	t := time.NewTicker(e.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := e.keepLease(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn("keeping this runner's lease", "err", err)
		}
	}
}

// keepLease renews the lease, or, when the store says it is lost, registers again as a new
// runner. A renewal that fails otherwise (the database locked by another process) is
// retried at the next tick; it is logged once per outage.
func (e *Engine) keepLease(ctx context.Context) error {
	e.lease.mu.Lock()
	defer e.lease.mu.Unlock()
	id := e.RunnerID()
	err := e.cfg.DB.RenewLease(ctx, id, e.cfg.Lease)
	now := time.Now()
	switch {
	case err == nil:
		if gap := now.Sub(e.lease.renewedAt); gap > e.cfg.Lease {
			// This runner could not renew for longer than its lease: stalled, or the
			// database was locked. Its peers probably could not renew either; they get a
			// lease's time to do so before this runner judges anyone by silence.
			e.lease.backSince = now
			e.log.Warn("this runner's lease lapsed and is renewed again", "without renewal", gap.Round(time.Millisecond))
		}
		if e.lease.renewFailing {
			e.log.Info("lease renewed again")
			e.lease.renewFailing = false
		}
		e.lease.renewedAt = now
		return nil
	case errors.Is(err, store.ErrLeaseLost) && e.cfg.Only != "":
		e.lostOnce.Do(func() { close(e.lost) })
		return err
	case errors.Is(err, store.ErrLeaseLost):
		return e.recoverLocked(ctx)
	case ctx.Err() != nil:
		return nil
	}
	if !e.lease.renewFailing {
		e.lease.renewFailing = true
		return fmt.Errorf("cannot renew the lease yet, retrying every %s: %w", e.cfg.Lease/3, err)
	}
	return nil
}

// judgesBySilence reports whether this runner may judge another gone by its silence: only
// once it has held its own lease without a lapse for a whole lease (see keepLease).
func (e *Engine) judgesBySilence(now time.Time) bool {
	e.lease.mu.Lock()
	defer e.lease.mu.Unlock()
	return now.Sub(e.lease.backSince) >= e.cfg.Lease
}

// recoverLocked registers this process again as a new runner after its lease was lost, in
// one transaction with the hand-over (store.Reregister): the graphs the old epoch still
// owns move to the new one (with those whose last states are still queued, the writer
// then writes them in the new epoch's name); the others were adopted by a peer, which runs
// them now, so they are forgotten here (what is left of their processes is killed: the
// adopter recorded them RUNNER_RESTARTED). A runner shutting down does not register again.
// Called with lease.mu held.
func (e *Engine) recoverLocked(ctx context.Context) error {
	e.epochMu.Lock()
	old := e.epoch
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		e.epochMu.Unlock()
		return ErrClosed
	}
	r, moved, err := e.cfg.DB.Reregister(ctx, old, e.cfg.Version, e.cfg.Lease)
	if err != nil {
		e.epochMu.Unlock()
		return err
	}
	e.epoch = r.ID
	e.mu.Lock()
	var forgotten []string
	for _, g := range slices.Clone(e.order) {
		if !slices.Contains(moved, g.row.ID) {
			forgotten = append(forgotten, g.row.ID)
			e.forgetLocked(g)
		}
	}
	for _, g := range e.order {
		g.row.RunnerID = r.ID
	}
	next := e.scheduleLocked()
	e.mu.Unlock()
	e.epochMu.Unlock()
	now := time.Now()
	e.lease.renewedAt, e.lease.backSince, e.lease.renewFailing = now, now, false
	e.log.Warn("this runner lost its lease (it stalled and another runner judged it gone); it registered again as a new runner",
		"old", old, "new", r.ID, "graphs kept", len(moved), "graphs left to the runner that adopted them", forgotten)
	go e.launchAll(next)
	return nil
}
