//go:build linux || darwin || freebsd

package tasks

import (
	"os"

	"golang.org/x/sys/unix"
)

// fileSystemFull reports whether the file system holding dir has no block left for this
// process: none at all for root, which may use the blocks reserved for it, and none
// available to others otherwise.
func fileSystemFull(dir string) bool {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return false
	}
	if os.Geteuid() == 0 {
		return uint64(st.Bfree) == 0
	}
	return uint64(st.Bavail) == 0
}
