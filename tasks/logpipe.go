package tasks

// This file owns the pipe between an attempt and its log. A task's stdout and stderr are
// the write end of one pipe (one open file, so the two streams interleave as written), and
// a pump, one goroutine per running attempt, moves what arrives into the log file.
//
// Why a pipe and not the log file itself: a command that reopens its own output (`echo b >
// /dev/stdout`, `tee /dev/stderr`, `exec 3>/dev/stdout`) opens it again through
// /proc/self/fd with O_TRUNC. On a regular file that truncates the log, whatever flags the
// original descriptor has (O_APPEND included); on a pipe, O_TRUNC means nothing, and the
// new descriptor is one more write end of the same pipe.
//
// Nothing passes through the server's memory on Linux: the pump splices the pipe into the
// log (logpipe_linux.go), which is why the log is opened without O_APPEND (splice refuses
// such a destination) and positioned at its end instead. Elsewhere it is a plain read and
// write (logpipe_other.go). The kernel's own copy into the page cache, which the task's
// write to its log used to pay, is the server's now: about as much CPU as the task saves
// (BenchmarkLoudTask reports both).
//
// The log file is opened, and created if need be, when the first output arrives (lazyLog):
// a task that prints nothing has no log file, which readers take as an empty log.
//
// Lifetime: spawn creates the pipe, starts the command with the write end and closes its
// own copy at once, so the pipe reaches end of file when the last process holding it is
// gone; the pump starts then. wait finishes the pump before the attempt is recorded ended
// (finish), so a reader that sees the task ended reads its whole log. The pump is part of
// the attempt that Engine.waiters counts, so Close waits for it too.
//
// What can be lost, and said nowhere else:
//   - Output written after the task ended. A process that left the task's process group
//     (a setsid'd daemon) escapes the kill at the end of the task and may still hold the
//     pipe. The pump waits for it at most pumpGrace, then closes the read end: that
//     process's next write fails (EPIPE), or kills it (SIGPIPE). Its output from then on
//     is not recorded; a daemon that must log has to open a file of its own.
//   - A runner killed with SIGKILL (or crashing) takes the read end with it: its tasks die
//     with it on Linux (Pdeathsig, see taskProcAttr), and whatever was in the pipe and not
//     yet in the log, at most one pipe buffer (64 KiB, unless the task enlarged it), is
//     lost. Elsewhere a task that outlives its runner gets EPIPE or SIGPIPE on its next
//     write.
//   - A write to the log that fails (a full file system, a quota, an I/O error) stops the
//     pump, which closes the read end, so the task's next write fails: its output from
//     then on has nowhere to go, and a task that goes on without it would only hide the
//     loss. The record of the attempt says what happened (logFault).

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// pumpGrace bounds how long the end of an attempt waits for its pipe to reach end of file
// after the task's process group was killed. What the group wrote is in the pipe by then
// and takes microseconds to move; the end of file comes at once unless a process outside
// the group (a setsid'd daemon) still holds the pipe, and that one is not waited for: the
// task ended when its command did. A quarter second is far more than draining a pipe
// buffer into the page cache takes, and short enough that a task leaving a daemon behind
// does not hold up its dependents noticeably.
const pumpGrace = 250 * time.Millisecond

// pump moves one attempt's output from its pipe into its log.
type pump struct {
	r    *os.File      // the read end of the attempt's output pipe
	log  *lazyLog      // the log, opened at its end when the first output arrives
	done chan struct{} // closed once run has closed r and log

	// Set by run before done is closed.
	fault error // the write to the log that failed (or its creation), if one did
	cut   bool  // the grace ran out before end of file: a process still held the pipe
}

// startPump starts moving r into log; the pump owns both from now on and closes them.
func startPump(r *os.File, log *lazyLog) *pump {
	p := &pump{r: r, log: log, done: make(chan struct{})}
	go p.run()
	return p
}

// run copies until end of file, the read deadline that finish sets, or a failed write to
// the log, then closes the read end (a writer left gets EPIPE or SIGPIPE) and the log.
func (p *pump) run() {
	defer close(p.done)
	fault, err := p.copy()
	p.fault = fault
	p.cut = fault == nil && err != nil // the deadline: nothing else ends a read of a pipe early
	p.r.Close()
	p.log.close()
}

// copy opens the log once the first output has arrived, writes that output, and moves
// the rest with copyOut. A pipe that ends with nothing in it leaves the log as it was.
func (p *pump) copy() (fault, err error) {
	if p.log.f == nil {
		first := make([]byte, 4096)
		n, err := p.r.Read(first)
		if n == 0 {
			if errors.Is(err, io.EOF) {
				return nil, nil
			}
			return nil, err
		}
		f, ferr := openLazyLog(p.log.path)
		if ferr != nil {
			return ferr, nil
		}
		p.log.f = f
		if _, ferr := f.Write(first[:n]); ferr != nil {
			return ferr, nil
		}
	}
	return copyOut(p.log.f, p.r)
}

// lazyLog is an attempt's log: opened for writing at its end (and created if need be)
// by spawn for a retry's marker, or else by the pump at the first output.
type lazyLog struct {
	path string
	f    *os.File // nil until opened
}

// openLazyLog is how the pump opens a log at the first output: openLog, but for a test
// that has it fail (a full file system, say) when the task writes.
var openLazyLog = openLog

// end returns where the log ends now: its size, 0 while there is none. What would keep
// the log from being created at the first output is refused here, before the task
// starts, as an open failing at the start was: something other than a regular file at
// the path, or a directory that cannot be written (gone, read-only, not ours).
func (l *lazyLog) end() (int64, error) {
	if l.f != nil {
		return l.f.Seek(0, io.SeekCurrent)
	}
	fi, err := os.Lstat(l.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := unix.Access(filepath.Dir(l.path), unix.W_OK); err != nil {
			return 0, &os.PathError{Op: "create", Path: l.path, Err: err}
		}
		return 0, nil
	case err != nil:
		return 0, err
	case !fi.Mode().IsRegular():
		return 0, &os.PathError{Op: "open", Path: l.path, Err: errNotRegular}
	}
	return fi.Size(), nil
}

// close closes the log if it was opened.
func (l *lazyLog) close() {
	if l.f != nil {
		l.f.Close()
	}
}

// finish lets the pump drain the pipe until end of file, for at most grace, and waits until
// it has ended. It is called once the task's process group has been killed, so whatever
// the task wrote is in the pipe already.
func (p *pump) finish(grace time.Duration) {
	// It fails only when run has closed the read end already (a fault): nothing to wait for.
	p.r.SetReadDeadline(time.Now().Add(grace))
	<-p.done
}

// copyPlain moves r into log through a buffer: the way on systems without splice, and on
// Linux for a log on a file system that cannot take a splice. It returns a failed write
// to the log as fault, and why reading stopped short as err (nil at end of file).
func copyPlain(log, r *os.File) (fault, err error) {
	w := &faultWriter{w: log}
	_, err = io.Copy(w, r)
	if w.err != nil {
		return w.err, nil
	}
	return nil, err
}

// faultWriter remembers the error of a write, so that a failed write to the log is told
// from a failed read of the pipe.
type faultWriter struct {
	w   io.Writer
	err error
}

func (f *faultWriter) Write(b []byte) (int, error) {
	n, err := f.w.Write(b)
	if err != nil {
		f.err = err
	}
	return n, err
}
