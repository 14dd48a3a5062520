package tasks

import (
	"path/filepath"
	"syscall"
)

// logFault says, for the message of a task that failed, what a full disk or a file size
// limit did to its log ("" when neither did): the task's output, and the error that made
// it fail, may be missing from the log, so the record is the one place left to say it. A
// task's log is written by the task itself, so the engine sees no write error of its own.
func logFault(logPath string, ws syscall.WaitStatus) string {
	switch {
	case ws.Signaled() && ws.Signal() == syscall.SIGXFSZ:
		return "; the task's log reached the file size limit (RLIMIT_FSIZE), so its output is cut short"
	case fileSystemFull(filepath.Dir(logPath)):
		return "; the file system of the task's log is full (no space left on device), so its output, and any error it printed, may be missing"
	}
	return ""
}
