package tasks

// This file holds a graph's working directories open between the starts of its tasks.
// Every start checks its task's cwd again (an earlier task may have swapped a directory on
// the path for a symlink out of the workspace) and has the child enter the directory
// checked, through its open descriptor (workspace.Dir). Opening and checking a directory from
// scratch costs a few dozen system calls; checking one held open costs a few
// (workspace.Workspace.Recheck), with the same guarantee, so a graph keeps the directories of
// its tasks open until it ends, and opens one afresh whenever Recheck cannot vouch for it.

import (
	"sync"

	"github.com/mcp-harness/mcp-harness/internal/workspace"
)

// maxHeldDirs bounds the directories a graph holds open: most graphs use one or a few,
// and a graph with a cwd per task must not hold thousands of descriptors.
const maxHeldDirs = 8

// graphDirs is a graph's open working directories, by cwd. Its own lock, not e.mu: spawn
// uses it outside e.mu, and dropLocked closes it with e.mu held (e.mu, then mu).
type graphDirs struct {
	mu     sync.Mutex
	held   map[string]*heldDir
	closed bool
}

type heldDir struct {
	d     *workspace.Dir
	users int  // starts using it now
	stale bool // no longer held for later starts: closed once users is 0
}

// enter returns the checked directory for a task of the graph with cwd to start in, its
// path as checked, and a release to call once the process has started (or failed to).
func (gd *graphDirs) enter(ws *workspace.Workspace, cwd string) (*workspace.Dir, string, func(), error) {
	gd.mu.Lock()
	h := gd.held[cwd]
	if h != nil {
		h.users++
	}
	gd.mu.Unlock()
	if h != nil {
		path, err := ws.Recheck(h.d, cwd)
		if err == nil {
			return h.d, path, func() { gd.release(h) }, nil
		}
		// Changed, or cannot be vouched for: open it afresh below, which checks it
		// from scratch (and reports what is wrong, if anything).
		gd.mu.Lock()
		if gd.held[cwd] == h {
			delete(gd.held, cwd)
			h.stale = true
		}
		gd.mu.Unlock()
		gd.release(h)
	}
	d, err := ws.OpenDir(cwd)
	if err != nil {
		return nil, "", nil, err
	}
	h = &heldDir{d: d, users: 1}
	gd.mu.Lock()
	if gd.closed || gd.held[cwd] != nil || len(gd.held) >= maxHeldDirs {
		h.stale = true
	} else {
		if gd.held == nil {
			gd.held = map[string]*heldDir{}
		}
		gd.held[cwd] = h
	}
	gd.mu.Unlock()
	return d, d.Path, func() { gd.release(h) }, nil
}

func (gd *graphDirs) release(h *heldDir) {
	gd.mu.Lock()
	defer gd.mu.Unlock()
	h.users--
	if h.users == 0 && h.stale {
		h.d.Close()
	}
}

// close closes the directories held, at once or, for those a start still uses, once it
// has started.
func (gd *graphDirs) close() {
	gd.mu.Lock()
	defer gd.mu.Unlock()
	gd.closed = true
	for cwd, h := range gd.held {
		h.stale = true
		if h.users == 0 {
			h.d.Close()
		}
		delete(gd.held, cwd)
	}
}
