package tasks

// This file owns one attempt of a task as a process: its environment, spawn (log file,
// output pipe, process group), the timeout, stopping it (SIGTERM, then SIGKILL after the
// grace), and reaping it, and its output (logpipe.go), into an outcome. Process creation
// runs outside e.mu; everything that reads or changes a task's state takes it. Each
// attempt holds one count of e.waiters from scheduleLocked until wait has reaped it and
// its pump has ended (see Engine).

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/procid"
	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/store"
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

// baseEnv is the environment tasks inherit: env, or this process's own when nil.
func baseEnv(env []string) []string {
	if env == nil {
		return os.Environ()
	}
	return env
}

// errAdopted reports a start refused because another runner adopted the graph.
var errAdopted = errors.New("the graph was adopted by another runner")

// start runs one attempt of t, whose slot scheduleLocked took. It returns the tasks a
// failed start lets start instead.
func (e *Engine) start(g *graph, t *task) []launch {
	cmd, out, err := e.spawn(g, t)
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
	go e.wait(g, t, cmd, out)
	return nil
}

// spawn opens the log, starts the command with the write end of a pipe as its stdout and
// stderr, and starts the pump that moves the pipe into the log (logpipe.go), touching no
// engine state. It fails, and nothing is left open, or returns both.
func (e *Engine) spawn(g *graph, t *task) (*exec.Cmd, *pump, error) {
	// A runner that stalled past its lease may have had its graphs adopted meanwhile: the
	// adopter runs them now, so starting a task here would run it twice. The task's running
	// state was written before this (scheduleLocked's barrier) by the store's fenced update,
	// which ignores a graph this runner no longer owns and says so (writer.go): that
	// answer, in memory, replaces reading the owner again before every start. A graph
	// adopted after that write finds the task running, records it failed and does not run
	// it (so did an adoption between the owner check and the start that this replaces); this
	// runner forgets the graph at its next refused start, or when its lease renewal fails.
	if e.writer.queue.isDisowned(g.row.ID) {
		return nil, nil, errAdopted
	}
	// The cwd was checked when the graph was submitted, but the directory may have been
	// swapped since (by an earlier task, say) for a symlink out of the workspace: check it
	// again now, and have the child enter the very directory checked (dirs.go).
	dir, dirPath, release, err := g.dirs.enter(e.cfg.Workspace, t.row.Cwd)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot enter the working directory: %v", err)
	}
	defer release() // the child is in it once started
	logFile, err := openLog(e.LogPath(g.row.ID, t.row.ID))
	if err != nil {
		return nil, nil, fmt.Errorf("cannot open the log: %v", err)
	}
	if t.row.Attempt > 1 {
		// A marker that does not fit (a full disk) is left out: the pump meets the same
		// fault at the task's first write, and the record says so then.
		fmt.Fprintf(logFile, "\n--- mcp-harness: attempt %d of %d ---\n", t.row.Attempt, t.row.Retries+1)
	}
	r, w, err := os.Pipe()
	if err != nil {
		logFile.Close()
		return nil, nil, fmt.Errorf("cannot create the pipe for its output: %v", err)
	}
	env := append(mergeEnv(e.env, t.row.Env), taskMarker(g.row.ID, t.row.ID))
	where := &sandbox.Where{Path: dirPath, Exec: dir.ExecPath(), File: dir.File()}
	cmd, err := e.startCommand(t, where, env, w)
	// The child has its own copy of the write end once started: this one would keep the
	// pipe from ever reaching end of file.
	w.Close()
	if err != nil {
		r.Close()
		logFile.Close()
		return nil, nil, err
	}
	return cmd, startPump(r, logFile), nil
}

// openLog opens a task's log for writing at its end, creating it if need be. Not with
// O_APPEND, which would do the same for the one writer a log has (its pump), because
// splice refuses a destination opened so (logpipe_linux.go).
func openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil { // a retry goes after the attempt before
		f.Close()
		return nil, err
	}
	return f, nil
}

