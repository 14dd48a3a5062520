package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// keptCapabilities are the capabilities a command of a root server keeps: Docker's
// default set for containers, less CAP_MKNOD. Everything else is dropped, for what it
// would let a root command do around Landlock and the read-only mounts: read any
// process's environment and memory through /proc (CAP_SYS_PTRACE, CAP_PERFMON and
// CAP_SYS_ADMIN each allow it), load kernel modules, open files by handle
// (CAP_DAC_READ_SEARCH), reach raw I/O, reconfigure the network, and so on. For an
// ordinary user's server the thread holds capabilities only inside the user namespace of
// the mount layer (userns_linux.go), which a command loses at exec anyway.
var keptCapabilities = []uintptr{
	unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_FSETID, unix.CAP_FOWNER,
	unix.CAP_NET_RAW, unix.CAP_SETGID, unix.CAP_SETUID, unix.CAP_SETFCAP,
	unix.CAP_SETPCAP, unix.CAP_NET_BIND_SERVICE, unix.CAP_SYS_CHROOT,
	unix.CAP_KILL, unix.CAP_AUDIT_WRITE,
}

// dropCapabilities drops, from the calling thread only, every capability not kept: from
// the bounding set, so no exec can bring one back, and from the permitted, effective and
// inheritable sets.
func dropCapabilities() error {
	var keep uint64
	for _, c := range keptCapabilities {
		keep |= 1 << c
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if keep&(1<<c) != 0 {
			continue
		}
		// EINVAL: a capability this kernel does not know (CAP_LAST_CAP is the headers').
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			if err == unix.EPERM {
				break // no CAP_SETPCAP: an unprivileged thread, whose bounding set cannot matter
			}
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	for i := range data {
		mask := uint32(keep >> (32 * i))
		data[i].Effective &= mask
		data[i].Permitted &= mask
		data[i].Inheritable &= mask
	}
	return unix.Capset(&hdr, &data[0])
}
