package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/mcp-harness/mcp-harness/internal/server"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
)

// The server's logs. A client shows a server's stderr as it likes: Claude Code prefixes
// every line with "[ERROR] ... Server stderr:", so stderr says nothing on a normal start
// and gets warnings and errors only (--log-level info or debug for more). The whole story
// goes to <state>/server.log as well, at info or the --log-level if lower, so a person can
// read what happened after the client hid it. Every server on the workspace appends to
// the same file (each line names its runner).

const (
	// LogFileName is the log file in the state dir.
	LogFileName = "server.log"
	// maxLogFile bounds server.log: once a write would take it past this, it is renamed
	// server.log.1 (replacing the one before) and a new server.log starts. So the logs
	// of a workspace take at most twice this, and the last few thousand lines are always
	// there.
	maxLogFile = 5 << 20
	// defaultLogLevel is the stderr level of a normal start.
	defaultLogLevel = "warn"
)

// completeServeConfig fills in what the commands that serve (stdio, and runner for a
// detached graph) add to their flags alike: the version, and the logger of cfg's
// workspace (see newLogger), whose stderr side goes to stderr. close closes the log file.
func completeServeConfig(cfg *server.Config, version, levelName string, stderr io.Writer) (close func() error, err error) {
	cfg.Version = version
	logger, close, err := newLogger(workspace.Config{Dir: cfg.Workspace, StateDir: cfg.StateDir, ArtifactsDir: cfg.ArtifactsDir}, levelName, stderr)
	if err != nil {
		return nil, err
	}
	cfg.Logger = logger
	return close, nil
}

// newLogger parses the --log-level name and opens the workspace's log file: the logger
// writes to stderr at that level and to the file at info or that level if lower. close
// closes the file. A bad level is a usageError, found before anything is created.
func newLogger(wcfg workspace.Config, levelName string, stderr io.Writer) (logger *slog.Logger, close func() error, err error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(levelName)); err != nil {
		return nil, nil, usagef("--log-level %q: want debug, info, warn or error", levelName)
	}
	ws, err := workspace.Open(wcfg)
	if err != nil {
		return nil, nil, err
	}
	file, err := openLogFile(filepath.Join(ws.StateDir, LogFileName), maxLogFile)
	if err != nil {
		return nil, nil, err
	}
	logger = slog.New(slog.NewMultiHandler(
		slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}),
		slog.NewTextHandler(file, &slog.HandlerOptions{Level: min(level, slog.LevelInfo)}),
	))
	return logger, file.Close, nil
}

// logFile is an append-only log file that is rotated at a size, safe for use by several
// goroutines and shared with other processes appending to the same path.
type logFile struct {
	mu   sync.Mutex
	path string
	max  int64
	f    *os.File
}

func openLogFile(path string, max int64) (*logFile, error) {
	l := &logFile{path: path, max: max}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

// open opens path for appending, creating it 0600 whatever the umask: logs name commands
// and paths of the project.
func (l *logFile) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("log file: %w", err)
	}
	l.f = f
	return nil
}

// Write appends p, first rotating the file if p would take it past the bound. A log line
// that cannot be written is dropped rather than failing what was being logged.
func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return 0, os.ErrClosed
	}
	if fi, err := l.f.Stat(); err == nil && fi.Size()+int64(len(p)) > l.max && fi.Size() > 0 {
		l.rotate()
	}
	return l.f.Write(p)
}

// rotate moves the full file aside and starts a new one. Another server on the workspace
// may have done it already: then our file is the one moved aside, and path is a new file
// that we only reopen. (Two servers rotating at the very same moment may lose the older
// half; the bound holds either way.)
func (l *logFile) rotate() {
	mine, err := l.f.Stat()
	if err != nil {
		return
	}
	cur, err := os.Stat(l.path)
	switch {
	case err == nil && !os.SameFile(mine, cur):
		// rotated by another process: append to the new file
	case err == nil || errors.Is(err, fs.ErrNotExist):
		if err == nil {
			if err := os.Rename(l.path, l.path+".1"); err != nil {
				return
			}
		}
	default:
		return
	}
	old := l.f
	if err := l.open(); err != nil {
		l.f = old // keep writing where we were rather than lose the lines
		return
	}
	old.Close()
}

// Close closes the file; later writes fail.
func (l *logFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
