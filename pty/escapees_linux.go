package pty

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/procstat"
	"github.com/mcp-harness/mcp-harness/internal/reaper"
)

// A session's processes are all of it, also those that called setsid: sessionTree finds
// them, for Close to end and for the port checks to count. A process is the session's
// when
//
//   - its session id is the session's (the program's pid): what the program and its jobs
//     run, as long as they stay in the session;
//   - or its parent is the session's: a setsid'd server whose parent still runs;
//   - or its parent is this process and its environment carries the session's mark
//     (markVar): an orphan that left with setsid and whose parent then exited, which the
//     server adopted as a child subreaper (internal/reaper). Without the subreaper such
//     an orphan goes to init and is not found;
//   - or it was found to be the session's before (seenMembers, by pid and start time),
//     by any of these rules, at a check: what waitPort, ports, Close and every IO call's
//     return make. This finds an orphan whose environment was reset (sudo's env_reset,
//     env -i) if it was seen while its parent still ran;
//   - or its parent is this process, it carries no mark, and its standard input, output
//     or error is the session's terminal: an orphan whose environment was reset that
//     kept the terminal (env -i setsid -f). A process that holds a pty slave open keeps
//     its number from being given to another terminal, so the path names ours.
//
// What is still missed: an orphan whose environment was reset, that left and lost its
// parent between two checks and holds no descriptor of the session's terminal, such as
// sudo setsid -f sleep under sudo's use_pty (its descriptors are sudo's own inner
// terminal, gone with sudo).
//
// The environment and descriptors are read only of this process's own children other
// than the sessions' programs (task commands and adopted orphans), and the environment
// once per process (markCache), so a check costs one read of every /proc/<pid>/stat, as
// counting by session id alone did.

// sessionRef names a session to sessionTree: its program's pid, its mark, and whether its
// session id still stands for it (not once the program was reaped and its pid may have
// been taken by a stranger; see session.kill).
type sessionRef struct {
	leader int
	mark   string
	bySid  bool
	pts    string // its terminal's slave, "" where not known
}

// noteSession runs a check of the session's processes for what it remembers (seenMembers).
func noteSession(r sessionRef) { sessionTree([]sessionRef{r}) }

// procEntry is what sessionTree reads of a process in /proc/<pid>/stat.
type procEntry struct {
	ppid, sid int
	state     byte
	start     uint64
}

func parseProcEntry(stat []byte) (procEntry, bool) {
	st, ok := procstat.Parse(stat)
	return procEntry{ppid: st.PPid, sid: st.Session, state: st.State, start: st.Start}, ok
}

// sessionTree returns, for each of refs, the session's live processes (its program's
// included), in no particular order.
func sessionTree(refs []sessionRef) [][]procKey {
	procs := map[int]procEntry{}
	walkProc(func(pid int, stat []byte) {
		if e, ok := parseProcEntry(stat); ok {
			procs[pid] = e
		}
	})
	markCache.prune(procs)
	seenMembers.prune(procs)
	self := os.Getpid()
	bySid, byMark, byPts := map[int]int{}, map[string]int{}, map[string]int{}
	for i, r := range refs {
		if r.bySid {
			bySid[r.leader] = i
		}
		if r.mark != "" {
			byMark[r.mark] = i
		}
		if r.pts != "" {
			byPts[r.pts] = i
		}
	}
	owner := map[int]int{} // pid -> index in refs, -1 for none
	resolve := func(pid int) int {
		var chain []int
		r := -1
		for p := pid; ; {
			if v, ok := owner[p]; ok {
				r = v
				break
			}
			e, ok := procs[p]
			if !ok || len(chain) > len(procs) { // gone meanwhile, or a torn read
				break
			}
			chain = append(chain, p)
			if i, ok := bySid[e.sid]; ok {
				r = i
				break
			}
			if i, ok := byMark[seenMembers.lookup(procKey{p, e.start})]; ok {
				r = i
				break
			}
			if e.ppid == self {
				mark := markCache.get(p, e.start)
				if i, ok := byMark[mark]; ok {
					r = i
				} else if i, ok := byPts[stdTerminal(p)]; ok && mark == "" {
					r = i
				}
				break
			}
			if e.ppid <= 1 {
				break
			}
			p = e.ppid
		}
		for _, p := range chain {
			owner[p] = r
		}
		return r
	}
	out := make([][]procKey, len(refs))
	for pid, e := range procs {
		if e.state == 'Z' || e.state == 'X' || pid == self {
			continue
		}
		if i := resolve(pid); i >= 0 {
			out[i] = append(out[i], procKey{pid, e.start})
			if refs[i].mark != "" {
				seenMembers.put(procKey{pid, e.start}, refs[i].mark)
			}
		}
	}
	return out
}

