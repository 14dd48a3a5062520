package tasks

// This file is the local executor: an attempt as a process group on this machine, its
// stdout and stderr one pipe that a pump moves into the task's log (logpipe.go), reaped
// with whatever it left in its group. It owns the processes: spawning (log, pipe, the
// sandbox's start), stopping (SIGTERM, then SIGKILL after the grace) and reaping; the
// engine decides when, and what an end means (process.go).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/procid"
	"github.com/mcp-harness/mcp-harness/internal/sandbox"
)

// LocalExecutor runs attempts as process groups on this machine, confined by a sandbox
// launcher. Its attempts die with the process that started them (see taskProcAttr), so
// it lists only its own.
type LocalExecutor struct {
	launcher *sandbox.Launcher // nil: unconfined
	shell    string
	log      *slog.Logger

	mu    sync.Mutex
	runs  map[AttemptID]*localRun
	stdin *os.File // /dev/null, every command's standard input: opened at the first start
}

// localRun is one attempt's process. Its fields after started are set once Start is
// through; reaped, cancelled and killTimer are guarded by the executor's mu.
type localRun struct {
	id      AttemptID
	started chan struct{} // closed once the process is started, or failed to start (err)
	err     error
	cmd     *exec.Cmd
	place   Placement
	log     string
	base    int64 // the byte of the log where the attempt's output starts

	reaped    bool // its pid may be reused from now on: nothing signals it any more
	cancelled bool
	killTimer *time.Timer

	done   chan struct{} // closed once reaped, its pump ended, status set
	status RunStatus
}

// NewLocalExecutor returns an executor whose processes start under launcher's policies
// (nil: unconfined) and whose commands run with bash -c (/bin/sh where bash is absent).
func NewLocalExecutor(launcher *sandbox.Launcher, log *slog.Logger) *LocalExecutor {
	if log == nil {
		log = slog.Default()
	}
	shell := "/bin/sh"
	if p, err := exec.LookPath("bash"); err == nil {
		shell = p
	}
	return &LocalExecutor{launcher: launcher, shell: shell, log: log, runs: map[AttemptID]*localRun{}}
}

// Name is ExecutorLocal.
func (l *LocalExecutor) Name() ExecutorName { return ExecutorLocal }

// Check reports nil: this machine always takes tasks.
func (l *LocalExecutor) Check(context.Context) error { return nil }

// Start starts the attempt's command in a session and process group of its own, in a.Dir,
// with a.Env, under a.Policy, its stdout and stderr one pipe into a.Log (after a.Header).
// An attempt already started under a.ID is returned as it is.
func (l *LocalExecutor) Start(_ context.Context, a Attempt) (Placement, error) {
	l.mu.Lock()
	if r := l.runs[a.ID]; r != nil {
		l.mu.Unlock()
		<-r.started
		return r.place, r.err
	}
	r := &localRun{id: a.ID, started: make(chan struct{}), done: make(chan struct{}), log: a.Log}
	l.runs[a.ID] = r
	l.mu.Unlock()

	cmd, out, base, err := l.spawn(a)
	if err != nil {
		l.mu.Lock()
		delete(l.runs, a.ID)
		l.mu.Unlock()
		r.err = err
		close(r.started)
		return Placement{}, err
	}
	pid := cmd.Process.Pid
	r.cmd, r.base = cmd, base
	r.place = Placement{Pid: pid, ProcStart: procid.Identify(pid).ProcStart}
	close(r.started)
	l.mu.Lock()
	if r.cancelled { // cancelled while it was starting
		l.signalLocked(r, 0)
	}
	l.mu.Unlock()
	go l.reap(r, out)
	return r.place, nil
}

// spawn starts the command with the write end of a pipe as its stdout and stderr, and
// starts the pump that moves the pipe into the log. The log itself is opened by the pump
// when the first output arrives (lazyLog): a task that prints nothing, as many steps of a
// build do, costs no file, and creating one is most of what starting a short task costs
// the server on a busy file system (issue 29). A retry's marker (a.Header) is written at
// once, so its log is opened here. It fails, and nothing is left open, or returns the
// command, the pump and where the attempt's output starts in the log.
func (l *LocalExecutor) spawn(a Attempt) (*exec.Cmd, *pump, int64, error) {
	log := &lazyLog{path: a.Log}
	if a.Header != "" {
		f, err := openLog(a.Log)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("cannot open the log: %v", err)
		}
		// A marker that does not fit (a full disk) is left out: the pump meets the same
		// fault at the task's first write, and the record says so then.
		io.WriteString(f, a.Header)
		log.f = f
	}
	base, err := log.end()
	if err != nil {
		log.close()
		return nil, nil, 0, fmt.Errorf("cannot open the log: %v", err)
	}
	stdin, err := l.devNull()
	if err != nil {
		log.close()
		return nil, nil, 0, fmt.Errorf("cannot open %s for its input: %v", os.DevNull, err)
	}
	r, w, err := outputPipe()
	if err != nil {
		log.close()
		return nil, nil, 0, fmt.Errorf("cannot create the pipe for its output: %v", err)
	}
	cmd, err := l.startCommand(a, stdin, w)
	// The child has its own copy of the write end once started: this one would keep the
	// pipe from ever reaching end of file.
	w.Close()
	if err != nil {
		r.Close()
		log.close()
		return nil, nil, 0, err
	}
	return cmd, startPump(r, log), base, nil
}

