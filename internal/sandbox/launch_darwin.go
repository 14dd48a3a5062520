//go:build darwin

package sandbox

import (
	"os/exec"
	"strings"
)

// wrapSeatbelt rewrites cmd, not yet started, to run under Seatbelt with profile:
// sandbox-exec -p profile -- path args..., where path and args are cmd's own. The kernel
// applies the profile before the command's first instruction, and to everything it
// starts. Dir, Env, SysProcAttr, the files and everything else of cmd stay as they were:
// sandbox-exec passes them on to the command it executes.
//
// The command's argv[0] becomes its path, as sandbox-exec gives no way to set it: a
// login shell must be asked for with its -l flag, not with a leading '-'.
func wrapSeatbelt(cmd *exec.Cmd, profile string) {
	target := cmd.Path
	if !strings.Contains(target, "/") {
		// exec.Cmd runs a Path without a slash from Dir; sandbox-exec would search
		// PATH for it instead.
		target = "./" + target
	}
	args := []string{sandboxExec, "-p", profile, "--", target}
	if len(cmd.Args) > 1 {
		args = append(args, cmd.Args[1:]...)
	}
	cmd.Path = sandboxExec
	cmd.Args = args
}
