package tasks

// This file runs the attempts of remote tasks (a Job's pod on Kubernetes, Config.Kubernetes):
// their start (the graph's snapshot, made once; the executor's Start), following the
// pod's output into the task's own log while it runs (Attach, from the byte the log has),
// their end, and taking them over again: a runner that adopts the graph of a runner that
// is gone does not record a remote task RUNNER_RESTARTED, since its pod runs on; it
// starts the same attempt again, which the executor takes over rather than runs twice,
// and resumes following the log at the byte the log has, so no line is lost or written
// twice.
//
// One writer per log: a follower holds an exclusive lock on the log file (flock) while it
// writes, and works out where to resume from the file's size under that lock. A runner
// that stalled while following, and whose graph another runner adopted meanwhile, holds
// the lock until it notices: the adopter's follower waits for it.
//
// A cluster that does not answer never loses a task: a start that could not reach it puts
// the task back to pending, retried with backoff (its slot let go); a take-over that could
// not reach it keeps the task running and tries again; a cancel is retried until made.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcp-harness/mcp-harness/store"
)

const (
	// remoteCallTimeout bounds one call to the cluster (a Job created, deleted, read).
	remoteCallTimeout = 30 * time.Second
	// remoteRetryMin and remoteRetryMax bound the wait before a call to a cluster that did
	// not answer is made again.
	remoteRetryMin = 500 * time.Millisecond
	remoteRetryMax = 15 * time.Second
	// followDrain bounds how long the rest of an attempt's output may take to arrive
	// once its end is known: the pod's log is read to its end, within this.
	followDrain = 10 * time.Second
	// snapshotTimeout bounds making a graph's workspace snapshot.
	snapshotTimeout = 10 * time.Minute
)

// errRemoteGone reports an attempt to take over whose Job is gone: it cannot be followed
// again, nor told how it ended.
var errRemoteGone = errors.New("remote attempt gone")

// startRemote starts a new attempt of remote task t, whose slot scheduleLocked took.
func (e *Engine) startRemote(g *graph, t *task) []launch { return e.startRemoteAttempt(g, t, false) }

// reattach follows again the running attempt of remote task t of a graph this runner has
// taken over (adoptLocked took its slot).
func (e *Engine) reattach(g *graph, t *task) []launch { return e.startRemoteAttempt(g, t, true) }

