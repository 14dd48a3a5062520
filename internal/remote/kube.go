package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// KubeExecutor is the helper's Kubernetes executor (package tasks/kube), as a
// tasks.Executor of this process. NewKube makes it without starting the helper; the
// helper makes the executor at its first call.
//
// When the helper died and was started again, the executor is made again in the new one,
// once, by the first call that needs it (the others wait for that one, each within its
// own context). An attempt started through the old helper is taken over in the new one
// by the first call about it that the new one answers "unknown attempt": its Job is
// looked up on the cluster and, if it is there, started again under its identity, which
// follows it and never runs its command twice (kube.Executor.Start); if it is gone, the
// attempt ended as the in-process executor would say it did: NODE_LOST, its Job deleted.
// No lock is held across a call to the helper.
type KubeExecutor struct {
	h   *Helper
	cfg KubeConfig

	mu       sync.Mutex
	id       int64         // the helper's executor; 0 until opened
	gen      int           // the helper generation id belongs to
	opening  chan struct{} // closed when the open in progress is done; nil when none is
	closed   bool
	attempts map[tasks.AttemptID]*remembered // started through this executor, not released
}

// remembered is an attempt started through the executor, as a new helper needs it.
type remembered struct {
	attempt *Attempt
	gen     int  // the generation that follows it; 0 while its first start is in flight
	gone    bool // its Job was gone when a new helper came to take it over
}

// NewKube returns the Kubernetes executor cfg configures, run by h.
func NewKube(h *Helper, cfg KubeConfig) *KubeExecutor {
	return &KubeExecutor{h: h, cfg: cfg, attempts: map[tasks.AttemptID]*remembered{}}
}

// openTimeout bounds the opening of the executor in a helper: a caller without a
// deadline of its own (a wait) must not hold the others up for ever.
const openTimeout = 30 * time.Second

// unavailable wraps err as tasks.ErrExecutorUnavailable, if it is not already.
func unavailable(err error) error {
	if err == nil || errors.Is(err, tasks.ErrExecutorUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", tasks.ErrExecutorUnavailable, err)
}

// executor returns the helper's executor and the generation of the helper it lives in,
// opening it in a helper that does not have it yet.
func (x *KubeExecutor) executor(ctx context.Context) (int64, int, error) {
	for {
		_, gen, err := x.h.connect(true)
		if err != nil {
			return 0, 0, unavailable(err)
		}
		x.mu.Lock()
		switch {
		case x.closed:
			x.mu.Unlock()
			return 0, 0, fmt.Errorf("%w: the Kubernetes executor is closed", tasks.ErrExecutorUnavailable)
		case x.id != 0 && x.gen == gen:
			id := x.id
			x.mu.Unlock()
			return id, gen, nil
		case x.opening != nil:
			wait := x.opening
			x.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return 0, 0, ctx.Err()
			}
		}
		done := make(chan struct{})
		x.opening = done
		x.mu.Unlock()

		octx, cancel := context.WithTimeout(ctx, openTimeout)
		var res KubeResult
		err = x.h.call(octx, PathKubeOpen, x.cfg, &res)
		cancel()
		x.mu.Lock()
		x.opening = nil
		close(done)
		if err == nil {
			x.id, x.gen = res.Executor, gen
		}
		x.mu.Unlock()
		if err != nil {
			return 0, 0, unavailable(err)
		}
		return res.Executor, gen, nil
	}
}

// call makes a kube call for the executor and decodes its answer into out, a
// *KubeResult, or discards it (nil).
func (x *KubeExecutor) call(ctx context.Context, eid int64, path string, c KubeCall, out any) error {
	c.Executor = eid
	return x.h.call(ctx, path, c, out)
}

// about runs call, given the executor's id, for attempt id. When the helper does not
// know the attempt and this executor started it through a helper before this one, the
// attempt is taken over (takeOver) and call runs again, once; errGone says its Job was
// gone by then.
func (x *KubeExecutor) about(ctx context.Context, id tasks.AttemptID, call func(eid int64) error) error {
	for took := false; ; took = true {
		eid, gen, err := x.executor(ctx)
		if err != nil {
			return err
		}
		err = call(eid)
		if took || !errors.Is(err, tasks.ErrUnknownAttempt) {
			return err
		}
		if err := x.takeOver(ctx, id, eid, gen); err != nil {
			return err
		}
	}
}

// errGone reports, to the call that asked about it, an attempt whose Job was gone when a
// new helper came to take it over.
var errGone = errors.New("gone")

