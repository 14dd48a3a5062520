package server

import (
	"log/slog"
	"os"

	"github.com/mcp-harness/mcp-harness/internal/envpolicy"
	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
)

// confinement is what confines the commands a server starts: its sandbox launcher, the
// environment they inherit, and the names of the variables that environment withholds.
type confinement struct {
	sandbox  *sandbox.Launcher
	env      []string
	withheld []string
}

// confine makes the confinement of a server on ws. A zero Config's sandbox and env
// policy are the command line's defaults (workspace-write, network on; scrub). The state
// and artifacts directories are protected (made first, so that they exist when the read-only
// view is made). An error is a policy the system cannot enforce that was asked for
// explicitly: the server does not start.
func confine(cfg Config, ws *workspace.Workspace, log *slog.Logger) (*confinement, error) {
	sc := cfg.Sandbox
	if sc.Mode == "" {
		sc.Mode = sandbox.WorkspaceWrite
	}
	if sc.Network == "" {
		sc.Network = sandbox.NetworkOn
	}
	sc.Workspace = ws.Root
	sc.Protected = []string{ws.StateDir, ws.ArtifactsDir}
	if err := os.MkdirAll(ws.ArtifactsDir, 0o700); err != nil {
		log.Warn("cannot make the artifacts directory ahead of the sandbox; it is not protected from commands", "dir", ws.ArtifactsDir, "err", err)
	}
	l, err := sandbox.New(sc, log)
	if err != nil {
		return nil, err
	}
	ep := cfg.EnvPolicy
	if ep.Mode == "" {
		ep.Mode = envpolicy.Scrub
	}
	env, withheld := ep.Apply(os.Environ())
	if len(withheld) > 0 {
		log.Info("commands do not inherit these variables (--env-policy, --env-allow)", "names", withheld)
	}
	return &confinement{sandbox: l, env: env, withheld: withheld}, nil
}
