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
// helper makes the executor at its first call. When the helper died and was started again,
// the executor is made again in the new one, and takes over the attempts started through
// it and not released (by their identity, as the engine takes over a graph's: Start never
// runs a command twice), before any other call.
type KubeExecutor struct {
	h   *Helper
	cfg KubeConfig

	mu       sync.Mutex
	id       int64 // the helper's executor; 0 until opened
	gen      int   // the helper's generation it was opened in
	closed   bool
	attempts map[tasks.AttemptID]*Attempt // started, not released
}

// NewKube returns the Kubernetes executor cfg configures, run by h.
func NewKube(h *Helper, cfg KubeConfig) *KubeExecutor {
	return &KubeExecutor{h: h, cfg: cfg, attempts: map[tasks.AttemptID]*Attempt{}}
}

// executor returns the helper's executor, opening it (and taking over the attempts) in a
// helper that does not have it yet.
func (x *KubeExecutor) executor(ctx context.Context) (int64, error) {
	_, gen, err := x.h.connect()
	if err != nil {
		if !errors.Is(err, tasks.ErrExecutorUnavailable) {
			err = fmt.Errorf("%w: %w", tasks.ErrExecutorUnavailable, err)
		}
		return 0, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return 0, fmt.Errorf("%w: the Kubernetes executor is closed", tasks.ErrExecutorUnavailable)
	}
	if x.id != 0 && x.gen == gen {
		return x.id, nil
	}
	var res KubeResult
	if err := x.h.call(ctx, PathKubeOpen, x.cfg, &res); err != nil {
		return 0, err
	}
	for _, a := range x.attempts {
		c := KubeCall{Executor: res.Executor, ID: a.ID}
		var st KubeResult
		err := x.h.call(ctx, PathKubeStatus, c, &st)
		if errors.Is(err, tasks.ErrUnknownAttempt) || err == nil && st.Status.Phase == tasks.PhaseGone {
			continue // its Job is gone: starting it again would run it twice; the calls about it say it is unknown
		}
		if err == nil {
			c.Attempt = a
			err = x.h.call(ctx, PathKubeStart, c, nil)
		}
		if err != nil {
			return 0, fmt.Errorf("%w: taking over %s in a new %s: %w", tasks.ErrExecutorUnavailable, a.ID, HelperName, err)
		}
	}
	x.id, x.gen = res.Executor, gen
	return x.id, nil
}

// do makes a kube call for the executor.
func (x *KubeExecutor) do(ctx context.Context, path string, c KubeCall, out *KubeResult) error {
	id, err := x.executor(ctx)
	if err != nil {
		return err
	}
	c.Executor = id
	if out == nil {
		return x.h.call(ctx, path, c, nil)
	}
	return x.h.call(ctx, path, c, out)
}

// Name is tasks.ExecutorKubernetes.
func (x *KubeExecutor) Name() tasks.ExecutorName { return tasks.ExecutorKubernetes }

// Check reports whether the cluster answers (kube.Executor.Check).
func (x *KubeExecutor) Check(ctx context.Context) error {
	return x.do(ctx, PathKubeCheck, KubeCall{}, nil)
}

// Start starts a's Job, or takes over the one started under its identity.
func (x *KubeExecutor) Start(ctx context.Context, a tasks.Attempt) (tasks.Placement, error) {
	var res KubeResult
	err := x.do(ctx, PathKubeStart, KubeCall{Attempt: AttemptOf(a), ID: a.ID}, &res)
	if err == nil {
		x.mu.Lock()
		x.attempts[a.ID] = AttemptOf(a)
		x.mu.Unlock()
	}
	return res.Placement, err
}

// Attach follows the attempt's output from byte offset on.
func (x *KubeExecutor) Attach(ctx context.Context, id tasks.AttemptID, offset int64) (io.ReadCloser, error) {
	eid, err := x.executor(ctx)
	if err != nil {
		return nil, err
	}
	return x.h.post(ctx, PathKubeAttach, KubeCall{Executor: eid, ID: id, Offset: offset})
}

// Wait blocks until the attempt has ended, calling placed as where it runs becomes known.
// A wait cut because the helper died is made again, in the helper started next: the
// attempt runs on in its pod meanwhile.
func (x *KubeExecutor) Wait(ctx context.Context, id tasks.AttemptID, placed func(tasks.Placement)) (tasks.RunStatus, error) {
	delay := waitRetryMin
	for {
		st, err := x.waitOnce(ctx, id, placed)
		if err == nil || ctx.Err() != nil || !errors.Is(err, tasks.ErrExecutorUnavailable) {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
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
	eid, err := x.executor(ctx)
	if err != nil {
		return tasks.RunStatus{}, err
	}
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
	err := x.do(ctx, PathKubeStatus, KubeCall{ID: id}, &res)
	return res.Status.Task(), err
}

// Cancel asks the attempt to stop, forcing it after grace.
func (x *KubeExecutor) Cancel(ctx context.Context, id tasks.AttemptID, grace time.Duration) error {
	return x.do(ctx, PathKubeCancel, KubeCall{ID: id, Grace: int64(grace)}, nil)
}

// List reports the attempts of workspace on the cluster.
func (x *KubeExecutor) List(ctx context.Context, workspace string) ([]tasks.RunStatus, error) {
	var res KubeResult
	if err := x.do(ctx, PathKubeList, KubeCall{Workspace: workspace}, &res); err != nil {
		return nil, err
	}
	out := make([]tasks.RunStatus, len(res.Statuses))
	for i, st := range res.Statuses {
		out[i] = st.Task()
	}
	return out, nil
}

// releaseTimeout bounds a release: it has no context of its own.
const releaseTimeout = 10 * time.Second

// Release lets the helper forget the attempt.
func (x *KubeExecutor) Release(id tasks.AttemptID) {
	x.mu.Lock()
	delete(x.attempts, id)
	opened := x.id != 0
	x.mu.Unlock()
	if !opened {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	x.do(ctx, PathKubeRelease, KubeCall{ID: id}, nil)
}

// Close stops the helper's executor watching the namespace (its Jobs run on). The helper
// itself is its owner's to close.
func (x *KubeExecutor) Close() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.closed = true
	if x.id == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	x.h.call(ctx, PathKubeClose, KubeCall{Executor: x.id}, nil)
	x.id = 0
}