// stdTerminal returns the pty slave process pid has as its standard input, output or
// error, or "".
func stdTerminal(pid int) string {
	for fd := range 3 {
		link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(fd))
		if err == nil && strings.HasPrefix(link, "/dev/pts/") {
			return link
		}
	}
	return ""
}

// seenMembers remembers, by pid and start time, each process a check found to be a
// session's, with that session's mark: once its parent is gone and its environment
// carries no mark, nothing else tells whose it was.
var seenMembers = markTable{m: map[procKey]string{}}

// markCache holds the mark (or "") each child of this process carries, by pid and start
// time: an environment is what the process was started with and is read once. An empty
// one is not remembered: a process that is exiting, or in the middle of an exec, shows
// none for a moment.
var markCache = markTable{m: map[procKey]string{}}

// procKey names one process: a pid is reused, a pid with its start time is not.
type procKey struct {
	pid   int
	start uint64
}

type markTable struct {
	mu sync.Mutex
	m  map[procKey]string
}

// lookup returns what is remembered for one process, without reading anything.
func (c *markTable) lookup(k procKey) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

func (c *markTable) put(k procKey, mark string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[k] = mark
}

func (c *markTable) get(pid int, start uint64) string {
	k := procKey{pid, start}
	c.mu.Lock()
	v, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return v
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil || len(env) == 0 {
		return "" // gone, exiting, or not ours to read: asked again next time
	}
	for _, kv := range bytes.Split(env, []byte{0}) {
		if m, ok := bytes.CutPrefix(kv, []byte(markVar+"=")); ok {
			v = string(m) // the last one counts, as for getenv
		}
	}
	c.mu.Lock()
	c.m[k] = v
	c.mu.Unlock()
	return v
}

// prune forgets the processes that are gone.
func (c *markTable) prune(procs map[int]procEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if e, ok := procs[k.pid]; !ok || e.start != k.start {
			delete(c.m, k)
		}
	}
}

// awaitGone sends SIGKILL to each of procs that is still the process it names, then
// waits, until deadline, for them to be gone: a zombie child of this process (an adopted
// orphan) is collected here, one whose parent is another of procs waits for that parent
// to die (it is then adopted), and any other zombie is its parent's business and counts
// as gone. procs are what the rounds of signals found (a process dying of SIGHUP may no
// longer show its mark when the SIGKILL round looks), so each gets the SIGKILL itself.
func awaitGone(procs []procKey, deadline time.Time) {
	self := os.Getpid()
	read := func(k procKey) (procEntry, bool) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(k.pid) + "/stat")
		if err != nil {
			return procEntry{}, false
		}
		e, ok := parseProcEntry(b)
		return e, ok && e.start == k.start
	}
	for _, k := range procs {
		if e, ok := read(k); ok && e.state != 'Z' {
			_ = syscall.Kill(k.pid, syscall.SIGKILL)
		}
	}
	pause := time.Millisecond
	for len(procs) > 0 {
		waiting := map[int]bool{}
		for _, k := range procs {
			waiting[k.pid] = true
		}
		var left []procKey
		for _, k := range procs {
			e, ok := read(k)
			switch {
			case !ok: // gone, or its pid is another process's now
			case e.state == 'Z' && e.ppid == self:
				if !reaper.Collect(k.pid) {
					left = append(left, k)
				}
			case e.state == 'Z' && !waiting[e.ppid]:
			default:
				left = append(left, k)
			}
		}
		procs = left
		if len(procs) == 0 || !time.Now().Before(deadline) {
			return
		}
		time.Sleep(pause) // dying takes the kernel a moment; nothing signals it here
		pause = min(2*pause, 20*time.Millisecond)
	}
}
