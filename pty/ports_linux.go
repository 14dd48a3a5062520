package pty

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
)

// portsKnown is true where a session's listening ports can be found.
const portsKnown = true

// listening returns the TCP sockets in the LISTEN state, by inode, with their ports; only
// those on port when it is not 0. /proc/net/tcp and tcp6 list every socket of the
// network namespace; which process holds one shows in its /proc/<pid>/fd.
func listening(port int) map[uint64]int {
	out := map[uint64]int{}
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		lines := bytes.Split(b, []byte("\n"))
		for _, line := range lines[min(1, len(lines)):] { // the first line names the columns
			f := bytes.Fields(line)
			if len(f) < 10 || string(f[3]) != "0A" { // 0A: TCP_LISTEN
				continue
			}
			local := f[1] // address:port, both hex
			i := bytes.LastIndexByte(local, ':')
			p, err := strconv.ParseUint(string(local[i+1:]), 16, 16)
			if err != nil || port != 0 && int(p) != port {
				continue
			}
			inode, err := strconv.ParseUint(string(f[9]), 10, 64)
			if err != nil || inode == 0 {
				continue
			}
			out[inode] = int(p)
		}
	}
	return out
}

// sessionPorts returns, for each of the sessions whose programs' pids are in sids, the
// TCP ports its processes (sessionTree: also those that called setsid) listen on, sorted;
// only port when it is not 0.
func sessionPorts(sids map[int]bool, port int) map[int][]int {
	socks := listening(port)
	if len(socks) == 0 {
		return nil
	}
	refs := make([]sessionRef, 0, len(sids))
	for pid := range sids {
		refs = append(refs, sessionRef{leader: pid, mark: leaderMark(pid), bySid: true})
	}
	out := map[int][]int{}
	for i, pids := range sessionTree(refs) {
		sid := refs[i].leader
		for _, proc := range pids {
			for _, p := range socketPorts(proc.pid, socks) {
				if !slices.Contains(out[sid], p) {
					out[sid] = append(out[sid], p)
				}
			}
		}
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// socketPorts returns the ports of the sockets of socks that process pid holds open.
func socketPorts(pid int, socks map[uint64]int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	fds, _ := d.Readdirnames(-1)
	d.Close()
	var ports []int
	for _, fd := range fds {
		link, err := os.Readlink(dir + fd)
		if err != nil {
			continue
		}
		s, ok := strings.CutPrefix(link, "socket:[")
		if !ok {
			continue
		}
		inode, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64)
		if p, found := socks[inode]; err == nil && found {
			ports = append(ports, p)
		}
	}
	return ports
}
