package pty

import (
	"bytes"
	"strconv"
	"syscall"
)

// sessionMembers returns the pids of the processes whose session id is sid. Signalling the
// process group is not enough on its own: an interactive shell gives each background job
// its own process group, but every job stays in the shell's session, so walking /proc for
// the session catches `sleep 1000 &` typed at a bash prompt. A process that called setsid
// is no member: sessionTree finds those as well.
func sessionMembers(sid int) []int {
	var pids []int
	walkProc(func(pid int, stat []byte) {
		if s, ok := statSession(stat); ok && s == sid {
			pids = append(pids, pid)
		}
	})
	return pids
}

// statSession extracts the session id from a /proc/<pid>/stat line. The command name is in
// parentheses and may itself hold spaces and parentheses, so fields are counted from the
// last ')': state, ppid, pgrp, session.
func statSession(stat []byte) (int, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 4 {
		return 0, false
	}
	n, err := strconv.Atoi(string(f[3]))
	return n, err == nil
}

// signalSession sends sig to the process group leader and to every process of its
// session (sessionTree: also those that called setsid), and returns the processes other than
// leader that took it. With r.bySid false the group and the session id are left alone:
// they may be a stranger's by now (see session.kill). Errors are ignored: the usual one
// is ESRCH, nothing left to signal.
func signalSession(r sessionRef, sig syscall.Signal) []procKey {
	leader, bySid := r.leader, r.bySid
	if bySid {
		_ = syscall.Kill(-leader, sig)
	}
	var hit []procKey
	for _, p := range sessionTree([]sessionRef{r})[0] {
		if syscall.Kill(p.pid, sig) == nil && p.pid != leader {
			hit = append(hit, p)
		}
	}
	return hit
}