// takeOver has executor eid, of helper generation gen, follow attempt id, started through
// an earlier helper. An attempt this executor did not start is left unknown (the error
// the caller had stands), and so is one whose first start is still in flight (that
// start's answer says how it went). errGone says its Job was gone.
func (x *KubeExecutor) takeOver(ctx context.Context, id tasks.AttemptID, eid int64, gen int) error {
	x.mu.Lock()
	r := x.attempts[id]
	switch {
	case r != nil && r.gone:
		x.mu.Unlock()
		return errGone
	case r == nil || r.gen == 0 || r.gen >= gen: // not ours, in flight, or this helper's own
		x.mu.Unlock()
		return fmt.Errorf("%s: %w", id, tasks.ErrUnknownAttempt)
	}
	a := r.attempt
	x.mu.Unlock()

	var st KubeResult
	if err := x.call(ctx, eid, PathKubeStatus, KubeCall{ID: id}, &st); err != nil {
		return unavailable(err)
	}
	gone := st.Status.Phase == tasks.PhaseGone
	if !gone {
		if err := x.call(ctx, eid, PathKubeStart, KubeCall{ID: id, Attempt: a}, nil); err != nil {
			return unavailable(err)
		}
	}
	x.mu.Lock()
	if r := x.attempts[id]; r != nil {
		r.gen, r.gone = max(r.gen, gen), gone
	}
	x.mu.Unlock()
	if gone {
		return errGone
	}
	return nil
}

// goneStatus is how an attempt whose Job was gone when a new helper came to take it over
// ended: as the in-process executor reports a Job deleted under it.
func goneStatus(id tasks.AttemptID) tasks.RunStatus {
	return tasks.RunStatus{ID: id, Phase: tasks.PhaseEnded, Code: tasks.CodeNodeLost,
		Message: fmt.Sprintf("its Job %s was deleted outside mcp-harness while %s was being started again", id, HelperName)}
}

// Name is tasks.ExecutorKubernetes.
func (x *KubeExecutor) Name() tasks.ExecutorName { return tasks.ExecutorKubernetes }

// Check reports whether the cluster answers (kube.Executor.Check).
func (x *KubeExecutor) Check(ctx context.Context) error {
	eid, _, err := x.executor(ctx)
	if err != nil {
		return err
	}
	return x.call(ctx, eid, PathKubeCheck, KubeCall{}, nil)
}

// Start starts a's Job, or takes over the one started under its identity. The attempt is
// remembered before the call, so that a new helper started meanwhile takes it over.
func (x *KubeExecutor) Start(ctx context.Context, a tasks.Attempt) (tasks.Placement, error) {
	wa := AttemptOf(a)
	x.mu.Lock()
	r := x.attempts[a.ID]
	fresh := r == nil
	if fresh {
		r = &remembered{attempt: wa}
		x.attempts[a.ID] = r
	}
	x.mu.Unlock()
	var res KubeResult
	eid, gen, err := x.executor(ctx)
	if err == nil {
		err = x.call(ctx, eid, PathKubeStart, KubeCall{Attempt: wa, ID: a.ID}, &res)
	}
	x.mu.Lock()
	switch {
	case err == nil:
		r.gen, r.gone = max(r.gen, gen), false
	case fresh && x.attempts[a.ID] == r:
		delete(x.attempts, a.ID) // not started: the engine starts it again, or records why not
	}
	x.mu.Unlock()
	return res.Placement, err
}

// Attach follows the attempt's output from byte offset on.
func (x *KubeExecutor) Attach(ctx context.Context, id tasks.AttemptID, offset int64) (io.ReadCloser, error) {
	var body io.ReadCloser
	err := x.about(ctx, id, func(eid int64) (err error) {
		body, err = x.h.post(ctx, PathKubeAttach, KubeCall{Executor: eid, ID: id, Offset: offset})
		return err
	})
	if errors.Is(err, errGone) {
		return nil, fmt.Errorf("%s: %w", id, tasks.ErrUnknownAttempt) // nothing left to read
	}
	return body, err
}

// Wait blocks until the attempt has ended, calling placed as where it runs becomes known.
// A wait cut because the helper died is made again, in the helper started next: the
// attempt runs on in its pod meanwhile.
func (x *KubeExecutor) Wait(ctx context.Context, id tasks.AttemptID, placed func(tasks.Placement)) (tasks.RunStatus, error) {
	delay := waitRetryMin
	for {
		st, err := x.waitOnce(ctx, id, placed)
		if ctx.Err() != nil {
			return tasks.RunStatus{}, ctx.Err()
		}
		if !errors.Is(err, tasks.ErrExecutorUnavailable) {
			return st, err
		}
		select {
		case <-ctx.Done():
			return tasks.RunStatus{}, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, waitRetryMax)
	}
}

