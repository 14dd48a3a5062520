package tasks

// This file owns one attempt of a task as a process: its environment, spawn (log file,
// process group), the timeout, stopping it (SIGTERM, then SIGKILL after the grace), and
// reaping it into an outcome. Process creation runs outside e.mu; everything that reads
// or changes a task's state takes it. Each attempt holds one count of e.waiters from
// scheduleLocked until wait has reaped it (see Engine).

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/procid"
)

// taskDefaults are set whatever the server inherited: a task has no terminal, so anything
// that would prompt must fail at once instead of waiting forever. Only a task's env
// overrides them.
var taskDefaults = map[string]string{
	"GIT_TERMINAL_PROMPT": "0",
	"PAGER":               "cat",
}

// mergeEnv returns base followed by the variables of over, in name order. os/exec uses
// the last value of a name given twice, so over overrides base. Appending never writes
// into base's array: e.env is merged into by concurrent spawns.
func mergeEnv(base []string, over map[string]string) []string {
	out := slices.Clip(base)
	for _, k := range slices.Sorted(maps.Keys(over)) {
		out = append(out, k+"="+over[k])
	}
	return out
}

// errAdopted reports a start refused because another runner adopted the graph.
var errAdopted = errors.New("the graph was adopted by another runner")

// start runs one attempt of t, whose slot scheduleLocked took. It returns the tasks a
// failed start lets start instead.
func (e *Engine) start(g *graph, t *task) []launch {
	cmd, err := e.spawn(g, t)
	var ident procid.Identity
	if err == nil {
		ident = procid.Identify(cmd.Process.Pid)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t.starting = false
	if errors.Is(err, errAdopted) {
		// Another runner owns the graph now: forget it here; whatever this runner records
		// for it would be refused by the store anyway.
		g.running--
		e.running--
		e.waiters.Done()
		e.log.Warn("a graph of this runner was adopted by another; leaving it to that runner", "graph", g.row.ID)
		e.forgetLocked(g)
		return e.scheduleLocked()
	}
	if err != nil {
		g.running--
		e.running--
		e.waiters.Done()
		e.finishLocked(g, t, outcome{state: Failed, code: CodeSpawnFailed, message: err.Error()})
		return e.scheduleLocked()
	}
	pid := cmd.Process.Pid
	t.cmd = cmd
	e.procs[pid] = struct{}{}
	if e.graphs[g.row.ID] != g {
		// The graph was forgotten while the process was being created outside e.mu (a
		// peer adopted it, and forgetLocked found no process to kill yet): the adopter
		// runs the task now, so this copy must not run on. wait reaps it as usual.
		syscall.Kill(-pid, syscall.SIGKILL)
	}
	t.row.Pid, t.row.Pgid, t.row.ProcStart = &pid, &pid, &ident.ProcStart
	t.row.Message = nil
	e.sendLocked(t)
	if t.row.TimeoutSec > 0 {
		attempt := t.row.Attempt
		t.timer = time.AfterFunc(time.Duration(t.row.TimeoutSec)*time.Second, func() { e.timeout(g, t, attempt) })
	}
	if t.cancelCode != "" { // cancelled, or shut down, while it was starting
		e.terminateLocked(t, e.cfg.KillGrace)
	}
	go e.wait(g, t, cmd)
	return nil
}

// spawn creates the log and starts the command, touching no engine state. The log file is
// handed to the child as its stdout and stderr, so output never passes through this
// process.
func (e *Engine) spawn(g *graph, t *task) (*exec.Cmd, error) {
	// A runner that stalled past its lease may have had its graphs adopted meanwhile: the
	// adopter runs them now, so starting a task here would run it twice. The task's running
	// state was written before this (scheduleLocked's barrier) by the store's fenced update,
	// which ignores a graph this runner no longer owns and says so (writer.go): that
	// answer, in memory, replaces reading the owner again before every start. A graph
	// adopted after that write finds the task running, records it failed and does not run
	// it (so did an adoption between the owner check and the start that this replaces); this
	// runner forgets the graph at its next refused start, or when its lease renewal fails.
	if e.writer.queue.isDisowned(g.row.ID) {
		return nil, errAdopted
	}
	// The cwd was checked when the graph was submitted, but the directory may have been
	// swapped since (by an earlier task, say) for a symlink out of the workspace: check it
	// again now, and have the child enter the very directory checked (dirs.go).
	dir, dirPath, release, err := g.dirs.enter(e.cfg.Workspace, t.row.Cwd)
	if err != nil {
		return nil, fmt.Errorf("cannot enter the working directory: %v", err)
	}
	defer release() // the child is in it once started
	logFile, err := os.OpenFile(e.LogPath(g.row.ID, t.row.ID), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot open the log: %v", err)
	}
	defer logFile.Close() // the child has its own copy once started
	if t.row.Attempt > 1 {
		fmt.Fprintf(logFile, "\n--- mcp-harness: attempt %d of %d ---\n", t.row.Attempt, t.row.Retries+1)
	}
	// The marker lets a later runner find every process of this task, grandchildren
	// included, even if this runner dies before it records the task's pid.
	env := append(mergeEnv(e.env, t.row.Env), taskMarker(g.row.ID, t.row.ID))
	prepare := func(cmd *exec.Cmd) *exec.Cmd {
		cmd.Dir = dir.ExecPath()
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = logFile, logFile // *os.File: passed to the child as is
		cmd.SysProcAttr = taskProcAttr()
		return cmd
	}
	// A plain command runs without the shell (direct.go), unless the task sets its own
	// PATH, which the shell would search instead of ours. The shell would set PWD to the
	// directory it starts in; the program gets the same. Whatever fails to start that way
	// is left to the shell, which reports it as it always did.
	if argv := directArgv(t.row.Command); argv != nil && !hasKey(t.row.Env, "PATH") {
		if cmd := directCommand(argv); cmd != nil {
			prepare(cmd).Env = append(env[:len(env):len(env)], "PWD="+dirPath)
			if cmd.Start() == nil {
				return cmd, nil
			}
		}
	}
	cmd := prepare(exec.Command(e.shell, "-c", t.row.Command))
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start: %v", err)
	}
	return cmd, nil
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// wait reaps one attempt. The exit is first observed without reaping, so the process
// group id cannot be reused while whatever the task left in its group is killed.
func (e *Engine) wait(g *graph, t *task, cmd *exec.Cmd) {
	defer e.waiters.Done() // taken by scheduleLocked
	pid := cmd.Process.Pid
	waitExitNoReap(pid)
	syscall.Kill(-pid, syscall.SIGKILL)
	cmd.Wait()
	e.mu.Lock()
	delete(e.procs, pid)
	e.exitedLocked(g, t, cmd.ProcessState)
	next := e.scheduleLocked()
	e.mu.Unlock()
	e.launchAll(next)
}

func (e *Engine) timeout(g *graph, t *task, attempt int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.cmd == nil || t.row.Attempt != attempt || State(t.row.Status) != Running {
		return
	}
	t.timedOut = true
	e.terminateLocked(t, e.cfg.KillGrace)
}

// stopLocked asks a running task to stop for the given reason: SIGTERM now, SIGKILL after
// grace. A task still starting is signalled by start once its process exists. The first
// reason given is the one recorded.
func (e *Engine) stopLocked(t *task, code, reason string, grace time.Duration) {
	if t.cancelCode != "" {
		return
	}
	t.cancelCode, t.cancelReason = code, reason
	if !t.starting {
		e.terminateLocked(t, grace)
	}
}

// terminateLocked sends SIGTERM to a running task's group and SIGKILL after grace.
func (e *Engine) terminateLocked(t *task, grace time.Duration) {
	pgid := t.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	if t.killTimer != nil {
		t.killTimer.Stop()
	}
	cmd := t.cmd
	t.killTimer = time.AfterFunc(grace, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if t.cmd == cmd { // still the same attempt, still not reaped
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
	})
}

type outcome struct {
	state    State
	code     string
	exitCode *int
	signal   *string
	message  string
}

// exitedLocked records how an attempt ended and decides what follows: a retry, or the
// task's final state.
func (e *Engine) exitedLocked(g *graph, t *task, ps *os.ProcessState) {
	for _, tm := range []*time.Timer{t.timer, t.killTimer} {
		if tm != nil {
			tm.Stop()
		}
	}
	t.cmd, t.timer, t.killTimer = nil, nil, nil
	g.running--
	e.running--

	var o outcome
	ws, _ := ps.Sys().(syscall.WaitStatus)
	switch {
	case t.cancelCode == CodeRunnerShutdown:
		o = outcome{state: Failed, code: CodeRunnerShutdown, message: t.cancelReason}
	case t.cancelCode != "":
		o = outcome{state: Cancelled, code: t.cancelCode, message: t.cancelReason}
	case t.timedOut:
		o = outcome{state: Failed, code: CodeTimeout, message: fmt.Sprintf("timed out after %ds", t.row.TimeoutSec)}
	case ws.Signaled():
		name := signalName(ws.Signal())
		o = outcome{state: Failed, code: CodeSignaled, signal: &name, message: "killed by " + name}
	case ws.ExitStatus() == 0:
		zero := 0
		o = outcome{state: Succeeded, exitCode: &zero}
	default:
		code := ws.ExitStatus()
		o = outcome{state: Failed, code: CodeExitNonzero, exitCode: &code, message: fmt.Sprintf("exited with status %d", code)}
	}
	if o.state == Cancelled || o.code == CodeRunnerShutdown {
		if ws.Exited() {
			code := ws.ExitStatus()
			o.exitCode = &code
		} else if ws.Signaled() {
			name := signalName(ws.Signal())
			o.signal = &name
		}
	}
	if o.code == CodeExitNonzero || o.code == CodeSignaled {
		o.message += logFault(e.LogPath(g.row.ID, t.row.ID), ws) // a full disk, say (logfault.go)
	}
	if o.state == Failed && o.code != CodeRunnerShutdown && t.row.Attempt <= t.row.Retries && !e.closed {
		msg := fmt.Sprintf("attempt %d %s; retrying", t.row.Attempt, o.message)
		t.row.Status = string(Pending)
		t.row.ErrorCode, t.row.ExitCode, t.row.Signal = strPtr(o.code), o.exitCode, o.signal
		t.row.Message = &msg
		t.row.Pid, t.row.Pgid, t.row.ProcStart = nil, nil, nil
		e.sendLocked(t)
		g.ready = append([]*task{t}, g.ready...) // a retry goes first: it was already running
		return
	}
	e.finishLocked(g, t, o)
}
