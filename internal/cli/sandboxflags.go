package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mcp-harness/mcp-harness/internal/envpolicy"
	"github.com/mcp-harness/mcp-harness/internal/sandbox"
)

// sandboxFlags are the flags of what confines the commands a server starts and what of
// its environment they inherit (internal/sandbox, internal/envpolicy). The stdio server
// and the detached runner both take them: a detached graph is confined as its server's
// would have been.
type sandboxFlags struct {
	mode, network string
	writable      []string
	envPolicy     string
	envAllow      []string
}

// sandboxFlagNames are the flags a detached runner takes over from its server.
var sandboxFlagNames = []string{"sandbox", "network", "writable", "env-policy", "env-allow"}

func addSandboxFlags(f *pflag.FlagSet, sf *sandboxFlags) {
	f.StringVar(&sf.mode, "sandbox", string(sandbox.WorkspaceWrite), "what commands may write: workspace-write (the workspace, temp directories and build caches), read-only (temp directories only) or off")
	f.StringVar(&sf.network, "network", string(sandbox.NetworkOn), "whether commands may use IP sockets: on or off (Unix sockets always work)")
	f.StringArrayVar(&sf.writable, "writable", nil, "a directory commands may also write in workspace-write (repeatable; in MCP_HARNESS_WRITABLE, a PATH-style list)")
	f.StringVar(&sf.envPolicy, "env-policy", string(envpolicy.Scrub), "what of this server's environment commands inherit: inherit (all), scrub (all but secret-looking names: *KEY*, *TOKEN*, *SECRET*, ...) or minimal (PATH, HOME, locale and a few more)")
	f.StringArrayVar(&sf.envAllow, "env-allow", nil, "a variable commands inherit whatever the policy says; * globs (repeatable, or comma-separated)")
}

// config checks the flags of fs and makes the sandbox and env policy of a server on
// workspace root (resolved): a mistake is a usageError, found before anything starts.
func (sf *sandboxFlags) config(fs *pflag.FlagSet) (sandbox.Config, envpolicy.Policy, error) {
	cfg := sandbox.Config{Mode: sandbox.Mode(sf.mode), Network: sandbox.Network(sf.network)}
	if !cfg.Mode.Valid() {
		return cfg, envpolicy.Policy{}, usagef("--sandbox %q: want workspace-write, read-only or off", sf.mode)
	}
	if !cfg.Network.Valid() {
		return cfg, envpolicy.Policy{}, usagef("--network %q: want on or off", sf.network)
	}
	cfg.Explicit = fs.Changed("sandbox")
	for _, list := range sf.writable {
		for _, p := range filepath.SplitList(list) {
			if p == "" {
				continue
			}
			abs, err := filepath.Abs(p)
			if err == nil {
				abs, err = filepath.EvalSymlinks(abs)
			}
			if err != nil {
				return cfg, envpolicy.Policy{}, usagef("--writable %q: %v", p, unwrapPathError(err))
			}
			if st, err := os.Stat(abs); err != nil || !st.IsDir() {
				return cfg, envpolicy.Policy{}, usagef("--writable %q: not a directory", p)
			}
			cfg.Writable = append(cfg.Writable, abs)
		}
	}
	env := envpolicy.Policy{Mode: envpolicy.Mode(sf.envPolicy)}
	for _, list := range sf.envAllow {
		for _, name := range strings.Split(list, ",") {
			if name = strings.TrimSpace(name); name != "" {
				env.Allow = append(env.Allow, name)
			}
		}
	}
	if err := env.Validate(); err != nil {
		return cfg, env, usageError{fmt.Errorf("--env-policy/--env-allow: %w", err)}
	}
	return cfg, env, nil
}

// confinesFiles reports whether the flags ask for a file system mode, for which an
// ordinary user's server enters a user namespace at start (sandbox.ReexecForMounts).
func (sf *sandboxFlags) confinesFiles() bool { return sandbox.Mode(sf.mode) != sandbox.Off }

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
