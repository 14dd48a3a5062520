package tasks

import (
	"errors"
	"syscall"
)

// logFault says, for the record of an attempt, what a failed write to its log did ("" for
// none): the task's output, and the error that made it fail, may be missing from the log,
// so the record is the one place left to say it. The pump stopped at that write and closed
// the task's output (logpipe.go), so the task's next write failed, or killed it with
// SIGPIPE: the end of the sentence says so, since that is why such a task failed.
//
// A task's own file size limit (ulimit -f) no longer reaches its log, which the task
// writes through a pipe, and the engine sees every failed write of the log itself, so
// nothing here guesses from the file system's state or the task's exit any more.
func logFault(fault error) string {
	if fault == nil {
		return ""
	}
	const cut = ", and its output was cut off there (its next write failed, or killed it with SIGPIPE)"
	var errno syscall.Errno
	switch {
	case errors.Is(fault, syscall.ENOSPC):
		return "the file system of the task's log is full (no space left on device), so its output, and any error it printed, may be missing" + cut
	case errors.Is(fault, syscall.EDQUOT):
		return "the disk quota of the task's log is used up (disk quota exceeded), so its output, and any error it printed, may be missing" + cut
	case errors.Is(fault, syscall.EFBIG):
		return "the task's log reached the largest file its file system, or the server's file size limit, allows (file too large), so its output is cut short" + cut
	case errors.As(fault, &errno):
		return "the task's log could not be written (" + errno.Error() + "), so its output, and any error it printed, may be missing" + cut
	}
	return "the task's log could not be written (" + fault.Error() + "), so its output, and any error it printed, may be missing" + cut
}
