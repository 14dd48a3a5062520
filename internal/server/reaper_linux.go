package server

import (
	"log/slog"

	"github.com/mcp-harness/mcp-harness/internal/reaper"
)

// startReaper makes the server a child subreaper for as long as its engines run, so a
// process a session started stays the server's to find and end after it called setsid and
// its parent exited (pty's sessionTree). Where that cannot be done safely the server runs
// without it, and such a process goes to init, as before.
func startReaper(log *slog.Logger) (stop func()) {
	stop, err := reaper.Start()
	if err != nil {
		log.Warn("not a child subreaper: processes that leave a session with setsid are not found once their parent exits", "err", err)
	}
	return stop
}