// openLog opens a task's log for writing at its end, creating it if need be. Not with
// O_APPEND: the pump splices into it (logpipe.go). It takes nothing but a regular file: a
// command that can write the logs directory (no mount layer, see internal/sandbox) could
// put a symbolic link at its own log's path before its first output, and have this
// unconfined process write what it prints wherever the link points; or a FIFO, whose
// open would wait for a reader for ever (O_NONBLOCK, which a regular file ignores).
func openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: errNotRegular}
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil { // a retry goes after the attempt before
		f.Close()
		return nil, err
	}
	return f, nil
}

// errNotRegular refuses a log path that holds something other than a regular file.
var errNotRegular = errors.New("not a regular file")

// startCommand starts a's command, under a.Policy, in a.Dir with a.Env, and out as its
// stdout and stderr. a.Env ends with the task's marker (taskMarker), which lets a later
// runner find every process of the task, grandchildren included, even if this runner dies
// before it records the task's pid.
func (l *LocalExecutor) startCommand(a Attempt, stdin, out *os.File) (*exec.Cmd, error) {
	prepare := func(cmd *exec.Cmd) *exec.Cmd {
		cmd.Env = a.Env
		cmd.Stdin = stdin
		cmd.Stdout, cmd.Stderr = out, out // one *os.File, passed to the child as is: one pipe
		cmd.SysProcAttr = taskProcAttr()
		return cmd
	}
	// A plain command runs without the shell (direct.go), unless the task sets its own
	// PATH, which the shell would search instead of ours. The shell would set PWD to the
	// directory it starts in; the program gets the same. Whatever fails to start that way
	// is left to the shell, which reports it as it always did.
	if argv := directArgv(a.Command); argv != nil && !a.ShellOnly {
		if cmd := directCommand(argv); cmd != nil {
			prepare(cmd).Env = append(a.Env[:len(a.Env):len(a.Env)], "PWD="+a.Dir.Path)
			if l.launcher.Start(a.Policy, cmd, a.Dir) == nil {
				return cmd, nil
			}
		}
	}
	cmd := prepare(exec.Command(l.shell, "-c", a.Command))
	if err := l.launcher.Start(a.Policy, cmd, a.Dir); err != nil {
		return nil, fmt.Errorf("cannot start: %v", err)
	}
	return cmd, nil
}

// devNull is the executor's /dev/null, every command's standard input (a task has no
// terminal and nothing to read), opened once: os/exec opened it again for every start,
// with the poller set-up of a new file, seven system calls a start (issue 29).
func (l *LocalExecutor) devNull() (*os.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stdin == nil {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, err
		}
		l.stdin = f
	}
	return l.stdin, nil
}

// Close lets go of what the executor holds open for its starts. Nothing may start once it
// is called; the commands started may run on.
func (l *LocalExecutor) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stdin == nil {
		return nil
	}
	err := l.stdin.Close()
	l.stdin = nil
	return err
}

// reap waits for r's process, its output included. The exit is first observed without
// reaping, so the process group id cannot be reused while whatever the task left in its
// group is killed, nor while the pump drains what the group wrote (until then a kill timer
// may still signal the group). The attempt is reported ended only after its pump has
// ended, so its log is whole when its end is known.
func (l *LocalExecutor) reap(r *localRun, out *pump) {
	pid := r.place.Pid
	waitExitNoReap(pid)
	syscall.Kill(-pid, syscall.SIGKILL)
	out.finish(pumpGrace)
	if out.cut {
		l.log.Info("a process the task started outside its process group still holds its output; what it writes from now on is not recorded",
			"graph", r.id.GraphID, "task", r.id.TaskID)
	}
	l.mu.Lock()
	r.cmd.Wait() // the process is a zombie: this returns at once
	r.reaped = true
	if r.killTimer != nil {
		r.killTimer.Stop()
	}
	r.status = RunStatus{ID: r.id, Phase: PhaseEnded, Placement: r.place, Cancelled: r.cancelled, LogFault: out.fault}
	ws, _ := r.cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		r.status.Signal = signalName(ws.Signal())
	default:
		code := ws.ExitStatus()
		r.status.ExitCode = &code
	}
	l.mu.Unlock()
	close(r.done)
}

// Wait blocks until the attempt's process is reaped and its output is in its log.
func (l *LocalExecutor) Wait(ctx context.Context, id AttemptID, _ func(Placement)) (RunStatus, error) {
	r, err := l.run(id)
	if err != nil {
		return RunStatus{}, err
	}
	select {
	case <-r.done:
		return r.status, nil
	case <-ctx.Done():
		return RunStatus{}, ctx.Err()
	}
}

// Status says whether the attempt's process still runs, or how it ended.
func (l *LocalExecutor) Status(_ context.Context, id AttemptID) (RunStatus, error) {
	r, err := l.run(id)
	if err != nil {
		return RunStatus{}, err
	}
	select {
	case <-r.done:
		return r.status, nil
	default:
		return RunStatus{ID: id, Phase: PhaseRunning, Placement: r.place}, nil
	}
}

