package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/internal/server"
	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// runnerFlags are the stdio server's flags a detached runner takes over from the server
// that starts it (runnerCommand).
var runnerFlags = []string{"workspace", "state-dir", "artifacts-dir", "log-level", "max-parallel", "max-tasks",
	"retention", "lease", "stale-after", "busy-timeout"}

// runnerCommand is the command line that starts a detached runner for the server whose
// flags are fs: this binary's hidden runner subcommand with the same workspace, state,
// limits and lease (tasks/detach.go appends --graph and --from).
func runnerCommand(fs *pflag.FlagSet) ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program for detached runners: %w", err)
	}
	argv := []string{exe, "runner"}
	for _, name := range append(append(runnerFlags, sandboxFlagNames...), remoteFlagNames...) {
		f := fs.Lookup(name)
		switch {
		case f == nil:
		case f.Value.Type() == "stringArray":
			values, _ := fs.GetStringArray(name)
			for _, v := range values {
				argv = append(argv, "--"+name+"="+v)
			}
		case f.Changed || f.Value.String() != "":
			argv = append(argv, "--"+name+"="+f.Value.String())
		}
	}
	return argv, nil
}

// newRunnerCmd is the hidden subcommand a server starts for a detached graph
// (tasks/detach.go, server.RunDetached). Its stdin and stdout are /dev/null, it logs to the
// state dir's server.log, and it tells its server on fd 3 when it has claimed the graph.
func newRunnerCmd(version string) *cobra.Command {
	var (
		cfg           server.Config
		sf            sandboxFlags
		rf            remoteFlags
		logLevel      string
		graphID, from string
	)
	cmd := &cobra.Command{
		Use:    "runner",
		Short:  "Run one detached graph (started by the server; not for people)",
		Args:   cobra.NoArgs,
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if graphID == "" || from == "" {
				return usagef("--graph and --from are required")
			}
			var err error
			if cfg.Sandbox, cfg.EnvPolicy, err = sf.config(cmd.Flags()); err != nil {
				return err
			}
			if cfg.Remote, err = rf.config(); err != nil {
				return err
			}
			// Its server always passes --sandbox; whether this system can enforce it was
			// settled when that server started, which degraded or refused as it had to.
			cfg.Sandbox.Explicit = false
			if sf.confinesFiles() {
				if err := sandbox.ReexecForMounts(); err != nil {
					return err
				}
			}
			closeLog, err := completeServeConfig(&cfg, version, logLevel, io.Discard)
			if err != nil {
				return err
			}
			defer closeLog()
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			signal.Ignore(syscall.SIGHUP)
			claimed := os.NewFile(3, "claimed")
			if claimed == nil {
				claimed, _ = os.Open(os.DevNull)
			}
			if err := server.RunDetached(ctx, cfg, graphID, from, claimed); err != nil {
				cfg.Logger.Error("detached runner", "graph", graphID, "err", err)
				return err
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&graphID, "graph", "", "the graph to run")
	f.StringVar(&from, "from", "", "the runner that stored it")
	f.StringVar(&cfg.Workspace, "workspace", ".", "the project directory")
	f.StringVar(&cfg.StateDir, "state-dir", "", "where the database and logs live")
	f.StringVar(&cfg.ArtifactsDir, "artifacts-dir", "", "where finished graphs' logs are archived")
	f.StringVar(&logLevel, "log-level", defaultLogLevel, "log level")
	f.IntVar(&cfg.MaxParallel, "max-parallel", runtime.NumCPU(), "the most tasks running at once")
	f.IntVar(&cfg.MaxTasks, "max-tasks", 10000, "the most tasks in one graph")
	f.DurationVar(&cfg.Retention, "retention", 168*time.Hour, "retention")
	f.DurationVar(&cfg.Lease, "lease", tasks.DefaultLease, "lease")
	f.DurationVar(&cfg.StaleAfter, "stale-after", tasks.DefaultStaleAfter, "stale after")
	f.DurationVar(&cfg.BusyTimeout, "busy-timeout", store.DefaultBusyTimeout, "busy timeout")
	addSandboxFlags(f, &sf)
	addRemoteFlags(f, &rf)
	return cmd
}