func (e *Engine) startRemoteAttempt(g *graph, t *task, again bool) []launch {
	ex := e.cfg.Kubernetes
	e.remoteUsed.Store(true)
	a, err := e.remoteAttempt(g, t, ex)
	var place Placement
	if err == nil {
		ctx, cancel := context.WithTimeout(e.remoteCtx, remoteCallTimeout)
		if again {
			place, err = takeOver(ctx, ex, a, t.row.detail != nil && t.row.detail.Job != nil) // read, not d(): outside the lock
		} else {
			place, err = ex.Start(ctx, a)
		}
		cancel()
	}
	var base int64
	if err == nil {
		base, err = e.attemptBase(g, t, again)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t.starting = false
	switch {
	case errors.Is(err, errAdopted):
		return e.adoptedWhileStartingLocked(g, t)
	case err != nil && !again && t.stopped != nil:
		// Cancelled, or shut down, while it was starting, and it did not start: recorded
		// as a pending task is.
		e.releaseSlotLocked(g, t)
		e.waiters.Done()
		t.row.Attempt--
		if t.row.Attempt == 0 {
			t.row.d().StartedAt = nil
		}
		e.finishLocked(g, t, outcome{state: Cancelled, code: t.stopped.code, message: t.stopped.reason})
		return e.scheduleLocked()
	case again && errors.Is(err, errRemoteGone):
		e.releaseSlotLocked(g, t)
		e.waiters.Done()
		e.finishLocked(g, t, outcome{state: Failed, code: CodeRunnerRestarted, message: err.Error()})
		return e.scheduleLocked()
	case again && err != nil && !e.closed:
		// The cluster did not answer: the task keeps its slot and runs on as recorded;
		// taking it over is tried again.
		e.log.Warn("cannot follow a remote task taken over yet; trying again", "graph", g.row.ID, "task", t.row.ID, "err", err)
		t.starting = true
		e.retryLaterLocked(launch{g: g, t: t, reattach: true})
		return nil
	case again && err != nil:
		e.releaseSlotLocked(g, t)
		e.waiters.Done()
		e.finishLocked(g, t, outcome{state: Failed, code: CodeRunnerShutdown, message: "the server shut down before it could follow the task's pod again: " + err.Error()})
		return e.scheduleLocked()
	case errors.Is(err, ErrExecutorUnavailable):
		return e.deferStartLocked(g, t, err)
	case err != nil:
		e.startFailedLocked(g, t, err)
		return e.scheduleLocked()
	}
	run := newAttemptRun(ex, a.ID, true)
	t.run = run
	if e.graphs[g.row.ID] != g {
		run.stop() // forgotten meanwhile: the adopter follows it
	}
	t.row.d().Job = strPtr(place.Job)
	t.row.d().LogStart = &base
	if !again {
		t.row.d().Message = nil
	}
	e.sendLocked(t)
	// The follower writes nothing before the attempt's start in the log is recorded: a
	// runner that takes the graph over resumes from it.
	recorded := e.barrierLocked()
	e.armTimeoutLocked(g, t)
	if t.stopped != nil { // cancelled, or shut down, while it was starting
		e.terminateLocked(t, e.cfg.KillGrace)
	}
	go e.waitRemote(g, t, run, base, recorded)
	return nil
}

// takeOver starts attempt a again on ex, to follow it: ex takes over the attempt it
// runs. A Job recorded once (recorded) and gone now is errRemoteGone: starting it again
// would run the command a second time.
func takeOver(ctx context.Context, ex Executor, a Attempt, recorded bool) (Placement, error) {
	st, err := ex.Status(ctx, a.ID)
	if err != nil && !errors.Is(err, ErrUnknownAttempt) {
		return Placement{}, err
	}
	if recorded && (errors.Is(err, ErrUnknownAttempt) || st.Phase == PhaseGone) {
		return Placement{}, fmt.Errorf("%w: its %s was gone when this server took the graph over, so how it ended is unknown", errRemoteGone, describeJob(st))
	}
	return ex.Start(ctx, a)
}

func describeJob(st RunStatus) string {
	if st.Placement.Job != "" {
		return "Job " + st.Placement.Job
	}
	return "Job"
}

// remoteAttempt is the attempt of t to start (or take over) on ex.
func (e *Engine) remoteAttempt(g *graph, t *task, ex Executor) (Attempt, error) {
	if e.writer.queue.isDisowned(g.row.ID) { // see localAttempt
		return Attempt{}, errAdopted
	}
	if ex == nil {
		return Attempt{}, fmt.Errorf("%w: no Kubernetes cluster is configured on this server (start it with --kube-config or --kube-context)", ErrExecutorUnavailable)
	}
	ctx, cancel := context.WithTimeout(e.remoteCtx, snapshotTimeout)
	defer cancel()
	snap, err := e.graphSnapshot(ctx, g)
	if err != nil {
		return Attempt{}, err
	}
	cwd, err := filepath.Rel(e.cfg.Workspace.Root, t.row.Cwd)
	if err != nil || cwd == "." {
		cwd = ""
	}
	return Attempt{
		ID: e.attemptID(g, t), Runner: e.RunnerID(), Command: t.row.Command, Cwd: filepath.ToSlash(cwd),
		Env:       append(podEnv(mergeEnv(e.env, t.row.Env)), taskMarker(g.row.ID, t.row.ID)),
		Resources: Resources{CPU: t.row.CPU, Memory: t.row.Memory},
		Snapshot:  snap,
	}, nil
}

// hostNames are the variables that describe this machine, not a pod: a pod gets its own
// from its image and the cluster (its PATH, HOME, user, host name, temporary directory),
// so the server's are not passed on.
var hostNames = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true, "PWD": true, "OLDPWD": true,
	"SHLVL": true, "HOSTNAME": true, "TMPDIR": true, "TERM": true, "DISPLAY": true, "XAUTHORITY": true,
	"MAIL": true, "_": true, "SSH_AUTH_SOCK": true, "SSH_AGENT_PID": true, "SSH_CONNECTION": true,
	"SSH_CLIENT": true, "SSH_TTY": true, "DBUS_SESSION_BUS_ADDRESS": true, "WAYLAND_DISPLAY": true,
	"KUBECONFIG": true, "TMUX": true, "TMUX_PANE": true, "STY": true, "WINDOWID": true, "COLORTERM": true,
}