// run returns the started attempt id.
func (l *LocalExecutor) run(id AttemptID) (*localRun, error) {
	l.mu.Lock()
	r := l.runs[id]
	l.mu.Unlock()
	if r == nil {
		return nil, fmt.Errorf("%s: %w", id, ErrUnknownAttempt)
	}
	<-r.started
	if r.err != nil {
		return nil, fmt.Errorf("%s: %w", id, ErrUnknownAttempt)
	}
	return r, nil
}

// Cancel sends SIGTERM to the attempt's process group and SIGKILL after grace (at once
// when grace <= 0). An attempt still starting is signalled once its process exists.
func (l *LocalExecutor) Cancel(_ context.Context, id AttemptID, grace time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.runs[id]
	if r == nil {
		return fmt.Errorf("%s: %w", id, ErrUnknownAttempt)
	}
	r.cancelled = true
	select {
	case <-r.started:
		if r.err == nil {
			l.signalLocked(r, grace)
		}
	default: // Start signals it once started
	}
	return nil
}

// signalLocked sends SIGTERM to r's group and SIGKILL after grace, or SIGKILL now for a
// grace of zero, unless r was reaped (its pid may be another's now). Called with l.mu held.
func (l *LocalExecutor) signalLocked(r *localRun, grace time.Duration) {
	if r.reaped {
		return
	}
	pgid := r.place.Pid
	if grace <= 0 {
		syscall.Kill(-pgid, syscall.SIGKILL)
		return
	}
	syscall.Kill(-pgid, syscall.SIGTERM)
	if r.killTimer != nil {
		r.killTimer.Stop()
	}
	r.killTimer = time.AfterFunc(grace, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if !r.reaped {
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
	})
}

// KillAll sends SIGKILL to the process group of every attempt not yet reaped: a shutdown
// out of time does not wait for the grace.
func (l *LocalExecutor) KillAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.runs {
		select {
		case <-r.started:
			if r.err == nil && !r.reaped {
				syscall.Kill(-r.place.Pid, syscall.SIGKILL)
			}
		default:
		}
	}
}

// List reports this executor's attempts for workspace.
func (l *LocalExecutor) List(ctx context.Context, workspace string) ([]RunStatus, error) {
	l.mu.Lock()
	var ids []AttemptID
	for id := range l.runs {
		if id.Workspace == workspace {
			ids = append(ids, id)
		}
	}
	l.mu.Unlock()
	var out []RunStatus
	for _, id := range ids {
		st, err := l.Status(ctx, id)
		if errors.Is(err, ErrUnknownAttempt) {
			continue // released, or failed to start, meanwhile
		}
		out = append(out, st)
	}
	return out, nil
}

// Release forgets an attempt that has ended; one still running is kept.
func (l *LocalExecutor) Release(id AttemptID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.runs[id]; r != nil {
		select {
		case <-r.done:
			delete(l.runs, id)
		default:
		}
	}
}

// Attach reads the attempt's output from its log, from offset on, following it until the
// attempt has ended and every byte it wrote is read.
func (l *LocalExecutor) Attach(ctx context.Context, id AttemptID, offset int64) (io.ReadCloser, error) {
	r, err := l.run(id)
	if err != nil {
		return nil, err
	}
	return &fileFollower{ctx: ctx, path: r.log, at: r.base + offset, done: r.done}, nil
}

// fileFollower reads a file that a process is still writing, until the process has ended
// (done) and the file's end is reached. The file is opened at its first read that finds
// it: a log is created with the attempt's first output (lazyLog), and until then, or for
// good, there is nothing to read.
type fileFollower struct {
	ctx  context.Context
	path string
	at   int64 // where the first read starts
	f    *os.File
	done <-chan struct{}
}

// followPoll is how often a follower looks again at a log that has no new bytes.
const followPoll = 50 * time.Millisecond

func (r *fileFollower) Read(b []byte) (int, error) {
	for {
		ended := false
		select {
		case <-r.done:
			ended = true // looked at before the read: what it finds then is all there is
		default:
		}
		n, err := r.read(b)
		if n > 0 || err != io.EOF || ended {
			return n, err
		}
		select {
		case <-r.done:
		case <-r.ctx.Done():
			return 0, r.ctx.Err()
		case <-time.After(followPoll):
		}
	}
}

// read reads from the file, opening it first if it has not been; a file not there yet
// reads as its end.
func (r *fileFollower) read(b []byte) (int, error) {
	if r.f == nil {
		f, err := os.Open(r.path)
		if errors.Is(err, fs.ErrNotExist) {
			return 0, io.EOF
		}
		if err != nil {
			return 0, err
		}
		if _, err := f.Seek(r.at, io.SeekStart); err != nil {
			f.Close()
			return 0, err
		}
		r.f = f
	}
	return r.f.Read(b)
}

func (r *fileFollower) Close() error {
	if r.f == nil {
		return nil
	}
	return r.f.Close()
}
