package tasks

import "syscall"

// archiveNice is the nice value of the thread that writes artifacts: the lowest priority,
// so archiving takes only CPU that running tasks leave.
const archiveNice = 19

// lowerThreadPriority gives the calling thread the lowest CPU priority. On Linux a nice
// value belongs to a thread, not to the process, so this slows no other goroutine; the
// caller has locked its goroutine to the thread and never unlocks it, so the thread ends
// with the goroutine. A refusal is harmless: the work runs at normal priority.
func lowerThreadPriority() {
	syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), archiveNice)
}

// threadID is the calling thread's id.
func threadID() int { return syscall.Gettid() }
