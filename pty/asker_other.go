//go:build !linux

package pty

// describeAsker knows only the pid where the kernel's view of a process is not read (an
// answer is never begun there: foregroundKnown is false).
func describeAsker(pid int) Asker { return Asker{Pid: pid} }