// podEnv is env (the environment a local task gets: the server's as the env policy
// passes it on, the task defaults and the task's own) less what describes this machine
// (hostNames, XDG_* and the server's own MCP_HARNESS_*), unless the task set it itself:
// a task's own env always reaches its pod.
func podEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if hostNames[name] || strings.HasPrefix(name, "XDG_") || strings.HasPrefix(name, "MCP_HARNESS_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// attemptBase is where the attempt's output starts in t's log: for a new attempt, the
// log's end, after a retry's marker line (written here: the follower writes the rest);
// for one taken over, where the runner that started it recorded it (or the log's end, if
// it did not get to: its follower wrote nothing before that record, see above).
func (e *Engine) attemptBase(g *graph, t *task, again bool) (int64, error) {
	// The detail is read as it is, not through d(): this runs outside the engine's lock.
	if d := t.row.detail; again && d != nil && d.LogStart != nil {
		return *d.LogStart, nil
	}
	f, err := openLog(e.LogPath(g.row.ID, t.row.ID))
	if err != nil {
		return 0, fmt.Errorf("cannot open the log: %v", err)
	}
	defer f.Close()
	if !again && t.row.Attempt > 1 {
		io.WriteString(f, attemptHeader(t))
	}
	return f.Seek(0, io.SeekCurrent)
}

// deferStartLocked puts t back to pending: its executor could not be reached, so nothing
// was started. The slot is let go, and the task is queued again after a while.
func (e *Engine) deferStartLocked(g *graph, t *task, err error) []launch {
	e.releaseSlotLocked(g, t)
	e.waiters.Done()
	t.row.Attempt--
	if t.row.Attempt == 0 {
		t.row.d().StartedAt = nil
	}
	t.row.Status = string(Pending)
	msg := "waiting for the cluster to answer: " + err.Error()
	t.row.d().Message = &msg
	e.sendLocked(t)
	e.log.Warn("a remote task could not be started: the cluster did not answer; it stays pending and is tried again",
		"graph", g.row.ID, "task", t.row.ID, "err", err)
	t.deferrals++
	delay := min(remoteRetryMin<<min(t.deferrals, 5), remoteRetryMax)
	time.AfterFunc(delay, func() {
		e.mu.Lock()
		if e.graphs[g.row.ID] != g || State(t.row.Status) != Pending || e.closed {
			e.mu.Unlock()
			return
		}
		q := g.queueOf(t)
		*q = append([]*task{t}, *q...)
		next := e.scheduleLocked()
		e.mu.Unlock()
		e.launchAll(next)
	})
	return e.scheduleLocked()
}

// retryLaterLocked launches l again after a while (a take-over the cluster did not
// answer); l keeps its slot and its count of e.waiters meanwhile.
func (e *Engine) retryLaterLocked(l launch) {
	l.t.deferrals++
	delay := min(remoteRetryMin<<min(l.t.deferrals, 5), remoteRetryMax)
	go func() {
		select {
		case <-time.After(delay):
		case <-e.remoteCtx.Done(): // the shutdown ran out of time: recorded at once
		}
		e.launchAll([]launch{l})
	}()
}

// waitRemote follows a remote attempt until it ends, its output into the task's log, and
// records its end.
func (e *Engine) waitRemote(g *graph, t *task, run *attemptRun, base int64, recorded <-chan struct{}) {
	defer e.waiters.Done() // taken by scheduleLocked (or adoptLocked)
	f := e.follow(run, e.LogPath(g.row.ID, t.row.ID), base, recorded)
	st, err := run.ex.Wait(run.ctx, run.id, func(p Placement) { e.placed(t, run, p) })
	if err != nil {
		// No longer followed: the graph went to another runner, or the shutdown ran out
		// of time after asking the pod to stop. Recorded as it is (an adopter's record
		// wins: the store takes no state from a runner that lost the graph).
		st = RunStatus{ID: run.id, Phase: PhaseEnded, Code: CodeRunnerShutdown, Message: "the server stopped following the task's pod: " + err.Error()}
	}
	f.finish(followDrain)
	e.ended(g, t, run, st)
}

// placed records where a remote attempt runs, as its executor learns it.
func (e *Engine) placed(t *task, run *attemptRun, p Placement) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.run != run {
		return
	}
	changed := false
	for _, f := range []struct {
		dst **string
		v   string
	}{{&t.row.d().Job, p.Job}, {&t.row.d().Pod, p.Pod}, {&t.row.d().Node, p.Node}} {
		if f.v != "" && (*f.dst == nil || **f.dst != f.v) {
			*f.dst = strPtr(f.v)
			changed = true
		}
	}
	if changed {
		e.sendLocked(t)
	}
}