// The pauses between a cut wait and the next one, doubling.
const (
	waitRetryMin = 50 * time.Millisecond
	waitRetryMax = 2 * time.Second
)

func (x *KubeExecutor) waitOnce(ctx context.Context, id tasks.AttemptID, placed func(tasks.Placement)) (tasks.RunStatus, error) {
	var st tasks.RunStatus
	err := x.about(ctx, id, func(eid int64) (err error) {
		st, err = x.waitStream(ctx, eid, id, placed)
		return err
	})
	if errors.Is(err, errGone) {
		return goneStatus(id), nil
	}
	return st, err
}

// waitStream makes one wait call and reads its events: where the attempt runs, then how
// it ended, or why the wait failed (an attempt the helper does not know among others).
func (x *KubeExecutor) waitStream(ctx context.Context, eid int64, id tasks.AttemptID, placed func(tasks.Placement)) (tasks.RunStatus, error) {
	body, err := x.h.post(ctx, PathKubeWait, KubeCall{Executor: eid, ID: id})
	if err != nil {
		return tasks.RunStatus{}, err
	}
	defer body.Close()
	dec := json.NewDecoder(bufio.NewReader(body))
	for {
		var ev WaitEvent
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return tasks.RunStatus{}, fmt.Errorf("%w: the wait for %s was cut: %v", tasks.ErrExecutorUnavailable, id, err)
		}
		switch {
		case ev.Error != nil:
			return tasks.RunStatus{}, ev.Error
		case ev.Ended != nil:
			return ev.Ended.Task(), nil
		case ev.Placed != nil && placed != nil:
			placed(*ev.Placed)
		}
	}
}

// Status says how the attempt is now.
func (x *KubeExecutor) Status(ctx context.Context, id tasks.AttemptID) (tasks.RunStatus, error) {
	var res KubeResult
	err := x.about(ctx, id, func(eid int64) error { return x.call(ctx, eid, PathKubeStatus, KubeCall{ID: id}, &res) })
	if errors.Is(err, errGone) {
		return goneStatus(id), nil
	}
	return res.Status.Task(), err
}

// Cancel asks the attempt to stop, forcing it after grace.
func (x *KubeExecutor) Cancel(ctx context.Context, id tasks.AttemptID, grace time.Duration) error {
	err := x.about(ctx, id, func(eid int64) error {
		return x.call(ctx, eid, PathKubeCancel, KubeCall{ID: id, Grace: grace}, nil)
	})
	if errors.Is(err, errGone) {
		return fmt.Errorf("%s: %w", id, tasks.ErrUnknownAttempt) // nothing left to stop
	}
	return err
}

// List reports the attempts of workspace on the cluster.
func (x *KubeExecutor) List(ctx context.Context, workspace string) ([]tasks.RunStatus, error) {
	eid, _, err := x.executor(ctx)
	if err != nil {
		return nil, err
	}
	var res KubeResult
	if err := x.call(ctx, eid, PathKubeList, KubeCall{Workspace: workspace}, &res); err != nil {
		return nil, err
	}
	out := make([]tasks.RunStatus, len(res.Statuses))
	for i, st := range res.Statuses {
		out[i] = st.Task()
	}
	return out, nil
}

// releaseTimeout bounds a release or a close.
const releaseTimeout = 10 * time.Second

// callLive makes the call for the executor, with c.Executor set, if the helper it lives
// in still runs; it never starts a helper (one that died took its executor, and what it
// followed, with it). Release and Close have no context of their own: releaseTimeout
// bounds it.
func (x *KubeExecutor) callLive(path string, c KubeCall) {
	gen, running := x.h.running()
	x.mu.Lock()
	c.Executor = x.id
	live := running && x.id != 0 && x.gen == gen
	x.mu.Unlock()
	if !live {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	x.h.callRunning(ctx, path, c)
}

// Release lets the executor forget the attempt.
func (x *KubeExecutor) Release(id tasks.AttemptID) {
	x.mu.Lock()
	delete(x.attempts, id)
	x.mu.Unlock()
	x.callLive(PathKubeRelease, KubeCall{ID: id})
}

// Close stops the helper's executor watching the namespace (its Jobs run on). The helper
// itself is its owner's to close.
func (x *KubeExecutor) Close() {
	x.mu.Lock()
	x.closed = true
	x.mu.Unlock()
	x.callLive(PathKubeClose, KubeCall{})
}
