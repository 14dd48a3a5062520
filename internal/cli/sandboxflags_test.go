package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/mcp-harness/mcp-harness/internal/envpolicy"
	"github.com/mcp-harness/mcp-harness/internal/sandbox"
)

func parseSandboxFlags(t *testing.T, env map[string]string, args ...string) (sandbox.Config, envpolicy.Policy, error) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	fs := pflag.NewFlagSet("stdio", pflag.ContinueOnError)
	var sf sandboxFlags
	addSandboxFlags(fs, &sf)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := flagsFromEnv(fs); err != nil {
		return sandbox.Config{}, envpolicy.Policy{}, err
	}
	return sf.config(fs)
}

func TestSandboxFlags(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	t.Run("OK/defaults", func(t *testing.T) {
		cfg, env, err := parseSandboxFlags(t, nil)
		if err != nil || cfg.Mode != sandbox.WorkspaceWrite || cfg.Network != sandbox.NetworkOn || cfg.Explicit || env.Mode != envpolicy.Scrub {
			t.Errorf("defaults = %+v %+v %v", cfg, env, err)
		}
	})
	t.Run("OK/given", func(t *testing.T) {
		cfg, env, err := parseSandboxFlags(t, nil, "--sandbox", "read-only", "--network=off", "--writable", a, "--writable", b+"/.",
			"--env-policy", "minimal", "--env-allow", "AWS_*,GITHUB_TOKEN", "--env-allow", "X")
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Mode != sandbox.ReadOnly || cfg.Network != sandbox.NetworkOff || !cfg.Explicit {
			t.Errorf("config = %+v", cfg)
		}
		ra, _ := filepath.EvalSymlinks(a)
		rb, _ := filepath.EvalSymlinks(b)
		if diff := cmp.Diff([]string{ra, rb}, cfg.Writable); diff != "" {
			t.Errorf("Writable (-want +got):\n%s", diff)
		}
		if env.Mode != envpolicy.Minimal || !slices.Equal(env.Allow, []string{"AWS_*", "GITHUB_TOKEN", "X"}) {
			t.Errorf("env policy = %+v", env)
		}
	})
	t.Run("OK/fromEnvironment", func(t *testing.T) {
		cfg, env, err := parseSandboxFlags(t, map[string]string{
			"MCP_HARNESS_SANDBOX": "off", "MCP_HARNESS_WRITABLE": a + string(os.PathListSeparator) + b, "MCP_HARNESS_ENV_ALLOW": "A,B",
		})
		if err != nil || cfg.Mode != sandbox.Off || !cfg.Explicit || len(cfg.Writable) != 2 || len(env.Allow) != 2 {
			t.Errorf("from the environment = %+v %+v %v", cfg, env, err)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"ErrMode", []string{"--sandbox", "strict"}, `--sandbox "strict": want workspace-write, read-only or off`},
		{"ErrNetwork", []string{"--network", "no"}, `--network "no": want on or off`},
		{"ErrWritableMissing", []string{"--writable", "/does/not/exist"}, `--writable "/does/not/exist"`},
		{"ErrWritableFile", []string{"--writable", "/etc/hostname"}, "not a directory"},
		{"ErrEnvPolicy", []string{"--env-policy", "all"}, "--env-policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := parseSandboxFlags(t, nil, tc.args...)
			if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v = %v, want a usage error saying %q", tc.args, err, tc.want)
			}
		})
	}
}

// A detached runner is confined as its server: it gets the server's sandbox and env
// flags, each value of a repeated flag as a flag of its own.
func TestRunnerCommand_passesSandboxFlags(t *testing.T) {
	fs := pflag.NewFlagSet("stdio", pflag.ContinueOnError)
	var sf sandboxFlags
	addSandboxFlags(fs, &sf)
	if err := fs.Parse([]string{"--network", "off", "--writable", "/a", "--writable", "/b c", "--env-allow", "K"}); err != nil {
		t.Fatal(err)
	}
	argv, err := runnerCommand(fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--sandbox=workspace-write", "--network=off", "--writable=/a", "--writable=/b c", "--env-policy=scrub", "--env-allow=K"} {
		if !slices.Contains(argv, want) {
			t.Errorf("runnerCommand = %q, want it to hold %q", argv, want)
		}
	}
}