// cancelRemote asks a remote attempt to stop, again and again until the executor takes
// the request (a cluster that does not answer) or the attempt has ended.
func (e *Engine) cancelRemote(run *attemptRun, grace time.Duration) {
	delay := remoteRetryMin
	for {
		ctx, cancel := context.WithTimeout(e.remoteCtx, remoteCallTimeout)
		err := run.ex.Cancel(ctx, run.id, grace)
		cancel()
		if err == nil || errors.Is(err, ErrUnknownAttempt) {
			return
		}
		e.log.Warn("cannot stop a remote task yet; trying again", "attempt", run.id.String(), "err", err)
		select {
		case <-run.done:
			return
		case <-run.ctx.Done():
			return
		case <-e.remoteCtx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, remoteRetryMax)
	}
}

// follower copies a remote attempt's output into the task's log, resuming after what the
// log has whenever the stream breaks, until the attempt has ended and its output is read.
type follower struct {
	e      *Engine
	run    *attemptRun
	path   string
	base   int64
	ctx    context.Context
	cancel context.CancelFunc
	ended  chan struct{} // closed by finish: the attempt has ended
	done   chan struct{} // closed when the loop returned
}

func (e *Engine) follow(run *attemptRun, path string, base int64, recorded <-chan struct{}) *follower {
	ctx, cancel := context.WithCancel(run.ctx)
	f := &follower{e: e, run: run, path: path, base: base, ctx: ctx, cancel: cancel,
		ended: make(chan struct{}), done: make(chan struct{})}
	go f.loop(recorded)
	return f
}

// finish says the attempt has ended and waits for the rest of its output, at most d.
func (f *follower) finish(d time.Duration) {
	close(f.ended)
	select {
	case <-f.done:
	case <-time.After(d):
		f.e.log.Warn("the end of a remote task's output did not arrive in time; its log may miss its last lines", "attempt", f.run.id.String())
		f.cancel()
		<-f.done
	}
	f.cancel()
}

