//go:build !linux && !darwin

package sandbox

import (
	"errors"
	"os/exec"
)

// Other systems have no sandbox here: Support is empty, so New degrades a default policy
// to Off, says so, and refuses an explicit one.

type platform struct{}

func probe() Support { return Support{MountsWhy: "not supported on this system"} }

func (l *Launcher) warm(Policy) error { return nil }

func (l *Launcher) start(Policy, *exec.Cmd, *Where) error {
	return errors.New("no sandbox on this system")
}

func (l *Launcher) closePlatform() {}

// ReexecForMounts does nothing on this system.
func ReexecForMounts() error { return nil }
