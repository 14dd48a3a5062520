// Command mcp-harness is a stdio MCP server that gives an AI coding agent persistent PTY
// sessions and a durable task-DAG engine on one workspace. This file is the command line:
// flags become a tools.Config, SIGTERM, SIGINT and SIGHUP (and a client that stops reading
// stdout) cancel tools.Serve, and errors become exit statuses; the tools package does the
// rest.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-harness/mcp-harness/pty"
	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks"
	"github.com/mcp-harness/mcp-harness/tools"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// envPrefix names the environment variables that stand in for flags: --max-wait can be
// given as MCP_HARNESS_MAX_WAIT, since some clients make env easier to set than args.
const envPrefix = "MCP_HARNESS_"

func main() {
	if err := newRootCmd().Execute(); err != nil {
		os.Exit(exitCode(err))
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "mcp-harness",
		Short:         "An MCP server with persistent terminals and durable task graphs for coding agents",
		Long:          "mcp-harness is a stdio MCP server that an MCP client (Claude Desktop, Codex, Cursor)\nlaunches to get persistent PTY sessions and a durable task-DAG engine on a workspace.\n\nFlags can also be set through environment variables: --max-wait as MCP_HARNESS_MAX_WAIT.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       currentVersion(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	root.SetVersionTemplate("{{.Version}}\n") // as `mcp-harness version` prints it
	root.AddCommand(newStdioCmd(), newVersionCmd(), newTasksCmd(), newRunnerCmd())
	setUsageErrors(root) // after every command is added: see usage.go
	return root
}

func exitCode(err error) int {
	var status exitStatus
	if errors.As(err, &status) {
		return int(status)
	}
	fmt.Fprintln(os.Stderr, "mcp-harness:", err)
	if _, ok := err.(usageError); ok {
		return 2
	}
	return 1
}

func newStdioCmd() *cobra.Command {
	var (
		cfg      tools.Config
		logLevel string
		buffer   = byteSize(4 << 20)
		result   = byteSize(tasks.DefaultMaxResult)
	)
	cmd := &cobra.Command{
		Use:   "stdio",
		Short: "Serve MCP on stdin/stdout (this is what an MCP client launches)",
		Args:  cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			return flagsFromEnv(cmd.Flags())
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFlagValues(cmd.Flags(), "max-wait", "retention", "max-sessions", "max-parallel", "max-tasks"); err != nil {
				return err
			}
			cfg.ShellBuffer = int(buffer)
			if result < tasks.MinMaxResult {
				return usageError{fmt.Errorf("--max-result %s: want at least %dKiB, room for a graph's head and one task", &result, tasks.MinMaxResult>>10)}
			}
			cfg.MaxResult = int(result)
			cfg.Version = currentVersion()
			logger, closeLog, err := newLogger(store.WorkspaceConfig{Dir: cfg.Workspace, StateDir: cfg.StateDir, ArtifactsDir: cfg.ArtifactsDir}, logLevel, os.Stderr)
			if err != nil {
				return err
			}
			defer closeLog()
			cfg.Logger = logger
			if cfg.RunnerCommand, err = runnerCommand(cmd.Flags()); err != nil {
				return err
			}
			return serveStdio(cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Workspace, "workspace", ".", "the project directory the tools work in (resolved to an absolute, symlink-free path)")
	f.StringVar(&cfg.StateDir, "state-dir", "", "where the database and logs live (default <workspace>/.mcp-harness)")
	f.StringVar(&cfg.ArtifactsDir, "artifacts-dir", "", "where finished graphs' logs are archived (default <state-dir>/artifacts)")
	f.StringVar(&logLevel, "log-level", defaultLogLevel, "stderr log level: debug, info, warn or error (<state-dir>/server.log gets info and up, or debug)")
	f.DurationVar(&cfg.MaxWait, "max-wait", 30*time.Second, "the longest any call waits; longer timeoutMs/waitMs are clamped to it")
	f.IntVar(&cfg.MaxSessions, "max-sessions", 32, "the most PTY sessions open at once")
	f.IntVar(&cfg.MaxParallel, "max-parallel", runtime.NumCPU(), "the most tasks running at once, over all graphs")
	f.IntVar(&cfg.MaxTasks, "max-tasks", 10000, "the most tasks in one graph")
	f.DurationVar(&cfg.Retention, "retention", 168*time.Hour, "how long finished graphs keep their live logs before only their archive is kept")
	f.Var(&buffer, "shell-buffer", "output kept per PTY session (B, KiB or MiB suffix)")
	f.Var(&result, "max-result", "the largest result a tool returns: its text, and its structured content as JSON (B, KiB or MiB suffix); larger ones are paged or cut")
	f.BoolVar(&cfg.MCPTasks, "mcp-tasks", false, "also speak the MCP Tasks extension (io.modelcontextprotocol/tasks) for tasks_run")
	f.BoolVar(&cfg.Detach, "detach", false, "tasks_run's default for detach: run each graph in a process of its own that outlives the server")
	// For tests only, so that a stalled runner or a locked database plays out in seconds:
	// hidden, and documented in the README's "What survives a restart".
	f.DurationVar(&cfg.Lease, "lease", tasks.DefaultLease, "how long the runner's lease runs from each renewal (tests)")
	f.DurationVar(&cfg.StaleAfter, "stale-after", tasks.DefaultStaleAfter, "how long past its lease a silent runner whose process exists counts as alive (tests)")
	f.DurationVar(&cfg.BusyTimeout, "busy-timeout", store.DefaultBusyTimeout, "how long one attempt at a write waits for another process's lock on the database (tests)")
	for _, name := range []string{"lease", "stale-after", "busy-timeout"} {
		f.MarkHidden(name)
	}
	return cmd
}

// terminalNotice is printed when a person runs the server by hand: it would otherwise sit
// silently waiting for JSON-RPC.
const terminalNotice = "mcp-harness: this is an MCP server; it waits for a client on stdin (see the README for how to configure Claude Desktop, Codex or Cursor). Press Ctrl-D or Ctrl-C to quit."

// serveStdio runs the server on the process's standard streams until stdin ends, the
// process gets SIGTERM, SIGINT or SIGHUP (its terminal closed), or the client closes its
// end of stdout, then shuts down cleanly (exit status 0). A second signal during the
// shutdown exits at once with status 1, whoever sent it having stopped waiting, after at
// most about a second spent recording the tasks' states (tools.Server.Abort).
func serveStdio(cfg tools.Config) error {
	if pty.IsTerminal(os.Stdin.Fd()) {
		fmt.Fprintln(os.Stderr, terminalNotice)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(signals)
	// Without this, the Go runtime kills the process with SIGPIPE on a write to a stdout
	// (or stderr) whose reader is gone. Asked for, the signal is only delivered here, and
	// the write fails with EPIPE, which stdout below turns into the end of the session. The
	// signal itself is no reason to stop (a write to any other broken pipe raises it too),
	// so nothing reads the channel: it drops what it cannot hold. Not signal.Ignore: an
	// ignored SIGPIPE would be inherited by every task and shell this server starts.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	stdout := &endOnBrokenPipe{w: os.Stdout, end: func() {
		cfg.Logger.Info("shutting down: the client closed its end of stdout")
		cancel()
	}}
	abort := make(chan struct{})
	cfg.Abort = abort
	// served ends the watcher once Serve returns, so a signal that arrives after a clean
	// shutdown cannot turn its exit status into 1.
	served := make(chan struct{})
	defer close(served)
	go func() {
		select {
		case sig := <-signals:
			cfg.Logger.Info("shutting down", "signal", sig.String())
			cancel()
		case <-served:
			return
		}
		select {
		case sig := <-signals:
			cfg.Logger.Warn("second signal: recording what can be recorded, then exiting at once", "signal", sig.String())
			close(abort) // Serve returns tools.ErrAborted: exit status 1
		case <-served:
			return
		}
		select {
		case <-signals: // a third: not even that
			os.Exit(1)
		case <-served:
		}
	}()
	return tools.Serve(ctx, cfg, os.Stdin, stdout)
}

// endOnBrokenPipe writes to the client's stdout and calls end, once, when a write fails
// because the client closed its end (EPIPE): the session is over, and the server shuts
// down cleanly as if stdin had ended.
type endOnBrokenPipe struct {
	w    io.Writer
	end  func()
	once sync.Once
}

func (p *endOnBrokenPipe) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.once.Do(p.end)
	}
	return n, err
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), currentVersion())
		},
	}
}

