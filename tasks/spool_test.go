package tasks

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// Two engines in one process (the server and the CLI's, or two in a test): one engine's
// Close must not end a thread that forked the other's running tasks, which run with
// Pdeathsig and would be killed with it (see the archiver in spool.go). Each round, the
// engine that stays starts tasks that keep running, and another engine archives a graph
// (on the archiver's thread) and closes; the runtime forks on whatever thread is at hand,
// so over the rounds the archiver's thread has forked some of them.
func TestEngine_ClosingAnEngineKeepsAnotherEnginesTasksRunning(t *testing.T) {
	stays := newTestEngine(t, func(c *Config) { c.MaxParallel = 256 })
	var graphs []string
	for round := range 30 {
		sub := stays.submit(t, Spec{MaxParallel: 4, Tasks: []TaskSpec{
			tsk("s1", "exec sleep 1000"), tsk("s2", "exec sleep 1000"), tsk("s3", "exec sleep 1000"),
		}})
		graphs = append(graphs, sub.Graph.ID)
		for _, id := range []string{"s1", "s2", "s3"} {
			stays.waitStatus(t, sub.Graph.ID, id, Running)
		}
		closes := startTestEngine(t, func(c *Config) { c.ArtifactsDir = c.Workspace.ArtifactsDir })
		done := closes.submit(t, Spec{Tasks: []TaskSpec{tsk("a", fmt.Sprintf("echo %d", round))}})
		closes.waitDone(t, done.Graph.ID)
		if _, err := closes.e.spool(t.Context(), done.Graph.ID); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), testWait)
		err := closes.e.Close(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	// A task killed when the other engine's archiver thread ended was recorded SIGNALED
	// then; one still running when its own engine closes is stopped by that Close.
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	if err := stays.e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, g := range graphs {
		snap, err := stays.e.Snapshot(t.Context(), g)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range snap.Tasks {
			if task.Status != Failed || task.ErrorCode == nil || *task.ErrorCode != CodeRunnerShutdown {
				msg := ""
				if task.Message != nil {
					msg = *task.Message
				}
				t.Errorf("graph %s task %s ended %s (%s) before its engine closed", g, task.ID, task.Status, msg)
			}
		}
	}
}

// The archiver's thread lives while any engine of the process does, and ends with the
// last one to close.
func TestArchiver_ThreadEndsWithTheLastEngine(t *testing.T) {
	first := newTestEngine(t, func(c *Config) { c.ArtifactsDir = c.Workspace.ArtifactsDir })
	last := startTestEngine(t)
	sub := first.submit(t, Spec{Tasks: []TaskSpec{tsk("a", "echo a")}})
	first.waitDone(t, sub.Graph.ID)
	if _, err := first.e.spool(t.Context(), sub.Graph.ID); err != nil {
		t.Fatal(err)
	}
	lowArchiver.mu.Lock()
	tid := lowArchiver.tid
	lowArchiver.mu.Unlock()
	if tid == 0 {
		t.Skip("the archiver's thread has no id here")
	}
	thread := fmt.Sprintf("/proc/self/task/%d", tid)
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	if err := first.e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(thread); err != nil {
		t.Fatalf("the archiver's thread ended at the first engine's Close, while another engine runs: %v", err)
	}
	if err := last.e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitGone(t, thread)
}
