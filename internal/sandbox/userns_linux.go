package sandbox

import (
	"fmt"
	"os"
	"syscall"
)

// An ordinary user's server makes mount namespaces (the mount layer) from inside a user
// namespace of its own, where it holds the capabilities to: its uid and gid are mapped to
// themselves, so it reads and writes files, signals processes and owns what it creates
// exactly as before. A process can only enter a new user namespace while it has one
// thread, which a Go program never has once its runtime runs; so the server executes
// itself again with usernsVar set, and a C constructor (userns_cgo.go) enters the
// namespace before the Go runtime starts. The re-execution keeps the pid, the standard
// streams and the arguments; it costs one exec at start.

// usernsVar asks the start-up code of a re-executed server to enter a user namespace.
const usernsVar = "MCP_HARNESS_INTERNAL_USERNS"

// usernsTried is set by ReexecForMounts in the re-executed process: the constructor has
// run, and usernsErrno says how it went.
var usernsTried bool

// ReexecForMounts makes the mount layer possible for an ordinary user's server on Linux
// by executing the server again inside a user namespace of its own (see above). It
// returns nil without doing anything as root, after a re-execution (whatever its
// outcome: New then reports it), or where the start-up code cannot run (no cgo); on
// success it does not return. Call it first thing in a server's command, and only when
// the sandbox will confine the file system.
func ReexecForMounts() error {
	if os.Getenv(usernsVar) != "" {
		usernsTried = true
		os.Unsetenv(usernsVar)
		return nil
	}
	if os.Geteuid() == 0 || !usernsCodeLinked {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program to run it in a user namespace: %w", err)
	}
	return syscall.Exec(exe, os.Args, append(os.Environ(), usernsVar+"=1"))
}

// usernsEntered says whether this process is in the user namespace of the mount layer.
func usernsEntered() (bool, string) {
	switch {
	case !usernsCodeLinked:
		return false, "built without cgo, so a server run by an ordinary user cannot enter a user namespace"
	case !usernsTried:
		return false, "the server did not enter a user namespace of its own"
	case usernsErrno() != 0:
		return false, fmt.Sprintf("cannot enter a user namespace: %v (user namespaces may be disabled: sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone)", syscall.Errno(usernsErrno()))
	}
	return true, ""
}