// startCommand starts t's command, under its policy (policyOf), in dir with env, and out
// as its stdout and stderr. env ends with the task's marker, which lets a later runner find
// every process of this task, grandchildren included, even if this runner dies before it
// records the task's pid.
func (e *Engine) startCommand(t *task, dir *sandbox.Where, env []string, out *os.File) (*exec.Cmd, error) {
	policy := e.policyOf(t)
	prepare := func(cmd *exec.Cmd) *exec.Cmd {
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = out, out // one *os.File, passed to the child as is: one pipe
		cmd.SysProcAttr = taskProcAttr()
		return cmd
	}
	// A plain command runs without the shell (direct.go), unless the task sets its own
	// PATH, which the shell would search instead of ours. The shell would set PWD to the
	// directory it starts in; the program gets the same. Whatever fails to start that way
	// is left to the shell, which reports it as it always did.
	if argv := directArgv(t.row.Command); argv != nil && !hasKey(t.row.Env, "PATH") {
		if cmd := directCommand(argv); cmd != nil {
			prepare(cmd).Env = append(env[:len(env):len(env)], "PWD="+dir.Path)
			if e.cfg.Sandbox.Start(policy, cmd, dir) == nil {
				return cmd, nil
			}
		}
	}
	cmd := prepare(exec.Command(e.shell, "-c", t.row.Command))
	if err := e.cfg.Sandbox.Start(policy, cmd, dir); err != nil {
		return nil, fmt.Errorf("cannot start: %v", err)
	}
	return cmd, nil
}

// policyOf is what confines t: the policy its record says it was accepted under, or this
// runner's own in each part where that is tighter (a runner never runs a task looser than
// it was accepted, nor looser than its own server allows). A task recorded before the
// sandbox existed gets the runner's own.
func (e *Engine) policyOf(t *task) sandbox.Policy {
	own := e.cfg.Sandbox.Policy()
	if rec, ok := recordedPolicy(t.row); ok {
		return own.Tighter(rec)
	}
	return own
}

// recordedPolicy is the policy a task's record names, if any.
func recordedPolicy(row store.TaskRow) (sandbox.Policy, bool) {
	p := sandbox.Policy{Mode: sandbox.Mode(row.Sandbox), Network: sandbox.Network(row.Network)}
	return p, p.Mode.Valid() && p.Network.Valid()
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// wait reaps one attempt, its output included. The exit is first observed without
// reaping, so the process group id cannot be reused while whatever the task left in its
// group is killed, nor while the pump drains what the group wrote (until then a kill timer
// may still signal the group). The attempt is recorded ended only after its pump has
// ended, so its log is whole when its record says it ended.
func (e *Engine) wait(g *graph, t *task, cmd *exec.Cmd, out *pump) {
	defer e.waiters.Done() // taken by scheduleLocked
	pid := cmd.Process.Pid
	waitExitNoReap(pid)
	syscall.Kill(-pid, syscall.SIGKILL)
	out.finish(pumpGrace)
	if out.cut {
		e.log.Info("a process the task started outside its process group still holds its output; what it writes from now on is not recorded",
			"graph", g.row.ID, "task", t.row.ID)
	}
	cmd.Wait()
	e.mu.Lock()
	delete(e.procs, pid)
	e.exitedLocked(g, t, cmd.ProcessState, out.fault)
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

// exitedLocked records how an attempt ended, and what a failed write to its log did
// (logFault), and decides what follows: a retry, or the task's final state.
func (e *Engine) exitedLocked(g *graph, t *task, ps *os.ProcessState, logFailed error) {
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
	// Whatever the outcome: a task that went on without its output, or ended before its
	// next write, lost output all the same.
	if fault := logFault(logFailed); fault != "" {
		if o.message != "" {
			fault = o.message + "; " + fault
		}
		o.message = fault
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