// flagsFromEnv sets every flag not given on the command line from its environment variable,
// if that is set: --max-wait from MCP_HARNESS_MAX_WAIT.
func flagsFromEnv(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		name := envPrefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = usageError{fmt.Errorf("%s=%q: %v", name, v, e)}
			}
		}
	})
	return err
}

// byteSize is a flag value for sizes: a number of bytes with an optional B, KiB or MiB
// (or GiB) suffix.
type byteSize int64

func (b *byteSize) String() string {
	switch n := int64(*b); {
	case n != 0 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "MiB"
	case n != 0 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "KiB"
	default:
		return strconv.FormatInt(n, 10) + "B"
	}
}

func (b *byteSize) Set(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

func (b *byteSize) Type() string { return "size" }

func parseByteSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range units {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("%q is not a size: want a positive number with an optional B, KiB, MiB or GiB suffix", s)
	}
	return n * mult, nil
}

// version is set at release time with -ldflags "-X main.version=..."; when it is not,
// currentVersion reads the version from the build info.
var version string

// currentVersion is the version this binary reports: by `version` and `--version`, to
// clients as serverInfo.version, and in the runner's row. It is, first that applies: the
// version set at release; the main module's version from the build info, which is the
// tag for `go install github.com/mcp-harness/mcp-harness@v1.2.0` and, since Go 1.24, a
// pseudo-version made from the commit for a build in a git checkout ("+dirty" when the
// tree had changes); the commit, when the build info has one but no version; "dev".
// A leading "v" is dropped, so every way of installing reads alike (1.2.0).
func currentVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return versionOf(info)
}

