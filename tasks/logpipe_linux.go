package tasks

import (
	"os"

	"golang.org/x/sys/unix"
)

// spliceChunk is the most one splice asks to move: more than a pipe holds by default, so
// one call takes whatever the pipe has.
const spliceChunk = 1 << 20

// copyOut moves r, the read end of a pipe, into log with splice(2) until end of file, so
// the output never passes through this process's memory (io.Copy does not splice from an
// *os.File: it tries copy_file_range, which refuses a pipe, then reads into a buffer). It
// returns a failed write to the log as fault, and why reading stopped short as err (the
// read deadline; nil at end of file). A log on a file system that cannot take a splice
// (EINVAL) is copied through a buffer instead.
func copyOut(log, r *os.File) (fault, err error) {
	rc, err := r.SyscallConn()
	if err != nil {
		return nil, err
	}
	lfd := int(log.Fd())
	for {
		var n int64
		var serr error
		// The read end is non-blocking and in the poller: on EAGAIN (the pipe is empty but
		// still has a writer) RawRead parks until it is readable, or the deadline passes.
		err := rc.Read(func(fd uintptr) bool {
			var m int
			m, serr = spliceOnce(int(fd), lfd)
			n = int64(m)
			return serr != unix.EAGAIN
		})
		switch {
		case err != nil:
			return nil, err
		case serr == unix.EINTR:
		case serr == unix.EINVAL:
			return copyPlain(log, r)
		case serr != nil:
			// The pipe cannot fail a read here: an error is the log's (ENOSPC, EIO...).
			return os.NewSyscallError("splice", serr), nil
		case n == 0:
			return nil, nil // end of file: no writer left
		}
	}
}

// spliceOnce moves what the pipe rfd holds, up to spliceChunk, to the file wfd at its
// position. Splice's count is an int on some platforms and an int64 on others.
func spliceOnce(rfd, wfd int) (int, error) {
	n, err := unix.Splice(rfd, nil, wfd, nil, spliceChunk, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
	return int(n), err
}

// outputPipe returns a pipe for a command's output: the read end non-blocking, for the
// poller (the pump's reads have a deadline), the write end blocking, as the command gets
// it. os.Pipe makes both ends non-blocking and registers both with the poller, and os/exec
// then makes the write end blocking again: five system calls a start for an end this
// process only hands on and closes (issue 29).
func outputPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}
