package tasks

// This file starts every task's process from one OS thread that the engine keeps to
// itself. A task is started with Pdeathsig (taskProcAttr), so that it dies with its runner;
// but Linux sends that signal when the thread that forked the task exits, not when the
// process does, and the Go runtime ends a thread whenever a goroutine locked to it ends
// without unlocking: the archiver does exactly that on purpose (spool.go), and any thread
// may have forked a task before. A task forked from such a thread was killed, running,
// when an archive finished. Forked from the forker's thread, which ends only after Close
// has seen every task reaped, a task is killed by Pdeathsig only when the runner dies.

import (
	"os/exec"
	"runtime"
)

type forkRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// forkLoop starts the commands it is sent, on its own locked thread, until forks is
// closed (Close, once every task has been reaped). It then ends locked, so the runtime
// retires the thread rather than hand it to other goroutines.
func (e *Engine) forkLoop() {
	defer e.forkDone.Done()
	runtime.LockOSThread()
	for r := range e.forks {
		r.done <- r.cmd.Start()
	}
}

// startCmd starts cmd from the forker's thread. Called only while a task holds a count
// of e.waiters, so never after Close has closed forks.
func (e *Engine) startCmd(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	e.forks <- forkRequest{cmd: cmd, done: done}
	return <-done
}