// versionOf is the version a binary with build info info reports, when none was set at
// release.
func versionOf(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return strings.TrimPrefix(v, "v")
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "dev"
	}
	v := "dev-" + rev[:min(len(rev), 12)]
	if modified == "true" {
		v += "-dirty"
	}
	return v
}

// Exit statuses: 0 done, 1 failed, 2 a command-line mistake (as flag parsing and most Unix
// tools have it). Every mistake cobra or a command finds is a usageError: an unknown
// command (with cobra's "did you mean" suggestion when it has one) or flag, a missing or
// extra argument, a value that does not parse or makes no sense. It is found before
// anything is opened or created.

// usageError is a command-line mistake: exit status 2.
type usageError struct{ error }

// exitStatus is an outcome to exit with and nothing to say: `tasks logs --exit-status`
// has already said how the task ended.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// setUsageErrors makes every command-line mistake under root a usageError: flag errors,
// argument checks, and an unknown subcommand, which also gets cobra's suggestions. It also
// adds cobra's help and completion commands first, so that theirs are covered too.
func setUsageErrors(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	// Subcommands inherit the flag error function.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		switch {
		case c.HasSubCommands():
			c.Args = unknownSubcommand
			c.SuggestionsMinimumDistance = 2
			if !c.Runnable() {
				// cobra shows a command without Run its help, exit 0, before it checks
				// the arguments: `completion fsh` would not say it is mistyped.
				c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
			}
		case c.Args != nil:
			check := c.Args
			c.Args = func(cmd *cobra.Command, args []string) error {
				err := check(cmd, args)
				var u usageError
				if err == nil || errors.As(err, &u) {
					return err
				}
				return usageError{fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())}
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// unknownSubcommand is the argument check of a command that only groups subcommands: an
// argument cobra did not take for a subcommand is a mistyped one.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usageError{errors.New(msg + " (see " + cmd.CommandPath() + " --help)")}
}

// checkFlagValues refuses the values of fs that make no sense: a negative duration or
// count in any flag, and zero in the flags named in positive, for which zero means nothing
// (a --max-wait of 0s would make every wait return at once). Sizes check themselves
// (byteSize refuses anything under one byte).
func checkFlagValues(fs *pflag.FlagSet, positive ...string) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil {
			return
		}
		var neg, zero bool
		switch f.Value.Type() {
		case "duration":
			d, _ := time.ParseDuration(f.Value.String())
			neg, zero = d < 0, d == 0
		case "int", "int64":
			neg, zero = strings.HasPrefix(f.Value.String(), "-"), f.Value.String() == "0"
		default:
			return
		}
		want := "0 or more"
		mustBePositive := false
		for _, p := range positive {
			if p == f.Name {
				want, mustBePositive = "more than 0", true
			}
		}
		if neg || zero && mustBePositive {
			err = usagef("--%s %s: want %s", f.Name, f.Value, want)
		}
	})
	return err
}

// The server's logs. A client shows a server's stderr as it likes: Claude Code prefixes
// every line with "[ERROR] ... Server stderr:", so stderr says nothing on a normal start
// and gets warnings and errors only (--log-level info or debug for more). The whole story
// goes to <state>/server.log as well, at info or the --log-level if lower, so a person can
// read what happened after the client hid it. Every server on the workspace appends to
// the same file (each line names its runner).

const (
	// logFileName is the log file in the state dir.
	logFileName = "server.log"
	// maxLogFile bounds server.log: once a write would take it past this, it is renamed
	// server.log.1 (replacing the one before) and a new server.log starts. So the logs
	// of a workspace take at most twice this, and the last few thousand lines are always
	// there.
	maxLogFile = 5 << 20
	// defaultLogLevel is the stderr level of a normal start.
	defaultLogLevel = "warn"
)

// newLogger parses the --log-level name and opens the workspace's log file: the logger
// writes to stderr at that level and to the file at info or that level if lower. close
// closes the file. A bad level is a usageError, found before anything is created.
func newLogger(wcfg store.WorkspaceConfig, levelName string, stderr io.Writer) (logger *slog.Logger, close func() error, err error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(levelName)); err != nil {
		return nil, nil, usagef("--log-level %q: want debug, info, warn or error", levelName)
	}
	ws, err := store.OpenWorkspace(wcfg)
	if err != nil {
		return nil, nil, err
	}
	file, err := openLogFile(filepath.Join(ws.StateDir, logFileName), maxLogFile)
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
