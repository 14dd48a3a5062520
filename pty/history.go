package pty

import (
	"os"
	"path/filepath"
	"sync"
)

// histories is the directory of this Manager's shell history files (historyVars): one
// file per session in a private directory of the temp directory, which a confined shell
// may write, removed with the session and, whole, at Shutdown.
type histories struct {
	mu  sync.Mutex
	dir string // made on first use
}

// historyFile is the history file of session id, or "" when no directory can be made
// (the shell then keeps its own default).
func (m *Manager) historyFile(id string) string {
	h := &m.histories
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dir == "" {
		dir, err := os.MkdirTemp("", "mcp-harness-history-")
		if err != nil {
			m.log.Warn("pty: no history directory; shells keep their own history files", "err", err)
			return ""
		}
		h.dir = dir
	}
	return filepath.Join(h.dir, id)
}

// removeHistory deletes one session's history file.
func removeHistory(file string) {
	if file != "" {
		os.Remove(file)
	}
}

// remove deletes the directory and every file in it.
func (h *histories) remove() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dir != "" {
		os.RemoveAll(h.dir)
		h.dir = ""
	}
}
