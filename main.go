// Command mcp-harness is a stdio MCP server that gives an AI coding agent persistent PTY
// sessions and a durable task-DAG engine on one workspace. This file is the command line:
// flags become a tools.Config, SIGTERM and SIGINT cancel tools.Serve, and errors become exit
// statuses; the tools package does the rest.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcp-harness/mcp-harness/pty"
	"github.com/mcp-harness/mcp-harness/tools"
)

// version is set at release time with -ldflags "-X main.version=...".
var version = "dev"

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
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	root.AddCommand(newStdioCmd(), newVersionCmd(), newTasksCmd())
	return root
}

// usageError is a command-line mistake: exit status 2, like flag parsing errors.
type usageError struct{ error }

func exitCode(err error) int {
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
	)
	cmd := &cobra.Command{
		Use:   "stdio",
		Short: "Serve MCP on stdin/stdout (this is what an MCP client launches)",
		Args:  cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			return flagsFromEnv(cmd.Flags())
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", logLevel)}
			}
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			cfg.ShellBuffer = int(buffer)
			cfg.Version = version
			return serveStdio(cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Workspace, "workspace", ".", "the project directory the tools work in (resolved to an absolute, symlink-free path)")
	f.StringVar(&cfg.StateDir, "state-dir", "", "where the database and logs live (default <workspace>/.mcp-harness)")
	f.StringVar(&cfg.ArtifactsDir, "artifacts-dir", "", "where finished graphs' logs are archived (default <state-dir>/artifacts)")
	f.StringVar(&logLevel, "log-level", "info", "stderr log level: debug, info, warn or error")
	f.DurationVar(&cfg.MaxWait, "max-wait", 30*time.Second, "the longest any call waits; longer timeoutMs/waitMs are clamped to it")
	f.IntVar(&cfg.MaxSessions, "max-sessions", 32, "the most PTY sessions open at once")
	f.IntVar(&cfg.MaxParallel, "max-parallel", runtime.NumCPU(), "the most tasks running at once, over all graphs")
	f.IntVar(&cfg.MaxTasks, "max-tasks", 10000, "the most tasks in one graph")
	f.DurationVar(&cfg.Retention, "retention", 168*time.Hour, "how long finished graphs keep their live logs before only their archive is kept")
	f.Var(&buffer, "shell-buffer", "output kept per PTY session (B, KiB or MiB suffix)")
	f.BoolVar(&cfg.MCPTasks, "mcp-tasks", false, "also speak the MCP Tasks extension (io.modelcontextprotocol/tasks) for tasks_run")
	return cmd
}

// terminalNotice is printed when a person runs the server by hand: it would otherwise sit
// silently waiting for JSON-RPC.
const terminalNotice = "mcp-harness: this is an MCP server; it waits for a client on stdin (see the README for how to configure Claude Desktop, Codex or Cursor). Press Ctrl-D or Ctrl-C to quit."

// serveStdio runs the server on the process's standard streams until stdin ends or the
// process gets SIGTERM or SIGINT, then shuts down cleanly (exit status 0). A second signal
// during the shutdown exits at once with status 1: whoever sent it has stopped waiting.
func serveStdio(cfg tools.Config) error {
	if pty.IsTerminal(os.Stdin.Fd()) {
		fmt.Fprintln(os.Stderr, terminalNotice)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(signals)
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
			cfg.Logger.Warn("second signal: exiting at once", "signal", sig.String())
			os.Exit(1)
		case <-served:
		}
	}()
	return tools.Serve(ctx, cfg, os.Stdin, os.Stdout)
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), version)
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
