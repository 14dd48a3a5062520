//go:build darwin

package sandbox

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWrapSeatbelt(t *testing.T) {
	for _, tc := range []struct {
		name       string
		path       string
		args       []string
		wantTarget string
	}{
		{"Absolute", "/bin/sh", []string{"sh", "-c", "echo hi"}, "/bin/sh"},
		{"LoginArgv0", "/bin/zsh", []string{"-zsh"}, "/bin/zsh"},
		{"Relative", "tool", []string{"tool", "x"}, "./tool"},
		{"RelativeWithSlash", "bin/tool", []string{"bin/tool"}, "bin/tool"},
		{"NoArgs", "/bin/true", nil, "/bin/true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attr := &syscall.SysProcAttr{Setsid: true}
			cmd := &exec.Cmd{Path: tc.path, Args: tc.args, Dir: "/Users/u/ws", Env: []string{"A=1"}, SysProcAttr: attr}
			wrapSeatbelt(cmd, "(version 1)\n(allow default)\n")
			want := []string{sandboxExec, "-p", "(version 1)\n(allow default)\n", "--", tc.wantTarget}
			if len(tc.args) > 1 {
				want = append(want, tc.args[1:]...)
			}
			if cmd.Path != sandboxExec {
				t.Errorf("Path = %q, want %q", cmd.Path, sandboxExec)
			}
			if diff := cmp.Diff(want, cmd.Args); diff != "" {
				t.Errorf("Args (-want +got):\n%s", diff)
			}
			if cmd.Dir != "/Users/u/ws" || !cmp.Equal(cmd.Env, []string{"A=1"}) || cmd.SysProcAttr != attr {
				t.Errorf("Dir, Env or SysProcAttr changed: %q, %q, %p", cmd.Dir, cmd.Env, cmd.SysProcAttr)
			}
		})
	}
}
