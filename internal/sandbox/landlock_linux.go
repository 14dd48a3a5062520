package sandbox

import (
	"fmt"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// writeRights are the Landlock rights a policy handles: every way to change the file
// system. Reading and executing are not handled, so they stay allowed everywhere without
// a rule for them. A right the kernel's ABI does not know is left out (ruleset).
const writeRights = ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile |
	ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock |
	ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym |
	ll.AccessFSRefer | ll.AccessFSTruncate | ll.AccessFSIoctlDev

// abiConfigs are go-landlock's configurations for ABI versions 1 to 7, each handling
// every right of its version: what a ruleset may handle on a kernel of that version.
var abiConfigs = []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6, landlock.V7}

// ruleset is a Landlock ruleset made for one policy, to be enforced on a spawner thread.
type ruleset struct {
	fd    int // -1: nothing to restrict (Off, network on)
	flags uint32
}

// ruleset makes p's Landlock ruleset: the handled rights the kernel has, granted under
// p's writable roots (terminal and null devices with their ioctls), and, for network off
// on ABI 4 and later, TCP bind and connect handled with no port allowed. The rights are
// chosen here rather than by go-landlock's best effort, which on a kernel without the
// rename right (ABI 1) drops the whole ruleset rather than confine less than asked.
func (l *Launcher) ruleset(p Policy) (*ruleset, error) {
	abi := min(l.support.Landlock, len(abiConfigs))
	if abi == 0 {
		return &ruleset{fd: -1}, nil
	}
	base := abiConfigs[abi-1]
	var cfg landlock.Config
	var rules []landlock.Rule
	if p.Mode != Off {
		cfg.HandledAccessFS = base.HandledAccessFS & writeRights
		rules = l.pathRules(p.Mode, cfg.HandledAccessFS)
	}
	if p.Network == NetworkOff {
		cfg.HandledAccessNet = base.HandledAccessNet & (ll.AccessNetBindTCP | ll.AccessNetConnectTCP)
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return nil, fmt.Errorf("landlock ruleset for %s: %w", p, err)
	}
	return &ruleset{fd: fd, flags: flags}, nil
}

// pathRules grants the handled rights under m's writable roots: directories with
// everything (renames and links across them included, where the kernel handles that),
// device files with reading, writing and their ioctls.
func (l *Launcher) pathRules(m Mode, handled landlock.AccessFSSet) []landlock.Rule {
	var dirs, files, devDirs []string
	for _, r := range l.cfg.Roots(m) {
		st, err := os.Stat(r.Path)
		switch {
		case err != nil:
			continue
		case r.Kind == RootDevice && st.IsDir():
			devDirs = append(devDirs, r.Path)
		case r.Kind == RootDevice || !st.IsDir():
			files = append(files, r.Path)
		default:
			dirs = append(dirs, r.Path)
		}
	}
	refer := handled&ll.AccessFSRefer != 0
	ioctl := handled&ll.AccessFSIoctlDev != 0
	var rules []landlock.Rule
	if len(dirs) > 0 {
		r := landlock.RWDirs(dirs...)
		if refer {
			r = r.WithRefer()
		}
		rules = append(rules, r)
	}
	for _, set := range []struct {
		rule landlock.FSRule
		any  bool
	}{{landlock.RWFiles(files...), len(files) > 0}, {landlock.RWDirs(devDirs...), len(devDirs) > 0}} {
		if !set.any {
			continue
		}
		if ioctl {
			set.rule = set.rule.WithIoctlDev()
		}
		rules = append(rules, set.rule)
	}
	return rules
}

// restrictThread enforces the ruleset on the calling thread only (no_new_privs is set).
func (r *ruleset) restrictThread() error {
	if r.fd < 0 {
		return nil
	}
	if err := ll.LandlockRestrictSelf(r.fd, r.flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

func (r *ruleset) close() {
	if r.fd >= 0 {
		unix.Close(r.fd)
	}
}
