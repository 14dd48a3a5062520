package cli

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// newVersionCmd prints version, the one NewRootCommand resolved.
func newVersionCmd(version string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), version)
		},
	}
}

// Version is the version this binary reports: by `version` and `--version`, to clients as
// serverInfo.version, and in the runner's row. released is the version set at release
// time with -ldflags "-X main.version=..." (the main package passes it on), "" when none
// was. The version is, first that applies: released; the main module's version from the
// build info, which is the tag for `go install github.com/mcp-harness/mcp-harness@v1.2.0`
// and, since Go 1.24, a pseudo-version made from the commit for a build in a git checkout
// ("+dirty" when the tree had changes); the commit, when the build info has one but no
// version; "dev". A leading "v" is dropped, so every way of installing reads alike (1.2.0).
func Version(released string) string {
	if released != "" {
		return released
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return VersionOf(info)
}

// VersionOf is the version a binary with build info info reports, when none was set at
// release. The end-to-end tests read the built binary's build info and expect this.
func VersionOf(info *debug.BuildInfo) string {
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
