package cli

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tt := range []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{name: "go install at a tag", version: "v1.2.0", want: "1.2.0"},
		{name: "checkout (Go 1.24+ pseudo-version)", version: "v0.0.0-20261201003716-e2ddddb91ac0+dirty", settings: vcs("e2ddddb91ac09824d2032ce768e9d7fdfdf132d0", "true"), want: "0.0.0-20261201003716-e2ddddb91ac0+dirty"},
		{name: "commit only", version: "(devel)", settings: vcs("e2ddddb91ac09824d2032ce768e9d7fdfdf132d0", "false"), want: "dev-e2ddddb91ac0"},
		{name: "commit with changes", version: "(devel)", settings: vcs("e2ddddb91ac09824d2032ce768e9d7fdfdf132d0", "true"), want: "dev-e2ddddb91ac0-dirty"},
		{name: "nothing known", version: "(devel)", want: "dev"},
		{name: "empty", want: "dev"},
	} {
		info := &debug.BuildInfo{Main: debug.Module{Path: "github.com/mcp-harness/mcp-harness", Version: tt.version}, Settings: tt.settings}
		if got := VersionOf(info); got != tt.want {
			t.Errorf("%s: VersionOf = %q, want %q", tt.name, got, tt.want)
		}
	}
}
