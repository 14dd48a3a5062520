package sandbox

import (
	"os"
	"os/exec"
)

// On macOS a policy is enforced by Seatbelt: each confined command runs under
// /usr/bin/sandbox-exec with the policy's profile (seatbelt.go), which the kernel applies
// before the command's first instruction and to everything it starts.

type platform struct{}

const sandboxExec = "/usr/bin/sandbox-exec"

func probe() Support {
	_, err := os.Stat(sandboxExec)
	return Support{Seatbelt: err == nil, MountsWhy: "macOS has no mount namespaces; Seatbelt's rules cover what they would"}
}

func (l *Launcher) warm(p Policy) error {
	_, err := SeatbeltProfile(p, l.cfg.Roots(p.Mode), l.cfg.Protected)
	return err
}

func (l *Launcher) start(p Policy, cmd *exec.Cmd, dir *Where) error {
	profile, err := SeatbeltProfile(p, l.cfg.Roots(p.Mode), l.cfg.Protected)
	if err != nil {
		return err
	}
	if dir != nil {
		cmd.Dir = dir.Exec
	}
	wrapSeatbelt(cmd, profile)
	return cmd.Start()
}

func (l *Launcher) closePlatform() {}

func usernsEntered() (bool, string) { return false, "" }

// ReexecForMounts does nothing on macOS, which has no mount layer.
func ReexecForMounts() error { return nil }
