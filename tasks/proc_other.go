//go:build !linux && !darwin

package tasks

// On the BSDs other than macOS, store records no process start time (ProcStart 0; see
// internal/procid/procid_other.go), so nothing proves that a session number or a pid still
// names what a gone runner left rather than a stranger that came to use it, and
// reconciliation kills nothing: a gone runner's tasks are recorded failed and its graphs
// adopted, but no process of its tasks or PTY sessions is killed.

// killSession does nothing here: see above.
func killSession(sid int, leaderStart uint64) {}

// killMarked does nothing here: this package reads no other process's environment on
// these systems (they have no /proc of Linux's layout, and their sysctls differ from
// macOS's).
func killMarked(marker string) {}
