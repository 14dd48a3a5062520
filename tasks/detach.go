package tasks

// This file owns detached graphs: a graph run by a runner process of its own, which
// outlives the server (and the client) that accepted it.
//
// The hand-over goes through the store. SubmitDetached stores the graph in this runner's
// name, as Submit does, but does not take it into memory; it starts a detached runner
// (Config.RunnerCommand: the same binary's hidden "runner" subcommand, in a session of its
// own, stdin and stdout /dev/null) and waits until that runner has claimed the graph
// (store.ClaimGraph: the owner moves from this runner to it, in one transaction) and said
// so on a pipe (fd 3). Until the claim the graph is this runner's but not in its memory,
// so this runner's clean shutdown leaves it alone; a runner that dies meanwhile is
// reconciled as usual (a live server adopts the graph, the claim then fails and the
// detached runner exits). When no runner claims it within claimTimeout (or it dies
// first), the runner is killed and reaped, and the graph runs in this server instead, as
// if it had not been detached.
//
// The detached runner (Config.Only) is an ordinary runner for that one graph: its lease,
// heartbeat and fencing, cancel requests, retries and timeouts are the engine's. It does
// not reconcile other runners: its graph, if it dies, is adopted by whichever live server
// on the workspace reconciles it next (or the next one to start), like any graph of a
// gone runner. It reports when it has nothing left to run (Idle) and when its lease is
// lost (Lost); the caller then closes it and exits.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// claimTimeout bounds how long SubmitDetached waits for the detached runner's claim.
const claimTimeout = 10 * time.Second

// ClaimedMessage is what a detached runner writes on fd 3 once it has claimed its graph.
const ClaimedMessage = "claimed\n"

// ErrNoDetach reports a detached submit to an engine that cannot start runners.
var ErrNoDetach = errors.New("graphs cannot run detached here")

// SubmitDetached is Submit for a graph run by a detached runner of its own. Submitted's
// Detached says whether one claimed it; when none could, the graph runs in this server.
func (e *Engine) SubmitDetached(ctx context.Context, spec Spec) (Submitted, error) {
	if len(e.cfg.RunnerCommand) == 0 {
		return Submitted{}, ErrNoDetach
	}
	return e.submit(ctx, spec, true)
}

// handOver starts a detached runner for graphID, stored in the name of runner from, and
// reports whether it claimed the graph. When it did not, the runner is killed and reaped
// before handOver returns, so it cannot claim it later.
func (e *Engine) handOver(ctx context.Context, graphID, from string) bool {
	err := e.startRunner(ctx, graphID, from)
	if err == nil {
		e.log.Info("a detached runner claimed the graph", "graph", graphID)
		return true
	}
	g, gerr := e.cfg.DB.GetGraph(context.WithoutCancel(ctx), graphID)
	if gerr == nil && g.RunnerID != from && g.RunnerID != e.RunnerID() {
		// It claimed the graph and died before it said so: the graph is that runner's,
		// and reconciled like any graph of a gone runner.
		return true
	}
	e.log.Warn("no detached runner claimed the graph; it runs in this server", "graph", graphID, "err", err)
	return false
}

func (e *Engine) startRunner(ctx context.Context, graphID, from string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start a detached runner: %w", err)
	}
	defer r.Close()
	argv := append(append([]string(nil), e.cfg.RunnerCommand...), "--graph", graphID, "--from", from)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.ExtraFiles = []*os.File{w} // fd 3
	// A session of its own: the client's process group, its terminal and the signals sent
	// to them do not reach it. No parent-death signal: it is to outlive this process.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("start a detached runner: %w", err)
	}
	reaped := make(chan struct{})
	go func() { cmd.Wait(); close(reaped) }() // reaped when it exits, while this process lives
	r.SetReadDeadline(time.Now().Add(claimTimeout))
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, len(ClaimedMessage))
		_, err := io.ReadFull(r, buf)
		if err == nil && string(buf) != ClaimedMessage {
			err = fmt.Errorf("unexpected message %q", buf)
		}
		done <- err
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil {
		return nil
	}
	cmd.Process.Kill()
	<-reaped
	return fmt.Errorf("the detached runner (pid %d) did not claim the graph: %w", cmd.Process.Pid, err)
}

// Claim takes graphID over from runner from, which stored it for this detached runner,
// and starts it.
func (e *Engine) Claim(ctx context.Context, graphID, from string) error {
	e.epochMu.RLock()
	g, err := e.cfg.DB.ClaimGraph(ctx, graphID, from, e.epoch)
	if err != nil {
		e.epochMu.RUnlock()
		return err
	}
	rows, err := e.cfg.DB.GraphTasks(context.WithoutCancel(ctx), graphID)
	if err != nil {
		e.epochMu.RUnlock()
		return err
	}
	e.mu.Lock()
	next := e.adoptLocked(g, rows) // stored for this runner just now: nothing runs yet
	if ag := e.graphs[graphID]; ag != nil && e.closed {
		e.shutdownGraphLocked(ag)
	}
	next = append(next, e.scheduleLocked()...)
	e.idleIfDoneLocked()
	e.mu.Unlock()
	e.epochMu.RUnlock()
	go e.launchAll(next)
	e.changes.fire(graphID)
	e.finishes.fire(graphID) // a wait on it may now wait for this runner's finish
	return nil
}

// Idle is closed once a detached runner has run its graph to the end.
func (e *Engine) Idle() <-chan struct{} { return e.idle }

// Lost is closed once a detached runner's lease is lost: a server judged it gone and
// adopted its graph.
func (e *Engine) Lost() <-chan struct{} { return e.lost }

func (e *Engine) idleIfDoneLocked() {
	if e.cfg.Only != "" && len(e.graphs) == 0 {
		e.idleOnce.Do(func() { close(e.idle) })
	}
}

// reconcileUnlessOnly reconciles gone runners, unless this is a detached runner: the
// servers do that.
func (e *Engine) reconcileUnlessOnly(ctx context.Context) error {
	if e.cfg.Only != "" {
		return nil
	}
	return e.Reconcile(ctx)
}
