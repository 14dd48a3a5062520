//go:build !linux

package tasks

// lowerThreadPriority does nothing here: elsewhere a nice value is the whole process's, and
// the server must not slow its own answers. Archiving relies on its fast, low level alone.
func lowerThreadPriority() {}

// threadID is 0: the archiver's thread is only known where it has a lowered priority.
func threadID() int { return 0 }