func (f *follower) loop(recorded <-chan struct{}) {
	defer close(f.done)
	select {
	case <-recorded:
	case <-f.ctx.Done():
		return
	}
	log, err := os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		f.e.log.Error("cannot open a remote task's log: its output is not recorded", "attempt", f.run.id.String(), "err", err)
		return
	}
	defer log.Close()
	if err := lockFile(f.ctx, log); err != nil {
		return
	}
	delay := remoteRetryMin
	for {
		endedBefore := isClosed(f.ended)
		size, err := log.Seek(0, io.SeekEnd)
		if err != nil {
			f.e.log.Error("cannot read a remote task's log", "attempt", f.run.id.String(), "err", err)
			return
		}
		if size < f.base { // a log shorter than where the attempt started: not ours to fix
			f.e.log.Error("a remote task's log is shorter than where its attempt started; not following it", "attempt", f.run.id.String(), "size", size, "start", f.base)
			return
		}
		rc, err := f.run.ex.Attach(f.ctx, f.run.id, size-f.base)
		if err == nil {
			_, err = io.Copy(log, rc)
			rc.Close()
		}
		switch {
		case f.ctx.Err() != nil:
			return
		case err == nil && endedBefore:
			return // a stream opened after the end reached its end: the output is whole
		case err != nil && endedBefore && errors.Is(err, ErrUnknownAttempt):
			return // ended and gone: nothing more to read
		case err == nil:
			// The stream ended before the end was known here: wait for it (or a moment,
			// in case the stream broke), then read what may have come since.
			select {
			case <-f.ended:
			case <-time.After(2 * time.Second):
			case <-f.ctx.Done():
				return
			}
			delay = remoteRetryMin
		default:
			f.e.log.Debug("following a remote task's output broke off; resuming", "attempt", f.run.id.String(), "err", err)
			select {
			case <-time.After(delay):
			case <-f.ctx.Done():
				return
			}
			delay = min(2*delay, remoteRetryMax)
		}
	}
}

// lockFile takes an exclusive lock on f (flock), waiting for it until ctx ends: one
// follower writes a log at a time.
func lockFile(ctx context.Context, f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// sweepRemote stops the remote attempts of this workspace that nothing follows any more:
// a Job still running whose task the store has ended (a runner told to exit at once, which
// recorded its tasks and could not wait for their pods), or has gone past (a later
// attempt), or does not know. Attempts that ended are left to their Job's TTL.
//
// A runner records an attempt as running only after its Job was created (the store is
// written once the start returns), so a Job found a moment after its creation may not be
// in the store yet: the attempts this engine starts or follows are never stopped, and any
// other is stopped only when two sweeps in a row (reconcileEvery apart) find it
// unfollowed. prev is what the previous sweep found unfollowed; it returns what this one
// found, for the next.
func (e *Engine) sweepRemote(ctx context.Context, prev map[AttemptID]bool) (map[AttemptID]bool, error) {
	ex := e.cfg.Kubernetes
	if ex == nil || !e.remoteUsed.Load() {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, remoteCallTimeout)
	defer cancel()
	runs, err := ex.List(ctx, e.workspaceID)
	if err != nil {
		return prev, err
	}
	unfollowed := map[AttemptID]bool{}
	for _, st := range runs {
		if st.Phase == PhaseEnded || st.Phase == PhaseGone || e.holdsRemote(st.ID) {
			continue
		}
		status, attempt, err := e.cfg.DB.TaskAttempt(ctx, st.ID.GraphID, st.ID.TaskID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return prev, err
		}
		if err == nil && State(status) == Running && attempt == st.ID.Attempt {
			continue // followed by its runner, this one or another
		}
		unfollowed[st.ID] = true
		if !prev[st.ID] {
			continue // maybe just created by another runner: stopped if the next sweep agrees
		}
		e.log.Info("stopping a remote attempt nothing follows any more", "attempt", st.ID.String(), "job", st.Placement.Job, "task status", status)
		if err := ex.Cancel(ctx, st.ID, e.cfg.KillGrace); err != nil && !errors.Is(err, ErrUnknownAttempt) {
			return prev, err
		}
	}
	return unfollowed, nil
}

// holdsRemote reports whether this engine starts or follows remote attempt id now.
func (e *Engine) holdsRemote(id AttemptID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := e.graphs[id.GraphID]
	if g == nil {
		return false
	}
	t := g.task(id.TaskID)
	return t != nil && t.remote && t.row.Attempt == id.Attempt && (t.starting || t.run != nil)
}
