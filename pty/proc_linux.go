package pty

import (
	"bytes"
	"strconv"
	"syscall"
)

// sessionMembers returns the pids of the processes whose session id is sid. Signalling the
// process group is not enough on its own: an interactive shell gives each background job
// its own process group, but every job stays in the shell's session, so walking /proc for
// the session catches `sleep 1000 &` typed at a bash prompt. Best effort: a process that
// called setsid itself has left on purpose and is not found.
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

// signalSession sends sig to the process group pgid and to every other process in the
// session sid (see sessionMembers). Errors are ignored: the usual one is ESRCH, nothing
// left to signal.
func signalSession(pgid, sid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
	for _, pid := range sessionMembers(sid) {
		_ = syscall.Kill(pid, sig)
	}
}
